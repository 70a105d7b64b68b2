"""Peak memory of a compiled HLO module as XLA's buffer assignment counts it: arguments + outputs + temp - alias.

What text alone cannot know: XLA's exact tie-breaks between equal candidates (a few KB), TPU reserved, scoped
and global memory and program size, alternate-memory (VMEM) prefetch decisions, and the runtime allocator's
fragmentation. Backends differ in heap alignment and in which instructions may overwrite their operands:
``backend="cpu"`` (the default) follows XLA:CPU (64-byte aligned heap offsets; ``__ynn_fusion`` custom fusions
never share; checked against XLA's own dumps). ``"gpu"`` uses the same sharing rules and alignment (XLA:GPU's
allocator alignment is 64 bytes too), ``"tpu"`` a 512-byte alignment and TPU tiling for untiled arrays: both are
estimates, since those compilers run further passes (memory-space assignment, rematerialization, scoped
memory) whose results the text shows only in part.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import ShapeError
from ..hlo import HloInstruction, HloModule, StackFrameIndex
from ..shape import Shape
from ._assign import BACKENDS, Assignment, assign
from ._dataflow import analyze
from ._model import Buffer
from ._upper_bound import _tpu_relayout

KINDS = ("parameter", "output", "temp", "constant")
"""Allocation kinds of a buffer, as XLA's buffer assignment names them (thread-local buffers are not listed)."""


@dataclass(frozen=True)
class BufferInfo:
    """One buffer: its defining instruction, shape, bytes, allocation kind, lifetime and origin in user code."""

    instruction: str
    computation: str
    opcode: str
    shape: Shape
    physical_bytes: int
    logical_bytes: int
    kind: str
    allocation: str
    start: int
    end: int
    offset: int
    memory_space: int
    op_name: str
    source: str
    line: int

    @property
    def padding_bytes(self) -> int:
        """Bytes spent on tile, alignment and legacy padding."""
        return self.physical_bytes - self.logical_bytes

    @property
    def expansion(self) -> float:
        """Physical over logical bytes (1.0: no padding)."""
        return self.physical_bytes / self.logical_bytes if self.logical_bytes else 1.0


@dataclass(frozen=True)
class SpaceTotals:
    """Arguments, outputs, alias and temp bytes of one memory space; ``peak`` is XLA's total."""

    arguments: int = 0
    outputs: int = 0
    alias: int = 0
    temp: int = 0

    @property
    def peak(self) -> int:
        """arguments + outputs + temp - alias."""
        return self.arguments + self.outputs + self.temp - self.alias


@dataclass(frozen=True)
class MemoryReport:
    """Peak memory of a module: XLA's four figures, the temp peak's position and the buffers live there.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> text = '''HloModule m, is_scheduled=true
    ... ENTRY e {
    ...   p = f32[256]{0} parameter(0)
    ...   a = f32[256]{0} exponential(p)
    ...   b = f32[256]{0} sine(p)
    ...   ROOT c = f32[256]{0} add(a, b)
    ... }
    ... '''
    >>> r = memory_report(parse_hlo_module(text))
    >>> r.arguments_bytes, r.outputs_bytes, r.temp_bytes, r.peak_bytes  # a is written into c's buffer
    (1024, 1024, 1024, 3072)
    >>> [(b.instruction, b.kind) for b in r.live_at_peak]
    [('p', 'parameter'), ('b', 'temp'), ('c', 'output')]
    """

    module: str
    backend: str
    scheduled: bool
    arguments_bytes: int
    outputs_bytes: int
    alias_bytes: int
    temp_bytes: int
    fragmentation_bytes: int
    upper_bound_bytes: int
    peak_time: int
    peak_instruction: str
    schedule_length: int
    by_memory_space: dict[int, SpaceTotals]
    buffers: tuple[BufferInfo, ...]
    live_at_peak: tuple[BufferInfo, ...]
    temp_timeline: tuple[int, ...] = field(repr=False)
    unsized: tuple[str, ...] = ()

    @property
    def peak_bytes(self) -> int:
        """XLA's total: arguments + outputs + temp - alias (an upper bound when the module is not scheduled)."""
        return self.arguments_bytes + self.outputs_bytes + self.temp_bytes - self.alias_bytes

    @property
    def is_upper_bound(self) -> bool:
        """True when the module has no schedule: temps are summed without liveness."""
        return not self.scheduled

    def grouped(self, by: str = "op_name") -> dict[str, int]:
        """Bytes live at the peak grouped by ``op_name`` prefix (up to the last ``/``) or ``source`` line."""
        if by not in ("op_name", "source"):
            raise ShapeError(f"group by 'op_name' or 'source', not {by!r}")
        totals: dict[str, int] = {}
        for info in self.live_at_peak:
            if by == "source":
                key = info.source or "(no source)"
            else:
                key = info.op_name.rsplit("/", 1)[0] if "/" in info.op_name else (info.op_name or "(no op_name)")
            totals[key] = totals.get(key, 0) + info.physical_bytes
        return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


