"""The copy engine: ``dst[...] = src`` between strided views, organised for NumPy's loops and the cache."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from functools import partial
from itertools import product
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .._ints import divisor_near
from . import _dispatch as dispatch
from . import _lane_blocks, _merged, _passes, _tuned
from ._canonical import canonical_after, canonical_copy, canonical_plans
from ._dispatch import Run
from ._geometry import _STORAGE, _void
from ._kinds import (
    GATHER_BYTES,
    GROUPS,
    LINE,
    PLANES,
    QUARTERS,
    ROWS,
    SQUARES,
    WALKS,
    WIDE,
    WIDE_LINES,
    gathers_runs,
    tiled_squares,
    walk_kind,
)
from ._pitched import pitched_copy
from ._transposes import (
    BATCH_TIMED_BYTES,
    _batched_plan,
    _batched_stages,
    _stage_fits,
    _staged,
    _stages,
    line_range,
)

_SMALL_BYTES = 1 << 16  # copies this small go straight to np.copyto

_BLOCK_BYTES = 1 << 18  # working set of one cache block

_WIDEN_BYTES = 4096  # common contiguous runs up to this size become one (void) element

_SHORT_AXIS = 16  # a dst-contiguous axis this short is looped over in Python


_TILE_BYTES = 1 << 18  # one block of a transposing copy, staged through a buffer


_GATHER_STRIDE = 1024  # NumPy inner loops reading src further apart than this go through the buffer


_MAX_LOOPS = 256  # most Python-level passes over one cache block


def _copy(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], run: Run | None = None) -> None:
    """``dst[...] = src`` for same-dtype strided views: the generic compiled kernel for large copies when ``run``
    allows it, else NumPy organised for its loops and the cache; for copies of ``_tuned.TUNE_BYTES`` and more,
    whichever of the two took less time on the same copy before (:mod:`._tuned`). In a pred conversion, ``dst`` is
    left canonical (:func:`._canonical.canonical_copy`)."""
    if dst.size:
        canonical_copy(dst, partial(_copy_by_plan, dst, src, run))


def _copy_by_plan(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], run: Run | None) -> None:
    """The rest of :func:`_copy`: the plan, chosen by rule or timed."""
    d, s = _normalized(dst, src)
    if run is None or d.nbytes < run.numba_bytes:
        _numpy_copy(d, s)
        return
    if d.nbytes < _tuned.TUNE_BYTES:
        if not _compiled_copy(d, s, run):
            _numpy_copy(d, s)
        return
    key = ("copy", d.shape, d.strides, s.strides, d.itemsize, _tuned.page_offset(dispatch.address(d)),
           _tuned.page_offset(dispatch.address(s)), run.threads, d.nbytes >= run.stream_bytes)
    plans: list[Callable[[], bool]] = [lambda: _compiled_copy(d, s, run), partial(_numpy_tried, d, s, run)]
    if not _tuned.run_fastest(key, canonical_plans(plans, d)):
        canonical_after(lambda: _numpy_copied(d, s), d)()  # (no kernel for it: nothing to choose)


def _numpy_copied(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> bool:
    """:func:`_numpy_copy`, True (done) as a plan of :func:`._tuned.run_fastest` returns."""
    _numpy_copy(d, s)
    return True


SAMPLED_BYTES = 16 << 20
"""Copies of at least this many bytes try NumPy's copy on a part first when it is on trial (:func:`_numpy_tried`)."""

SAMPLE = 8
"""The part NumPy's copy tries first: ``1 / SAMPLE`` of the copy's outermost axis of ``SAMPLE`` or more."""


def _numpy_tried(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], run: Run) -> bool:
    """:func:`_numpy_copy` as a timed plan beside the kernel (True: done). On trial (:func:`._tuned.trial_bound`), a
    copy of ``SAMPLED_BYTES`` or more copies a part first (:func:`_sampled_axis`); where that part's time, scaled
    to the whole, is ``DECISIVE`` times the kernel's, that is NumPy's time (:func:`._tuned.estimate`) and the kernel
    copies the whole. NumPy's strided copy of a large transpose took one call of 66-100x memcpy when it was tried
    (bf16 ``[2048,32768,4]`` planes to channels, 512 MiB: 3.76 s against the kernel's 71 ms); the part costs an
    eighth of that."""
    bound = _tuned.trial_bound()
    axis = _sampled_axis(d, s) if bound is not None and d.nbytes >= SAMPLED_BYTES else None
    if axis is None or bound is None:
        _numpy_copy(d, s)
        return True
    cut = d.shape[axis] // SAMPLE
    part = (slice(None),) * axis + (slice(0, cut),)
    start = time.perf_counter()
    _numpy_copy(d[part], s[part])
    whole = (time.perf_counter() - start) * d.shape[axis] / cut
    if whole >= _tuned.DECISIVE * bound and _compiled_copy(d, s, run):
        _tuned.estimate(whole)
    else:
        rest = (slice(None),) * axis + (slice(cut, None),)
        _numpy_copy(d[rest], s[rest])
    return True


