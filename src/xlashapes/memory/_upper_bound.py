"""The no-liveness upper bound: every buffer of an HLO module summed, by memory space and computation.

A buffer is the result of an instruction in a computation that runs as such (the entry, while bodies and
conditions, conditional branches, called and async computations), not of the instructions fused into a fusion
or of a reduction's scalar ``to_apply``. Instructions that only alias other buffers (get-tuple-element, bitcast,
tuple, while, optimization barriers, parameters of non-entry computations) define none. The report sums the
buffers; it does no liveness analysis, so it is an upper bound on what is live at once, not XLA's peak memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import ShapeError
from ..hlo import HloComputation, HloInstruction, HloModule
from ..shape import Shape
from ..tpu import tpu_layout

ALIASING_OPCODES = frozenset({
    "get-tuple-element", "bitcast", "tuple", "while", "optimization-barrier", "opt-barrier", "domain",
    "add-dependency",
})
"""Opcodes whose result is another instruction's buffer (or a pointer table), not a buffer of its own."""

_RUNS_CALLED = ("body", "condition", "branch_computations", "true_computation", "false_computation")


@dataclass(frozen=True)
class Buffer:
    """One buffer: the instruction that defines it, its shape and its bytes (per memory space for tuples)."""

    computation: str
    instruction: str
    opcode: str
    shape: Shape
    physical_bytes: int
    logical_bytes: int
    by_memory_space: dict[int, int]
    line: int

    @property
    def padding_bytes(self) -> int:
        """Bytes spent on tile, alignment and legacy padding."""
        return self.physical_bytes - self.logical_bytes


@dataclass(frozen=True)
class UpperBoundReport:
    """Every buffer of a module, with totals; ``unsized`` lists instructions with unbounded dims."""

    module: str
    buffers: tuple[Buffer, ...]
    unsized: tuple[str, ...] = field(default=())

    @property
    def physical_bytes(self) -> int:
        """Sum of the buffers' physical bytes."""
        return sum(b.physical_bytes for b in self.buffers)

    @property
    def logical_bytes(self) -> int:
        """Sum of the buffers' logical bytes (no padding)."""
        return sum(b.logical_bytes for b in self.buffers)

    def by_memory_space(self) -> dict[int, int]:
        """Physical bytes per memory space."""
        totals: dict[int, int] = {}
        for buffer in self.buffers:
            for space, size in buffer.by_memory_space.items():
                totals[space] = totals.get(space, 0) + size
        return dict(sorted(totals.items()))

    def by_computation(self) -> dict[str, int]:
        """Physical bytes per computation, largest first."""
        totals: dict[str, int] = {}
        for buffer in self.buffers:
            totals[buffer.computation] = totals.get(buffer.computation, 0) + buffer.physical_bytes
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def largest(self, count: int) -> list[Buffer]:
        """The ``count`` largest buffers."""
        return sorted(self.buffers, key=lambda b: -b.physical_bytes)[: max(count, 0)]


def materialized_computations(module: HloModule) -> list[HloComputation]:
    """The entry and every computation it runs as such (not fused or used as a scalar ``to_apply``)."""
    seen: dict[str, HloComputation] = {}
    pending = [module.entry]
    while pending:
        computation = pending.pop()
        if computation.name in seen:
            continue
        seen[computation.name] = computation
        for instruction in computation.instructions:
            for name in _run_computations(instruction):
                try:
                    pending.append(module.computation(name))
                except KeyError:
                    continue  # an undefined computation: module.problems() reports it
    return [c for c in module.computations if c.name in seen]


def _run_computations(instruction: HloInstruction) -> list[str]:
    keys = list(_RUNS_CALLED)
    if instruction.opcode != "fusion":
        keys.append("calls")
    if instruction.opcode == "call":
        keys.append("to_apply")
    names: list[str] = []
    attributes = instruction.attributes
    for key in keys:
        if key in attributes:
            try:
                value = attributes.typed(key)
            except (ValueError, KeyError):
                continue
            names.extend(value if isinstance(value, tuple) else (value,))
    return names


def defines_buffer(instruction: HloInstruction, computation: HloComputation) -> bool:
    """True when the instruction's result is a buffer of its own."""
    if instruction.opcode in ALIASING_OPCODES:
        return False
    return not (instruction.opcode == "parameter" and not computation.is_entry)


def buffer_of(instruction: HloInstruction, computation: HloComputation,
              relayout: Callable[[Shape], Shape] | None = None) -> Buffer:
    """The buffer an instruction defines (its shape optionally re-laid, e.g. with TPU tiling)."""
    shape = relayout(instruction.shape) if relayout is not None else instruction.shape
    spaces: dict[int, int] = {}
    logical = 0
    for _, leaf in shape.leaves():
        if not leaf.is_array:
            continue
        space = leaf.layout.memory_space if leaf.layout is not None else 0
        spaces[space] = spaces.get(space, 0) + leaf.byte_size()
        logical += leaf.xla_byte_size_of()
    return Buffer(computation.name, instruction.name, instruction.opcode, shape, sum(spaces.values()), logical,
                  spaces, instruction.line)


def _instructions(module: HloModule) -> Iterator[tuple[HloComputation, HloInstruction]]:
    for computation in materialized_computations(module):
        for instruction in computation.instructions:
            if defines_buffer(instruction, computation):
                yield computation, instruction


def upper_bound_report(module: HloModule, *, tpu: bool = False,
                       progress: Callable[[int, int], None] | None = None) -> UpperBoundReport:
    """Every buffer of ``module`` summed without liveness: an upper bound on memory, not XLA's peak.

    ``tpu=True`` re-lays untiled arrays with the TPU advisor's tiling first.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> text = "HloModule m\\nENTRY e {\\n  p = f32[4]{0} parameter(0)\\n  ROOT n = f32[4]{0} negate(p)\\n}\\n"
    >>> m = parse_hlo_module(text)
    >>> upper_bound_report(m).physical_bytes
    32
    """
    relayout = _tpu_relayout if tpu else None
    pairs = list(_instructions(module))
    buffers: list[Buffer] = []
    unsized: list[str] = []
    for done, (computation, instruction) in enumerate(pairs):
        if progress is not None and done % 1024 == 0:
            progress(done, len(pairs))
        try:
            buffers.append(buffer_of(instruction, computation, relayout))
        except ShapeError:
            unsized.append(instruction.name)
    if progress is not None:
        progress(len(pairs), len(pairs))
    return UpperBoundReport(module.name, tuple(buffers), tuple(unsized))


def _tpu_relayout(shape: Shape) -> Shape:
    """``shape`` with every untiled array re-laid in the tiling the TPU advisor picks."""
    if shape.is_tuple:
        return Shape(shape.element_type, tuple_shapes=tuple(_tpu_relayout(s) for s in shape.tuple_shapes))
    if not shape.is_array or (shape.layout is not None and shape.layout.tiles):
        return shape
    return tpu_layout(shape)
