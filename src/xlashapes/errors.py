"""The two errors xlashapes raises for bad input."""

from __future__ import annotations


class XlaShapesError(ValueError):
    """Base class of every error xlashapes raises on bad input.

    >>> issubclass(ParseError, XlaShapesError) and issubclass(XlaShapesError, ValueError)
    True
    """


class ParseError(XlaShapesError):
    """Text that is not a valid XLA shape, layout or HLO; points at the offending character.

    ``position`` is the 0-based offset into ``text``; ``line``/``column`` are 1-based.

    >>> error = ParseError("bad", "f32[x]", 4)
    >>> error.line, error.column, str(error).splitlines()[2].index("^")
    (1, 5, 8)
    """

    def __init__(self, message: str, text: str = "", position: int = 0) -> None:
        self.reason = message
        self.text = text
        self.position = max(0, min(position, len(text)))
        self.line = text.count("\n", 0, self.position) + 1
        line_start = text.rfind("\n", 0, self.position) + 1
        self.column = self.position - line_start + 1
        super().__init__(self._render())

    def _render(self) -> str:
        if not self.text:
            return self.reason
        line_start = self.text.rfind("\n", 0, self.position) + 1
        line_end = self.text.find("\n", self.position)
        if line_end < 0:
            line_end = len(self.text)
        line_text = self.text[line_start:line_end]
        column = self.position - line_start
        if len(line_text) > 160:  # keep one screen: a window around the caret
            start = max(0, column - 80)
            prefix = "..." if start else ""
            line_text = prefix + line_text[start : start + 160]
            column = column - start + len(prefix)
        where = f"line {self.line}, column {self.column}" if "\n" in self.text else f"position {self.position}"
        return f"{self.reason} (at {where})\n    {line_text}\n    {' ' * column}^"


class ShapeError(XlaShapesError):
    """A shape, layout, index or array that is well-formed text but wrong for the operation asked.

    >>> from xlashapes import parse_shape
    >>> parse_shape("f32[2]").dimension(5)
    Traceback (most recent call last):
    xlashapes.errors.ShapeError: dimension 5 is out of range for rank 1 shape f32[2]{0}
    """
