"""Buffer assignment as XLA does it: allocations for parameters, constants and outputs, temps reusing them where
their lifetimes allow, and the remaining temps packed into one heap by best fit in decreasing size.
"""

from __future__ import annotations

from bisect import bisect_right, insort
from dataclasses import dataclass

from ..hlo import HloComputation
from ._dataflow import Dataflow, Value, can_share
from ._heap import best_heap, heap_intervals, max_live
from ._model import Allocation, Buffer

BACKENDS = {"cpu": 64, "gpu": 64, "tpu": 512}
"""Heap offset alignment per backend (bytes): XLA:CPU's 64 (checked against its dumps); XLA:GPU aligns to tsl's
allocator alignment (64) too, as we read its sources; the TPU's 512 is an estimate."""


_BIG = 2**62

MAX_REUSE_TRIES = 64
"""How many candidate reusable allocations (donated parameters, outputs) a temp tries before the heap.

XLA tries every one. Candidates already held from before the temp ends until the program's end are skipped
without a try (they cannot fit); after this many misses among the rest a fit is rare, and the limit keeps huge
modules linear.
"""


class _MaxTree:
    """A segment tree of maxima over positions: the rightmost position up to a limit whose value exceeds a bound."""

    def __init__(self, capacity: int) -> None:
        size = 1
        while size < max(capacity, 1):
            size *= 2
        self.size = size
        self.tree = [-_BIG] * (2 * size)

    def set(self, position: int, value: int) -> None:
        """Set the value at ``position``."""
        node = position + self.size
        self.tree[node] = value
        node //= 2
        while node:
            self.tree[node] = max(self.tree[2 * node], self.tree[2 * node + 1])
            node //= 2

    def rightmost(self, limit: int, bound: int) -> int:
        """The largest position <= ``limit`` whose value is > ``bound``; -1 when there is none."""
        if limit < 0:
            return -1
        tree, size = self.tree, self.size
        node = min(limit, size - 1) + size
        if tree[node] > bound:
            return node - size
        while node > 1:
            if node & 1 and tree[node - 1] > bound:  # the left sibling covers the positions just before
                node -= 1
                while node < size:
                    node = 2 * node + 1 if tree[2 * node + 1] > bound else 2 * node
                return node - size
            node //= 2
        return -1


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
        self.reusable: list[Allocation] = []  # donated parameters and outputs, in decreasing size order
        self.reusable_sizes: list[int] = []  # their sizes, negated (ascending, for bisect)
        self.reusable_slot: dict[int, int] = {}  # allocation index -> position in reusable
        self.tails = _MaxTree(0)
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
            allocation.longest = max(allocation.longest, value.end - value.start)
        slot = self.reusable_slot.get(allocation.index)
        if slot is not None and buffer.live_out:
            self.tails.set(slot, self.tail_start(allocation))

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
        intervals = allocation.intervals
        for new in buffer.values:
            # intervals are sorted by start; none starting before new.start - longest can reach new.start
            position = bisect_right(intervals, (new.end, _BIG, _BIG))
            horizon = new.start - allocation.longest
            while position > 0:
                position -= 1
                start, end, vid = intervals[position]
                if start < horizon:
                    break
                if end >= new.start and self.interferes(new, values[vid]):
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
                self.add_reusable(allocation)
            return
        if any(value.shape.is_tuple for value in buffer.values):
            # a tuple's index table: never put in another allocation, and its own is not reused (XLA's dumps)
            if buffer.live_out:
                self.new(buffer, "output")
            else:
                self.deferred.append(buffer)
            return
        for value in buffer.values:
            if value.index:
                continue
            for top in self.flow.operand_tops.get(id(value.instruction), ()):
                if top is None:
                    continue
                owner = self.buffer_of.get(self.flow.find(top))
                if owner is not None and owner.allocation is not None and self.fits(owner.allocation, buffer):
                    self.place(owner.allocation, buffer)
                    return
        # The smallest large-enough reusable allocation first (the list is in decreasing size order), skipping
        # those held until the end by a value that starts before this buffer ends (the tree finds the rest).
        limit = bisect_right(self.reusable_sizes, -buffer.size) - 1
        threshold = buffer.end - 1
        for _ in range(MAX_REUSE_TRIES):
            index = self.tails.rightmost(limit, threshold)
            if index < 0:
                break
            allocation = self.reusable[index]
            if buffer.live_out and allocation.size != buffer.size:
                break
            if self.fits(allocation, buffer):
                self.place(allocation, buffer)
                return
            limit = index - 1
        if not buffer.live_out:
            self.deferred.append(buffer)
            return
        self.add_reusable(self.new(buffer, "output"))

    def add_reusable(self, allocation: Allocation) -> None:
        self.reusable_slot[allocation.index] = len(self.reusable)
        self.reusable.append(allocation)
        self.reusable_sizes.append(-allocation.size)
        self.tails.set(len(self.reusable) - 1, self.tail_start(allocation))

    def tail_start(self, allocation: Allocation) -> int:
        """Where the allocation's value that lives to the end starts (nothing ending earlier can go after it)."""
        end = self.flow.end_time
        return min((start for start, stop, _ in allocation.intervals if stop >= end), default=_BIG)

    def run(self, buffers: list[Buffer]) -> None:
        self.buffer_of = {b.id: b for b in buffers}
        self.tails = _MaxTree(len(buffers))
        position = post_order_positions(self.flow)
        first = {b.id: min(position.get(id(v.instruction), 0) for v in b.values) for b in buffers}
        order = sorted(buffers, key=lambda b: (-b.size, not b.live_out, first[b.id], b.id))
        for buffer in order:
            if buffer.size == 0 and not (buffer.is_parameter or buffer.live_out):
                continue
            self.assign(buffer)


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def post_order_positions(flow: Dataflow) -> dict[int, int]:
    """id(instruction) -> its position in XLA's post order (callers' computations first; operands first)."""
    positions: dict[int, int] = {}
    computations: list[HloComputation] = []
    seen: set[str] = set()
    for computation, _ in flow.sequence:
        if computation.name not in seen:
            seen.add(computation.name)
            computations.append(computation)
    entry = flow.module.entry
    computations.sort(key=lambda c: c is not entry)
    for computation in computations:
        by_name = {i.name: i for i in computation.instructions}
        used = {name for i in computation.instructions for name in (*i.operands, *i.control_predecessors)}
        roots = [i for i in computation.instructions if i.name not in used]
        visited: dict[str, bool] = {}
        for root in roots:
            stack = [root]
            while stack:
                current = stack[-1]
                state = visited.get(current.name)
                if state is not None:
                    stack.pop()
                    if not state:
                        visited[current.name] = True
                        positions[id(current)] = len(positions)
                    continue
                visited[current.name] = False
                for name in reversed([*current.operands, *current.control_predecessors]):
                    operand = by_name.get(name)
                    if operand is not None and not visited.get(name):
                        stack.append(operand)
    return positions


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
        intervals = heap_intervals(flow, assigner.shares, members)
        size = best_heap(intervals, alignment)
        heap_size[space] = size
        fragmentation[space] = size - max_live(intervals)
        allocation = Allocation(len(assigner.allocations), size, "temp", space)
        assigner.allocations.append(allocation)
        for buffer in members:
            buffer.allocation = allocation
            allocation.buffers.append(buffer)
        for interval in intervals:
            if interval.need_allocation:
                family = interval.family()
                spans = sorted((member.value.start, member.value.end) for member in family)
                for member in family:
                    member.buffer.offset = interval.offset
                    member.buffer.chunk = interval.value.id
                interval.buffer.spans = _merged(spans)
    return Assignment(flow, buffers, assigner.allocations, heap_size, assigner.deferred, fragmentation)


