"""Small blocks permuted inside go through lanes (:mod:`xlashapes.physical._lane_blocks`): the NumPy path's bytes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xlashapes.physical as physical
from kernel_worker import shape_of  # tests/ is on sys.path
from test_physical import random_array, same_bits
from test_physical_fast import compiled_for_any_size
from test_physical_generic import FAST, numpy_path, off_the_grid
from xlashapes.physical import _copy, _dispatch, _lane_blocks, _tuned, from_physical, to_physical
from xlashapes.physical._dispatch import Run
from xlashapes.physical._kinds import side_of

CASES = [  # (layout, whether read back through lanes too)
    ("u8[64,3,12]{1,2,0}", True),  # blocks of 3 x 12 bytes transposed inside (36 bytes: squares overlapping)
    ("s8[40,8,12]{1,2,0}", True), ("bf16[70,7,8]{1,2,0}", True), ("f16[3,30,7,8]{2,3,1,0}", True),
    ("f32[40,4,6]{1,2,0}", True), ("f64[40,3,4]{1,2,0}", True),
    ("f32[3,20,7,8,2]{2,3,1,0,4}", False),  # a source block of 7 x 8 x 2: two destination runs of 7 x 8 (read
    # back, the walk's blocks are wider)
    ("u8[5,4,9,3,12]{3,4,0,2,1}", True),  # the blocks' axes permuted too
    ("pred[30,6,3,16,5]{3,4,0,1,2}", True),
]


@pytest.fixture
def compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled kernels for arrays of any size (skipped without numba)."""
    compiled_for_any_size(monkeypatch)
    if _dispatch.tabler() is None:
        pytest.skip("numba is not installed")


