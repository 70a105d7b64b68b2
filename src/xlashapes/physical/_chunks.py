"""Slabs: a layout's bytes cut into independent pieces along its most major logical dim.

When no tile level reaches the most major physical dim, or only tiles that split it (no ``*``, no new dims), a
range of its outer indices is one contiguous range of the buffer, and holds exactly the bytes of the same layout
on the matching rows of the logical array. Conversions then work one slab at a time: bounded temporaries, memory
maps touched one window at a time, files larger than memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..layout import Layout
from ..shape import Shape, make_shape
from ..tiling import COMBINE_DIMENSION, tiled_dimensions
from ._geometry import _Geometry, _geometry


@dataclass(frozen=True)
class Slabs:
    """How an array's buffer splits: ``outer`` slabs of ``weight`` indices of logical ``axis``, each ``elements``
    physical elements long; chunks start on multiples of ``step`` slabs (whole bytes, the ``L(n)`` grid)."""

    shape: Shape
    axis: int
    weight: int
    outer: int
    elements: int
    bits: int
    step: int

    def rows(self, first: int, last: int) -> tuple[int, int]:
        """The logical indices of ``axis`` in slabs [first, last)."""
        return first * self.weight, min(last * self.weight, self.shape.dimensions[self.axis])

    def byte_range(self, first: int, last: int) -> tuple[int, int]:
        """The bytes of slabs [first, last) in the whole buffer (the last slab also holds the tail padding)."""
        end = self.shape.byte_size() if last == self.outer else last * self.elements * self.bits // 8
        return first * self.elements * self.bits // 8, end

    def piece(self, first: int, last: int) -> Shape:
        """The shape whose bytes are exactly slabs [first, last): the same layout on fewer rows."""
        low, high = self.rows(first, last)
        dims = list(self.shape.dimensions)
        dims[self.axis] = high - low
        layout = self.shape.layout_or_default()
        if last != self.outer:
            layout = layout.replace(tail_padding_alignment_in_elements=1)
        return replace(self.shape, dimensions=tuple(dims), layout=layout)

    def chunks(self, budget: int) -> list[tuple[int, int]]:
        """Ranges of slabs of about ``budget`` bytes each (at least one step), covering all of them."""
        per = max(1, self.elements * self.bits // 8)
        size = max(self.step, budget // per // self.step * self.step)
        return [(first, min(self.outer, first + size)) for first in range(0, self.outer, size)]


def row_index(axis: int, low: int, high: int) -> tuple[Any, ...]:
    """The index selecting rows [low, high) of ``axis``.

    >>> row_index(1, 2, 5)
    (slice(None, None, None), slice(2, 5, None))
    """
    return (slice(None),) * axis + (slice(low, high),)


def chunk_steps(cut: Slabs, budget: int) -> Iterator[tuple[tuple[Any, ...], _Geometry, int, int]]:
    """Each chunk of ``cut`` of about ``budget`` bytes: the logical rows it covers, its geometry, and its byte range
    in the physical buffer."""
    for first, last in cut.chunks(budget):
        low, high = cut.rows(first, last)
        yield (row_index(cut.axis, low, high), _geometry(cut.piece(first, last)), *cut.byte_range(first, last))


def slabs(shape: Shape, bits: int) -> Slabs | None:
    """How ``shape`` (an array with a size, ``bits`` per element in memory) splits into slabs, or None.

    >>> from xlashapes import parse_shape
    >>> s = slabs(parse_shape("f32[20,300]{1,0:T(8,128)}"), 32)
    >>> s.axis, s.weight, s.outer, s.elements
    (0, 8, 3, 3072)
    """
    layout = shape.layout_or_default()
    dims = shape.dimensions
    if not dims or layout.padded_dimensions is not None or math.prod(dims) == 0:
        return None
    axis = layout.major_to_minor[0]
    weight, length = 1, len(dims)
    for tile in layout.tiles:
        if len(tile) > length:
            return None  # new dims in front: the most major one is no longer the logical axis
        if len(tile) == length:
            if tile[0] == COMBINE_DIMENSION:
                return None
            weight *= tile[0]
        length += sum(1 for t in tile if t != COMBINE_DIMENSION) - sum(1 for t in tile if t == COMBINE_DIMENSION)
    tiled = tiled_dimensions(dims, layout)
    outer = -(-dims[axis] // weight)
    if tiled[0] != outer:
        return None  # defensive: not the structure assumed
    elements = math.prod(tiled[1:])
    alignment = layout.tail_padding_alignment_in_elements
    step = 1
    while (step * elements * bits) % 8 or (step * elements) % alignment:
        step += 1
        if step > 64:
            return None
    return Slabs(shape, axis, weight, outer, elements, bits, step)


@dataclass(frozen=True)
class Bands:
    """How an untiled packed layout's buffer splits along the physical dim at ``depth`` (logical ``axis``): rows
    [low, high) of it are ``ranges`` byte ranges, one for each index of the dims outside it, ``inner`` elements of the
    dims inside it a row; chunks start on multiples of ``step`` rows (whole bytes)."""

    shape: Shape
    axis: int
    ranges: int
    inner: int
    bits: int
    step: int
    rows_per_chunk: int

    @property
    def extent(self) -> int:
        """The rows of the cut dim."""
        return self.shape.dimensions[self.axis]

    def chunks(self) -> list[tuple[int, int]]:
        """The rows [low, high) of each chunk, covering the dim."""
        size = self.rows_per_chunk
        return [(low, min(self.extent, low + size)) for low in range(0, self.extent, size)]

    def starts(self, low: int) -> range:
        """The first field of each of the ranges of a chunk starting at row ``low``."""
        band = self.extent * self.inner
        return range(low * self.inner, self.ranges * band, band)

    def piece(self, low: int, high: int) -> Shape:
        """The ``u8`` layout of rows [low, high) unpacked: a byte per element, the ranges one after another."""
        dims = list(self.shape.dimensions)
        dims[self.axis] = high - low
        return make_shape("u8", tuple(dims), layout=Layout(self.shape.layout_or_default().minor_to_major))


RANGE_COST = 16
"""What one range of a band costs against one run of the logical array read for it: each range is a kernel call of
its own (packing: about 12 us, the time memcpy takes for 200 KB; or the tiled kernels', :mod:`._permuted`), the runs
are all read in one call."""


PACKED_RANGE_COST = 2048
"""``RANGE_COST`` for the ranges of packed layouts' bands, measured: each is a ``_pack_at`` / ``_unpack_at`` call
whose Python work (about 20 us) costs what a memcpy of some 0.5 MB does; at 16, ``s4[7,24966,384]{0,1,2:E(4)}`` went
in 384 ranges of 10 KB a chunk, 17x memcpy both ways, against 5.8 / 4.9x in slabs."""


def band_cost(dims: tuple[int, ...], order: tuple[int, ...], depth: int, weight: int = RANGE_COST) -> int:
    """What a band at physical ``depth`` (``order``: the dims major to minor) costs: the larger of its ranges, weighed
    by ``weight``, and the runs of the logical array (C order) it reads, the product of the dims before its own.

    >>> band_cost((5, 6710886, 2), (2, 1, 0), 1), band_cost((5, 6710886, 2), (2, 1, 0), 0)
    (32, 33554430)
    """
    return max(weight * math.prod(dims[d] for d in order[:depth]), math.prod(dims[: order[depth]]))


def bands(shape: Shape, bits: int, budget: int) -> Bands | None:
    """How an untiled layout of ``bits``-bit fields splits into chunks of about ``budget`` elements, each a few byte
    ranges, when that reads the logical array in longer runs than its slabs do; else None.

    A chunk at depth ``t`` of the physical order is ``ranges`` ranges (the product of the dims outside it), and reads
    the logical rows of its dim: as many runs as the product of the logical dims before it. The depth taken has the
    fewest of the larger of the two (slabs are depth 0: one range, and runs of whole rows of the most major dim;
    ``s4[5,6710886,2]{0,1,2:E(4)}``'s slabs are its two planes, each read from all of the array, two bytes apart).

    >>> from xlashapes import parse_shape
    >>> cut = bands(parse_shape("s4[5,6710886,2]{0,1,2:E(4)}"), 4, 1 << 23)
    >>> cut.axis, cut.ranges, cut.inner, cut.rows_per_chunk
    (1, 2, 5, 838860)
    """
    layout = shape.layout_or_default()
    dims = shape.dimensions
    if layout.tiles or layout.padded_dimensions is not None or math.prod(dims) == 0 or len(dims) < 2:
        return None
    order = tuple(layout.major_to_minor)
    best: tuple[int, int, Bands] | None = None
    for depth, axis in enumerate(order):
        ranges = math.prod(dims[d] for d in order[:depth])
        inner = math.prod(dims[d] for d in order[depth + 1 :])
        step = 8 // math.gcd(8, inner * bits)
        if dims[axis] < 2 * step or ranges * inner * step > budget:
            continue  # (too few rows to cut, or a step of rows over the budget)
        cost = band_cost(dims, order, depth, PACKED_RANGE_COST)
        if best is None or cost < best[0]:
            rows = max(step, budget // (ranges * inner) // step * step)
            best = cost, depth, Bands(shape, axis, ranges, inner, bits, step, rows)
    return best[2] if best is not None and best[1] > 0 else None
