"""XLA's shape and layout text: a tokenizer that follows XLA's HLO lexer, a parser and a printer."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from .dtypes import ELEMENT_TYPES, TEXT_TYPE_NAMES, TOKEN_TYPE, TUPLE_TYPE, ElementType
from .errors import ParseError
from .layout import COMBINE_DIMENSION, INT64_MAX, INT64_MIN, Layout, SplitConfig, default_layout, xla_layout_problem
from .shape import UNBOUNDED_SIZE, Shape

# ----------------------------------------------------------------------------------------------------
# Tokenizer
# ----------------------------------------------------------------------------------------------------

EOF = "end of text"
KEYWORDS = frozenset({
    "true", "false", "inf", "HloModule", "ENTRY", "ROOT", "FileLocations", "FileNames", "FunctionNames",
    "StackFrames", "maximal", "replicated", "manual", "last_tile_dim_replicate", "shard_as", "shard_like",
    "unknown", "unreduced",
})

_SKIP = re.compile(r"(?:[ \t\n\r]+|/\*.*?\*/|//[^\n\r]*)*", re.DOTALL)
_IDENT = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.\-]*")
_FLOAT = re.compile(r"-?(?:(?:\d+\.\d*|\d*\.\d+|\d+)[eE][+\-]?\d+|\d+\.\d*|\d*\.\d+)", re.ASCII)
_DIM_LABELS = re.compile(r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}")
_DXD = re.compile(r"[0-9]+(?:x[0-9]+)+", re.ASCII)
_PAD = re.compile(r"-?[0-9]+_-?[0-9]+(?:_[0-9]+)?(?:x-?[0-9]+_-?[0-9]+(?:_[0-9]+)?)*")
_INT = re.compile(r"-?\d+", re.ASCII)
_NAN_PAYLOAD = re.compile(r"\(0x[0-9a-fA-F]+\)")
_STRING = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'", re.DOTALL)
_PERCENT_NAME = re.compile(r"%([a-zA-Z_][a-zA-Z0-9_.\-]*)")
_PUNCTUATION = {
    "[": "[", "]": "]", "{": "{", "}": "}", "(": "(", ")": ")", ",": ",", ":": ":", "*": "*", "#": "#",
    "+": "+", "~": "~", "=": "=",
}


class Token:
    """One token: ``kind`` (punctuation itself, or int/ident/type/name/...), its ``value`` and ``start``."""

    __slots__ = ("end", "kind", "start", "value")

    def __init__(self, kind: str, value: object, start: int, end: int) -> None:
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.value!r}, {self.start})"


def describe(token: Token, text: str) -> str:
    """How an error message names a token: ``'F32'`` or ``end of text``."""
    if token.kind == "eof":
        return EOF
    return repr(text[token.start : token.end] or text[token.start : token.start + 1])


class Lexer:
    """XLA's HLO lexer: whitespace and ``/* */``/``//`` comments skipped; numbers, names, types, punctuation."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos

    def next(self) -> Token:
        """The next token (kind ``error`` for a character XLA's lexer rejects, ``eof`` at the end)."""
        text = self.text
        start = _SKIP.match(text, self.pos).end()  # type: ignore[union-attr]
        if start >= len(text):
            self.pos = start
            return Token("eof", None, start, start)
        char = text[start]
        if char == "/" and text.startswith("/*", start):
            self.pos = start + 1
            return Token("error", "unterminated comment", start, start + 2)
        token = self._lex_at(char, start)
        self.pos = token.end
        return token

    def _lex_at(self, char: str, start: int) -> Token:
        text = self.text
        if char.isascii() and (char.isalpha() or char == "_"):
            return self._identifier(start)
        if (char.isdigit() and char.isascii()) or char in "-?":
            if char == "-" and text.startswith("->", start):
                return Token("->", "->", start, start + 2)
            return self._number_or_pattern(char, start)
        if char == "<":
            if text.startswith("<=", start):
                return Token("<=", "<=", start, start + 2)
            return Token("error", "'<' must be followed by '='", start, start + 1)
        kind = _PUNCTUATION.get(char)
        if kind is not None:
            return Token(kind, kind, start, start + 1)
        if char == "%":
            match = _PERCENT_NAME.match(text, start)
            if match:
                return Token("name", match.group(1), start, match.end())
            return Token("error", "'%' must be followed by a name", start, start + 1)
        if char == "." and text.startswith("...", start):
            return Token("...", "...", start, start + 3)
        if char in "\"'":
            match = _STRING.match(text, start)
            if match:
                return Token("string", match.group(0), start, match.end())
            return Token("error", "unterminated string", start, start + 1)
        return Token("error", f"unexpected character {char!r}", start, start + 1)

    def _identifier(self, start: int) -> Token:
        text = self.text
        end = _IDENT.match(text, start).end()  # type: ignore[union-attr]
        word = text[start:end]
        following = text[end : end + 1]
        if following == ":":
            return Token("name", word, start, end + 1)
        if following == "=":
            return Token("attribute_name", word, start, end + 1)
        if word in TEXT_TYPE_NAMES:
            return Token("type", ELEMENT_TYPES[word], start, end)
        if word == "nan":
            if following == "(":
                match = _NAN_PAYLOAD.match(text, end)
                if not match:
                    return Token("error", "bad NaN payload", start, end)
                return Token("decimal", float("nan"), start, match.end())
            return Token("decimal", float("nan"), start, end)
        if word in KEYWORDS:
            return Token("keyword", word, start, end)
        match = _DIM_LABELS.match(text, start)
        if match:
            return Token("dim_labels", match.group(0), start, match.end())
        return Token("ident", word, start, end)

    def _number_or_pattern(self, char: str, start: int) -> Token:
        text = self.text
        match = _FLOAT.match(text, start)
        if match:
            return Token("decimal", float(match.group(0)), start, match.end())
        for kind, pattern in (("dim_labels", _DIM_LABELS), ("dxd", _DXD), ("pad", _PAD)):
            match = pattern.match(text, start)
            if match:
                return Token(kind, match.group(0), start, match.end())
        match = _INT.match(text, start)
        if match:
            digits = match.group(0)
            value = int(digits) if len(digits.lstrip("-").lstrip("0")) <= 19 else INT64_MAX + 1
            if INT64_MIN <= value <= INT64_MAX:
                return Token("int", value, start, match.end())
            shown = digits if len(digits) <= 30 else digits[:27] + "..."
            return Token("error", f"integer {shown} does not fit in int64", start, match.end())
        if text.startswith("-inf", start):
            return Token("neg_inf", float("-inf"), start, start + 4)
        if text.startswith("-nan", start):
            end = start + 4
            payload = _NAN_PAYLOAD.match(text, end)
            return Token("decimal", float("nan"), start, payload.end() if payload else end)
        if char == "?":
            return Token("?", "?", start, start + 1)
        return Token("error", f"unexpected character {char!r}", start, start + 1)