def _sampled_axis(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> int | None:
    """The axis whose first ``1 / SAMPLE`` is NumPy's part on trial (:func:`_numpy_tried`): the outermost (axes in
    the destination's order) of ``SAMPLE`` or more that is neither side's contiguous axis (its rows stay whole),
    else the outermost of ``SAMPLE`` or more; None where none is that long.

    >>> a = np.zeros((64, 4, 32), np.uint8)
    >>> _sampled_axis(a, a.transpose(2, 1, 0).copy().transpose(2, 1, 0)), _sampled_axis(a[:, :, :4], a[:, :, :4])
    (0, 0)
    >>> _sampled_axis(np.zeros(7), np.zeros(7)) is None
    True
    """
    long = [k for k in range(d.ndim) if d.shape[k] >= SAMPLE]
    whole = [k for k in long if d.itemsize not in (abs(d.strides[k]), abs(s.strides[k]))]
    return (whole or long)[0] if long else None


def _numpy_copy(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> None:
    """The normalized copy ``d[...] = s`` by NumPy, organised for its loops and the cache."""
    d, s = _widened(d, s)
    if d.ndim <= 1 or d.nbytes <= _SMALL_BYTES or d.itemsize >= 64:
        np.copyto(d, s)
        return
    loop = _looped_axes(d.shape)
    inner = max(i for i in range(d.ndim) if i not in loop)
    if abs(s.strides[inner]) > _GATHER_STRIDE:
        _copy_staged(d, s)
    else:
        _copy_looped(d, s, loop)


_SHORT_ROW = 256  # destination rows of a block up to this many bytes: the axis continuing them loops innermost


STREAM = True  # streaming stores for large destinations (False: plain stores, for comparison)


def _compiled_copy(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], run: Run) -> bool:
    """The normalized copy ``d[...] = s`` by the generic kernel; False when it does not apply (or no numba).

    The two block axes (the destination's most minor one and the source's contiguous one) stay innermost; the
    others run in source order (largest source stride outermost), so the source is read in long runs and the
    destination, written with streaming stores when large, takes whole lines at a time.
    """
    parts = _word_classes(d, s)
    if parts is not None:  # (one copy per class of steps, each moving words: see _word_classes)
        return all(_compiled_copy(part_d, part_s, run) for part_d, part_s in parts)
    views = _kernel_views(d, s)
    if views is None:
        return pitched_copy(d, s, run, STREAM)
    d, s = views
    width = d.itemsize
    walk = dispatch.walker()
    if walk is None:
        return False
    stream = int(STREAM and d.nbytes >= run.stream_bytes)
    staged = (d.ndim == 2 and s.strides[-1] != width and s.strides[0] == width
              and _stage_fits(d.shape, width, d.strides[0] == d.shape[1] * width,
                              dispatch.address(d) % LINE == 0 and d.strides[0] % LINE == 0))
    shift = _line_shift(d, s) if stream and not staged else 0  # (the staged kernel takes rows at any offset)
    if shift:  # destination lines off the line grid: a thin head, a middle of whole lines (streamed), a thin tail
        n = d.shape[-1]
        tail = (n - shift) % (LINE // width)
        for lo, hi in ((0, shift), (shift, n - tail), (n - tail, n)):
            if hi > lo:
                _walk(walk, d[..., lo:hi], s[..., lo:hi], run, stream)
        return True
    _walk(walk, d, s, run, stream)
    return True


def _kernel_views(
    d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The normalized copy's views as the generic kernel takes them (short runs as words, at least one axis), or
    None when it cannot: elements of other widths, strides not whole elements or negative, too many axes."""
    d, s = _word_runs(d, s)
    width = d.itemsize
    if width not in (1, 2, 4, 8) or d.ndim > 64:  # (no layout XLA accepts makes this many factor axes)
        return None
    if d.ndim == 0:  # one element
        d, s = d.reshape(1), s.reshape(1)
    if any(x % width or x < 0 for x in (*d.strides, *s.strides)):
        return None
    return d, s


def _word_runs(
    d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A short run contiguous in both (the last axis, 2, 4 or 8 bytes: the row pairs of ``(2,1)`` sub-tiles, the
    quads of ``(4,1)``) viewed as one wider element, so that the kernel moves words, not runs, when every other
    step is a whole number of them; else the views as they are.

    >>> a = np.zeros((4, 8, 2), np.uint16)
    >>> [v.shape for v in _word_runs(a.transpose(1, 0, 2), a.transpose(1, 0, 2))]
    [(8, 4), (8, 4)]
    """
    if d.ndim < 2 or d.shape[-1] == 1:
        return d, s
    width = d.itemsize * d.shape[-1]
    if d.strides[-1] != d.itemsize or s.strides[-1] != s.itemsize or width not in _STORAGE or width == d.itemsize:
        return d, s
    if any(step % width for step in (*d.strides[:-1], *s.strides[:-1])):
        return d, s
    return d.view(_STORAGE[width])[..., 0], s.view(_STORAGE[width])[..., 0]


MOST_CLASSES = 16
"""Most copies :func:`_word_classes` splits a copy into."""


def _word_classes(
    d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]
) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]] | None:
    """A copy whose short runs (2, 4 or 8 bytes, contiguous in both: the row pairs of ``(2,1)`` sub-tiles, the quads
    of ``(4,1)``) are not words only because some axes step by a part of a word, split into one copy per class of
    residues of those axes (each stepping by whole words, at an offset), so that each moves words
    (:func:`_word_runs`), not runs of 2 or 4 elements; None for any other copy (or one of more than
    ``MOST_CLASSES`` parts). ``f16[1000,2396,7]{0,2,1:T(8,128)(2,1)}``: pairs of rows 14 bytes apart, moved as
    runs of two, took 12x memcpy.

    >>> pairs = np.zeros((5, 7), np.uint16)[:, :6].reshape(5, 3, 2)  # (rows of 7 elements: 14 bytes apart)
    >>> [(p.shape, p.strides) for p, _ in _word_classes(pairs, pairs)]
    [((3, 3, 2), (28, 4, 2)), ((2, 3, 2), (28, 4, 2))]
    """
    if d.ndim < 2 or d.shape[-1] == 1 or d.strides[-1] != d.itemsize or s.strides[-1] != s.itemsize:
        return None
    width = d.itemsize * d.shape[-1]
    if width not in _STORAGE or width == d.itemsize:
        return None
    factors = [width // math.gcd(width, math.gcd(dk, sk)) for dk, sk in zip(d.strides[:-1], s.strides[:-1])]
    count = math.prod(factors)
    if count == 1 or count > MOST_CLASSES:
        return None
    if any(f > 1 and width in (dk, sk) for f, dk, sk in zip(factors, d.strides, s.strides)):
        return None  # (split, the words that continue each other on one side would not: no gain)
    parts = []
    for residues in product(*(range(min(f, n)) for f, n in zip(factors, d.shape))):
        where = (*(slice(r, None, f) for r, f in zip(residues, factors)), slice(None))
        parts.append((d[where], s[where]))
    return parts


def _line_shift(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> int:
    """Elements to skip on every destination row so that the rest starts on a cache line, for a long transposing
    copy whose rows all sit at the same offset in their lines (0: nothing to gain)."""
    width = d.itemsize
    if d.ndim < 2 or d.strides[-1] != width or s.strides[-1] == width:
        return 0
    if d.shape[-1] * width < SHIFT_BYTES:
        return 0
    start = dispatch.address(d)
    if start % width or start % LINE == 0 or width not in s.strides[:-1]:
        return 0
    if any(step % LINE for step in d.strides[:-1]):
        return 0
    return (-start) % LINE // width


def _on_lines(d: np.ndarray[Any, Any]) -> bool:
    """True when every destination row (the last axis) starts on a cache line."""
    return dispatch.address(d) % LINE == 0 and all(step % LINE == 0 for step in d.strides[:-1])


def _walk_order(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], stream: int) -> tuple[
        np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any], int]:
    """(shape, destination steps, source steps, unit) of the normalized copy ``d[...] = s`` as the generic kernel
    walks it (steps in elements): the two block axes innermost (the source's contiguous one, ``unit``, -1 for none,
    then the destination's most minor one), the others in source order (largest source stride outermost), but
    that the axes continuing destination rows shorter than ``_SHORT_ROW`` bytes go last, finishing each line while
    it is cached."""
    width = d.itemsize
    shape = np.array(d.shape, np.int64)
    d_steps = np.array(d.strides, np.int64) // width
    s_steps = np.array(s.strides, np.int64) // width
    inner = d.ndim - 1
    unit = -1
    if s_steps[inner] != 1:
        unit = next((k for k in range(inner) if s_steps[k] == 1), -1)
    outer = sorted((k for k in range(inner) if k != unit), key=lambda k: -int(s_steps[k]))
    lines = bool(stream) and _on_lines(d)
    row = int(shape[inner] * d_steps[inner]) * width
    if row <= _SHORT_ROW and not (lines and row % LINE == 0):  # short rows: finish each line while cached
        follow = [k for k in outer if d_steps[k] == shape[inner] * d_steps[inner]]
        outer = [k for k in outer if k not in follow] + follow
    order = [*outer, *([unit] if unit >= 0 else []), inner]
    return shape[order], d_steps[order], s_steps[order], inner - 1 if unit >= 0 else -1


