"""The one tile walk: physical dims level by level, the geometry of each tile, element counts and byte math.

A layout's physical dims, major to minor: the logical dims (or the legacy ``padded_dimensions``) put in
``minor_to_major`` order reversed; then each tile in turn left-pads the dims with 1s to its length, merges every
``*`` dim into the next more minor one, pads each covered dim to a multiple of its tile size, splits it into
(outer, tile) and moves the tile parts to the minor end (the tiled-layout document). A tile touches only the last
``len(tile)`` dims, so the walk below edits a list in place: linear in the number of tile entries.

Byte counts, one function each:

* :func:`bytes_for_elements` ``(count, bits)``: ``count`` elements of ``bits`` bits, packed, rounded up to bytes.
* physical bytes (``Shape.byte_size``): :func:`physical_element_count` elements at :func:`element_bits`.
* stored logical bytes (XLA's ``ShapeUtil::ByteSizeOf`` / ``ByteSizeOfElements``, ``Shape.xla_byte_size_of``):
  the logical elements at :func:`element_bits`: ``E(n)`` when set, else whole bytes (``ByteSizeOfPrimitiveType``:
  an unpacked s4 takes 1 byte).
* data bytes (``Shape.data_byte_size``): the logical elements at the type's own bit width, densely packed
  (s4 takes half a byte, whatever the layout): what TPU memory reports call the unpadded size.

>>> tiled_dimensions((3, 5), _Plain((1, 0), ((2, 2),)))
(2, 3, 2, 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from ._ints import INT64_MAX, INT64_MIN, checked_product, checked_round_up
from .dtypes import ElementType
from .errors import ShapeError

COMBINE_DIMENSION = INT64_MIN
"""A ``*`` in a tile: that dimension is merged into the next more minor one before tiling."""


class TiledLayout(Protocol):
    """The layout fields the tile walk reads (a :class:`xlashapes.layout.Layout` has them all)."""

    @property
    def minor_to_major(self) -> tuple[int, ...]: ...
    @property
    def tiles(self) -> tuple[tuple[int, ...], ...]: ...
    @property
    def padded_dimensions(self) -> tuple[int, ...] | None: ...
    @property
    def tail_padding_alignment_in_elements(self) -> int: ...
    @property
    def element_size_in_bits(self) -> int: ...


class _Plain(NamedTuple):
    """A bare layout for the examples: minor_to_major and tiles."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    padded_dimensions: tuple[int, ...] | None = None
    tail_padding_alignment_in_elements: int = 1
    element_size_in_bits: int = 0


