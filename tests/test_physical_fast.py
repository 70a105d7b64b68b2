"""The compiled (numba) kernels give exactly the NumPy path's bytes, for every layout family they cover."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from xlashapes import physical
from xlashapes.physical import _compiled as compiled
from xlashapes.physical import _dispatch as dispatch
from xlashapes.physical import _slabbed, _tuned, from_physical, to_physical
from xlashapes.physical._geometry import _geometry as physical_geometry
from xlashapes.physical._plan import _plan

pytest.importorskip("numba")

from test_physical import random_array, same_bits  # tests/ is on sys.path
from xlashapes.physical._entries import ENTRIES

KERNELS = ENTRIES["_kernels"]  # tiled_to_physical, tiled_to_packed ..., pack, unpack
WALKS = ENTRIES["_walk"]  # the generic kernel's walks (walk_runs ...), staged_transpose, shifted_rows
TABLES = ENTRIES["_tables"]  # blocks permuted through lane rows (permuted_blocks), the walk's other route
SUB_BYTE = ["s1", "u1", "s2", "u2", "s4", "u4", "f4e2m1fn", "pred"]
# 8-byte types (s64, f64, c64) take the generic kernel: test_physical_generic.py checks them
WHOLE = ["pred", "s8", "u8", "f8e4m3fn", "s16", "bf16", "f16", "s32", "f32", "u32"]
FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Kernel calls counted by name; the kernels used for arrays of any size."""
    compiled_for_any_size(monkeypatch)
    kernels = dispatch.kernels()
    assert kernels is not None, "numba is installed but the kernels did not load"
    counter: Counter[str] = Counter()
    count_calls(monkeypatch, kernels, KERNELS, counter, _family)
    count_calls(monkeypatch, dispatch.walker(), WALKS, counter, _family)
    count_calls(monkeypatch, dispatch.tabler(), TABLES, counter, _family)
    yield counter


def compiled_for_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled kernels on, for arrays of any size."""
    monkeypatch.delenv("XLASHAPES_NO_NUMBA", raising=False)
    monkeypatch.setattr(dispatch, "NUMBA_BYTES", 0)
    monkeypatch.setattr(dispatch, "FIRST_NUMBA_BYTES", 0)  # (kept machine code: numba itself may never load here)


def count_calls(monkeypatch: pytest.MonkeyPatch, entries: Any, names: Iterable[str], counter: Counter[str],
                family: Callable[[str, tuple[Any, ...]], str]) -> None:
    """Count the calls of the entry points ``names`` of ``entries`` in ``counter[name]`` and in
    ``counter[family(name, args)]`` (none for an empty family)."""
    for name in names:
        function = getattr(entries, name)

        def call(*args: Any, _function: Any = function, _name: str = name) -> Any:
            counter[_name] += 1
            group = family(_name, args)
            counter[group] += bool(group)
            return _function(*args)

        monkeypatch.setattr(entries, name, call)


def _family(name: str, args: tuple[Any, ...]) -> str:
    """The family of entry point ``name`` (``walk``, ``tiled_to``, ``tiled_from``: the entry points that differ only
    in the code a use compiles), else ""."""
    family = "walk" if name.startswith("walk_") else name.rsplit("_", 1)[0] if name.startswith("tiled_") else ""
    return family.replace("_odd", "")  # (tiled_to_odd_*: rows cut short, tall tiles, big strips)


def numpy_path(monkeypatch: pytest.MonkeyPatch, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` on the NumPy path (``XLASHAPES_NO_NUMBA=1``)."""
    with monkeypatch.context() as patch:
        patch.setenv("XLASHAPES_NO_NUMBA", "1")
        return function(*args, **kwargs)


def routes_while_tuning(monkeypatch: pytest.MonkeyPatch, shape: xs.Shape, to: bool, taken: Callable[[], int],
                        calls: int = 40) -> list[bool]:
    """With every copy's plans timed in turn (however slow), ``calls`` conversions one way of a random array of
    ``shape``, each checked against the NumPy path's bytes: whether each took a route (``taken()`` grew)."""
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    monkeypatch.setattr(_tuned, "DECISIVE", float("inf"))
    _tuned.forget()
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    data = numpy_path(monkeypatch, to_physical, x, shape)
    ran = []
    try:
        for _ in range(calls):
            before = taken()
            if to:
                assert np.array_equal(to_physical(x, shape), data), shape
            else:
                assert same_bits(from_physical(data, shape), x), shape
            ran.append(taken() > before)
    finally:
        _tuned.forget()
    return ran


@functools.cache
def padding_values(etype: str) -> st.SearchStrategy[Any]:
    """Padding values ``etype`` holds exactly (None: the default)."""
    kind = xs.element_type(etype)
    if etype == "pred":
        return st.sampled_from([None, 0, 1])
    if kind.is_integral:
        top = min((1 << (kind.bits - 1)) - 1, 100) if kind.is_signed else min((1 << kind.bits) - 1, 100)
        return st.one_of(st.none(), st.integers(0, top))
    return st.sampled_from([None, 0.0, -0.0, 1.5, float("nan"), float("-inf")])


