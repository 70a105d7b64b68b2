"""Copies whose small blocks are permuted inside: a group of blocks at a time through lanes, two register transposes.

**Why.** The generic walk moves a block of two axes at each step: the destination's most minor one and the source's
contiguous one. Where both are short and the block is the same few elements on both sides in another order (u8
``[N,3,12]{1,2,0}``: 36 bytes a block, a 3 x 12 transpose inside; f16 ``[100,2995,7,8]{2,3,1,0}``; f32
``[292,256,7,8,2]{2,3,1,0,4}``, whose source blocks of 7 x 8 x 2 are two runs of 7 x 8 in the destination), it moved
a few elements per step (x memcpy, 'to': 6.6, 5.0 and 5.9; u8 ``[128,64,227,3,12]{3,4,0,2,1}`` 15).

**How.** The block is the few axes that make the innermost ``side`` elements on each side (``side``: the register
transposes' square, :func:`._kinds.side_of`), every other axis a block index. ``side`` blocks at a time go through a
scratch of one *lane row* per element of the block (``side`` elements each, one per block of the group): each run of
the source blocks is moved into the lane rows in squares transposed in registers (:func:`._shuffles._table_square`,
row addresses from tables), then each run of the destination blocks out of them, its lane rows taken in the order
the destination holds their elements. The scratch (``SCRATCH_BYTES`` at most) stays in the first-level cache, so each
element is read and written once in memory. Runs of a block shorter than ``side`` do not go so (their squares would
spill into the next run); nor do blocks that are one run, in order, on both sides (the walk's runs move them whole).
The blocks' axes run with the one whose larger step (of the two sides) is least innermost, so that a group's blocks
sit close together on both sides (pred ``[3,128,1365,64]{0,3,1,2}``, three runs of 64 bytes a block: blocks in
destination order read 48 pages a group, 9.4x memcpy; so, 7.1). The last group of a thread's blocks overlaps the one
before (the same values again).

**When.** The walk (:func:`._copy._walk`) takes it first, by rule, where its own blocks are under ``FINE_BYTES`` and
a lane block is one run on each side or of words of 4 bytes and more (:func:`._copy._lanes_first`); elsewhere it is
timed beside the walk's plans (:mod:`._tuned`). x memcpy, ~32 MiB, one thread, 'to' / 'from', the shipped machine
code, before and after: u8 ``[2097152,3,12]{1,2,0}`` 6.9 / 7.3 -> 2.5 / 2.5 (read back, once the walk's plans have
been timed), u8 ``[128,64,227,3,12]{3,4,0,2,1}`` 15.7 / 10.6 -> 7.6 / 7.5, pred ``[500,6,128,16,5]{3,4,0,1,2}`` 9.4 /
10.7 -> 5.5 / 5.6, s8 ``[139810,5,48]{1,2,0}`` 7.8 -> 3.7, f32 ``[292,256,7,8,2]{2,3,1,0,4}`` 5.4 -> 3.1, f16
``[100,2995,7,8]{2,3,1,0}`` 5.5 -> 3.8.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np

from . import _dispatch as dispatch
from ._dispatch import Run
from ._kinds import side_of

SCRATCH_BYTES = 1 << 15
"""Most bytes of a block's lane rows (its elements, ``side`` each): the scratch stays in the first-level cache."""


@dataclass(frozen=True, eq=False)
class LaneBlocks:
    """How a copy goes through lanes: its blocks' axes, the runs of one block on each side, the lane row of each of
    its elements in destination order."""

    outer: np.ndarray[Any, Any]
    """int64 (3, axes): the blocks' axes (destination order), their counts, destination and source steps (elements)."""
    s_runs: np.ndarray[Any, Any]
    """int64 (3, runs): each source run's offset from the block's first element, its length, its first lane row."""
    d_runs: np.ndarray[Any, Any]
    """int64 (3, runs): each destination run's offset, its length, its first entry in ``order``."""
    order: np.ndarray[Any, Any]
    """int64: the lane row (bytes into the scratch) of each element of a block, in destination order."""
    side: int
    rows: int

    @property
    def whole(self) -> bool:
        """True when a block is one run on each side."""
        return bool(self.s_runs.shape[1] == 1 and self.d_runs.shape[1] == 1)

    @property
    def blocks(self) -> int:
        """How many blocks the copy moves."""
        return int(np.prod(self.outer[0]))


