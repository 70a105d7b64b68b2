"""XLA's HLO lexer: the tokens of shape text and of whole HLO modules (its keywords include ``HloModule``).

Linear time on any input: every token is matched once from its start, and the one pattern that could rescan a
run (dimension labels such as ``b01f_01io->b01f``, whose runs of ``[0-9bf?]`` may hold many tokens, e.g. a run of
``?``) remembers where it last failed.

>>> [t.kind for t in tokens("f32[2,?]")]
['type', '[', 'int', ',', '?', ']']
"""

from __future__ import annotations

import re

from .._ints import INT64_MAX, INT64_MIN
from ..dtypes import ELEMENT_TYPES, TEXT_TYPE_NAMES

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
_LABEL_RUN = re.compile(r"[0-9bf?]*")
_LABEL_CHARS = frozenset("0123456789bf?")
_DXD = re.compile(r"[0-9]+(?:x[0-9]+)+", re.ASCII)
_PAD = re.compile(r"-?[0-9]+_-?[0-9]+(?:_[0-9]+)?(?:x-?[0-9]+_-?[0-9]+(?:_[0-9]+)?)*")
_INT = re.compile(r"-?\d+", re.ASCII)
_NAN_PAYLOAD = re.compile(r"\(0x[0-9a-fA-F]+\)")
_STRING_STOPS = {"\"": re.compile(r'["\\]'), "'": re.compile(r"['\\]")}


def _string_end(text: str, start: int) -> int | None:
    """The end of the quoted string opening at ``start`` (after its closing quote), or None when unterminated.

    A loop over escapes with a C-speed search between them: linear time and no per-character regex state.

    >>> _string_end('"a\\\\"b" c', 0)
    6
    """
    stops = _STRING_STOPS[text[start]]
    position = start + 1
    while True:
        stop = stops.search(text, position)
        if stop is None:
            return None
        if text[stop.start()] != "\\":
            return stop.end()
        position = stop.start() + 2
        if position > len(text):
            return None
_PERCENT_NAME = re.compile(r"%([a-zA-Z_][a-zA-Z0-9_.\-]*)")
_PLAIN_INT = re.compile(r"[0-9]{1,18}(?=[,\]}):])")
"""Digits followed by a character no longer token continues with: always an int token (at most 18 digits)."""
_SIMPLE = frozenset("[]{}(),:=+~#0123456789")
"""First characters the fast path of ``Lexer.next`` may handle (punctuation other than '*'; digits)."""
_PUNCTUATION = {
    "[": "[", "]": "]", "{": "{", "}": "}", "(": "(", ")": ")", ",": ",", ":": ":", "*": "*", "#": "#",
    "+": "+", "~": "~", "=": "=",
}


class Token:
    """One token: ``kind`` (punctuation itself, or int/ident/type/name/...), its ``value`` and ``start``.

    >>> Token("int", 3, 0, 1).kind
    'int'
    """

    __slots__ = ("end", "kind", "start", "value")

    def __init__(self, kind: str, value: object, start: int, end: int) -> None:
        self.kind = kind
        self.value = value
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"Token({self.kind!r}, {self.value!r}, {self.start})"


def describe(token: Token, text: str) -> str:
    """How an error message names a token: ``'F32'`` or ``end of text``.

    >>> describe(Lexer("F32").next(), "F32")
    "'F32'"
    """
    if token.kind == "eof":
        return EOF
    return repr(text[token.start : token.end] or text[token.start : token.start + 1])


class Lexer:
    """XLA's HLO lexer: whitespace and ``/* */``/``//`` comments skipped; numbers, names, types, punctuation.

    >>> Lexer("f32[2]").next()
    Token('type', ElementType('f32'), 0)
    """

    __slots__ = ("_no_labels_before", "pos", "text")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos
        self._no_labels_before = -1  # dimension labels match nowhere in [start of that run, this position)

    def next(self) -> Token:
        """The next token (kind ``error`` for a character XLA's lexer rejects, ``eof`` at the end).

        >>> Lexer("<").next().kind
        'error'
        """
        text = self.text
        start = self.pos
        char = text[start : start + 1]
        if char in _SIMPLE:  # the common tokens of shape text, without the general machinery
            if char in _PUNCTUATION:
                self.pos = start + 1
                return Token(char, char, start, start + 1)
            plain = _PLAIN_INT.match(text, start)
            if plain is not None:
                self.pos = end = plain.end()
                return Token("int", int(plain.group()), start, end)
        start = _SKIP.match(text, start).end()  # type: ignore[union-attr]
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
        if char == "?":  # '?' alone, unless it starts dimension labels ("??_??->??")
            labels = self._dim_labels(start)
            if labels:
                return Token("dim_labels", labels.group(0), start, labels.end())
            return Token("?", "?", start, start + 1)
        if (char.isdigit() and char.isascii()) or char == "-":
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
            end = _string_end(text, start)
            if end is not None:
                return Token("string", text[start:end], start, end)
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
        match = self._dim_labels(start)
        if match:
            return Token("dim_labels", match.group(0), start, match.end())
        return Token("ident", word, start, end)

    def _dim_labels(self, start: int) -> re.Match[str] | None:
        """Dimension labels at ``start``, without rescanning a run of label characters where they failed."""
        if start < self._no_labels_before or self.text[start + 1 : start + 2] not in _LABEL_CHARS:
            return None
        match = _DIM_LABELS.match(self.text, start)
        if match is None:
            # Every start inside this run of [0-9bf?] sees the same run end and the same text after it.
            self._no_labels_before = _LABEL_RUN.match(self.text, start).end()  # type: ignore[union-attr]
        return match

    def _number_or_pattern(self, char: str, start: int) -> Token:
        text = self.text
        match = _FLOAT.match(text, start)
        if match:
            return Token("decimal", float(match.group(0)), start, match.end())
        match = self._dim_labels(start)
        if match:
            return Token("dim_labels", match.group(0), start, match.end())
        for kind, pattern in (("dxd", _DXD), ("pad", _PAD)):
            match = pattern.match(text, start)
            if match:
                return Token(kind, match.group(0), start, match.end())
        match = _INT.match(text, start)
        if match:
            digits = match.group(0)
            value = integer_value(digits)
            if value is not None:
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


def integer_value(digits: str) -> int | None:
    """The int64 value of ``-?[0-9]+`` (leading zeros allowed, as XLA reads them), None when out of range.

    >>> integer_value("000012"), integer_value("-5"), integer_value("9" * 5000)
    (12, -5, None)
    """
    negative = digits.startswith("-")
    significant = digits[1:].lstrip("0") if negative else digits.lstrip("0")
    if len(significant) > 19:
        return None
    value = int(significant or "0")
    value = -value if negative else value
    return value if INT64_MIN <= value <= INT64_MAX else None


def tokens(text: str) -> list[Token]:
    """Every token of ``text`` up to the end (kind ``eof``, not included) or the first ``error`` token.

    >>> [t.value for t in tokens("{1,0}")]
    ['{', 1, ',', 0, '}']
    """
    lexer = Lexer(text)
    found: list[Token] = []
    while True:
        token = lexer.next()
        if token.kind == "eof":
            return found
        found.append(token)
        if token.kind == "error":
            return found