@functools.cache
def element_fields(etype: str) -> st.SearchStrategy[int]:
    """``E(n)`` values for ``etype``: 0 (its default) or a packed width it can use."""
    kind = xs.element_type(etype)
    if etype == "pred":
        return st.sampled_from([0, 1])
    if kind.bits < 8:
        return st.sampled_from([0, *(b for b in (1, 2, 4) if b >= kind.bits and (kind.is_integral or b == kind.bits))])
    return st.just(0)


@st.composite
def tiled_shapes(draw: st.DrawFn) -> tuple[xs.Shape, Any]:
    """A shape the tiled kernels cover: ``T(R,C)`` or ``T(R,C)(P,1)``, the logical last dim most minor."""
    etype = draw(st.sampled_from(WHOLE + SUB_BYTE))
    rank = draw(st.integers(1, 4))
    dims = [draw(st.integers(1, 6)) for _ in range(rank - 2)]
    if rank >= 2:
        dims.append(draw(st.integers(1, 40)))
    dims.append(draw(st.integers(1, 300)))
    if draw(st.booleans()):
        r_size, c_size = draw(st.sampled_from([(8, 128), (4, 128), (2, 128), (1, 128), (16, 128)]))
    else:
        r_size, c_size = draw(st.sampled_from([1, 2, 3, 4, 8])), draw(st.sampled_from([1, 3, 8, 16, 64, 96]))
    p = draw(st.sampled_from([d for d in (1, 2, 4, 8) if r_size % d == 0]))
    first = (c_size,) if r_size == 1 and draw(st.booleans()) else (r_size, c_size)
    tiles = (first, (p, 1)) if len(first) == 2 and (p > 1 or draw(st.booleans())) else (first,)
    order = (rank - 1, *draw(st.permutations(range(rank - 1))))
    layout = xs.Layout(order, tiles=tiles, tail_padding_alignment_in_elements=draw(st.sampled_from([1, 1, 3, 64])),
                       element_size_in_bits=draw(element_fields(etype)))
    shape = xs.make_shape(etype, dims, layout=layout)
    return shape, draw(padding_values(etype))


@st.composite
def permuted_shapes(draw: st.DrawFn) -> tuple[xs.Shape, Any]:
    """A shape the permute kernels cover: untiled, any non-identity dim order."""
    etype = draw(st.sampled_from(WHOLE + SUB_BYTE))
    rank = draw(st.integers(2, 5))
    big = draw(st.sampled_from([1, 1, 2]))  # how many dims may be long (blocks, bands, edges)
    dims = [draw(st.integers(1, 150 if k < big else 7)) for k in range(rank)]
    dims = draw(st.permutations(dims))
    order = tuple(draw(st.permutations(range(rank))))
    if order == tuple(range(rank - 1, -1, -1)):
        order = (*order[1:], order[0])
    layout = xs.Layout(order, tail_padding_alignment_in_elements=draw(st.sampled_from([1, 1, 5])),
                       element_size_in_bits=draw(element_fields(etype)))
    shape = xs.make_shape(etype, list(dims), layout=layout)
    return shape, draw(padding_values(etype))


@st.composite
def packed_shapes(draw: st.DrawFn) -> tuple[xs.Shape, Any]:
    """A row-major sub-byte array packed by ``E(n)`` (straight through the packing kernels)."""
    etype = draw(st.sampled_from(SUB_BYTE))
    bits = draw(element_fields(etype).filter(bool))
    dims = draw(st.lists(st.integers(1, 70), min_size=1, max_size=3))
    layout = xs.Layout(tuple(range(len(dims) - 1, -1, -1)), element_size_in_bits=bits,
                       tail_padding_alignment_in_elements=draw(st.sampled_from([1, 1, 3, 16])))
    return xs.make_shape(etype, dims, layout=layout), draw(padding_values(etype))


def check_both_paths(
    monkeypatch: pytest.MonkeyPatch, shape: xs.Shape, padding: Any, seed: int, stream: bool, offset: int,
    threads: int = 1,
) -> None:
    """to_physical and from_physical (also with ``out=`` at a byte ``offset``) agree on both paths, bit for bit."""
    monkeypatch.setattr(dispatch, "STREAM_BYTES", 0 if stream else 1 << 62)
    monkeypatch.setattr(physical, "THREADS", threads)
    monkeypatch.setattr(dispatch, "THREAD_BYTES", 0)
    x = random_array(str(shape.element_type), shape.dimensions, seed)
    expected = numpy_path(monkeypatch, to_physical, x, shape, padding_value=padding)
    assert np.array_equal(to_physical(x, shape, padding_value=padding), expected), shape
    room = np.empty(len(expected) + 64, np.uint8)
    out = room[offset : offset + len(expected)]
    assert to_physical(x, shape, out=out, padding_value=padding) is out
    assert np.array_equal(out, expected), shape
    noise = np.random.default_rng(seed).integers(0, 256, size=len(expected) + 64, dtype=np.uint8)
    data = noise[offset : offset + len(expected)]  # any alignment
    reference = numpy_path(monkeypatch, from_physical, data, shape)
    assert same_bits(from_physical(data, shape), reference), shape
    target = np.empty_like(reference)
    assert from_physical(data, shape, out=target) is target
    assert same_bits(target, reference), shape
    assert same_bits(from_physical(expected, shape), x), shape


THREADS = st.sampled_from([1, 1, 2, 3])