def lane_blocks(shape: Sequence[int], d_steps: Sequence[int], s_steps: Sequence[int], width: int) -> LaneBlocks | None:
    """How the copy of ``shape`` (steps in elements, none negative) goes through lanes, or None where it does not.

    >>> found = lane_blocks((4096, 12, 3), (36, 3, 1), (36, 1, 12), 1)  # u8 [4096,3,12]{1,2,0} laid out
    >>> found.rows, found.s_runs[1].tolist(), found.d_runs[1].tolist(), found.order[:4].tolist()
    (36, [36], [36], [0, 192, 384, 16])
    """
    return _lane_blocks(tuple(shape), tuple(d_steps), tuple(s_steps), width)


@lru_cache(maxsize=256)
def _lane_blocks(shape: tuple[int, ...], d_steps: tuple[int, ...], s_steps: tuple[int, ...],
                 width: int) -> LaneBlocks | None:
    side = side_of(width)
    inner = sorted(set(_innermost(shape, d_steps, side)) | set(_innermost(shape, s_steps, side)))
    rows = math.prod(shape[a] for a in inner)
    if not inner or rows * side * width > SCRATCH_BYTES:
        return None
    grids = np.indices([shape[a] for a in inner]).reshape(len(inner), -1)
    source = (np.array([s_steps[a] for a in inner], np.int64) @ grids).astype(np.int64)
    target = (np.array([d_steps[a] for a in inner], np.int64) @ grids).astype(np.int64)
    s_order, d_order = np.argsort(source, kind="stable"), np.argsort(target, kind="stable")
    if np.array_equal(s_order, d_order) and _runs(target[d_order])[2].size == 1:
        return None  # (one run in order on both sides: the walk's runs move it)
    s_runs, d_runs = _runs(source[s_order]), _runs(target[d_order])
    if min(s_runs[1].min(), d_runs[1].min()) < side or len(set(source.tolist())) < rows:
        return None
    lane = np.empty(rows, np.int64)
    lane[s_order] = np.arange(rows) * side * width
    rest = sorted((a for a in range(len(shape)) if a not in inner), key=lambda a: -max(d_steps[a], s_steps[a]))
    outer = np.array([[shape[a] for a in rest] or [1], [d_steps[a] for a in rest] or [0],
                      [s_steps[a] for a in rest] or [0]], np.int64)
    if int(np.prod(outer[0])) < side:
        return None
    return LaneBlocks(outer, s_runs, d_runs, lane[d_order], side, rows)


def _innermost(shape: Sequence[int], steps: Sequence[int], side: int) -> list[int]:
    """The axes of least step (size-1 axes left out) whose elements make at least ``side`` together.

    >>> _innermost((4096, 12, 3), (36, 3, 1), 16)
    [2, 1]
    """
    found, count = [], 1
    for a in sorted((a for a in range(len(shape)) if shape[a] > 1), key=lambda a: steps[a]):
        if count >= side:
            break
        found.append(a)
        count *= shape[a]
    return found


def _runs(offsets: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """int64 (3, runs): the runs of consecutive values of sorted ``offsets``: first value, length, first index.

    >>> _runs(np.array([0, 1, 2, 10, 11])).tolist()
    [[0, 10], [3, 2], [0, 3]]
    """
    cuts = np.flatnonzero(np.diff(offsets) != 1) + 1
    starts = np.concatenate([[0], cuts]).astype(np.int64)
    lengths = np.diff(np.concatenate([starts, [offsets.size]]))
    return np.array([offsets[starts], lengths, starts], np.int64)


def lane_plan(target: int, source: int, pad: Any, found: LaneBlocks, nbytes: int,
              run: Run) -> Callable[[], bool] | None:
    """The copy ``found`` describes as a plan of :func:`._tuned.run_fastest` (True: done), or None without the
    compiled kernels."""
    kernel = dispatch.tabler()
    return None if kernel is None else partial(_through_lanes, kernel, target, source, pad, found, nbytes, run)


def _through_lanes(kernel: Any, target: int, source: int, pad: Any, found: LaneBlocks, nbytes: int,
                   run: Run) -> bool:
    """The ``permuted_blocks`` kernel (:mod:`._tables`) over ``found``'s blocks, split over ``run``'s threads."""
    side, width = found.side, pad.itemsize
    lanes = np.arange(side, dtype=np.int64) * side * width

    def part(bounds: tuple[int, int]) -> None:
        bases = np.empty(2 * side, np.int64)
        room = np.empty(found.rows * side * width + 64, np.uint8)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % 64
        work = np.empty(found.outer.shape[1], np.int64)
        kernel.permuted_blocks(target, source, pad, found.outer, bounds[0], bounds[1], found.s_runs, found.d_runs,
                               dispatch.address(found.order), dispatch.address(lanes), dispatch.address(bases),
                               scratch, work)

    dispatch.run_parts(part, dispatch.parts(found.blocks, nbytes, run, side))
    return True
