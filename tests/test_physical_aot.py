"""Kept machine code of the compiled kernels: written on first use, loaded by new processes without numba."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

import kernel_worker
import xlashapes
from xlashapes.physical import _aot, _cache, _entries, _prebuilt

pytest.importorskip("numba")
pytest.importorskip("llvmlite")

WORKER = Path(__file__).with_name("kernel_worker.py")  # every entry point and element width in one process
# (entry, the witness's key) every entry and width the worker must run from kept code
EXPECTED = {("walk_squares", w) for w in ("|u1", "<u2", "<u4", "<u8")} | {
    (name, "<u4") for name in ("walk_runs", "walk_groups", "walk_wide_lines")} | {
    ("walk_rows", "|u1"), ("walk_planes", "|u1"), ("walk_short", "|u1")} | {
    ("walk_quarters", "<u2")} | {
    ("shifted_rows", w) for w in ("<u2", "<u4", "<u8")} | {("staged_transpose", w) for w in ("|u1", "<u2", "<u4")} | {
    (name, w) for name in ("tiled_to_physical", "tiled_from_physical") for w in ("|u1", "<u2")} | {
    (f"tiled_{way}_{kind}", "|u1") for way in ("to", "from") for kind in ("canonical", "packed")} | {
    ("pack", "i"), ("unpack", "i"), ("transpose_nibbles", "i"), ("swap_fields", "i")} | {
    ("turn_lines", w) for w in ("|u1", "<u2")} | {("walk_turns", w) for w in ("|u1", "<u2")} | {("regroup", "i")} | {
    ("tile_squares", w) for w in ("|u1", "<u2")} | {("tiled_to_odd_physical", "<u2")} | {
    (f"tiled_to_odd_{kind}", "|u1") for kind in ("canonical", "packed")} | {
    ("padded_rows", "|u1"), ("padding_runs", "i")} | {("cut_rows", w) for w in ("|u1", "<u2")} | {
    ("tiled_stacked", w) for w in ("|u1", "<u2", "<u4")} | {
    ("tiled_from_tile_rows", w) for w in ("|u1", "<u2")}


def run_worker(cache: Path, numba: bool = True, processes: int = 1, shipped: bool = False,
               cases: list[str] | None = None) -> dict[str, Any]:
    """The worker's report, in a new process with kernel cache ``cache`` (``numba=False``: the NumPy path;
    ``shipped``: the machine code shipped with the package may run; ``cases``: these cases, else every case); with
    ``processes`` > 1, that many new processes at once, each taking its share of the cases (reports merged)."""
    env = {**python_env(cache), "XLASHAPES_NO_NUMBA": "0" if numba else "1",
           _prebuilt.NO_PREBUILT_VARIABLE: "0" if shipped else "1", "XLASHAPES_WORKER_CASES": "|".join(cases or [])}
    runs = [subprocess.Popen([sys.executable, str(WORKER)], env={**env, "XLASHAPES_WORKER_PART": f"{k}/{processes}"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(processes)]
    reports = []
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        reports.append(json.loads(out))
    merged: dict[str, Any] = {"digests": {}, "native": {}, "numba": all(r["numba"] for r in reports),
                              "llvmlite": any(r["llvmlite"] for r in reports)}
    for report in reports:
        merged["digests"].update(report["digests"])
        for name, keys in report["native"].items():
            merged["native"][name] = sorted(set(merged["native"].get(name, [])) | set(keys))
    return merged


def witnesses(report: dict[str, Any]) -> set[tuple[str, str]]:
    """(entry, witness key) of what ran from kept machine code (the witness: the pad argument, else the first)."""
    where = {"tiled": 3, "pack": 0, "unpack": 0, "regroup": 0}  # (else 2: the walks, staged_transpose, shifted_rows)
    return {(name, key.split(",")[where.get(name.split("_")[0], 2)]) for name, keys in report["native"].items()
            for key in keys}


def copy_numba_files(source: Path, target: Path) -> None:
    """numba's cache files under ``source`` that ``target`` lacks or holds in another version, copied there whole
    (a temporary file, then a rename); never the kept objects."""
    if not source.is_dir():
        return
    for path in source.rglob("*"):
        relative = path.relative_to(source)
        if not path.is_file() or path.suffix not in (".nbi", ".nbc") or relative.parts[0].startswith("aot-"):
            continue
        copy = target / relative
        if copy.exists() and copy.read_bytes() == path.read_bytes():
            continue
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, copy.with_name(copy.name + ".tmp"))
        os.replace(copy.with_name(copy.name + ".tmp"), copy)


@pytest.fixture(scope="module")
def kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A fresh kernel cache (numba's files copied from this suite's, no kept objects) after a first process ran the
    worker's ``COMPILED`` cases on numba, the shipped machine code off; the suite's cache gets what it compiled."""
    cache = tmp_path_factory.mktemp("aot")
    suite = Path(_cache.kernels_directory())
    copy_numba_files(suite, cache / _cache.kernels_digest())
    assert not objects(cache)  # no kept machine code yet: the first process compiles (or loads numba's cache)
    first = run_worker(cache, cases=kernel_worker.COMPILED)
    try:
        copy_numba_files(cache / _cache.kernels_digest(), suite)
    except OSError:  # the suite's cache is not writable: the later tests compile for themselves
        pass
    return cache, first


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The worker's report on the NumPy path (``XLASHAPES_NO_NUMBA=1``)."""
    return run_worker(tmp_path_factory.mktemp("numpy"), numba=False)