@FAST
@given(tiled_shapes(), st.integers(0, 2**32), st.booleans(), st.integers(0, 63), THREADS)
@example((xs.parse_shape("pred[1,1,2,1]{3,2,1,0:T(2,1)E(1)}"), None), 0, False, 0, 1)  # (tiles in row order)
@example((xs.parse_shape("s32[2,16,8]{2,1,0:T(8,128)(2,1)}"), None), 0, False, 0, 1)  # (the walk's blocks in lanes)
def test_tiled_kernels_equal_numpy_path(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, case: tuple[xs.Shape, Any], seed: int, stream: bool,
    offset: int, threads: int,
) -> None:
    shape, padding = case
    assert isinstance(compiled._compiled_plan(shape.dimensions, shape.layout_or_default()), compiled._Tiled)
    before = calls.copy()
    check_both_paths(monkeypatch, shape, padding, seed, stream, offset, threads)
    ran = calls - before  # (this example's calls)
    plan = compiled._compiled_plan(shape.dimensions, shape.layout_or_default())
    assert isinstance(plan, compiled._Tiled)
    geometry = physical_geometry(shape)
    fields = geometry.packed and compiled._fused_bits(plan, geometry) > 0  # (E(n) fields packed tile by tile)
    tiled = sum(ran[name] for name in KERNELS if name.startswith("tiled"))
    in_order = getattr(_plan(geometry.dims, geometry.layout), "identity", False)  # (e.g. [1,1,2,1] in T(2,1) tiles)
    if geometry.packed and (compiled._row_major_tiles(plan, shape.dimensions) or in_order):
        assert ran["pack"] + ran["unpack"] > 0  # (rows as they are: packed in one pass)
    elif geometry.packed and plan.tile[2] not in (1, 2, 4):  # ((8,1) sub-tiles: grouped bytes, or the generic path)
        assert not any(ran[name] for name in KERNELS if name.endswith("_packed")) and sum(ran.values()) > 0
    elif (plan.tile[2] > 1 and shape.element_type.numpy_dtype.itemsize <= 2) or fields:
        # 8/16-bit row interleaves and E(n) fields: the 2-d kernels
        assert tiled > 0
    elif compiled._partial_tiles(plan, False, geometry.storage.itemsize):  # (T(R,C) cut short, read back: tiled)
        width = geometry.storage.itemsize
        assert ran["tiled_from"] > 0 and (ran["tiled_to"] > 0) == compiled._partial_tiles(plan, True, width)
    elif in_order and geometry.nbytes == geometry.count and (geometry.etype.kind == "pred" or geometry.etype.bits < 8):
        assert sum(ran.values()) == 0  # (bytes in order, no padding, made canonical on the way: one NumPy pass)
    else:  # T(R,C) alone, 32- and 64-bit words: the generic kernel (its walks, or its small blocks through lanes)
        assert ran["walk"] + ran["permuted_blocks"] > 0


@pytest.mark.parametrize("text", ["bf16[16,500]{1,0:T(8,128)(2,1)}", "s8[16,500]{1,0:T(8,128)(4,1)}",
                                  "s4[16,500]{1,0:T(8,128)(2,1)E(4)}", "pred[24,300]{1,0:T(8,128)(4,1)}",
                                  "f16[3,24,200]{2,0,1:T(8,128)(2,1)}", "bf16[2,3,16,40]{3,1,0,2:T(8,128)(2,1)}",
                                  "bf16[2,3,16,40]{3,2,0,1:T(8,128)(2,1)}", "s8[2,3,21,100]{3,2,0,1:T(8,128)(4,1)}",
                                  "s8[40,100]{1,0:T(8,128)(4,1)}", "bf16[24,100]{1,0:T(8,128)(2,1)}",
                                  "s8[37,40]{1,0:T(8,128)(4,1)}", "s8[21,1]{1,0:T(8,128)(4,1)}",
                                  "bf16[19,70]{1,0:T(8,128)(2,1)}", "s8[3,21,200]{2,1,0:T(8,128)(4,1)}"])
@pytest.mark.parametrize(("stream", "padding"), [(True, None), (False, 1)])
def test_last_tiles_of_a_tile_row_cut_short_go_a_lane_at_a_time(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, stream: bool, padding: Any,
) -> None:
    # tile rows whose last tile has fewer columns than a tile (500 = 3 x 128 + 116): its whole lanes interleaved in
    # place ('to': the rest of each row staged with its padding, interleaved from there; 'from': all its lanes, the
    # columns past the row's end left in the row buffers); rows far apart (batch dims inside), prefetched; 'from'
    # short strips whose rows follow each other as one stream, across strips that follow each other too (batch
    # dims in another order: the stream starts again; 21 rows: a last strip of 5); rows of one tile back to back,
    # split whole lanes into the tile's room, then copied out (100 and 70 columns; 40 and 1, shorter than a lane);
    # rows of two tiles back to back (200), the last lane of each again, overlapping the one before
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, padding, len(text), stream, 16, threads=2)
    assert sum(calls[name] for name in KERNELS if name.startswith("tiled")) >= 4


