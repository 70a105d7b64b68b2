"""XLA's shape and layout text: the HLO lexer, the shape parser and the printer.

* ``text._lexer``: XLA's HLO lexer (tokens, keywords), shared with the HLO parser.
* ``text._parser``: shapes and layouts from text (``parse_shape``, ``parse_layout``) and the fast path.
* the printer (``shape_text``, ``layout_text``) is ``xlashapes._printer``: ``Layout`` and ``Shape`` print
  through it, and it sits below them so that no module imports back (the parser builds Layouts and Shapes).

>>> str(parse_shape("f32[3,5]")), layout_text(parse_layout("{0,1:T(2,2)}"))
('f32[3,5]{1,0}', '{0,1:T(2,2)}')
"""

from .._printer import dimension_text, layout_attributes_text, layout_text, shape_text
from ._lexer import EOF, KEYWORDS, Lexer, Token, describe, integer_value, tokens
from ._parser import (
    LAYOUT_ATTRIBUTE_ORDER,
    MAX_TUPLE_DEPTH,
    SHAPE_CACHE,
    ShapeParser,
    careful_parse_shape,
    fast_array_shape,
    fast_tuple_shape,
    parse_layout,
    parse_shape,
)

__all__ = [
    "EOF",
    "KEYWORDS",
    "LAYOUT_ATTRIBUTE_ORDER",
    "MAX_TUPLE_DEPTH",
    "SHAPE_CACHE",
    "Lexer",
    "ShapeParser",
    "Token",
    "careful_parse_shape",
    "describe",
    "dimension_text",
    "fast_array_shape",
    "fast_tuple_shape",
    "integer_value",
    "layout_attributes_text",
    "layout_text",
    "parse_layout",
    "parse_shape",
    "shape_text",
    "tokens",
]
