"""Transposing copies whose two block axes are short, as squares over merged axes with tables of row addresses.

The generic walk's block is two axes: the destination's most minor one and the source's contiguous one. Where either
is short (full reversals with small dims, as ``u8[24,12,23301,5]{0,1,2,3}``: blocks of 24 x 5 bytes, each from 24
source rows 1.4 MB apart; a small minor dim moved outward, as ``u8[9586,500,7]{0,1,2}``), it moved a few elements
per block at 17-45x memcpy. But the axes next to each block axis often continue it on its side: the source's
``[..., 23301, 5]`` is one contiguous run of 116505 bytes, the destination's ``[..., 12, 24]`` one of 288. Merged so
(the *across* group: source-contiguous axes; the *along* group: destination-contiguous ones), the copy is a 2-d
transpose whose rows sit anywhere on the other side: a table of row addresses per group (offsets in bytes) lets the
register transposes (:func:`._shuffles._table_square`) move whole squares again (``merged_squares``,
:mod:`._tables`).

A group stops at the first axis not contiguous with the ones before, or shared with the other group, or that would
take it past ``OUTER_MOST`` elements (``INNER_MOST`` for the side the inner loop sweeps); that axis is then cut into
blocks, looped over outside with the other axes, the last block overlapping the one before. The inner loop sweeps the
group that was cut, whose lines must stay cached between squares (measured: cutting the other one, or sweeping 4096
rows, was 1.5-2x slower). Where both were cut (or neither), it sweeps the along group unless the across group's rows
lie in a far narrower span (``SPAN_FACTOR``, ``SPAN_FAR``): sweeping 768 source rows spread over 64 MiB cost
``u8[3,128,7,24966]{0,1,2,3}`` 'to' 6.3x memcpy, sweeping 1024 destination rows 2688 bytes apart 3.3x; where the
spans were within 4x of each other, the along group was as fast or faster. No rule read from the groups picks the
faster sweep well (see :mod:`._tuned`), so copies of ``TUNE_BYTES`` and more time both and keep the faster: over
199 random layouts that go through merged squares, the sum of their to / from times x memcpy went 1460 -> 1387,
those over 5x 41 -> 32 (``s8[1024,32,7,48,3]{1,4,2,0,3}`` 'from' 7.4 -> 3.4, ``s4[12,113,48,64,16]{0,1,2,3,4:E(4)}``
6.9 -> 2.4).

Bytes move in squares of one line a side (64 x 64, whole lines read and written, streamed where the destination rows
sit on the line grid: :func:`._shuffles._table_line_square`) where both groups are that long, else 16 x 16. Neither
always wins: a line a side, pred ``[85,16,64,384]{0,1,2,3}`` 'to' went 5.8 -> 3.75x memcpy and s8
``[48,5,64,48,45]{0,1,2,3,4}`` 'from' 5.2 -> 2.8, but pred ``[12,2,1024,1000]{0,2,1,3}`` 'from' took 4.4 ms a line a
side against 3.5 ms 16 x 16 (the same sweep). So a copy of ``TUNE_BYTES`` and more times both sides for each sweep
(:func:`_sides`; the same tables).

A large copy also times the same squares staged through the cache (``merged_staged``, :func:`staged_plan`): a
block of at most ``STAGE_BYTES`` (its source rows up to one of ``STAGE_ROWS`` bytes long) has its source rows copied
one after the other into a scratch in L2 (memory read in runs, the next rows prefetched), transposed there into rows
laid in their destination order, and copied out in runs (destination rows back to back make one; whole lines
streamed). Squares straight between the arrays read a line of each of up to 64 source rows pages apart and write
part lines of destination rows off the line grid: u8 ``[200,2048,81]{0,1,2}`` 'to' (destination rows of 200 bytes,
source rows 165888 bytes apart) went 4.35 -> 2.5x memcpy staged, pred ``[500,64,349,3]{2,3,1,0}`` 3.45 -> 2.5.

A large copy onto destination rows on the line grid whose groups make squares of one line a side takes them
straight from the source first (``merged_direct``, :func:`direct_runs`), as the 2-d transposes do
(:func:`._walk.direct_transpose`): bands of source rows (the along group, cut at a whole number of lines of each
destination row) swept a few lines of each row at a time, the next sweep prefetched into L2 while the squares stream
out, so that memory is read and written at once. Survey seeds 7-19 (465 random layouts of ~32 MiB), against the
commit before: those over 2x memcpy 113 -> 101, medians 1.35 / 1.43 -> 1.27 / 1.25 (to / from); at 512 MiB, bf16
``[4,N,2048]{0,1,2}`` 2.8 / 2.1 -> 1.7 / 1.5, u8 ``[48,N,1024]{0,1,2}`` 3.5 / 2.4 -> 1.8 / 1.6.

Other walks (of other kinds: destination rows of 8 bytes side by side, rows of 2 or 4 elements, interleaved rows;
squares with both sides long) keep their own blocks by rule, but a large copy times merged squares (either sweep)
beside them and keeps the fastest (:func:`timed_routes`): no rule read from the kinds says which wins. 'to', x memcpy:
u8 ``[8,48,2,43690]{0,1,2,3}`` 8.4 -> 3.1, pred ``[7,5,500,9,200]{3,1,2,0,4}`` 10.3 -> 3.9, f16
``[2,3,7,2048,195]{0,2,3,4,1}`` 12.4 -> 3.6 (its walk, 50x, had lost to NumPy's 14.5x before merged squares ran),
s32 ``[100,48,218,8]{2,0,3,1}`` 3.0 -> 1.4. Over the 875 layouts of survey seeds 7-29, timing them beside squares with
both sides long too took those over 3x from 263 to 247.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import Any

import numpy as np

from . import _dispatch as dispatch
from . import _tuned
from ._dispatch import Run
from ._kinds import LINE, PAIRED, SHORT, SQUARES, side_of, walk_kind
from ._transposes import DIRECT_LINES, DIRECT_ROWS

OUTER_MOST = 4096
"""Most elements of the group the outer loop of a block runs over."""

SHORT_SIDE = 32
"""Walks with a block side shorter than this (16 for 8-byte words) go as merged squares (where their groups are
longer)."""

INNER_MOST = 1024
"""Most elements of the group its inner loop sweeps (as many lines of rows read or written stay cached: 64 KiB)."""

SPAN_FACTOR = 4
"""Where both groups were cut (or neither), the inner loop sweeps the across group when its rows lie in a span this
many times narrower than the along group's rows do (and the latter's is past ``SPAN_FAR``)."""

SPAN_FAR = 1 << 20
"""Elements the along group's rows must span before the narrower across group is swept instead (below it, both
sides' lines stay in L2: ``f32[100,24,218,16]{2,1,3,0:T(8,128)}`` 'from' was 1.18 -> 1.27x memcpy swept across)."""

