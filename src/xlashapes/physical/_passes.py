"""Walks of tiny interleaved blocks as two copies through a buffer: one of whole blocks, one of long rows.

A walk whose block is a few channels of a few elements (``u8[7,1024,200,7,3]{3,1,2,0,4}`` laid out: blocks of 3
channels x 7 elements, 21 bytes, each one run of the source, written as three rows of 7 bytes far apart) moves a few
bytes per step and took 18-20x memcpy, the NumPy path too. But where the block is one run on one side (the channels
interleaved) and an outer axis continues its rows on the other, the copy factors into two that the kernels move fast:

- laid out (the source's block one run, ``s_i == big``; the destination's rows continued by ``o``, ``d_o == small``):
  the blocks, whole runs, gathered into a buffer in the order ``[..., o, block]`` (a copy of runs), then the buffer's
  channels de-interleaved into the destination's rows, ``o`` and the block's rows one long row per channel (channels
  to planes);
- read back (the destination's block one run, ``d_u == small``; the source's rows continued by ``o``, ``s_o ==
  big``): the planes interleaved into the buffer (planes to channels), then its runs of whole blocks copied out.

The buffer holds ``CHUNK_BYTES`` of the copy at a time (in L2/L3), cut on its outer axes. Measured ('to' / 'from', x
memcpy, 28 MiB): u8 ``[7,1024,200,7,3]{3,1,2,0,4}`` 18.6 / 23.5 -> 4.7 / 8.0 (chunks of 4 MiB; 1 MiB took 6.9 'to',
the whole copy 5.8). A large copy times this plan beside the walk's own (:mod:`._tuned`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import product
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ._dispatch import Run, temporary
from ._tuned import DECISIVE, estimate, slabs, trial_bound

CHUNK_BYTES = 4 << 20
"""Bytes of the copy the buffer takes at a time."""

TRIED_BYTES = 16 << 20
"""Copies of at least this many bytes, on trial beside a plan already timed, time their first chunk and, where that
time scaled to the whole is ``DECISIVE`` times the other plan's, leave the copy to their ``fallback`` (the walk's own
blocks): their trial of a wide copy took one call of 100x memcpy (u8 ``[48,11200,1024]{0,1,2}`` laid out, 512 MiB:
5.8 s against the walk's 95 ms)."""

TINY_BYTES = 1024
"""Largest block (bytes) the two passes take."""

MOST_CHANNELS = 64
"""Most channels (elements of one row) the passes of channels and planes take (:func:`channel_passes`)."""

FIRST_ROW_BYTES = 32
"""Rows of channels shorter than this go in two passes by rule (the walk timed beside them), longer ones by the walk
(the passes timed beside it). x memcpy, ~32 MiB, 'to' / 'from', passes against the walk: f16 ``[1118481,3,5]{0,1,2}``
(30-byte rows) 3.5 / 2.7 against 8.6 / 8.0, pred ``[3,2,5587000]{0,1,2}`` 3.7 / 4.5 against 12.6 / 7.0, u8
``[2796202,3,4]{0,1,2}`` 5.1 / 3.0 against 8.7 / 9.3; but bf16 ``[4,4,2097152]{0,1,2}`` 2.4 / 3.4 against 3.7 / 1.7, u8
``[8,8,524288]{0,1,2}`` 3.9 / 6.9 against 3.3 / 1.8, f32 ``[2,8,2097152]{0,1,2}`` 2.7 / 3.0 against 1.0 / 1.1."""

Copy = Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any], Run], None]


