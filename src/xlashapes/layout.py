"""XLA layouts: dimension order, tiles, padding, element size, memory space and the rest of LayoutProto.

A Layout is validated and normalized once, in its constructor: every number is an int64, every sequence a tuple,
element types are ElementTypes, ``padding_value`` is hashable (lists become tuples), so every Layout is hashable.
What a layout means for a given array (a permutation of its dims, positive tiles, ...) is judged against that
array by :func:`layout_problem`, once per Shape (see :class:`xlashapes.shape.Shape`). The tile walk and the
byte math live in :mod:`xlashapes.tiling`, the int64 checks in ``xlashapes._ints``; both stay importable here.

>>> str(Layout([1, 0], tiles=[(8, 128)], memory_space=1))
'{1,0:T(8,128)S(1)}'
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Protocol

import numpy as np

from ._ints import INT64_MAX, INT64_MIN, checked_int, checked_ints, checked_product, checked_sequence
from ._printer import layout_text
from .dtypes import UNSIGNED, ElementType, Kind, element_type
from .errors import ShapeError
from .tiling import (
    COMBINE_DIMENSION,
    apply_tile,
    bytes_for_elements,
    combined_tile_sizes,
    element_bits,
    physical_element_count,
    tile_split,
    tiled_dimensions,
)

__all__ = [  # the tile walk and the int64 checks moved to xlashapes.tiling and xlashapes._ints; still importable here
    "COMBINE_DIMENSION",
    "DIM_LEVEL_TYPES",
    "INT64_MAX",
    "INT64_MIN",
    "MEMORY_SPACE_NAMES",
    "Layout",
    "SplitConfig",
    "apply_tile",
    "bytes_for_elements",
    "checked_int",
    "checked_ints",
    "checked_product",
    "combined_tile_sizes",
    "default_layout",
    "element_bits",
    "layout_problem",
    "memory_space_name",
    "physical_element_count",
    "tile_split",
    "tiled_dimensions",
    "validate_layout",
    "xla_layout_problem",
]

DIM_LEVEL_TYPES = ("D", "C", "S", "H")
"""Dense, compressed, singleton and loose-compressed dimension level types (``D(...)``)."""

MEMORY_SPACE_NAMES = {
    0: "device memory (HBM), the default",
    1: "on-chip fast memory (VMEM on TPU)",
    5: "host memory",
}


def memory_space_name(space: int) -> str:
    """A person's name for memory space ``space``: ``S(1)`` is VMEM on TPU, ``S(5)`` host memory.

    >>> memory_space_name(5)
    'host memory'
    """
    return MEMORY_SPACE_NAMES.get(space, f"device-specific memory space {space}")


class ArrayLike(Protocol):
    """What layout validation reads of an array shape (a :class:`xlashapes.shape.Shape` has it)."""

    @property
    def element_type(self) -> ElementType: ...
    @property
    def dimensions(self) -> tuple[int, ...]: ...


@dataclass(frozen=True)
class SplitConfig:
    """``SC(dim:i,j,...)``: dimension ``dimension`` is split at ``split_indices``.

    >>> SplitConfig(0, [2, 4]).split_indices
    (2, 4)
    """

    dimension: int
    split_indices: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "dimension", checked_int(self.dimension, "split config dimension"))
        object.__setattr__(self, "split_indices", checked_ints(self.split_indices, "split indices"))


def _flag(value: Any, what: str) -> bool:
    """A bool field entry: True, False, 0, 1 (or a NumPy bool), else ShapeError naming ``what``."""
    if isinstance(value, (bool, np.bool_)) or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise ShapeError(f"{what} must be True or False, got {value!r}")


def _split_config(value: Any, position: int) -> SplitConfig:
    """A split config from a SplitConfig or a ``(dimension, split_indices)`` pair."""
    if isinstance(value, SplitConfig):
        return value
    items = checked_sequence(value, f"split_configs[{position}]")
    if len(items) not in (1, 2):
        raise ShapeError(f"split_configs[{position}] must be (dimension, split_indices), got {value!r}")
    return SplitConfig(*items)


def _optional_type(value: Any, what: str) -> ElementType | None:
    if value is None:
        return None
    try:
        return element_type(value)
    except ShapeError as err:
        raise ShapeError(f"{what}: {err}") from None


@dataclass(frozen=True, repr=False)
class Layout:
    """How an array's elements are laid out in memory; the fields of XLA's Layout/LayoutProto.

    >>> Layout((1, 0), tiles=((8, 128),)).tiles
    ((8, 128),)
    """

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    tail_padding_alignment_in_elements: int = 1
    index_primitive_type: ElementType | None = None
    pointer_primitive_type: ElementType | None = None
    element_size_in_bits: int = 0
    memory_space: int = 0
    split_configs: tuple[SplitConfig, ...] = ()
    dynamic_shape_metadata_prefix_bytes: int = 0
    dim_level_types: tuple[str, ...] = ()
    dim_unique: tuple[bool, ...] = ()
    dim_ordered: tuple[bool, ...] = ()
    padded_dimensions: tuple[int, ...] | None = None
    padding_value: Any = 0
    physical_shape: Any = None  # a Shape (sparse layouts only)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "minor_to_major", checked_ints(self.minor_to_major, "minor_to_major"))
        if type(self.tiles) is not tuple or self.tiles:
            tiles = checked_sequence(self.tiles, "tiles")
            set_(self, "tiles", tuple(checked_ints(t, f"tile {i}") for i, t in enumerate(tiles)))
        for name in ("tail_padding_alignment_in_elements", "element_size_in_bits", "memory_space",
                     "dynamic_shape_metadata_prefix_bytes"):
            set_(self, name, checked_int(getattr(self, name), name))
        if self.index_primitive_type is not None:
            set_(self, "index_primitive_type", _optional_type(self.index_primitive_type, "index_primitive_type"))
        if self.pointer_primitive_type is not None:
            set_(self, "pointer_primitive_type", _optional_type(self.pointer_primitive_type, "pointer_primitive_type"))
        if type(self.split_configs) is not tuple or self.split_configs:
            configs = checked_sequence(self.split_configs, "split_configs")
            set_(self, "split_configs", tuple(_split_config(c, i) for i, c in enumerate(configs)))
        levels = (self.dim_level_types, self.dim_unique, self.dim_ordered)
        if any(type(value) is not tuple or value for value in levels):
            self._normalize_dim_levels()
        if self.padded_dimensions is not None:
            set_(self, "padded_dimensions", checked_ints(self.padded_dimensions, "padded_dimensions"))
        if type(self.padding_value) is not int:
            set_(self, "padding_value", _hashable_padding(self.padding_value))
        if self.physical_shape is not None and not hasattr(self.physical_shape, "tuple_shapes"):
            raise ShapeError(f"physical_shape must be a Shape, got {type(self.physical_shape).__name__}")

    def __repr__(self) -> str:
        extra = "" if self.padded_dimensions is None else \
            f", padded_dimensions={self.padded_dimensions}, padding_value={self.padding_value!r}"
        levels = f", dim_level_types={self.dim_level_types}" if self.dim_level_types else ""
        return f"Layout({str(self)!r}{extra}{levels})"

    def _normalize_dim_levels(self) -> None:
        levels = tuple(str(t) for t in checked_sequence(self.dim_level_types, "dim_level_types"))
        for level in levels:
            if level not in DIM_LEVEL_TYPES:
                raise ShapeError(f"dim_level_types: {level!r} is not one of {', '.join(DIM_LEVEL_TYPES)}")
        object.__setattr__(self, "dim_level_types", levels)
        for name in ("dim_unique", "dim_ordered"):
            flags = tuple(_flag(v, f"{name}[{i}]") for i, v in enumerate(checked_sequence(getattr(self, name), name)))
            object.__setattr__(self, name, flags)

    def __str__(self) -> str:
        return layout_text(self)

    @classmethod
    def trusted(cls, minor_to_major: tuple[int, ...], tiles: tuple[tuple[int, ...], ...] = (),
                tail_padding_alignment_in_elements: int = 1, element_size_in_bits: int = 0,
                memory_space: int = 0) -> Layout:
        """A layout from int64 values already in canonical form (the parser's fast path); no checks.

        >>> Layout.trusted((1, 0), memory_space=1) == Layout((1, 0), memory_space=1)
        True
        """
        layout = object.__new__(cls)
        fields = layout.__dict__
        fields.update(_DEFAULTS)
        fields["minor_to_major"] = minor_to_major
        fields["tiles"] = tiles
        fields["tail_padding_alignment_in_elements"] = tail_padding_alignment_in_elements
        fields["element_size_in_bits"] = element_size_in_bits
        fields["memory_space"] = memory_space
        return layout

    def replace(self, **changes: Any) -> Layout:
        """A copy with some fields changed: ``layout.replace(memory_space=1)``.

        >>> str(Layout((1, 0)).replace(memory_space=1))
        '{1,0:S(1)}'
        """
        return replace(self, **changes)

    @property
    def major_to_minor(self) -> tuple[int, ...]:
        """Dimension numbers from the most major (slowest varying) to the most minor.

        >>> Layout((0, 2, 1)).major_to_minor
        (1, 2, 0)
        """
        return self.minor_to_major[::-1]

    @property
    def memory_space_name(self) -> str:
        """What ``memory_space`` means: HBM, VMEM, host memory or device-specific.

        >>> Layout((0,), memory_space=1).memory_space_name
        'on-chip fast memory (VMEM on TPU)'
        """
        return memory_space_name(self.memory_space)

    @property
    def is_dense(self) -> bool:
        """True unless some dimension has a sparse level type (C, S or H).

        >>> Layout((0,)).is_dense, Layout((0,), dim_level_types=("C",)).is_dense
        (True, False)
        """
        return all(level == "D" for level in self.dim_level_types)

    @property
    def is_tiled(self) -> bool:
        """True when the layout has at least one tile.

        >>> Layout((0,), tiles=((128,),)).is_tiled
        True
        """
        return bool(self.tiles)


_DEFAULTS = {f.name: f.default for f in fields(Layout) if f.name != "minor_to_major"}


def _hashable_padding(value: Any) -> Any:
    """A padding value as a hashable value: NumPy 0-d arrays as scalars, sequences as tuples; else ShapeError."""
    if isinstance(value, np.ndarray):
        return value[()] if value.ndim == 0 else tuple(_hashable_padding(v) for v in value)
    if isinstance(value, (list, tuple)):
        return tuple(_hashable_padding(v) for v in value)
    try:
        hash(value)
    except TypeError:
        raise ShapeError(f"padding_value must be a number, got {type(value).__name__}") from None
    return value


def default_layout(rank: int) -> Layout:
    """XLA's default layout for ``rank`` dimensions: major-to-minor, minor_to_major = (rank-1, ..., 0).

    >>> str(default_layout(3))
    '{2,1,0}'
    """
    return _DEFAULT_LAYOUTS[rank] if rank < len(_DEFAULT_LAYOUTS) else Layout(tuple(range(rank - 1, -1, -1)))


_DEFAULT_LAYOUTS = [Layout(tuple(range(rank - 1, -1, -1))) for rank in range(9)]


def validate_layout(layout: Layout, shape: ArrayLike) -> None:
    """Check ``layout`` against the array ``shape``; raise ShapeError naming the offending field.

    >>> from xlashapes import make_shape
    >>> validate_layout(Layout((1, 0)), make_shape("f32", [2, 3]))
    """
    problem = layout_problem(layout, shape)
    if problem is not None:
        raise ShapeError(f"layout {layout} of {shape.element_type}{list(shape.dimensions)}: {problem}")


def layout_problem(layout: Layout, shape: ArrayLike) -> str | None:
    """What is wrong with ``layout`` for ``shape``: XLA's own checks, then the ones xlashapes adds; None if nothing.

    >>> from xlashapes import parse_shape
    >>> layout_problem(Layout((0,)), parse_shape("f32[2,3]"))
    'minor_to_major has 1 entries but the shape has rank 2'
    """
    return xla_layout_problem(layout, shape) or _extra_layout_problem(layout, shape)


def xla_layout_problem(layout: Layout, shape: ArrayLike) -> str | None:
    """What XLA's LayoutUtil::ValidateLayoutForShape rejects (as jaxlib 0.10 does), or None.

    >>> from xlashapes import parse_shape
    >>> xla_layout_problem(Layout((0, 0)), parse_shape("f32[2,3]"))
    'minor_to_major [0, 0] is not a permutation of 0..1 (a dimension repeats)'
    """
    rank = len(shape.dimensions)
    mtm = layout.minor_to_major
    if len(mtm) != rank:
        return f"minor_to_major has {len(mtm)} entries but the shape has rank {rank}"
    if not _is_permutation(mtm):
        bad = next((d for d in mtm if not 0 <= d < rank), None)
        detail = f"dimension {bad} is out of range" if bad is not None else "a dimension repeats"
        return f"minor_to_major {list(mtm)} is not a permutation of 0..{rank - 1} ({detail})"
    if layout.tail_padding_alignment_in_elements < 1:
        return f"tail padding alignment L({layout.tail_padding_alignment_in_elements}) must be >= 1"
    for name in ("index_primitive_type", "pointer_primitive_type"):
        kind = getattr(layout, name)
        if kind is not None and layout.is_dense:
            return f"{name} ({kind}) is only allowed in a sparse layout"
        if kind is not None and kind.kind is not UNSIGNED:
            return f"{name} {kind} is not an unsigned integer type"
    if layout.physical_shape is not None and layout.is_dense:
        return "a physical shape is only allowed in a sparse layout"
    for i, tile in enumerate(layout.tiles):
        if not tile:
            return f"tile {i} is empty"
        for j, size in enumerate(tile):
            if size != COMBINE_DIMENSION and size < 1:
                return f"tile {i} dimension {j} is {size}; tile sizes must be positive or '*'"
    if layout.element_size_in_bits < 0:
        return f"element size E({layout.element_size_in_bits}) must be >= 0"
    return _split_config_problem(layout, shape)


def _is_permutation(order: tuple[int, ...]) -> bool:
    """True when ``order`` holds each of 0 .. len-1 once (linear time)."""
    rank = len(order)
    seen = bytearray(rank)
    for d in order:
        if not 0 <= d < rank or seen[d]:
            return False
        seen[d] = 1
    return True


def _split_config_problem(layout: Layout, shape: ArrayLike) -> str | None:
    seen: set[int] = set()
    rank = len(shape.dimensions)
    for config in layout.split_configs:
        position = config.dimension
        if not 0 <= position < rank or position in seen:
            return (f"split config dimension {position} is out of range or repeated "
                    "(it counts physical dims, major first)")
        seen.add(position)
        size = shape.dimensions[layout.minor_to_major[rank - 1 - position]]
        previous = 0
        for index in config.split_indices:
            if not previous < index < size:
                return (f"split indices {list(config.split_indices)} of physical dimension {position} "
                        f"must increase strictly within 1..{size - 1}")
            previous = index
    return None


def _extra_layout_problem(layout: Layout, shape: ArrayLike) -> str | None:
    bits = layout.element_size_in_bits
    if 0 < bits < shape.element_type.bits and not (shape.element_type.kind is Kind.PRED and bits == 1):
        return f"element size E({bits}) is smaller than {shape.element_type}'s {shape.element_type.bits} bits"
    for i, tile in enumerate(layout.tiles):
        if tile[-1] == COMBINE_DIMENSION:
            return f"tile {i} ends in '*', which has no more minor dimension to merge into"
    if layout.memory_space < 0:
        return f"memory space S({layout.memory_space}) must be >= 0"
    if layout.dynamic_shape_metadata_prefix_bytes < 0:
        return f"M({layout.dynamic_shape_metadata_prefix_bytes}) must be >= 0"
    for name in ("dim_level_types", "dim_unique", "dim_ordered"):
        values = getattr(layout, name)
        if values and len(values) != len(shape.dimensions):
            return f"{name} has {len(values)} entries but the shape has rank {len(shape.dimensions)}"
    if not layout.is_dense and layout.tiles:
        return "a sparse layout cannot have tiles"
    return _padding_problem(layout, shape)


def _padding_problem(layout: Layout, shape: ArrayLike) -> str | None:
    padded = layout.padded_dimensions
    if padded is None:
        return None
    if len(padded) != len(shape.dimensions):
        return f"padded_dimensions has {len(padded)} entries but the shape has rank {len(shape.dimensions)}"
    for dim, (size, pad) in enumerate(zip(shape.dimensions, padded)):
        if pad < size:
            return f"padded_dimensions[{dim}] = {pad} is smaller than dimension {dim} = {size}"
    return None


