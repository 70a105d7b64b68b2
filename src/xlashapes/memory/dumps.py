"""XLA's own memory dump files read back: ``*buffer-assignment.txt``, ``*memory-usage-report.txt``,
``*live-range.txt`` (written with ``XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_text"``), and a dump
directory's after-optimizations module found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import ParseError

_ALLOCATION = re.compile(r"allocation (\d+): size (\d+)(?:, (.*))?:\s*$")
_VALUE = re.compile(r" value: <(\d+) (\S+?)(\{[\d,]*\})?(?: \(phi\))? @\d+> \(size=(\d+),offset=(\d+)\): (.*)$")
_TOTAL = re.compile(r"Total bytes: (\d+)")
_SPACE = re.compile(r"Memory Space: (\S+) \(color=(\d+)\)")
_SEQUENCE = re.compile(r"\s+(\d+):(\S+)$")
_RANGE = re.compile(r"\s+(\S+?)(\{[\d,]*\}):(\d+)-(\d+)$")


@dataclass(frozen=True)
class AllocationRecord:
    """One allocation of XLA's buffer assignment: index, size, kind and the values placed in it."""

    index: int
    size: int
    kind: str
    parameter: int | None
    maybe_live_out: bool
    values: tuple[tuple[str, str, int, int], ...]  # (instruction, shape index, size, offset)


@dataclass(frozen=True)
class BufferAssignmentFile:
    """A ``*buffer-assignment.txt`` file, summed as ``compiled.memory_analysis()`` sums it.

    >>> text = "BufferAssignment:\\nallocation 0: size 16, parameter 0, shape |f32[4]| at ShapeIndex {}:\\n"
    >>> text += " value: <1 p @0> (size=16,offset=0): f32[4]{0}\\nallocation 1: size 64, preallocated-temp:\\n"
    >>> read_buffer_assignment(text).figures()
    {'argument_size_in_bytes': 16, 'output_size_in_bytes': 0, 'alias_size_in_bytes': 0, 'temp_size_in_bytes': 64}
    """

    allocations: tuple[AllocationRecord, ...]

    def figures(self) -> dict[str, int]:
        """Argument, output, alias and temp bytes, exactly as XLA's memory_analysis() reports them."""
        arguments = outputs = alias = temp = 0
        for allocation in self.allocations:
            if allocation.kind == "parameter":
                arguments += allocation.size
                if allocation.maybe_live_out:
                    outputs += allocation.size
                    alias += allocation.size
            elif allocation.maybe_live_out:
                outputs += allocation.size
            elif allocation.kind in ("temp", "preallocated-temp"):
                temp += allocation.size
        return {"argument_size_in_bytes": arguments, "output_size_in_bytes": outputs,
                "alias_size_in_bytes": alias, "temp_size_in_bytes": temp}

    @property
    def peak_bytes(self) -> int:
        """XLA's total: arguments + outputs + temp - alias."""
        f = self.figures()
        return (f["argument_size_in_bytes"] + f["output_size_in_bytes"] + f["temp_size_in_bytes"]
                - f["alias_size_in_bytes"])


def _kind(attributes: str) -> tuple[str, int | None]:
    match = re.search(r"parameter (\d+)", attributes)
    if match:
        return "parameter", int(match.group(1))
    for kind in ("constant", "thread-local", "preallocated-temp"):
        if kind in attributes:
            return kind, None
    if "maybe-live-out" in attributes:
        return "output", None
    return "temp", None


def read_buffer_assignment(text: str) -> BufferAssignmentFile:
    """Read a ``*buffer-assignment.txt`` dump (its allocations; the value and trace sections are skipped)."""
    allocations: list[AllocationRecord] = []
    current: list[tuple[str, str, int, int]] | None = None
    header: tuple[int, int, str] | None = None

    def close() -> None:
        if header is not None and current is not None:
            kind, parameter = _kind(header[2])
            allocations.append(AllocationRecord(header[0], header[1], kind, parameter,
                                                "maybe-live-out" in header[2], tuple(current)))

    position = 0
    for line in text.splitlines():
        match = _ALLOCATION.match(line)
        if match:
            close()
            header = (int(match.group(1)), int(match.group(2)), match.group(3) or "")
            current = []
        elif line.startswith(" value: ") and current is not None:
            value = _VALUE.match(line)
            if value is None:
                raise ParseError("buffer-assignment value line not understood", text, position)
            current.append((value.group(2), value.group(3) or "{}", int(value.group(4)), int(value.group(5))))
        elif line.startswith(("Total bytes used", "Used values", "HloLiveRange")):
            break
        position += len(line) + 1
    close()
    if not allocations and "BufferAssignment" not in text[:200]:
        raise ParseError("not a buffer-assignment dump (no 'allocation N: size S' lines)", text, 0)
    return BufferAssignmentFile(tuple(allocations))


