"""XLA's heap simulator for temporaries: alloc/free/share events over the schedule, then global best fit.

Every value of a temp buffer gets an interval of *event* times: each allocation, share and free is one tick,
as in XLA's ``GlobalDecreasingSizeBestFitHeap``. A value may share the chunk of an operand that dies at its
definition (``ShareWith``); values of one buffer share the chunk of its first value. The intervals are then
placed in decreasing-size order (spatial) and in longest-lifetime order (temporal), each in the smallest free
gap over the lifetimes of itself and its colocations; the smaller heap wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ._dataflow import Dataflow, Value
from ._model import Buffer

Shares = Callable[[Value, Value], bool]
"""``shares(user, operand)``: may the user's instruction overwrite the operand, which dies there?"""


@dataclass(eq=False)
class Interval:
    """One value's tick interval in the heap, with the values placed at its offset (colocations)."""

    value: Value
    buffer: Buffer
    size: int
    start: int
    end: int = -1
    need_allocation: bool = True
    colocations: list[Interval] = field(default_factory=list)
    offset: int = 0

    def family(self) -> list[Interval]:
        """This interval and its transitive colocations."""
        found = [self]
        pending = list(self.colocations)
        while pending:
            item = pending.pop()
            found.append(item)
            pending.extend(item.colocations)
        return found


def heap_intervals(flow: Dataflow, shares: Shares, buffers: list[Buffer]) -> list[Interval]:
    """Replay the schedule's define/free events of the heap buffers' values, as XLA's HeapSimulator does."""
    owner: dict[int, Buffer] = {}
    values: list[Value] = []
    for buffer in buffers:
        for value in buffer.values:
            owner[value.id] = buffer
            values.append(value)
    values.sort(key=lambda v: (v.start, v.end, v.id))
    defined: dict[int, list[Value]] = {}
    freed: dict[int, list[Value]] = {}
    for value in values:
        defined.setdefault(value.start, []).append(value)
        freed.setdefault(value.end, []).append(value)
    intervals: dict[int, Interval] = {}
    first: dict[int, Interval] = {}
    tick = 0
    for time in sorted(set(defined) | set(freed)):
        ending = freed.get(time, [])
        for value in defined.get(time, ()):
            buffer = owner[value.id]
            if buffer.id in first:
                intervals[value.id] = shared = Interval(value, buffer, buffer.size, tick, need_allocation=False)
                first[buffer.id].colocations.append(shared)
                tick += 1
                continue
            partner = None
            if len(buffer.values) == 1:
                partner = _operand_to_share(flow, shares, value, owner, ending, time)
            if partner is not None:
                partner_interval = intervals[partner.id]
                partner_interval.end = tick
                ending.remove(partner)
                tick += 1
                intervals[value.id] = shared = Interval(value, buffer, owner[partner.id].size, tick,
                                                        need_allocation=False)
                partner_interval.colocations.append(shared)
                first[buffer.id] = shared
                tick += 1
                continue
            intervals[value.id] = first[buffer.id] = Interval(value, buffer, buffer.size, tick)
            tick += 1
        for value in ending:
            intervals[value.id].end = tick
            tick += 1
    return list(intervals.values())


def _operand_to_share(flow: Dataflow, shares: Shares, value: Value, owner: dict[int, Buffer], ending: list[Value],
                      time: int) -> Value | None:
    instruction = value.instruction
    if instruction.opcode == "copy":
        return None
    for top in flow.operand_tops.get(id(instruction), ()):
        if top is None:
            continue
        operand = flow.values[top]
        buffer = owner.get(operand.id)
        if buffer is None or len(buffer.values) != 1 or operand.end != time or operand not in ending:
            continue
        if operand.instruction.name not in instruction.operands:
            continue  # XLA asks that the user reads the operand's defining instruction directly
        if shares(value, operand):
            return operand
    return None


def max_live(intervals: list[Interval]) -> int:
    """The largest sum of sizes allocated at one tick (a lower bound of any heap)."""
    events: dict[int, int] = {}
    for interval in intervals:
        if interval.need_allocation:
            family = interval.family()
            start, end = min(i.start for i in family), max(i.end for i in family)
            events[start] = events.get(start, 0) + interval.size
            events[end + 1] = events.get(end + 1, 0) - interval.size
    live = peak = 0
    for tick in sorted(events):
        live += events[tick]
        peak = max(peak, live)
    return peak


def _align(offset: int, alignment: int) -> int:
    return -(-offset // alignment) * alignment


def best_fit(order: list[Interval], alignment: int) -> tuple[int, dict[int, int]]:
    """Place intervals in ``order``, each in the smallest free gap over its family's lifetimes.

    Placed chunks are indexed by time buckets, so finding the chunks that overlap an interval costs the
    chunks near it in time, not every chunk placed so far.
    """
    last = max((i.end for i in order for i in i.family()), default=0)
    width = max(1, -(-(last + 1) // min(4096, max(64, len(order)))))
    buckets: list[list[int]] = [[] for _ in range(last // width + 1)]
    placed: list[tuple[int, int, int, int]] = []  # (start, end, offset, chunk end)
    offsets: dict[int, int] = {}
    heap = 0
    for interval in order:
        family = interval.family()
        seen: set[int] = set()
        busy: list[tuple[int, int]] = []
        for member in family:
            a, b = member.start, member.end
            for bucket in range(a // width, b // width + 1):
                for index in buckets[bucket]:
                    if index not in seen:
                        s, t, o, e = placed[index]
                        if s <= b and t >= a:
                            seen.add(index)
                            busy.append((o, e))
        busy.sort()
        best: tuple[int, int] | None = None
        cursor = 0
        for offset, chunk_end in busy:
            gap_start = _align(cursor, alignment)
            if offset > gap_start and offset - gap_start >= interval.size:
                candidate = (offset - gap_start, gap_start)
                if best is None or candidate < best:
                    best = candidate
            cursor = max(cursor, chunk_end)
        offset = best[1] if best is not None else _align(cursor, alignment)
        for member in family:
            offsets[id(member)] = offset
            index = len(placed)
            placed.append((member.start, member.end, offset, offset + member.size))
            for bucket in range(member.start // width, member.end // width + 1):
                buckets[bucket].append(index)
        heap = max(heap, offset + interval.size)
    return heap, offsets


def best_heap(intervals: list[Interval], alignment: int) -> int:
    """XLA's choice between spatial and temporal best fit: the smaller heap; sets every interval's offset."""
    roots = [i for i in intervals if i.need_allocation]
    ends = {id(i): max(m.end for m in i.family()) for i in roots}
    spatial = sorted(roots, key=lambda i: (-i.size, i.start - i.end, i.value.id))
    temporal = sorted(roots, key=lambda i: (i.start - ends[id(i)], -i.size, i.value.id))
    results = [best_fit(spatial, alignment), best_fit(temporal, alignment)]
    size, offsets = min(results, key=lambda r: r[0])
    for interval in intervals:
        interval.offset = offsets.get(id(interval), 0)
    return size