# ----------------------------------------------------------------------------------------------------
# Parser
# ----------------------------------------------------------------------------------------------------

MAX_TUPLE_DEPTH = 200
LAYOUT_ATTRIBUTE_ORDER = ("D", "T", "L", "#", "*", "E", "S", "SC", "P", "M")


class ShapeParser:
    """Recursive-descent parser for XLA shapes and layouts over a Lexer, with one token of lookahead."""

    __slots__ = ("lexer", "soft_error", "text", "token")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.lexer = Lexer(text, pos)
        self.token = self.lexer.next()
        self.soft_error: tuple[int, str] | None = None

    # ----- helpers -----
    def advance(self) -> Token:
        token = self.token
        self.token = self.lexer.next()
        return token

    def error(self, message: str, token: Token | None = None) -> ParseError:
        token = token or self.token
        if token.kind == "error":
            message = f"{message}; {token.value}"
        return ParseError(message, self.text, token.start)

    def expect(self, kind: str, message: str) -> Token:
        if self.token.kind != kind:
            raise self.error(f"{message}, found {describe(self.token, self.text)}")
        return self.advance()

    def peek_kind(self) -> str:
        saved = self.lexer.pos
        kind = self.lexer.next().kind
        self.lexer.pos = saved
        return kind

    def integer(self, what: str) -> int:
        token = self.expect("int", f"expected {what}")
        return token.value  # type: ignore[return-value]

    def int_list(self, open_: str, close: str, item: Callable[[], int], what: str) -> list[int]:
        self.expect(open_, f"expected {open_!r} to start {what}")
        values: list[int] = []
        if self.token.kind == close:
            self.advance()
            return values
        while True:
            values.append(item())
            if self.token.kind == ",":
                self.advance()
                continue
            self.expect(close, f"expected ',' or {close!r} in {what}")
            return values

    # ----- shapes -----
    def shape(self, in_tuple: bool = False, depth: int = 0) -> Shape:
        """shape ::= '(' [shape (',' shape)*] ')' | type '[' dims ']' [layout]"""
        token = self.token
        if token.kind == "(":
            if depth >= MAX_TUPLE_DEPTH:
                raise self.error(f"tuples nested more than {MAX_TUPLE_DEPTH} deep")
            self.advance()
            elements: list[Shape] = []
            if self.token.kind != ")":
                while True:
                    elements.append(self.shape(in_tuple=True, depth=depth + 1))
                    if self.token.kind != ",":
                        break
                    self.advance()
            self.expect(")", "expected ',' or ')' to end the tuple")
            return Shape(TUPLE_TYPE, tuple_shapes=tuple(elements))
        if token.kind != "type":
            raise self._element_type_error(token)
        self.advance()
        etype: ElementType = token.value  # type: ignore[assignment]
        sizes, dynamic, size_tokens = self.dimension_sizes()
        if not etype.is_array_type and sizes:
            raise self.error(f"{etype} takes no dimensions: write {etype}[]", size_tokens[0])
        layout: Layout | None = default_layout(len(sizes)) if etype.is_array_type else None
        if self.token.kind == "{" and self.peek_kind() in ("int", ":"):
            brace = self.token
            layout = self.layout()
            if not etype.is_array_type:
                raise self.error(f"{etype} has no layout", brace)
            if len(layout.minor_to_major) != len(sizes):
                raise self.error(
                    f"the layout lists {len(layout.minor_to_major)} dimensions in minor_to_major "
                    f"but the shape has {len(sizes)}", brace)
            shape = Shape(etype, tuple(sizes), tuple(dynamic), layout)
            problem = xla_layout_problem(layout, shape) if in_tuple else None
            if problem is not None:
                raise self.error(f"XLA validates layouts inside tuples, and this one is invalid: {problem}", brace)
            return shape
        return Shape(etype, tuple(sizes), tuple(dynamic), layout)

    def _element_type_error(self, token: Token) -> ParseError:
        word = self.text[token.start : token.end]
        if token.kind in ("ident", "keyword") and word.lower() in TEXT_TYPE_NAMES:
            return self.error(f"unknown element type {word!r}: type names are lowercase ({word.lower()})", token)
        if token.kind in ("ident", "keyword") and word == "tuple":
            return self.error("tuples are written with parentheses: (f32[2], s32[])", token)
        return self.error(
            "expected an element type (pred, s32, f32, bf16, ...) or '(' for a tuple, "
            f"found {describe(token, self.text)}",
            token)

    def dimension_sizes(self) -> tuple[list[int], list[bool], list[Token]]:
        """dims ::= '[' [dim (',' dim)*] ']' ; dim ::= int | '<=' int | '?'"""
        self.expect("[", "expected '[' after the element type")
        sizes: list[int] = []
        dynamic: list[bool] = []
        tokens: list[Token] = []
        if self.token.kind == "]":
            self.advance()
            return sizes, dynamic, tokens
        while True:
            token = self.token
            tokens.append(token)
            if token.kind == "?":
                self.advance()
                sizes.append(UNBOUNDED_SIZE)
                dynamic.append(True)
            else:
                is_dynamic = token.kind == "<="
                if is_dynamic:
                    self.advance()
                size_token = self.token
                size = self.integer("a dimension size (an integer, '<=N' or '?')")
                if size < 0:
                    raise self.error(f"dimension size {size} is negative", size_token)
                sizes.append(size)
                dynamic.append(is_dynamic)
            if self.token.kind == ",":
                self.advance()
                continue
            self.expect("]", "expected ',' or ']' in the dimension sizes")
            return sizes, dynamic, tokens

    # ----- layouts -----
    def layout(self) -> Layout:
        """layout ::= '{' [int (',' int)*] [':' D() T()... L() #() *() E() S() SC()... P() M()] '}'"""
        self.expect("{", "expected '{' to start a layout")
        minor_to_major: list[int] = []
        if self.token.kind == "int":
            while True:
                minor_to_major.append(self.integer("a dimension number"))
                if self.token.kind != ",":
                    break
                self.advance()
        fields: dict[str, object] = {}
        if self.token.kind == ":":
            self.advance()
            self._layout_attributes(fields)
        if self.token.kind != "}":
            raise self._layout_end_error(fields)
        self.advance()
        return Layout(tuple(minor_to_major), **fields)  # type: ignore[arg-type]

    def _layout_end_error(self, fields: dict[str, object]) -> ParseError:
        token = self.token
        word = self.text[token.start : token.end]
        if token.kind in ("ident", "#", "*") and word in LAYOUT_ATTRIBUTE_ORDER:
            return self.error(
                f"layout attribute {word} is repeated or out of order; XLA's order is "
                f"{' '.join(LAYOUT_ATTRIBUTE_ORDER)}")
        if self.soft_error is not None and self.soft_error[0] == token.start:
            return self.error(f"{self.soft_error[1]}, found {describe(token, self.text)}")
        if not fields and token.kind not in ("int", ",", ":", "eof"):
            found = describe(token, self.text)
            return self.error(f"expected a dimension number, ':' or '}}' in the layout, found {found}")
        return self.error(f"expected '}}' to end the layout, found {describe(token, self.text)}")

    def _is_attribute(self, word: str) -> bool:
        return self.token.kind == "ident" and self.token.value == word

    # XLA's layout parser ignores a failed attribute: it keeps what that attribute had parsed so far and
    # goes on with the next one (so `{0:T(2}` is the layout {0:T(2)}). The attribute readers below stop
    # quietly the same way, noting why in `soft_error`; only the final '}' is required.

    def _soft_stop(self, message: str) -> None:
        self.soft_error = (self.token.start, message)

    def _layout_attributes(self, fields: dict[str, object]) -> None:
        if self._is_attribute("D"):
            self.advance()
            self._dim_level_types()  # XLA's parser reads dim level types and discards them; so do we
        if self._is_attribute("T"):
            self.advance()
            fields["tiles"] = self._tiles()
        if self._is_attribute("L"):
            self.advance()
            token = self.token
            value = self._int_attribute("L")
            if value is not None and value < 1:
                raise self.error(f"tail padding alignment L({value}) must be at least 1", token)
            if value is not None:
                fields["tail_padding_alignment_in_elements"] = value
        if self.token.kind == "#":
            self.advance()
            self._set(fields, "index_primitive_type", self._type_attribute("#"))
        if self.token.kind == "*":
            self.advance()
            self._set(fields, "pointer_primitive_type", self._type_attribute("*"))
        if self._is_attribute("E"):
            self.advance()
            self._set(fields, "element_size_in_bits", self._int_attribute("E"))
        if self._is_attribute("S"):
            self.advance()
            self._set(fields, "memory_space", self._int_attribute("S"))
        if self._is_attribute("SC"):
            self.advance()
            fields["split_configs"] = self._split_configs()
        if self._is_attribute("P"):
            token = self.advance()
            self.expect("(", "expected '(' after P")
            self.shape()
            raise self.error("a physical shape P(...) is only allowed in a sparse layout", token)
        if self._is_attribute("M"):
            self.advance()
            self._set(fields, "dynamic_shape_metadata_prefix_bytes", self._int_attribute("M"))

    @staticmethod
    def _set(fields: dict[str, object], name: str, value: object) -> None:
        if value is not None:
            fields[name] = value

    def _int_attribute(self, name: str) -> int | None:
        if not self._eat("("):
            self._soft_stop(f"expected '(' after {name}")
            return None
        if self.token.kind != "int":
            self._soft_stop(f"expected an integer in {name}(...)")
            return None
        value: int = self.advance().value  # type: ignore[assignment]
        if not self._eat(")"):
            self._soft_stop(f"expected ')' to end {name}(...)")
        return value

    def _type_attribute(self, name: str) -> ElementType | None:
        # XLA tries '(', the type and ')' one by one and skips whichever is missing.
        self._eat("(")
        value: ElementType | None = self.advance().value if self.token.kind == "type" else None  # type: ignore[assignment]
        if not self._eat(")"):
            self._soft_stop(f"expected ')' to end {name}(...)")
        return value

    def _tiles(self) -> tuple[tuple[int, ...], ...]:
        tiles: list[tuple[int, ...]] = []
        while True:
            tile: list[int] = []
            complete = self._lenient_list(tile, self._tile_size, "a tile")
            tiles.append(tuple(tile))
            if not complete or self.token.kind != "(":
                return tuple(tiles)

    def _lenient_list(self, out: list[int], item: Callable[[], int | None], what: str, open_: str = "(") -> bool:
        """Read ``open_ item, item, ... )`` into ``out``; stop quietly where it breaks. True when complete."""
        if not self._eat(open_):
            self._soft_stop(f"expected {open_!r} to start {what}")
            return False
        if self._eat(")"):
            return True
        while True:
            value = item()
            if value is None:
                return False
            out.append(value)
            if self._eat(","):
                continue
            if self._eat(")"):
                return True
            self._soft_stop(f"expected ',' or ')' in {what}")
            return False

    def _tile_size(self) -> int | None:
        if self._eat("*"):
            return COMBINE_DIMENSION
        token = self.token
        if token.kind != "int":
            self._soft_stop("expected a tile size (an integer or '*')")
            return None
        size: int = self.advance().value  # type: ignore[assignment]
        if size < 0:
            raise self.error(f"tile size {size} is negative; tile sizes are positive or '*'", token)
        return size

    def _split_configs(self) -> tuple[SplitConfig, ...]:
        configs: list[SplitConfig] = []
        while True:
            if not self._eat("("):
                self._soft_stop("expected '(' to start a split config")
                return tuple(configs)
            if self.token.kind != "int":
                self._soft_stop("expected a split dimension")
                return tuple(configs)
            dimension: int = self.advance().value  # type: ignore[assignment]
            indices: list[int] = []
            complete = self._lenient_list(indices, self._split_index, "the split indices", open_=":")
            configs.append(SplitConfig(dimension, tuple(indices)))
            if not complete or self.token.kind != "(":
                return tuple(configs)

    def _split_index(self) -> int | None:
        if self.token.kind != "int":
            self._soft_stop("expected a split index")
            return None
        return self.advance().value  # type: ignore[return-value]

    def _dim_level_types(self) -> None:
        def item() -> int | None:
            if self.token.kind != "ident" or self.token.value not in ("D", "C", "S", "H"):
                self._soft_stop("expected a dim level type abbreviation (D, C, S or H)")
                return None
            self.advance()
            self._eat("+")
            self._eat("~")
            return 0

        self._lenient_list([], item, "the dim level types")

    def _eat(self, kind: str) -> bool:
        if self.token.kind == kind:
            self.advance()
            return True
        return False

    def finish(self, what: str) -> None:
        if self.token.kind != "eof":
            extra = ""
            if self.token.kind == "{":
                extra = " (a layout starts with a dimension number or ':', e.g. {1,0} or {:S(1)})"
            raise self.error(f"unexpected {describe(self.token, self.text)} after the {what}{extra}")