def read_memory_usage_report(text: str) -> dict[int, int]:
    """Total bytes per memory space (color) of a ``*memory-usage-report.txt`` dump.

    >>> read_memory_usage_report("Memory Space: default (color=0)\\nTotal bytes: 1048576 (1.00MiB)\\n")
    {0: 1048576}
    """
    totals: dict[int, int] = {}
    color = 0
    for line in text.splitlines():
        space = _SPACE.match(line)
        if space:
            color = int(space.group(2))
            continue
        total = _TOTAL.match(line)
        if total:
            totals[color] = totals.get(color, 0) + int(total.group(1))
    if not totals:
        raise ParseError("not a memory-usage-report dump (no 'Total bytes:' line)", text, 0)
    return totals


@dataclass(frozen=True)
class LiveRangeFile:
    """A ``*live-range.txt`` dump: XLA's flattened schedule and each value's live range in it."""

    sequence: tuple[str, ...]
    ranges: dict[str, tuple[int, int]]


def read_live_range(text: str) -> LiveRangeFile:
    """Read a ``*live-range.txt`` dump (the "peak" section it ends with is not reliable and is skipped).

    >>> f = read_live_range("HloLiveRange (max 2):\\n  InstructionSequence:\\n    0:p\\n    1:n\\n"
    ...                     "  BufferLiveRange:\\n    p{}:0-2\\n    n{}:1-2\\n")
    >>> f.sequence, f.ranges["n{}"]
    (('p', 'n'), (1, 2))
    """
    sequence: list[str] = []
    ranges: dict[str, tuple[int, int]] = {}
    section = ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("InstructionSequence"):
            section = "sequence"
        elif stripped.startswith("BufferLiveRange"):
            section = "ranges"
        elif stripped.startswith("Live ranges at"):
            break
        elif section == "sequence" and (match := _SEQUENCE.match(line)):
            sequence.append(match.group(2))
        elif section == "ranges" and (found := _RANGE.match(line)):
            ranges[found.group(1) + found.group(2)] = (int(found.group(3)), int(found.group(4)))
    if not sequence and not text.startswith("HloLiveRange"):
        raise ParseError("not a live-range dump (no 'HloLiveRange' header)", text, 0)
    return LiveRangeFile(tuple(sequence), ranges)


@dataclass(frozen=True)
class DumpFiles:
    """The module file of a dump and XLA's memory files beside it (None where XLA wrote none)."""

    module: Path
    buffer_assignment: Path | None
    memory_usage_report: Path | None
    live_range: Path | None
    before_optimizations: bool


def find_dump_files(path: Path) -> DumpFiles:
    """For a module file or a dump directory: the (largest) after-optimizations module and its memory files.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "module_0001.jit_f.cpu_after_optimizations.txt").write_text("HloModule m")
    >>> _ = (folder / "module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt").write_text("")
    >>> found = find_dump_files(folder)
    >>> found.module.name, found.buffer_assignment is not None, found.live_range
    ('module_0001.jit_f.cpu_after_optimizations.txt', True, None)
    """
    if path.is_dir():
        candidates = sorted(p for p in path.glob("*after_optimizations.txt"))
        if not candidates:
            candidates = sorted(p for p in path.glob("*.txt") if "before_optimizations" in p.name)
        if not candidates:
            candidates = sorted(path.glob("*.hlo"))
        if not candidates:
            raise FileNotFoundError(f"{path}: no *after_optimizations.txt, *before_optimizations.txt or *.hlo")
        module = max(candidates, key=lambda p: (p.stat().st_size, p.name))
    else:
        module = path
        for kind in ("-buffer-assignment.txt", "-memory-usage-report.txt", "-live-range.txt",
                     "-buffer-assignment-values.txt"):
            if module.name.endswith(kind):  # a memory file named: read the module it belongs to
                module = module.with_name(module.name[: -len(kind)] + ".txt")
    stem = module.name
    for suffix in (".txt", ".hlo"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]

    def sibling(kind: str) -> Path | None:
        for name in (f"{stem}-{kind}.txt", f"{stem}.{kind}.txt"):
            candidate = module.with_name(name)
            if candidate.is_file():
                return candidate
        return None

    return DumpFiles(module, sibling("buffer-assignment"), sibling("memory-usage-report"), sibling("live-range"),
                     "before_optimizations" in module.name)
