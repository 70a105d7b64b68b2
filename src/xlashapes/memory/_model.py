"""The buffers and allocations of a buffer assignment (shared by the assigner and the heap simulator)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._dataflow import Value


@dataclass(eq=False)
class Buffer:
    """Values that share storage, with their combined size and lifetime."""

    id: int
    values: list[Value]
    size: int
    start: int
    end: int
    memory_space: int
    is_parameter: bool = False
    is_constant: bool = False
    live_out: bool = False
    allocation: Allocation | None = None
    offset: int = 0
    chunk: int = -1  # heap buffers: which placed chunk holds it (buffers sharing a chunk share memory)
    spans: list[tuple[int, int]] = field(default_factory=list)  # heap buffers: schedule times its chunk is live


@dataclass(eq=False)
class Allocation:
    """One allocation: its kind (parameter, output, temp, constant), size and the buffers placed in it."""

    index: int
    size: int
    kind: str
    memory_space: int
    parameter: int | None = None
    aliased: bool = False
    buffers: list[Buffer] = field(default_factory=list)
    intervals: list[tuple[int, int, int]] = field(default_factory=list)  # (start, end, value id), sorted
    longest: int = 0  # the longest interval's end - start

    @property
    def readonly(self) -> bool:
        """Parameters that are not donated and constants may not hold other values."""
        return self.kind == "constant" or (self.kind == "parameter" and not self.aliased)
