"""The HLO model: modules hold computations, computations hold instructions, in the order written.

Everything is read lazily from the parsed text where that saves time: attribute values (``attributes.typed``),
constant literals (``literal``) and positions (``line``/``column``). ``problems()`` runs the verifier
(:mod:`xlashapes.hlo.checks`); ``str()`` prints with :mod:`xlashapes.hlo.printer`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..errors import ParseError
from ..shape import Shape
from ..text import shape_text
from ._source import EMPTY_SOURCE, Source
from .attributes import CALLED_COMPUTATION_KEYS, NO_ATTRIBUTES, Attributes, Sharding, split_tail
from .checks import Problem, module_problems
from .frames import StackFrameIndex
from .literals import literal_value
from .printer import computation_text, instruction_text, module_text

__all__ = ["HloComputation", "HloInstruction", "HloModule", "Problem", "Sharding", "StackFrameIndex"]


class _Unset:
    """Marks a lazily computed value not computed yet."""


_UNSET: Any = _Unset()


@dataclass(eq=False, repr=False, slots=True)
class HloInstruction:
    """One HLO instruction: ``[ROOT] name = shape opcode(operands), key=value, ...``.

    >>> from xlashapes.hlo import parse_instruction
    >>> ins = parse_instruction("add.1 = f32[2]{0} add(x, y)")
    >>> ins.name, ins.opcode, str(ins.shape), ins.operands
    ('add.1', 'add', 'f32[2]{0}', ['x', 'y'])
    """

    name: str
    opcode: str
    shape: Shape
    raw_operands: list[str] | str  # the names, or the text "%a, %b" as written until ``operands`` is first read
    written_operand_shapes: list[Shape | None] | None = None
    is_root: bool = False
    source: Source = EMPTY_SOURCE
    start: int = 0
    tail: str = ""
    tail_position: int = -1
    parsed_attributes: Attributes | None = None
    parameter_number: int | None = None
    literal_text: str | None = None
    literal_position: int = -1
    shape_written: bool = True
    _literal: Any = field(default=_UNSET)

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
        if self.parsed_attributes is None:
            position = self.tail_position
            if position < 0:  # the tail ends the line: find it from the end
                text = self.source.text
                end = text.find("\n", self.start)
                position = text.rfind(self.tail, self.start, end if end >= 0 else len(text))
            self.parsed_attributes = split_tail(self.tail, position, self.source)
        return self.parsed_attributes

    @property
    def operands(self) -> list[str]:
        """The operand names, in order (``%`` dropped)."""
        value = self.raw_operands
        if isinstance(value, str):  # the fast parser keeps the text: split it once, when first asked
            value = self.raw_operands = value.replace("%", "").split(", ") if value else []
        return value

    @operands.setter
    def operands(self, names: list[str]) -> None:
        self.raw_operands = names

    @property
    def operand_shapes(self) -> list[Shape | None]:
        """The shape written before each operand name, None where none was written."""
        if self.written_operand_shapes is None:
            return [None] * len(self.operands)
        return list(self.written_operand_shapes)

    @property
    def position(self) -> int:
        """Offset of the instruction's first character in the parsed text."""
        return self.source.first_token(self.start)

    @property
    def line(self) -> int:
        """1-based line of the instruction in the parsed text."""
        return self.source.line_column(self.position)[0]

    @property
    def column(self) -> int:
        """1-based column of the instruction's first character."""
        return self.source.line_column(self.position)[1]

    @property
    def literal(self) -> Any:
        """A constant's value as a NumPy array (a tuple of them for tuple shapes); None for ``{...}``."""
        if self.literal_text is None:
            raise AttributeError(f"{self.opcode} instruction {self.name} has no literal")
        if self._literal is _UNSET:
            start = self.literal_position
            if start < 0:  # the fast path: the literal follows "constant(" on the instruction's line
                start = self.source.text.index("constant(", self.start) + len("constant(")
            self._literal = literal_value(self.source, start, self.literal_text, self.shape)
        return self._literal

    @property
    def called_computations(self) -> list[str]:
        """Names of the computations this instruction calls (to_apply, calls, condition, body, branches ...)."""
        names: list[str] = []
        for key in CALLED_COMPUTATION_KEYS:
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


@dataclass(eq=False, repr=False)
class HloComputation:
    """A computation: a name, optional signature, its instructions in order and its root.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> c = parse_hlo_module("ENTRY e {\\n  p = f32[] parameter(0)\\n  ROOT n = f32[] negate(p)\\n}").entry
    >>> c.name, c.root.name, [i.name for i in c.parameter_instructions]
    ('e', 'n', ['p'])
    """

    name: str
    instructions: list[HloInstruction] = field(default_factory=list)
    _: KW_ONLY
    is_entry: bool = False
    parameters: list[tuple[str, Shape]] | None = None
    result_shape: Shape | None = None
    attributes: Attributes = field(default_factory=lambda: NO_ATTRIBUTES)
    position: int = 0
    _by_name: dict[str, HloInstruction] | None = None

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


@dataclass(eq=False)
class HloModule:
    """A parsed HLO module: header attributes, stack frame tables and computations in file order.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> m = parse_hlo_module("HloModule m\\nENTRY e {\\n  ROOT p = f32[] parameter(0)\\n}\\n")
    >>> m.name, m.entry.name, m.entry.root.opcode
    ('m', 'e', 'parameter')
    """

    name: str
    attributes: Attributes
    computations: list[HloComputation]
    stack_frame_index: StackFrameIndex | None = None
    source: Source = field(default=EMPTY_SOURCE, repr=False)
    parse_problems: list[tuple[int, str]] = field(default_factory=list, repr=False)
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
        """Cross-checks that do not stop parsing: undefined or duplicate names, shapes, bad values (line, column)."""
        return module_problems(self, self.parse_problems)

    def validate(self) -> HloModule:
        """Raise the first of ``problems()`` as a ParseError; returns self when there are none."""
        problems = self.problems()
        if problems:
            raise ParseError(problems[0].message, self.source.text, problems[0].position)
        return self
