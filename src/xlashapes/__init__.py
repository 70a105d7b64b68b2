"""xlashapes: XLA's array model — shapes, layouts, tiling, memory spaces, index math and physical bytes."""

from .dtypes import ELEMENT_TYPES, ElementType, element_type
from .errors import ParseError, ShapeError, XlaShapesError
from .layout import (
    COMBINE_DIMENSION,
    Layout,
    SplitConfig,
    default_layout,
    memory_space_name,
    tiled_dimensions,
    validate_layout,
)
from .shape import UNBOUNDED_SIZE, Shape, make_shape, opaque_shape, token_shape, tuple_shape
from .text import layout_text, parse_layout, parse_shape, shape_text

__version__ = "0.1.0"

__all__ = [
    "COMBINE_DIMENSION",
    "ELEMENT_TYPES",
    "UNBOUNDED_SIZE",
    "ElementType",
    "Layout",
    "ParseError",
    "Shape",
    "ShapeError",
    "SplitConfig",
    "XlaShapesError",
    "default_layout",
    "element_type",
    "layout_text",
    "make_shape",
    "memory_space_name",
    "opaque_shape",
    "parse_layout",
    "parse_shape",
    "shape_text",
    "tiled_dimensions",
    "token_shape",
    "tuple_shape",
    "validate_layout",
]
