"""The host's package-client configuration, as the setup phase sees it.

The setup phase (the only one with network) installs the repository's dependencies, so
it must reach the package index the way the host does: behind an intercepting proxy
with its own CA, from a private index or a mirror, through ``find-links`` folders.
Nothing of the host reaches the sandbox by itself (its ``/etc`` is synthetic, its
environment an allowlist), so this module builds what passes:

* **variables** named by ``PATCHWARDEN_SETUP_PASSENV`` (patterns such as ``PIP_*``;
  :data:`DEFAULT_PASSENV`): pip's and uv's settings, CA bundles, proxies, npm's;
* **pip's configuration files**, merged in pip's own order (global, user,
  ``PIP_CONFIG_FILE``) into one file that ``PIP_CONFIG_FILE`` names inside — when the
  patterns pass ``PIP_CONFIG_FILE``;
* **npm's user configuration** (``~/.npmrc`` or ``NPM_CONFIG_USERCONFIG``) — when they
  pass ``NPM_CONFIG_USERCONFIG``;
* **read-only mounts of the local paths those name** — a CA file, a ``file://``
  index, a find-links folder, a constraints file — each at ``/pkgconfig/host/N``,
  with the values rewritten to point there. For a ``file://…/simple`` index the folder
  above ``simple/`` is mounted: local indexes link their files relatively.

Credentials inside index or proxy URLs (``https://user:secret@host``) are passed —
the index needs them — and returned in :attr:`PackageConfig.secrets`, which the
session masks in everything it stores or shows. The fix and verify phases get none
of this: they have no network at all.
"""

from __future__ import annotations

import configparser
import fnmatch
import hashlib
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from app.redact import redact
from app.sessions.sandbox import (
    BASE_ENV,
    ENV_NAME,
    SECRET_NAME,
    SYSTEM_DIRS,
    Mount,
    publish_folder,
)

log = logging.getLogger(__name__)

CONFIG_MOUNT = "/pkgconfig/etc"  # the generated files (pip.conf, npmrc)
HOST_MOUNT = "/pkgconfig/host"  # the host paths they name, one folder each

DEFAULT_PASSENV = (
    "PIP_*",
    "UV_*",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "NPM_CONFIG_*",
    "npm_config_*",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
)
# Variables that name a configuration file: its contents are passed, not its path.
_FILE_VARIABLES = ("PIP_CONFIG_FILE", "NPM_CONFIG_USERCONFIG", "npm_config_userconfig")
_URL_USERINFO = re.compile(r"://([^/\s@]+)@")
_NPM_AUTH = re.compile(r"(?i)^\s*(\S*_auth(?:Token)?|\S*:_password)\s*=\s*(.+?)\s*$", re.M)


