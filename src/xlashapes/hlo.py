"""Reading HLO text: instructions, computations and whole modules as XLA dumps print them.

Two parsers read the same grammar. A fast one matches whole canonical lines with compiled regular expressions
(shapes go through the cached ``parse_shape``, attributes stay raw text until asked for). Whatever line it does
not recognise goes to a careful token-level parser built on the shape lexer, which either reads it or raises a
``ParseError`` pointing at the offending character. The fast parser only accepts lines the careful parser reads
the same way, so both give the same module.

Syntax is checked while parsing: tokens, brackets, strings, shapes, operand lists and the ``key=value``
structure of attributes (a ``{...}`` value is scanned like XLA scans JSON dictionaries: balanced braces outside
double-quoted strings). Meaning is checked on demand: typed attribute values (``Attributes.typed``), constant
literals, and the cross-checks of ``HloModule.problems()`` (undefined operands, duplicate names, unknown
computations and opcodes, malformed typed attributes).
"""

from __future__ import annotations

import bisect
import gc
import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .broadcast import BINARY_OPS, broadcast_shape
from .dtypes import TEXT_TYPE_NAMES, ElementType
from .errors import ParseError, ShapeError
from .shape import Shape
from .text import KEYWORDS, ShapeParser, Token, describe, parse_shape, shape_text

__all__ = [
    "Attributes",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "Problem",
    "Sharding",
    "StackFrameIndex",
    "parse_hlo_module",
    "parse_instruction",
]

# ----------------------------------------------------------------------------------------------------
# Opcodes
# ----------------------------------------------------------------------------------------------------

_BASE_OPCODES = frozenset("""
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start all-reduce all-reduce-done
all-reduce-start all-to-all and asin asinh async-done async-start async-update atan atan2 atanh batch-norm-grad
batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call cbrt ceil cholesky clamp
count-leading-zeros collective-broadcast collective-permute collective-permute-done collective-permute-start
collective-reduce compare complex concatenate conditional constant convert convolution copy copy-done copy-start
cosine cosh custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf exponential
exponential-minus-one fft floor fusion gather get-dimension-size get-tuple-element imag infeed iota is-finite log
log-plus-one logistic map maximum minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id
popcnt power ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision reduce-scatter reduce-window
remainder replica-id reshape reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz
round-nearest-even rsqrt scaled-dot scan scatter select select-and-scatter send send-done set-dimension-size
shift-left shift-right-arithmetic shift-right-logical shuffle sign sine sinh slice sort sqrt stochastic-convert
subtract tan tanh topk transpose triangular-solve tuple while xor
""".split())

OPCODES = _BASE_OPCODES | frozenset(
    f"{base}-{suffix}" for base in _BASE_OPCODES for suffix in ("start", "update", "done")
)
"""Opcode names XLA prints, including the ``-start``/``-update``/``-done`` forms of asynchronous ops."""

# Words the lexer never reads as a plain name: bare instruction and operand names must avoid them.
_RESERVED = frozenset(KEYWORDS) | TEXT_TYPE_NAMES | {"nan"}

# Attributes that name one or several computations.
_CALL_KEYS = ("to_apply", "calls", "condition", "body", "select", "scatter", "branch_computations",
              "called_computations", "true_computation", "false_computation")

# ----------------------------------------------------------------------------------------------------
# Regular expressions of the fast path (every one matches in linear time)
# ----------------------------------------------------------------------------------------------------

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_STR = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_STR1 = r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"


def _nested(open_: str, close: str, inner: str, depth: int) -> str:
    """A regex for a bracket group nested ``depth`` deep; ``inner`` matches an atom that is not a bracket."""
    plain = f"[^{open_}{close}\"\\n]*" if inner else f"[^{open_}{close}\\n]*"
    pattern = f"\\{open_}{plain}(?:{inner}{plain})*\\{close}" if inner else f"\\{open_}{plain}\\{close}"
    for _ in range(depth - 1):
        atoms = f"(?:{inner}|{pattern})" if inner else pattern
        pattern = f"\\{open_}{plain}(?:{atoms}{plain})*\\{close}"
    return pattern


_BRACE = _nested("{", "}", _STR, 6)  # raw {...}: balanced braces outside "strings"
_PARENS = _nested("(", ")", "", 3)  # (...) three deep: tuples of tiled arrays
_ARRAY = r"[a-z][a-z0-9]*\[[^\]\n]*\](?:\{[^{}\n]*\})?"
_SHAPE = f"(?:{_ARRAY}|{_PARENS})"
_OPERANDS = r"[^()\n]*(?:" + _nested("(", ")", "", 2) + r"[^()\n]*)*"
_INTS = r"\d{1,18}(?:,\d{1,18})*"  # integers that fit int64 (longer ones are lexer errors)
_VALUE = "|".join((
    _STR,
    _BRACE,
    "%" + _NAME,
    r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}",  # dim labels
    r"-?\d+_-?\d+(?:_\d+)?(?:x-?\d+_-?\d+(?:_\d+)?)*",  # padding
    r"\d+(?:x\d+)+",  # 3x3
    r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d{1,18})",  # numbers
    rf"\[{_INTS}\]<=\[{_INTS}\](?:T\({_INTS}\))?",  # iota device lists
    rf"{_NAME}(?:\[{_STR1}=\d{{1,18}}(?:,{_STR1}=\d{{1,18}})*\](?: {_BRACE})?)?",  # words, mesh[...] {...}
))
_TAIL = f"(?:, {_NAME}=(?:{_VALUE}))*"
_NAMES = rf"(?:%?{_NAME}(?:, (?:/\*index=\d+\*/)?%?{_NAME})*)?"
_INSTRUCTION = re.compile(
    rf"[ \t]*(ROOT[ \t]+)?(%?)({_NAME}) = ({_SHAPE}) ([a-z][a-z0-9\-]*)\((?:({_NAMES})|(\d{{1,18}})|({_OPERANDS}))\)"
    rf"({_TAIL})[ \t\r]*", re.ASCII)
_ATTRIBUTE = re.compile(f", ({_NAME})=({_VALUE})", re.ASCII)
_INDEX_COMMENT = re.compile(r"/\*index=\d+\*/", re.ASCII)
_SHAPED_OPERAND = re.compile(rf"(?:/\*index=\d+\*/)?(?:({_SHAPE}) )?(%?)({_NAME})(?:, |$)", re.ASCII)
_SCALAR_LITERAL = re.compile(r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d{1,18}|inf|nan)|true|false|\{\.\.\.\}",
                             re.ASCII)
_COMPUTATION = re.compile(rf"(ENTRY[ \t]+)?(%?)({_NAME})(?: \(([^\n-]*(?:-(?!>)[^\n-]*)*)\) -> (.+?))? \{{[ \t\r]*",
                          re.ASCII)
_PARAMETER_SPLIT = re.compile(rf"(?:^|, )({_NAME}): ", re.ASCII)
_BLANKS = " \t\r"  # what the lexer skips on a line

# Careful-path helpers.
_SKIP = re.compile(r"(?:[ \t\n\r]+|/\*.*?\*/|//[^\n\r]*)*", re.DOTALL)
_BRACE_EVENT = re.compile(r'[{}"]')
_DQ_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_UINT = re.compile(r"\d+")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_UINT64_MAX = 2**64 - 1
_CLOSERS = {"(": ")", "[": "]"}


def _unescape(body: str) -> str:
    """Undo the C escapes XLA writes inside strings; unknown escapes are kept as written."""
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


def _escape(value: str) -> str:
    """A double-quoted string literal for ``value`` that ``_unescape`` reads back."""
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


# ----------------------------------------------------------------------------------------------------
# The module's text, shared by everything parsed from it
# ----------------------------------------------------------------------------------------------------


class _Source:
    """The text a module or instruction was parsed from; positions index into it."""

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
        return _SKIP.match(self.text, position).end()  # type: ignore[union-attr]


# ----------------------------------------------------------------------------------------------------
# Attributes
# ----------------------------------------------------------------------------------------------------


