"""Stacked tiled layouts (tiles across other dims than the logical minor one, which is the innermost dim they are
stacked along): which take the stacked kernels, and their bytes against the NumPy path's."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes import physical
from xlashapes.physical import _dispatch as dispatch
from xlashapes.physical import _stacked as stacked
from xlashapes.physical import from_physical, to_physical
from xlashapes.physical._geometry import _geometry

pytest.importorskip("numba")

from test_physical import random_array, same_bits  # tests/ is on sys.path
from test_physical_fast import (
    check_both_paths,
    compiled_for_any_size,
    count_calls,
    numpy_path,
    padding_values,
    routes_while_tuning,
)
from xlashapes.physical._entries import ENTRIES

FAST = settings(max_examples=examples(60), deadline=None, suppress_health_check=list(HealthCheck))
MIB = 1 << 20
ETYPES = ["pred", "u8", "s8", "f8e4m3fn", "bf16", "f16", "s16", "f32", "s32", "u4", "s2"]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Calls of the stacked kernels counted by name and way; compiled kernels for arrays of any size."""
    compiled_for_any_size(monkeypatch)
    kernels = dispatch.stacker()
    assert kernels is not None, "numba is installed but the stacked kernels did not load"
    counter: Counter[str] = Counter()
    count_calls(monkeypatch, kernels, ENTRIES["_stacks"], counter,
                lambda name, args: "tiled_to_stacked" if args[7][3] else "tiled_from_stacked")  # (stack: ..., to)
    yield counter


def taken(text: str) -> bool:
    """True when the layout of ``text`` takes the stacked kernels."""
    shape = xs.parse_shape(text)
    width = np.dtype(shape.element_type.numpy_dtype).itemsize
    return stacked._stacked_plan(shape.dimensions, shape.layout_or_default(), width) is not None


@st.composite
def stacked_shapes(draw: st.DrawFn) -> tuple[xs.Shape, Any]:
    """A tiled layout whose innermost stacked dim is the logical minor one (rows or columns following it in the
    logical array, or neither), any element type, tail padding, E(n) fields."""
    etype = draw(st.sampled_from(ETYPES))
    rank = draw(st.integers(3, 5))
    dims = [draw(st.integers(1, 3)) for _ in range(rank - 3)]
    minor = draw(st.sampled_from([1, 2, 3, 4, 5, 7, 8, 12, 16, 17]))
    dims += [draw(st.integers(1, 24)), draw(st.integers(1, 200)), minor]
    dims[:-1] = draw(st.permutations(dims[:-1]))
    rows, cols = draw(st.permutations(range(rank - 1)).map(lambda p: p[:2]))
    outer = [d for d in range(rank - 1) if d not in (rows, cols)]
    major_to_minor = [*draw(st.permutations(outer)), rank - 1, rows, cols]
    r_size, c_size = draw(st.sampled_from([(8, 128), (16, 128), (32, 128), (4, 128), (2, 128), (1, 128), (3, 8)]))
    p = draw(st.sampled_from([d for d in (1, 2, 4) if r_size % d == 0]))
    tiles = ((r_size, c_size), (p, 1)) if p > 1 else ((r_size, c_size),)
    bits = xs.element_type(etype).bits
    fields = draw(st.sampled_from([0, bits])) if bits < 8 and etype != "pred" else 0
    layout = xs.Layout(tuple(reversed(major_to_minor)), tiles=tiles, element_size_in_bits=fields,
                       tail_padding_alignment_in_elements=draw(st.sampled_from([1, 1, 3, 64])))
    return xs.make_shape(etype, dims, layout=layout), draw(padding_values(etype))


THREADS = st.sampled_from([1, 1, 2, 3])