@dataclass(frozen=True)
class PackageConfig:
    """What the setup phase gets of the host's package-client configuration."""

    env: dict[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    secrets: tuple[str, ...] = ()  # credentials inside the values: masked wherever shown
    sources: tuple[str, ...] = ()  # where it came from: variable names and files

    def shown(self) -> dict[str, str]:
        """The variables with every credential masked (for doctor and the logs)."""
        return {k: redact(v, known=self.secrets) for k, v in sorted(self.env.items())}


def passenv_patterns(value: str | Sequence[str] | None) -> tuple[str, ...]:
    """``PATCHWARDEN_SETUP_PASSENV``: comma- or space-separated patterns; empty: none."""
    if value is None:
        return DEFAULT_PASSENV
    items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    return tuple(i for i in items if i)


def host_package_config(
    environ: Mapping[str, str],
    *,
    passenv: Sequence[str] = DEFAULT_PASSENV,
    state_dir: Path,
    isolated: bool = True,
    home: Path | None = None,
) -> PackageConfig:
    """Build the setup phase's view of the host's package configuration.

    ``state_dir`` receives the generated files; ``isolated`` is False for a backend
    that runs on the host itself (``unsafe-local``), which sees the host's paths as
    they are and needs no mounts or rewriting.
    """
    home = home if home is not None else Path(environ.get("HOME") or os.path.expanduser("~"))
    mapper = _PathMapper(isolated=isolated)
    env, sources, named_secrets = _variables(environ, passenv, mapper)
    generated: dict[str, str] = {}
    if _matches("PIP_CONFIG_FILE", passenv):
        pip_files = pip_config_files(environ, home=home)
        merged = _merge_ini(pip_files)
        if merged.sections():
            for section in merged.sections():
                for key, value in merged.items(section, raw=True):
                    merged.set(section, key, mapper.rewrite_value(value))
            generated["pip.conf"] = _ini_text(merged)
            sources += [str(p) for p in pip_files]
        _uv_from_pip(env, merged)
    npmrc = _npm_user_config(environ, home=home)
    if npmrc is not None and _matches("NPM_CONFIG_USERCONFIG", passenv):
        text = npmrc.read_text("utf-8", "replace")
        generated["npmrc"] = "\n".join(
            mapper.rewrite_npmrc_line(line) for line in text.splitlines()
        )
        sources.append(str(npmrc))

    mounts = list(mapper.mounts)
    if generated:
        folder = _write_generated(state_dir, generated)
        target = CONFIG_MOUNT if isolated else str(folder)
        if isolated:
            mounts.append(Mount(folder, CONFIG_MOUNT))
        if "pip.conf" in generated:
            env["PIP_CONFIG_FILE"] = f"{target}/pip.conf"
        if "npmrc" in generated:
            env["NPM_CONFIG_USERCONFIG"] = f"{target}/npmrc"
    secrets = sorted({*_credentials([*env.values(), *generated.values()]), *named_secrets})
    secrets = [x for x in secrets if len(x) >= 4]
    return PackageConfig(
        env=env, mounts=tuple(mounts), secrets=tuple(secrets), sources=tuple(sources)
    )


def _variables(
    environ: Mapping[str, str], passenv: Sequence[str], mapper: _PathMapper
) -> tuple[dict[str, str], list[str], list[str]]:
    """The host's variables setup may see (paths rewritten into the sandbox), where
    each came from, and the values whose names say they are secret."""
    env: dict[str, str] = {}
    sources: list[str] = []
    named_secrets: list[str] = []
    for name, value in sorted(environ.items()):
        if name in _FILE_VARIABLES or not _matches(name, passenv):
            continue
        if name.startswith("PATCHWARDEN_") or "PUBLISH" in name.upper():
            continue  # the App's own settings, and upload credentials: never
        if name in BASE_ENV or name == "PATH":
            continue  # the sandbox's own (HOME, PATH, the locale) are not the host's
        if not ENV_NAME.match(name):
            log.warning("setup: %s is not a valid variable name; not passed", name[:60])
            continue
        if SECRET_NAME.search(name):
            named_secrets.append(value)  # an index password or token: masked
        # A cache folder is the host's own: passing it would mount it into setup.
        keep_paths = "CACHE" not in name.upper()
        env[name] = mapper.rewrite_value(value) if keep_paths else value
        sources.append(f"${name}")
    return env, sources, named_secrets


def _uv_from_pip(env: dict[str, str], pip: configparser.RawConfigParser) -> None:
    """uv reads no pip configuration: pip's index and CA become uv's variables where the
    host set none of its own (a lock regenerated with uv reaches the index pip does).
    pip's extra indexes and find-links are not passed: uv would record them as sources."""
    index = env.get("PIP_INDEX_URL") or _pip_global(pip, "index-url")
    if index and not {"UV_DEFAULT_INDEX", "UV_INDEX_URL"} & set(env):
        env["UV_DEFAULT_INDEX"] = index
    cert = env.get("PIP_CERT") or _pip_global(pip, "cert")
    if cert and "SSL_CERT_FILE" not in env:
        env["SSL_CERT_FILE"] = cert


def _pip_global(pip: configparser.RawConfigParser, key: str) -> str | None:
    for section in ("install", "global"):
        if pip.has_option(section, key):
            return pip.get(section, key, raw=True).strip() or None
    return None


def pip_config_files(environ: Mapping[str, str], *, home: Path) -> list[Path]:
    """The configuration files pip reads on this host, lowest precedence first
    (https://pip.pypa.io/en/stable/topics/configuration/#loading-order); a site
    (virtualenv) file is Patchwarden's own and is left out."""
    named = environ.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    files: list[Path] = []
    xdg_dirs = environ.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files += [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(":") if d]
    files.append(Path("/etc/pip.conf"))
    if not (named and Path(named).exists()):
        config_home = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
        files += [home / ".pip" / "pip.conf", config_home / "pip" / "pip.conf"]
    if named:
        files.append(Path(named))
    return [f for f in files if f.is_file()]


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _merge_ini(files: Sequence[Path]) -> configparser.RawConfigParser:
    merged = configparser.RawConfigParser()
    for path in files:
        one = configparser.RawConfigParser()
        try:
            one.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip itself would refuse it; the setup step will say so
        for section in one.sections():
            if not merged.has_section(section):
                merged.add_section(section)
            for key, value in one.items(section, raw=True):
                merged.set(section, key, value)
    return merged


def _ini_text(parser: configparser.RawConfigParser) -> str:
    lines = []
    for section in parser.sections():
        lines.append(f"[{section}]")
        for key, value in parser.items(section, raw=True):
            # Multi-line values (extra-index-url on several lines) stay multi-line.
            lines.append(f"{key} = " + "\n    ".join(value.splitlines()))
        lines.append("")
    return "\n".join(lines)


def _npm_user_config(environ: Mapping[str, str], *, home: Path) -> Path | None:
    named = environ.get("NPM_CONFIG_USERCONFIG") or environ.get("npm_config_userconfig")
    path = Path(named) if named else home / ".npmrc"
    return path if path.is_file() else None


def _write_generated(state_dir: Path, files: Mapping[str, str]) -> Path:
    """Write the generated files into a folder named by their contents (reused), under
    a ``state_dir`` only Patchwarden's user may enter: they may hold index passwords."""
    state_dir.mkdir(parents=True, exist_ok=True)
    state_dir.chmod(0o700)
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]

    def fill(build: Path) -> None:
        for name, text in files.items():
            (build / name).write_text(text, "utf-8")
            (build / name).chmod(0o644)

    return publish_folder(state_dir / f"pkgconfig-{digest}", fill)