class Attributes(Mapping[str, str]):
    """``key=value`` attributes in order: raw text by key, values read by type with ``typed(key)``.

    >>> ins = parse_instruction("r = f32[2]{0} reduce(a, z), dimensions={0}, to_apply=%add")
    >>> ins.attributes["dimensions"], ins.attributes.typed("dimensions"), ins.attributes.typed("to_apply")
    ('{0}', (0,), 'add')
    """

    __slots__ = ("_pairs", "_positions", "_raw", "_source", "_typed")

    def __init__(self, pairs: list[tuple[str, str]], positions: list[int], source: _Source) -> None:
        self._pairs = pairs
        self._positions = positions
        self._source = source
        self._raw: dict[str, str] = {}
        for key, value in pairs:
            self._raw.setdefault(key, value)
        self._typed: dict[str, Any] = {}

    def __getitem__(self, key: str) -> str:
        return self._raw[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return f"Attributes({self._raw!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Attributes):
            return self._pairs == other._pairs
        if isinstance(other, Mapping):
            return dict(self._raw) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def pairs(self) -> list[tuple[str, str]]:
        """Every ``(key, raw value)`` in the order written, repeated keys included."""
        return list(self._pairs)

    def position(self, key: str) -> int:
        """Offset of ``key``'s value in the parsed text."""
        for (name, _), position in zip(self._pairs, self._positions):
            if name == key:
                return position
        raise KeyError(key)

    def typed(self, key: str) -> Any:
        """The value of ``key`` read by its type (ints, tuples, names, dicts, Sharding ...); ParseError if malformed."""
        if key not in self._typed:
            raw = self._raw[key]
            self._typed[key] = _typed_value(key, raw, self._source, self.position(key))
        return self._typed[key]

    def get_typed(self, key: str, default: Any = None) -> Any:
        """``typed(key)``, or ``default`` when the attribute is absent."""
        return self.typed(key) if key in self._raw else default


_EMPTY_SOURCE = _Source("")
_NO_ATTRIBUTES = Attributes([], [], _EMPTY_SOURCE)


def _split_tail(tail: str, position: int, source: _Source) -> Attributes:
    """Attributes from a fast-path tail ``, k=v, k=v`` that starts at ``position``."""
    pairs = []
    positions = []
    for match in _ATTRIBUTE.finditer(tail):
        pairs.append((match.group(1), match.group(2)))
        positions.append(position + match.start(2))
    return Attributes(pairs, positions, source)


# ----------------------------------------------------------------------------------------------------
# Instructions, computations, modules
# ----------------------------------------------------------------------------------------------------


class HloInstruction:
    """One HLO instruction: ``[ROOT] name = shape opcode(operands), key=value, ...``.

    >>> ins = parse_instruction("add.1 = f32[2]{0} add(x, y)")
    >>> ins.name, ins.opcode, str(ins.shape), ins.operands
    ('add.1', 'add', 'f32[2]{0}', ['x', 'y'])
    """

    __slots__ = ("_attributes", "_literal", "_operand_shapes", "_position", "_source", "_tail", "_tail_position",
                 "is_root", "literal_text", "name", "opcode", "operands", "parameter_number", "shape")

    def __init__(self, name: str, opcode: str, shape: Shape, operands: list[str],
                 operand_shapes: list[Shape | None] | None, is_root: bool, source: _Source, position: int,
                 tail: str = "", tail_position: int = -1, attributes: Attributes | None = None,
                 parameter_number: int | None = None, literal_text: str | None = None) -> None:
        self.name = name
        self.opcode = opcode
        self.shape = shape
        self.operands = operands
        self._operand_shapes = operand_shapes
        self.is_root = is_root
        self._source = source
        self._position = position
        self._tail = tail
        self._tail_position = tail_position
        self._attributes = attributes
        self.parameter_number = parameter_number
        self.literal_text = literal_text
        self._literal: Any = _UNSET

    def __repr__(self) -> str:
        return f"HloInstruction({self.name!r}, {self.opcode!r}, {shape_text(self.shape)!r})"

    def __str__(self) -> str:
        return instruction_text(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloInstruction):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def _key(self) -> tuple[Any, ...]:
        """What equality compares."""
        return (self.name, self.opcode, self.shape, self.operands, self.operand_shapes, self.is_root,
                self.parameter_number, self.literal_text, self.attributes.pairs())

    @property
    def attributes(self) -> Attributes:
        """Every ``key=value`` after the operands, in order (raw text; ``.typed(key)`` for values)."""
        if self._attributes is None:
            position = self._tail_position
            if position < 0:  # the tail ends the line: find it from the end
                text = self._source.text
                end = text.find("\n", self._position)
                position = text.rfind(self._tail, self._position, end if end >= 0 else len(text))
            self._attributes = _split_tail(self._tail, position, self._source)
        return self._attributes

    @property
    def operand_shapes(self) -> list[Shape | None]:
        """The shape written before each operand name, None where none was written."""
        if self._operand_shapes is None:
            return [None] * len(self.operands)
        return list(self._operand_shapes)

    @property
    def position(self) -> int:
        """Offset of the instruction's first character in the parsed text."""
        return self._source.first_token(self._position)

    @property
    def line(self) -> int:
        """1-based line of the instruction in the parsed text."""
        return self._source.line_column(self.position)[0]

    @property
    def column(self) -> int:
        """1-based column of the instruction's first character."""
        return self._source.line_column(self.position)[1]

    @property
    def literal(self) -> Any:
        """A constant's value as a NumPy array (a tuple of them for tuple shapes); None for ``{...}``."""
        if self.literal_text is None:
            raise AttributeError(f"{self.opcode} instruction {self.name} has no literal")
        if self._literal is _UNSET:
            self._literal = _literal_value(self)
        return self._literal

    @property
    def called_computations(self) -> list[str]:
        """Names of the computations this instruction calls (to_apply, calls, condition, body, branches ...)."""
        names: list[str] = []
        for key in _CALL_KEYS:
            if key in self.attributes:
                value = self.attributes.typed(key)
                names.extend(value if isinstance(value, tuple) else (value,))
        return names

    @property
    def metadata(self) -> dict[str, Any]:
        """The ``metadata={...}`` fields (op_name, source_file, stack_frame_id ...), empty when absent."""
        value: dict[str, Any] = self.attributes.get_typed("metadata", {})
        return value

    @property
    def backend_config(self) -> Any:
        """``backend_config``: the decoded JSON when it is JSON, else its text; None when absent."""
        return self.attributes.get_typed("backend_config")

    @property
    def sharding(self) -> Sharding | None:
        """The ``sharding={...}`` attribute, read; None when absent."""
        value: Sharding | None = self.attributes.get_typed("sharding")
        return value

    @property
    def control_predecessors(self) -> tuple[str, ...]:
        """Names listed in ``control-predecessors={...}``."""
        value: tuple[str, ...] = self.attributes.get_typed("control-predecessors", ())
        return value


class _Unset:
    """Marks a lazily computed value not computed yet."""


_UNSET = _Unset()


class HloComputation:
    """A computation: a name, optional signature, its instructions in order and its root."""

    __slots__ = ("_by_name", "attributes", "instructions", "is_entry", "name", "parameters", "position",
                 "result_shape")

    def __init__(self, name: str, instructions: list[HloInstruction] | None = None, *, is_entry: bool = False,
                 parameters: list[tuple[str, Shape]] | None = None, result_shape: Shape | None = None,
                 attributes: Attributes | None = None, position: int = 0) -> None:
        self.name = name
        self.instructions = instructions if instructions is not None else []
        self.is_entry = is_entry
        self.parameters = parameters
        self.result_shape = result_shape
        self.attributes = attributes if attributes is not None else _NO_ATTRIBUTES
        self.position = position
        self._by_name: dict[str, HloInstruction] | None = None

    def __repr__(self) -> str:
        return f"HloComputation({self.name!r}, {len(self.instructions)} instructions)"

    def __str__(self) -> str:
        return computation_text(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloComputation):
            return NotImplemented
        return (self.name, self.is_entry, self.parameters, self.result_shape, self.instructions,
                self.attributes.pairs()) == (other.name, other.is_entry, other.parameters, other.result_shape,
                                             other.instructions, other.attributes.pairs())

    __hash__ = None  # type: ignore[assignment]

    def __getitem__(self, name: str) -> HloInstruction:
        if self._by_name is None:
            self._by_name = {}
            for instruction in self.instructions:
                self._by_name.setdefault(instruction.name, instruction)
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        try:
            self[name]  # type: ignore[index]
        except (KeyError, TypeError):
            return False
        return True

    @property
    def root(self) -> HloInstruction:
        """The instruction marked ROOT, or the last one when none is marked (XLA's rule)."""
        for instruction in self.instructions:
            if instruction.is_root:
                return instruction
        return self.instructions[-1]

    @property
    def parameter_instructions(self) -> list[HloInstruction]:
        """The ``parameter`` instructions ordered by parameter number."""
        found = [i for i in self.instructions if i.opcode == "parameter"]
        return sorted(found, key=lambda i: i.parameter_number or 0)


@dataclass
class StackFrameIndex:
    """The ``FileNames``/``FunctionNames``/``FileLocations``/``StackFrames`` tables of recent dumps (ids from 1)."""

    file_names: list[str] = field(default_factory=list)
    function_names: list[str] = field(default_factory=list)
    file_locations: list[dict[str, int]] = field(default_factory=list)
    stack_frames: list[dict[str, int]] = field(default_factory=list)

    def frame(self, frame_id: int) -> list[dict[str, Any]]:
        """The call stack of ``stack_frame_id`` ``frame_id``, innermost first, as file/function/line dicts."""
        # As XLA prints them, a frame's parent_frame_id is one more than its parent's id (1: no parent).
        frames = []
        seen: set[int] = set()
        while 0 < frame_id <= len(self.stack_frames) and frame_id not in seen:
            seen.add(frame_id)
            entry = self.stack_frames[frame_id - 1]
            location = _entry(self.file_locations, entry.get("file_location_id", 0)) or {}
            frames.append({
                "file": _entry(self.file_names, location.get("file_name_id", 0)),
                "function": _entry(self.function_names, location.get("function_name_id", 0)),
                **{k: v for k, v in location.items() if k not in ("file_name_id", "function_name_id")},
            })
            frame_id = entry.get("parent_frame_id", 0) - 1
        return frames


def _entry(table: list[Any], number: int) -> Any:
    """Entry ``number`` (1-based) of ``table``, None when out of range."""
    return table[number - 1] if 0 < number <= len(table) else None


@dataclass(eq=False)
class HloModule:
    """A parsed HLO module: header attributes, stack frame tables and computations in file order.

    >>> m = parse_hlo_module("HloModule m\\nENTRY e {\\n  ROOT p = f32[] parameter(0)\\n}\\n")
    >>> m.name, m.entry.name, m.entry.root.opcode
    ('m', 'e', 'parameter')
    """

    name: str
    attributes: Attributes
    computations: list[HloComputation]
    stack_frame_index: StackFrameIndex | None = None
    _source: _Source = field(default_factory=lambda: _EMPTY_SOURCE, repr=False)
    _by_name: dict[str, HloComputation] | None = field(default=None, repr=False)

    def __repr__(self) -> str:
        return f"HloModule({self.name!r}, {len(self.computations)} computations)"

    def __str__(self) -> str:
        return module_text(self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HloModule):
            return NotImplemented
        return (self.name, self.attributes.pairs(), self.stack_frame_index, self.computations) == (
            other.name, other.attributes.pairs(), other.stack_frame_index, other.computations)

    __hash__ = None  # type: ignore[assignment]

    @property
    def entry(self) -> HloComputation:
        """The computation marked ENTRY, else the last one (XLA's rule)."""
        for computation in self.computations:
            if computation.is_entry:
                return computation
        return self.computations[-1]

    def computation(self, name: str) -> HloComputation:
        """The computation called ``name``."""
        if self._by_name is None:
            self._by_name = {}
            for computation in self.computations:
                self._by_name.setdefault(computation.name, computation)
        return self._by_name[name]

    def instructions(self) -> Iterator[HloInstruction]:
        """Every instruction of every computation, in file order."""
        for computation in self.computations:
            yield from computation.instructions

    @property
    def is_scheduled(self) -> bool:
        """True when the header says ``is_scheduled=true``."""
        return bool(self.attributes.get_typed("is_scheduled", False))

    @property
    def schedule(self) -> dict[str, list[str]] | None:
        """For scheduled modules: the instruction order of every computation that is not a fusion body."""
        if not self.is_scheduled:
            return None
        fused = {name for i in self.instructions() if i.opcode == "fusion" for name in i.called_computations}
        return {c.name: [i.name for i in c.instructions] for c in self.computations if c.name not in fused}

    @property
    def entry_computation_layout(self) -> tuple[tuple[Shape, ...], Shape] | None:
        """``entry_computation_layout={(params)->result}`` read into shapes; None when absent."""
        value: tuple[tuple[Shape, ...], Shape] | None = self.attributes.get_typed("entry_computation_layout")
        return value

    def problems(self) -> list[Problem]:
        """Cross-checks that do not stop parsing: undefined or duplicate names, unknown references, bad values."""
        return _module_problems(self)

    def validate(self) -> HloModule:
        """Raise the first of ``problems()`` as a ParseError; returns self when there are none."""
        problems = self.problems()
        if problems:
            raise ParseError(problems[0].message, self._source.text, problems[0].position)
        return self


@dataclass(frozen=True)
class Problem:
    """One cross-check failure, located in the parsed text."""

    message: str
    position: int
    line: int
    column: int

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.message}"