@pytest.mark.parametrize("text", ["u8[5,24,512]{2,1,0:T(32,128)(4,1)}", "bf16[3,6,1024]{2,1,0:T(8,128)(2,1)}",
                                  "bf16[3,13,300]{2,1,0:T(16,128)(2,1)}", "s4[3,5,256]{2,1,0:T(8,128)(2,1)E(4)}",
                                  "pred[2,7,384]{2,1,0:T(8,128)(4,1)}", "s8[4,1,130]{2,1,0:T(8,128)(4,1)}",
                                  "u8[2,40,1300]{2,1,0:T(32,128)(4,1)}", "s8[64,1300]{1,0:T(32,128)(4,1)}",
                                  "u8[3,40,600]{2,1,0:T(16,128)(4,1)}", "s8[4,64,700]{2,1,0:T(16,128)(4,1)}",
                                  "f32[3,40,300]{2,1,0:T(8,128)}"])
@pytest.mark.parametrize(("stream", "offset"), [(True, 0), (True, 16), (False, 0)])
def test_tile_rows_cut_short_interleave_whole_groups(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, stream: bool, offset: int,
) -> None:
    # fewer rows than a tile of (p,1) sub-tiles ('to': the whole groups of p rows interleaved from the source, the
    # group the rows end in staged with its padding, the groups of padding rows from one padding row; bf16 on a line
    # and streamed, straight into the output): 24 of 32 rows, 6 of 8 (a group of padding), 13 of 16 with a last
    # tile of 44 columns (staged whole), packed nibbles, pred made canonical, one row of 8; tiles of 32 rows of
    # over 1 KiB (each row's tile 8 tiles ahead prefetched), 40 rows (a last strip of 8) and 64 (whole tiles); strips
    # of 16 rows of 600 and 700 bytes (the next strip's rows prefetched a tile at a time); tiles without sub-tiles,
    # columns past a tile (the full tiles' rows streamed straight out)
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, 1 if "pred" not in text else None, len(text), stream, offset)
    assert calls["tiled_to"] >= 2 and calls["tiled_from"] >= 2


@pytest.mark.parametrize("text", ["f32[5,3,50]{2,1,0:T(8,128)}", "u8[40,100]{1,0:T(8,128)}",
                                  "bf16[37,100]{1,0:T(8,128)}", "s32[20,7,30]{2,1,0:T(8,128)}"])
@pytest.mark.parametrize(("stream", "offset"), [(True, 0), (False, 16)])
def test_rows_of_at_most_a_tile_without_sub_tiles_are_read_back_by_the_generic_kernel(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, stream: bool, offset: int,
) -> None:
    # tiles without sub-tiles, rows of at most a tile's columns (cut short): read back by the generic kernel, which
    # is faster there (u8 [N,100]{1,0:T(8,128)} 1.85-2.1 -> 1.4x memcpy of the physical bytes, f32 1.5 -> 1.15);
    # fewer rows than a tile (3 of 8) still laid out by the tiled kernel
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, 1, len(text), stream, offset)
    assert calls["walk"] >= 2 and calls["tiled_from"] == 0
    assert calls["tiled_to"] >= 2 or "[5,3,50]" not in text


@FAST
@given(permuted_shapes(), st.integers(0, 2**32), st.booleans(), st.integers(0, 63), THREADS)
def test_permute_kernels_equal_numpy_path(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, case: tuple[xs.Shape, Any], seed: int, stream: bool,
    offset: int, threads: int,
) -> None:
    shape, padding = case
    assert compiled._compiled_plan(shape.dimensions, shape.layout_or_default()) is None
    check_both_paths(monkeypatch, shape, padding, seed, stream, offset, threads)
    assert sum(calls[name] for name in WALKS) > 0  # the generic kernel: its walk, or a 2-d transpose staged or shifted


@FAST
@given(packed_shapes(), st.integers(0, 2**32), st.booleans(), st.integers(0, 63), THREADS)
def test_packing_kernels_equal_numpy_path(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, case: tuple[xs.Shape, Any], seed: int, stream: bool,
    offset: int, threads: int,
) -> None:
    shape, padding = case
    check_both_paths(monkeypatch, shape, padding, seed, stream, offset, threads)
    assert calls["pack"] > 0 and calls["unpack"] > 0


