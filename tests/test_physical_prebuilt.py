"""The machine code shipped with the package: current, complete, and used only on the hosts it was built for."""

from __future__ import annotations

import contextlib
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xlashapes.physical import _aot, _cache, _dispatch, _entries, _prebuilt

ARCHIVES = {baseline.name: Path(_prebuilt.FOLDER) / f"{baseline.name}.zip" for baseline in _prebuilt.BASELINES}
REBUILD = "the kernel sources changed: run python tools/build_prebuilt.py and commit the archives"


def header_of(data: bytes) -> dict[str, Any]:
    """The JSON header of a kept object's bytes (:func:`._aot.save`)."""
    header: dict[str, Any] = json.loads(data[len(_aot.MAGIC) : data.index(b"\n", len(_aot.MAGIC))])
    return header


def manifest_of(cpu: str) -> dict[str, object]:
    with zipfile.ZipFile(ARCHIVES[cpu]) as archive:
        manifest: dict[str, object] = json.loads(archive.read("manifest.json"))
    return manifest


@pytest.mark.parametrize("baseline", _prebuilt.BASELINES, ids=lambda baseline: baseline.name)
def test_each_baseline_ships_every_entry_built_from_these_kernel_sources(baseline: _prebuilt.Baseline) -> None:
    manifest = manifest_of(baseline.name)
    assert manifest["kernels"] == _cache.kernels_digest(), REBUILD
    assert (manifest["name"], manifest["cpu"], manifest["features"], manifest["machine"], manifest["platform"],
            manifest.get("plain", "")) == (baseline.name, baseline.cpu, list(baseline.features), baseline.machine,
                                   baseline.platform, baseline.plain)
    entries = {name for names in _entries.ENTRIES.values() for name in names}
    with zipfile.ZipFile(ARCHIVES[baseline.name]) as archive:
        names = set(archive.namelist())
        assert {f"{module.strip('_')}.constants.json" for module in _entries.ENTRIES} <= names
        kept = [name for name in names if name.endswith(".o")]
        assert {name.split(".")[1] for name in kept} == entries
        for name in kept:  # each one whole, for the entry and key its file name says, and an object
            data = archive.read(name)
            header = header_of(data)
            module, entry = header["entry"].split(".")
            assert name == Path(_aot._object_path("", module, entry, header["key"])).name
            parsed = _aot._parsed(data, header["entry"], header["key"], None)
            assert parsed is not None and _aot.undefined_symbols(parsed[2]) is not None
            assert header["host"]["numba_cpu"].startswith(baseline.cpu_of(name) + "|")  # (built for the baseline,
            # tuned for its CPU or, the entries the tuning made slower, generically)


ZEN_EXTRAS = frozenset((
    "gfni", "vaes", "vpclmulqdq", "avx512vnni", "avx512bf16", "avx512ifma", "avx512bitalg", "avx512vpopcntdq", "sse4a",
    "adx", "sha", "aes", "pclmul", "clzero", "rdrnd", "rdseed", "prfchw", "mwaitx", "xsavec", "xsaveopt", "xsaves",
    "clflushopt", "clwb", "fsgsbase", "rdpid", "wbnoinvd"))
"""Instructions LLVM's znver3 / znver4 CPUs bring beyond the x86-64 levels (a sample: none may be left on)."""


@pytest.mark.parametrize("baseline", [b for b in _prebuilt.BASELINES if b.machine == "x86_64"], ids=lambda b: b.name)
def test_code_tuned_for_a_cpu_uses_only_its_baselines_features(baseline: _prebuilt.Baseline) -> None:
    cpus = set()
    with zipfile.ZipFile(ARCHIVES[baseline.name]) as archive:
        for name in (name for name in archive.namelist() if name.endswith(".o")):
            data = archive.read(name)
            header = header_of(data)
            cpu, features = header["host"]["numba_cpu"].split("|")
            on = {f[1:] for f in features.split(",") if f.startswith("+")}
            off = {f[1:] for f in features.split(",") if f.startswith("-")}
            assert cpu == baseline.cpu_of(name) and on == set(baseline.features), name
            assert ZEN_EXTRAS - set(baseline.features) <= off, name  # (what a tuning CPU would add, off by name)
            cpus.add(cpu)
    assert cpus == {baseline.cpu, baseline.plain} - {""}  # (both tunings where it names two)