@dataclass(frozen=True)
class Sharding:
    """A ``sharding={...}`` value: kind, tile assignment and devices, or the shardings of a tuple's elements."""

    kind: str
    tile_assignment_dimensions: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    last_tile_dim_replicate: bool = False
    last_tile_dims: tuple[str, ...] = ()
    device: int | None = None
    tuple_shardings: tuple[Sharding, ...] = ()
    other: tuple[str, ...] = ()


# ----------------------------------------------------------------------------------------------------
# The careful parser: token by token, on the shape lexer
# ----------------------------------------------------------------------------------------------------


class _Careful(ShapeParser):
    """Token-level HLO parser; the fast path hands it every line it does not recognise."""

    __slots__ = ("literal_start", "prev_end", "source")

    def __init__(self, source: _Source, position: int) -> None:
        self.source = source
        self.prev_end = position
        self.literal_start = position
        super().__init__(source.text, position)

    def advance(self) -> Token:
        """Consume the current token."""
        token = self.token
        self.prev_end = token.end
        self.token = self.lexer.next()
        return token

    def jump(self, position: int) -> None:
        """Continue lexing at ``position`` (after a raw-scanned group)."""
        self.prev_end = position
        self.lexer.pos = position
        self.token = self.lexer.next()

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

    def name(self, what: str) -> str:
        """An instruction/computation name: a plain word or ``%name``."""
        token = self.token
        if token.kind == "ident" or (token.kind == "name" and self.text[token.start] == "%"):
            self.advance()
            return str(token.value)
        raise self.fail(f"expected {what}")

    def any_shape(self) -> Shape:
        """A shape at the current token (deep nesting is a ParseError, not a RecursionError)."""
        try:
            return self.shape()
        except RecursionError:
            raise self.error("shape nested too deeply") from None

    # ----- attribute values -----
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
        if token.kind == "ident" or (token.kind == "name" and self.text[token.start] == "%"):
            return self.peek_kind() == "="
        return False

    def item(self) -> None:
        """One token or one bracketed group of a value."""
        kind = self.token.kind
        if kind == "{":
            self.jump(_scan_braces(self.source, self.token.start))
        elif kind in _CLOSERS:
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
            if token.kind == _CLOSERS[str(stack[-1].kind)]:
                self.advance()
                stack.pop()
            elif token.kind in _CLOSERS:
                stack.append(self.advance())
            elif token.kind == "{":
                self.jump(_scan_braces(self.source, token.start))
            elif token.kind == "eof":
                opener = stack[-1]
                raise self.error(f"unterminated {opener.kind!r}: no matching {_CLOSERS[str(opener.kind)]!r}", opener)
            elif token.kind in (")", "]", "}"):
                raise self.fail(f"expected {_CLOSERS[str(stack[-1].kind)]!r} to close {stack[-1].kind!r}")
            elif token.kind == "error":
                raise self.error("unexpected text")
            else:
                self.advance()

    def attribute_list(self) -> Attributes:
        """``(',' key=value)*`` into Attributes."""
        pairs: list[tuple[str, str]] = []
        positions: list[int] = []
        while self.token.kind == ",":
            self.advance()
            key = self.expect("attribute_name", "expected an attribute name followed by '=' (key=value)")
            raw, position = self.value()
            pairs.append((str(key.value), raw))
            positions.append(position)
        return Attributes(pairs, positions, self.source)

    # ----- instructions -----
    def instruction(self) -> HloInstruction:
        """``[ROOT] name = shape opcode(operands) (, key=value)*``"""
        start = self.token.start
        is_root = self.keyword("ROOT")
        name = self.name("an instruction name")
        self.expect("=", "expected '=' after the instruction name")
        shape = self.any_shape()
        opcode_token = self.token
        if opcode_token.kind != "ident":
            raise self.fail("expected an opcode (add, fusion, get-tuple-element ...)")
        self.advance()
        opcode = str(opcode_token.value)
        self.expect("(", f"expected '(' after the opcode {opcode}")
        parameter_number = None
        literal_text = None
        operands: list[str] = []
        shapes: list[Shape | None] | None = None
        if opcode == "parameter":
            parameter_number = self.parameter_number()
        elif opcode == "constant":
            literal_text = self.literal()
        else:
            operands, shapes = self.operands()
        attributes = self.attribute_list()
        return HloInstruction(name, opcode, shape, operands, shapes, is_root, self.source, start,
                              attributes=attributes, parameter_number=parameter_number, literal_text=literal_text)

    def parameter_number(self) -> int:
        """The ``N)`` of ``parameter(N)``."""
        token = self.token
        number = self.integer("a parameter number")
        if number < 0:
            raise self.error(f"parameter number {number} is negative", token)
        self.expect(")", "expected ')' after the parameter number")
        return number

    def literal(self) -> str:
        """The raw literal of ``constant(...)`` up to the closing parenthesis (balanced brackets, any tokens)."""
        start = self.literal_start = self.token.start
        stack: list[Token] = []
        while True:
            token = self.token
            if token.kind in ("(", "{"):
                stack.append(token)
            elif token.kind in (")", "}"):
                if not stack and token.kind == ")":
                    break
                closer = ")" if stack and stack[-1].kind == "(" else "}"
                if not stack or token.kind != closer:
                    raise self.fail(f"expected {closer!r} to close {stack[-1].kind!r}" if stack
                                    else "unbalanced '}' in the literal")
                stack.pop()
            elif token.kind == "eof" or (token.kind == "error" and not _is_uint64(self.text, token)):
                raise self.fail("expected ')' to end the constant's literal" if token.kind == "eof"
                                else "bad token in the literal")
            self.advance()
        if self.prev_end <= start:
            raise self.fail("expected a literal")
        text = self.text[start:self.prev_end]
        self.advance()
        return text

    def operands(self) -> tuple[list[str], list[Shape | None] | None]:
        """``[shape] name (, [shape] name)* )``"""
        names: list[str] = []
        shapes: list[Shape | None] = []
        if self.token.kind == ")":
            self.advance()
            return names, None
        while True:
            shape = self.any_shape() if self.token.kind in ("type", "(") else None
            shapes.append(shape)
            names.append(self.name("an operand name"))
            if self.token.kind == ")":
                self.advance()
                return names, (shapes if any(s is not None for s in shapes) else None)
            self.expect(",", "expected ',' or ')' after an operand")

    # ----- computations and modules -----
    def computation_header(self) -> HloComputation:
        """``[ENTRY] name [(p: shape, ...) -> shape] {``"""
        start = self.token.start
        is_entry = self.keyword("ENTRY")
        name = self.name("a computation name (or 'ENTRY')")
        parameters = None
        result = None
        if self.token.kind == "(":
            self.advance()
            parameters = self.parameter_list()
            self.expect("->", "expected '->' and the result shape after the parameter list")
            result = self.any_shape()
        self.expect("{", "expected '{' to start the computation's instructions")
        return HloComputation(name, is_entry=is_entry, parameters=parameters, result_shape=result, position=start)

    def parameter_list(self) -> list[tuple[str, Shape]]:
        """``p: shape (, p: shape)* )``"""
        parameters: list[tuple[str, Shape]] = []
        if self.token.kind == ")":
            self.advance()
            return parameters
        while True:
            token = self.token
            if token.kind != "name" or self.text[token.start] == "%":
                raise self.fail("expected a parameter name followed by ':'")
            self.advance()
            parameters.append((str(token.value), self.any_shape()))
            if self.token.kind == ")":
                self.advance()
                return parameters
            self.expect(",", "expected ',' or ')' in the parameter list")

    def computation_end(self, computation: HloComputation) -> None:
        """``} (, key=value)*``"""
        self.expect("}", "expected '}' to end the computation")
        computation.attributes = self.attribute_list()

    def header(self) -> tuple[str, Attributes]:
        """``HloModule name (, key=value)*``"""
        if not self.keyword("HloModule"):
            raise self.fail("expected 'HloModule' at the start of the module")
        name = self.name("a module name")
        return name, self.attribute_list()

    def stack_frame_index(self) -> StackFrameIndex | None:
        """The optional FileNames / FunctionNames / FileLocations / StackFrames tables."""
        if not self.keyword("FileNames"):
            return None
        index = StackFrameIndex()
        index.file_names = self.numbered(self.string)
        self.expect_keyword("FunctionNames")
        index.function_names = self.numbered(self.string)
        self.expect_keyword("FileLocations")
        index.file_locations = self.numbered(self.int_fields)
        self.expect_keyword("StackFrames")
        index.stack_frames = self.numbered(self.int_fields)
        return index

    def expect_keyword(self, word: str) -> None:
        """Consume keyword ``word`` or fail."""
        if not self.keyword(word):
            raise self.fail(f"expected {word!r}")

    def numbered(self, entry: Any) -> list[Any]:
        """Entries ``N entry`` while the next token is an integer."""
        entries = []
        while self.token.kind == "int":
            self.advance()
            entries.append(entry())
        return entries

    def string(self) -> str:
        """A string token, unescaped."""
        token = self.expect("string", "expected a string")
        return _unescape(self.text[token.start + 1:token.end - 1])

    def int_fields(self) -> dict[str, int]:
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


