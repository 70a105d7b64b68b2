"""Buffer assignment as XLA does it: allocations for parameters, constants and outputs, temps reusing them where
their lifetimes allow, and the remaining temps packed into one heap by best fit in decreasing size.
"""

from __future__ import annotations

from bisect import insort
from dataclasses import dataclass, field

from ._dataflow import Dataflow, Value, can_share

BACKENDS = {"cpu": 64, "gpu": 256, "tpu": 512}
"""Heap offset alignment per backend (bytes). CPU's is XLA's; GPU and TPU are estimates (see the docs)."""


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

    @property
    def readonly(self) -> bool:
        """Parameters that are not donated and constants may not hold other values."""
        return self.kind == "constant" or (self.kind == "parameter" and not self.aliased)


@dataclass(eq=False)
class Assignment:
    """Every allocation and buffer of a module, the heap (temp) sizes per memory space and the peak time."""

    flow: Dataflow
    buffers: list[Buffer]
    allocations: list[Allocation]
    heap_size: dict[int, int]
    heap_buffers: list[Buffer]
    fragmentation: dict[int, int]


def _buffers(flow: Dataflow) -> list[Buffer]:
    groups: dict[int, list[Value]] = {}
    for value in flow.values:
        groups.setdefault(flow.find(value.id), []).append(value)
    entry = flow.module.entry.name
    live_out = {flow.find(vid) for vid in flow.entry_root.values()}
    buffers = []
    for root, values in groups.items():
        buffer = Buffer(root, values, max(v.size for v in values), min(v.start for v in values),
                        max(v.end for v in values), values[0].memory_space)
        for value in values:
            opcode = value.instruction.opcode
            if opcode == "parameter" and value.computation == entry:
                buffer.is_parameter = True
            elif opcode == "constant":
                buffer.is_constant = True
        buffer.live_out = root in live_out
        buffers.append(buffer)
    return buffers


class _Assigner:
    def __init__(self, flow: Dataflow, backend: str) -> None:
        self.flow = flow
        self.backend = backend
        self.allocations: list[Allocation] = []
        self.reusable: list[Allocation] = []
        self.deferred: list[Buffer] = []

    def new(self, buffer: Buffer, kind: str) -> Allocation:
        allocation = Allocation(len(self.allocations), buffer.size, kind, buffer.memory_space)
        self.allocations.append(allocation)
        self.place(allocation, buffer)
        return allocation

    def place(self, allocation: Allocation, buffer: Buffer) -> None:
        buffer.allocation = allocation
        allocation.buffers.append(buffer)
        for value in buffer.values:
            insort(allocation.intervals, (value.start, value.end, value.id))

    def interferes(self, a: Value, b: Value) -> bool:
        if a.start > b.end or b.start > a.end:
            return False
        if a.end == b.start:
            return not self.shares(b, a)
        if b.end == a.start:
            return not self.shares(a, b)
        return True

    def shares(self, user: Value, operand: Value) -> bool:
        """True when ``user``'s instruction may overwrite ``operand``, whose live range ends there."""
        instruction = user.instruction
        if instruction.opcode == "copy" or operand.id not in self.flow.operand_tops.get(id(instruction), ()):
            return False
        return can_share(self.flow, operand, instruction, user.index, user.shape, self.backend)

    def fits(self, allocation: Allocation, buffer: Buffer) -> bool:
        if buffer.size > allocation.size or allocation.readonly or allocation.memory_space != buffer.memory_space:
            return False
        if buffer.live_out and allocation.size != buffer.size:
            return False
        values = self.flow.values
        for new in buffer.values:
            for start, end, vid in allocation.intervals:
                if start > new.end:
                    break
                if end < new.start:
                    continue
                if self.interferes(new, values[vid]):
                    return False
        return True

    def assign(self, buffer: Buffer) -> None:
        if buffer.is_constant:
            self.new(buffer, "constant")
            return
        if buffer.is_parameter:
            allocation = self.new(buffer, "parameter")
            allocation.parameter = next(v.instruction.parameter_number for v in buffer.values
                                        if v.instruction.opcode == "parameter")
            if buffer.live_out:
                allocation.aliased = True
                self.reusable.append(allocation)
            return
        for value in buffer.values:
            if value.index or value.shape.is_tuple:
                continue
            for top in self.flow.operand_tops.get(id(value.instruction), ()):
                if top is None:
                    continue
                owner = self.buffer_of.get(self.flow.find(top))
                if owner is not None and owner.allocation is not None and self.fits(owner.allocation, buffer):
                    self.place(owner.allocation, buffer)
                    return
        for allocation in reversed(self.reusable):
            if self.fits(allocation, buffer):
                self.place(allocation, buffer)
                return
        if not buffer.live_out:
            self.deferred.append(buffer)
            return
        self.reusable.append(self.new(buffer, "output"))

    def run(self, buffers: list[Buffer]) -> None:
        self.buffer_of = {b.id: b for b in buffers}
        order = sorted(buffers, key=lambda b: (-b.size, not b.live_out, b.start, b.id))
        for buffer in order:
            if buffer.size == 0 and not (buffer.is_parameter or buffer.live_out):
                continue
            self.assign(buffer)