def _checked_text(text: object, what: str) -> str:
    if not isinstance(text, str):
        raise ParseError(f"{what} text must be a str, got {type(text).__name__}")
    if "\x00" in text:
        raise ParseError("NUL character in the text", text, text.index("\x00"))
    return text


_FAST_ARRAY = re.compile(
    r"(?P<type>[a-z][a-z0-9]*)\[(?P<dims>(?:<=)?\d{1,18}(?:,(?:<=)?\d{1,18})*)?\]"
    r"(?:(?P<layout>\{)(?P<mtm>\d{1,18}(?:,\d{1,18})*)?"
    r"(?P<colon>:(?:T(?P<tiles>(?:\((?:(?:\d{1,18}|\*)(?:,(?:\d{1,18}|\*))*)?\))+))?"
    r"(?:L\((?P<L>\d{1,18})\))?(?:E\((?P<E>\d{1,18})\))?(?:S\((?P<S>\d{1,18})\))?)?\})?",
    re.ASCII,
)
_FAST_TILE = re.compile(r"\(([^)]*)\)")


def _tile_values(group: str) -> tuple[tuple[int, ...], ...]:
    return tuple(
        tuple(COMBINE_DIMENSION if t == "*" else int(t) for t in body.split(",")) if body else ()
        for body in _FAST_TILE.findall(group)
    )


