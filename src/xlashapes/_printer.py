"""XLA's printer for shapes and layouts (public as :mod:`xlashapes.text`).

It lives below the value types: ``Layout.__str__`` and ``Shape.__str__`` import it, and it reads them through
the small protocols below, so neither ``layout``, ``shape`` nor ``text`` (whose parser builds Layouts and Shapes)
is imported here: no import cycle. A module inside the ``text`` package would not do, because importing it runs
``text/__init__`` and so the parser.

>>> layout_text(_Bare((1, 0), ((2, 2),)))
'{1,0:T(2,2)}'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from ._ints import INT64_MIN
from .dtypes import TOKEN_TYPE, TUPLE_TYPE, ElementType
from .tiling import COMBINE_DIMENSION


class PrintableSplitConfig(Protocol):
    """The fields of a split config the printer reads."""

    @property
    def dimension(self) -> int: ...
    @property
    def split_indices(self) -> tuple[int, ...]: ...


class PrintableLayout(Protocol):
    """The fields of a layout the printer reads (:class:`xlashapes.layout.Layout`)."""

    @property
    def minor_to_major(self) -> tuple[int, ...]: ...
    @property
    def tiles(self) -> tuple[tuple[int, ...], ...]: ...
    @property
    def tail_padding_alignment_in_elements(self) -> int: ...
    @property
    def index_primitive_type(self) -> ElementType | None: ...
    @property
    def pointer_primitive_type(self) -> ElementType | None: ...
    @property
    def element_size_in_bits(self) -> int: ...
    @property
    def memory_space(self) -> int: ...
    @property
    def split_configs(self) -> Sequence[PrintableSplitConfig]: ...
    @property
    def physical_shape(self) -> PrintableShape | None: ...
    @property
    def dynamic_shape_metadata_prefix_bytes(self) -> int: ...


class PrintableShape(Protocol):
    """The fields of a shape the printer reads (:class:`xlashapes.shape.Shape`)."""

    @property
    def element_type(self) -> ElementType: ...
    @property
    def dimensions(self) -> tuple[int, ...]: ...
    @property
    def dynamic_dimensions(self) -> tuple[bool, ...]: ...
    @property
    def layout(self) -> PrintableLayout | None: ...
    @property
    def tuple_shapes(self) -> Sequence[PrintableShape]: ...


class _Bare(NamedTuple):
    """A bare layout for the examples."""

    minor_to_major: tuple[int, ...]
    tiles: tuple[tuple[int, ...], ...] = ()
    tail_padding_alignment_in_elements: int = 1
    index_primitive_type: ElementType | None = None
    pointer_primitive_type: ElementType | None = None
    element_size_in_bits: int = 0
    memory_space: int = 0
    split_configs: tuple[PrintableSplitConfig, ...] = ()
    physical_shape: PrintableShape | None = None
    dynamic_shape_metadata_prefix_bytes: int = 0


def _tile_text(tile: tuple[int, ...]) -> str:
    return "(" + ",".join("*" if t == COMBINE_DIMENSION else str(t) for t in tile) + ")"


def _type_name(etype: ElementType) -> str:
    return etype.name if etype.is_integral else "invalid"


def layout_attributes_text(layout: PrintableLayout) -> str:
    """The part of a layout after ':' as XLA prints it (empty when every attribute is at its default).

    >>> layout_attributes_text(_Bare((0,), memory_space=1))
    'S(1)'
    """
    parts: list[str] = []
    if layout.tiles:
        parts.append("T" + "".join(_tile_text(t) for t in layout.tiles))
    if layout.tail_padding_alignment_in_elements != 1:
        parts.append(f"L({layout.tail_padding_alignment_in_elements})")
    if layout.index_primitive_type is not None:
        parts.append(f"#({_type_name(layout.index_primitive_type)})")
    if layout.pointer_primitive_type is not None:
        parts.append(f"*({_type_name(layout.pointer_primitive_type)})")
    if layout.element_size_in_bits != 0:
        parts.append(f"E({layout.element_size_in_bits})")
    if layout.memory_space != 0:
        parts.append(f"S({layout.memory_space})")
    if layout.split_configs:
        parts.append("SC" + "".join(
            f"({c.dimension}:{','.join(map(str, c.split_indices))})" for c in layout.split_configs))
    if layout.physical_shape is not None:
        parts.append(f"P({shape_text(layout.physical_shape)})")
    if layout.dynamic_shape_metadata_prefix_bytes > 0:
        parts.append(f"M({layout.dynamic_shape_metadata_prefix_bytes})")
    return "".join(parts)


def layout_text(layout: PrintableLayout) -> str:
    """A layout as XLA prints it: ``{3,2,0,1:T(8,128)(2,1)S(1)}``. Dim level types are not printed (XLA drops them).

    >>> layout_text(_Bare((3, 2, 0, 1), ((8, 128), (2, 1)), memory_space=1))
    '{3,2,0,1:T(8,128)(2,1)S(1)}'
    """
    attributes = layout_attributes_text(layout)
    order = ",".join(map(str, layout.minor_to_major))
    return "{" + order + (":" + attributes if attributes else "") + "}"


def dimension_text(size: int, dynamic: bool) -> str:
    """One dimension as XLA prints it: ``7``, ``<=7`` (bounded dynamic) or ``?`` (unbounded).

    >>> dimension_text(7, False), dimension_text(7, True), dimension_text(-2**63, True)
    ('7', '<=7', '?')
    """
    if size == INT64_MIN and dynamic:
        return "?"
    return f"<={size}" if dynamic else str(size)


def shape_text(shape: PrintableShape, *, print_layout: bool = True, index_comments: bool = False) -> str:
    """A shape as XLA prints it; ``index_comments`` adds the ``/*index=5*/`` marks HLO instructions carry.

    >>> from xlashapes import parse_shape
    >>> shape_text(parse_shape("(f32[2], s32[])"), print_layout=False)
    '(f32[2], s32[])'
    """
    if shape.element_type is TUPLE_TYPE:
        parts = []
        for i, sub in enumerate(shape.tuple_shapes):
            mark = f"/*index={i}*/" if index_comments and i and i % 5 == 0 else ""
            parts.append(mark + shape_text(sub, print_layout=print_layout, index_comments=index_comments))
        return "(" + ", ".join(parts) + ")"
    dims = ",".join(dimension_text(s, d) for s, d in zip(shape.dimensions, shape.dynamic_dimensions))
    text = f"{shape.element_type.name}[{dims}]"
    if print_layout and shape.layout is not None and shape.element_type is not TOKEN_TYPE:
        rendered = layout_text(shape.layout)
        if shape.dimensions or rendered != "{}":
            text += rendered
    return text