@FAST
@given(stacked_shapes(), st.integers(0, 2**32), st.booleans(), st.integers(0, 63), THREADS)
def test_stacked_kernels_equal_numpy_path(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, case: tuple[xs.Shape, Any], seed: int, stream: bool,
    offset: int, threads: int,
) -> None:
    shape, padding = case
    monkeypatch.setattr(stacked, "STAGE_BYTES", 1 << 12)  # (chunks of one tile's rows, of several, of tile rows)
    before = calls.copy()
    check_both_paths(monkeypatch, shape, padding, seed, stream, offset, threads)
    ran = calls - before
    width = _geometry(shape).storage.itemsize
    plan = stacked._stacked_plan(shape.dimensions, shape.layout_or_default(), width)
    if shape.layout_or_default().element_size_in_bits:
        return  # (E(n) fields: their groups' bytes may be a stacked layout of their own, :mod:`._grouped`)
    expected = plan is not None
    assert (ran["tiled_to_stacked"] > 0) == expected and (ran["tiled_from_stacked"] > 0) == expected, shape


@pytest.mark.parametrize(("text", "route"), [
    ("pred[7,64,384,7]{2,0,3,1:T(8,128)(4,1)}", True),  # the columns follow the minor dim, (4,1) sub-tiles
    ("bf16[128,16,64,8]{0,2,3,1:T(8,128)(2,1)}", True),  # the rows follow it
    ("u8[24,96,512,3]{2,1,3,0:T(8,128)(4,1)}", True),
    ("f32[100,2048,3]{0,1,2:T(8,128)}", True),  # rows follow it: tiles without sub-tiles too
    ("f32[3,256,2048,5]{2,1,3,0:T(2,128)}", False),  # columns follow it, no sub-tiles: the walk is faster
    ("u8[6400,96,4]{1,0,2:T(32,128)(4,1)}", True),  # (a minor dim of 4: slower than the walk here, not 15x elsewhere)
    ("f32[1024,128,24,2]{0,1,3,2:T(8,128)}", False),  # neither rows nor columns follow it
    ("u8[896,1024,2]{0,1,2:T(1,128)}", False),  # one-row tiles: runs
    ("u8[64,64,64,17]{0,1,3,2:T(8,128)(4,1)}", False),  # a minor dim of more than MOST_STACKED
    ("f32[24,16384,16]{1,0,2:T(8,128)}", False),  # (columns follow it, no sub-tiles)
    ("f32[40000,2048,3]{0,1,2:T(8,128)}", True),  # (3.8 MiB a tile row: chunks of fewer columns)
    ("f32[2730,2048,3]{0,1,2:T(8,128)}", True),  # (264 KiB: the bench row)
    ("bf16[8,64,256]{2,1,0:T(8,128)(2,1)}", False),  # the tiles along the minor dim: the tiled kernels
    ("s4[64,512,5]{0,1,2:T(8,128)(2,1)E(4)}", True),  # (E(n) fields: as their groups' bytes, below)
])
def test_stacked_route_is_taken_where_it_is_faster(text: str, route: bool) -> None:
    assert taken(text) == route


@pytest.mark.parametrize("to", [True, False])
def test_large_copies_time_the_stacked_route_against_the_conversion_without_it(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, to: bool
) -> None:
    # its rules were measured against the generic kernel of their day: a large copy takes the stacked kernels and
    # the conversion without them in turn, then keeps the faster (the same bytes either way)
    text = "bf16[128,16,64,8]{0,2,3,1:T(8,128)(2,1)}"
    assert taken(text)
    ran = routes_while_tuning(monkeypatch, xs.parse_shape(text), to, lambda: sum(calls.values()))
    assert True in ran and False in ran, ran


@pytest.mark.parametrize("text", ["pred[7,64,384,7]{2,0,3,1:T(8,128)(4,1)}",  # the module's worked examples, smaller
                                  "bf16[128,16,64,8]{0,2,3,1:T(8,128)(2,1)}", "u8[24,96,512,3]{2,1,3,0:T(8,128)(4,1)}",
                                  "f32[3,40,130,5]{0,2,3,1:T(8,128)L(64)}",  # tail padding after the last chunk
                                  "bf16[16,4,64,8]{0,2,3,1:T(8,128)(2,1)}",  # columns 4 KiB apart: aliased runs
                                  "f32[64,256,2]{0,1,2:T(8,128)}", "s8[3,50,200,12]{2,0,3,1:T(16,128)(4,1)}",
                                  "u8[640,96,4]{1,0,2:T(32,128)(4,1)}",  # (rows back to back: copied out together)
                                  "bf16[4,600,300,3]{0,2,3,1:T(16,128)(2,1)}"])  # (columns 1.8 KiB apart, 3 tiles)
