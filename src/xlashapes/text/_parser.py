"""XLA's shape and layout text parser: a recursive-descent parser over the lexer, and a fast path for the
common printed forms.

What XLA's parser accepts, this one accepts, with the same meaning (tested differentially against XLA):
layouts are checked inside tuples only, as XLA does. A top-level layout that XLA accepts but that means nothing
(``f32[2]{5}``, ``T(0)``, ``E(-3)``) is kept: the shape prints as XLA prints it, and its sizes, index math and
``validate()`` raise ShapeError naming the field. ``M(n)`` with ``n <= 0`` is read as no ``M`` (XLA prints it
so). Integers may have leading zeros (``f32[0002]`` is ``f32[2]``, as in XLA).

>>> str(parse_shape("f32[3,5]{1,0:T(2,2)}"))
'f32[3,5]{1,0:T(2,2)}'
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Callable

from ..dtypes import ELEMENT_TYPES, TEXT_TYPE_NAMES, TUPLE_TYPE, ElementType, hlo_name_for
from ..errors import ParseError
from ..layout import Layout, SplitConfig, default_layout, xla_layout_problem
from ..shape import UNBOUNDED_SIZE, Shape
from ..tiling import COMBINE_DIMENSION
from ._lexer import Lexer, Token, describe

MAX_TUPLE_DEPTH = 200
LAYOUT_ATTRIBUTE_ORDER = ("D", "T", "L", "#", "*", "E", "S", "SC", "P", "M")


# Long runs that the parser reads in one step instead of token by token (linear either way, but a 1 MB list of
# dimensions should not take a second). Each pattern only matches where every item is followed by ',' or the
# closing bracket, so no item could be read as a longer token (1x2, 1.5, 01_io->01, ??_??->??).
_PLAIN_DIMS = re.compile(r"\[((?:(?:<=)?[0-9]{1,18}|\?)(?:,(?:(?:<=)?[0-9]{1,18}|\?))*)\]")
_PLAIN_ORDER = re.compile(r"\{([0-9]{1,18}(?:,[0-9]{1,18})*)(?=[:}])")
_PLAIN_TILES = re.compile(r"(?:\((?:(?:[0-9]{1,18}|\*)(?:,(?:[0-9]{1,18}|\*))*)?\))+")


class ShapeParser:
    """Recursive-descent parser for XLA shapes and layouts over a Lexer, with one token of lookahead.

    >>> parser = ShapeParser("f32[2] rest")
    >>> str(parser.shape()), parser.token.value
    ('f32[2]{0}', 'rest')
    """

    __slots__ = ("lexer", "soft_error", "text", "token")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.lexer = Lexer(text, pos)
        self.token = self.lexer.next()
        self.soft_error: tuple[int, str] | None = None

    # ----- helpers -----
    def advance(self) -> Token:
        """The current token, moving on to the next one.

        >>> ShapeParser("f32[2]").advance().kind
        'type'
        """
        token = self.token
        self.token = self.lexer.next()
        return token

    def error(self, message: str, token: Token | None = None) -> ParseError:
        """A ParseError at ``token`` (default: the current one), with the lexer's reason for an error token.

        >>> ShapeParser("f32").error("oops").position
        0
        """
        token = token or self.token
        if token.kind == "error":
            message = f"{message}; {token.value}"
        return ParseError(message, self.text, token.start)

    def expect(self, kind: str, message: str) -> Token:
        """The current token if it is ``kind`` (moving on), else ParseError ``message``.

        >>> ShapeParser("[").expect("[", "expected '['").kind
        '['
        """
        if self.token.kind != kind:
            raise self.error(f"{message}, found {describe(self.token, self.text)}")
        return self.advance()

    def _plain(self, pattern: re.Pattern[str], kind: str) -> re.Match[str] | None:
        """When the current token is ``kind`` and ``pattern`` matches from it, skip past the match and return it.

        The patterns only match text that the token-by-token rules read the same way (see ``_PLAIN_DIMS``).
        """
        if self.token.kind != kind:
            return None
        match = pattern.match(self.text, self.token.start)
        if match is not None:
            self.lexer.pos = match.end()
            self.token = self.lexer.next()
        return match

    def peek_kind(self) -> str:
        """The kind of the token after the current one, without moving.

        >>> ShapeParser("{1,0}").peek_kind()
        'int'
        """
        saved = self.lexer.pos
        kind = self.lexer.next().kind
        self.lexer.pos = saved
        return kind

    def integer(self, what: str) -> int:
        """The current int token's value (moving on), else ParseError naming ``what``.

        >>> ShapeParser("42").integer("a size")
        42
        """
        token = self.expect("int", f"expected {what}")
        return token.value  # type: ignore[return-value]

    def int_list(self, open_: str, close: str, item: Callable[[], int], what: str) -> list[int]:
        """``open_ item, item, ... close`` read with ``item``; ParseError naming ``what`` where it breaks.

        >>> p = ShapeParser("{1,2}")
        >>> p.int_list("{", "}", lambda: p.integer("a number"), "a list")
        [1, 2]
        """
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
        """shape ::= '(' [shape (',' shape)*] ')' | type '[' dims ']' [layout]

        >>> ShapeParser("(f32[2], s32[])").shape()
        Shape('(f32[2]{0}, s32[])')
        """
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
            shape = Shape.trusted(etype, tuple(sizes), tuple(dynamic), layout)
            problem = xla_layout_problem(layout, shape) if in_tuple else None
            if problem is not None:
                raise self.error(f"XLA validates layouts inside tuples, and this one is invalid: {problem}", brace)
            return shape
        if layout is None:
            return Shape(etype)
        return Shape.trusted(etype, tuple(sizes), tuple(dynamic), layout)

    def _element_type_error(self, token: Token) -> ParseError:
        word = self.text[token.start : token.end]
        if token.kind in ("ident", "keyword") and word.lower() in TEXT_TYPE_NAMES:
            return self.error(f"unknown element type {word!r}: type names are lowercase ({word.lower()})", token)
        suggested = hlo_name_for(word) if token.kind in ("ident", "keyword") else None
        if suggested is not None:
            return self.error(f"unknown element type {word!r}: shape text uses XLA's names; write {suggested}", token)
        if token.kind in ("ident", "keyword") and word == "tuple":
            return self.error("tuples are written with parentheses: (f32[2], s32[])", token)
        return self.error(
            "expected an element type (pred, s32, f32, bf16, ...) or '(' for a tuple, "
            f"found {describe(token, self.text)}",
            token)

    def dimension_sizes(self) -> tuple[list[int], list[bool], list[Token]]:
        """dims ::= '[' [dim (',' dim)*] ']' ; dim ::= int | '<=' int | '?'

        >>> ShapeParser("[2,<=3,?]").dimension_sizes()[:2]
        ([2, 3, -9223372036854775808], [False, True, True])
        """
        plain = self._plain(_PLAIN_DIMS, "[")
        if plain is not None:  # no spaces, comments or errors: the same tokens, read in one step
            items = plain.group(1).split(",")
            first = Token("dimension", None, plain.start(1), plain.start(1))
            return ([UNBOUNDED_SIZE if d == "?" else int(d[2:]) if d[0] == "<" else int(d) for d in items],
                    [d[0] in "?<" for d in items], [first])
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
        """layout ::= '{' [int (',' int)*] [':' D() T()... L() #() *() E() S() SC()... P() M()] '}'

        >>> ShapeParser("{1,0:T(8,128)}").layout().tiles
        ((8, 128),)
        """
        plain = self._plain(_PLAIN_ORDER, "{")
        if plain is not None:  # the dimension numbers without spaces or comments, read in one step
            minor_to_major = [int(d) for d in plain.group(1).split(",")]
        else:
            self.expect("{", "expected '{' to start a layout")
            minor_to_major = []
        if plain is None and self.token.kind == "int":
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
            prefix = self._int_attribute("M")
            if prefix is not None and prefix > 0:  # XLA prints M(n) only for n > 0: read M(-1) as no M
                fields["dynamic_shape_metadata_prefix_bytes"] = prefix

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
        plain = self._plain(_PLAIN_TILES, "(")
        if plain is not None:  # complete tiles without spaces or comments, read in one step
            tiles.extend(_tile_values(plain.group(0)))
            if self.token.kind != "(":
                return tuple(tiles)
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
        """ParseError unless the text ends here (``what`` names what was read).

        >>> p = ShapeParser("f32[2] f32[3]")
        >>> _ = p.shape()
        >>> p.finish("shape")
        Traceback (most recent call last):
        xlashapes.errors.ParseError: unexpected 'f32' after the shape (at position 7)
        ...
        """
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

    >>> fast_array_shape("f32[2]{0:T(2)}"), fast_array_shape("f32[ 2 ]")
    (Shape('f32[2]{0:T(2)}'), None)
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
    """A flat tuple of plain arrays as XLA prints it (``(a, /*index=5*/b)``) without the tokenizer, or None.

    >>> fast_tuple_shape("(f32[2]{0}, s32[])")
    Shape('(f32[2]{0}, s32[])')
    """
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
    """Parse shape text with the full tokenizer and parser (what ``parse_shape`` falls back to); no cache.

    >>> str(careful_parse_shape("f32[ 2 ]"))
    'f32[2]{0}'
    """
    parser = ShapeParser(_checked_text(text, "shape"))
    shape = parser.shape()
    parser.finish("shape")
    return shape


class _ShapeCache:
    """The shapes of recently parsed texts: least recently used first out, bounded by entries and by characters.

    Only texts up to ``longest`` characters are kept, at most ``entries`` of them and ``characters`` in all: a
    Shape takes a few dozen bytes per character of its text, so the memory stays bounded whatever is parsed.
    """

    def __init__(self, entries: int, characters: int, longest: int) -> None:
        self.entries = entries
        self.characters = characters
        self.longest = longest
        self._shapes: OrderedDict[str, Shape] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, text: str) -> Shape | None:
        shape = self._shapes.get(text)
        if shape is not None:
            self._touch(text)
        return shape

    def _touch(self, text: str) -> None:
        """Mark ``text`` as just used (a single C call: OrderedDict's own methods need no lock under the GIL)."""
        try:
            self._shapes.move_to_end(text)
        except KeyError:  # evicted by another thread in between
            pass

    def put(self, text: str, shape: Shape) -> None:
        if len(text) > self.longest:
            return
        with self._lock:
            if text in self._shapes:
                return
            self._shapes[text] = shape
            self._size += len(text)
            while len(self._shapes) > self.entries or self._size > self.characters:
                old, _ = self._shapes.popitem(last=False)
                self._size -= len(old)

    def clear(self) -> None:
        with self._lock:
            self._shapes.clear()
            self._size = 0

    def __len__(self) -> int:
        return len(self._shapes)


SHAPE_CACHE = _ShapeCache(entries=65536, characters=4_000_000, longest=4096)
"""parse_shape's cache: texts up to 4096 characters, 65,536 of them and 4M characters at most."""
_CACHED = SHAPE_CACHE._shapes.get
_MOVE_TO_END = SHAPE_CACHE._shapes.move_to_end


def parse_shape(text: str) -> Shape:
    """Parse XLA shape text; missing layouts get XLA's default. Repeated texts come from a bounded cache.

    >>> str(parse_shape("f32[3,5]"))
    'f32[3,5]{1,0}'
    """
    if type(text) is not str:
        raise ParseError(f"shape text must be a str, got {type(text).__name__}")
    shape = _CACHED(text)  # the hot path of reading HLO dumps: one C look-up, then the recency update
    if shape is None:
        shape = _parse_shape(text)
        SHAPE_CACHE.put(text, shape)
        return shape
    try:
        _MOVE_TO_END(text)
    except KeyError:  # evicted by another thread in between
        pass
    return shape


def _parse_shape(text: str) -> Shape:
    if text:
        shape = fast_tuple_shape(text) if text[0] == "(" else fast_array_shape(text)
        if shape is not None:
            return shape
    return careful_parse_shape(text)


def _clear_cache() -> None:
    """Empty parse_shape's cache (``parse_shape.cache_clear()``, as with functools caches)."""
    SHAPE_CACHE.clear()


parse_shape.cache_clear = _clear_cache  # type: ignore[attr-defined]


def parse_layout(text: str) -> Layout:
    """Parse XLA layout text such as ``{1,0:T(8,128)(2,1)S(1)}``.

    >>> parse_layout("{1,0:T(8,128)}").tiles
    ((8, 128),)
    """
    parser = ShapeParser(_checked_text(text, "layout"))
    layout = parser.layout()
    parser.finish("layout")
    return layout