FINE_BYTES = 256
"""Bytes of the blocks under which a copy's squares or rows are fine-grained (:func:`fine_grained`)."""


def fine_grained(dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any], compiled: bool = False) -> bool:
    """True when the generic kernel would move ``dst[...] = src`` (same dtype) in blocks of a few elements each,
    one step of its walk per block: sub-tiles turned around inside tiles, as between ``{1,0:T(8,128)(2,1)}`` and
    ``{0,1:T(8,128)(2,1)}`` (2 x 2 blocks: 40x memcpy), which are faster through the logical array; with
    ``compiled``, not the blocks of tiled transposes ``tile_squares`` takes (:func:`._kinds.tiled_squares`).

    >>> a = np.zeros((64, 64, 2, 2), np.uint16)
    >>> fine_grained(a, a.transpose(1, 0, 3, 2)), fine_grained(a, a.transpose(1, 0, 2, 3))
    (True, False)
    """
    if dst.size == 0:
        return False
    views = _kernel_views(*_normalized(dst, src))
    if views is None or views[0].ndim < 2:
        return False
    d, s = views
    width = d.itemsize
    shape, d_steps, s_steps, unit = _walk_order(d, s, 1)
    if unit < 0:
        return False
    if compiled and tiled_squares(shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, width) is not None:
        return False  # (blocks of tiled transposes, which the compiled kernel moves in squares of a line a side)
    kind, _ = walk_kind(shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, width, 0, 1)
    return kind in (ROWS, SQUARES) and int(shape[unit] * shape[-1]) * width < FINE_BYTES