HOST = frozenset(_prebuilt.BASELINES[0].features)  # an AVX-512 host with VBMI


def manifest(**changes: object) -> dict[str, object]:
    """A manifest this host (``HOST``) can use, with ``changes``."""
    base = {"kernels": _cache.kernels_digest(), "cpu": "x86-64-v4", "features": sorted(HOST), "machine": "x86_64",
            "platform": "linux"}
    return {**base, **changes}


@contextlib.contextmanager
def linux_x86() -> Iterator[None]:
    """This process seen as an x86-64 Linux host by ``_prebuilt``."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_prebuilt.platform, "machine", lambda: "x86_64")
        patch.setattr(_prebuilt.sys, "platform", "linux")
        yield


@pytest.fixture
def on_linux_x86() -> Iterator[None]:
    with linux_x86():
        yield


@pytest.fixture
def choice_again() -> Iterator[None]:
    """The archive chosen afresh in the test (then again after it, with the test's patches undone)."""
    _prebuilt._first_usable.cache_clear()
    yield
    _prebuilt._first_usable.cache_clear()


@given(needed=st.sets(st.sampled_from(sorted(HOST | {"avx512vbmi", "amx-tile", "sve"}))),
       present=st.sets(st.sampled_from(sorted(HOST | {"avx512vbmi"}))))
def test_an_archive_runs_exactly_where_the_host_has_every_feature_it_needs(needed: set[str],
                                                                         present: set[str]) -> None:
    with linux_x86():
        problem = _prebuilt.manifest_problem(manifest(features=sorted(needed)), frozenset(present))
    assert (problem is None) == (needed <= present)
    if problem is not None:
        assert all(feature in problem for feature in needed - present)


@pytest.mark.parametrize(("change", "words"), [
    ({"kernels": "kernels-0000000000000000"}, "other kernel sources"), ({"machine": "aarch64"}, "aarch64"),
    ({"platform": "darwin"}, "darwin"), ({"features": "avx2"}, "no feature list")])
def test_an_archive_for_other_sources_or_another_system_is_refused(on_linux_x86: None, change: dict[str, object],
                                                                   words: str) -> None:
    assert _prebuilt.manifest_problem(manifest(), HOST) is None
    problem = _prebuilt.manifest_problem(manifest(**change), HOST)
    assert problem is not None and words in problem
    assert _prebuilt.manifest_problem("not a manifest", HOST) == "no manifest"


V3, V2 = _prebuilt.BASELINES[2].features, _prebuilt.BASELINES[3].features


@pytest.mark.parametrize(("features", "chosen", "why"), [
    (_prebuilt.BASELINES[0].features, "x86-64-v4-vbmi", None), (_prebuilt.BASELINES[1].features, "x86-64-v4", None),
    (V3, "x86-64-v3", None), (V3[:-3], "x86-64-v2", None), (V2, "x86-64-v2", None),
    (V2[:-2], None, "x86-64-v2: this CPU lacks crc32, ssse3"), ((), None, "x86-64-v2: this CPU lacks " + ", ".join(
        sorted(V2)))])
def test_a_host_takes_the_first_baseline_whose_features_it_has(
        on_linux_x86: None, monkeypatch: pytest.MonkeyPatch, choice_again: None, features: tuple[str, ...],
        chosen: str | None, why: str | None) -> None:
    monkeypatch.setattr(_prebuilt, "host_features", lambda: frozenset(features))
    found = _prebuilt.archive()
    assert (found.name if found is not None else None) == chosen
    assert _prebuilt.archive_problem() == why
    monkeypatch.setenv(_prebuilt.NO_PREBUILT_VARIABLE, "1")
    _prebuilt._first_usable.cache_clear()
    assert _prebuilt.archive() is None and _prebuilt.archive_problem() == "turned off (XLASHAPES_NO_PREBUILT)"
    assert "compiled by numba on first use" in _dispatch.kernels_summary()


def test_a_damaged_archive_is_not_used(on_linux_x86: None, monkeypatch: pytest.MonkeyPatch, choice_again: None,
                                       tmp_path: Path) -> None:
    for name, path in ARCHIVES.items():
        data = path.read_bytes()
        (tmp_path / f"{name}.zip").write_bytes(data[: len(data) // 2] if name != "x86-64-v2" else b"PK not a zip")
    monkeypatch.setattr(_prebuilt, "FOLDER", str(tmp_path))
    assert _prebuilt.archive() is None and _prebuilt.archive_problem() == "x86-64-v2: a damaged archive"


def test_no_archive_is_used_where_llvmlite_cannot_load_it(on_linux_x86: None, monkeypatch: pytest.MonkeyPatch,
                                                          choice_again: None) -> None:
    monkeypatch.setattr(_prebuilt, "host_features", lambda: None)
    assert _prebuilt.archive() is None
    assert _prebuilt.archive_problem() == "llvmlite cannot be imported (the shipped code is loaded through it)"


def test_host_features_are_none_without_llvmlite_and_empty_where_llvm_cannot_tell(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import llvmlite.binding

    assert _prebuilt.host_features() is not None  # (llvmlite imports here; what LLVM reads depends on the host: none
    # under QEMU's emulator)

    def fails() -> dict[str, bool]:
        raise RuntimeError("failed to get host cpu features")

    monkeypatch.setattr(llvmlite.binding, "get_host_cpu_features", fails)
    assert _prebuilt.host_features() == frozenset()
    monkeypatch.setitem(sys.modules, "llvmlite.binding", None)  # (an import that fails)
    assert _prebuilt.host_features() is None


@pytest.mark.parametrize(("machine", "system", "chosen", "why"), [
    ("aarch64", "linux", "aarch64", None), ("x86_64", "linux", "x86-64-v2", None),
    ("arm64", "darwin", None, "none shipped for arm64 darwin"),
    ("AMD64", "win32", None, "none shipped for AMD64 win32"),
    ("riscv64", "linux", None, "none shipped for riscv64 linux")])
def test_each_machine_takes_only_its_own_archives(monkeypatch: pytest.MonkeyPatch, choice_again: None, machine: str,
                                                  system: str, chosen: str | None, why: str | None) -> None:
    monkeypatch.setattr(_prebuilt.platform, "machine", lambda: machine)
    monkeypatch.setattr(_prebuilt.sys, "platform", system)
    monkeypatch.setattr(_prebuilt, "host_features", lambda: frozenset(V2))  # (an ARM host's features: none asked)
    opened: list[str] = []
    real = _prebuilt.zipfile.ZipFile
    monkeypatch.setattr(_prebuilt.zipfile, "ZipFile", lambda path: opened.append(Path(path).stem) or real(path))
    found = _prebuilt.archive()
    assert (found.name if found is not None else None) == chosen
    assert _prebuilt.archive_problem() == why
    assert {b.name for b in _prebuilt.BASELINES if b.name in opened} <= {
        b.name for b in _prebuilt.BASELINES if (b.machine, b.platform) == (machine, system)}  # no other machine's


def test_a_shipped_object_loads_and_its_constants_are_read_where_the_host_has_none(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if _prebuilt.archive() is None:
        pytest.skip("no shipped machine code for this host")
    monkeypatch.setenv("XLASHAPES_CACHE_DIR", str(tmp_path))  # an empty kernel cache: nothing compiled here
    with zipfile.ZipFile(_prebuilt.archive().path) as archive:
        name = next(name for name in archive.namelist() if ".pack." in name)
        data = archive.read(name)
        constants = json.loads(archive.read("kernels.constants.json"))
    header = header_of(data)
    assert _aot.constants("_kernels") == constants
    assert isinstance(_aot.load("_kernels", "pack", header["key"]), _aot.Native)
    assert _aot.load("_kernels", "pack", header["key"] + ",i") is None  # no such overload shipped
    assert not list(tmp_path.rglob("*.o"))
