"""Memory of HLO modules: XLA's peak (arguments + outputs + temp - alias) with the buffers live at the peak,
XLA's own dump files read back, the TPU out-of-memory report format, and pictures of the timeline.

``upper_bound_report`` keeps the old no-liveness sum of every buffer, an upper bound on memory.
"""

from __future__ import annotations

from ._upper_bound import (
    ALIASING_OPCODES,
    Buffer,
    UpperBoundReport,
    buffer_of,
    defines_buffer,
    materialized_computations,
    upper_bound_report,
)
from .report import KINDS, BufferInfo, MemoryReport, SpaceTotals, memory_report

__all__ = [
    "ALIASING_OPCODES",
    "KINDS",
    "Buffer",
    "BufferInfo",
    "MemoryReport",
    "SpaceTotals",
    "UpperBoundReport",
    "buffer_of",
    "defines_buffer",
    "materialized_computations",
    "memory_report",
    "upper_bound_report",
]