LINES = True
"""Bytes in squares of one line a side (64 x 64) where both groups are that long (False: 16 x 16, for
comparison)."""

STREAM = True
"""Squares of whole lines on the line grid streamed out (False: stored plainly, for comparison)."""

STAGED = True
"""Merged squares staged through the cache (``merged_staged``) timed beside the others (False: never, for
comparison)."""

DIRECT = True
"""Merged squares onto destination rows on the line grid moved straight from the source (``merged_direct``) timed
beside the others (False: never, for comparison)."""

PADDED = True
"""Where the groups make no squares and the walk's own block is short both ways, squares of an across group of half
a side and more padded to a side (:func:`_short`) timed beside the walk's plans (False: never, for comparison)."""

DIRECT_ACROSS = 1 << 14
"""Most elements of the across group (source-contiguous rows, swept) of merged squares moved straight (the rest of a
longer run are blocks of the outer loop: threads take blocks)."""

STAGE_BYTES = 1 << 18
"""Most bytes of a staged block (staged, then as many transposed: both in L2)."""

STAGE_ROWS = (256, 512, 1024, 2048, 4096)
"""Most bytes of a staged block's source rows (its across group) tried: the one whose runs out are longest for
the work is taken (runs of ``STAGE_RUN`` bytes or more as long as any: then the largest block)."""

STAGE_RUN = 2048
"""Bytes of a run out past which a longer one is not worth more work."""

Group = tuple[tuple[int, int], ...]
"""(axis, elements taken) of a group's axes, the most minor first."""


@dataclass(frozen=True)
class Merged:
    """A copy as merged squares: the row tables (byte offsets) of the across group (destination rows) and the along
    group (source rows), the outer axes (5 x axes, int64: blocks, destination and source steps, block length, last
    block's start), which loop is inner and the squares' side (elements: a line of bytes, or ``side_of`` the width);
    ``other``, the same copy with the other loop inner, chosen by timing (:mod:`._tuned`) under ``key``; ``walk``,
    the copy's axes, steps and width (for :func:`staged_plan`, made for large copies only)."""

    across: np.ndarray[Any, Any]
    along: np.ndarray[Any, Any]
    outer: np.ndarray[Any, Any]
    inner_across: bool
    side: int
    other: Merged | None = None
    key: tuple[Any, ...] = ()
    walk: tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...], int] | None = None
    reach: int = 0
    """Bytes each square reads before its source rows (squares of a short across group: :func:`_short`)."""