def two_passes(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], shape: list[int], d_steps: list[int],
               s_steps: list[int], unit: int, run: Run, copy: Copy, fallback: Callable[[], bool] | None = None
               ) -> Callable[[], bool] | None:
    """The copy ``d[...] = s`` (a walk: axes in its order, steps in elements, ``unit`` its source-contiguous axis)
    as two passes through a buffer, each by ``copy``; None where its block is not a tiny interleaved one with an outer
    axis continuing its rows on the other side.

    >>> a = np.arange(2 * 6 * 3 * 4, dtype=np.uint8).reshape(2, 6, 3, 4)  # [.., o, i, u] of 4 channels
    >>> out = np.empty((4, 2, 6, 3), np.uint8)  # channels far apart, (o, i) one row each
    >>> plan = two_passes(out.transpose(1, 2, 0, 3), a.transpose(0, 1, 3, 2), [2, 6, 4, 3], [18, 3, 36, 1],
    ...                   [72, 12, 1, 4], 2, None, lambda d, s, run: np.copyto(d, s))
    >>> plan() and bool((out == a.transpose(3, 0, 1, 2)).all())
    True
    """
    inner = len(shape) - 1
    if unit < 0 or len(shape) < 3:
        return None
    big, small, width = shape[unit], shape[inner], d.itemsize
    if big * small * width > TINY_BYTES or big < 2 or small < 2:
        return None
    outer = [k for k in range(inner) if k != unit]
    if s_steps[inner] == big:  # (laid out: the source's blocks are runs)
        continued = [k for k in outer if d_steps[k] == small]
        order = (unit, inner)  # (the buffer's block: the source's, a run)
    elif d_steps[unit] == small:  # (read back: the destination's blocks are runs)
        continued = [k for k in outer if s_steps[k] == big]
        order = (inner, unit)  # (the buffer's block: the destination's)
    else:
        return None
    if not continued:
        return None
    o = continued[-1]
    axes = [k for k in outer if k != o] + [o, *order[::-1]]  # (the buffer's order, its minor axis last)
    dst = as_strided(d, [shape[k] for k in axes], [d_steps[k] * width for k in axes])
    src = as_strided(s, [shape[k] for k in axes], [s_steps[k] * width for k in axes])
    return partial(_run_passes, dst, src, run, copy, fallback)


def _run_passes(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], run: Run, copy: Copy,
                fallback: Callable[[], bool] | None) -> bool:
    """``dst[...] = src`` through a C-ordered buffer of the same axes, ``CHUNK_BYTES`` of them at a time (True)."""
    return _run_planes(dst, src, run, copy, 0, fallback)


def channel_passes(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], shape: list[int], d_steps: list[int],
                   s_steps: list[int], unit: int, run: Run, copy: Copy, fallback: Callable[[], bool] | None = None
                   ) -> Planes | None:
    """The copy ``d[...] = s`` (a walk, as :func:`two_passes` takes it) between rows of a few channels (axes that
    make one run of each row: ``f16[1118481,3,5]``, 15 channels, a 3 x 5 grid) and planes of the other axes, one
    plane a channel, in another order of the channels or with the planes in another shape (``{0,1,2}``: plane (k, j)
    of channel (j, k); a tiled plane), as two passes through a buffer of the planes in the rows' order: the channels
    to planes (or planes to channels, read back), a 2-d transpose of rows of a whole run; then each plane moved as
    it goes (runs; a tiled plane's conversion). The walk moved the channels of one axis at a time (5 of 15, a third
    of each row's line: 7.4x memcpy laid out); None where the copy is not one of these (or this is one of the passes
    of another).

    >>> a = np.arange(4 * 3 * 2, dtype=np.uint8).reshape(4, 3, 2)  # (rows of a 3 x 2 grid of channels)
    >>> out = np.empty((2, 3, 4), np.uint8)  # (planes in the other order)
    >>> plan = channel_passes(out.transpose(1, 0, 2), a.transpose(1, 2, 0), [3, 2, 4], [4, 12, 1], [2, 1, 6], 1,
    ...                       None, lambda d, s, run: np.copyto(d, s))
    >>> plan() and bool((out == a.transpose(2, 1, 0)).all())
    True
    """
    if getattr(_PASSES, "depth", 0):
        return None  # (a pass of another: its buffer's planes are the rows' order)
    axes = range(len(shape))
    for rows, planes in ((s_steps, d_steps), (d_steps, s_steps)):
        by_rows = sorted(axes, key=lambda k: (abs(rows[k]), k))
        runs = [1]  # (the channels of each prefix of the axes by their steps in the rows, while one run each)
        for k in by_rows[:-1]:
            if abs(rows[k]) != runs[-1] or runs[-1] * shape[k] > MOST_CHANNELS:
                break
            runs.append(runs[-1] * shape[k])
        for taken in range(len(runs) - 1, 0, -1):  # (the most channels first)
            run_of, channels, plane = runs[taken], by_rows[:taken], by_rows[taken:]
            span = sum((shape[j] - 1) * abs(planes[j]) for j in plane) + 1
            if run_of < 2 or any(abs(planes[j]) < span for j in channels) or min(abs(planes[j]) for j in plane) != 1:
                continue  # (not whole planes apart, or the planes not runs)
            if any(abs(rows[j]) % run_of for j in plane):
                continue
            order = sorted(channels, key=lambda j: -abs(rows[j])) + sorted(plane, key=lambda j: -abs(rows[j]))
            if sorted(channels, key=lambda j: -abs(planes[j])) + sorted(plane, key=lambda j: -abs(planes[j])) == order:
                continue  # (the planes in the rows' order: one 2-d transpose, the walk's own)
            width = d.itemsize
            dst = as_strided(d, [shape[j] for j in order], [d_steps[j] * width for j in order])
            src = as_strided(s, [shape[j] for j in order], [s_steps[j] * width for j in order])
            return Planes(dst, src, run, copy, taken, fallback)
    return None