def _is_uint64(text: str, token: Token) -> bool:
    """True for the integer tokens between 2**63 and 2**64 - 1 that XLA reads as unsigned (u64 literals)."""
    match = _UINT.fullmatch(text, token.start, token.end)
    return match is not None and int(match.group()) <= _UINT64_MAX


def _scan_braces(source: _Source, start: int) -> int:
    """End of the ``{...}`` group at ``start``: braces balanced outside double-quoted strings (XLA's JSON scan)."""
    text = source.text
    depth = 0
    position = start
    while True:
        match = _BRACE_EVENT.search(text, position)
        if match is None:
            raise source.error("unterminated '{': no matching '}'", start)
        char = match.group()
        if char == '"':
            string = _DQ_STRING.match(text, match.start())
            if string is None:
                raise source.error("unterminated string", match.start())
            position = string.end()
            continue
        depth += 1 if char == "{" else -1
        position = match.end()
        if depth == 0:
            return position


# ----------------------------------------------------------------------------------------------------
# The fast path: whole canonical lines at a time
# ----------------------------------------------------------------------------------------------------


def _fast_instruction(match: re.Match[str], source: _Source, offset: int) -> HloInstruction | None:
    """The instruction a matched line holds, or None when the careful parser must decide."""
    root, percent, name, shape_text_, opcode, names, _, _, tail = match.groups()
    if (not percent and name in _RESERVED) or opcode not in OPCODES:
        return None
    try:
        shape = parse_shape(shape_text_)
    except ParseError:
        return None
    if names is None or opcode in ("constant", "parameter"):
        return _fast_other(match, shape, source, offset)
    operands: list[str] = []
    if names:
        if "/" in names:
            names = _INDEX_COMMENT.sub("", names)
        operands = names.replace("%", "").split(", ")
        if names.count("%") != len(operands) and not _RESERVED.isdisjoint(operands):
            return None
    return HloInstruction(name, opcode, shape, operands, None, root is not None, source, offset, tail)


def _fast_other(match: re.Match[str], shape: Shape, source: _Source, offset: int) -> HloInstruction | None:
    """Constants, parameters and operands with shapes on the fast path (None: the careful parser decides)."""
    root, _, name, _, opcode, names, number, other, tail = match.groups()
    operands: list[str] = []
    shapes: list[Shape | None] | None = None
    parameter_number = None
    literal_text = None
    if opcode == "constant":
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
    return other if other is not None and _SCALAR_LITERAL.fullmatch(other) else None


def _shaped_operands(text: str) -> tuple[list[str], list[Shape | None] | None] | None:
    """Operands some of which carry a shape (``f32[2]{0} %x, %y``), or None to defer to the careful parser."""
    names: list[str] = []
    shapes: list[Shape | None] = []
    position = 0
    for match in _SHAPED_OPERAND.finditer(text):
        if match.start() != position:
            return None
        position = match.end()
        operand_shape, percent, name = match.groups()
        if not percent and name in _RESERVED:
            return None
        try:
            shapes.append(parse_shape(operand_shape) if operand_shape else None)
        except ParseError:
            return None
        names.append(name)
    if position != len(text) or text.endswith(", "):
        return None
    return names, (shapes if any(s is not None for s in shapes) else None)


def _fast_computation(line: str, offset: int) -> HloComputation | None:
    """The computation a header line opens, or None when the careful parser must decide."""
    match = _COMPUTATION.fullmatch(line)
    if match is None:
        return None
    entry, percent, name, parameter_text, result_text = match.groups()
    if not percent and name in _RESERVED:
        return None
    parameters = None
    result = None
    if parameter_text is not None:
        parts = _PARAMETER_SPLIT.split(parameter_text)
        if parts[0]:
            return None
        try:
            parameters = [(parts[k], parse_shape(parts[k + 1])) for k in range(1, len(parts), 2)]
            result = parse_shape(result_text)
        except (ParseError, RecursionError):
            return None
    return HloComputation(name, is_entry=entry is not None, parameters=parameters, result_shape=result,
                          position=offset)