class TileGroup(NamedTuple):
    """One non-``*`` entry of a tile with the ``*`` entries just before it: the dims it merges and its size.

    >>> TileGroup((7, 8), 2).merged, TileGroup((7, 8), 2).outer
    (56, 28)
    """

    sizes: tuple[int, ...]
    tile: int

    @property
    def merged(self) -> int:
        """The size of the merged dim (the product of ``sizes``).

        >>> TileGroup((2, 3), 4).merged
        6
        """
        return math.prod(self.sizes)

    @property
    def outer(self) -> int:
        """How many tiles cover the merged dim: ``ceil(merged / tile)`` (the merged size when the tile is 0).

        >>> TileGroup((5,), 2).outer
        3
        """
        merged = self.merged
        return -(-merged // self.tile) if self.tile > 0 else merged


class TileStep(NamedTuple):
    """One tile applied to the physical dims of the previous level.

    ``pad`` 1s are put in front when the tile is longer than the dims; the last ``len(tile)`` dims are the covered
    ones; ``groups`` says how they merge. ``dropped`` counts trailing ``*`` dims that no entry closes (an invalid
    tile: layout validation refuses it; the walk drops them as the sizes do).

    >>> tile_step([3, 5], (2, 2)).groups
    (TileGroup(sizes=(3,), tile=2), TileGroup(sizes=(5,), tile=2))
    """

    tile: tuple[int, ...]
    pad: int
    groups: tuple[TileGroup, ...]
    dropped: int = 0

    @property
    def covered(self) -> int:
        """How many dims (after the padding) the tile covers: its length.

        >>> tile_step([3, 5], (2, 2)).covered
        2
        """
        return len(self.tile)


def tile_step(dims: list[int], tile: Sequence[int]) -> TileStep:
    """Apply ``tile`` to the physical ``dims`` in place (major to minor) and return its geometry.

    >>> dims = [3, 5]
    >>> _ = tile_step(dims, (2, 2))
    >>> dims
    [2, 3, 2, 2]
    """
    tile = tuple(tile)
    k = len(tile)
    if k == 0:
        return TileStep(tile, 0, ())
    pad = max(0, k - len(dims))
    if pad:
        dims[:0] = [1] * pad
    covered = dims[len(dims) - k :]
    del dims[len(dims) - k :]
    groups: list[TileGroup] = []
    members: list[int] = []
    for size, t in zip(covered, tile):
        members.append(size)
        if t != COMBINE_DIMENSION:
            groups.append(TileGroup(tuple(members), t))
            members = []
    dims.extend(g.outer for g in groups)
    dims.extend(g.tile for g in groups)
    return TileStep(tile, pad, tuple(groups), len(members))


def _tile_in_place(dims: list[int], tile: Sequence[int]) -> None:
    """``tile_step`` without the geometry record: the sizes' hot path (same arithmetic, no objects)."""
    k = len(tile)
    if k == 0:
        return
    if k > len(dims):
        dims[:0] = [1] * (k - len(dims))
    covered = dims[len(dims) - k :]
    del dims[len(dims) - k :]
    sizes: list[int] = []
    merged = 1
    for size, t in zip(covered, tile):
        merged *= size
        if t != COMBINE_DIMENSION:
            dims.append(-(-merged // t) if t > 0 else merged)
            sizes.append(t)
            merged = 1
    dims.extend(sizes)


def tile_steps(physical: Sequence[int], tiles: Sequence[Sequence[int]]) -> tuple[tuple[TileStep, ...], tuple[int, ...]]:
    """Every tile level's geometry and the final physical dims, from the untiled physical dims.

    >>> steps, final = tile_steps((4, 8), ((2, 4), (2, 1)))
    >>> len(steps), final
    (2, (2, 2, 1, 4, 2, 1))
    """
    dims = list(physical)
    steps = tuple(tile_step(dims, tile) for tile in tiles)
    return steps, tuple(dims)


def allocated_dimensions(dimensions: Sequence[int], layout: TiledLayout) -> tuple[int, ...]:
    """The sizes memory is allocated for, in logical order: legacy ``padded_dimensions`` when set, else the dims.

    >>> allocated_dimensions((2, 3), _Plain((0, 1), padded_dimensions=(3, 5)))
    (3, 5)
    """
    return layout.padded_dimensions if layout.padded_dimensions is not None else tuple(dimensions)


def untiled_dimensions(dimensions: Sequence[int], layout: TiledLayout) -> tuple[int, ...]:
    """The allocated dims in physical order, major to minor, before any tile.

    >>> untiled_dimensions((2, 3), _Plain((0, 1)))
    (3, 2)
    """
    sizes = allocated_dimensions(dimensions, layout)
    return tuple(sizes[d] for d in reversed(layout.minor_to_major))


def tiled_dimensions(dimensions: Sequence[int], layout: TiledLayout) -> tuple[int, ...]:
    """The physical dims, major to minor, after dimension order, legacy padding and every tile level.

    >>> tiled_dimensions((2, 7, 8, 11, 10), _Plain((4, 3, 2, 1, 0), ((COMBINE_DIMENSION, COMBINE_DIMENSION, 2,
    ...     COMBINE_DIMENSION, 3),)))
    (56, 37, 2, 3)
    """
    dims = list(untiled_dimensions(dimensions, layout))
    for tile in layout.tiles:
        _tile_in_place(dims, tile)
    return tuple(dims)


@dataclass(frozen=True)
class TileLevel:
    """One row of the tiling table: the tile applied (None for the untiled dims) and the dims after it.

    >>> tile_levels((3, 5), _Plain((1, 0), ((2, 2),)))[1]
    TileLevel(tile=(2, 2), dims=(2, 3, 2, 2))
    """

    tile: tuple[int, ...] | None
    dims: tuple[int, ...]


def tile_levels(dimensions: Sequence[int], layout: TiledLayout) -> tuple[TileLevel, ...]:
    """The untiled physical dims, then the dims after each tile in turn (the explain report's tiling table).

    The output holds every level's dims, so it grows with levels times rank; sizes use :func:`tiled_dimensions`.

    >>> [level.dims for level in tile_levels((3, 5), _Plain((1, 0), ((2, 2),)))]
    [(3, 5), (2, 3, 2, 2)]
    """
    dims = list(untiled_dimensions(dimensions, layout))
    levels = [TileLevel(None, tuple(dims))]
    for tile in layout.tiles:
        _tile_in_place(dims, tile)
        levels.append(TileLevel(tuple(tile), tuple(dims)))
    return tuple(levels)


def tile_split(physical: Sequence[int], tile: Sequence[int]) -> tuple[list[int], list[int], list[int]]:
    """What one tile covers: (dims it leaves alone, covered dims with ``*`` ones merged, their tile sizes).

    The dims are first left-padded with 1s to the tile's length; a ``*`` merges its dim into the next more minor.

    >>> tile_split([2, 7, 8], (COMBINE_DIMENSION, 4))
    ([2], [56], [4])
    """
    dims = list(physical)
    step = tile_step(dims, tile)
    head = dims[: len(dims) - 2 * len(step.groups)]
    return head, [g.merged for g in step.groups], [g.tile for g in step.groups]


def apply_tile(physical: Sequence[int], tile: Sequence[int]) -> list[int]:
    """One tiling step on physical dims (major to minor): combine ``*`` dims, pad, split, move tile dims minor.

    >>> apply_tile([3, 5], (2, 2))
    [2, 3, 2, 2]
    """
    dims = list(physical)
    _tile_in_place(dims, tile)
    return dims


def combined_tile_sizes(tile: Sequence[int]) -> tuple[int, ...]:
    """The tile's sizes without its ``*`` entries (the dims the tile really produces).

    >>> combined_tile_sizes((COMBINE_DIMENSION, 8, 128))
    (8, 128)
    """
    return tuple(t for t in tile if t != COMBINE_DIMENSION)


def physical_element_count(dimensions: Sequence[int], layout: TiledLayout) -> int:
    """Elements the buffer holds, padding included: tiled dims multiplied, then rounded up to L(n).

    >>> physical_element_count((3, 5), _Plain((1, 0), ((2, 2),)))
    24
    """
    count = checked_product(tiled_dimensions(dimensions, layout), "physical element count")
    return checked_round_up(count, layout.tail_padding_alignment_in_elements, "physical element count")


def element_bits(etype: ElementType, layout: TiledLayout | None) -> int:
    """Bits one element occupies in memory: ``E(n)`` when set, else the type's byte width in bits.

    >>> from xlashapes.dtypes import element_type
    >>> element_bits(element_type("s4"), None), element_bits(element_type("s4"), _Plain((0,), element_size_in_bits=4))
    (8, 4)
    """
    if layout is not None and layout.element_size_in_bits:
        return layout.element_size_in_bits
    return etype.byte_width * 8


def bytes_for_elements(count: int, bits: int) -> int:
    """Bytes for ``count`` elements of ``bits`` bits each, packed and rounded up to whole bytes.

    >>> bytes_for_elements(3, 4)
    2
    """
    total = -(-count * bits // 8)
    if total > INT64_MAX:
        raise ShapeError("byte size overflows int64")
    return total
