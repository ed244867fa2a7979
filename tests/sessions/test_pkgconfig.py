"""The setup phase reaches packages the way the host does: its pip configuration, CA
bundles and proxies, and the local paths they name, but nothing else of the host.

The end-to-end test serves a private index over TLS with a throwaway CA on loopback;
the host's pip configuration (a ``PIP_CONFIG_FILE``) names the index, its CA and a
password, and the session's setup must install from it — and never show the password.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import http.server
import io
import ipaddress
import shutil
import ssl
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.fixers.registry import KNOWN
from app.git import Remote
from app.sessions.backends import BwrapSandbox
from app.sessions.fix_context import FixContext
from app.sessions.mirrors import WorkspaceCache
from app.sessions.pkgconfig import (
    CONFIG_MOUNT,
    DEFAULT_PASSENV,
    PackageConfig,
    host_package_config,
    passenv_patterns,
    pip_config_files,
)
from app.sessions.result import FixOutcome
from app.sessions.sandbox import SandboxError
from app.sessions.session import SessionRunner
from app.sessions.task import SessionSpec, Task
from tests.conftest import make_project, running_with

PASSWORD = "s3cret-index-pass"


def test_pip_files_are_read_in_pips_order_and_paths_are_mounted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".config" / "pip").mkdir(parents=True)
    wheels, ca = tmp_path / "wheels", tmp_path / "corp-ca.pem"
    wheels.mkdir()
    ca.write_text("CA")
    repo = tmp_path / "mirror"
    (repo / "simple").mkdir(parents=True)
    (home / ".config" / "pip" / "pip.conf").write_text(
        f"[global]\nindex-url = https://user.example/simple\ncert = {ca}\n"
        f"extra-index-url = file://{repo}/simple\n"
    )
    named = tmp_path / "named.conf"
    named.write_text("[global]\nindex-url = https://named.example/simple\n[install]\nno-deps = 1\n")
    environ = {
        "HOME": str(home),
        "XDG_CONFIG_DIRS": str(tmp_path / "none"),
        "PIP_FIND_LINKS": str(wheels),
        "SSL_CERT_FILE": str(ca),
        "HTTPS_PROXY": "http://proxy.example:3128",
        "AWS_SECRET_ACCESS_KEY": "never",
        "PIP_CONFIG_FILE": str(named),
    }

    def ours(files: list[Path]) -> list[Path]:  # /etc/pip.conf is this machine's
        return [f for f in files if tmp_path in f.parents]

    # PIP_CONFIG_FILE set: pip skips the user file, as pip does.
    assert ours(pip_config_files(environ, home=home)) == [named]
    del environ["PIP_CONFIG_FILE"]
    assert ours(pip_config_files(environ, home=home)) == [home / ".config" / "pip" / "pip.conf"]

    config = host_package_config(environ, state_dir=tmp_path / "state", home=home)
    targets = {str(m.source): m.target for m in config.mounts}
    assert targets[str(wheels)] == config.env["PIP_FIND_LINKS"]
    assert config.env["SSL_CERT_FILE"] == targets[str(ca)]
    assert targets[str(ca)].endswith("/corp-ca.pem")  # a file alone, under its own name
    assert config.env["HTTPS_PROXY"] == "http://proxy.example:3128"
    assert "AWS_SECRET_ACCESS_KEY" not in config.env
    assert config.env["PIP_CONFIG_FILE"] == f"{CONFIG_MOUNT}/pip.conf"
    generated = next(m.source for m in config.mounts if m.target == CONFIG_MOUNT)
    text = (generated / "pip.conf").read_text()
    assert "index-url = https://user.example/simple" in text
    assert f"cert = {targets[str(ca)]}" in text
    # A local index's whole repository is mounted: its pages link ../../files/.
    assert f"file://{targets[str(repo)]}/simple" in text
    assert all(not m.writable for m in config.mounts)


def test_uv_gets_pip_s_index_and_ca_unless_it_has_its_own(tmp_path: Path) -> None:
    ca = tmp_path / "corp-ca.pem"
    ca.write_text("CA")
    conf = tmp_path / "pip.conf"
    conf.write_text(
        f"[global]\nindex-url = https://mirror.example/simple\ncert = {ca}\n"
        "extra-index-url = https://extra.example/simple\n"
    )
    environ = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_DIRS": str(tmp_path / "none"),
        "PIP_CONFIG_FILE": str(conf),
    }
    config = host_package_config(environ, state_dir=tmp_path / "s1", home=tmp_path)
    assert config.env["UV_DEFAULT_INDEX"] == "https://mirror.example/simple"
    mounted = {m.target for m in config.mounts if m.source == ca}
    assert config.env["SSL_CERT_FILE"] in mounted  # the CA, at its path inside
    # An extra index is not uv's: a lock would record it as a package's source.
    assert not any("extra.example" in v for k, v in config.env.items() if k.startswith("UV_"))
    own = host_package_config(
        {**environ, "UV_INDEX_URL": "https://uv.example/simple"},
        state_dir=tmp_path / "s2",
        home=tmp_path,
    )
    assert "UV_DEFAULT_INDEX" not in own.env
    assert own.env["UV_INDEX_URL"] == "https://uv.example/simple"


def test_credentials_in_index_urls_are_secrets_and_shown_masked(tmp_path: Path) -> None:
    environ = {
        "HOME": str(tmp_path),
        "XDG_CONFIG_DIRS": str(tmp_path / "none"),
        "PIP_INDEX_URL": f"https://deploy:{PASSWORD}@pypi.corp.example/simple",
        "PIP_EXTRA_INDEX_URL": "https://glpat-abcdefgh123@gitlab.example/api/simple",
    }
    config = host_package_config(environ, state_dir=tmp_path / "state", home=tmp_path)
    assert PASSWORD in config.secrets
    assert "glpat-abcdefgh123" in config.secrets
    shown = repr(config.shown())
    assert PASSWORD not in shown
    assert "glpat-abcdefgh123" not in shown
    assert "pypi.corp.example" in shown


def test_passenv_is_a_setting_and_an_empty_one_passes_nothing(tmp_path: Path) -> None:
    assert passenv_patterns(None) == DEFAULT_PASSENV
    assert passenv_patterns("PIP_INDEX_URL, HTTPS_PROXY") == ("PIP_INDEX_URL", "HTTPS_PROXY")
    environ = {"HOME": str(tmp_path), "PIP_INDEX_URL": "https://x/simple", "HTTPS_PROXY": "p"}
    none = host_package_config(
        environ, passenv=passenv_patterns(""), state_dir=tmp_path / "s", home=tmp_path
    )
    assert none == PackageConfig()


def test_unsafe_local_sees_host_paths_as_they_are(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "PIP_FIND_LINKS": str(tmp_path)}
    config = host_package_config(environ, state_dir=tmp_path / "s", home=tmp_path, isolated=False)
    assert config.env["PIP_FIND_LINKS"] == str(tmp_path)
    assert config.mounts == ()


def test_the_package_config_never_reaches_a_phase_without_network(tmp_path: Path) -> None:
    sandbox = BwrapSandbox(state_dir=tmp_path / "sandbox")
    with pytest.raises(SandboxError, match="setup phase only"):
        sandbox.wrap(["true"], package_env={"PIP_INDEX_URL": "https://x/simple"})


# --- a private index over TLS -------------------------------------------------------


def _certificates(folder: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate for 127.0.0.1 signed by it."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Patchwarden test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(
            x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([x509.OID_SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "server.pem", folder / "key.pem"
    ca_file.write_bytes(ca.public_bytes(pem))
    cert_file.write_bytes(cert.public_bytes(pem))
    key_file.write_bytes(
        key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_file, cert_file, key_file


def _wheel(name: str, version: str, requires: tuple[str, ...] = ()) -> tuple[str, bytes]:
    """A minimal pure-Python wheel of module ``name`` (that needs ``requires``)."""
    dist = f"{name}-{version}"
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{dist}.dist-info/METADATA": (
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{needs}"
        ),
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return f"{dist}-py3-none-any.whl", buffer.getvalue()


class _Index:
    def __init__(self, root: Path, url: str, ca: Path) -> None:
        self.root = root
        self.url = url
        self.ca = ca
        self.requests: list[tuple[str, str | None]] = []


@pytest.fixture
def private_index(tmp_path: Path) -> Iterator[_Index]:
    """A PEP 503 simple index over HTTPS (throwaway CA) that wants a password."""
    root = tmp_path / "index"
    name, data = _wheel("pw_private_pkg", "1.0")
    (root / "files").mkdir(parents=True)
    (root / "files" / name).write_bytes(data)
    page = root / "simple" / "pw-private-pkg"
    page.mkdir(parents=True)
    digest = hashlib.sha256(data).hexdigest()
    page.joinpath("index.html").write_text(
        f'<html><body><a href="../../files/{name}#sha256={digest}">{name}</a></body></html>'
    )
    ca, cert, key = _certificates(tmp_path)
    expected = "Basic " + base64.b64encode(f"deploy:{PASSWORD}".encode()).decode()
    index: _Index

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(root), **kwargs)  # type: ignore[arg-type]

        def do_GET(self) -> None:
            index.requests.append((self.path, self.headers.get("Authorization")))
            if self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="index"')
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    index = _Index(root, f"https://deploy:{PASSWORD}@127.0.0.1:{port}/simple/", ca)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_setup_installs_from_the_hosts_private_index_behind_its_own_ca(
    tmp_path: Path, private_index: _Index
) -> None:
    conf = tmp_path / "host-pip.conf"
    conf.write_text(f"[global]\ncert = {private_index.ca}\n")
    environ = {
        "PIP_INDEX_URL": private_index.url,  # the password in a variable: never in argv
        "HOME": str(tmp_path / "home"),
        "XDG_CONFIG_DIRS": str(tmp_path / "no-global-config"),
        "PIP_CONFIG_FILE": str(conf),
        "PIP_DEFAULT_TIMEOUT": "20",
    }
    project = make_project(
        tmp_path / "app",
        {
            "requirements.txt": "pw-private-pkg==1.0\n",
            ".github/patchwarden.yml": "test: python -c 'import pw_private_pkg, sys; "
            'sys.exit(pw_private_pkg.VERSION != "1.0")\'\n',
            "app.py": "X = 1\n",
        },
    )
    cache = WorkspaceCache(tmp_path / "cache")
    sandbox = BwrapSandbox(state_dir=tmp_path / "sandbox")

    async def edit(ctx: FixContext) -> FixOutcome:
        (ctx.tree / "app.py").write_text("X = 2\n")
        return FixOutcome(fixer="test", summary="X is 2")

    spec = SessionSpec(remote=Remote("octo/app", str(project)), task=Task("X is 2"))
    # Without the host's configuration the index is unknown and its CA untrusted.
    bare = SessionRunner(fixers=KNOWN, cache=cache, sandbox=sandbox, packages=PackageConfig())
    failed = await bare.run(spec, edit)
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.startswith("setup failed")
    assert not any(path.endswith(".whl") for path, _ in private_index.requests)

    packages = host_package_config(environ, state_dir=tmp_path / "pkgconfig")
    runner = SessionRunner(fixers=KNOWN, cache=cache, sandbox=sandbox, packages=packages)
    seen: list[str] = []
    running = asyncio.create_task(runner.run(spec, edit))
    while not running.done():  # every host process's argv, while setup installs
        seen += running_with(PASSWORD)
        await asyncio.sleep(0.02)
    result = await running
    assert seen == []  # the password travels in files and environments, never argv

    assert result.status == "patched", [s.output[-800:] for s in result.steps]
    assert result.tests is not None
    assert result.tests.base is not None
    assert result.tests.base.exit_code == 0  # the test imports the private package
    assert result.tests.head is not None
    assert result.tests.head.exit_code == 0
    wheels = [auth for path, auth in private_index.requests if path.endswith(".whl")]
    assert wheels
    assert all(auth is not None for auth in wheels)
    # The password reached the index, and nowhere that is stored or shown.
    assert PASSWORD not in result.model_dump_json()


def test_secret_named_variables_are_masked_and_the_apps_own_never_pass(tmp_path: Path) -> None:
    environ = {
        "HOME": str(tmp_path),
        "UV_INDEX_CORP_PASSWORD": "hunter2-index",
        "UV_PUBLISH_TOKEN": "pypi-upload-token",
        "PIP_CACHE_DIR": "/",
        "npm_config_//reg.example/:_authToken": "npm-token-123",
    }
    config = host_package_config(
        environ, passenv=("*",), state_dir=tmp_path / "state", home=tmp_path
    )
    assert config.env["UV_INDEX_CORP_PASSWORD"] == "hunter2-index"  # the index needs it
    assert "hunter2-index" in config.secrets  # and it is masked wherever shown
    assert "hunter2-index" not in repr(config.shown())
    assert "UV_PUBLISH_TOKEN" not in config.env  # upload credentials: never
    assert "HOME" not in config.env  # the sandbox's own
    assert not any(name.startswith("npm_config_//") for name in config.env)  # not a name
    assert config.env["PIP_CACHE_DIR"] == "/"  # a cache folder is not mounted
    assert all(str(m.source) != "/" for m in config.mounts)
    environ["PATCHWARDEN_WEBHOOK_SECRET"] = "app-secret"
    again = host_package_config(environ, passenv=("*",), state_dir=tmp_path / "s2", home=tmp_path)
    assert "PATCHWARDEN_WEBHOOK_SECRET" not in again.env