def fast_array_shape(text: str) -> Shape | None:
    """The common case without the tokenizer: a plain array shape with at most T, L, E, S attributes.

    Returns None for anything else (whitespace, comments, tuples, other attributes, errors), which the
    careful parser then reads; on what it accepts it gives exactly the careful parser's result.
    """
    match = _FAST_ARRAY.fullmatch(text)
    if match is None:
        return None
    etype = ELEMENT_TYPES.get(match["type"])
    if etype is None or not etype.is_array_type or match["type"] == "tuple":
        return None
    dims_text = match["dims"]
    items = dims_text.split(",") if dims_text else []
    dims = tuple(int(d[2:]) if d[0] == "<" else int(d) for d in items)
    dynamic = tuple(d[0] == "<" for d in items)
    if match["layout"] is None:
        return Shape.trusted(etype, dims, dynamic, default_layout(len(dims)))
    mtm_text = match["mtm"]
    if mtm_text is None and match["colon"] is None:
        return None  # '{}' is not a layout
    minor_to_major = tuple(int(d) for d in mtm_text.split(",")) if mtm_text else ()
    alignment = int(match["L"]) if match["L"] else 1
    if len(minor_to_major) != len(dims) or alignment < 1:
        return None
    layout = Layout.trusted(
        minor_to_major,
        tiles=_tile_values(match["tiles"]) if match["tiles"] else (),
        tail_padding_alignment_in_elements=alignment,
        element_size_in_bits=int(match["E"]) if match["E"] else 0,
        memory_space=int(match["S"]) if match["S"] else 0,
    )
    return Shape.trusted(etype, dims, dynamic, layout)