def _walk(walk: Any, d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], run: Run, stream: int) -> None:
    """The normalized copy ``d[...] = s`` by the generic kernel (its axes ordered here), over ``run``'s threads."""
    width = d.itemsize
    shape, d_steps, s_steps, unit = _walk_order(d, s, stream)
    pad = np.zeros(1, _STORAGE[width])[0]
    target, source = dispatch.address(d), dispatch.address(s)
    mode = _stages(target, shape, d_steps, width, stream) if unit == 0 else 0
    if mode:
        _staged(walk, target, source, pad, shape, d_steps, s_steps, d.nbytes, run, mode)
        return
    if unit >= 1 and unit == len(shape) - 2 and _batched_stages(walk, d, s, pad, shape, d_steps, s_steps, run,
                                                                stream):
        return
    if unit >= 0 and _tile_squares(d, s, shape, d_steps, s_steps, unit, run, stream):
        return
    merged = _merged.merged_route(shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, width, target,
                                  stream) if MERGED else None
    if merged is not None and _merged.merged_copy(target, source, pad, merged, d.nbytes, run, stream):
        return
    walked = partial(_walked, walk, d, s, shape, d_steps, s_steps, unit, run, stream)
    axes = shape.tolist(), d_steps.tolist(), s_steps.tolist()
    channels = _passes.channel_passes(d, s, *axes, unit, run, _copy, walked) if PASSES else None
    first = channels is not None and channels.first  # (short rows: the passes by rule)
    found = _lane_blocks.lane_blocks(*axes, width) if LANES else None
    lanes = _lane_blocks.lane_plan(target, source, pad, found, d.nbytes, run) if found is not None else None
    tiny = alone = False
    if found is not None and lanes is not None:
        tiny = _lanes_first(found, *axes, unit, width)
        alone = tiny and found.whole  # (the walk's own blocks not timed beside these lanes)
    plans: list[Callable[[], bool]] = [*([channels] if channels is not None and first else []),
                                       *([lanes] if lanes is not None and tiny else []), *([] if alone else [walked])]
    if d.nbytes >= _tuned.TUNE_BYTES:
        walk_axes = (tuple(axes[0]), tuple(axes[1]), tuple(axes[2]), width)  # (merged squares moved straight from
        # the source first, where the destination rows are on the line grid: :func:`._merged.direct_runs`)
        plans[:0] = _merged.direct_runs(target, source, pad, walk_axes, d.nbytes, run, stream) if MERGED else []
        plans += [lanes] if lanes is not None and not tiny else []
        plans += _timed_plans(walk, d, s, pad, shape, d_steps, s_steps, unit, run, stream, walked)
        plans += [channels] if channels is not None and not first else []
        if len(plans) > 1:  # (the faster on this copy, timed; a pred copy's time with its pass to canonical bytes)
            key = ("walk", tuple(shape.tolist()), tuple(d_steps.tolist()), tuple(s_steps.tolist()), width,
                   _tuned.page_offset(target), _tuned.page_offset(source), run.threads, stream)
            _tuned.run_fastest(key, canonical_plans(plans, d))
            return
    plans[0]()


def _lanes_first(found: _lane_blocks.LaneBlocks, shape: Sequence[int], d_steps: Sequence[int],
                 s_steps: Sequence[int], unit: int, width: int) -> bool:
    """True when a copy goes through lanes (:mod:`._lane_blocks`) by rule, not only timed beside the walk: where the
    walk's blocks (of its kind ``ROWS``, ``PLANES`` or ``SQUARES``) are under ``FINE_BYTES`` and the lanes' blocks are
    one run on each side, or of words of 4 bytes and more. (Blocks of several runs of bytes or 2-byte words read those
    runs far apart, which other walks did better: pred ``[3,128,1365,64]{0,3,1,2}`` 'to', three runs of 64 bytes a
    block, 7.1x memcpy through lanes against 3.6 walked; one run a side, u8 ``[N,3,12]{1,2,0}`` 2.5 against 6.8, pred
    ``[500,6,128,16,5]{3,4,0,1,2}`` 5.9 against 11-13; words of 4 bytes, f32 ``[292,256,7,8,2]{2,3,1,0,4}`` 'to',
    a run of 7 x 8 x 2 onto two of 7 x 8, 3.2 against 8.5.) Where a lane block is one run a side, the walk's own
    blocks are not timed beside the lanes: they lost on every such layout, and their nested choices took a dozen calls
    to settle (u8 ``[N,3,12]{1,2,0}`` read back 6.7x memcpy over its first 15 calls, 2.7 without them).

    >>> found = _lane_blocks.lane_blocks((4096, 12, 3), (36, 3, 1), (36, 1, 12), 1)
    >>> _lanes_first(found, (4096, 12, 3), (36, 3, 1), (36, 1, 12), 1, 1)
    True
    """
    kind, _ = walk_kind(shape, d_steps, s_steps, unit, width, 0, 1)
    tiny = kind in (ROWS, PLANES, SQUARES) and unit >= 0 and shape[unit] * shape[-1] * width < FINE_BYTES
    return tiny and (found.whole or width >= 4)


