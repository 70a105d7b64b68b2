"""E(n) fields whose bytes are a u8 layout of the elements grouped along one dim: the grouping, its compiled route
for to_physical / from_physical, and relayouts between layouts grouped alike as relayouts of bytes."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xlashapes as xs
import xlashapes.physical as physical
from profiles import examples
from test_physical import canonical_bits, random_array, same_bits
from test_physical_generic import numpy_path
from xlashapes.physical import _convert, _dispatch, _grouped, _permuted, _slabbed, from_physical, relayout, to_physical
from xlashapes.physical._geometry import _geometry

FAST = settings(max_examples=examples(25), deadline=None, suppress_health_check=list(HealthCheck))
FIELDS = {"s4": 4, "u4": 4, "s2": 2, "u2": 2}


def padding_values(shape: xs.Shape) -> st.SearchStrategy[int]:
    """Padding values the element type holds: negative ones too for signed types."""
    bits = FIELDS[str(shape.element_type)]
    return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if str(shape.element_type)[0] == "s" else (
        st.integers(0, (1 << bits) - 1))


def grouping_of(text: str) -> _grouped.Grouping | None:
    return _grouped.grouping(_geometry(xs.parse_shape(text)))


@contextlib.contextmanager
def grouped_routes() -> Iterator[dict[str, int]]:
    """Compiled kernels at any size (split over the threads asked for at any size too); calls of the regroup kernel
    and of the relayout of bytes counted."""
    if _dispatch.walker() is None:
        pytest.skip("numba is not installed")
    calls = {"regroup": 0, "pair": 0}
    saved = _dispatch.NUMBA_BYTES, _dispatch.FIRST_NUMBA_BYTES, _convert.regroup, physical.grouped_pair, (
        _dispatch.THREAD_BYTES)

    def regroup(*args: Any) -> None:
        calls["regroup"] += 1
        saved[2](*args)

    def pair(*args: Any) -> Any:
        found = saved[3](*args)
        calls["pair"] += found is not None
        return found

    _dispatch.NUMBA_BYTES = _dispatch.FIRST_NUMBA_BYTES = _dispatch.THREAD_BYTES = 0
    _convert.regroup, physical.grouped_pair = regroup, pair
    try:
        yield calls
    finally:
        _dispatch.NUMBA_BYTES, _dispatch.FIRST_NUMBA_BYTES, _dispatch.THREAD_BYTES = saved[0], saved[1], saved[4]
        _convert.regroup, physical.grouped_pair = saved[2], saved[3]


# ----- which layouts group, and into which bytes ------------------------------------------------------------------
@pytest.mark.parametrize(("text", "axis", "grouped"), [
    ("s4[64,100]{0,1:T(8,128)(2,1)E(4)}", 1, "u8[64,50]{0,1:T(4,128)}"),  # (2,1): pairs of rows
    ("s4[8,64,256]{2,1,0:T(8,128)E(4)}", 2, "u8[8,64,128]{2,1,0:T(8,64)}"),  # one tile level: pairs along its minor
    ("u4[6,8,10]{1,0,2:E(4)}", 1, "u8[6,4,10]{1,0,2}"),  # untiled: pairs along the minor dim
    ("u2[8,16]{0,1:T(8,128)(4,1)E(2)}", 1, "u8[8,4]{0,1:T(2,128)}"),  # four fields a byte
    ("s4[16,256]{1,0:T(8,128)(4,1)E(4)}", 0, "u8[8,256]{1,0:T(4,128)(2,1)}"),  # (4,1): pairs of pairs
    ("u4[4096]{0:T(1024)E(4)}", 0, "u8[2048]{0:T(512)}"),  # rank 1
])
def test_layouts_that_group_fields_into_bytes(text: str, axis: int, grouped: str) -> None:
    found = grouping_of(text)
    assert found is not None
    assert (found.axis, str(found.shape)) == (axis, grouped)
    assert found.shape.byte_size() == xs.parse_shape(text).byte_size()


@pytest.mark.parametrize("text", [
    "u4[9,6]{0,1:E(4)}",  # untiled, the minor dim odd: a byte would hold the ends of two rows
    "pred[8,16]{0,1:E(1)}",  # pred: 0/1 made first, not its bits
    "s2[8,16]{0,1:E(4)}",  # sign-extended into a wider field
    "s4[8,16]{0,1:T(8,127)E(4)}",  # a tile's minor side odd
    "s4[16,256]{1,0:T(8,128)(1,2)E(4)}",  # sub-tiles that are not (p,1)
    "s4[2,16,256]{2,1,0:T(2,8,128)(2,1)(1,1)E(4)}",  # three tile levels
    "s4[4,16,256]{2,1,0:T(*,8,128)E(4)}",  # combined dims
    "s8[16,256]{1,0:T(8,128)(4,1)}",  # whole bytes
])
def test_layouts_that_do_not_group(text: str) -> None:
    assert grouping_of(text) is None


def test_fields_grouped_along_a_dim_by_numpy() -> None:
    # the NumPy reference of the grouping: the first element in the low-order bits; a last group past the end of the
    # dim takes the padding element's field; split again, each field masked to the value bits
    found = grouping_of("u2[6,3]{0,1:T(8,128)(4,1)E(2)}")
    assert found is not None and found.axis == 1
    x = np.array([[1, 2, 3]] * 6, np.uint8) | 0xF0  # (bits above the value: ignored)
    grouped = np.empty((6, 1), np.uint8)
    _grouped.group(x, found, np.array(2, np.uint8), grouped, np.empty(6, np.uint8))
    assert grouped.reshape(-1).tolist() == [0b10_11_10_01] * 6
    back = np.empty((6, 3), np.uint8)
    _grouped.ungroup(grouped, found, 3, back)
    assert back.tolist() == [[1, 2, 3]] * 6


# ----- the grouping is the layout's bytes -------------------------------------------------------------------------
@st.composite
def grouped_shapes(draw: st.DrawFn) -> xs.Shape:
    """An E(n) shape with a grouping: untiled, one tile level, or (p,1) sub-tiles; any order, dims odd or even."""
    etype = draw(st.sampled_from(sorted(FIELDS)))
    per = 8 // FIELDS[etype]
    rank = draw(st.integers(1, 4))
    order = draw(st.permutations(range(rank)))
    kind = draw(st.sampled_from(["untiled", "tile", "sub-tiles"] if rank >= 2 else ["untiled", "tile"]))
    dims = [draw(st.integers(1, 9)) for _ in range(rank)]
    if kind == "untiled":
        dims[order[0]] = per * draw(st.integers(1, 6))
        tiles: list[tuple[int, ...]] = []
    elif kind == "tile":
        minor = per * draw(st.sampled_from([2, 4, 8, 32]))
        tiles = [(draw(st.sampled_from([1, 2, 8])), minor) if rank >= 2 else (minor,)]
        dims[order[0]] = draw(st.integers(1, 2 * minor + 3))
    else:
        p = per * draw(st.sampled_from([1, 2]))
        tiles = [(p * draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([8, 16, 128]))), (p, 1)]
        dims[order[1]] = draw(st.integers(1, 3 * tiles[0][0] + 1))
    return xs.make_shape(etype, dims, minor_to_major=order, tiles=tiles, element_size_in_bits=FIELDS[etype])


@FAST
@given(grouped_shapes(), st.integers(0, 2**32 - 1), st.data())
def test_grouped_bytes_are_the_layouts_bytes(shape: xs.Shape, seed: int, data: st.DataObject) -> None:
    # the NumPy path laying out the grouped bytes as u8 gives the packed layout's bytes, padding fields included
    pad = data.draw(padding_values(shape))
    found = _grouped.grouping(_geometry(shape))
    assert found is not None
    x = random_array(str(shape.element_type), shape.dimensions, seed)
    grouped = np.empty(found.shape.dimensions, np.uint8)
    fields = canonical_bits(x).reshape(x.shape)
    code = np.array(pad & ((1 << found.bits) - 1), np.uint8)
    _grouped.group(fields, found, code, grouped, np.empty(grouped.size, np.uint8))
    byte = int(_grouped.pad_byte(code, found))
    expected = numpy_path(to_physical, x, shape, padding_value=pad)
    assert np.array_equal(numpy_path(to_physical, grouped, found.shape, padding_value=byte), expected)


@FAST
@given(grouped_shapes(), st.integers(0, 2**32 - 1), st.sampled_from([1, 2]), st.data())
def test_grouped_route_equals_numpy_path(shape: xs.Shape, seed: int, threads: int, data: st.DataObject) -> None:
    # compiled at any size, the layouts the tiled and packed-transpose kernels do not take go through the regroup
    # kernel and the byte kernels: the NumPy path's bytes and array both ways, with a padding value
    pad = data.draw(padding_values(shape))
    x = random_array(str(shape.element_type), shape.dimensions, seed)
    expected = numpy_path(to_physical, x, shape, padding_value=pad)
    with grouped_routes() as calls:
        buffer = to_physical(x, shape, padding_value=pad, threads=threads)
        back = from_physical(buffer, shape, threads=threads)
    assert np.array_equal(buffer, expected)
    assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))
    if not shape.layout_or_default().tiles and shape.layout_or_default().minor_to_major != tuple(
            range(shape.rank - 1, -1, -1)) and shape.rank > 2:
        # (rank-3 and up permutations: no other compiled kernel packs them; but groups made in short runs, one call
        # of the kernel a run, are unpacked and packed instead)
        short = _grouped.short_runs(_grouped.grouping(_geometry(shape)), shape.dimensions)
        assert calls["regroup"] == (0 if short else 2)


@pytest.mark.parametrize(("text", "budget"), [
    ("s4[64,128,64,32]{0,1,3,2:T(8,128)(2,1)E(4)}", 1 << 30), ("s4[64,128,64,32]{0,1,3,2:T(8,128)(2,1)E(4)}", 1 << 10),
    ("s4[16,48,256]{1,0,2:E(4)}", 1 << 30), ("s4[16,48,256]{1,0,2:E(4)}", 1 << 10),
    ("u4[256,32,66]{0,2,1:T(8,128)E(4)}", 1 << 30), ("u2[8,40,64]{1,0,2:T(8,128)(4,1)E(2)}", 1 << 30),
    ("u2[8,40,64]{1,0,2:T(8,128)(4,1)E(2)}", 1 << 10),
    # (8,1) sub-tiles (the tiled kernels would move them element by element), whole rows or cut short, windows too
    ("s4[256,512]{1,0:T(64,128)(8,1)E(4)}", 1 << 30), ("u4[3,100,300]{2,1,0:T(64,128)(8,1)E(4)}", 1 << 30),
    ("s4[300,256]{1,0:T(64,128)(8,1)E(4)}", 1 << 10),
    # short runs of groups (a minor dim of 8 or 16 bytes between them: _regroup_rows), two merged axes or more
    ("s4[64,96,8]{0,1,2:T(8,128)(2,1)E(4)}", 1 << 30), ("u2[3,5,96,16]{1,2,3,0:T(8,128)(4,1)E(2)}", 1 << 30),
    ("s4[64,97,8]{0,1,2:T(8,128)(2,1)E(4)}", 1 << 30),  # (an odd dim: three axes)
    # (lines of 8 runs at a time in registers, and the rows after the last whole line)
    ("u4[24,45,8]{0,1,2:T(8,128)(2,1)E(4)}", 1 << 30), ("s4[8,1003,8]{0,1,2:T(8,128)(2,1)E(4)}", 1 << 30),
    # (runs off whole words: a word and the rest one by one, or all one by one; E(4) and four fields a byte)
    ("s4[40,16,5,3]{0,1,2,3:T(8,128)(2,1)E(4)}", 1 << 30), ("u2[3,5,96,7]{1,2,3,0:T(8,128)(4,1)E(2)}", 1 << 30),
    ("u4[300,6,5,3]{2,1,3,0:T(8,128)(2,1)E(4)}", 1 << 10)])
def test_permuted_fields_go_through_the_regroup_kernel(monkeypatch: pytest.MonkeyPatch, text: str,
                                                       budget: int) -> None:
    # laid out whole (the groups within the budget: one call), or a window of the byte layout at a time (several);
    # read back split in place where the groups divide the dim (one call), else as laid out
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 7)
    expected = numpy_path(to_physical, x, shape, padding_value=1)
    monkeypatch.setattr(_convert, "GROUP_BYTES", budget)
    monkeypatch.setattr(_permuted, "SHORT_MINOR", 0)  # (short runs of groups: the regroup kernel's, not bands')
    with grouped_routes() as calls:
        buffer = to_physical(x, shape, padding_value=1)
        laid = calls["regroup"]
        back = from_physical(buffer, shape)
    read = calls["regroup"] - laid
    assert np.array_equal(buffer, expected)
    assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))
    whole = budget > 1 << 20
    found = grouping_of(text)
    assert found is not None
    assert laid == 1 if whole else laid >= 2, calls
    assert read == 1 if whole or _convert._splits_in_place(found, back) else read >= 2, calls


@pytest.mark.parametrize("text", [
    "u4[256,32,66]{0,2,1:T(8,128)E(4)}",  # (pairs along the first dim)
    "s4[64,128,64,32]{0,1,3,2:T(8,128)(2,1)E(4)}",  # (along a middle one)
    "s4[16,40,256]{2,0,1:E(4)}",  # (along the last)
    "u2[8,40,64]{1,0,2:T(8,128)(4,1)E(2)}",  # (four fields a byte, along the first)
    "s4[64,96,8]{0,1,2:T(8,128)(2,1)E(4)}",  # (short runs of groups, 8 at a time in registers)
    "s4[40,16,5,3]{0,1,2,3:T(8,128)(2,1)E(4)}",  # (runs of 15: a word, then one by one)
])
@pytest.mark.parametrize("threads", [1, 2])
def test_groups_read_back_are_split_in_the_results_own_bytes(
        monkeypatch: pytest.MonkeyPatch, text: str, threads: int) -> None:
    # whole groups read back into the last 1/per of the result and split from there: no temporary, whatever the
    # budget, the same array as the NumPy path; an out= array in another order takes a temporary
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    buffer = numpy_path(to_physical, x, shape)
    made: list[int] = []
    real = _dispatch.temporary
    monkeypatch.setattr(_dispatch, "temporary", lambda n: made.append(n) or real(n))
    monkeypatch.setattr(_convert, "GROUP_BYTES", 1 << 10)  # (else windows of the groups)
    monkeypatch.setattr(_convert, "STAGE_SPLIT_BYTES", 1 << 62)  # (one stage however many threads: the next test)
    with grouped_routes() as calls:
        back = from_physical(buffer, shape, threads=threads)
        assert calls["regroup"] == 1 and made == []
        noise = np.random.default_rng(5).integers(0, 256, buffer.size, dtype=np.uint8)
        assert same_bits(from_physical(noise, shape, threads=threads), numpy_path(from_physical, noise, shape))
        other = np.empty(x.shape[::-1], x.dtype).T  # (Fortran order: not split in place)
        from_physical(buffer, shape, out=other, threads=threads)
        assert made != [] and calls["regroup"] >= 3
    assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))
    assert np.array_equal(other.view(np.uint8), canonical_bits(x).reshape(x.shape))


@pytest.mark.parametrize("text", [
    "u4[256,32,66]{0,2,1:T(8,128)E(4)}", "s4[64,128,64,32]{0,1,3,2:T(8,128)(2,1)E(4)}", "s4[16,40,256]{2,0,1:E(4)}",
    "u2[64,40,64]{1,0,2:T(8,128)(4,1)E(2)}", "s4[64,96,8]{0,1,2:T(8,128)(2,1)E(4)}",
])
def test_groups_split_in_place_over_threads_go_in_stages_no_thread_writing_where_another_reads(
        monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    # each stage the rows whose fields end before the first byte not yet split (half the rest, for two fields a
    # byte), split over both threads; stages down to one row (no least size), the last on one thread
    shape = xs.parse_shape(text)
    monkeypatch.setattr(_convert, "GROUP_BYTES", 1 << 10)
    monkeypatch.setattr(_convert, "STAGE_SPLIT_BYTES", 0)
    found = grouping_of(text)
    assert found is not None
    rows = found.shape.dimensions[0]
    stages = _convert._in_place_stages(found, rows * 10, _dispatch.Run(1 << 30, 2))
    assert stages[0] == (0, rows * (found.per - 1) // found.per) and stages[-1][1] == rows and len(stages) >= 3
    assert all(a[1] == b[0] for a, b in pairwise(stages))
    for seed in (3, 4):
        noise = np.random.default_rng(seed).integers(0, 256, xs.parse_shape(text).byte_size(), dtype=np.uint8)
        with grouped_routes() as calls:
            back = from_physical(noise, shape, threads=2)
        assert calls["regroup"] == len(_convert._in_place_stages(found, back.nbytes // found.per,
                                                                 _dispatch.Run(1 << 30, 2)))
        assert calls["regroup"] >= 3
        assert same_bits(back, numpy_path(from_physical, noise, shape))


@pytest.mark.parametrize("text", [
    "s4[16,32,512]{1,0,2:T(8,128)(2,1)E(4)}",  # (runs of 4096 bytes of groups: whole lines)
    "u4[8,6,333]{1,0,2:T(8,128)(2,1)E(4)}",  # (runs of 1998 bytes: lines, then words, then bytes)
    "u2[16,3,200]{1,0,2:T(8,128)(4,1)E(2)}",  # (four fields a byte: four lines of fields a line of groups)
])
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("offset", [0, 3])
def test_long_runs_of_groups_go_a_line_at_a_time_streamed_or_not(
        monkeypatch: pytest.MonkeyPatch, text: str, stream: bool, offset: int) -> None:
    # runs of groups contiguous on both sides (the grouped dim outermost), a line of each at a time: split fields on
    # the line grid streamed (out= arrays on a line; at an odd offset, plain stores), laid out and read back, whole
    # groups and windows of them, in place and through a temporary
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 11)
    expected = numpy_path(to_physical, x, shape, padding_value=1)
    noise = np.random.default_rng(2).integers(0, 256, expected.size, dtype=np.uint8)
    monkeypatch.setattr(_dispatch, "STREAM_BYTES", 0 if stream else 1 << 62)
    monkeypatch.setattr(_permuted, "SHORT_MINOR", 0)
    room = np.empty(x.nbytes + 64 + offset, np.uint8)
    start = -room.ctypes.data % 64 + offset
    out = room[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    for budget in (1 << 30, 1 << 10):
        monkeypatch.setattr(_convert, "GROUP_BYTES", budget)
        with grouped_routes() as calls:
            buffer = to_physical(x, shape, padding_value=1)
            back = from_physical(buffer, shape, out=out)
            noisy = from_physical(noise, shape)
        assert calls["regroup"] >= 3
        assert np.array_equal(buffer, expected)
        assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))
        assert same_bits(noisy, numpy_path(from_physical, noise, shape))


@pytest.mark.parametrize(("text", "grouped"), [
    ("s4[256,1024]{0,1:T(8,128)(2,1)E(4)}", False), ("u4[4,64,1024]{1,2,0:T(8,128)(2,1)E(4)}", False),
    ("s4[512,48]{0,1:T(8,128)(2,1)E(4)}", True), ("u4[4,64,96]{1,2,0:T(8,128)(2,1)E(4)}", True),
    ("s4[1024,12]{0,1:T(8,128)(2,1)E(4)}", True)])
def test_sub_tiles_pairing_a_long_minor_dim_are_read_back_unpacked(text: str, grouped: bool) -> None:
    # the groups of (p,1) sub-tiles pairing the logical minor dim's elements are made to lay them out; read back,
    # only where that dim is short (LONG_GROUPED_ROWS): long, the byte layout's tiles hold runs of 4 bytes of the
    # array's rows, the unpacked fields' tiles 8 (s4[65536,1024]{0,1:...} 2.9x memcpy against 2.6x); short, those
    # were slower (s4[1398101,48]{0,1:...} 9.8x against 2.3x)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 9)
    with grouped_routes() as calls:
        buffer = to_physical(x, shape)
        back = from_physical(buffer, shape)
    assert np.array_equal(buffer, numpy_path(to_physical, x, shape))
    assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))
    assert calls["regroup"] == (2 if grouped else 1)


def test_sub_tiles_pairing_a_short_minor_dim_are_read_back_unpacked_into_column_blocks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a slab's piece of a long minor dim has a short one of its own, but its result is a column block: grouped, that
    # went at 5.5x memcpy (s4[65536,1024]{0,1:T(8,128)(2,1)E(4)} in slabs of 256 rows) against 2.6x unpacked
    shape = xs.parse_shape("s4[512,2048]{0,1:T(8,128)(2,1)E(4)}")
    x = random_array(str(shape.element_type), shape.dimensions, 4)
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 1 << 14)  # (slabs of 64 rows of the minor dim)
    with grouped_routes() as calls:
        buffer = to_physical(x, shape)
        laid = calls["regroup"]
        back = from_physical(buffer, shape)
    assert np.array_equal(buffer, numpy_path(to_physical, x, shape))
    assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))
    assert calls["regroup"] == laid  # (read back: no groups)


# ----- relayouts between layouts grouped alike ----------------------------------------------------------------------
@pytest.mark.parametrize(("text", "target", "taken"), [
    ("s4[8,64,256]{1,2,0:T(8,128)(2,1)E(4)}", "{2,1,0:T(8,128)E(4)}", True),
    ("s4[64,256]{1,0:T(8,128)(2,1)E(4)}", "{0,1:E(4)}", True),
    ("u4[32,64,128]{0,2,1:E(4)}", "{1,0,2:T(8,128)(2,1)E(4)}", True),
    ("s4[66,256]{1,0:T(8,128)(2,1)E(4)}", "{0,1:E(4)}", True),
    ("s4[65,256]{1,0:T(8,128)(2,1)E(4)}", "{1,0:T(8,128)(4,1)E(4)}", False),  # (a last pair half padding)
    ("s4[64,256]{1,0:T(8,128)(2,1)E(4)}", "{0,1:T(8,128)(2,1)E(4)}", False),  # (pairs along the other dim)
    ("u2[16,64,32]{1,0,2:E(2)}", "{1,2,0:T(8,128)E(2)}", True),
])
def test_relayouts_of_fields_grouped_alike_are_relayouts_of_bytes(text: str, target: str, taken: bool) -> None:
    shape = xs.parse_shape(text)
    other = xs.parse_shape(text[: text.index("{")] + target)
    x = random_array(str(shape.element_type), shape.dimensions, 3)
    buffer = numpy_path(to_physical, x, shape)
    with grouped_routes() as calls:
        moved = relayout(buffer, shape, other, padding_value=2)
    assert np.array_equal(moved, numpy_path(to_physical, x, other, padding_value=2))
    assert calls["pair"] == int(taken)


@st.composite
def grouped_layouts(draw: st.DrawFn, shape: xs.Shape) -> xs.Shape:
    """``shape``'s array in another layout with a grouping (untiled, one tile level or (p,1) sub-tiles)."""
    per = 8 // FIELDS[str(shape.element_type)]
    order = draw(st.permutations(range(shape.rank)))
    tiles: list[tuple[int, ...]] = draw(st.sampled_from([
        [], [(draw(st.sampled_from([1, 2, 8])), per * 8)] if shape.rank >= 2 else [(per * 16,)],
        [(2 * per, 16), (per, 1)] if shape.rank >= 2 else []]))
    other = xs.make_shape(shape.element_type, shape.dimensions, minor_to_major=order, tiles=tiles,
                          element_size_in_bits=8 // per)
    assume(_grouped.grouping(_geometry(other)) is not None)
    return other


@FAST
@given(grouped_shapes(), st.data())
def test_relayouts_between_grouped_layouts_equal_numpy_path(shape: xs.Shape, data: st.DataObject) -> None:
    # any two grouped layouts of one array (as bytes where they group alike): the NumPy path's bytes of the target
    other = data.draw(grouped_layouts(shape))
    x = random_array(str(shape.element_type), shape.dimensions, data.draw(st.integers(0, 99)))
    buffer = numpy_path(to_physical, x, shape)
    with grouped_routes():
        moved = relayout(buffer, shape, other, padding_value=1)
    assert np.array_equal(moved, numpy_path(to_physical, x, other, padding_value=1))


@pytest.mark.parametrize("text", ["s4[36,9,210]{2,1,0:T(8,128)E(4)}", "u4[36,9,210]{2,0,1:T(8,128)E(4)}",
                                  "u2[13,300]{1,0:T(8,128)E(2)}", "s4[5,1000]{1,0:T(4,256)E(4)}"])
def test_fields_in_tiles_cut_short_equal_numpy_path(text: str) -> None:
    # E(n) tiles without sub-tiles, rows or columns past the array's end, through the tiled kernels (their rows
    # copied, the padding filled after them, each tile packed): the NumPy path's bytes with a padding value
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    with grouped_routes():
        buffer = to_physical(x, shape, padding_value=1)
        back = from_physical(buffer, shape)
    assert np.array_equal(buffer, numpy_path(to_physical, x, shape, padding_value=1))
    assert np.array_equal(back.view(np.uint8), canonical_bits(x).reshape(x.shape))


@FAST
@given(st.integers(1, 40), st.integers(1, 6), st.integers(1, 300), st.sampled_from([1, 2]), st.data())
def test_regroup_kernel_on_short_runs_back_to_back_equals_group_and_ungroup(
        n: int, pairs: int, rows: int, threads: int, data: st.DataObject) -> None:
    # E(4) fields grouped along a dim whose run (the dims after it) is a few bytes, rows back to back on both sides:
    # whole words of each row, the last reaching into the rows after it (written in turn), the last rows one by one
    fields = np.random.default_rng(n * rows).integers(0, 256, (rows, 2 * pairs, n), dtype=np.uint8)
    found = _grouped.Grouping(1, 2, 4, xs.make_shape("u8", (rows, pairs, n)))
    pad = np.array(data.draw(st.integers(0, 15)), np.uint8)
    expected = np.empty((rows, pairs, n), np.uint8)
    _grouped.group(fields, found, pad, expected, np.empty(expected.size, np.uint8))
    room = np.full(expected.size + 64, 7, np.uint8)  # (bytes past the groups must stay)
    got = room[: expected.size].reshape(expected.shape)
    run = _dispatch.run_settings(1 << 30, threads)
    with grouped_routes():
        _grouped.regroup(got, fields, found, pad, 15, True, run)
        room_back = np.full(fields.size + 64, 7, np.uint8)
        back = room_back[: fields.size].reshape(fields.shape)
        _grouped.regroup(got, back, found, pad, 15, False, run)
    assert np.array_equal(got, expected) and (room[expected.size :] == 7).all()
    assert np.array_equal(back, fields & 15) and (room_back[fields.size :] == 7).all()


@FAST
@given(st.sampled_from([4, 2, 1]), st.lists(st.integers(1, 40), min_size=1, max_size=4), st.data())
def test_regroup_kernel_equals_group_and_ungroup(bits: int, dims: list[int], data: st.DataObject) -> None:
    # the compiled kernel against the NumPy reference, both ways, on strided views (a reversed or sliced axis),
    # any grouped axis, E(4), E(2) and E(1), dims cut short
    per = 8 // bits
    axis = data.draw(st.integers(0, len(dims) - 1))
    big = np.random.default_rng(len(dims)).integers(0, 256, [2 * n for n in dims], dtype=np.uint8)
    fields = big[tuple(slice(None, None, 2) if data.draw(st.booleans()) else slice(n) for n in dims)]
    fields = fields[::-1] if data.draw(st.booleans()) else fields
    shape = [-(-n // per) if d == axis else n for d, n in enumerate(dims)]
    found = _grouped.Grouping(axis, per, bits, xs.make_shape("u8", shape))
    pad = np.array(data.draw(st.integers(0, (1 << bits) - 1)), np.uint8)
    expected = np.empty(shape, np.uint8)
    _grouped.group(fields, found, pad, expected, np.empty(expected.size, np.uint8))
    got = np.empty(shape, np.uint8)
    run = _dispatch.run_settings(1 << 30, data.draw(st.sampled_from([1, 2])))
    with grouped_routes():
        _grouped.regroup(got, fields, found, pad, (1 << bits) - 1, True, run)
        back = np.zeros(fields.shape, np.uint8)
        _grouped.regroup(got, back, found, pad, (1 << bits) - 1, False, run)
    assert np.array_equal(got, expected)
    split = np.empty(fields.shape, np.uint8)
    _grouped.ungroup(expected, found, (1 << bits) - 1, split)
    assert np.array_equal(back, split)
    assert np.array_equal(split, fields & ((1 << bits) - 1))


def test_the_groups_temporary_is_kept_for_the_next_conversion_and_freed_on_request(
        monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[int] = []
    real = _dispatch._line_aligned
    monkeypatch.setattr(_dispatch, "_line_aligned", lambda n: made.append(n) or real(n))
    _dispatch.release_temporaries()
    shape = xs.parse_shape("s4[16,64,256]{1,0,2:T(8,128)(2,1)E(4)}")  # groups made whole, then laid out
    x = random_array("s4", (16, 64, 256), 7)
    with grouped_routes() as calls:
        buffer = to_physical(x, shape)
        assert made == [8 * 64 * 256] and calls["regroup"] == 1
        assert np.array_equal(canonical_bits(from_physical(buffer, shape)), canonical_bits(x))
        assert to_physical(x, shape).tobytes() == buffer.tobytes()
        assert made == [8 * 64 * 256] and calls["regroup"] == 3  # (laid out again: the kept one; read back: none)
    assert np.array_equal(buffer, numpy_path(lambda: to_physical(x, shape)))
    assert _dispatch.release_temporaries() == 8 * 64 * 256 and _dispatch.release_temporaries() == 0


def test_temporaries_in_use_at_once_are_distinct_and_only_small_ones_are_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _dispatch.release_temporaries()
    with _dispatch.temporary(4096) as a, _dispatch.temporary(100) as b:
        assert a.ctypes.data % 64 == b.ctypes.data % 64 == 0 and (a.size, b.size) == (4096, 100)
        assert not np.shares_memory(a, b)
    with _dispatch.temporary(1000) as c:  # (both kept: the one that fits serves it)
        assert np.shares_memory(a, c)
    with _dispatch.temporary(50) as d, _dispatch.temporary(50) as e:  # (the one given back last first)
        assert np.shares_memory(a, d) and np.shares_memory(b, e)
    monkeypatch.setattr(_dispatch, "KEPT_BYTES", 2048)
    assert _dispatch.release_temporaries() == 4096 + 100
    with _dispatch.temporary(4096):
        pass
    assert _dispatch.release_temporaries() == 0  # over KEPT_BYTES: not kept


def test_the_temporaries_of_two_routes_are_both_kept_up_to_a_count_and_a_total(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # one route's slabs (16 MiB) and another's temporary (20 MiB), one after the other call after call: one kept
    # temporary went back and forth between them, new to one of them (its pages faulted in) on most calls
    _dispatch.release_temporaries()
    made: list[int] = []
    real = _dispatch._line_aligned
    monkeypatch.setattr(_dispatch, "_line_aligned", lambda n: made.append(n) or real(n))
    for _ in range(3):
        with _dispatch.temporary(2000):
            pass
        with _dispatch.temporary(1600):
            with _dispatch.temporary(1600):  # (nested: one of its own)
                pass
    assert made == [2000, 1600]  # (the nested one took the 2000 the first time: two in all, kept)
    assert _dispatch.release_temporaries() == 2000 + 1600
    monkeypatch.setattr(_dispatch, "KEPT_COUNT", 2)
    with _dispatch.temporary(10), _dispatch.temporary(20), _dispatch.temporary(30):
        pass
    assert _dispatch.release_temporaries() == 20 + 10  # (at most two: the one given back longest ago dropped)
    monkeypatch.setattr(_dispatch, "KEPT_BYTES", 3000)
    with _dispatch.temporary(1000), _dispatch.temporary(1500):
        pass
    assert _dispatch.release_temporaries() == 1000 + 1500
    with _dispatch.temporary(1000), _dispatch.temporary(1500), _dispatch.temporary(800):
        pass
    assert _dispatch.release_temporaries() == 1500 + 1000  # (at most 3000 bytes in all: the 800, given back first,
    # dropped)
