"""Packed untiled layouts converted in bands (chunks of a few ranges of fields) give the NumPy path's bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from test_physical import canonical_bits, random_array, same_bits
from test_physical_fast import compiled_for_any_size
from test_physical_generic import numpy_path
from xlashapes.physical import _chunks, _dispatch, _packing, _slabbed, from_physical, to_physical
from xlashapes.physical._geometry import _geometry
from xlashapes.physical.files import pack_file, unpack_file

FAST = settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))


def _cut(text: str, budget: int = 1 << 23) -> tuple[int, int, int] | None:
    shape = xs.parse_shape(text)
    found = _chunks.bands(shape, xs.layout.element_bits(shape.element_type, shape.layout), budget)
    return None if found is None else (found.axis, found.ranges, found.inner)


def test_bands_cut_where_both_sides_run_longest() -> None:
    # planes of 5 x 6710886 read two bytes apart as slabs; as bands, rows of dim 1: two ranges, five runs
    assert _cut("s4[5,6710886,2]{0,1,2:E(4)}") == (1, 2, 5)
    # twelve planes whose ranges start mid-byte (5592405 fields each): chunks of the logical array's rows
    assert _cut("s4[5592405,12]{0,1:E(4)}") == (0, 12, 1)
    # the most major physical dim has one index: bands of the next (one range), not 64 ranges of dim 1
    assert _cut("s4[1,500,64,1024,5]{3,4,1,2,0:E(4)}") == (2, 1, 5 * 1024 * 500)
    assert _cut("s4[1,500,64,1024,5]{3,4,1,2,0:E(4)}", 1 << 30) == (2, 1, 5 * 1024 * 500)
    assert _cut("s4[8192,8192]{1,0:E(4)}") is None  # slabs are rows of the logical array already
    assert _cut("s4[8192,8192]{0,1:E(4)}") is None  # columns: 8192 runs either way, slabs kept
    assert _cut("s4[64,8192]{0,1:T(8,128)(2,1)E(4)}") is None  # tiled
    assert _cut("s4[5,7,2]{0,1,2:E(4)}", 4) is None  # no depth has a step of rows within the budget
    # 384 ranges a chunk, each a call of its own (about 20 us): slabs, not bands (17x memcpy -> 5.8x)
    assert _cut("s4[7,24966,384]{0,1,2:E(4)}") is None


@FAST
@given(st.sampled_from([("u4", 4), ("u2", 2), ("u1", 1), ("pred", 1), ("s2", 4), ("s4", 4)]), st.integers(0, 200),
       st.integers(0, 40), st.integers(0, 2**32 - 1), st.booleans())
def test_fields_packed_and_unpacked_at_any_field(etype: tuple[str, int], n: int, first: int, seed: int,
                                                 compiled: bool) -> None:
    # a run of fields written from any field on (bytes shared with fields outside it keep theirs) and read back,
    # each masked to its field and its value bits (pred: one bit, s2 in E(4): two of four)
    name, bits = etype
    per = 8 // bits
    geometry = _geometry(xs.parse_shape(f"{name}[{first + n + per}]{{0:E({bits})}}"))
    rng = np.random.default_rng(seed)
    reference = _dispatch.Run(1 << 30, 1, numba_bytes=1 << 62)
    fields = np.empty(geometry.nbytes * per, np.uint8)
    _packing._unpack(rng.integers(0, 256, geometry.nbytes, dtype=np.uint8), geometry, fields, reference)
    buffer = np.empty(geometry.nbytes, np.uint8)
    _packing._pack(fields, geometry, buffer, reference)  # (canonical fields: s2's sign bits in E(4))
    run = _dispatch.Run(1 << 30, 1, numba_bytes=0 if compiled else 1 << 62)
    if compiled and _dispatch.kernels() is None:
        pytest.skip("numba is not installed")
    codes = rng.integers(0, 1 << (bits if name != "s2" else 2), n, dtype=np.uint8)
    _packing._pack_at(codes, geometry, buffer, first, run)
    fields[first : first + n] = codes
    expected = np.empty_like(buffer)
    _packing._pack(fields, geometry, expected, reference)
    assert np.array_equal(buffer, expected)
    back = np.full(n, 99, np.uint8)
    _packing._unpack_at(buffer, geometry, back, first, run)
    assert np.array_equal(back, codes)


BAND_CASES = [
    "s4[5,467,2]{0,1,2:E(4)}", "s4[255,12]{0,1:E(4)}", "u4[1,9,6,8,5]{3,4,1,2,0:E(4)}", "pred[1000,3,3]{0,1,2:E(1)}",
    "u2[80,20,3]{1,0,2:E(2)}", "s2[9,80,3]{0,1,2:E(4)}", "u4[250,3,7]{1,0,2:E(4)}", "s4[3,2,401]{2,0,1:E(4)}",
    "pred[8,4,1821]{1,2,0:E(1)}",  # (ranges of 2 bits: shared bytes at both ends)
]


@pytest.fixture
def band_calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls of the two band functions counted; ranges weighed as the kernel calls of fields far fewer than these
    small arrays have (so that bands are cut where they would be in arrays of 100 MB)."""
    monkeypatch.setattr(_chunks, "PACKED_RANGE_COST", _chunks.RANGE_COST)
    calls = {"write": 0, "read": 0}
    for name, key in (("write_in_bands", "write"), ("read_in_bands", "read")):
        original = getattr(_slabbed, name)

        def counted(*args: Any, key: str = key, original: Any = original) -> None:
            calls[key] += 1
            original(*args)

        monkeypatch.setattr(_slabbed, name, counted)
    return calls


