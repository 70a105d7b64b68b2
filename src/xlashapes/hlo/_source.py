"""The text a module or instruction was parsed from: positions, lines and columns, strings and brace groups."""

from __future__ import annotations

import bisect
import re

from ..errors import ParseError

SKIP = re.compile(r"(?:[ \t\n\r]+|/\*.*?\*/|//[^\n\r]*)*", re.DOTALL)
"""What XLA's lexer skips: blanks and comments."""

_BRACE_EVENT = re.compile(r'[{}"]')


def _string_pattern(quote: str) -> re.Pattern[str]:
    """A quoted string: possessive (no backtracking state, Python 3.11+), else the unrolled loop."""
    try:
        return re.compile(f"{quote}(?:[^{quote}\\\\]++|\\\\.)*+{quote}", re.DOTALL)
    except re.error:  # Python 3.10: state per escape, not per character
        return re.compile(f"{quote}[^{quote}\\\\]*(?:\\\\.[^{quote}\\\\]*)*{quote}", re.DOTALL)


STRINGS = {'"': _string_pattern('"'), "'": _string_pattern("'")}
"""Double- and single-quoted strings with backslash escapes, matched in linear time and constant memory."""
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class Source:
    """The text positions index into; line starts are found once, when first asked for.

    >>> Source("a\\nbc").line_column(3)
    (2, 2)
    """

    __slots__ = ("_line_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._line_starts: list[int] | None = None

    def line_column(self, position: int) -> tuple[int, int]:
        """1-based line and column of ``position``."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in re.finditer("\n", self.text))]
        line = bisect.bisect_right(self._line_starts, position)
        return line, position - self._line_starts[line - 1] + 1

    def error(self, message: str, position: int) -> ParseError:
        """A ParseError at ``position`` of this text."""
        return ParseError(message, self.text, position)

    def first_token(self, position: int) -> int:
        """The position of the first token at or after ``position``."""
        return SKIP.match(self.text, position).end()  # type: ignore[union-attr]


EMPTY_SOURCE = Source("")


def string_end(text: str, start: int) -> int:
    """End of the quoted string opening at ``start`` (-1 when unterminated); linear time, constant memory.

    >>> string_end('"a\\\\"b" c', 0)
    6
    """
    match = STRINGS[text[start]].match(text, start)
    return match.end() if match else -1


def scan_braces(source: Source, start: int) -> int:
    """End of the ``{...}`` group at ``start``: braces balanced outside double-quoted strings (XLA's JSON scan).

    >>> scan_braces(Source('{a {"}"} b} c'), 0)
    11
    """
    text = source.text
    depth = 0
    position = start
    while True:
        match = _BRACE_EVENT.search(text, position)
        if match is None:
            raise source.error("unterminated '{': no matching '}'", start)
        char = match.group()
        if char == '"':
            end = string_end(text, match.start())
            if end < 0:
                raise source.error("unterminated string", match.start())
            position = end
            continue
        depth += 1 if char == "{" else -1
        position = match.end()
        if depth == 0:
            return position


def unescape(body: str) -> str:
    """Undo the C escapes XLA writes inside strings; unknown escapes are kept as written.

    >>> unescape('a\\\\"b\\\\n')
    'a"b\\n'
    """
    if "\\" not in body:
        return body

    def replace(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] == "x" and len(code) > 1:
            return chr(int(code[1:], 16))
        if code[0] in "01234567":
            return chr(int(code, 8))
        return _SIMPLE_ESCAPES.get(code, code if code in "\\\"'?" else "\\" + code)

    return _ESCAPE.sub(replace, body)


def escape(value: str) -> str:
    """A double-quoted string literal for ``value`` that ``unescape`` reads back.

    >>> escape('a"b')
    '"a\\\\"b"'
    """
    out = []
    for char in value:
        if char in "\\\"":
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif ord(char) < 32 or ord(char) == 127:
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
