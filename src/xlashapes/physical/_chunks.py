"""Slabs: a layout's bytes cut into independent pieces along its most major logical dim.

When no tile level reaches the most major physical dim, or only tiles that split it (no ``*``, no new dims), a
range of its outer indices is one contiguous range of the buffer, and holds exactly the bytes of the same layout
on the matching rows of the logical array. Conversions then work one slab at a time: bounded temporaries, memory
maps touched one window at a time, files larger than memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..shape import Shape
from ..tiling import COMBINE_DIMENSION, tiled_dimensions


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