def _spied(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The blocks [first, last) of each call of the ``permuted_blocks`` kernel."""
    tables = _dispatch.tabler()
    kernel = tables.permuted_blocks
    calls: list[tuple[int, int]] = []

    def spy(*args: Any) -> None:
        calls.append((args[4], args[5]))
        kernel(*args)

    monkeypatch.setattr(tables, "permuted_blocks", spy)
    return calls


@pytest.mark.parametrize(("text", "both"), CASES)
@pytest.mark.parametrize(("offset", "threads"), [(0, 1), (3, 2)])
def test_small_blocks_permuted_inside_go_through_lanes(
        compiled: None, monkeypatch: pytest.MonkeyPatch, text: str, both: bool, offset: int,
        threads: int) -> None:
    # blocks of a few elements, the same on both sides in another order: the walk moved a few elements a step (u8
    # [N,3,12]{1,2,0} 6.6x memcpy); side-many blocks at a time through lane rows, two register transposes, 2.3-2.6x
    monkeypatch.setattr(_dispatch, "THREAD_BYTES", 0)
    monkeypatch.setattr(physical, "THREADS", threads)
    calls = _spied(monkeypatch)
    shape = shape_of(text)
    x = random_array(str(shape.element_type), shape.dimensions, len(text))
    expected = numpy_path(to_physical, x, shape)
    out = off_the_grid(len(expected), offset)
    assert to_physical(x, shape, out=out) is out
    assert np.array_equal(out, expected), text
    laid = len(calls)
    back = off_the_grid(x.nbytes, offset).view(x.dtype).reshape(x.shape)
    assert from_physical(expected, shape, out=back) is back
    assert same_bits(back, x), text
    assert laid >= 1 and (len(calls) > laid) == both, (text, calls)
    assert any(first > 0 for first, _ in calls) == (threads > 1), calls  # (the blocks split over the threads)


@FAST
@given(st.sampled_from([np.uint8, np.uint16, np.uint32, np.uint64]), st.integers(1, 3), st.data())
def test_copies_through_lanes_equal_numpy(compiled: None, dtype: Any, outer: int,
                                          data: st.DataObject) -> None:
    # any small block (two or three axes whose elements make a square's side on each side) permuted inside, its
    # blocks' axes in any order, threads splitting the blocks anywhere: the same elements as NumPy's copy
    side = side_of(np.dtype(dtype).itemsize)
    inner = [data.draw(st.integers(2, 12)) for _ in range(data.draw(st.integers(2, 3)))]
    dims = [data.draw(st.integers(1, 9)) for _ in range(outer)] + inner
    dims[0] = max(dims[0], side)
    order = data.draw(st.permutations(range(len(dims))))
    src = np.arange(np.prod(dims), dtype=np.uint64).astype(dtype).reshape(dims)
    dst = np.zeros([dims[a] for a in order], dtype).transpose(np.argsort(order))
    stream = data.draw(st.sampled_from([0, 1 << 40]))
    run = Run(1 << 40, data.draw(st.integers(1, 2)), numba_bytes=0, stream_bytes=stream, thread_bytes=0)
    _copy._copy(dst, src, run)
    assert np.array_equal(dst, src), (dims, order)


def test_which_blocks_go_through_lanes() -> None:
    # blocks that are one run in order on both sides (plain copies), runs shorter than a square's side, fewer
    # blocks than a side, or lane rows past the scratch do not
    assert _lane_blocks.lane_blocks((4096, 12, 3), (36, 3, 1), (36, 1, 12), 1) is not None
    assert _lane_blocks.lane_blocks((4096, 12, 3), (36, 3, 1), (36, 3, 1), 1) is None  # (in order)
    assert _lane_blocks.lane_blocks((4096, 2, 3), (6, 3, 1), (6, 1, 2), 1) is None  # (runs of 6 bytes)
    assert _lane_blocks.lane_blocks((8, 12, 3), (36, 3, 1), (36, 1, 12), 1) is None  # (8 blocks)
    assert _lane_blocks.lane_blocks((64, 48, 48), (2304, 48, 1), (2304, 1, 48), 1) is None  # (36 KiB of lanes)
    # f32 [2,20,7,8,2]{2,3,1,0,4} laid out
    found = _lane_blocks.lane_blocks((2, 20, 7, 8, 2), (1120, 56, 1, 7, 2240), (2240, 112, 16, 2, 1), 4)
    assert found is not None and found.s_runs[1].tolist() == [112] and found.d_runs[1].tolist() == [56, 56]


def test_tiny_blocks_go_through_lanes_by_rule_larger_ones_are_timed(
        compiled: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # a walk's blocks under FINE_BYTES that are one run a side in lanes, or of words of 4 bytes and more: the lanes
    # first (a first call takes them); others: timed beside the walk. One run a side, the walk's own blocks are not
    # timed beside them (they lost on every such layout, and their nested choices took a dozen calls to settle:
    # u8 [N,3,12]{1,2,0} read back 6.7x memcpy over its first 15 calls, against 2.7)
    monkeypatch.setattr(_tuned, "TUNE_BYTES", 0)
    seen: list[tuple[int, bool]] = []
    real = _tuned.run_fastest

    def spy(key: Any, plans: Any) -> bool:
        funcs = [getattr(plan, "func", None) for plan in plans]
        if key[0] == "walk" and _lane_blocks._through_lanes in funcs:
            seen.append((funcs.index(_lane_blocks._through_lanes), _copy._walked in funcs))
        return bool(real(key, plans))

    monkeypatch.setattr(_tuned, "run_fastest", spy)
    calls = _spied(monkeypatch)
    # (a block of 3 runs of 64 bytes, or of two runs of 7 x 8 bytes: timed; of 4-byte words, first)
    for text, first, alone in [("u8[4096,3,12]{1,2,0}", True, True), ("u8[256,16,24]{1,2,0}", False, False),
                               ("u8[3,16,100,64]{0,3,1,2}", False, False),
                               ("u8[2,20,7,8,2]{2,3,1,0,4}", False, False),
                               ("f32[2,20,7,8,2]{2,3,1,0,4}", True, False)]:
        seen.clear()
        calls.clear()
        _tuned.forget()
        shape = shape_of(text)
        x = random_array(str(shape.element_type), shape.dimensions, 1)
        assert np.array_equal(to_physical(x, shape), numpy_path(to_physical, x, shape))
        if alone:  # (no other plan to time: the lanes straight away)
            assert calls and not any(walked for _, walked in seen), (text, seen)
        else:
            assert seen and (seen[0][0] == 0) == first and seen[0][1], (text, seen)