@dataclass(frozen=True)
class Staged:
    """A copy as merged squares staged through the cache (``merged_staged``): its blocks (``merged``: tables and
    outer axes), where each source row goes in the scratch (``staged``, byte offsets: the source rows' order), where
    each transposed row goes (``t_rows``: the destination rows' order), the runs copied in and out (``ins``,
    ``outs``: scratch offset, offset in the array, bytes; each a row or rows back to back) and the scratch's bytes."""

    merged: Merged
    staged: np.ndarray[Any, Any]
    t_rows: np.ndarray[Any, Any]
    ins: np.ndarray[Any, Any]
    outs: np.ndarray[Any, Any]
    scratch: int


def _group(shape: list[int], steps: Sequence[float], most: int) -> tuple[Group, bool]:
    """The axes contiguous from the minor end of ``steps`` (each step the product of the extents before), at most
    ``most`` elements, and whether it stopped at an axis it had to cut (or could not take for its length).

    >>> _group([24, 12, 23301, 5], [1398060, 116505, 5, 1], 4096)
    (((3, 5), (2, 819)), True)
    """
    axes: list[tuple[int, int]] = []
    count = 1
    for axis in sorted(range(len(shape)), key=lambda a: steps[a]):
        if steps[axis] != count or shape[axis] == 1:
            return tuple(axes), False
        if count * shape[axis] > most:
            if most // count >= 2:
                axes.append((axis, most // count))
            return tuple(axes), True
        axes.append((axis, shape[axis]))
        count *= shape[axis]
    return tuple(axes), False


def _elements(group: Group) -> int:
    """The elements a group takes."""
    return math.prod(extent for _, extent in group)


def _groups(shape: list[int], d_steps: Sequence[float], s_steps: Sequence[float], side: int,
            most: tuple[int, int]) -> tuple[Group, Group, bool, bool] | None:
    """The across and along groups (at most ``most`` elements each), whether each was cut, or None when they cannot
    both take a square's side without sharing an axis.

    Where they would share axes, each keeps a run of its axes from the minor end: of the runs that share none and
    make a square's side each, the one whose shorter group is longest (then the largest block).

    >>> _groups([50, 7, 64], [64, 3200, 1], [7, 1, 350], 32, (4096, 4096))
    (((1, 7), (0, 50)), ((2, 64),), False, False)
    """
    across, cut_across = _group(shape, s_steps, most[0])
    along, cut_along = _group(shape, d_steps, most[1])
    pairs = [((min(sides), sides[0] * sides[1]), a, b) for a, b, sides in _disjoint(across, along)
             if min(sides) >= side]
    if not pairs:
        return None
    _, a, b = max(pairs, key=lambda pair: pair[0])
    return across[:a], along[:b], cut_across and a == len(across), cut_along and b == len(along)


def _disjoint(across: Group, along: Group) -> list[tuple[int, int, tuple[int, int]]]:
    """The runs of each group's axes from the minor end that share no axis: (axes of ``across`` taken, of ``along``,
    the elements of each), the longest first.

    >>> _disjoint(((2, 12), (3, 5)), ((3, 5), (1, 139)))
    [(1, 2, (12, 695)), (1, 1, (12, 5))]
    """
    return [(a, b, (_elements(across[:a]), _elements(along[:b]))) for a in range(len(across), 0, -1)
            for b in range(len(along), 0, -1)
            if not {axis for axis, _ in across[:a]} & {axis for axis, _ in along[:b]}]


def _span(group: Group, steps: Sequence[float]) -> float:
    """Elements between a group's first row and its last on the other side (``steps``)."""
    return sum((extent - 1) * steps[axis] for axis, extent in group)


def _sweeps_across(found: tuple[Group, Group, bool, bool], d_steps: Sequence[float], s_steps: Sequence[float]
                   ) -> bool:
    """Whether the inner loop sweeps the across group (its rows on the destination side): the group that was cut
    where only one was; else the one whose rows lie closer together (the other's sweep would touch rows over more
    pages).

    >>> _sweeps_across((((2, 4096),), ((3, 3), (1, 128), (0, 2)), True, True), [384, 3, 2688, 1],
    ...                [24966, 174762, 1, 22369536])
    True
    """
    across, along, cut_across, cut_along = found
    if cut_across != cut_along:
        return cut_across
    far = _span(along, s_steps)
    return far > SPAN_FAR and _span(across, d_steps) * SPAN_FACTOR <= far


def _table(group: Group, steps: Sequence[float], width: int) -> np.ndarray[Any, Any]:
    """The byte offsets of a group's rows on the other side, in the group's order (its most minor axis fastest);
    a step may be a part of an element (rows a whole number of bytes apart, not of elements:
    :func:`._pitched.pitched_copy`).

    >>> _table(((0, 3),), [2.5], 4).tolist()
    [0, 10, 20]
    """
    offsets = np.zeros(1, np.int64)
    for axis, extent in group:
        step = int(steps[axis] * width)
        offsets = (np.arange(extent, dtype=np.int64)[:, None] * step + offsets[None, :]).ravel()
    return offsets


def merged_route(
    shape: list[int], d_steps: list[int], s_steps: list[int], unit: int, width: int, target: int, stream: int
) -> Merged | None:
    """The merged squares of a walk (axes in destination order, steps in elements, ``unit`` its source-contiguous
    axis) whose blocks would be squares with a side shorter than 32 elements (16 of 8 bytes), or fewer than 8 short
    rows, and whose merged groups are longer; None for any other.

    >>> m = merged_route([23301, 12, 5, 24], [288, 24, 6710688, 1], [5, 116505, 1, 1398060], 2, 1, 0, 1)
    >>> len(m.across), len(m.along), m.inner_across, m.outer.tolist()
    (1020, 288, True, [[115], [288], [5], [204], [23097]])
    """
    if unit < 0 or width not in (1, 2, 4, 8):
        return None
    side = side_of(width)
    small, big = shape[-1], shape[unit]
    if min(small, big) >= (SHORT_SIDE if width < 8 else SHORT_SIDE // 2):
        return None
    kind = walk_kind(shape, d_steps, s_steps, unit, width, target, stream)[0]
    if kind != SQUARES and not (kind == SHORT and big < 8):  # (8 short rows and more: blocks of 8 x a line)
        return None
    found = _groups(shape, d_steps, s_steps, side, (OUTER_MOST, OUTER_MOST))
    if found is None:
        return None
    inner_across = _sweeps_across(found, d_steps, s_steps)
    first = _swept(shape, d_steps, s_steps, unit, width, inner_across)
    if first is None:
        return None
    other = _swept(shape, d_steps, s_steps, unit, width, not inner_across)
    key = (tuple(shape), tuple(d_steps), tuple(s_steps), width)  # (timed with one sweep too: bytes, two sides)
    return replace(first, other=other, key=key, walk=key)


def timed_routes(
    shape: list[int], d_steps: list[int], s_steps: list[int], unit: int, width: int
) -> list[Merged]:
    """The merged squares (each sweep that makes some) of a walk that :func:`merged_route` leaves to its own blocks:
    plans that a large copy times against the walk's (:mod:`._tuned`), where no rule says which is faster (u8
    ``[8,48,2,43690]{0,1,2,3}`` 'to', blocks of 8-byte rows side by side, 8.4x memcpy walked, 3.1x merged; pred
    ``[200,2048,81]{0,1,2}``, squares of 81 x 200 bytes from 200 rows 165888 bytes apart, 7.2 / 8.6 -> 4.9 / 5.7).

    >>> [p.inner_across for p in timed_routes([2, 48, 43690, 8], [384, 8, 768, 1], [43690, 87380, 1, 4194240], 2, 1)]
    [True, False]
    """
    if unit < 0 or width not in (1, 2, 4, 8):
        return []
    axes = tuple(shape), tuple(d_steps), tuple(s_steps)
    plans = list(_routes(*axes, unit, width, (OUTER_MOST, INNER_MOST)))
    tiny = max(shape[unit], shape[-1]) < side_of(width)  # (the walk's own block short both ways: else its blocks
    # are as fast, and two more plans on trial cost calls: s32 [8,87381,12]{1,0,2} 'to', 12 channels to planes)
    return plans or (list(_short_routes(*axes, width)) if PADDED and tiny else [])


@lru_cache(maxsize=256)
def _routes(shape: tuple[int, ...], d_steps: tuple[int, ...], s_steps: tuple[int, ...], unit: int, width: int,
            most: tuple[int, int]) -> tuple[Merged, ...]:
    """:func:`timed_routes`, kept for the walks seen last (their tables took 35 us a call to make; ``most``: the
    groups' limits they were made with)."""
    plans = [plan for plan in (_swept(list(shape), list(d_steps), list(s_steps), unit, width, inner_across)
                               for inner_across in (True, False)) if plan is not None]
    if plans:
        plans[0] = replace(plans[0], walk=(shape, d_steps, s_steps, width))
    return tuple(plans)


@lru_cache(maxsize=256)
def _short_routes(shape: tuple[int, ...], d_steps: tuple[int, ...], s_steps: tuple[int, ...], width: int
                  ) -> tuple[Merged, ...]:
    """The squares of a short across group (:func:`_short`), each sweep that makes some, for the walks seen last."""
    plans = (_short(list(shape), d_steps, s_steps, width, inner_across) for inner_across in (True, False))
    return tuple(plan for plan in plans if plan is not None)


def _short(shape: list[int], d_steps: Sequence[int], s_steps: Sequence[int], width: int, inner_across: bool
           ) -> Merged | None:
    """Merged squares whose across group (source-contiguous rows) is shorter than a side but half a side or more,
    padded to a side: its first rows again in front, each square reading as many elements before its source rows
    (the source's ``reach``) and writing them to those first rows, which the same square then writes again with
    their own elements (a later store to the same bytes wins; no other rows are touched). None where the groups
    make no such squares, or a step is negative.

    A copy whose source-contiguous run is short and shared with the destination's (s32 ``[139,1000,5,12]{2,0,3,1}``
    laid out: runs of 12 words read, 5 written, the 12 a run of 695 words once the 5 and the 139 are merged) made
    no squares and went through the walk's blocks, 3.3-5x memcpy; in squares of 12 words padded to 16, 1.8-1.9.

    >>> plan = _short([1000, 139, 12, 5], [8340, 5, 695, 1], [60, 60000, 1, 12], 4, True)
    >>> plan.across[:6].tolist(), len(plan.across), plan.along[:3].tolist(), plan.reach
    ([0, 2780, 5560, 8340, 0, 2780], 16, [-16, 32, 80], 16)
    """
    n = side_of(width)
    if min(*d_steps, *s_steps) < 0:
        return None
    across, _ = _group(shape, s_steps, INNER_MOST if inner_across else OUTER_MOST)
    along, _ = _group(shape, d_steps, OUTER_MOST if inner_across else INNER_MOST)
    pairs = [(sides, a, b) for a, b, sides in _disjoint(across, along) if n <= 2 * sides[0] < 2 * n and sides[1] >= n]
    if not pairs:
        return None
    (rows, _), a, b = max(pairs, key=lambda pair: pair[0])
    merged = _blocks(across[:a], along[:b], shape, d_steps, s_steps, width, inner_across, n)
    if merged is None:
        return None
    pad = n - rows
    return replace(merged, across=np.concatenate([merged.across[:pad], merged.across]),
                   along=merged.along - pad * width, reach=pad * width)


def pitched_routes(shape: list[int], d_steps: Sequence[float], s_steps: Sequence[float], unit: int, width: int
                   ) -> list[Merged]:
    """The merged squares (each sweep that makes some) of a walk some of whose axes step by a part of an element
    (:func:`._pitched.pitched_copy`): the walk's own blocks cannot take those, so groups no longer than its block axes
    are taken too (a 2-d transpose is then squares over its two axes, their rows' bytes in the tables).

    >>> plans = pitched_routes([2048, 4095, 2], [2, 4096, 1], [8191, 1, 4095.5], 1, 4)  # (rows 16382 bytes apart,
    >>> [(len(p.along), p.along[:3].tolist(), p.outer[2].tolist()) for p in plans]  # in pairs: 4-byte words)
    [(4096, [0, 16382, 32764], [1]), (1024, [0, 16382, 32764], [8191])]
    """
    if unit < 0 or width not in (1, 2, 4, 8):
        return []
    plans = [plan for plan in (_swept(shape, d_steps, s_steps, unit, width, inner_across, True)
                               for inner_across in (True, False)) if plan is not None]
    return [replace(plans[0], walk=(tuple(shape), tuple(d_steps), tuple(s_steps), width)), *plans[1:]] if plans else []


def _swept(shape: list[int], d_steps: Sequence[float], s_steps: Sequence[float], unit: int, width: int,
           inner_across: bool, any_length: bool = False) -> Merged | None:
    """The merged squares whose inner loop sweeps the across group (``inner_across``) or the along group, or None
    where their groups would not make squares or (unless ``any_length``) would be no longer than the walk's own
    block axes."""
    found = _groups(shape, d_steps, s_steps, side_of(width), (INNER_MOST, OUTER_MOST) if inner_across else
                    (OUTER_MOST, INNER_MOST))
    if found is None:
        return None
    across, along = found[0], found[1]
    lined = width == 1 and LINES and min(_elements(across), _elements(along)) >= LINE
    side = LINE if lined else side_of(width)  # (bytes a line a side where both groups are that long)
    if not any_length and _elements(across) <= shape[unit] and _elements(along) <= shape[-1]:
        return None
    return _blocks(across, along, shape, d_steps, s_steps, width, inner_across, side)


def _blocks(across: Group, along: Group, shape: list[int], d_steps: Sequence[float], s_steps: Sequence[float],
            width: int,
            inner_across: bool, side: int) -> Merged | None:
    """The merged squares of two groups: their tables, and the outer axes the rest of the copy loops over; None
    where an outer axis steps by a part of an element on either side (the kernels step those in elements)."""
    taken = dict(across + along)
    axes = [a for a in sorted(range(len(shape)), key=lambda a: -s_steps[a]) if shape[a] > taken.get(a, 1)]
    if any(d_steps[a] % 1 or s_steps[a] % 1 for a in axes):
        return None
    outer = np.array([[-(-shape[a] // taken.get(a, 1)) for a in axes], [d_steps[a] for a in axes],
                      [s_steps[a] for a in axes], [taken.get(a, 1) for a in axes],
                      [shape[a] - taken.get(a, 1) for a in axes]], np.int64).reshape(5, len(axes))
    return Merged(_table(across, d_steps, width), _table(along, s_steps, width), outer, inner_across, side)


@lru_cache(maxsize=256)
def staged_plan(shape: tuple[int, ...], d_steps: tuple[float, ...], s_steps: tuple[float, ...], width: int
                ) -> Staged | None:
    """The merged squares of a walk staged through the cache, in blocks of at most ``STAGE_BYTES`` whose source rows
    are cut at one of ``STAGE_ROWS`` bytes (the one whose runs out are longest for the work); None where their groups
    would not make squares of a line a side.

    >>> plan = staged_plan((81, 2048, 200), (409600, 200, 1), (1, 81, 165888), 1)
    >>> len(plan.merged.across), len(plan.merged.along), len(plan.outs) // 3, plan.merged.outer[0].tolist()
    (972, 200, 81, [171])
    """
    n = LINE // width
    axes = list(shape), list(d_steps), list(s_steps)
    best: tuple[tuple[float, int], Merged] | None = None
    for row in STAGE_ROWS:
        found = _groups(*axes, n, (row // width, 1 << 62))
        if found is None:
            continue
        found = _groups(*axes, n, (row // width, max(n, STAGE_BYTES // (_elements(found[0]) * width))))
        if found is None:
            continue
        merged = _blocks(found[0], found[1], *axes, width, False, n)
        if merged is None:
            continue
        block = len(merged.across) * len(merged.along)
        done = math.prod(shape) / (int(np.prod(merged.outer[0])) * block)  # (less than 1: blocks overlapping)
        key = (done * min(_run_bytes(merged, width), STAGE_RUN), block)
        if best is None or key > best[0]:
            best = (key, merged)
    if best is None:
        return None
    merged = best[1]
    across, along = len(merged.across), len(merged.along)
    pitch = across * width  # (source rows back to back copied in as one run)
    pitch += LINE if pitch % (8 * LINE) == 0 else 0  # (a line of slack keeps the staged rows off a few cache sets)
    staged, ins = _runs(merged.along, across * width, pitch, 0)
    t_rows, outs = _runs(merged.across, along * width, along * width, along * pitch)
    return Staged(merged, staged, t_rows, ins, outs, along * pitch + across * along * width)


@lru_cache(maxsize=256)
def direct_plan(shape: tuple[int, ...], d_steps: tuple[float, ...], s_steps: tuple[float, ...], width: int
                ) -> Merged | None:
    """The merged squares of a walk moved straight from the source (``merged_direct``): the across group as long as
    ``DIRECT_ACROSS``, swept; the along group's block a whole number of lines of each destination row, so that every
    block's rows start on the line grid where the whole rows do; squares of one line a side. None where the groups
    would not make such squares, or the destination rows (or the blocks' corners) are off the line grid.

    >>> plan = direct_plan((11184, 1024, 48), (48, 536832, 1), (1024, 1, 11452416), 1)
    >>> len(plan.across), len(plan.along), plan.side, plan.outer[0].tolist()
    (1024, 4032, 64, [134])
    """
    n = LINE // width
    found = _groups(list(shape), d_steps, s_steps, n, (DIRECT_ACROSS, OUTER_MOST))
    if found is None:
        return None
    along = list(found[1])
    count = math.prod(extent for _, extent in along[:-1])
    axis, extent = along[-1]
    whole = LINE // math.gcd(count * width, LINE)  # (elements of the last axis that make whole lines)
    if extent < shape[axis] and extent >= whole:
        along[-1] = (axis, extent - extent % whole)
    merged = _blocks(found[0], tuple(along), list(shape), d_steps, s_steps, width, True, n)
    if merged is None or (merged.across % LINE).any() or not _corners_on_lines(merged.outer, width):
        return None
    return merged


def _corners_on_lines(outer: np.ndarray[Any, Any], width: int) -> bool:
    """Whether every block of ``outer`` starts on the line grid of the destination (its first block does)."""
    cut = outer[0] > 1
    return not ((outer[1] * outer[3] * width % LINE)[cut].any() or (outer[1] * outer[4] * width % LINE)[cut].any())


def _run_bytes(merged: Merged, width: int) -> float:
    """The mean bytes of the runs a staged block copies out (its destination rows, those back to back as one)."""
    row = len(merged.along) * width
    return len(merged.across) * row / (len(_runs(merged.across, row, row, 0)[1]) // 3)


def _runs(rows: np.ndarray[Any, Any], row: int, pitch: int, base: int) -> tuple[
        np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Where rows of ``row`` bytes at offsets ``rows`` go in the scratch (``pitch`` apart from ``base`` on, in the
    order of their offsets), and the runs between the two (int64 triples: scratch offset, offset, bytes), rows back
    to back on both sides making one.

    >>> [table.tolist() for table in _runs(np.array([300, 0, 100]), 100, 100, 64)]
    [[264, 64, 164], [64, 0, 200, 264, 300, 100]]
    """
    order = np.argsort(rows, kind="stable")
    places = np.empty(len(rows), np.int64)
    places[order] = base + np.arange(len(rows), dtype=np.int64) * pitch
    ends = rows[order]
    joined = np.diff(ends, prepend=ends[0] - 1) == row if pitch == row else np.zeros(len(rows), bool)
    starts = np.flatnonzero(~joined)
    counts = np.diff(starts, append=len(rows))
    runs = np.stack([base + starts * pitch, ends[starts], counts * row], axis=1)
    return places, runs.astype(np.int64).ravel()


def merged_copy(target: int, source: int, pad: Any, merged: Merged, nbytes: int, run: Run, stream: int) -> bool:
    """The copy of ``merged`` from ``source`` to ``target`` by ``merged_squares`` (:mod:`._tables`), its blocks over
    ``run``'s threads; with ``stream``, squares whose rows are whole lines on the line grid are streamed out. Where
    the other loop could be inner (``merged.other``) and the copy is ``TUNE_BYTES`` or more, the plan is the one
    :mod:`._tuned` picks for this walk, its threads and the offsets of both ends in their pages. False (nothing
    done) without the compiled kernels."""
    plans = [merged] if merged.other is None or nbytes < _tuned.TUNE_BYTES else [merged, merged.other]
    runs = merged_runs(target, source, pad, plans, nbytes, run, stream)
    if merged.walk is not None:
        runs = direct_runs(target, source, pad, merged.walk, nbytes, run, stream) + runs
    if len(runs) < 2:
        return bool(runs) and runs[0]()
    key = (*merged.key, _tuned.page_offset(target), _tuned.page_offset(source), run.threads, stream)
    return _tuned.run_fastest(key, runs)


def merged_runs(target: int, source: int, pad: Any, plans: list[Merged], nbytes: int, run: Run,
                stream: int) -> list[Callable[[], bool]]:
    """The copies by ``plans`` (:func:`timed_routes`) as plans of :func:`._tuned.run_fastest`; none without the
    compiled kernels."""
    kernel = dispatch.tabler()
    if kernel is None:
        return []
    plans = [plan for plan in plans if plan.reach <= source % _tuned.PAGE]  # (the bytes read before the first
    # source row in its page)
    walk = next((plan.walk for plan in plans if plan.walk is not None), None)
    large = nbytes >= _tuned.TUNE_BYTES
    if large:  # (byte squares a line a side timed beside 16 x 16 ones: neither always wins)
        plans = [each for plan in plans for each in _sides(plan, pad.itemsize)]
    runs: list[Callable[[], bool]] = [partial(_squares, kernel, target, source, pad, plan, nbytes, run, stream)
                                      for plan in plans]
    staged = staged_plan(*walk) if large and STAGED and walk is not None else None
    if staged is not None:
        runs.append(partial(_staged, kernel, target, source, pad, staged, nbytes, run, stream))
    return runs


def direct_runs(target: int, source: int, pad: Any, walk: tuple[tuple[int, ...], tuple[float, ...], tuple[float, ...],
                int], nbytes: int, run: Run, stream: int) -> list[Callable[[], bool]]:
    """The copy of ``walk`` (axes, destination and source steps, width) by merged squares moved straight from the
    source (:func:`direct_plan`) as a plan of :func:`._tuned.run_fastest`, for a copy of ``TUNE_BYTES`` or more onto
    rows on the line grid; else none.

    Where it applies, it is a large copy's first plan (the rule's): the others are still timed after it (the walk's
    own blocks, merged squares by either sweep, staged), but first it runs from the first call on, where a plan
    met late in the turns costs every call before it: bf16 ``[4,N,2048]{0,1,2}`` laid out, 512 MiB, settled on it
    only after ~30 calls when it came fifth."""
    kernel = dispatch.tabler()
    if (kernel is None or not DIRECT or nbytes < _tuned.TUNE_BYTES or not stream or target % LINE
            or any(step % 1 for step in (*walk[1], *walk[2]))):
        return []
    plan = direct_plan(*walk)
    return [] if plan is None else [partial(_direct, kernel, target, source, pad, plan, nbytes, run)]


def _sides(merged: Merged, width: int) -> tuple[Merged, ...]:
    """``merged``, and where its squares of bytes are a line a side, the same squares 16 x 16 (the same tables).

    >>> [m.side for m in _sides(timed_routes([2048, 1024, 16], [16384, 16, 1], [1, 2048, 2097152], 0, 1)[0], 1)]
    [64, 16]
    """
    small = side_of(width)
    return (merged, replace(merged, side=small)) if merged.side != small else (merged,)


def _squares(kernel: Any, target: int, source: int, pad: Any, merged: Merged, nbytes: int, run: Run,
             stream: int) -> bool:
    """The ``merged_squares`` kernel over ``merged``'s blocks, split over ``run``'s threads (True: done)."""
    width = pad.itemsize
    stream = int(bool(stream) and STREAM and merged.side * width == LINE and target % LINE == 0
                 and not (merged.across % LINE).any() and not (merged.outer[1] * width % LINE).any())
    blocks = int(np.prod(merged.outer[0]))
    across, along = merged.across, merged.along

    canon = _canon()
    entry = _entry_of(kernel, ("merged_lines", "merged_squares"), merged, width, canon)

    def part(bounds: tuple[int, int]) -> None:
        entry(target, source, pad, merged.outer, dispatch.address(across), len(across), dispatch.address(along),
              len(along), bounds[0], bounds[1], int(merged.inner_across), stream)

    dispatch.run_parts(part, dispatch.parts(blocks, nbytes, run))
    if canon:
        dispatch.made_canonical(nbytes)
    return True


def _direct(kernel: Any, target: int, source: int, pad: Any, merged: Merged, nbytes: int, run: Run) -> bool:
    """The ``merged_direct`` kernel over ``merged``'s blocks (:func:`direct_plan`), split over ``run``'s threads, in
    the bands and sweeps of the 2-d transposes moved straight (:data:`._transposes.DIRECT_ROWS`, ``DIRECT_LINES``;
    True: done)."""
    width = pad.itemsize
    canon = _canon()
    entry = _entry_of(kernel, ("merged_direct_lines", "merged_direct"), merged, width, canon)
    rows, sweep = max(DIRECT_ROWS[width], merged.side), DIRECT_LINES[width]
    pair = int(width >= 4 and not ((merged.across - merged.across[0]) % PAIRED).any())  # (rows whose lines, one a
    # row, would meet the same 4 KiB of offsets: in pairs)

    def part(bounds: tuple[int, int]) -> None:
        entry(target, source, pad, merged.outer, dispatch.address(merged.across), len(merged.across),
              dispatch.address(merged.along), len(merged.along), bounds[0], bounds[1], rows, sweep, 1, pair)

    dispatch.run_parts(part, dispatch.parts(int(np.prod(merged.outer[0])), nbytes, run))
    if canon:
        dispatch.made_canonical(nbytes)
    return True


def _entry_of(kernel: Any, names: tuple[str, str], merged: Merged, width: int, canon: bool) -> Any:
    """The entry of ``kernel`` that moves ``merged``'s squares: ``names`` (bytes in squares of a line a side, the
    others), ``_canonical`` where ``canon``.

    >>> class Kernel: merged_lines, merged_squares_canonical = "lines", "squares, canonical"
    >>> plan = timed_routes([2048, 1024, 16], [16384, 16, 1], [1, 2048, 2097152], 0, 1)[0]
    >>> [_entry_of(Kernel, ("merged_lines", "merged_squares"), m, 1, canon) for m, canon in zip(_sides(plan, 1),
    ...                                                                                           (False, True))]
    ['lines', 'squares, canonical']
    """
    name = names[0] if merged.side != side_of(width) else names[1]
    return getattr(kernel, name + ("_canonical" if canon else ""))


def _canon() -> bool:
    """True where the conversion running wants its bytes canonical (pred: :func:`._dispatch.fusing`): the kernels'
    entries that make them 0 or 1 as they move them (words of pred bytes byte by byte) are taken."""
    return dispatch.fusing()


def _staged(kernel: Any, target: int, source: int, pad: Any, staged: Staged, nbytes: int, run: Run,
            stream: int) -> bool:
    """The ``merged_staged`` kernel over ``staged``'s blocks, split over ``run``'s threads, each with its own
    scratch (True: done)."""
    merged = staged.merged
    blocks = int(np.prod(merged.outer[0]))
    tables = [dispatch.address(table) for table in (staged.staged, staged.t_rows, staged.ins, staged.outs)]
    canon = _canon()
    entry = kernel.merged_staged_canonical if canon else kernel.merged_staged

    def part(bounds: tuple[int, int]) -> None:
        room = np.empty(staged.scratch + LINE, np.uint8)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % LINE
        entry(target, source, pad, merged.outer, bounds[0], bounds[1], scratch, tables[0], len(merged.along),
              tables[1], len(merged.across), tables[2], len(staged.ins) // 3, tables[3], len(staged.outs) // 3,
              int(bool(stream)))

    dispatch.run_parts(part, dispatch.parts(blocks, nbytes, run))
    if canon:
        dispatch.made_canonical(nbytes)
    return True