class _Reader:
    """Reads a module: canonical lines by regex, everything else with the careful parser."""

    __slots__ = ("computations", "current", "fast", "index", "lines", "seen_line", "seen_position", "source")

    def __init__(self, source: _Source, fast: bool) -> None:
        self.source = source
        self.fast = fast
        self.lines = source.text.split("\n")
        self.seen_line = 0
        self.seen_position = 0
        self.computations: list[HloComputation] = []
        self.current: HloComputation | None = None
        self.index: StackFrameIndex | None = None

    def module(self) -> HloModule:
        """The whole module."""
        careful = _Careful(self.source, 0)
        name, attributes = careful.header()
        self.index = careful.stack_frame_index()
        self.computations_from(careful.token.start)
        return HloModule(name, attributes, self.computations, self.index, self.source)

    def computations_from(self, position: int) -> None:
        """Every computation from ``position`` to the end: fast lines where possible, careful steps between."""
        end = len(self.source.text)
        while True:
            position = self.source.first_token(position)
            line, start, at_line_start = self.locate(position)
            if self.fast and at_line_start:
                position = self.source.first_token(self.fast_lines(line, start))
            if position >= end and (self.computations and self.current is None):
                return
            position = self.careful_step(position)

    def locate(self, position: int) -> tuple[int, int, bool]:
        """Line index and line start of ``position``, and whether only blanks precede it on its line."""
        text = self.source.text
        self.seen_line += text.count("\n", self.seen_position, position)
        self.seen_position = position
        start = text.rfind("\n", 0, position) + 1
        return self.seen_line, start, not text[start:position].strip()

    def careful_step(self, position: int) -> int:
        """Read one computation header, instruction or closing brace with the careful parser."""
        careful = _Careful(self.source, position)
        current = self.current
        if current is None and careful.token.kind == "keyword" and careful.token.value == "FileNames":
            if self.index is not None:
                raise careful.fail("the stack frame tables appear twice")
            self.index = careful.stack_frame_index()  # after the computations: accepted too
        elif current is None:
            self.current = careful.computation_header()
            self.computations.append(self.current)
        elif careful.token.kind == "}" and current.instructions:
            careful.computation_end(current)
            self.current = None
        elif careful.token.kind in ("}", "eof"):
            raise careful.fail(f"expected an instruction{' or }' if current.instructions else ''} in computation "
                               f"{current.name}")
        else:
            current.instructions.append(careful.instruction())
        return careful.token.start

    def fast_lines(self, line: int, start: int) -> int:
        """Match lines from ``line`` (at offset ``start``) on; return the offset where careful parsing resumes."""
        # When a line needs care, the item accepted just before it is handed back too: the careful parser may read
        # it differently once it sees what follows (a leading ',' continues the attributes, a number after
        # '-> f32[] {' makes the brace a layout).
        lines = self.lines
        match = _INSTRUCTION.fullmatch
        source = self.source
        current = self.current
        append = current.instructions.append if current is not None else None
        count = len(lines)
        last = -1  # offset of the last item accepted (-1: none yet)
        while line < count:
            text = lines[line]
            if append is not None:
                found = match(text)
                if found is not None:
                    instruction = _fast_instruction(found, source, start)
                    if instruction is None:
                        break
                    append(instruction)
                    last = start
                elif (text == "}" or text.strip(_BLANKS) == "}") and current is not None and current.instructions:
                    current = append = None
                    last = start
                elif text.strip(_BLANKS):
                    break
            elif text.strip(_BLANKS):
                current = _fast_computation(text, start)
                if current is None:
                    break
                self.computations.append(current)
                append = current.instructions.append
                last = start
            start += len(text) + 1
            line += 1
        else:
            self.current = current
            return min(start, len(source.text))
        self.current = current
        return self.undo_last(last) if last >= 0 else start

    def undo_last(self, position: int) -> int:
        """Forget the item the fast path accepted at ``position`` and return that position."""
        current = self.current
        if current is None:
            self.current = self.computations[-1]
        elif current.instructions and current.instructions[-1]._position == position:
            current.instructions.pop()
        else:
            self.computations.pop()
            self.current = None
        return position


def _checked(text: object) -> _Source:
    """The text as a _Source, after the checks every entry point shares."""
    if not isinstance(text, str):
        raise ParseError(f"HLO text must be a str, got {type(text).__name__}")
    if "\x00" in text:
        raise ParseError("NUL character in the text", text, text.index("\x00"))
    return _Source(text)


def parse_hlo_module(text: str, *, strict: bool = False, fast: bool = True) -> HloModule:
    """Parse an HLO module; problems() raise only if ``strict``; ``fast=False`` uses the careful parser alone."""
    source = _checked(text)
    collecting = gc.isenabled()
    gc.disable()  # parsing allocates many objects and no cycles; collections would only cost time
    try:
        module = _Reader(source, fast).module()
    except RecursionError:
        raise ParseError("HLO text nested too deeply", source.text, 0) from None
    finally:
        if collecting:
            gc.enable()
    return module.validate() if strict else module


def parse_instruction(text: str) -> HloInstruction:
    """Parse one instruction, e.g. ``add.1 = f32[2]{0} add(x, y)`` (leading ``%``/``ROOT`` allowed)."""
    source = _checked(text)
    careful = _Careful(source, 0)
    instruction = careful.instruction()
    if careful.token.kind != "eof":
        raise careful.fail("unexpected text after the instruction")
    return instruction


# ----------------------------------------------------------------------------------------------------
# Printing
# ----------------------------------------------------------------------------------------------------


def _operand_text(index: int, name: str, shape: Shape | None) -> str:
    """One operand as XLA prints it, with the ``/*index=5*/`` mark before every fifth."""
    mark = f"/*index={index}*/" if index and index % 5 == 0 else ""
    if shape is None:
        return f"{mark}%{name}"
    return f"{mark}{shape_text(shape, index_comments=True)} %{name}"


def _attributes_text(attributes: Attributes) -> str:
    """``, key=value`` for every attribute in order."""
    return "".join(f", {key}={value}" for key, value in attributes.pairs())


def instruction_text(instruction: HloInstruction) -> str:
    """An instruction as one line of HLO text (without indentation)."""
    if instruction.parameter_number is not None:
        inner = str(instruction.parameter_number)
    elif instruction.literal_text is not None:
        inner = instruction.literal_text
    else:
        inner = ", ".join(_operand_text(i, name, shape) for i, (name, shape) in
                          enumerate(zip(instruction.operands, instruction.operand_shapes)))
    root = "ROOT " if instruction.is_root else ""
    shape = shape_text(instruction.shape, index_comments=True)
    return (f"{root}%{instruction.name} = {shape} {instruction.opcode}({inner})"
            f"{_attributes_text(instruction.attributes)}")


def computation_text(computation: HloComputation) -> str:
    """A computation: header line, indented instructions, closing brace."""
    header = ("ENTRY " if computation.is_entry else "") + f"%{computation.name}"
    if computation.parameters is not None and computation.result_shape is not None:
        parameters = ", ".join(f"{name}: {shape_text(shape, index_comments=True)}"
                               for name, shape in computation.parameters)
        header += f" ({parameters}) -> {shape_text(computation.result_shape, index_comments=True)}"
    body = "".join(f"  {instruction_text(i)}\n" for i in computation.instructions)
    return f"{header} {{\n{body}}}{_attributes_text(computation.attributes)}\n"


def _stack_frame_text(index: StackFrameIndex) -> str:
    """The four stack frame tables as XLA prints them."""

    def fields(entry: dict[str, int]) -> str:
        return "{" + " ".join(f"{key}={value}" for key, value in entry.items()) + "}"

    sections = [
        ("FileNames", [_escape(name) for name in index.file_names]),
        ("FunctionNames", [_escape(name) for name in index.function_names]),
        ("FileLocations", [fields(entry) for entry in index.file_locations]),
        ("StackFrames", [fields(entry) for entry in index.stack_frames]),
    ]
    return "".join(title + "\n" + "".join(f"{i} {entry}\n" for i, entry in enumerate(entries, 1)) + "\n"
                   for title, entries in sections)


def module_text(module: HloModule) -> str:
    """A whole module as HLO text that parses back to an equal module."""
    name = module.name if module.name not in _RESERVED else f"%{module.name}"
    parts = [f"HloModule {name}{_attributes_text(module.attributes)}\n\n"]
    if module.stack_frame_index is not None:
        parts.append(_stack_frame_text(module.stack_frame_index) + "\n")
    parts.extend(computation_text(c) + "\n" for c in module.computations)
    return "".join(parts)


# ----------------------------------------------------------------------------------------------------
# Typed attribute values (read on demand, from the value's place in the text)
# ----------------------------------------------------------------------------------------------------