@pytest.mark.parametrize(
    "text",
    [
        "f32[37,1000]{1,0:T(8,128)}",  # partial tiles in both dims
        "bf16[3,21,520]{2,0,1:T(8,128)(2,1)}",
        "s8[2,45,300]{2,1,0:T(8,128)(4,1)L(1024)}",
        "f32[300,257]{0,1}",  # several bands and blocks, partial ones
        "u8[3,130,70]{1,2,0}",
        "f32[40,3,33]{0,2,1}",
        "s4[8,32,1,256]{3,1,0,2:T(8,128)(8,1)E(4)}",
        "u2[999]{0:E(2)}",
        "pred[4,1001]{1,0:E(1)}",
        "s4[2,40,300]{2,1,0:T(8,128)(2,1)E(4)}",  # packed in the tile walk: nibble pairs, partial tiles
        "u2[24,260]{1,0:T(8,128)(4,1)E(2)}",  # packed in the tile walk: interleave, then pack
        "s4[37,260]{1,0:T(8,128)(2,1)}",  # unpacked sub-byte: value bits masked in the tile walk
        "pred[37,260]{1,0:T(8,128)(4,1)}",  # pred made 0/1 in the tile walk
    ],
)
def test_larger_cases_with_streaming_stores(calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    shape = xs.parse_shape(text)
    for offset in (0, 16, 13):
        for stream in (True, False):
            for threads in (1, 2):
                check_both_paths(monkeypatch, shape, None, offset, stream, offset, threads)
    assert sum(calls.values()) > 0


@pytest.mark.parametrize("text", [
    "s8[48,1536]{1,0:T(8,128)(4,1)}",  # rows of whole lines past JOINED_ROW: a stream a row, read back
    "s8[3,40,2048]{2,1,0:T(8,128)(4,1)}",  # laid out, each row prefetched ROW_AHEAD on, past its end the next strip's
    "bf16[2,33,1024]{2,1,0:T(8,128)(2,1)}",  # (the next strip another batch index; rows cut short: the odd entry)
    "pred[24,2048]{1,0:T(8,128)(4,1)}",
    "s8[40,1000]{1,0:T(8,128)(4,1)}",  # rows of partial lines: one stream read back
    "u8[64,1152]{1,0:T(32,128)(4,1)}",
])
def test_long_tiled_rows_equal_numpy_path(calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    shape = xs.parse_shape(text)
    for offset, stream, threads in ((0, True, 1), (16, True, 2), (13, False, 2)):
        check_both_paths(monkeypatch, shape, None, offset, stream, offset, threads)
    assert sum(calls.values()) > 0


def test_nan_payloads_survive_the_kernels(calls: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    bits = np.array([0x7FC01234, 0xFFA00001, 0x80000000, 0x7F800001], np.uint32)
    monkeypatch.setattr(dispatch, "STREAM_BYTES", 0)
    nan = np.array([0x7FC0BEEF], np.uint32).view(np.float32)[0]
    for text in ("f32[40,300]{1,0:T(8,128)}", "f32[40,384]{1,0:T(8,128)}", "f32[40,300]{0,1}"):
        x = np.resize(bits, xs.parse_shape(text).dimensions).view(np.float32)
        buffer = to_physical(x, text, padding_value=nan)
        assert np.array_equal(from_physical(buffer, text).view(np.uint32), x.view(np.uint32))
        assert np.array_equal(buffer, numpy_path(monkeypatch, to_physical, x, text, padding_value=nan))
    # (tiles cut short: the tiled kernels; whole tiles and the 4-byte transpose: the generic kernel)
    assert calls["tiled_to"] and calls["tiled_from"] and calls["walk"] >= 2


@pytest.mark.parametrize(("text", "kernels"), [
    ("s4[64,1024]{1,0:T(8,128)(2,1)E(4)}", ("tiled_to", "tiled_from")),  # (tiled kernels: fields packed tile by tile)
    ("u4[60,1000]{1,0:T(8,128)E(4)}", ("tiled_to", "tiled_from")),
    ("s4[8,5,24,256]{3,2,1,0:T(1,128)E(4)}", ("pack", "unpack")),  # (fields in the array's order: one pass)
    ("u4[12,4000]{1,0:T(1,1000)E(4)}", ("pack", "unpack")),
])
def test_packed_layouts_converted_whole_without_temporaries_are_not_cut_into_slabs(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, text: str, kernels: tuple[str, str]
) -> None:
    # Their temporaries are bounded anyway; slabs cost a kernel call (and a split over the threads) each: 512 MiB of
    # s4 T(8,128)(2,1)E(4) read back went 1.02-1.08 -> 0.57-0.77x memcpy on two threads.
    monkeypatch.setattr(_slabbed, "CHUNK_BYTES", 4096)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 5)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    assert expected.nbytes > 4 * 4096
    buffer = to_physical(x, shape)
    assert np.array_equal(buffer, expected) and same_bits(from_physical(buffer, shape), x)
    assert (calls[kernels[0]], calls[kernels[1]]) == (1, 1)
    mapped = np.memmap(tmp_path / "buffer", np.uint8, "w+", shape=expected.shape)  # (maps: still a chunk at a time)
    to_physical(x, shape, out=mapped)
    assert np.array_equal(mapped, expected) and calls[kernels[0]] > 4


def test_read_only_and_bytes_buffers(calls: Counter[str]) -> None:
    shape = xs.parse_shape("bf16[16,256]{1,0:T(8,128)(2,1)}")
    x = random_array("bf16", (16, 256), 3)
    data = to_physical(x, shape).tobytes()
    assert same_bits(from_physical(data, shape), x)
    assert same_bits(from_physical(memoryview(data)[:], shape), x)
    assert calls["tiled_from_physical"] == 2


def test_no_numba_variable_forces_the_numpy_path(calls: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XLASHAPES_NO_NUMBA", "1")
    assert dispatch.kernels() is None
    to_physical(random_array("f32", (16, 256), 1), "f32[16,256]{1,0:T(8,128)}")
    monkeypatch.setenv("XLASHAPES_NO_NUMBA", "0")
    assert dispatch.kernels() is not None
    assert not calls


def test_small_arrays_stay_on_the_numpy_path(calls: Counter[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch, "NUMBA_BYTES", 1 << 20)
    to_physical(random_array("f32", (16, 256), 1), "f32[16,256]{1,0:T(8,128)}")
    assert not calls


def test_without_numba_the_numpy_path_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    dispatch.import_entries.cache_clear()
    try:
        monkeypatch.setitem(sys.modules, "numba", None)  # import numba now raises ImportError
        monkeypatch.delitem(sys.modules, "xlashapes.physical._kernels", raising=False)
        monkeypatch.delitem(sys.modules, "xlashapes.physical._walk", raising=False)
        monkeypatch.delitem(sys.modules, "xlashapes.physical._intrinsics", raising=False)
        monkeypatch.delattr(physical, "_walk", raising=False)
        monkeypatch.delattr(physical, "_intrinsics", raising=False)
        monkeypatch.delattr(physical, "_kernels", raising=False)
        monkeypatch.setattr(dispatch, "NUMBA_BYTES", 0)
        assert dispatch.kernels() is None and dispatch.walker() is None and dispatch.stacker() is None
        x = random_array("bf16", (16, 256), 2)
        buffer = to_physical(x, "bf16[16,256]{1,0:T(8,128)(2,1)}")
        assert same_bits(from_physical(buffer, "bf16[16,256]{1,0:T(8,128)(2,1)}"), x)
    finally:
        dispatch.import_entries.cache_clear()


def test_importing_xlashapes_does_not_import_numba() -> None:
    """Neither importing nor small work imports numba; in a new process not even 4 MiB (below FIRST_NUMBA_BYTES)."""
    code = (
        "import sys, numpy as np, xlashapes as xs; "
        "xs.to_physical(np.zeros((8, 128), np.float32), 'f32[8,128]{1,0:T(8,128)}'); "
        "print('numba' in sys.modules); "
        "xs.to_physical(np.zeros((1024, 1024), np.float32), 'f32[1024,1024]{0,1:T(8,128)}'); "  # 4 MiB
        "print('numba' in sys.modules)"
    )
    env = {key: value for key, value in os.environ.items() if key != "XLASHAPES_NO_NUMBA"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                            check=True)
    assert result.stdout.split() == ["False", "False"]
    assert dispatch.FIRST_NUMBA_BYTES > 4 << 20 >= dispatch.NUMBA_BYTES


def test_threads_split_the_work_into_disjoint_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    run = dispatch.Run(1 << 40, 3, thread_bytes=100)
    assert dispatch.parts(10, 100, run) == [(0, 3), (3, 6), (6, 10)]
    assert dispatch.parts(2, 100, run) == [(0, 1), (1, 2)]
    assert dispatch.parts(10, 99, run) == [(0, 10)]  # too small to split
    assert dispatch.parts(10, 1 << 30, dispatch.Run(1 << 40, 1, thread_bytes=100)) == [(0, 10)]
    monkeypatch.setattr(physical, "THREADS", "2")
    with pytest.raises(xs.ShapeError, match="THREADS"):
        to_physical(np.zeros(3, np.float32), "f32[3]")
    with pytest.raises(xs.ShapeError, match="threads"):
        to_physical(np.zeros(3, np.float32), "f32[3]", threads=0)


def test_families_are_recognised_exactly() -> None:
    plan = compiled._compiled_plan
    assert plan((4, 8, 256), xs.parse_shape("bf16[4,8,256]{2,0,1:T(8,128)(2,1)}").layout) == compiled._Tiled(
        rows=4, cols=256, row_dim=0, tile=(8, 128, 2), batch=(1,)
    )
    assert plan((4, 8), xs.Layout((0, 1))) is None  # permutations: the generic kernel
    for layout in (
        xs.Layout((1, 0)),  # row-major: plain copies, no kernel needed
        xs.Layout((0, 1), tiles=((8, 128),)),  # the tiled minor dim is not the logical last one
        xs.Layout((1, 0), tiles=((8, 128), (3, 1))),  # P does not divide R
        xs.Layout((1, 0), tiles=((128,), (2, 1))),  # (2,1) after a 1-d tile interleaves tile columns
        xs.Layout((1, 0), tiles=((8, 128), (2, 1), (2, 1))),
        xs.Layout((1, 0), tiles=((xs.layout.COMBINE_DIMENSION, 128),)),
        xs.Layout((1, 0), padded_dimensions=(5, 9)),
    ):
        assert plan((4, 8), layout) is None, layout


@pytest.mark.parametrize("text", ["pred[3,40,300]{2,1,0:T(8,128)(4,1)}", "pred[37,300]{1,0:T(8,128)(4,1)}",
                                  "pred[3,37,300]{2,1,0:T(8,128)(4,1)}", "pred[40,3,300]{2,0,1:T(8,128)(4,1)}",
                                  "pred[1000]{0:T(8,128)(4,1)}"])
@pytest.mark.parametrize("dirty", [None, 0, 0.5, -1])
def test_pred_made_canonical_in_the_tiled_kernels(calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str,
                                                   dirty: float | None) -> None:
    # the tiled kernels make pred bytes 0/1 tile by tile while the tile is in the cache (one pass, no chunks and
    # no second pass): one bad byte (first, middle or last element; padding or element) must still read as 0/1
    shape = xs.parse_shape(text)
    raw = np.random.default_rng(len(text)).integers(0, 2, size=shape.dimensions, dtype=np.uint8)
    if dirty is not None:
        raw.reshape(-1)[int(dirty * raw.size) if dirty >= 0 else -1] = 0x86
    x = raw.view(np.bool_)
    expected = numpy_path(monkeypatch, to_physical, x, shape)
    assert np.array_equal(to_physical(x, shape), expected), shape
    buffer = expected.copy()
    assert buffer.size == shape.byte_size()
    if dirty is not None:
        buffer[int(dirty * buffer.size) if dirty >= 0 else -1] = 0x41  # padding or element: both must read as 0/1
        buffer[buffer.size // 3] = 0xFF
    assert same_bits(from_physical(buffer, shape), numpy_path(monkeypatch, from_physical, buffer, shape)), shape
    canonical = calls["tiled_to_canonical"] + calls["tiled_to_odd_canonical"]  # (37 rows: the last 5 staged)
    assert canonical == 1 and calls["tiled_from_canonical"] == 1  # one pass each way, canonical


@pytest.mark.parametrize(("text", "bits"), [("s4[16,256]{1,0:T(8,128)(2,1)E(4)}", 4),
                                            ("u4[16,256]{1,0:T(8,128)(4,1)E(4)}", 4),
                                            ("u1[8,256]{1,0:T(8,128)(2,1)E(1)}", 1),
                                            ("s2[16,256]{1,0:T(8,128)(2,1)E(4)}", 0),  # sign-extended fields
                                            ("s4[16,250]{1,0:T(8,128)(2,1)L(3000)E(4)}", 0),  # tail padding
                                            ("pred[16,256]{1,0:T(8,128)(2,1)E(1)}", 0)])
def test_sub_byte_tiles_packed_in_the_tile_walk(calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str,
                                                 bits: int) -> None:
    # plain E(n) fields are packed and unpacked tile by tile inside the tiled kernels (no staging, no pack or
    # unpack kernel); the others go through staging: the bytes are the NumPy path's either way
    shape = xs.parse_shape(text)
    plan = compiled._compiled_plan(shape.dimensions, shape.layout_or_default())
    assert isinstance(plan, compiled._Tiled)
    geometry = physical_geometry(shape)
    assert compiled._fused_bits(plan, geometry) == bits
    for seed in range(3):
        check_both_paths(monkeypatch, shape, None, seed, bool(seed % 2), 16 * seed + 1, 1 + seed % 2)
    assert calls["tiled_to"] and calls["tiled_from"]
    assert (calls["pack"] + calls["unpack"] == 0) == (bits > 0) == bool(calls["tiled_to_packed"])


@pytest.mark.parametrize(("text", "row_major"), [("s4[4,50,6,256]{3,2,1,0:T(1,128)E(4)}", True),
                                                 ("u2[7,512]{1,0:T(128)E(2)}", True),
                                                 ("s4[4,6,200]{2,1,0:T(1,128)E(4)}", False),  # (padded rows)
                                                 ("s4[3,4,256]{2,0,1:T(1,128)E(4)}", False)])  # (batch permuted)
def test_sub_byte_tiles_of_rows_in_order_are_packed_in_one_pass(calls: Counter[str], monkeypatch: pytest.MonkeyPatch,
                                                                 text: str, row_major: bool) -> None:
    # tiles of one row along a dim they divide, batch dims in order: the elements are the array's rows as they
    # are, packed by the pack kernel in one pass (the tiled kernels would pack them a tile of 64 bytes at a time)
    shape = xs.parse_shape(text)
    plan = compiled._compiled_plan(shape.dimensions, shape.layout_or_default())
    assert isinstance(plan, compiled._Tiled) and compiled._row_major_tiles(plan, shape.dimensions) == row_major
    check_both_paths(monkeypatch, shape, None, 5, True, 0)
    assert (calls["tiled_to"] + calls["tiled_from"] == 0) == row_major
    assert calls["pack"] and calls["unpack"] if row_major else calls["tiled_to_packed"] + calls["tiled_to_odd_packed"]


def test_a_subroutine_is_compiled_once_into_its_callers_library() -> None:
    from numba import njit

    from xlashapes.physical._intrinsics import _put, _subroutine

    def fill(address: int, n: int, value: Any) -> None:
        for i in range(n):
            _put(address, i, value)

    sub = _subroutine(fill)

    @njit
    def caller(address: int, n: int) -> None:
        sub(address, n, np.int32(7))
        sub(address + 4 * n, 3, np.int32(9))  # a literal count: still the one compiled subroutine

    out = np.zeros(8, np.int32)
    caller(out.ctypes.data, 5)
    assert out.tolist() == [7, 7, 7, 7, 7, 9, 9, 9]
    library = next(iter(caller.overloads.values())).library
    assert len(library._xlashapes_subroutines) == 1
    defined = [line for line in library.get_llvm_str().splitlines() if line.startswith("define") and "4fill" in line]
    assert len(defined) == 1


def test_a_subroutine_is_typed_once_and_linked_into_each_entry_that_calls_it() -> None:
    from numba import njit

    from xlashapes.physical import _intrinsics
    from xlashapes.physical._intrinsics import _put, _subroutine

    def fill(address: int, n: int, value: Any) -> None:
        for i in range(min(n, 6)):  # (numba's own overload of min: its library linked into each entry too)
            _put(address, i, value)

    def twice(address: int, n: int, value: Any) -> None:
        inner(address, n, value)
        inner(address + 4 * n, n, value)

    inner = _subroutine(fill)
    outer = _subroutine(twice)

    @njit
    def first(address: int, n: int) -> None:
        outer(address, n, np.int32(3))

    @njit
    def second(address: int, n: int) -> None:
        inner(address, n, np.int32(5))  # the inner one directly, and through the outer one
        outer(address + 4 * n, n, np.int32(7))

    typed = len(_intrinsics._SUBROUTINES)
    out = np.zeros(12, np.int32)
    first(out.ctypes.data, 4)
    assert out.tolist() == [3] * 8 + [0] * 4
    second(out.ctypes.data, 4)
    assert out.tolist() == [5] * 4 + [7] * 8
    assert len(_intrinsics._SUBROUTINES) == typed + 2  # each typed and lowered once, not once per entry
    for entry in (first, second):
        code = next(iter(entry.overloads.values())).library.get_llvm_str().splitlines()
        for name in ("4fill", "5twice"):
            assert len([line for line in code if line.startswith("define") and name in line]) == 1, (entry, name)


ONE_TILE_ROWS = ["s8[40,100]{1,0:T(8,128)(4,1)}", "u8[3,9,1]{2,1,0:T(8,128)(4,1)}", "s8[17,63]{1,0:T(8,128)(4,1)}",
                 "u8[24,65]{1,0:T(8,128)(4,1)}", "bf16[2,11,100]{2,1,0:T(8,128)(2,1)}",
                 "f16[16,32]{1,0:T(16,128)(2,1)}", "s8[64,128]{1,0:T(32,128)(4,1)}",
                 "u8[5,200,20]{2,1,0:T(32,128)(4,1)}", "bf16[3,20,128]{2,1,0:T(8,128)(2,1)}",
                 "u8[70,128]{1,0:T(32,128)(4,1)}"]
TILES_OF_ROWS = ["s8[2,20,256]{2,1,0:T(8,128)(4,1)}", "bf16[3,12,256]{2,1,0:T(8,128)(2,1)}",
                 "u8[40,384]{1,0:T(8,128)(4,1)}"]


@pytest.mark.parametrize(("text", "entry"), [*((text, "tiled_from_tile_rows") for text in ONE_TILE_ROWS),
                                             *((text, "tiled_from_physical") for text in TILES_OF_ROWS)])
@pytest.mark.parametrize(("stream", "offset"), [(True, 0), (True, 24), (False, 8)])
def test_short_rows_read_back_split_straight_into_their_joined_rows(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, entry: str, stream: bool, offset: int,
) -> None:
    # rows of at most a tile's columns of (p,1) sub-tiles, back to back in the logical array, are split straight
    # into those rows a lane of each at a time, the lanes from the last: a lane past a row's end runs into the next
    # rows, which their own lanes write after it (s8 [N,100] 'from', 512 MiB, 1.63 -> 1.19x memcpy of the tiles on an
    # Intel Xeon, with the tiles prefetched into the second level); rows of 1 to 128 bytes, cut short, 2-byte words.
    # Whole tiles of such rows (or of short rows of several tiles: ``entry`` tiled_from_physical), each whole lines,
    # on a line and streamed, go straight into the output, not through the joined stream's scratch (s8
    # [N,256]{1,0:T(8,128)(4,1)} 'from', 512 MiB, 1.55 -> 1.28x memcpy), after strips cut short too (batches of 20 rows,
    # whose joined stream is closed first)
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, None, len(text), stream, offset)
    assert calls[entry] >= 3, calls


@pytest.mark.parametrize("text", ["bf16[4096]{0:T(1024)(128)(2,1)}", "bf16[1280]{0:T(1024)(128)(2,1)}",
                                  "s8[6144]{0:T(1024)(128)(4,1)}", "u8[12288]{0:T(4096)(128)(4,1)}",
                                  "u8[9728]{0:T(4096)(256)(4,1)S(1)}"])
@pytest.mark.parametrize(("stream", "offset"), [(True, 0), (False, 8)])
def test_rank_1_tiles_of_rows_read_back_as_their_2_d_twin(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, stream: bool, offset: int,
) -> None:
    # a rank-1 T(R*C)(C)(p,1) layout has the bytes of [N/C,C]{1,0:T(R,C)(p,1)}: read back as that, by the tiled
    # kernel (bf16 {0:T(1024)(128)(2,1)}, 512 MiB, 1.68 -> 1.35x memcpy on an Intel Xeon); whole and cut-short tiles
    shape = xs.parse_shape(text)
    check_both_paths(monkeypatch, shape, None, len(text), stream, offset)
    assert sum(count for name, count in calls.items() if name.startswith("tiled_from")) >= 3, calls


def test_rank_1_tiles_of_rows_that_do_not_divide_the_array_have_no_twin() -> None:
    twin = compiled.folded(physical_geometry(xs.parse_shape("bf16[256]{0:T(1024)(128)(2,1)}")))
    assert twin is not None and str(twin.shape) == "bf16[2,128]{1,0:T(8,128)(2,1)}"
    assert twin.nbytes == 1024 * 2
    for text in ["bf16[4000]{0:T(1024)(128)(2,1)}", "bf16[4096]{0:T(1024)(128)(3,1)}", "bf16[4096]{0:T(1024)(128)}",
                 "bf16[64,64]{1,0:T(8,128)(2,1)}", "s4[4096]{0:T(1024)(128)(2,1)E(4)}"]:
        assert compiled.folded(physical_geometry(xs.parse_shape(text))) is None, text