def _timed_plans(
    walk: Any, d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], pad: Any, shape: np.ndarray[Any, Any],
    d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any], unit: int, run: Run, stream: int,
    walked: Callable[[], bool],
) -> list[Callable[[], bool]]:
    """The plans a large walk times beside its own blocks (``walked``, which the passes fall back on: :mod:`._tuned`):
    merged squares (either sweep), two passes through a buffer for tiny interleaved blocks (:mod:`._passes`), a batch
    of smaller 2-d transposes staged."""
    target, source = dispatch.address(d), dispatch.address(s)
    axes = shape.tolist(), d_steps.tolist(), s_steps.tolist()
    plans = _merged.merged_runs(target, source, pad, _merged.timed_routes(*axes, unit, d.itemsize), d.nbytes, run,
                                stream) if MERGED else []
    order = _destination_order(shape, d_steps, s_steps, unit)
    plans += [partial(_walked, walk, d, s, *order, unit, run, stream)] if order is not None else []
    if gathers_runs(*axes, unit, d.itemsize, stream):
        plans.append(partial(_walked, walk, d, s, shape, d_steps, s_steps, unit, run, 2))
    passes = _passes.two_passes(d, s, *axes, unit, run, _copy, walked) if PASSES else None
    batched = _batched_plan(walk, d, s, pad, shape, d_steps, s_steps, run, stream, BATCH_TIMED_BYTES) if (
        unit >= 1 and unit == len(shape) - 2) else None
    return plans + [plan for plan in (passes, batched) if plan is not None]


def _destination_order(shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any],
                       unit: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]] | None:
    """The runs of a walk (no transposed block: ``unit`` -1) with their outer axes in destination order (largest
    destination step outermost), or None where that is the walk's own order: the destination then takes one stream
    at a time. Which order is faster depends on the machine's memory (this 2-core Intel Xeon, 512 MiB 'from', x memcpy:
    f32 ``{1,0:T(8,128)}`` 1.44 in source order, eight rows written at once, 1.10 in destination order; 'to' 1.20
    against 1.05; u8 ``T(8,128)`` 'to' 1.05 against 1.19), so large walks time both (:mod:`._tuned`).

    >>> shape, d_steps, s_steps = np.array([4, 8, 32, 128]), [8192, 128, 1024, 1], [8192, 1024, 128, 1]
    >>> _destination_order(shape, np.array(d_steps), np.array(s_steps), -1)
    (array([  4,  32,   8, 128]), array([8192, 1024,  128,    1]), array([8192,  128, 1024,    1]))
    """
    if unit >= 0 or len(shape) < 3:
        return None
    outer = sorted(range(len(shape) - 1), key=lambda k: -int(d_steps[k]))
    if outer == list(range(len(shape) - 1)):
        return None
    order = [*outer, len(shape) - 1]
    return shape[order], d_steps[order], s_steps[order]