def fast_tuple_shape(text: str) -> Shape | None:
    """A flat tuple of plain arrays as XLA prints it (``(a, /*index=5*/b)``) without the tokenizer, or None."""
    inner = text[1:-1]
    nested = inner.startswith("(") or ", (" in inner or "*/(" in inner
    if not text.startswith("(") or not text.endswith(")") or nested:
        return None
    elements: list[Shape] = []
    for i, part in enumerate(inner.split(", ") if inner else ()):
        mark = f"/*index={i}*/"
        if i and i % 5 == 0 and part.startswith(mark):
            part = part[len(mark) :]
        element = fast_array_shape(part)
        if element is None or (element.layout is not None and xla_layout_problem(element.layout, element)):
            return None
        elements.append(element)
    return Shape(TUPLE_TYPE, tuple_shapes=tuple(elements))


def careful_parse_shape(text: str) -> Shape:
    """Parse shape text with the full tokenizer and parser (what ``parse_shape`` falls back to)."""
    parser = ShapeParser(_checked_text(text, "shape"))
    shape = parser.shape()
    parser.finish("shape")
    return shape


@lru_cache(maxsize=65536)
def parse_shape(text: str) -> Shape:
    """Parse XLA shape text; missing layouts get XLA's default.

    >>> str(parse_shape("f32[3,5]"))
    'f32[3,5]{1,0}'
    """
    if type(text) is str and text:
        shape = fast_tuple_shape(text) if text[0] == "(" else fast_array_shape(text)
        if shape is not None:
            return shape
    return careful_parse_shape(text)


