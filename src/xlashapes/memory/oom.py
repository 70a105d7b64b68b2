"""The TPU compiler's out-of-memory report ("Largest program allocations in hbm"), reproduced from a report.

Sizes are formatted as tsl's ``HumanReadableNumBytes`` formats them: below 1024 bytes ``N`` then ``B``;
else divided by 1024 with integer division while at least 1 MiB remains, then printed as ``%.1f`` for K and
``%.2f`` for M, G, T, P, E. The TPU report prints the unit letter without tsl's ``iB``.
"""

from __future__ import annotations

from .report import BufferInfo, MemoryReport

_UNITS = "KMGTPE"
_ALLOCATION_TYPES = {"parameter": "program input", "output": "program output", "temp": "HLO temp",
                     "constant": "constant"}


def human_readable_bytes(num_bytes: int, suffix: str = "iB") -> str:
    """``num_bytes`` as tsl's HumanReadableNumBytes prints it (``suffix=""``: as the TPU OOM report does).

    >>> human_readable_bytes(12345678), human_readable_bytes(1536), human_readable_bytes(512)
    ('11.77MiB', '1.5KiB', '512B')
    >>> human_readable_bytes(2818572288, suffix="")
    '2.62G'
    """
    if num_bytes == -(2**63):
        return "-8E"
    sign = "-" if num_bytes < 0 else ""
    value = abs(num_bytes)
    if value < 1024:
        return f"{sign}{value}B"
    unit = 0
    while value >= 1024 * 1024:
        value //= 1024
        unit += 1
    letter = _UNITS[unit]
    digits = 1 if letter == "K" else 2
    return f"{sign}{value / 1024.0:.{digits}f}{letter}{suffix}"


def expansion_text(physical: int, logical: int) -> str:
    """``N.Nx`` as the TPU report prints a padding expansion.

    >>> expansion_text(4 * 2**30, 2**30)
    '4.0x'
    """
    return f"{physical / logical if logical else 1.0:.1f}x"


def oom_entry(rank: int, info: BufferInfo, operator: str = "") -> list[str]:
    """One entry of "Largest program allocations": Size, Operator, Shape, Unpadded size, padding, label, type.

    Example: see ``oom_lines``.
    """
    padding = info.physical_bytes - info.logical_bytes
    operator = operator or " ".join(part for part in (
        f'op_name="{info.op_name}"' if info.op_name else "",
        f'source_file="{info.source.rsplit(":", 1)[0]}" source_line={info.source.rsplit(":", 1)[1]}'
        if info.source else "") if part)
    lines = [f"  {rank}. Size: {human_readable_bytes(info.physical_bytes, '')}"]
    if operator:
        lines.append(f"     Operator: {operator}")
    lines += [f"     Shape: {info.shape}",
              f"     Unpadded size: {human_readable_bytes(info.logical_bytes, '')}"]
    if padding > 0:
        lines.append(f"     Extra memory due to padding: {human_readable_bytes(padding, '')} "
                     f"({expansion_text(info.physical_bytes, info.logical_bytes)} expansion)")
    lines += [f"     XLA label: {info.instruction} = {info.opcode}(...)",
              f"     Allocation type: {_ALLOCATION_TYPES.get(info.kind, info.kind)}",
              "     =========================="]
    return lines


def oom_lines(report: MemoryReport, top: int = 10) -> list[str]:
    """The "Largest program allocations" list for the buffers live at the peak, largest first.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> from xlashapes.memory import memory_report
    >>> text = "HloModule m, is_scheduled=true\\nENTRY e {\\n  ROOT p = f32[3,5]{1,0:T(2,2)} parameter(0)\\n}\\n"
    >>> print("\\n".join(oom_lines(memory_report(parse_hlo_module(text)))[-7:]))
      1. Size: 96B
         Shape: f32[3,5]{1,0:T(2,2)}
         Unpadded size: 60B
         Extra memory due to padding: 36B (1.6x expansion)
         XLA label: p = parameter(...)
         Allocation type: program input
         ==========================
    """
    lines = [f"Total hbm usage >= {human_readable_bytes(report.peak_bytes, '')}:",
             f"    reserved        {human_readable_bytes(0, '')}",
             f"    program         {human_readable_bytes(report.temp_bytes, '')}",
             f"    arguments       {human_readable_bytes(report.arguments_bytes, '')}",
             "", "Output size " + human_readable_bytes(report.outputs_bytes, '')
             + f"; shares {human_readable_bytes(report.alias_bytes, '')} with arguments.", "",
             "Program hbm requirement " + human_readable_bytes(report.temp_bytes, '') + ":", "",
             "  Largest program allocations in hbm:", ""]
    for rank, info in enumerate(report.live_at_peak[: max(top, 0)], 1):
        lines += oom_entry(rank, info)
    return lines