def _walked(walk: Any, d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], shape: np.ndarray[Any, Any],
            d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any], unit: int, run: Run, stream: int) -> bool:
    """The rest of :func:`_walk` (its axes ordered): the copy by the walk's own blocks (True: done)."""
    width = d.itemsize
    inner = len(shape) - 1
    lines = bool(stream) and _on_lines(d)
    pad = np.zeros(1, _STORAGE[width])[0]
    target, source = dispatch.address(d), dispatch.address(s)
    if PLANES_SLAB and _through_planes(d, s, shape, d_steps, s_steps, unit, run):
        return True
    if unit >= 0 and d_steps[-1] == 1 and SWEEP_BYTES and lines:
        small, line = int(shape[-1]), LINE // width
        if small > line and small % line and shape[-2] >= 2:  # (the whole lines of each row in sweeps, the rest
            # after them: u8 [699050,48]{0,1:T(1,256)} 'to' went in blocks of whole rows, each band of 8 reading all
            # the source, 5.2x memcpy -> 1.75)
            for cut in (slice(0, small - small % line), slice(small - small % line, small)):
                _walked(walk, d[..., cut], s[..., cut], np.array([*shape[:-1], cut.stop - cut.start]), d_steps,
                        s_steps, unit, run, stream)
            return True
        shape, d_steps, s_steps = _line_sweeps(shape, d_steps, s_steps, width)
        inner = len(shape) - 1
        unit = inner - 1
    split = next((k for k in range(inner) if k != unit), -1)
    if len(shape) == 2 and unit == 0 and _shifted(target, shape, d_steps, width, stream):
        _shifted_rows(walk, target, source, pad, shape, d_steps, s_steps, d.nbytes, run)
        return True

    kind, step = walk_kind(shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, width, target, stream)
    kernel = getattr(walk, WALKS[kind])
    line = LINE // width
    one_run = split < 0 and len(shape) == 1  # (one run: cut at whole lines, a piece per thread)

    def part(bounds: tuple[int, int]) -> None:
        work = np.empty(2 * len(shape), np.int64)
        block = WIDE_ROOM if kind in (GROUPS, WIDE, WIDE_LINES, QUARTERS) else STAGED_BLOCK
        room = np.empty(block + 2 * LINE + GATHER_BYTES, np.uint8)  # (a line of it past the block: planes spill
        # there; then the lines that wide and short blocks gather from source rows 4 KiB apart)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % LINE
        tags = scratch - dispatch.address(room) + block + LINE
        room[tags : tags + 4 * 8] = 0  # (which source lines the gather area holds: none yet)
        if one_run:
            first, last = line_range(bounds, line, int(shape[0]))
            kernel(target + first * int(d_steps[0]) * width, source + first * int(s_steps[0]) * width, pad,
                   np.array([last - first], np.int64), d_steps, s_steps, unit, 0, 1, stream, work, scratch, block)
            return
        kernel(target, source, pad, shape, d_steps, s_steps, unit, bounds[0], bounds[1], stream, work, scratch, block)

    if one_run:
        dispatch.run_parts(part, dispatch.parts(max(1, int(shape[0]) // line), d.nbytes, run))
        return True
    units = int(shape[split]) if split >= 0 else 1
    dispatch.run_parts(part, dispatch.parts(units, d.nbytes, run, step) if split >= 0 else [(0, 1)])
    return True


def _tile_squares(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], shape: np.ndarray[Any, Any],
                  d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any], unit: int, run: Run,
                  stream: int) -> bool:
    """A copy between tiled transposes by the ``tile_squares`` kernel (:func:`._kinds.tiled_squares`): squares of
    one line a side whose rows come in groups on both sides; False (nothing done) when it does not apply."""
    width = d.itemsize
    found = tiled_squares(shape.tolist(), d_steps.tolist(), s_steps.tolist(), unit, width)
    kernels = dispatch.kernels() if found is not None else None
    if found is None or kernels is None:
        return False
    runs, sources = found
    inner = len(shape) - 1
    big, small = int(shape[unit]), int(shape[inner])
    blocks = np.array([shape[sources] * big, big.bit_length() - 1, d_steps[unit], d_steps[sources],
                       shape[runs] * small, small.bit_length() - 1, s_steps[inner], s_steps[runs]], np.int64)
    outer = [k for k in range(inner) if k not in (unit, runs, sources)]
    axes = [(int(shape[k]), int(d_steps[k]), int(s_steps[k])) for k in outer] or [(1, 0, 0)]
    sizes, d_outer, s_outer = (np.array(column, np.int64) for column in zip(*axes))
    pad = np.zeros(1, _STORAGE[width])[0]
    target, source = dispatch.address(d), dispatch.address(s)

    def part(bounds: tuple[int, int]) -> None:
        room = np.empty(LINE * LINE + LINE, np.uint8)  # (a square's source lines, gathered: bytes)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % LINE
        kernels.tile_squares(target, source, pad, sizes, d_outer, s_outer, blocks, stream, scratch, bounds)

    dispatch.run_parts(part, dispatch.parts(int(sizes[0]), d.nbytes, run))
    return True


def _shifted(target: int, shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any], width: int,
             stream: int) -> bool:
    """True for a streamed 2-d transpose whose long destination rows sit at different offsets in their lines."""
    big, small, du = int(shape[0]), int(shape[1]), int(d_steps[0])
    aligned_rows = (du * width) % LINE == 0
    return bool(stream) and width > 1 and not aligned_rows and target % width == 0 and big >= 64 and (
        small * width >= 2048 and d_steps[1] == 1)