_OP_NAME = re.compile(r'op_name="((?:[^"\\]|\\.)*)"')
_SOURCE_FILE = re.compile(r'source_file="((?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"source_line=(\d+)")
_FRAME = re.compile(r"stack_frame_id=(\d+)")


def _source(module: HloModule, instruction: HloInstruction, frames: dict[int, str]) -> tuple[str, str]:
    """The JAX op_name and ``file:line`` of an instruction, from its metadata or the stack-frame table."""
    try:
        metadata = instruction.attributes.get("metadata", "")
    except ValueError:
        return "", ""
    if not metadata:
        return "", ""
    op_name = _OP_NAME.search(metadata)
    name = op_name.group(1) if op_name else ""
    source_file = _SOURCE_FILE.search(metadata)
    if source_file:
        line = _SOURCE_LINE.search(metadata)
        return name, f"{source_file.group(1)}:{line.group(1) if line else 0}"
    frame = _FRAME.search(metadata)
    if frame and module.stack_frame_index is not None:
        return name, _frame_source(module.stack_frame_index, int(frame.group(1)), frames)
    return name, ""


def _frame_source(index: StackFrameIndex, frame_id: int, cache: dict[int, str]) -> str:
    """``file:line`` of the innermost frame of ``frame_id`` ("" when unknown)."""
    if frame_id not in cache:
        frames = index.frame(frame_id)
        first = frames[0] if frames else {}
        cache[frame_id] = f"{first['file']}:{first.get('line', 0)}" if first.get("file") else ""
    return cache[frame_id]


def _logical(shape: Shape) -> int:
    if shape.is_array:
        return shape.xla_byte_size_of()
    return 0


def _info(module: HloModule, buffer: Buffer, frames: dict[int, str],
          relayout: Callable[[Shape], Shape] | None = None) -> BufferInfo:
    value = max(buffer.values, key=lambda v: (v.size, -v.start))
    instruction = value.instruction
    op_name, source = _source(module, instruction, frames)
    if buffer.is_constant:
        kind = "constant"
    elif buffer.is_parameter:
        kind = "parameter"
    elif buffer.live_out:
        kind = "output"
    else:
        kind = "temp"
    allocation = buffer.allocation
    label = f"{allocation.kind} allocation {allocation.index}" if allocation is not None else "none"
    try:
        logical = _logical(value.shape) if not value.shape.is_tuple else 0
    except ShapeError:
        logical = 0
    shape = value.shape
    if relayout is not None and shape.is_array:
        try:
            shape = relayout(shape)
        except ShapeError:
            pass
    return BufferInfo(instruction.name, value.computation, instruction.opcode, shape, buffer.size,
                      logical if value.shape.is_array else buffer.size, kind, label, buffer.start, buffer.end,
                      buffer.offset, buffer.memory_space, op_name, source, instruction.line)


def _totals(assignment: Assignment, scheduled: bool) -> dict[int, SpaceTotals]:
    spaces: dict[int, dict[str, int]] = {}
    for allocation in assignment.allocations:
        entry = spaces.setdefault(allocation.memory_space, {"arguments": 0, "outputs": 0, "alias": 0, "temp": 0})
        if allocation.kind == "parameter":
            entry["arguments"] += allocation.size
            if allocation.aliased:
                entry["outputs"] += allocation.size
                entry["alias"] += allocation.size
        elif allocation.kind == "output":
            entry["outputs"] += allocation.size
        elif allocation.kind == "temp" and scheduled:
            entry["temp"] += allocation.size
    if not scheduled:  # no liveness: every temporary counts, wherever buffer assignment would put it
        for buffer in assignment.buffers:
            if not (buffer.is_parameter or buffer.is_constant or buffer.live_out):
                entry = spaces.setdefault(buffer.memory_space, {"arguments": 0, "outputs": 0, "alias": 0, "temp": 0})
                entry["temp"] += buffer.size
    return {space: SpaceTotals(**entry) for space, entry in sorted(spaces.items())}


def _timeline(assignment: Assignment, length: int) -> list[int]:
    """Heap bytes in use at each schedule time (a chunk shared by an operand and its user counts once)."""
    delta = [0] * (length + 2)
    for buffer in assignment.heap_buffers:
        for start, end in buffer.spans:
            delta[start] += buffer.size
            delta[min(end, length) + 1] -= buffer.size
    live, timeline = 0, []
    for time in range(length + 1):
        live += delta[time]
        timeline.append(live)
    return timeline


def memory_report(module: HloModule, *, backend: str = "cpu") -> MemoryReport:
    """Peak memory of ``module`` as XLA's buffer assignment on ``backend`` ("cpu", "gpu" or "tpu") counts it.

    With ``backend="tpu"`` arrays without tiling are sized with the tiling the TPU advisor picks for them.
    A module without a schedule (``is_scheduled=true``) gets no liveness: every temp is summed (an upper bound).
    """
    if backend not in BACKENDS:
        raise ShapeError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    collecting = gc.isenabled()
    gc.disable()  # the analysis makes many small objects and no garbage cycles: full collections would be quadratic
    try:
        return _memory_report(module, backend)
    finally:
        if collecting:
            gc.enable()


def _memory_report(module: HloModule, backend: str) -> MemoryReport:
    flow = analyze(module, _tpu_relayout if backend == "tpu" else None)
    assignment = assign(flow, backend)
    scheduled = module.is_scheduled
    length = flow.end_time
    timeline = _timeline(assignment, length)
    peak_time = max(range(len(timeline)), key=lambda t: (timeline[t], -t)) if timeline else 0
    peak_instruction = flow.sequence[peak_time][1].name if peak_time < len(flow.sequence) else ""
    frames: dict[int, str] = {}
    infos = {b.id: _info(module, b, frames, flow.relayout) for b in assignment.buffers if b.allocation is not None}
    chunks: dict[int, Buffer] = {}  # per heap chunk, the buffer in it at the peak (the latest defined)
    for b in assignment.heap_buffers:
        if b.start <= peak_time <= b.end and (b.chunk not in chunks or b.start > chunks[b.chunk].start):
            chunks[b.chunk] = b
    at_peak = {b.id for b in chunks.values()}
    live = [infos[b.id] for b in assignment.buffers if b.id in infos and
            (b.is_parameter or b.live_out or b.id in at_peak)]
    live.sort(key=lambda i: (-i.physical_bytes, i.start, i.instruction))
    totals = _totals(assignment, scheduled)
    upper = sum(b.size for b in assignment.buffers if not b.is_constant)
    ordered = sorted(infos.values(), key=lambda i: (i.start, i.instruction))
    return MemoryReport(
        module.name, backend, scheduled,
        sum(t.arguments for t in totals.values()), sum(t.outputs for t in totals.values()),
        sum(t.alias for t in totals.values()), sum(t.temp for t in totals.values()),
        sum(assignment.fragmentation.values()), upper, peak_time, peak_instruction, length, totals,
        tuple(ordered), tuple(live), tuple(timeline), tuple(flow.unsized))