class _Values(_Careful):
    """Reads one attribute value by its type; errors point into the module text."""

    __slots__ = ()

    def number(self) -> int:
        """An integer."""
        return self.integer("an integer")

    def real(self) -> float:
        """A floating-point number (or integer, inf, -inf, nan)."""
        token = self.token
        if token.kind in ("decimal", "int", "neg_inf"):
            self.advance()
            return float(token.value)  # type: ignore[arg-type]
        if token.kind == "keyword" and token.value == "inf":
            self.advance()
            return math.inf
        raise self.fail("expected a number")

    def boolean(self) -> bool:
        """``true`` or ``false``."""
        token = self.token
        if token.kind == "keyword" and token.value in ("true", "false"):
            self.advance()
            return token.value == "true"
        raise self.fail("expected true or false")

    def text_value(self) -> str:
        """A quoted string, unescaped."""
        return self.string()

    def word(self) -> str:
        """An identifier (enum values like kLoop, LT, API_VERSION_TYPED_FFI)."""
        token = self.token
        if token.kind in ("ident", "keyword", "type"):
            self.advance()
            return self.text[token.start:token.end]
        raise self.fail("expected a word")

    def braced(self, item: Any, open_: str = "{", close: str = "}") -> tuple[Any, ...]:
        """``{item, item, ...}`` (or another pair of brackets) as a tuple."""
        self.expect(open_, f"expected {open_!r}")
        items = []
        if self.token.kind == close:
            self.advance()
            return ()
        while True:
            items.append(item())
            if self.token.kind == close:
                self.advance()
                return tuple(items)
            self.expect(",", f"expected ',' or {close!r}")

    def generic(self) -> Any:
        """Any simple value: number, bool, string, name, word, or a braced list of them."""
        token = self.token
        kind = token.kind
        if kind == "{":
            return self.braced(self.generic)
        if kind == "int":
            return self.number()
        if kind in ("decimal", "neg_inf") or (kind == "keyword" and token.value == "inf"):
            return self.real()
        if kind == "keyword" and token.value in ("true", "false"):
            return self.boolean()
        if kind == "string":
            return self.string()
        if kind == "name" and self.text[token.start] == "%":
            self.advance()
            return str(token.value)
        if kind in ("ident", "dim_labels", "dxd", "pad", "type", "keyword"):
            self.advance()
            return self.text[token.start:token.end]
        raise self.fail("expected a value")

    def sub_attributes(self) -> dict[str, Any]:
        """``{key=value key=value ...}`` (commas optional) as a dict."""
        self.expect("{", "expected '{'")
        fields: dict[str, Any] = {}
        while self.token.kind != "}":
            if self.token.kind == ",":
                self.advance()
            key = self.expect("attribute_name", "expected key=value or '}'")
            fields[str(key.value)] = self.generic()
        self.advance()
        return fields

    def computation_name(self) -> str:
        """A computation name (``%name`` or a plain word)."""
        return self.name("a computation name")

    def names(self) -> Any:
        """One name, or ``{name, name, ...}``."""
        if self.token.kind == "{":
            return self.braced(self.computation_name)
        return self.computation_name()

    def raw_braces(self) -> str:
        """A ``{...}`` group's text as written (XLA's JSON-dictionary scan)."""
        if self.token.kind != "{":
            raise self.fail("expected '{'")
        start = self.token.start
        self.jump(_scan_braces(self.source, start))
        return self.text[start:self.prev_end]

    def shape_index(self) -> tuple[int, ...]:
        """``{}`` or ``{0,1}``."""
        return self.braced(self.number)


def _bool_or_list(p: _Values) -> Any:
    """``true``, ``false`` or ``{true,false,...}``."""
    return p.braced(p.boolean) if p.token.kind == "{" else p.boolean()


def _frontend_attributes(p: _Values) -> dict[str, str]:
    """``{key="value", key={json}}`` as a dict of strings."""
    p.expect("{", "expected '{'")
    values: dict[str, str] = {}
    while p.token.kind != "}":
        key = p.expect("attribute_name", "expected key=value or '}'")
        values[str(key.value)] = p.raw_braces() if p.token.kind == "{" else p.string()
        if p.token.kind != "}":
            p.expect(",", "expected ',' or '}'")
    p.advance()
    return values


def _backend_config(p: _Values) -> Any:
    """A string or ``{...}``: decoded when it is JSON, else its text."""
    text = p.raw_braces() if p.token.kind == "{" else p.string()
    try:
        return json.loads(text)
    except ValueError:
        return text


def _slice_ranges(p: _Values) -> tuple[tuple[int, int, int], ...]:
    """``{[start:limit:stride], ...}`` as (start, limit, stride) triples."""
    def one() -> tuple[int, int, int]:
        token = p.token
        values = _colon_list(p)
        if len(values) not in (2, 3):
            raise p.error("expected [start:limit] or [start:limit:stride]", token)
        return (values[0], values[1], values[2] if len(values) == 3 else 1)

    return p.braced(one)


def _colon_list(p: _Values) -> list[int]:
    """``[a:b:c]`` as a list of integers."""
    p.expect("[", "expected '['")
    values = [p.number()]
    while p.token.kind == ":":
        p.advance()
        values.append(p.number())
    p.expect("]", "expected ':' or ']'")
    return values


