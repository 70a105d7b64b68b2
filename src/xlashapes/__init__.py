"""xlashapes: XLA's array model — shapes, layouts, tiling, memory spaces, index math and physical bytes."""

from .dtypes import ELEMENT_TYPES, ElementType, element_type
from .errors import ParseError, ShapeError, XlaShapesError
from .indexing import (
    dimension_stride,
    indices_in_memory_order,
    indices_in_memory_order_array,
    linear_index,
    multi_index,
    next_index,
)
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
    "dimension_stride",
    "element_type",
    "indices_in_memory_order",
    "indices_in_memory_order_array",
    "layout_text",
    "linear_index",
    "make_shape",
    "memory_space_name",
    "multi_index",
    "next_index",
    "opaque_shape",
    "parse_layout",
    "parse_shape",
    "shape_text",
    "tiled_dimensions",
    "token_shape",
    "tuple_shape",
    "validate_layout",
]