def objects(cache: Path) -> list[Path]:
    """The kept object files under ``cache``."""
    return sorted(cache.glob("kernels-*/aot-*/*.o"))


COMPILED_ENTRIES = {"pack", "unpack", "staged_transpose", "walk_squares", "walk_runs", "padded_rows", "padding_runs",
                    "shifted_rows", "tiled_to_physical", "tiled_from_physical"}
"""The entries the worker's ``COMPILED`` cases run."""


def test_first_use_keeps_the_machine_code_and_a_new_process_runs_it_without_numba(
        kept: tuple[Path, dict[str, Any]], reference: dict[str, Any]) -> None:
    cache, first = kept
    assert first["numba"] and not witnesses(first)  # every overload compiled there, none loaded
    assert {path.name.split(".")[1] for path in objects(cache)} == COMPILED_ENTRIES
    second = run_worker(cache, cases=kernel_worker.COMPILED)
    assert not second["numba"]  # every call ran from the kept machine code
    assert {name for name, _ in witnesses(second)} == COMPILED_ENTRIES
    expected = {case: reference["digests"][case] for case in kernel_worker.COMPILED}
    assert second["digests"] == first["digests"] == expected


def shipped_usable() -> bool:
    """True when this host runs the machine code shipped with the package (a current archive for its CPU)."""
    return _prebuilt.archive() is not None


@pytest.mark.skipif(not shipped_usable(), reason="no shipped machine code for this host (or built from other sources)")
def test_the_shipped_machine_code_runs_every_entry_and_width_with_nothing_compiled_or_written(
        tmp_path: Path, reference: dict[str, Any]) -> None:
    report = run_worker(tmp_path, shipped=True)
    assert not report["numba"] and report["llvmlite"]
    assert witnesses(report) >= EXPECTED
    assert report["digests"] == reference["digests"]  # the NumPy path's bytes, every case, both ways, 1 and 2 threads
    assert not objects(tmp_path)  # nothing compiled, so nothing kept


BLOCKS = {"walk_runs": {"_runs"}, "walk_groups": {"_grouped_block", "_grouped_pieces", "_band_squares", "_scalar"},
          "walk_wide": {"_wide_block", "_scalar"}, "walk_wide_lines": {"_wide_lines_block", "_scalar"},
          "walk_quarters": {"_quarter_block", "_cut_quarters", "_scalar"},
          "walk_rows": {"_any_rows_block", "_rows_block", "_interleaved", "_deinterleaved", "_scalar"},
          "walk_squares": {"_any_squares_block", "_squares_block", "_scalar"},
          "walk_short": {"_any_short_block", "_short_block", "_short_rows", "_scalar"},
          "walk_planes": {"_planes_block", "_interleaved_planes", "_scalar"}}
"""The block subroutines compiled into each kind of walk (and no other kind's)."""