@pytest.mark.parametrize("text", BAND_CASES)
@pytest.mark.parametrize("budget", [256, 1024])
@pytest.mark.parametrize("compiled", [False, True])
def test_band_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch, band_calls: dict[str, int], text: str,
                                    budget: int, compiled: bool) -> None:
    """Chunks of one step of rows or two (their ranges mid-byte in some), and of a few: the bytes of one pass, and
    the array back (into a strided result too)."""
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, budget + len(text))
    expected = numpy_path(to_physical, x, shape)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", budget)
    if compiled:
        if _dispatch.walker() is None:
            pytest.skip("numba is not installed")
        compiled_for_any_size(monkeypatch)
    convert = (lambda f, *a, **k: f(*a, **k)) if compiled else numpy_path
    for threads in (1, 2):
        room = np.full(len(expected) + 3, 7, np.uint8)
        assert convert(to_physical, x, shape, out=room[3:], threads=threads) is not None
        assert np.array_equal(room[3:], expected), (text, threads)
        assert same_bits(convert(from_physical, expected, shape, threads=threads), x), (text, threads)
        transposed = np.zeros(x.shape[::-1], x.dtype).T  # (a strided result, filled in place)
        convert(from_physical, expected, shape, out=transposed, threads=threads)
        assert same_bits(transposed, x), (text, threads)
    assert band_calls == {"write": 2, "read": 4}, text


def test_bands_go_through_files_and_report_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    band_calls: dict[str, int]) -> None:
    shape = xs.parse_shape("s4[5,671,2]{0,1,2:E(4)}")
    x = random_array("s4", shape.dimensions, 11)
    expected = numpy_path(to_physical, x, shape).tobytes()
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 64)
    np.save(tmp_path / "x.npy", x)
    seen: list[tuple[int, int]] = []
    assert pack_file(tmp_path / "x.npy", shape, tmp_path / "x.bin", progress=lambda a, b: seen.append((a, b)))
    assert (tmp_path / "x.bin").read_bytes() == expected
    assert len(seen) > 10 and seen[-1] == (shape.byte_size(),) * 2
    assert [a for a, _ in seen] == sorted(a for a, _ in seen)
    unpack_file(tmp_path / "x.bin", shape, tmp_path / "y.npy")
    assert np.array_equal(np.load(tmp_path / "y.npy").view(np.uint8), canonical_bits(x).reshape(x.shape))
    assert band_calls == {"write": 1, "read": 1}


def test_layouts_with_tail_padding_keep_their_slabs(band_calls: dict[str, int],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    shape = xs.parse_shape("s4[5,67,3]{0,1,2:L(4)E(4)}")
    x = random_array("s4", shape.dimensions, 2)
    expected = numpy_path(to_physical, x, shape)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 40)
    assert np.array_equal(to_physical(x, shape), expected)
    assert same_bits(from_physical(expected, shape), x)
    assert band_calls == {"write": 0, "read": 0}
    assert _cut("s4[5,67,3]{0,1,2:E(4)}", 40) is not None  # (the same without L(4) would go in bands)