def _pad_numbers(p: _Values, sizes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """``0_1x2_3`` as per-dimension tuples of ``sizes`` numbers."""
    token = p.token
    if token.kind not in ("pad", "int"):
        raise p.fail("expected padding like 0_0x1_1")
    p.advance()
    dims = tuple(tuple(int(v) for v in part.split("_")) for part in p.text[token.start:token.end].split("x"))
    if any(len(d) not in sizes for d in dims):
        raise p.error(f"expected {' or '.join(map(str, sizes))} numbers per dimension", token)
    return dims


def _padding(p: _Values) -> tuple[tuple[int, int, int], ...]:
    """Padding ``low_high[_interior]`` per dimension as (low, high, interior)."""
    return tuple((d[0], d[1], d[2] if len(d) == 3 else 0) for d in _pad_numbers(p, (2, 3)))


def _window(p: _Values) -> dict[str, tuple[Any, ...]]:
    """``{size=3x3 stride=.. pad=.. lhs_dilate=.. rhs_dilate=..}`` as a dict of per-dimension tuples."""
    p.expect("{", "expected '{'")
    window: dict[str, tuple[Any, ...]] = {}
    while p.token.kind != "}":
        key = p.expect("attribute_name", "expected size=, stride=, pad=, lhs_dilate=, rhs_dilate= or '}'")
        if key.value == "pad":
            window["pad"] = _pad_numbers(p, (2,))
        else:
            token = p.token
            if token.kind not in ("int", "dxd"):
                raise p.fail("expected a size like 3 or 3x3")
            p.advance()
            window[str(key.value)] = tuple(int(v) for v in p.text[token.start:token.end].split("x"))
    p.advance()
    return window


def _dim_labels(p: _Values) -> str:
    """Convolution dimension labels such as ``b01f_01io->b01f``."""
    token = p.expect("dim_labels", "expected dimension labels like b01f_01io->b01f")
    return p.text[token.start:token.end]


def _shapes(p: _Values) -> tuple[Shape, ...]:
    """``{shape, shape, ...}``."""
    return p.braced(p.any_shape)


def _computation_layout(p: _Values) -> tuple[tuple[Shape, ...], Shape]:
    """``{(shape, ...)->shape}`` as (parameter shapes, result shape)."""
    p.expect("{", "expected '{'")
    parameters = p.braced(p.any_shape, "(", ")")
    p.expect("->", "expected '->'")
    result = p.any_shape()
    p.expect("}", "expected '}'")
    return parameters, result


def _aliasing(p: _Values) -> tuple[tuple[Any, ...], ...]:
    """``{{out}: (operand, {index}[, kind]), ...}`` as (output index, operand, operand index[, kind])."""
    def one() -> tuple[Any, ...]:
        output = p.shape_index()
        p.expect(":", "expected ':'")
        p.expect("(", "expected '('")
        entry: list[Any] = [output, p.number()]
        p.expect(",", "expected ','")
        entry.append(p.shape_index())
        if p.token.kind == ",":
            p.advance()
            entry.append(p.word())
        p.expect(")", "expected ')'")
        return tuple(entry)

    return p.braced(one)


def _iota_devices(p: _Values) -> np.ndarray[Any, Any]:
    """``[dims]<=[reshape]T(perm)``: device ids in an array of ``dims``."""
    start = p.token
    dims = p.braced(p.number, "[", "]")
    p.expect("<=", "expected '<='")
    reshape = p.braced(p.number, "[", "]")
    order = tuple(range(len(reshape)))
    if p.token.kind == "ident" and p.token.value == "T":
        token = p.advance()
        order = p.braced(p.number, "(", ")")
        if sorted(order) != list(range(len(reshape))):
            raise p.error("T(...) must permute the reshape dimensions", token)
    devices = np.arange(math.prod(reshape)).reshape(reshape).transpose(order)
    if math.prod(dims) != devices.size:
        raise p.error(f"[{','.join(map(str, dims))}] does not hold {devices.size} devices", start)
    grid: np.ndarray[Any, Any] = devices.reshape(dims)
    return grid


def _replica_groups(p: _Values) -> tuple[tuple[int, ...], ...]:
    """Replica groups written as lists, as an iota ``[g,s]<=[n]`` or as ``mesh[...] {axes}``."""
    if p.token.kind == "{":
        return p.braced(lambda: p.braced(p.number))
    if p.token.kind == "[":
        token = p.token
        groups = _iota_devices(p)
        if groups.ndim != 2:
            raise p.error("iota replica groups need two dimensions [groups,size]", token)
        return tuple(tuple(int(d) for d in row) for row in groups)
    if p.token.kind == "ident" and p.token.value == "mesh":
        return _mesh_groups(p)
    raise p.fail("expected replica groups")


def _mesh_groups(p: _Values) -> tuple[tuple[int, ...], ...]:
    """``mesh['x'=4,'y'=2] {'y'}``: one group per position on the other axes."""
    p.advance()

    def axis() -> tuple[str, int]:
        name = p.string()
        p.expect("=", "expected '='")
        return name, p.number()

    axes = dict(p.braced(axis, "[", "]"))
    token = p.token
    chosen = p.braced(p.string)
    if not set(chosen) <= set(axes):
        raise p.error("the group's axes must be axes of the mesh", token)
    order = [i for i, name in enumerate(axes) if name not in chosen] + [list(axes).index(n) for n in chosen]
    devices = np.arange(math.prod(axes.values())).reshape(tuple(axes.values())).transpose(order)
    size = math.prod(axes[name] for name in chosen)
    return tuple(tuple(int(d) for d in row) for row in devices.reshape(-1, size))


def _sharding(p: _Values) -> Sharding:
    """``{replicated}``, ``{devices=[..]..}``, ``{maximal device=N}`` or a tuple of them."""
    p.expect("{", "expected '{' to start a sharding")
    if p.token.kind in ("{", "}"):
        elements = []
        while p.token.kind == "{":
            elements.append(_sharding(p))
            if p.token.kind == ",":
                p.advance()
        p.expect("}", "expected '}' to end the tuple sharding")
        return Sharding("tuple", tuple_shardings=tuple(elements))
    fields: dict[str, Any] = {"kind": "tiled"}
    other: list[str] = []
    while p.token.kind != "}":
        _sharding_item(p, fields, other)
    p.advance()
    return Sharding(other=tuple(other), **fields)


def _sharding_item(p: _Values, fields: dict[str, Any], other: list[str]) -> None:
    """One item of a single sharding into ``fields`` (unknown ones into ``other``)."""
    token = p.token
    if token.kind == "keyword" and token.value in ("replicated", "manual", "unknown", "maximal"):
        p.advance()
        fields["kind"] = token.value
    elif token.kind == "keyword" and token.value == "last_tile_dim_replicate":
        p.advance()
        fields["last_tile_dim_replicate"] = True
    elif token.kind == "attribute_name" and token.value == "device":
        p.advance()
        fields["device"] = p.number()
    elif token.kind == "attribute_name" and token.value == "devices":
        p.advance()
        _tile_assignment(p, fields)
    elif token.kind == "attribute_name" and token.value == "last_tile_dims":
        p.advance()
        fields["last_tile_dims"] = p.braced(p.word)
    elif token.kind == "attribute_name":
        p.advance()
        start = p.token.start
        p.item()
        other.append(f"{token.value}={p.text[start:p.prev_end]}")
    elif token.kind == "keyword" and token.value in ("shard_as", "shard_like"):
        p.advance()
        other.append(f"{token.value} {p.number()}")
    else:
        raise p.fail("unexpected text in the sharding")


def _tile_assignment(p: _Values, fields: dict[str, Any]) -> None:
    """``[dims]`` then ``<=[reshape]T(perm)`` or explicit device ids."""
    start = p.token
    dims = p.braced(p.number, "[", "]")
    if p.token.kind == "<=":
        p.advance()
        reshape = p.braced(p.number, "[", "]")
        order = tuple(range(len(reshape)))
        if p.token.kind == "ident" and p.token.value == "T":
            p.advance()
            order = p.braced(p.number, "(", ")")
        if sorted(order) != list(range(len(reshape))) or math.prod(reshape) != math.prod(dims):
            raise p.error("the iota tile assignment does not fit its dimensions", start)
        devices = tuple(int(d) for d in np.arange(math.prod(reshape)).reshape(reshape).transpose(order).flat)
    else:
        found = [p.number()]
        while p.token.kind == ",":
            p.advance()
            found.append(p.number())
        devices = tuple(found)
        if len(devices) != math.prod(dims):
            raise p.error(f"{len(devices)} devices do not fill [{','.join(map(str, dims))}]", start)
    fields.update(tile_assignment_dimensions=dims, devices=devices)


_INT_KEYS = frozenset("""index iota_dimension channel_id feature_group_count batch_group_count index_vector_dim k
exponent_bits mantissa_bits replica_count num_partitions""".split())
_BOOL_KEYS = frozenset("""is_scheduled indices_are_sorted unique_indices use_global_device_ids constrain_layout
is_stable largest custom_call_has_side_effect is_host_transfer alias_passthrough_params""".split())
_INT_LIST_KEYS = frozenset("""dimensions lhs_contracting_dims rhs_contracting_dims lhs_batch_dims rhs_batch_dims
slice_sizes dynamic_slice_sizes offset_dims collapsed_slice_dims start_index_map update_window_dims
inserted_window_dims scatter_dims_to_operand_dims operand_batching_dims start_indices_batching_dims
input_batching_dims scatter_indices_batching_dims fft_length""".split())
_STRING_KEYS = frozenset("custom_call_target async_execution_thread execution_thread infeed_config".split())

_VALUE_READERS: dict[str, Any] = {
    **{key: _Values.number for key in _INT_KEYS},
    **{key: _Values.boolean for key in _BOOL_KEYS},
    **{key: (lambda p: p.braced(p.number)) for key in _INT_LIST_KEYS},
    **{key: _Values.text_value for key in _STRING_KEYS},
    **{key: _Values.computation_name for key in ("to_apply", "condition", "body", "select", "scatter",
                                                 "true_computation", "false_computation")},
    **{key: (lambda p: p.braced(p.computation_name)) for key in ("branch_computations", "called_computations",
                                                                 "control-predecessors")},
    "calls": _Values.names,
    "kind": _Values.word,
    "direction": _Values.word,
    "api_version": _Values.word,
    "metadata": _Values.sub_attributes,
    "frontend_attributes": _frontend_attributes,
    "backend_config": _backend_config,
    "sharding": _sharding,
    "replica_groups": _replica_groups,
    "source_target_pairs": lambda p: p.braced(lambda: p.braced(p.number)),
    "slice": _slice_ranges,
    "padding": _padding,
    "window": _window,
    "dim_labels": _dim_labels,
    "entry_computation_layout": _computation_layout,
    "operand_layout_constraints": _shapes,
    "output_to_operand_aliasing": _aliasing,
    "input_output_alias": _aliasing,
    "allow_spmd_sharding_propagation_to_parameters": _bool_or_list,
    "allow_spmd_sharding_propagation_to_output": _bool_or_list,
    "operand_precision": lambda p: p.braced(p.word),
}
"""How ``Attributes.typed`` reads each well-known key; other keys are read generically when they can be."""


def _typed_value(key: str, raw: str, source: _Source, position: int) -> Any:
    """``raw`` (at ``position`` of ``source``) read as the type of attribute ``key``."""
    reader = _VALUE_READERS.get(key)
    parser = _Values(source, position)
    if reader is None:
        try:
            value = parser.generic()
        except (ParseError, RecursionError):
            return raw
        return value if parser.prev_end == position + len(raw) else raw
    try:
        value = reader(parser)
    except RecursionError:
        raise source.error("value nested too deeply", position) from None
    if parser.prev_end != position + len(raw):
        raise parser.fail(f"unexpected text in attribute {key}")
    return value


# ----------------------------------------------------------------------------------------------------
# Constant literals
# ----------------------------------------------------------------------------------------------------


def _literal_value(instruction: HloInstruction) -> Any:
    """Read a constant's literal against its shape (XLA's nesting and element-count rules)."""
    text = instruction.literal_text or ""
    if text == "{...}":
        return None
    source = instruction._source
    careful = _Careful(source, instruction.position)
    careful.instruction()
    start = careful.literal_start
    parser = _Values(source, start)
    try:
        value = _literal(parser, instruction.shape)
    except RecursionError:
        raise source.error("literal nested too deeply", start) from None
    if parser.prev_end != start + len(text):
        raise parser.fail("unexpected text after the literal")
    return value


def _literal(p: _Values, shape: Shape) -> Any:
    """A tuple or array literal of ``shape``."""
    if shape.is_tuple:
        p.expect("(", "expected '(' to start a tuple literal")
        elements = []
        for i, element in enumerate(shape.tuple_shapes):
            if i:
                p.expect(",", "expected ',' between tuple elements")
            elements.append(_literal(p, element))
        p.expect(")", f"expected ')' after {len(shape.tuple_shapes)} tuple elements")
        return tuple(elements)
    if not shape.is_array:
        raise p.fail(f"{shape} values have no literal")
    values: list[Any] = []
    if not shape.dimensions:
        values.append(_scalar(p, shape.element_type))
    elif not _nested_values(p, shape, 0, values):
        return None
    return _array(values, shape)


def _nested_values(p: _Values, shape: Shape, level: int, values: list[Any]) -> bool:
    """``{...}`` for dimension ``level`` into ``values``; False when the literal is elided as ``{...}``."""
    opening = p.expect("{", f"expected '{{' for dimension {level} of {shape_text(shape)}")
    if level == 0 and p.token.kind == "...":
        p.advance()
        p.expect("}", "expected '}' after '...'")
        return False
    count = 0
    while p.token.kind != "}":
        if count and p.token.kind == ",":
            p.advance()
        if level + 1 < shape.rank:
            _nested_values(p, shape, level + 1, values)
        else:
            values.append(_scalar(p, shape.element_type))
        count += 1
    if count != shape.dimensions[level]:
        raise p.error(f"dimension {level} of {shape_text(shape)} needs {shape.dimensions[level]} elements, "
                      f"this has {count}", opening)
    p.advance()
    return True


def _scalar(p: _Values, etype: ElementType) -> Any:
    """One element of type ``etype``."""
    token = p.token
    if etype.name == "pred" and token.kind == "keyword":
        return p.boolean()
    if etype.is_integral or etype.name == "pred":
        if token.kind == "error" and _is_uint64(p.text, token):
            p.advance()
            return int(p.text[token.start:token.end])
        return p.number()
    if etype.is_complex:
        p.expect("(", "expected '(' for a complex number")
        real = p.real()
        p.expect(",", "expected ','")
        imag = p.real()
        p.expect(")", "expected ')'")
        return complex(real, imag)
    if etype.is_floating:
        return p.real()
    raise p.fail(f"{etype} has no literal values")


def _array(values: list[Any], shape: Shape) -> np.ndarray[Any, Any]:
    """The values as a NumPy array of the shape's type and dimensions."""
    import ml_dtypes

    dtype = shape.element_type.numpy_dtype
    if shape.element_type.is_integral:
        info = ml_dtypes.iinfo(dtype)  # type: ignore[no-untyped-call]
        if values and (min(values) < info.min or max(values) > info.max):
            bad = next(v for v in values if not info.min <= v <= info.max)
            raise ParseError(f"{bad} is out of range for {shape.element_type} [{info.min}, {info.max}]")
        return np.array(values, dtype=dtype).reshape(shape.dimensions)
    if shape.element_type.is_floating:
        return np.array(values, dtype=np.float64).astype(dtype).reshape(shape.dimensions)
    return np.array(values, dtype=dtype).reshape(shape.dimensions)


# ----------------------------------------------------------------------------------------------------
# Cross-checks
# ----------------------------------------------------------------------------------------------------


class _Checker:
    """Collects the problems of one module."""

    __slots__ = ("found", "module", "source")

    def __init__(self, module: HloModule) -> None:
        self.module = module
        self.source = module._source
        self.found: list[tuple[int, str]] = []

    def add(self, position: int, message: str) -> None:
        """Record a problem at ``position``."""
        self.found.append((position, message))

    def line(self, position: int) -> int:
        """1-based line of ``position``."""
        return self.source.line_column(position)[0]

    def problems(self) -> list[Problem]:
        """Every problem, in text order."""
        self.computations()
        self.attributes(self.module.attributes, "the module")
        return [Problem(message, position, *self.source.line_column(position))
                for position, message in sorted(self.found, key=lambda item: item[0])]

    def computations(self) -> None:
        """Computation-level checks, then each computation's instructions."""
        seen: dict[str, HloComputation] = {}
        for computation in self.module.computations:
            position = self.source.first_token(computation.position)
            if computation.name in seen:
                first = self.line(self.source.first_token(seen[computation.name].position))
                self.add(position, f"computation {computation.name} is already defined on line {first}")
            seen.setdefault(computation.name, computation)
            self.attributes(computation.attributes, f"computation {computation.name}")
        entries = [c for c in self.module.computations if c.is_entry]
        if len(entries) > 1:
            self.add(self.source.first_token(entries[1].position), "more than one ENTRY computation")
        for computation in self.module.computations:
            self.instructions(computation, seen)

    def instructions(self, computation: HloComputation, computations: Mapping[str, HloComputation]) -> None:
        """Names, operands, opcodes, attributes and literals of one computation's instructions."""
        defined: dict[str, HloInstruction] = {}
        everything = {i.name for i in computation.instructions}
        roots = [i for i in computation.instructions if i.is_root]
        if len(roots) > 1:
            self.add(roots[1].position, f"computation {computation.name} has more than one ROOT")
        for instruction in computation.instructions:
            if instruction.name in defined:
                first = self.line(defined[instruction.name].position)
                self.add(instruction.position, f"instruction {instruction.name} is already defined on line {first}")
            for operand in instruction.operands:
                if operand not in defined:
                    how = "is used before its definition" if operand in everything else "is not defined"
                    self.add(_operand_position(instruction, operand),
                             f"operand {operand} of {instruction.name} {how} in computation {computation.name}")
            defined.setdefault(instruction.name, instruction)
            self.instruction(instruction, everything, computations)
            self.shape_rules(instruction, defined)

    def shape_rules(self, instruction: HloInstruction, defined: Mapping[str, HloInstruction]) -> None:
        """An element-wise binary op's or a broadcast's declared shape against XLA's broadcasting rules."""
        operands = [defined[name].shape for name in instruction.operands if name in defined]
        if len(operands) != len(instruction.operands):
            return  # an undefined operand is reported already
        try:
            if instruction.opcode in BINARY_OPS and len(operands) == 2:
                _check_binary_shape(instruction, operands[0], operands[1])
            elif instruction.opcode == "broadcast" and len(operands) == 1 and "dimensions" in instruction.attributes:
                _check_broadcast_shape(instruction, operands[0])
        except (ShapeError, ParseError) as error:
            self.add(instruction.position, f"{instruction.name}: {error}")

    def instruction(self, instruction: HloInstruction, names: set[str],
                    computations: Mapping[str, HloComputation]) -> None:
        """Opcode, attributes, literal, called computations and control predecessors of one instruction."""
        if instruction.opcode not in OPCODES:
            self.add(instruction.position, f"unknown opcode {instruction.opcode}")
        attributes = instruction.attributes
        if not self.attributes(attributes, instruction.name):
            return
        if instruction.literal_text is not None:
            try:
                _ = instruction.literal
            except ParseError as error:
                self.add(error.position if error.text else instruction.position, error.reason)
        for key in _CALL_KEYS:
            if key in attributes:
                value = attributes.typed(key)
                for name in value if isinstance(value, tuple) else (value,):
                    if name not in computations:
                        self.add(attributes.position(key), f"computation {name} (in {key}) is not defined")
        for name in instruction.control_predecessors:
            if name not in names:
                self.add(attributes.position("control-predecessors"), f"control predecessor {name} is not defined")

    def attributes(self, attributes: Attributes, owner: str) -> bool:
        """Repeated keys and well-known values that do not read; True when every value read."""
        seen: set[str] = set()
        ok = True
        for (key, _), position in zip(attributes._pairs, attributes._positions):
            if key in seen:
                self.add(position, f"attribute {key} of {owner} is repeated")
            seen.add(key)
        for key in attributes:
            if key in _VALUE_READERS:
                try:
                    attributes.typed(key)
                except ParseError as error:
                    self.add(error.position, f"attribute {key} of {owner}: {error.reason}")
                    ok = False
        return ok


def _check_binary_shape(instruction: HloInstruction, lhs: Shape, rhs: Shape) -> None:
    """ShapeError when the declared shape is not what broadcasting ``lhs`` with ``rhs`` gives."""
    if not (lhs.is_array and rhs.is_array and instruction.shape.is_array):
        raise ShapeError(f"{instruction.opcode} takes arrays, not {lhs} and {rhs}")
    expected = broadcast_shape(lhs, rhs)
    declared = instruction.shape
    if not declared.equal(expected, ignore_layout=True, ignore_element_type=True):
        raise ShapeError(f"declared shape {shape_text(declared, print_layout=False)} is not the broadcast of its "
                         f"operands {shape_text(lhs, print_layout=False)} and {shape_text(rhs, print_layout=False)}, "
                         f"which is {shape_text(expected, print_layout=False)}")
    wanted = "pred" if instruction.opcode == "compare" else lhs.element_type.name
    if declared.element_type.name != wanted:
        raise ShapeError(f"{instruction.opcode} of {lhs.element_type} operands gives {wanted}, "
                         f"not {declared.element_type}")


def _check_broadcast_shape(instruction: HloInstruction, operand: Shape) -> None:
    """ShapeError when ``broadcast(operand), dimensions={...}`` does not map each operand dim onto an equal one."""
    dims = instruction.attributes.typed("dimensions")
    declared = instruction.shape
    if not (operand.is_array and declared.is_array):
        raise ShapeError("broadcast takes and gives arrays")
    if len(dims) != operand.rank:
        raise ShapeError(f"dimensions={{{','.join(map(str, dims))}}} has {len(dims)} entries but the operand "
                         f"{shape_text(operand, print_layout=False)} has rank {operand.rank}")
    for i, dim in enumerate(dims):
        if not 0 <= dim < declared.rank or declared.dimensions[dim] != operand.dimensions[i]:
            raise ShapeError(f"operand dimension {i} (size {operand.dimensions[i]}) does not match dimension {dim} "
                             f"of the declared shape {shape_text(declared, print_layout=False)}")
    if declared.element_type != operand.element_type:
        raise ShapeError(f"broadcast of {operand.element_type} gives {operand.element_type}, "
                         f"not {declared.element_type}")


def _operand_position(instruction: HloInstruction, operand: str) -> int:
    """Where ``operand`` is written among the instruction's operands (the instruction's start if not found)."""
    text = instruction._source.text
    start = text.find(f"{instruction.opcode}(", instruction.position)
    if start < 0:
        return instruction.position
    pattern = re.compile(r"(?<![A-Za-z0-9_.%\-])%?" + re.escape(operand) + r"(?![A-Za-z0-9_.\-])")
    found = pattern.search(text, start + len(instruction.opcode) + 1)
    return found.start() if found else instruction.position


def _module_problems(module: HloModule) -> list[Problem]:
    """All cross-check problems of ``module`` in text order."""
    return _Checker(module).problems()
