"""The fast path: canonical instruction and computation-header lines matched whole by regular expressions.

Each function returns None whenever the careful parser could read the line differently; the careful parser then
decides. Shapes go through the cached ``parse_shape``; attributes stay raw text until asked for.
"""

from __future__ import annotations

from typing import Any

from ..errors import ParseError
from ..shape import Shape
from ..text import parse_shape
from ._patterns import COMPUTATION, INDEX_COMMENT, PARAMETER_SPLIT, SCALAR_LITERAL, SHAPED_OPERAND
from ._source import Source
from .model import HloComputation, HloInstruction
from .opcodes import OPCODES, RESERVED

DERIVED_SHAPE_OPCODES = frozenset(("send", "recv", "send-done", "recv-done", "outfeed"))
"""Opcodes whose shape XLA derives from their operands instead of taking the written one."""

_FAST_OPCODES = OPCODES - DERIVED_SHAPE_OPCODES
PLAIN_FAST_OPCODES = _FAST_OPCODES - {"constant", "parameter"}
"""Opcodes whose matched line the fast path reads from its operand names alone."""


Groups = tuple[Any, ...]
"""What INSTRUCTION's groups hold: root, percent, name, shape, opcode, names, number, other operands, tail."""


def fast_instruction(groups: Groups, shape: Shape, source: Source, offset: int) -> HloInstruction | None:
    """The instruction a matched line holds (``shape`` parsed), or None when the careful parser must decide."""
    root, _, name, _, opcode, names, _, _, tail = groups
    if opcode not in _FAST_OPCODES:  # (a reserved word as the name never gets here: the reader hands it on)
        return None
    if names is None or opcode in ("constant", "parameter"):
        return _fast_other(groups, shape, source, offset)
    operands: list[str] = []
    if names:
        if "/" in names:
            names = INDEX_COMMENT.sub("", names)
        operands = names.replace("%", "").split(", ")
        if names.count("%") != len(operands) and not RESERVED.isdisjoint(operands):
            return None
    return HloInstruction(name, opcode, shape, operands, None, root is not None, source, offset, tail)


def _fast_other(groups: Groups, shape: Shape, source: Source, offset: int) -> HloInstruction | None:
    """Constants, parameters and operands with shapes on the fast path (None: the careful parser decides)."""
    root, _, name, _, opcode, names, number, other, tail = groups
    operands: list[str] = []
    shapes: list[Shape | None] | None = None
    parameter_number = None
    literal_text = None
    if opcode == "constant":
        if (shape.layout is not None and shape.layout.element_size_in_bits) or shape.is_tuple:
            return None  # XLA drops the element size from a constant's layout: the careful parser does too
        literal_text = _fast_literal(names, number, other)
        if literal_text is None:
            return None
    elif opcode == "parameter":
        if number is None:
            return None
        parameter_number = int(number)
    else:
        found = _shaped_operands(other) if other is not None else None
        if found is None:
            return None
        operands, shapes = found
    return HloInstruction(name, opcode, shape, operands, shapes, root is not None, source, offset, tail, -1, None,
                          parameter_number, literal_text)


def _fast_literal(names: str | None, number: str | None, other: str | None) -> str | None:
    """A constant's literal when the fast path can take it as is."""
    if names is not None:
        return names or None
    if number is not None:
        return number
    return other if other is not None and SCALAR_LITERAL.fullmatch(other) else None


def _shaped_operands(text: str) -> tuple[list[str], list[Shape | None] | None] | None:
    """Operands some of which carry a shape (``f32[2]{0} %x, %y``), or None to defer to the careful parser."""
    names: list[str] = []
    shapes: list[Shape | None] = []
    position = 0
    while position < len(text):  # anchored matches: a failure costs one scan, not a search from every position
        match = SHAPED_OPERAND.match(text, position)
        if match is None or match.end() == position:
            return None
        position = match.end()
        operand_shape, percent, name = match.groups()
        if not percent and name in RESERVED:
            return None
        try:
            shapes.append(parse_shape(operand_shape) if operand_shape else None)
        except ParseError:
            return None
        names.append(name)
    if position != len(text) or text.endswith(", "):
        return None
    return names, (shapes if any(s is not None for s in shapes) else None)


def fast_computation(line: str, offset: int, shapes: dict[str, Shape]) -> HloComputation | None:
    """The computation a header line opens (``shapes``: texts parsed so far), or None: the careful parser decides."""
    match = COMPUTATION.fullmatch(line)
    if match is None:
        return None
    entry, _, name, parameter_text, result_text = match.groups()
    if name in RESERVED:  # %f32 is renamed f32_ by XLA: the careful parser notes it
        return None
    parameters = None
    result = None
    if parameter_text is not None:
        parts = iter(PARAMETER_SPLIT.split(parameter_text))  # "", name, shape text, name, shape text ...
        if next(parts):
            return None
        get = shapes.get
        try:
            parameters = [(name_, get(text) or _cached_shape(text, shapes)) for name_, text in zip(parts, parts)]
            result = get(result_text) or _cached_shape(result_text, shapes)
        except (ParseError, RecursionError):
            return None
    return HloComputation(name, is_entry=entry is not None, parameters=parameters, result_shape=result,
                          position=offset)


def _cached_shape(text: str, shapes: dict[str, Shape]) -> Shape:
    """The shape ``text`` spells, from ``shapes`` when read before."""
    shape = shapes.get(text)
    if shape is None:
        shape = shapes[text] = parse_shape(text)
    return shape