def _credentials(values: Iterable[str]) -> list[str]:
    found: set[str] = set()
    for value in values:
        for m in _URL_USERINFO.finditer(value):
            userinfo = m.group(1)
            if ":" in userinfo:
                found.add(unquote(userinfo.split(":", 1)[1]))
                found.add(userinfo.split(":", 1)[1])
            else:
                found.add(userinfo)  # a token as the user name (GitLab, Artifactory)
        found.update(m.group(2).strip("\"'") for m in _NPM_AUTH.finditer(value))
    return sorted(s for s in found if len(s) >= 4)


class _PathMapper:
    """Mounts every local path a value names and rewrites the value to point there."""

    def __init__(self, *, isolated: bool) -> None:
        self.isolated = isolated
        self.targets: dict[str, str] = {}
        self.mounts: list[Mount] = []

    def rewrite_value(self, value: str) -> str:
        """Each whitespace-separated word: a ``file://`` URL or an existing absolute
        path is mounted and rewritten; anything else is kept as it is."""
        if not self.isolated:
            return value
        return re.sub(r"\S+", lambda m: self._word(m.group(0)), value)

    def rewrite_npmrc_line(self, line: str) -> str:
        key, sep, value = line.partition("=")
        if not sep or line.lstrip().startswith(("#", ";")):
            return line
        return f"{key}={self.rewrite_value(value.strip())}"

    def _word(self, word: str) -> str:
        if word.startswith("file://"):
            local = unquote(urlsplit(word).path)
            folder, name = os.path.split(local.rstrip("/"))
            if name == "simple" and folder:
                # A local index links its files relatively (../../files/x.whl): its
                # whole repository is mounted, not only the simple/ pages.
                target = self._mount(folder)
                tail = local[len(folder) :]
                return word if target is None else "file://" + target + tail
            target = self._mount(local)
            return word if target is None else "file://" + target
        if word.startswith("/"):
            target = self._mount(word)
            return word if target is None else target
        return word

    def _mount(self, path: str) -> str | None:
        clean = os.path.normpath(path)
        if any(clean == d or clean.startswith(d + "/") for d in SYSTEM_DIRS):
            return None  # the system is mounted read-only at the same path already
        if clean in ("/", "/home", "/root", os.path.expanduser("~")):
            return None  # the whole machine, or a home folder: never
        source = Path(os.path.realpath(clean))
        if not source.exists() or any(ch in str(source) for ch in ",\n\0"):
            return None
        key = str(source)
        if key not in self.targets:
            # A file is mounted alone (not its folder, which may hold other things),
            # under its own name: tools look at the suffix (.pem, .crt).
            target = f"{HOST_MOUNT}/{len(self.targets)}"
            if source.is_file():
                target += f"/{source.name}"
            self.mounts.append(Mount(source, target))
            self.targets[key] = target
        trail = "/" if path.endswith("/") and not self.targets[key].endswith("/") else ""
        return self.targets[key] + trail
