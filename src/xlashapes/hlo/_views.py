"""What the printer and the verifier need of instructions, computations and modules (structural types).

The model's classes satisfy these protocols; the printer and the checks depend on them, not on the model, so the
model can call both without an import cycle.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ..shape import Shape
from ._source import Source
from .attributes import Attributes, Sharding
from .frames import StackFrameIndex


class InstructionView(Protocol):
    """An instruction as the printer and the checks read it."""

    name: str
    opcode: str
    shape: Shape
    operands: list[str]
    is_root: bool
    parameter_number: int | None
    literal_text: str | None

    @property
    def operand_shapes(self) -> list[Shape | None]: ...
    @property
    def attributes(self) -> Attributes: ...
    @property
    def position(self) -> int: ...
    @property
    def literal(self) -> Any: ...
    @property
    def sharding(self) -> Sharding | None: ...
    @property
    def control_predecessors(self) -> tuple[str, ...]: ...
    @property
    def called_computations(self) -> list[str]: ...


class ComputationView(Protocol):
    """A computation as the printer and the checks read it."""

    name: str
    is_entry: bool
    parameters: list[tuple[str, Shape]] | None
    result_shape: Shape | None
    attributes: Attributes
    position: int

    @property
    def instructions(self) -> Sequence[InstructionView]: ...


class ModuleView(Protocol):
    """A module as the printer and the checks read it."""

    name: str
    attributes: Attributes
    stack_frame_index: StackFrameIndex | None

    @property
    def computations(self) -> Sequence[ComputationView]: ...
    @property
    def source(self) -> Source: ...
