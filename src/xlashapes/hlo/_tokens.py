"""Token-level reading of HLO text on the shape lexer: names, values, bracket groups, strings.

The careful parser, the typed attribute readers and the literal reader all extend :class:`TokenReader`.
"""

from __future__ import annotations

import re

from ..errors import ParseError
from ..shape import Shape
from ..text import ShapeParser, Token, describe
from ._source import SKIP, STRINGS, Source, scan_braces, unescape

_UINT = re.compile(r"\d+")
_UINT64_MAX = 2**64 - 1
CLOSERS = {"(": ")", "[": "]"}


def is_uint64(text: str, token: Token) -> bool:
    """True for the integer tokens between 2**63 and 2**64 - 1 that XLA reads as unsigned (u64 literals)."""
    match = _UINT.fullmatch(text, token.start, token.end)
    if match is None:
        return False
    digits = match.group().lstrip("0") or "0"
    return len(digits) <= 20 and int(digits) <= _UINT64_MAX  # no int() of a huge digit run


class TokenReader(ShapeParser):
    """One token of lookahead over HLO text, with error messages that name what was found.

    >>> r = TokenReader(Source("%a, b"), 0)
    >>> r.name("a name"), r.advance().kind, r.name("a name")
    ('a', ',', 'b')
    """

    __slots__ = ("prev_end", "source")

    def __init__(self, source: Source, position: int) -> None:
        self.source = source
        self.prev_end = position
        super().__init__(source.text, len(source.text))  # no token read yet: strings are lexed here, below
        self.lexer.pos = position
        self.token = self._next()

    def _next(self) -> Token:
        """The token after the lexer's position; strings are found here, never by the lexer's own regex."""
        text = self.text
        start = SKIP.match(text, self.lexer.pos).end()  # type: ignore[union-attr]
        if start < len(text) and text[start] in STRINGS:
            self.lexer.pos = start
            match = STRINGS[text[start]].match(text, start)
            if match is None:
                self.lexer.pos = start + 1
                return Token("error", "unterminated string", start, start + 1)
            self.lexer.pos = match.end()
            return Token("string", match.group(), start, match.end())
        return self.lexer.next()

    def peek_kind(self) -> str:
        """The kind of the token after the current one."""
        saved = self.lexer.pos
        kind = self._next().kind
        self.lexer.pos = saved
        return kind

    def advance(self) -> Token:
        """Consume the current token."""
        token = self.token
        self.prev_end = token.end
        self.token = self._next()
        return token

    def jump(self, position: int) -> None:
        """Continue lexing at ``position`` (after a raw-scanned group)."""
        self.prev_end = position
        self.lexer.pos = position
        self.token = self._next()

    def fail(self, message: str, token: Token | None = None) -> ParseError:
        """A ParseError at ``token`` (the current one by default) naming what was found."""
        token = token or self.token
        return self.error(f"{message}, found {describe(token, self.text)}", token)

    def keyword(self, word: str) -> bool:
        """Consume keyword ``word`` if it is next."""
        if self.token.kind == "keyword" and self.token.value == word:
            self.advance()
            return True
        return False

    def boolean(self) -> bool:
        """``true`` or ``false``."""
        token = self.token
        if token.kind == "keyword" and token.value in ("true", "false"):
            self.advance()
            return token.value == "true"
        raise self.fail("expected true or false")

    def is_name(self) -> bool:
        """True when the current token is a plain word or ``%name``."""
        token = self.token
        return token.kind == "ident" or (token.kind == "name" and self.text[token.start] == "%")

    def name(self, what: str) -> str:
        """An instruction/computation name: a plain word or ``%name``."""
        token = self.token
        if self.is_name():
            self.advance()
            return str(token.value)
        raise self.fail(f"expected {what}")

    def any_shape(self) -> Shape:
        """A shape at the current token (deep nesting is a ParseError, not a RecursionError)."""
        try:
            return self.shape()
        except RecursionError:
            raise self.error("shape nested too deeply") from None

    def string(self) -> str:
        """A string token, unescaped."""
        token = self.expect("string", "expected a string")
        return unescape(self.text[token.start + 1:token.end - 1])

    def integer_fields(self) -> dict[str, int]:
        """``{key=int key=int ...}`` (commas optional), as in FileLocations and StackFrames."""
        self.expect("{", "expected '{'")
        fields: dict[str, int] = {}
        while self.token.kind != "}":
            if self.token.kind == ",":
                self.advance()
            key = self.expect("attribute_name", "expected key=value or '}'")
            fields[str(key.value)] = self.integer("an integer")
        self.advance()
        return fields

    # ----- raw attribute values -----
    def value(self) -> tuple[str, int]:
        """One attribute value as raw text and its position: a first item, then items up to a stop."""
        start = self.token.start
        if self.token.kind in (",", ")", "]", "}", "eof"):
            raise self.fail("expected a value")
        self.item()
        while not self.value_ends():
            self.item()
        return self.text[start:self.prev_end], start

    def value_ends(self) -> bool:
        """True when the current token cannot continue an attribute value."""
        token = self.token
        if token.kind in (",", ")", "]", "}", "eof"):
            return True
        if "\n" in self.text[self.prev_end:token.start]:
            return True
        if token.kind == "keyword" and token.value in ("ROOT", "ENTRY"):
            return True
        if self.is_name():
            return self.peek_kind() == "="
        return False

    def item(self) -> None:
        """One token or one bracketed group of a value."""
        kind = self.token.kind
        if kind == "{":
            self.jump(scan_braces(self.source, self.token.start))
        elif kind in CLOSERS:
            self.group()
        elif kind == "error":
            raise self.error("unexpected text")
        else:
            self.advance()

    def group(self) -> None:
        """A ``(...)`` or ``[...]`` group of tokens; ``{...}`` inside is scanned raw."""
        stack = [self.advance()]
        while stack:
            token = self.token
            if token.kind == CLOSERS[str(stack[-1].kind)]:
                self.advance()
                stack.pop()
            elif token.kind in CLOSERS:
                stack.append(self.advance())
            elif token.kind == "{":
                self.jump(scan_braces(self.source, token.start))
            elif token.kind == "eof":
                opener = stack[-1]
                raise self.error(f"unterminated {opener.kind!r}: no matching {CLOSERS[str(opener.kind)]!r}", opener)
            elif token.kind in (")", "]", "}"):
                raise self.fail(f"expected {CLOSERS[str(stack[-1].kind)]!r} to close {stack[-1].kind!r}")
            elif token.kind == "error":
                raise self.error("unexpected text")
            else:
                self.advance()
