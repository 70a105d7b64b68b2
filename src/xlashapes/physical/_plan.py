"""A layout as one transpose: every physical dim as factors of logical dims, and copies between factor views."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise, product
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..layout import Layout
from ..tiling import COMBINE_DIMENSION, tiled_dimensions
from . import _copy as copies
from . import _dispatch as dispatch
from ._copy import STAGED_BLOCK, _copy, _normalized, fine_grained
from ._dispatch import Run, no_passes
from ._geometry import _STORAGE
from ._kinds import LINE

Chains = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class _Plan:
    """A layout as one transpose: each logical axis split into factors, the factors in physical order.

    ``extents`` are the logical dims followed by ``phantoms`` axes of size 1 (dims that tiles longer than the
    rank add); ``chains[axis]`` its factor sizes, major to minor (their product is the padded size);
    ``order[k]`` is the factor (numbered along the concatenated chains) of physical factor axis ``k``.
    """

    extents: tuple[int, ...]
    chains: Chains
    order: tuple[int, ...]
    phantoms: int

    @property
    def identity(self) -> bool:
        """True when the physical elements are the logical array in row-major order, with no padding."""
        return self.order == tuple(range(len(self.order))) and all(
            math.prod(chain) == n for chain, n in zip(self.chains, self.extents)
        )


class _Atom:
    """One factor of a logical axis while the plan is being built (mutable)."""

    __slots__ = ("axis", "size")

    def __init__(self, axis: int, size: int) -> None:
        self.axis = axis
        self.size = size


def _plan(dims: tuple[int, ...], layout: Layout) -> _Plan | None:
    """The factor plan of a layout, or None when a tile pads inside a dim or merges dims off a factor boundary."""
    return _cached_plan(dims, layout)  # layouts and shapes are hashable: normalized in their constructors


@lru_cache(maxsize=1024)
def _cached_plan(dims: tuple[int, ...], layout: Layout) -> _Plan | None:
    """``_new_plan`` through a cache."""
    return _new_plan(dims, layout)


def _new_plan(dims: tuple[int, ...], layout: Layout) -> _Plan | None:
    """The plan built by following every tile level on factors."""
    if math.prod(dims) == 0:
        return None
    sizes = layout.padded_dimensions if layout.padded_dimensions is not None else dims
    chains: list[list[_Atom]] = [[_Atom(d, sizes[d])] for d in range(len(dims))]
    extents = list(dims)

    def phantom() -> _Atom:
        atom = _Atom(len(chains), 1)
        chains.append([atom])
        extents.append(1)
        return atom

    physical: list[list[_Atom]] = [[chains[d][0]] for d in layout.major_to_minor]
    for tile in layout.tiles:
        k = len(tile)
        if k == 0:
            continue
        while len(physical) < k:
            physical.insert(0, [phantom()])
        head, covered = physical[: len(physical) - k], physical[len(physical) - k :]
        outers: list[list[_Atom]] = []
        inners: list[list[_Atom]] = []
        carry: list[_Atom] = []
        for atoms, t in zip(covered, tile):
            if t == COMBINE_DIMENSION:
                carry = carry + atoms
                continue
            split = _split_dim(carry + atoms, t, chains, phantom)
            if split is None:
                return None
            outers.append(split[0])
            inners.append(split[1])
            carry = []
        physical = head + outers + inners
    return _finished_plan(physical, chains, extents, dims, layout)


def _split_dim(
    atoms: list[_Atom], t: int, chains: list[list[_Atom]], phantom: Any
) -> tuple[list[_Atom], list[_Atom]] | None:
    """A dim's factors split into (outer, inner) with the inner ones making ``t``; None when that pads mid-dim."""
    rest = list(atoms) if atoms else [phantom()]
    inner: list[_Atom] = []
    covered = 1
    while rest and t % (covered * rest[-1].size) == 0:
        atom = rest.pop()
        inner.insert(0, atom)
        covered *= atom.size
    if covered == t:
        return rest, inner
    q = t // covered
    if not rest:  # the whole dim is smaller than the tile: pad its top factor
        top = inner[0]
        if chains[top.axis][0] is not top:
            return None
        top.size *= q
        return [], inner
    atom = rest[-1]
    if atom.size % q:
        if len(rest) != 1 or chains[atom.axis][0] is not atom:
            return None
        atom.size = -(-atom.size // q) * q
    low = _Atom(atom.axis, q)
    chain = chains[atom.axis]
    chain.insert(chain.index(atom) + 1, low)
    atom.size //= q
    return rest, [low, *inner]


def _finished_plan(
    physical: list[list[_Atom]], chains: list[list[_Atom]], extents: list[int], dims: tuple[int, ...], layout: Layout
) -> _Plan | None:
    """The immutable plan, checked against ``tiled_dimensions`` (None if they ever disagree)."""
    if tuple(math.prod(a.size for a in atoms) for atoms in physical) != tiled_dimensions(dims, layout):
        return None
    number: dict[int, int] = {}
    for chain in chains:
        for atom in chain:
            number[id(atom)] = len(number)
    order = tuple(number[id(atom)] for atoms in physical for atom in atoms)
    if sorted(order) != list(range(len(number))):
        return None
    frozen = tuple(tuple(atom.size for atom in chain) for chain in chains)
    return _Plan(tuple(extents), frozen, order, len(extents) - len(dims))


def _row_pitch(plan: _Plan) -> tuple[int, int] | None:
    """(axis, elements of a physical row) when the physical rows are that logical axis, padded at their end (its
    factors the innermost physical ones, in order: rows of its padded size, the valid elements first); else None.
    Other axes may be padded too (whole rows of padding).

    >>> _row_pitch(_plan((6, 100), Layout((1, 0), tiles=((1, 128),)))), _row_pitch(_plan((6, 100), Layout((1, 0))))
    ((1, 128), None)
    >>> _row_pitch(_plan((12, 100), Layout((1, 0), tiles=((8, 128),)))), _row_pitch(_plan((16, 200), Layout((1, 0),
    ...                                                                                     tiles=((8, 128),))))
    ((1, 128), None)
    """
    found = _innermost(plan)
    if found is None:
        return None
    axis, sizes, order = found
    first = sum(len(chain) for chain in plan.chains[:axis])
    own = [f for f in range(first, first + len(plan.chains[axis])) if sizes[f] > 1]
    pitch = math.prod(plan.chains[axis])
    return (axis, pitch) if order[-len(own) :] == own and pitch != plan.extents[axis] else None


def _innermost(plan: _Plan) -> tuple[int, list[int], list[int]] | None:
    """(the logical axis of the innermost physical factor, every factor's size, the physical order of the factors
    larger than 1), or None where no factor is (factors of 1 move no address).

    >>> _innermost(_plan((12, 100), Layout((1, 0), tiles=((8, 128),))))
    (1, [2, 8, 1, 128], [0, 1, 3])
    """
    sizes = [size for chain in plan.chains for size in chain]
    order = [f for f in plan.order if sizes[f] > 1]
    if not order:
        return None
    axis = next(a for a, chain in enumerate(plan.chains) if order[-1] < sum(len(c) for c in plan.chains[: a + 1]))
    return axis, sizes, order


def _plain_chains(extents: Sequence[int]) -> Chains:
    """Chains of an unsplit logical array: one factor per axis."""
    return tuple((n,) for n in extents)


def _physical_view(elements: np.ndarray[Any, Any], plan: _Plan) -> np.ndarray[Any, Any]:
    """The physical elements as the plan's factors in logical order (axis by axis, each chain major to minor)."""
    factor_sizes = [size for chain in plan.chains for size in chain]
    count = math.prod(factor_sizes)
    physical = elements[:count].reshape([factor_sizes[f] for f in plan.order])
    view: np.ndarray[Any, Any] = physical.transpose(np.argsort(plan.order))
    return view


# ----- boxes: the valid elements as strided blocks ---------------------------------------------------------------


Box = tuple[tuple[int, ...], tuple[int, ...]]


def _range_boxes(lo: int, hi: int, sizes: Sequence[int]) -> list[Box]:
    """Mixed-radix index range [lo, hi) as boxes (offsets, extents) over digits of ``sizes`` (major to minor).

    >>> _range_boxes(0, 13, (2, 8))
    [((0, 0), (1, 8)), ((1, 0), (1, 5))]
    """
    if lo >= hi:
        return []
    if not sizes:
        return [((), ())]
    below = math.prod(sizes[1:])
    lower = tuple(sizes[1:])
    first, last = lo // below, (hi - 1) // below
    if first == last:
        return [((first, *o), (1, *e)) for o, e in _range_boxes(lo - first * below, hi - first * below, lower)]
    boxes: list[Box] = []
    if lo % below:
        boxes += [((first, *o), (1, *e)) for o, e in _range_boxes(lo % below, below, lower)]
        first += 1
    end = hi // below
    if end > first:
        boxes.append(((first,) + (0,) * len(lower), (end - first, *lower)))
    if hi % below:
        boxes += [((end, *o), (1, *e)) for o, e in _range_boxes(0, hi % below, lower)]
    return boxes


def _box_slices(parts: Sequence[Box]) -> tuple[Any, ...]:
    """Index slices of one box per axis, concatenated (with ``...`` so that even 0-d views stay views)."""
    where = (*(slice(o, o + e) for offsets, extents in parts for o, e in zip(offsets, extents)), Ellipsis)
    return where


def _fill_padding(
    view: np.ndarray[Any, Any], plan: _Plan, pad: np.ndarray[Any, Any], skip: int = -1,
    boxes: Sequence[np.ndarray[Any, Any]] | None = None, run: Run | None = None,
) -> None:
    """Write ``pad`` to every element of the factor view that is outside the logical array; with ``skip``, but
    the padding of that axis within the other axes' valid ranges (written by the caller); ``boxes``: those of
    :func:`_padding_boxes`, found already; with ``run``, large boxes by the compiled kernel (:func:`_padding_runs`)."""
    for box in _padding_boxes(view, plan, skip) if boxes is None else boxes:
        if run is None or not _padding_runs(box, pad, run):
            np.copyto(box, pad)


PIECE = 1 << 14
"""Most bytes of padding a run is filled with at a time by the ``padding_runs`` kernel (its pattern's size)."""

SHORT_RUN = 16
"""Bytes of the runs under which a box of padding is left to NumPy: the kernel took 2.6 ns a run whatever its length
(f16 ``[19972,7,5,24]{0,2,1,3:T(8,128)(2,1)}``, the half words of the last row pairs: 8.8 ms, NumPy 3.6)."""


def compiled_padding(boxes: Sequence[np.ndarray[Any, Any]], run: Run) -> bool:
    """Whether the ``padding_runs`` kernel would write some of ``boxes`` (:func:`_padding_runs`).

    >>> compiled_padding([np.zeros((4, 8))[:, 2:]], Run(0, 1, numba_bytes=0)) == (dispatch.walker() is not None)
    True
    """
    return dispatch.walker() is not None and any(_kernel_box(box, _run_bytes(box), run) for box in boxes)


def _kernel_box(box: np.ndarray[Any, Any], length: int, run: Run) -> bool:
    """Whether a box of padding in runs of ``length`` bytes is the ``padding_runs`` kernel's to write: large enough
    for the compiled kernels, its runs ``SHORT_RUN`` bytes or longer, no negative strides."""
    return box.nbytes >= run.numba_bytes and length >= SHORT_RUN and min(box.strides, default=0) >= 0


def _padding_runs(box: np.ndarray[Any, Any], pad: np.ndarray[Any, Any], run: Run) -> bool:
    """``box[...] = pad`` by the ``padding_runs`` kernel over ``run``'s threads, a run (:func:`_runs_of`) at a time,
    whole lines streamed where the box is that large; False (nothing written) for boxes under ``run.numba_bytes`` or
    of runs under ``SHORT_RUN`` bytes, or without the compiled kernels."""
    length, outer = _runs_of(box)
    walk = dispatch.walker() if _kernel_box(box, length, run) else None
    if walk is None:
        return False
    shape = np.array([n for _, n in outer] or [1], np.int64)
    steps = np.array([stride for stride, _ in outer] or [0], np.int64)
    piece = min(length, PIECE)
    pattern = np.empty(piece + LINE, np.uint8)
    at = dispatch.address(pattern) + (-dispatch.address(pattern)) % LINE
    value = np.empty(1, box.dtype)
    value[0] = pad
    start = at - dispatch.address(pattern)
    pattern[start : start + piece] = np.tile(value.view(np.uint8), piece // box.itemsize)
    target = dispatch.address(box)
    stream = int(box.nbytes >= run.stream_bytes)

    def part(bounds: tuple[int, int]) -> None:
        walk.padding_runs(target, at, piece, length, shape, steps, bounds[0], bounds[1], stream,
                          np.empty(len(shape), np.int64))

    dispatch.run_parts(part, dispatch.parts(int(shape[0]), box.nbytes, run))
    return True


def _padding_boxes(view: np.ndarray[Any, Any], plan: _Plan, skip: int = -1) -> Iterator[np.ndarray[Any, Any]]:
    """The boxes of the factor view outside the logical array (as :func:`_fill_padding` writes them)."""
    valid = [_range_boxes(0, n, chain) for n, chain in zip(plan.extents, plan.chains)]
    invalid = [_range_boxes(n, math.prod(chain), chain) for n, chain in zip(plan.extents, plan.chains)]
    full = [[((0,) * len(chain), chain)] for chain in plan.chains]
    before = [full[k] if k == skip else valid[k] for k in range(len(plan.chains))]  # (the skipped axis whole)
    for axis in range(len(plan.chains)):
        if not invalid[axis] or axis == skip:
            continue
        for parts in product(*before[:axis], invalid[axis], *full[axis + 1 :]):
            yield view[_box_slices(parts)]


FINE_PADDING = 64
"""Bytes of padding runs under which padding written box by box is fine-grained (:func:`fine_padding`)."""


def fine_padding(view: np.ndarray[Any, Any], boxes: Sequence[np.ndarray[Any, Any]]) -> bool:
    """True when at least a sixteenth of the factor view is padding (its ``boxes``, as :func:`_padding_boxes` finds
    them) in runs (:func:`_run_bytes`) shorter than ``FINE_PADDING`` bytes (the rows of ``(p,1)`` sub-tiles past a
    dim that is not a multiple of ``p``, a byte in every word): written box by box, such padding takes NumPy element
    by element (u8 ``[5,100,500,128]{2,0,1,3:T(8,128)(4,1)}``: 30 of 40 ms; f16 ``[19972,7,5,24]{0,2,1,3:T(8,128)
    (2,1)}``, a ninth of it half words: 3.6 ms against 1.6 for the whole buffer). Less of it is not worth a pass over
    the whole buffer (legacy padding of one element a row: 1.6 -> 2.5x memcpy).

    >>> p = _plan((5, 64), Layout((1, 0), tiles=((8, 64), (4, 1))))
    >>> v = _physical_view(np.zeros(8 * 64, np.uint8), p)
    >>> fine_padding(v, list(_padding_boxes(v, p)))
    True
    >>> p = _plan((5, 64), Layout((1, 0), tiles=((8, 64),)))  # (three whole rows of padding)
    >>> v = _physical_view(np.zeros(8 * 64, np.uint8), p)
    >>> fine_padding(v, list(_padding_boxes(v, p)))
    False
    """
    fine = sum(box.nbytes for box in boxes if _run_bytes(box) < FINE_PADDING)
    return 16 * fine >= view.size * view.itemsize


def _run_bytes(box: np.ndarray[Any, Any]) -> int:
    """Bytes of the contiguous runs of ``box``: its axes that continue each other, from the smallest stride up (the
    padding columns of ``(2,1)`` sub-tiles: words of two rows, the columns after each other).

    >>> _run_bytes(np.zeros((6, 4, 8, 2), np.uint16)[:, :, 3:, :])
    20
    """
    return _runs_of(box)[0]


def _runs_of(box: np.ndarray[Any, Any]) -> tuple[int, list[tuple[int, int]]]:
    """:func:`_run_bytes` of ``box``, and its other axes (stride, extent), the outermost first.

    >>> _runs_of(np.zeros((6, 4, 8, 2), np.uint16)[:, :, 3:, :])
    (20, [(128, 6), (32, 4)])
    """
    run = box.itemsize
    axes = sorted((abs(stride), n) for n, stride in zip(box.shape, box.strides) if n > 1)
    while axes and axes[0][0] == run:
        run *= axes.pop(0)[1]
    return run, axes[::-1]


def _weights(chain: Sequence[int]) -> list[int]:
    """The logical stride of each factor: the product of the factors below it."""
    weights = [1] * len(chain)
    acc = 1
    for j in range(len(chain) - 1, -1, -1):
        weights[j] = acc
        acc *= chain[j]
    return weights


def _common_boundaries(chains: Sequence[Sequence[int]], n: int) -> tuple[int, ...] | None:
    """Factor boundaries (ascending weights below ``n``) refining all ``chains``, or None if there are none."""
    bounds = sorted({1} | {w for chain in chains for w in _weights(chain) if w < n})
    if any(hi % lo for lo, hi in pairwise(bounds)):
        return None
    return tuple(bounds)


def _refined_sizes(bounds: Sequence[int], n: int) -> tuple[int, ...]:
    """Factor sizes (major to minor) for boundaries ``bounds`` covering [0, n)."""
    sizes = [-(-n // bounds[-1])]
    sizes += [bounds[i + 1] // bounds[i] for i in range(len(bounds) - 2, -1, -1)]
    return tuple(sizes)


def _split_view(
    view: np.ndarray[Any, Any], chains: Chains, bounds: Sequence[Sequence[int]], extents: Sequence[int]
) -> np.ndarray[Any, Any]:
    """The factor view re-split at common boundaries (only in-range positions are ever indexed)."""
    shape: list[int] = []
    strides: list[int] = []
    first = 0
    for chain, axis_bounds, n in zip(chains, bounds, extents):
        weights = _weights(chain)
        kept = [(w, view.strides[first + j]) for j, w in enumerate(weights) if w < n]
        for bound, size in zip(reversed(axis_bounds), _refined_sizes(axis_bounds, n)):
            owner = next(((w, s) for w, s in kept if w <= bound), None)
            shape.append(size)
            strides.append(0 if owner is None else owner[1] * (bound // owner[0]))
        first += len(chain)
    return as_strided(view, shape=tuple(shape), strides=tuple(strides))


def padded_rows(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], pitch: int, pad: np.ndarray[Any, Any],
                run: Run) -> bool:
    """``d[...] = s`` for views of rows (``d`` 2-d, its rows ``pitch`` elements apart, each ending in padding: the
    elements up to the next row, or 3-d: groups of such rows; ``s`` 2-d, or 3-d: groups of rows, as many in all),
    the padding written too, by the ``padded_rows`` kernel over ``run``'s threads; False (nothing written) without
    the compiled kernels, below their size, or for rows longer than the kernel's scratch (``STAGED_BLOCK``: it
    stages whole rows)."""
    walk = dispatch.walker() if d.nbytes >= run.numba_bytes and d.itemsize in _STORAGE else None
    if walk is None or min(s.strides[:-1]) < 0 or min(d.strides[:-1]) < 0 or pitch * d.itemsize > STAGED_BLOCK:
        return False
    width = d.itemsize
    rows, length = math.prod(d.shape[:-1]), d.shape[-1]
    if rows == 0:
        return True
    d_inner, d_outer = (d.shape[1], d.strides[0] // width) if d.ndim == 3 else (rows, 0)
    nbytes = rows * pitch * width
    stream = int(copies.STREAM and nbytes >= run.stream_bytes)
    value = pad.reshape(1).view(_STORAGE[width])[0]
    inner, s_outer = (s.shape[1], s.strides[0] // width) if s.ndim == 3 else (rows, 0)
    target, source, s_pitch = dispatch.address(d), dispatch.address(s), s.strides[-2] // width
    end = source + sum((n - 1) * stride for n, stride in zip(s.shape, s.strides)) + width  # (past its last byte)

    def part(bounds: tuple[int, int]) -> None:
        room = np.empty(STAGED_BLOCK + LINE, np.uint8)
        scratch = dispatch.address(room) + (-dispatch.address(room)) % LINE
        walk.padded_rows(target, source, value, length, pitch, s_pitch, inner, s_outer, end, stream, scratch,
                         STAGED_BLOCK, bounds, d_inner, d_outer)

    dispatch.run_parts(part, dispatch.parts(rows, nbytes, run))
    return True


def cut_rows(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], run: Run) -> bool:
    """``d[...] = s`` for views of rows (``s`` 2-d: the first elements of rows back to back, each row whole in
    memory: the kernel reads the words that hold its elements; ``d`` 2-d, or 3-d: groups of rows) by the ``cut_rows``
    kernel over ``run``'s threads (:func:`padded_rows` the other way); False (nothing written) without the compiled
    kernels or below their size."""
    walk = dispatch.walker() if s.nbytes >= run.numba_bytes and d.itemsize in _STORAGE else None
    width = d.itemsize
    if walk is None or min(d.strides[:-1]) < 0 or s.strides[0] % width or s.strides[1] != width:
        return False
    rows, length = s.shape
    if rows == 0:
        return True
    inner, d_outer = (d.shape[1], d.strides[0] // width) if d.ndim == 3 else (rows, 0)
    target, source, d_pitch = dispatch.address(d), dispatch.address(s), d.strides[-2] // width
    value = np.zeros(1, _STORAGE[width])[0]

    def part(bounds: tuple[int, int]) -> None:
        walk.cut_rows(target, source, value, length, s.strides[0] // width, d_pitch, inner, d_outer, bounds)

    dispatch.run_parts(part, dispatch.parts(rows, s.nbytes, run))
    return True


def _padded_transfer(
    view: np.ndarray[Any, Any], plan: _Plan, source: np.ndarray[Any, Any], pad: np.ndarray[Any, Any], run: Run,
) -> bool:
    """Lay ``source`` (the logical array, with the plan's phantom axes) out into the factor view ``view`` with its
    padding, by the compiled kernel ``padded_rows``, when the physical rows are one axis padded at their end
    (:func:`_row_pitch`), or the rows of the tiles that cut that axis short (:func:`_tile_pitch`: the whole tiles'
    boxes copied), and the copy is one run per row (rows that follow each other on both sides once merged); the
    other axes' padding, whole rows, filled as before. False otherwise (the caller then writes every element)."""
    found = _row_pitch(plan) or _tile_pitch(plan)
    if found is None:
        return False
    axis, pitch = found
    boxes = [_normalized(d, s) for d, s in _transfer_boxes(view, plan.chains, source, _plain_chains(plan.extents),
                                                            plan.extents)]
    width = view.itemsize
    rows = [(d, s) for d, s in boxes if d.ndim and d.shape[-1] < pitch and d.strides[-1] == s.strides[-1] == width
            and (d.ndim == 1 or (d.strides[-2] == pitch * width and s.strides[-2] % width == 0))]
    whole = [(d, s) for d, s in boxes if d.ndim and d.shape[-1] == pitch and d.strides[-1] == width]  # (whole tiles)
    if not rows or len(rows) + len(whole) != len(boxes) or sum(d.nbytes for d, _ in rows) < run.numba_bytes:
        return False
    calls = sum(math.prod(d.shape[:-3]) for d, _ in rows)  # (a call a MiB at least, on average: as numba_bytes)
    if calls > 1 and calls * run.numba_bytes > sum(d.nbytes for d, _ in rows):
        return False  # (s32 [24,87,8,500]{3,1,0,2:T(8,128)} 'to', 384 calls of ~16 KiB, 2.3x memcpy against 1.2)
    rows = [piece for d, s in rows for piece in _row_groups(d, s, pitch)]
    each = replace(run, numba_bytes=0)  # (the rows of a tile row cut short too: a box of their own)
    if not all(padded_rows(d, s, pitch, pad, each) for d, s in rows):
        return False  # (the boxes then written again, every element, by the plan's own route)
    with no_passes(len(boxes) > 1):
        for d, s in whole:
            _copy(d, s, run)
    _fill_padding(view, plan, pad, skip=axis, run=run)  # (whole rows of padding: the other axes')
    return True


def _row_groups(d: np.ndarray[Any, Any], s: np.ndarray[Any, Any], pitch: int) -> list[tuple[np.ndarray[Any, Any],
                                                                                           np.ndarray[Any, Any]]]:
    """A box of rows ``pitch`` elements apart as the 2-d or 3-d boxes (groups of rows) :func:`padded_rows` takes: one
    row made 2-d, the outer dims past 3 split off (a box for each of their indices).

    >>> [d.shape for d, _ in _row_groups(np.zeros((2, 3, 4, 5))[..., :3], np.zeros((2, 3, 4, 3)), 5)]
    [(3, 4, 3), (3, 4, 3)]
    """
    if d.ndim == 1:
        return [(as_strided(d, (1, d.size), (pitch * d.itemsize, d.itemsize)),
                 as_strided(s, (1, s.size), (pitch * s.itemsize, s.strides[0])))]
    outer = d.shape[:-3]
    return [(d[index], s[index]) for index in np.ndindex(*outer)] if outer else [(d, s)]


def _tile_pitch(plan: _Plan) -> tuple[int, int] | None:
    """(axis, elements of a tile's row) when a logical axis is split into tiles' rows (its last factor the innermost
    physical one) and ends in a tile cut short: that tile's rows, the valid elements first, end in padding (laid out
    with it by the ``padded_rows`` kernel, the whole tiles copied: bf16 ``[N,1000]{1,0:T(8,128)}`` 'to', 512 MiB,
    1.89 -> 1.48x memcpy on a 2-core Intel Xeon, the last tiles' runs and their padding written apart before); else
    None.

    >>> [_tile_pitch(_plan((16, n), Layout((1, 0), tiles=((8, 128),)))) for n in (200, 256)]
    [(1, 128), None]
    """
    found = _innermost(plan)
    if found is None:
        return None
    axis, sizes, order = found
    last = sum(len(chain) for chain in plan.chains[: axis + 1]) - 1
    pitch = sizes[last]
    cut = plan.extents[axis] % pitch  # (and no whole tiles of padding past the one cut short)
    tiled = order[-1] == last and cut and math.prod(plan.chains[axis]) - plan.extents[axis] < pitch
    return (axis, pitch) if tiled else None


def _transfer(
    dst: np.ndarray[Any, Any], dst_chains: Chains, src: np.ndarray[Any, Any], src_chains: Chains,
    extents: Sequence[int], run: Run | None = None,
) -> None:
    """Copy every logical element from one factor view to another (their chains must have common boundaries). In a
    pred conversion, the copies of several boxes make their bytes canonical only where their kernels do it as they
    write them, the rest left to the conversion's single pass (each box's own pass went over a span of the whole
    output: pred ``[12,1000,256,10]{1,2,0,3:T(8,128)(4,1)}`` laid out took three)."""
    boxes = _transfer_boxes(dst, dst_chains, src, src_chains, extents)
    with no_passes(len(boxes) > 1):
        for d, s in boxes:
            _copy(d, s, run)


def _fine_transfer(
    dst: np.ndarray[Any, Any], dst_chains: Chains, src: np.ndarray[Any, Any], src_chains: Chains,
    extents: Sequence[int], compiled: bool = False,
) -> bool:
    """True when the largest copy of a :func:`_transfer` is fine-grained (:func:`._copy.fine_grained`; ``compiled``:
    on the compiled path)."""
    boxes = _transfer_boxes(dst, dst_chains, src, src_chains, extents)
    return fine_grained(*max(boxes, key=lambda pair: pair[0].size), compiled)


def _transfer_boxes(
    dst: np.ndarray[Any, Any], dst_chains: Chains, src: np.ndarray[Any, Any], src_chains: Chains,
    extents: Sequence[int],
) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """The (destination, source) views a :func:`_transfer` copies: one per box of valid elements."""
    bounds = []
    for a, b, n in zip(dst_chains, src_chains, extents):
        common = _common_boundaries((a, b), n)
        if common is None:
            raise AssertionError("transfer between factor views with no common refinement")  # callers check
        bounds.append(common)
    dst_split = _split_view(dst, dst_chains, bounds, extents)
    src_split = _split_view(src, src_chains, bounds, extents)
    merged = _unbroken_bounds((dst_split, src_split), bounds)
    if merged != bounds:
        bounds = merged
        dst_split = _split_view(dst, dst_chains, bounds, extents)
        src_split = _split_view(src, src_chains, bounds, extents)
    boxes = [_range_boxes(0, n, _refined_sizes(b, n)) for b, n in zip(bounds, extents)]
    return [(dst_split[where], src_split[where]) for where in map(_box_slices, product(*boxes))]


def _unbroken_bounds(views: Sequence[np.ndarray[Any, Any]], bounds: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The common boundaries of each axis without those that every view (split at ``bounds``) steps over evenly:
    tiles of one row side by side (``T(1,256)`` on a dim of 500) are then one run, not a box of whole tiles and a
    box of the rest (two passes over every row, each writing part of its lines: 'from' 4.7x memcpy, now 1.2)."""
    kept: list[tuple[int, ...]] = []
    first = 0
    for axis_bounds in bounds:
        m = len(axis_bounds)  # (factor m-1-i of the axis, major to minor, is the one of bound i)
        low = [axis_bounds[0]]
        for i in range(1, m):
            outer, inner = first + m - 1 - i, first + m - i
            if not all(v.strides[outer] == v.shape[inner] * v.strides[inner] for v in views):
                low.append(axis_bounds[i])
        kept.append(tuple(low))
        first += m
    return kept


def _window(
    view: np.ndarray[Any, Any], plan: _Plan, axis: int, low: int, high: int,
) -> tuple[np.ndarray[Any, Any], tuple[tuple[int, ...], ...], tuple[int, ...]]:
    """The window of the factor view ``view`` of ``plan`` holding rows [low, high) of ``axis`` (``low`` a multiple of
    :func:`_outer_rows`), with its chains and extents (for :func:`._plan._transfer`)."""
    chain = plan.chains[axis]
    top = _outer_rows(plan, axis)
    outer = (low // top, -(-high // top))
    start = sum(len(c) for c in plan.chains[:axis])  # the factor view's axis of that outer factor
    window = view[(slice(None),) * start + (slice(*outer),)]
    chains = (*plan.chains[:axis], (outer[1] - outer[0], *chain[1:]), *plan.chains[axis + 1 :])
    return window, chains, (*plan.extents[:axis], high - low, *plan.extents[axis + 1 :])


def _outer_rows(plan: _Plan, axis: int) -> int:
    """Rows of the outer factor of ``axis`` in ``plan``: windows start on its multiples."""
    return math.prod(plan.chains[axis][1:])
