"""The memory subcommand: the buffers of an HLO module."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ..errors import ShapeError
from ..explain import percent
from ..layout import memory_space_name
from ._common import EXIT_OK, example_path, mib

EXAMPLE_MODULE = "mlp_train_step.hlo"
"""The bundled HLO module (a JAX MLP training step, optimized for CPU) that ``memory`` reads by default."""


def _progress_bar(stream: Any) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        width = 30
        filled = width * done // total if total else width
        stream.write(f"\r  buffers [{'#' * filled}{' ' * (width - filled)}] {done:,}/{total:,}")
        if done >= total:
            stream.write("\n")
        stream.flush()

    return show


def memory_json(report: Any, top: int) -> dict[str, Any]:
    """The memory report as plain data."""
    def row(b: Any) -> dict[str, Any]:
        return {"computation": b.computation, "instruction": b.instruction, "opcode": b.opcode, "shape": str(b.shape),
                "physical_bytes": b.physical_bytes, "logical_bytes": b.logical_bytes,
                "padding_bytes": b.padding_bytes, "memory_spaces": {str(k): v for k, v in b.by_memory_space.items()},
                "line": b.line}

    return {"module": report.module, "physical_bytes": report.physical_bytes, "logical_bytes": report.logical_bytes,
            "by_memory_space": {str(k): v for k, v in report.by_memory_space().items()},
            "by_computation": report.by_computation(), "unsized": list(report.unsized),
            "largest": [row(b) for b in report.largest(top)], "buffers": [row(b) for b in report.buffers]}


def memory_lines(report: Any, top: int) -> list[str]:
    """The memory report for a person."""
    physical, logical = report.physical_bytes, report.logical_bytes
    lines = [f"module {report.module}: {len(report.buffers):,} buffers, {mib(physical)} physical, {mib(logical)} "
             f"logical ({percent(physical - logical, physical)}% padding)", "by memory space:"]
    lines += [f"  S({space}) {memory_space_name(space):<42} {mib(size):>14}"
              for space, size in report.by_memory_space().items()]
    lines.append("by computation:")
    lines += [f"  {name:<48} {mib(size):>14}" for name, size in list(report.by_computation().items())[:top]]
    lines.append(f"largest {min(top, len(report.buffers))} buffers:")
    lines.append(f"  {'bytes':>14} {'padding':>8}  {'instruction':<36} shape")
    for b in report.largest(top):
        pad = f"{percent(b.padding_bytes, b.physical_bytes)}%"
        lines.append(f"  {b.physical_bytes:>14,} {pad:>8}  {b.instruction:<36} {b.shape}")
    if report.unsized:
        lines.append(f"no size (unbounded dims): {', '.join(report.unsized[:10])}")
    return lines


def run_memory(args: argparse.Namespace) -> int:
    from ..hlo import parse_hlo_module
    from ..memory import memory_report

    path = args.module or example_path(EXAMPLE_MODULE)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ShapeError(f"cannot read {path}: {error}") from None
    large = len(text) > 4 * 2**20 and sys.stderr.isatty()
    if large:
        print(f"  parsing {mib(len(text))} of HLO ...", file=sys.stderr)
    module = parse_hlo_module(text)
    report = memory_report(module, tpu=args.tpu, progress=_progress_bar(sys.stderr) if large else None)
    if args.json:
        print(json.dumps(memory_json(report, args.top), indent=1))
    else:
        print("\n".join(memory_lines(report, args.top)))
    return EXIT_OK


def register(sub: Any) -> None:
    """Add the memory subcommand to the top-level parser's subparsers."""
    memory_parser = sub.add_parser(
        "memory", help="every buffer of an HLO module with its physical bytes; totals by memory space and computation",
        epilog="examples:\n  xlashapes memory                      # the bundled JAX MLP training step\n"
               "  xlashapes memory dump.txt --top 20\n"
               "  xlashapes memory dump.txt --tpu        # arrays re-laid with TPU tiling: a TPU memory estimate\n"
               "buffers are summed without liveness analysis: an upper bound on what is live at once.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    memory_parser.add_argument("module", nargs="?", default=None, help="an HLO text file (default: bundled example)")
    memory_parser.add_argument("--top", type=int, default=10, help="how many of the largest buffers to list")
    memory_parser.add_argument("--tpu", action="store_true", help="re-lay untiled arrays with the TPU advisor first")
    memory_parser.add_argument("--json", action="store_true", help="print JSON")
    memory_parser.set_defaults(run=run_memory)