def parse_layout(text: str) -> Layout:
    """Parse XLA layout text such as ``{1,0:T(8,128)(2,1)S(1)}``.

    >>> parse_layout("{1,0:T(8,128)}").tiles
    ((8, 128),)
    """
    parser = ShapeParser(_checked_text(text, "layout"))
    layout = parser.layout()
    parser.finish("layout")
    return layout


# ----------------------------------------------------------------------------------------------------
# Printer
# ----------------------------------------------------------------------------------------------------


def _tile_text(tile: tuple[int, ...]) -> str:
    return "(" + ",".join("*" if t == COMBINE_DIMENSION else str(t) for t in tile) + ")"


def _type_name(etype: ElementType) -> str:
    return etype.name if etype.is_integral else "invalid"


def layout_attributes_text(layout: Layout) -> str:
    """The part of a layout after ':' as XLA prints it (empty when every attribute is at its default)."""
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


def layout_text(layout: Layout) -> str:
    """A layout as XLA prints it: ``{3,2,0,1:T(8,128)(2,1)S(1)}``. Dim level types are not printed (XLA drops them)."""
    attributes = layout_attributes_text(layout)
    order = ",".join(map(str, layout.minor_to_major))
    return "{" + order + (":" + attributes if attributes else "") + "}"


def dimension_text(size: int, dynamic: bool) -> str:
    """One dimension as XLA prints it: ``7``, ``<=7`` (bounded dynamic) or ``?`` (unbounded)."""
    if size == UNBOUNDED_SIZE and dynamic:
        return "?"
    return f"<={size}" if dynamic else str(size)


def shape_text(shape: Shape, *, print_layout: bool = True, index_comments: bool = False) -> str:
    """A shape as XLA prints it; ``index_comments`` adds the ``/*index=5*/`` marks HLO instructions carry."""
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