@pytest.mark.parametrize(("stage", "threads"), [(1 << 18, 1), (1 << 10, 2)])  # (chunks of several tile rows or of one)
def test_stacked_layouts_round_trip_as_on_the_numpy_path(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, stage: int, threads: int
) -> None:
    monkeypatch.setattr(stacked, "STAGE_BYTES", stage)
    monkeypatch.setattr(physical, "THREADS", threads)
    monkeypatch.setattr(dispatch, "THREAD_BYTES", 0)
    shape = xs.parse_shape(text)
    x = random_array(str(shape.element_type), shape.dimensions, 7)
    expected = numpy_path(monkeypatch, to_physical, x, shape, padding_value=1)
    got = to_physical(x, shape, padding_value=1)
    assert np.array_equal(got, expected)
    assert same_bits(from_physical(got, shape), x)
    noise = np.random.default_rng(3).integers(0, 256, size=len(expected), dtype=np.uint8)
    assert same_bits(from_physical(noise, shape), numpy_path(monkeypatch, from_physical, noise, shape))
    assert calls["tiled_to_stacked"] > 0 and calls["tiled_from_stacked"] > 0


def test_sub_byte_fields_take_the_stacked_kernels_as_their_groups_bytes(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shape = xs.parse_shape("s4[64,512,5]{0,1,2:T(8,128)(2,1)E(4)}")  # (bytes: u8[64,256,5]{0,1,2:T(4,128)})
    x = random_array("s4", shape.dimensions, 1)
    got = to_physical(x, shape)
    assert np.array_equal(got, numpy_path(monkeypatch, to_physical, x, shape))
    assert same_bits(from_physical(got, shape), x)
    assert calls["tiled_to_stacked"] == 1 and calls["tiled_from_stacked"] == 1


def test_chunks_are_whole_tile_rows_or_columns_of_rows() -> None:
    columns_run = stacked._Tiled(7, 384, 0, (8, 128, 4), (1,))  # (columns follow the minor dim: whole tile rows)
    assert stacked._stacked_chunk(columns_run, 7, 1, False, MIB) == (1, 3)
    assert stacked._stacked_chunk(stacked._Tiled(70, 384, 0, (8, 128, 4), (1,)), 2, 1, False, MIB) == (9, 3)
    wide = stacked._Tiled(8, 40000, 0, (8, 128, 1), ())  # (a tile row of 3.8 MiB: split)
    assert stacked._stacked_chunk(wide, 3, 4, False, MIB) == (1, 85)
    rows_run = stacked._Tiled(4096, 2000, 1, (8, 128, 1), ())  # (rows follow it, laid out: runs of 512 bytes ...)
    assert stacked._stacked_chunk(rows_run, 4, 1, True, MIB) == (256, 1)  # (... lengthened: fewer columns)
    assert stacked._stacked_chunk(rows_run, 4, 1, False, MIB) == (16, 16)  # (read back: whole tile rows)
    long_rows = stacked._Tiled(16000, 224, 1, (32, 128, 4), ())
    assert stacked._stacked_chunk(long_rows, 7, 1, True, MIB) == (18, 2)  # (4 KiB)
    assert stacked._stacked_chunk(stacked._Tiled(64, 128, 2, (8, 128, 2), ()), 8, 2, True, MIB) == (8, 1)
    assert stacked._stacked_chunk(rows_run, 4, 1, True, MIB // 4) == (64, 1)  # (laying out: a quarter of the stage)
    assert stacked._stacked_chunk(columns_run, 7, 1, False, 1 << 12) == (1, 1)  # (one tile's rows at least)
    wide_rows_run = stacked._Tiled(2048, 21840, 1, (8, 128, 1), ())  # (read back: a tile row of 2 MiB ...)
    assert stacked._stacked_chunk(wide_rows_run, 3, 4, False, MIB) == (1, 85)  # (... runs of 96 bytes a column ...)
    assert stacked._stacked_chunk(wide_rows_run, 3, 4, False, MIB, 4) == (4, 21)  # (... made 384)
    assert stacked._stacked_chunk(columns_run, 7, 1, False, MIB, 4) == (1, 3)  # (where there are: one tile row)


def test_chunks_laid_out_are_a_share_of_those_read_back(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    chunks: list[tuple[int, bool, int]] = []
    real = stacked._stacked_chunk

    def spy(plan: Any, stack: int, width: int, long_runs: bool, budget: int, least: int) -> tuple[int, int]:
        chunks.append((budget, long_runs, least))
        return real(plan, stack, width, long_runs, budget, least)

    monkeypatch.setattr(stacked, "_stacked_chunk", spy)
    shape = xs.parse_shape("f32[100,2048,3]{0,1,2:T(8,128)}")
    x = random_array("f32", shape.dimensions, 5)
    assert same_bits(from_physical(to_physical(x, shape), shape), x)
    share, least = stacked.STAGE_BYTES // stacked.LAYING_OUT_SHARE, stacked.READ_ROW_TILES
    assert chunks == [(share, True, 1), (stacked.STAGE_BYTES, False, least)]  # (reading back: a few tile rows at least)
    assert calls["tiled_to_stacked"] == 1 and calls["tiled_from_stacked"] == 1


@pytest.mark.parametrize(("text", "laid_out", "read_back", "piece"), [
    ("bf16[40,2,512,8]{0,2,3,1:T(8,128)(2,1)}", 1024, 4096, 992),  # columns 16 KiB apart; pieces with a tail
    ("pred[128,873,3]{0,1,2:T(16,128)(4,1)}", 2016, 2619, 1984),  # columns 2619 bytes apart: long runs staged
    ("s8[40,3,87,10]{0,2,3,1:T(16,128)(4,1)}", 870, 870, 870),  # (a run short enough to turn whole)
])
@pytest.mark.parametrize("streamed", [False, True])
def test_long_runs_are_staged_laid_out_and_turned_in_pieces_read_back(
    calls: Counter[str], monkeypatch: pytest.MonkeyPatch, text: str, laid_out: int, read_back: int, piece: int,
    streamed: bool
) -> None:
    from xlashapes.physical import _stacks

    if streamed:
        monkeypatch.setattr(dispatch, "STREAM_BYTES", 0)
    shape = xs.parse_shape(text)
    width = np.dtype(shape.element_type.numpy_dtype).itemsize
    plan = stacked._stacked_plan(shape.dimensions, shape.layout_or_default(), width)
    assert plan is not None
    runs = {}  # the longest run of a column in a chunk, each way, in elements
    for to, budget, least in ((True, stacked.STAGE_BYTES // stacked.LAYING_OUT_SHARE, 1),
                              (False, stacked.STAGE_BYTES, stacked.READ_ROW_TILES)):
        rows, _ = stacked._stacked_chunk(plan.tiled, plan.stack, width, to, budget, least)
        runs[to] = min(plan.tiled.rows, rows * plan.tiled.tile[0]) * plan.stack
    assert (runs[True], runs[False]) == (laid_out, read_back)
    assert laid_out * width >= _stacks.STAGED_RUN  # (laid out through the runs buffer)
    assert _stacks._run_piece.py_func(read_back, min(plan.tiled.cols, 128), width) == piece
    x = random_array(str(shape.element_type), shape.dimensions, 11)
    expected = numpy_path(monkeypatch, to_physical, x, shape, padding_value=1)
    got = to_physical(x, shape, padding_value=1)
    assert np.array_equal(got, expected)
    noise = np.random.default_rng(5).integers(0, 256, size=len(expected), dtype=np.uint8)
    assert same_bits(from_physical(noise, shape), numpy_path(monkeypatch, from_physical, noise, shape))
    assert calls["tiled_to_stacked"] > 0 and calls["tiled_from_stacked"] > 0