@pytest.mark.parametrize("baseline", [baseline.name for baseline in _prebuilt.BASELINES])
def test_each_walk_holds_the_code_of_its_own_kind_of_block_only(baseline: str) -> None:
    names = set().union(*BLOCKS.values())
    with zipfile.ZipFile(Path(_prebuilt.FOLDER) / f"{baseline}.zip") as archive:
        walks = {name: archive.read(name) for name in archive.namelist()
                 if name.endswith(".o") and name.split(".")[1] in BLOCKS}
    assert {name.split(".")[1] for name in walks} == set(BLOCKS)
    for name, code in walks.items():  # numba's mangled names hold each Python name after its length
        assert {block for block in names if f"{len(block)}{block}".encode() in code} == BLOCKS[name.split(".")[1]]


def test_no_numba_variable_loads_neither_numba_nor_llvmlite(reference: dict[str, Any]) -> None:
    assert not reference["numba"] and not reference["llvmlite"] and not reference["native"]


def _rewritten(path: Path, change: str) -> None:
    """A kept file damaged one way: truncated, one code byte flipped, or a header naming another key or host."""
    data = path.read_bytes()
    end = data.index(b"\n", len(_aot.MAGIC))
    header, code = json.loads(data[len(_aot.MAGIC) : end]), data[end + 1 :]
    if change == "truncated":
        path.write_bytes(data[: len(data) // 2])
        return
    if change == "flipped":
        code = code[:100] + bytes([code[100] ^ 1]) + code[101:]
    elif change == "key":
        header["key"] += ",i"
    elif change == "host":
        header["host"] = {**header["host"], "cpu": "another"}
    elif change == "not an object":  # a whole file whose code is not an object (its digest matches)
        code = b"\x7fELF\x02\x01" + bytes(64)
        header["size"], header["sha256"] = len(code), hashlib.sha256(code).hexdigest()
    path.write_bytes(_aot.MAGIC + json.dumps(header).encode() + b"\n" + code)


def test_damaged_objects_fall_back_to_numba_and_are_rewritten(kept: tuple[Path, dict[str, Any]],
                                                              tmp_path: Path) -> None:
    cache, first = kept
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    damage = {"tiled_to_physical": "truncated", "walk_squares": "flipped", "pack": "key", "unpack": "host",
              "staged_transpose": "not an object"}  # (the shipped code off: a damaged file means a compile)
    damaged = [path for path in objects(copy) if path.name.split(".")[1] in damage]
    for path in damaged:
        _rewritten(path, damage[path.name.split(".")[1]])
    report = run_worker(copy, cases=kernel_worker.COMPILED)
    assert report["digests"] == first["digests"]  # no crash, the same bytes
    assert report["numba"]
    assert {name for name, _ in witnesses(report)} == COMPILED_ENTRIES - set(damage)
    again = run_worker(copy, cases=kernel_worker.COMPILED)  # the fallback wrote them whole again
    assert not again["numba"] and {name for name, _ in witnesses(again)} == COMPILED_ENTRIES
    assert again["digests"] == first["digests"]


def test_an_object_needing_an_unknown_symbol_is_not_loaded(kept: tuple[Path, dict[str, Any]]) -> None:
    cache, _ = kept
    path = next(path for path in objects(cache) if ".pack." in path.name)
    data = path.read_bytes()
    code = data[data.index(b"\n", len(_aot.MAGIC)) + 1 :]
    needed = _aot.undefined_symbols(code)
    assert needed is not None and "memcpy" in needed and all("\0" not in name for name in needed)
    renamed = code.replace(b"\0memcpy\0", b"\0memcpz\0")
    assert _aot.undefined_symbols(renamed) == [name.replace("memcpy", "memcpz") for name in needed]
    symbol = json.loads(data[len(_aot.MAGIC) : data.index(b"\n", len(_aot.MAGIC))])["symbol"]
    assert _aot._engine().add(renamed, symbol) is None  # refused before MCJIT could abort on it
    assert _aot.undefined_symbols(code[:40]) is None


def test_signature_keys_name_the_overloads_numba_compiles() -> None:
    import numpy as np

    args = (1, 2, np.uint16(0), np.zeros(3, np.int64), (4, 5))
    assert _entries.signature_key(args) == "i,i,<u2,A1<i8Cwa,(i,i)"
    assert _entries.flattened(args)[:3] == [1, 2, 0]
    assert len(_entries.flattened(args)) == 3 + 7 + 2  # an array is 7 words in 1-d, a pair 2
    assert _entries.signature_key((np.zeros((2, 2), np.int64)[:, 0],)) == "A1<i8Awa"
    assert _entries.signature_key(("text",)) == ""


def test_kernel_caches_unused_for_30_days_are_removed_but_this_versions(tmp_path: Path) -> None:
    for name, age in (("kernels-old", 40), ("kernels-recent", 5), ("kernels-mine", 90), ("numba-old", 40)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "file").write_bytes(b"x")
        then = time.time() - age * 86400
        os.utime(tmp_path / name, (then, then))
    assert _cache.prune_stale(str(tmp_path), "kernels-", "kernels-mine") == [str(tmp_path / "kernels-old")]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kernels-mine", "kernels-recent", "numba-old"]
    _cache.mark_used(str(tmp_path / "numba-old"))
    assert time.time() - (tmp_path / "numba-old").stat().st_mtime < 3600


def test_a_compile_removes_other_versions_stale_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLASHAPES_CACHE_DIR", str(tmp_path))
    stale, recent = tmp_path / "kernels-0123456789abcdef", tmp_path / "kernels-fedcba9876543210"
    for folder, age in ((stale, 31), (recent, 29)):
        folder.mkdir()
        then = time.time() - age * 86400
        os.utime(folder, (then, then))
    assert _aot.save_constants("_test", {"a": 1})
    assert not stale.exists() and recent.exists()
    assert _aot.constants("_test") == {"a": 1}


def test_the_kept_objects_share_the_numba_cache_directory() -> None:
    from xlashapes.physical import _intrinsics

    assert _cache.kernels_digest() == _intrinsics._SOURCES
    kernels = {"_intrinsics.py", "_inverse.py", "_kernel_args.py", "_kernels.py", "_kinds.py", "_shuffles.py",
               "_side_by_side.py", "_stacks.py", "_staging.py", "_tables.py", "_tile_parts.py", "_walk.py"}
    assert set(_cache.KERNEL_SOURCES) == kernels
    # (every module of numba code, one that builds on the intrinsics, is digested: else a change to it would leave
    # the kept and shipped machine code of the old one in use)
    folder = Path(_intrinsics.__file__).parent
    assert {p.name for p in folder.glob("_*.py") if "from ._intrinsics import" in p.read_text()} <= kernels
    folder = _aot.aot_directory()
    assert folder is not None and folder.startswith(_cache.kernels_directory() + os.sep)


class _Uncompilable:
    """A kernel module whose every kernel fails to compile, as numba reports it."""

    def __getattr__(self, name: str) -> Any:
        def kernel(*args: Any) -> None:
            from numba.core.errors import LoweringError

            raise LoweringError(f"{name}: numba changed an internal the kernels use")

        return kernel


@pytest.mark.parametrize("failure", ["import", "compile"])
def test_a_numba_that_cannot_be_imported_or_compile_leaves_the_conversion_to_the_numpy_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, failure: str) -> None:
    # kept machine code let the process start without numba; a kernel with none kept needs numba, found on the path
    # but failing to import (e.g. beside a NumPy release it does not support), or importing but failing to compile
    # the kernel (a numba release that changed what the kernels use of it): the call is done again on NumPy
    import numpy as np

    from xlashapes.physical import _dispatch, pack_file, unpack_file

    def unimportable(module: str) -> Any:
        if failure == "compile":
            return _Uncompilable()
        raise ImportError("numba needs another NumPy")

    shape, transposed = "f32[64,256]{0,1:T(8,128)}", "f32[64,256]{1,0}"
    x = np.arange(64 * 256, dtype=np.float32).reshape(64, 256)
    monkeypatch.setenv("XLASHAPES_NO_NUMBA", "1")
    expected = xlashapes.to_physical(x, shape)
    expected_relayout = xlashapes.relayout(expected, shape, transposed)
    offsets = np.arange(0, 64 * 256, 3)
    indices, valid = xlashapes.multi_index(shape, offsets)
    monkeypatch.delenv("XLASHAPES_NO_NUMBA")
    monkeypatch.setattr(_aot, "load", lambda *args: None)  # nothing kept for these calls
    monkeypatch.setattr(_aot, "numba_module", unimportable)
    monkeypatch.setattr(_aot, "_FAILED", [])
    kept = {name: _aot.Entries(name) for name in ("_walk", "_kernels", "_stacks", "_tables", "_inverse")}
    monkeypatch.setattr(_dispatch, "import_entries", kept.__getitem__)
    monkeypatch.setattr(_dispatch, "NUMBA_BYTES", 0)
    monkeypatch.setattr(_dispatch, "FIRST_NUMBA_BYTES", 0)
    assert _dispatch.walker() is not None and not _aot.numba_failed()
    np.save(tmp_path / "x.npy", x)
    calls = [
        lambda: np.array_equal(xlashapes.to_physical(x, shape), expected),
        lambda: np.array_equal(xlashapes.from_physical(expected, shape), x),
        lambda: np.array_equal(xlashapes.relayout(expected, shape, transposed), expected_relayout),
        lambda: all(map(np.array_equal, xlashapes.multi_index(shape, offsets), (indices, valid))),
        lambda: pack_file(tmp_path / "x.npy", shape, tmp_path / "x.bin") == expected.nbytes and np.array_equal(
            np.fromfile(tmp_path / "x.bin", np.uint8), expected),
        lambda: unpack_file(tmp_path / "x.bin", shape, tmp_path / "y.npy") == expected.nbytes and np.array_equal(
            np.load(tmp_path / "y.npy"), x),
    ]
    for call in calls:
        monkeypatch.setattr(_aot, "_FAILED", [])
        assert call()
        assert _aot.numba_failed() and _dispatch.walker() is None and _dispatch.kernels() is None


def python_env(cache: Path) -> dict[str, str]:
    """A new process's environment: this source tree, kernel cache ``cache``, numba and kept code on, the shipped
    code off (the kernels compile)."""
    source = os.path.dirname(os.path.dirname(os.path.abspath(xlashapes.__file__)))
    return {**os.environ, "XLASHAPES_CACHE_DIR": str(cache), "XLASHAPES_NO_NUMBA": "0", "XLASHAPES_NO_AOT": "0",
            _prebuilt.NO_PREBUILT_VARIABLE: "1",
            "PYTHONPATH": os.pathsep.join([source, os.environ.get("PYTHONPATH", "")])}


def test_a_process_waits_while_another_compiles_the_same_overload(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLASHAPES_CACHE_DIR", str(tmp_path))
    waiting = ("import time\nfrom xlashapes.physical._aot import compiling\nprint('ready', flush=True)\n"
               "start = time.monotonic()\nwith compiling('_walk', 'walk_squares', {key!r}):\n"
               "    print(time.monotonic() - start)")
    with _aot.compiling("_walk", "walk_squares", "a key"):
        same, other = (subprocess.Popen([sys.executable, "-c", waiting.format(key=key)], env=python_env(tmp_path),
                                        stdout=subprocess.PIPE, text=True) for key in ("a key", "another key"))
        assert other.stdout is not None and same.stdout is not None
        assert other.stdout.readline() == "ready\n" and float(other.stdout.readline()) < 0.5  # another one: no wait
        assert same.stdout.readline() == "ready\n"
        time.sleep(0.6)
    assert float(same.stdout.readline()) >= 0.5
    assert same.wait(timeout=60) == 0 and other.wait(timeout=60) == 0


def test_processes_started_together_on_a_cold_cache_compile_each_overload_once(tmp_path: Path) -> None:
    report = ("import json, numpy as np, xlashapes as xs\nfrom xlashapes.physical import _dispatch\n"
              "_dispatch.NUMBA_BYTES = _dispatch.FIRST_NUMBA_BYTES = 0\n"
              "shape = xs.parse_shape('u4[64,256]{1,0:E(4)}')\n"
              "xs.to_physical(np.zeros((64, 256), shape.element_type.numpy_dtype), shape)\n"
              "entry = _dispatch.kernels().pack\n"
              "print(json.dumps([key for key, code in entry.natives.items() if code is not None]))")
    runs = [subprocess.Popen([sys.executable, "-c", report], env=python_env(tmp_path), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    loaded = []
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        loaded.append(json.loads(out))
    assert sorted(map(len, loaded)) == [0, 1], loaded  # one compiled it, the other ran the code it kept