_PASSES = threading.local()  # (depth: how many passes of channels and planes are running on this thread)


@dataclass(frozen=True)
class Planes:
    """The copy ``dst[...] = src`` between rows of channels and planes (:func:`channel_passes`): its axes the
    ``channels`` axes in the rows' order, then the planes' axes in the rows' order."""

    dst: np.ndarray[Any, Any]
    src: np.ndarray[Any, Any]
    run: Run
    copy: Copy
    channels: int
    fallback: Callable[[], bool] | None = None

    @property
    def first(self) -> bool:
        """Whether the copy goes in two passes by rule: rows of channels under ``FIRST_ROW_BYTES``, planes of one
        axis (planes of more: the walk first, its register transposes of rows of 2 or 4 elements were faster on
        full reversals, bf16 ``[4,4096,2048]{0,1,2}`` 1.5 against 1.7x memcpy)."""
        short = math.prod(self.dst.shape[: self.channels]) * self.dst.itemsize < FIRST_ROW_BYTES
        return bool(short and self.dst.ndim == self.channels + 1)

    def __call__(self) -> bool:
        """The copy, in two passes (True: done)."""
        _PASSES.depth = getattr(_PASSES, "depth", 0) + 1
        try:
            return _run_planes(self.dst, self.src, self.run, self.copy, self.channels, self.fallback)
        finally:
            _PASSES.depth -= 1


def _run_planes(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], run: Run, copy: Copy, channels: int,
                fallback: Callable[[], bool] | None = None) -> bool:
    """``dst[...] = src`` through a C-ordered buffer of the same axes, every index of the first ``channels`` axes
    and ``CHUNK_BYTES`` of the others at a time (cut on the outermost other axis whose inner ones hold more, the axes
    outside it one index at a time; True); on trial, far slower on its first chunk than another plan was, by
    ``fallback`` (:data:`TRIED_BYTES`)."""
    whole, plane = dst.shape[:channels], dst.shape[channels:]
    row = math.prod(whole) * dst.itemsize
    cut, inside = 0, row
    for k in range(len(plane) - 1, -1, -1):
        inside *= plane[k]
        if inside > CHUNK_BYTES:
            cut = k
            break
    per = max(1, CHUNK_BYTES // (row * math.prod(plane[cut + 1 :])))
    dims = (*whole, min(per, plane[cut]), *plane[cut + 1 :])
    head: tuple[slice, ...] = (slice(None),) * channels
    with temporary(math.prod(dims) * dst.itemsize) as held, slabs():  # (the same buffer call after call: its pages
        # faulted in once; the slabs' copies timed under one key: :func:`._tuned.slabs`)
        buffer = held.view(dst.dtype).reshape(dims)
        bound = trial_bound() if fallback is not None and dst.nbytes >= TRIED_BYTES else None
        began = time.perf_counter()
        for index in product(*(range(n) for n in plane[:cut])):
            for start in range(0, plane[cut], per):
                where: tuple[int | slice, ...] = (*head, *index, slice(start, start + per))
                cut_part: tuple[slice, ...] = (*head, slice(0, min(per, plane[cut] - start)))
                part = buffer[cut_part]
                copy(part, src[where], run)
                copy(dst[where], part, run)
                if bound is not None and fallback is not None:  # (the first chunk on trial: its time scaled)
                    whole = (time.perf_counter() - began) * dst.nbytes / part.nbytes
                    if whole >= DECISIVE * bound:
                        estimate(whole)
                        return fallback()
                    bound = None
    return True