def _shifted_rows(
    walk: Any, target: int, source: int, pad: Any, shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any],
    s_steps: np.ndarray[Any, Any], nbytes: int, run: Run,
) -> None:
    """The shifted-rows kernel over ``run``'s threads (each part whole squares of rows)."""
    big, small, du, si = int(shape[0]), int(shape[1]), int(d_steps[0]), int(s_steps[1])
    line = LINE // pad.itemsize  # elements of one line: rows go to the threads a square at a time

    def part(bounds: tuple[int, int]) -> None:
        room = np.empty(SHIFTED_ROWS * 2 * LINE + LINE, np.uint8)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % LINE
        walk.shifted_rows(target, source, pad, big, small, du, si, *line_range(bounds, line, big), scratch,
                          SHIFTED_ROWS)

    dispatch.run_parts(part, dispatch.parts(max(1, big // line), nbytes, run))


PLANES_SLAB = 16 << 20
"""Bytes of the slabs a copy of tiny blocks goes through (:func:`_through_planes`; 0: never)."""

TINY_SIDE = 16
"""Longest block side (elements) of the copies that go through planes."""

PLANE_PIECES = 1024
PIECE_BYTES = 1 << 20
"""Walks with axes outside the planes' go through them an index of those axes at a time, each of at least this many
bytes, at most ``PLANE_PIECES`` of them (s32 ``[3,3,116508,8]{1,2,3,0}``, three full reversals of ``[3,116508,8]``, x
memcpy: 8.8 / 6.6 -> 2.7 / 2.3)."""


def _through_planes(
    d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any],
    s_steps: np.ndarray[Any, Any], unit: int, run: Run,
) -> bool:
    """The walk ``[..., n, b, a]`` whose block sides ``b`` (source-contiguous) and ``a`` (destination-contiguous) are
    both tiny, in two copies through a slab of planes ``[a, b, K]`` at a time: each ``a`` plane's ``(K, b)``
    transposed, then each ``b`` row's ``a`` planes interleaved; each index of the axes outside ``n`` (at most
    ``PLANE_PIECES`` of them, each of ``PIECE_BYTES`` or more) on its own; False (nothing done) for any other walk."""
    if len(shape) < 3 or unit != len(shape) - 2 or max(int(shape[-2]), int(shape[-1])) > TINY_SIDE:
        return False
    width = d.itemsize
    n, b, a = (int(x) for x in shape[-3:])
    if a * b < 16 and int(s_steps[-3]) == int(d_steps[-3]) == a * b:  # (blocks back to back on both sides, fewer
        # than 16 elements: each pass a transpose of that many rows, moved one element at a time; f32 [N,3,5]{1,2,0}
        # went 6.2 -> 9.4x memcpy)
        return False
    per = a * b * width
    count = min(n, PLANES_SLAB // per)
    pieces = int(np.prod(shape[:-3]))
    if count <= TINY_SIDE or n <= count // 4:  # (slabs too thin: the passes' own blocks tiny; too few for two passes)
        return False
    if pieces > 1 and (pieces > PLANE_PIECES or n * per < PIECE_BYTES):
        return False
    order = (*range(len(shape) - 3), len(shape) - 1, len(shape) - 2, len(shape) - 3)
    outer = tuple(int(x) for x in shape[:-3])
    source = as_strided(s, (*outer, a, b, n), tuple(int(s_steps[k]) * width for k in order))
    target = as_strided(d, (*outer, a, b, n), tuple(int(d_steps[k]) * width for k in order))
    with dispatch.temporary(a * b * count * width) as held, _tuned.slabs():  # (as :mod:`._passes`' buffer)
        stage = held.view(d.dtype)
        for index in np.ndindex(*outer):
            for k0 in range(0, n, count):
                k = min(count, n - k0)
                planes = stage[: a * b * k].reshape(a, b, k)
                _copy(planes, source[index][:, :, k0 : k0 + k], run)
                _copy(target[index][:, :, k0 : k0 + k], planes, run)
    return True


PASSES = True  # tiny interleaved blocks timed as two passes through a buffer too, channels and planes in another
# order taken so (:mod:`._passes`; False: off)
LANES = True  # small blocks permuted inside through lanes (:mod:`._lane_blocks`; False: off)
MERGED = True  # transposing walks of short blocks as squares over merged axes (:mod:`._merged`; False: off)
STAGED_BLOCK = 1 << 14  # bytes of scratch (in L1) a walk's blocks take on their way to a destination off the line grid
WIDE_ROOM = 1 << 18  # (grouped, wide and quarter-line blocks: the destination rows of a chunk of them staged, in L2)
SHIFTED_ROWS = 2048  # destination rows a shifted-rows transpose takes at a time, a multiple of 64 (2 lines each
# in its scratch: 256 KiB, in L2); each pass reads as many words of each source row it visits (4 KiB of 2-byte
# words: runs long enough for the hardware prefetcher; 256 rows (512 bytes) with software prefetching read half
# as fast)
SHIFT_BYTES = 1024  # shortest destination rows worth a line shift (the thin edges go the slow way)
SWEEP_BYTES = 2048  # bytes of each source row a transposing copy reads before moving to the next rows (0: off)
SHORT_SWEEP_ROWS = 256  # source rows a sweep reads at once when its blocks have fewer than 8 (their pages fit the
# TLB) or its source rows are at most 16 bytes apart


def _line_sweeps(
    shape: np.ndarray[Any, Any], d_steps: np.ndarray[Any, Any], s_steps: np.ndarray[Any, Any], width: int
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A transposing walk (the last two axes: source-contiguous ``unit``, destination-contiguous ``inner``)
    reordered so that each pass reads few source rows a long way and writes whole destination lines.

    The inner axis is cut into lines (its outer part a new outer axis, outside the source's short strides), and
    the rows' sweep into pieces of ``SWEEP_BYTES`` of each source row (its outer part outside that): each pass
    then reads one line's worth of source rows, ``SWEEP_BYTES`` each (a few streams the prefetcher follows, in
    the cache together), and writes one line of each destination row it meets (streamed when aligned).
    """
    line = 64 // width
    small, big, si = int(shape[-1]), int(shape[-2]), int(s_steps[-1])
    if small <= line or small % line or big < 2:
        return shape, d_steps, s_steps
    axes = [[int(n), int(d), int(s)] for n, d, s in zip(shape[:-2], d_steps[:-2], s_steps[:-2])]
    if big < 8 or si * width <= 16:  # blocks of a few source rows, or of rows at most 16 bytes apart (8 bytes or
        # 16-bit words): several lines of each destination row at a time (fewer, longer calls; measured: rows of 8
        # 4-byte words are faster a line at a time)
        line *= divisor_near(small // line, max(1, SHORT_SWEEP_ROWS // line))
    cut = [small // line, line * int(d_steps[-1]), line * si]
    at = next((k for k, axis in enumerate(axes) if axis[2] < cut[2]), len(axes))
    sweep = [*axes[at:], [big, int(d_steps[-2]), int(s_steps[-2])]]  # the rows' sweep, source order
    sweep_bytes = width * max(abs(s) * n for n, _, s in sweep)
    head = sweep[0]  # the sweep's outermost axis (the unit axis when no other is left)
    is_unit = at == len(axes)
    if sweep_bytes > 2 * SWEEP_BYTES and head[0] > 1:
        piece = divisor_near(head[0], max(1, head[0] * SWEEP_BYTES // sweep_bytes))
        if piece > 1 or not is_unit:
            axes.insert(at, [head[0] // piece, head[1] * piece, head[2] * piece])  # outside the line cut
            at += 1
            head[0] = piece
            big = piece if is_unit else big
    axes.insert(at, cut)
    rows = np.array([*axes, [big, int(d_steps[-2]), int(s_steps[-2])], [line, int(d_steps[-1]), si]], np.int64)
    return np.ascontiguousarray(rows[:, 0]), np.ascontiguousarray(rows[:, 1]), np.ascontiguousarray(rows[:, 2])


def _normalized(
    dst: np.ndarray[Any, Any], src: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Both views without size-1 axes, axes sorted by dst stride, axes contiguous in both merged."""
    merged = _merged_axes(dst.shape, dst.strides, src.strides)
    shape = tuple(a[0] for a in merged)
    return (
        as_strided(dst, shape=shape, strides=tuple(a[1] for a in merged)),
        as_strided(src, shape=shape, strides=tuple(a[2] for a in merged)),
    )


def _merged_axes(
    shape: Sequence[int], d_strides: Sequence[int], s_strides: Sequence[int]
) -> list[tuple[int, int, int]]:
    """(size, dst stride, src stride) of a copy's axes: size-1 axes dropped, sorted by dst stride, axes contiguous
    in both merged.

    >>> _merged_axes((2, 3, 4), (12, 4, 1), (1, 8, 2))
    [(2, 12, 1), (12, 1, 2)]
    """
    axes = sorted(((n, ds, ss) for n, ds, ss in zip(shape, d_strides, s_strides) if n != 1),
                  key=lambda axis: -abs(axis[1]))
    merged: list[tuple[int, int, int]] = []
    for n, ds, ss in axes:
        if merged and merged[-1][1] == ds * n and merged[-1][2] == ss * n:
            merged[-1] = (merged[-1][0] * n, ds, ss)
        else:
            merged.append((n, ds, ss))
    return merged


def _widened(
    d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """A run contiguous in both (the last axis) viewed as one element, so NumPy loops over the next axis."""
    if d.ndim == 0:
        return d, s
    e = d.itemsize
    width = d.shape[-1] * e
    if d.strides[-1] != e or s.strides[-1] != e or width > _WIDEN_BYTES or d.shape[-1] == 1:
        return d, s
    dtype = _STORAGE.get(width) or _void(width)
    return d.view(dtype)[..., 0], s.view(dtype)[..., 0]


def _looped_axes(shape: Sequence[int]) -> list[int]:
    """Short dst-minor axes (interleaves) to loop over in Python, so that NumPy's inner loop is long.

    NumPy's copy loops run along dst's most minor axis (axes are sorted by dst stride); while that axis is short,
    it is looped over here instead.
    """
    loop: list[int] = []
    rest = list(range(len(shape)))
    while len(rest) > 1 and shape[rest[-1]] < _SHORT_AXIS:
        if math.prod(shape[i] for i in loop) * shape[rest[-1]] > _MAX_LOOPS:
            break
        loop.append(rest.pop())
    return loop


def _copy_looped(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], loop: Sequence[int] | None = None) -> None:
    """Copy with the short dst-minor axes ``loop`` looped in Python, one cache block (of the outer axis) at a time."""
    if loop is None:
        loop = _looped_axes(d.shape)
    if not loop:
        np.copyto(d, s)
        return
    order = [*loop, *(i for i in range(d.ndim) if i not in loop)]
    d, s = d.transpose(order), s.transpose(order)
    k = len(loop)
    per = max(1, _BLOCK_BYTES // max(1, d.nbytes // d.shape[k]))
    for start in range(0, d.shape[k], per):
        block = (slice(None),) * k + (slice(start, start + per),)
        d_block, s_block = d[block], s[block]
        for index in product(*(range(n) for n in d.shape[:k])):
            np.copyto(d_block[index], s_block[index])


def _copy_staged(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any]) -> None:
    """A transposing copy through a small buffer in src order, block by block of dst's and src's outer axes.

    Reading src into the buffer runs along src's contiguous runs, writing dst from the buffer along dst's; the
    buffer's padded rows keep the gather free of cache-set conflicts.
    """
    p = 0
    q = max(range(d.ndim), key=lambda i: (abs(s.strides[i]), -i))
    n_p, n_q = d.shape[p], d.shape[q]
    per_index = d.nbytes // (n_p * (n_q if q != p else 1))
    budget = max(1, _TILE_BYTES // max(1, per_index))
    if q == p:
        bp = bq = min(n_p, budget)
    else:
        bp = min(n_p, max(1, math.isqrt(budget)))
        bq = min(n_q, max(1, budget // bp))
        bp = min(n_p, max(1, budget // bq))
    src_order = sorted(range(d.ndim), key=lambda i: -abs(s.strides[i]))
    shape = list(d.shape)
    shape[p], shape[q] = bp, bq
    buffer_shape = [shape[i] for i in src_order]
    if buffer_shape[-1] * d.itemsize >= 64:
        buffer_shape[-1] += max(1, 64 // d.itemsize)
    storage = np.empty(buffer_shape, d.dtype)
    back = tuple(np.argsort(src_order))
    loop = _looped_axes(shape)
    for p0 in range(0, n_p, bp):
        for q0 in range(0, n_q, bq) if q != p else (0,):
            where = [slice(None)] * d.ndim
            where[p] = slice(p0, p0 + bp)
            if q != p:
                where[q] = slice(q0, q0 + bq)
            d_block, s_block = d[tuple(where)], s[tuple(where)]
            buffer = storage[tuple(slice(0, s_block.shape[i]) for i in src_order)]
            np.copyto(buffer, s_block.transpose(src_order))
            _copy_looped(d_block, buffer.transpose(back), loop)