def assign(flow: Dataflow, backend: str = "cpu") -> Assignment:
    """Assign every buffer of the analyzed module to an allocation or to the temp heap."""
    alignment = BACKENDS[backend]
    buffers = _buffers(flow)
    assigner = _Assigner(flow, backend)
    assigner.run(buffers)
    heap_size: dict[int, int] = {}
    fragmentation: dict[int, int] = {}
    by_space: dict[int, list[Buffer]] = {}
    for buffer in assigner.deferred:
        by_space.setdefault(buffer.memory_space, []).append(buffer)
    for space, members in sorted(by_space.items()):
        groups = _share_groups(assigner, members)
        size, offsets = best_heap(groups, alignment)
        heap_size[space] = size
        fragmentation[space] = size - max_live(groups)
        allocation = Allocation(len(assigner.allocations), size, "temp", space)
        assigner.allocations.append(allocation)
        for group, offset in zip(groups, offsets):
            for buffer in group.members:
                buffer.allocation = allocation
                buffer.offset = offset
                allocation.buffers.append(buffer)
    return Assignment(flow, buffers, assigner.allocations, heap_size, assigner.deferred, fragmentation)


@dataclass(eq=False)
class Group:
    """Heap buffers placed at one offset: a buffer and the buffers that share it (XLA's ShareWith)."""

    members: list[Buffer]
    size: int
    spans: list[tuple[int, int]]
    order: int

    @property
    def start(self) -> int:
        """First time any member is live."""
        return min(s for s, _ in self.spans)

    @property
    def end(self) -> int:
        """Last time any member is live."""
        return max(e for _, e in self.spans)


def _share_groups(assigner: _Assigner, members: list[Buffer]) -> list[Group]:
    """Group heap buffers with a dying operand buffer they may overwrite, as the heap simulator does."""
    flow = assigner.flow
    ending: dict[int, list[Buffer]] = {}
    for buffer in members:
        ending.setdefault(buffer.end, []).append(buffer)
    group_of: dict[int, Group] = {}
    groups: list[Group] = []
    heap_ids = {b.id for b in members}
    for buffer in sorted(members, key=lambda b: (b.start, b.id)):
        target: Group | None = None
        first = min(buffer.values, key=lambda v: v.start)
        tops = flow.operand_tops.get(id(first.instruction), ())
        for candidate in ending.get(buffer.start, ()):
            group = group_of.get(candidate.id)
            if group is None or candidate.id not in heap_ids or candidate.size < buffer.size:
                continue
            if group.end != buffer.start:
                continue
            operand = next((v for v in candidate.values if v.id in tops and v.end == buffer.start), None)
            if operand is not None and assigner.shares(first, operand):
                target = group
                break
        if target is None:
            target = Group([], buffer.size, [], len(groups))
            groups.append(target)
        target.members.append(buffer)
        target.spans.append((buffer.start, buffer.end))
        group_of[buffer.id] = target
    return groups


def max_live(groups: list[Group]) -> int:
    """The largest sum of sizes of groups live at one time (a lower bound of any heap)."""
    events: dict[int, int] = {}
    for group in groups:
        events[group.start] = events.get(group.start, 0) + group.size
        events[group.end + 1] = events.get(group.end + 1, 0) - group.size
    live = peak = 0
    for time in sorted(events):
        live += events[time]
        peak = max(peak, live)
    return peak


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


def best_fit(groups: list[Group], order: list[Group], alignment: int) -> tuple[int, list[int]]:
    """Place groups in ``order``, each in the smallest free gap over its lifetime; returns (heap size, offsets)."""
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, chunk end)
    offsets: dict[int, int] = {}
    heap = 0
    for group in order:
        start, end = group.start, group.end
        busy = sorted((o, e) for s, t, o, e in placed if s <= end and t >= start)
        best: tuple[int, int] | None = None
        cursor = 0
        for offset, chunk_end in busy:
            gap_start = _align(cursor, alignment)
            if offset > gap_start and offset - gap_start >= group.size:
                candidate = (offset - gap_start, gap_start)
                if best is None or candidate < best:
                    best = candidate
            cursor = max(cursor, chunk_end)
        offset = best[1] if best is not None else _align(cursor, alignment)
        offsets[group.order] = offset
        placed.append((start, end, offset, offset + group.size))
        heap = max(heap, offset + group.size)
    return heap, [offsets[g.order] for g in groups]


def best_heap(groups: list[Group], alignment: int) -> tuple[int, list[int]]:
    """XLA's choice between decreasing-size (spatial) and longest-lifetime (temporal) best fit: the smaller."""
    spatial = sorted(groups, key=lambda g: (-g.size, g.start - g.end, g.order))
    temporal = sorted(groups, key=lambda g: (g.start - g.end, -g.size, g.order))
    results = [best_fit(groups, spatial, alignment), best_fit(groups, temporal, alignment)]
    return min(results, key=lambda r: r[0])
