"""The memory subcommand: peak memory of an HLO module or dump directory as XLA's buffer assignment counts it."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ..errors import ShapeError
from ..explain import percent
from ..layout import memory_space_name
from ._common import EXIT_OK, count_type, example_path, mib, read_text

EXAMPLE_MODULE = "mlp_train_step.hlo"
"""The bundled HLO module (a JAX MLP training step, optimized for CPU) that ``memory`` reads by default."""

MAX_INPUT_BYTES = 2**31
"""Larger inputs are refused (an HLO text this big would not fit the parsed model in memory)."""


def memory_json(report: Any, top: int) -> dict[str, Any]:
    """The no-liveness upper-bound report as plain data (every buffer summed)."""
    def row(b: Any) -> dict[str, Any]:
        return {"computation": b.computation, "instruction": b.instruction, "opcode": b.opcode, "shape": str(b.shape),
                "physical_bytes": b.physical_bytes, "logical_bytes": b.logical_bytes,
                "padding_bytes": b.padding_bytes, "memory_spaces": {str(k): v for k, v in b.by_memory_space.items()},
                "line": b.line}

    return {"module": report.module, "physical_bytes": report.physical_bytes, "logical_bytes": report.logical_bytes,
            "by_memory_space": {str(k): v for k, v in report.by_memory_space().items()},
            "by_computation": report.by_computation(), "unsized": list(report.unsized),
            "largest": [row(b) for b in report.largest(top)], "buffers": [row(b) for b in report.buffers]}


def buffer_json(info: Any) -> dict[str, Any]:
    """One buffer of the peak report as plain data."""
    return {"instruction": info.instruction, "computation": info.computation, "opcode": info.opcode,
            "shape": str(info.shape), "kind": info.kind, "allocation": info.allocation,
            "physical_bytes": info.physical_bytes, "logical_bytes": info.logical_bytes,
            "padding_bytes": info.padding_bytes, "expansion": round(info.expansion, 4), "start": info.start,
            "end": info.end, "offset": info.offset, "memory_space": info.memory_space, "op_name": info.op_name,
            "source": info.source, "line": info.line}


def peak_json(report: Any, top: int, by: str | None, xla: dict[str, int] | None) -> dict[str, Any]:
    """The peak report as plain data: ``peak_bytes`` and every component."""
    data: dict[str, Any] = {
        "module": report.module, "backend": report.backend, "scheduled": report.scheduled,
        "is_upper_bound": report.is_upper_bound, "peak_bytes": report.peak_bytes,
        "arguments_bytes": report.arguments_bytes, "outputs_bytes": report.outputs_bytes,
        "alias_bytes": report.alias_bytes, "temp_bytes": report.temp_bytes,
        "fragmentation_bytes": report.fragmentation_bytes, "upper_bound_bytes": report.upper_bound_bytes,
        "peak_time": report.peak_time, "peak_instruction": report.peak_instruction,
        "schedule_length": report.schedule_length,
        "by_memory_space": {str(space): {"arguments": t.arguments, "outputs": t.outputs, "alias": t.alias,
                                         "temp": t.temp, "peak": t.peak}
                            for space, t in report.by_memory_space.items()},
        "live_at_peak": [buffer_json(b) for b in report.live_at_peak[:top]],
        "live_at_peak_count": len(report.live_at_peak), "unsized": list(report.unsized)}
    if by:
        data["grouped_by"] = by
        data["grouped"] = report.grouped(by)
    if xla is not None:
        data["xla"] = xla
    return data


def _xla_peak(figures: dict[str, int]) -> int:
    return (figures["argument_size_in_bytes"] + figures["output_size_in_bytes"] + figures["temp_size_in_bytes"]
            - figures["alias_size_in_bytes"])


def peak_lines(report: Any, top: int, by: str | None, xla: dict[str, int] | None, xla_file: str = "") -> list[str]:
    """The peak summary first, then the buffers live at the peak (or grouped bytes)."""
    bound = report.is_upper_bound
    label = "upper bound" if bound else "peak"
    lines = [f"module {report.module}: {label} {mib(report.peak_bytes)} on XLA:{report.backend.upper()} "
             f"(arguments + outputs + temp - alias)"]
    if bound:
        lines.append("  the module is not scheduled (e.g. before optimizations): no liveness, every temp is summed;"
                     " each figure is an upper bound, not what XLA allocates")
    lines += [f"  arguments {mib(report.arguments_bytes):>14}  ({report.arguments_bytes:,} bytes)",
              f"  outputs   {mib(report.outputs_bytes):>14}  ({report.outputs_bytes:,} bytes)",
              f"  alias     {mib(report.alias_bytes):>14}  (donated arguments reused as outputs)",
              f"  temp      {mib(report.temp_bytes):>14}  ({report.temp_bytes:,} bytes; " + (
                  "every temporary summed)" if bound else
                  f"heap fragmentation {report.fragmentation_bytes:,} bytes)"),
              f"  {'total' if bound else 'peak':<9} {mib(report.peak_bytes):>14}  ({report.peak_bytes:,} bytes)",
              f"  without liveness (every buffer summed, an upper bound): {mib(report.upper_bound_bytes)}"]
    if report.schedule_length and not bound:
        lines.append(f"  temp peak at schedule position {report.peak_time} of {report.schedule_length}: "
                     f"{report.peak_instruction}")
    if xla is not None:
        theirs = _xla_peak(xla)
        error = 100.0 * (report.peak_bytes - theirs) / theirs if theirs else 0.0
        lines.append(f"XLA's own figures ({xla_file}): arguments {mib(xla['argument_size_in_bytes'])}, outputs "
                     f"{mib(xla['output_size_in_bytes'])}, alias {mib(xla['alias_size_in_bytes'])}, temp "
                     f"{mib(xla['temp_size_in_bytes'])}; peak {mib(theirs)} (ours {error:+.2f}%)")
    if len(report.by_memory_space) > 1:
        lines.append("by memory space:")
        lines += [f"  S({space}) {memory_space_name(space):<40} {mib(t.peak):>14}"
                  for space, t in report.by_memory_space.items()]
    if by:
        lines.append(f"bytes live at the peak by {by}:")
        lines += [f"  {size:>14,}  {key}" for key, size in list(report.grouped(by).items())[:top]]
        return lines
    shown = report.live_at_peak[: max(top, 0)]
    lines.append(f"live at the peak: {len(report.live_at_peak)} buffers, the {len(shown)} largest:")
    lines.append(f"  {'bytes':>14} {'padding':>8}  {'kind':<9} {'instruction':<32} {'shape':<28} op_name / source")
    for b in shown:
        pad = f"{percent(b.padding_bytes, b.physical_bytes)}%"
        origin = " ".join(part for part in (b.op_name, b.source) if part)
        lines.append(f"  {b.physical_bytes:>14,} {pad:>8}  {b.kind:<9} {b.instruction:<32} {b.shape!s:<28} "
                     f"{origin}")
    if report.unsized:
        lines.append(f"no size (unbounded dims): {', '.join(report.unsized[:10])}")
    return lines


def _read(path: Path) -> str:
    return read_text(str(path), "module", MAX_INPUT_BYTES)


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as error:
        raise ShapeError(f"cannot write {path}: {error.strerror or error}") from None


def run_memory(args: argparse.Namespace) -> int:
    from ..memory.dumps import find_dump_files

    if args.module == "-":
        return _report(args, read_text("-", "module", MAX_INPUT_BYTES), None, None, "")
    path = Path(args.module or example_path(EXAMPLE_MODULE))
    try:
        files = find_dump_files(path)
    except OSError as error:
        raise ShapeError(f"cannot read {path}: {error}") from None
    if path.is_dir():
        others = sorted(path.glob("*after_optimizations.txt"))
        if len(others) > 1:
            print(f"{len(others)} optimized modules in {path}; reading the largest, {files.module.name} "
                  "(name a file to choose another)", file=sys.stderr)
    assignment, usage = files.buffer_assignment, files.memory_usage_report
    return _report(args, _read(files.module), None if assignment is None else _read(assignment),
                   None if usage is None else _read(usage), "" if assignment is None else assignment.name)


def _report(args: argparse.Namespace, text: str, assignment: str | None, usage_report: str | None,
            assignment_name: str) -> int:
    """Print (and write) the memory report of module ``text``, with XLA's own figures when its files were read."""
    from ..hlo import parse_hlo_module
    from ..memory import memory_report, upper_bound_report
    from ..memory.dumps import read_buffer_assignment, read_memory_usage_report
    from ..memory.oom import oom_lines
    from ..memory.pictures import report_html, timeline_svg

    if len(text) > 4 * 2**20 and sys.stderr.isatty():
        print(f"  parsing {mib(len(text))} of HLO ...", file=sys.stderr)
    module = parse_hlo_module(text)
    backend = "tpu" if args.tpu else args.backend
    report = memory_report(module, backend=backend)
    xla = None
    if assignment is not None and backend == "cpu":
        xla = read_buffer_assignment(assignment).figures()
    usage = None
    if usage_report is not None and backend == "cpu":
        usage = sum(read_memory_usage_report(usage_report).values())
    if args.svg:
        _write(args.svg, timeline_svg(report))
    if args.html:
        _write(args.html, report_html(report))
    if args.json:
        data = peak_json(report, args.top, args.by, xla)
        if usage is not None:
            data["xla_memory_usage_report_bytes"] = usage
        data["upper_bound"] = memory_json(upper_bound_report(module, tpu=backend == "tpu"), args.top)
        print(json.dumps(data, indent=1))
    elif args.oom:
        print("\n".join(oom_lines(report, args.top)))
    else:
        lines = peak_lines(report, args.top, args.by, xla, assignment_name)
        if usage is not None:
            lines.insert(lines.index(next(line for line in lines if line.startswith(("live at", "bytes live")))),
                         f"XLA's memory-usage-report: {mib(usage)} in all allocations ({usage:,} bytes, "
                         f"constants and thread-local buffers included)")
        print("\n".join(lines))
    for written in (args.svg, args.html):
        if written:
            print(f"wrote {written}", file=sys.stderr)
    return EXIT_OK


def register(sub: Any) -> None:
    """Add the memory subcommand to the top-level parser's subparsers."""
    memory_parser = sub.add_parser(
        "memory", help="peak memory of an HLO module as XLA's buffer assignment counts it, and what is live there",
        description="Peak memory = arguments + outputs + temp - alias, with liveness over the module's schedule, "
                    "as XLA's buffer assignment computes it; then the buffers live at the peak.",
        epilog="examples:\n  xlashapes memory                         # the bundled JAX MLP training step\n"
               "  xlashapes memory dump.txt --top 20\n"
               "  xlashapes memory DUMP_DIR                # finds *after_optimizations.txt and XLA's figures\n"
               "  xlashapes memory dump.txt --by op_name   # bytes at the peak per JAX op_name prefix\n"
               "  xlashapes memory dump.txt --oom          # the TPU compiler's out-of-memory report format\n"
               "  xlashapes memory dump.txt --html report.html --svg timeline.svg\n"
               "  xlashapes memory dump.txt --tpu          # untiled arrays sized with TPU tiling\n"
               "a module that is not scheduled (before optimizations) gets upper bounds, said so plainly.",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    memory_parser.add_argument("module", nargs="?", default=None,
                               help="an HLO text file, an XLA dump directory or - for stdin (default: bundled example)")
    memory_parser.add_argument("--top", type=count_type(0), default=10,
                               help="how many buffers live at the peak to list")
    memory_parser.add_argument("--by", choices=("op_name", "source"), default=None,
                               help="group bytes live at the peak by op_name prefix or source line")
    memory_parser.add_argument("--backend", choices=("cpu", "gpu", "tpu"), default="cpu",
                               help="whose buffer-assignment rules to follow (alignment; default cpu)")
    memory_parser.add_argument("--tpu", action="store_true", help="same as --backend tpu")
    memory_parser.add_argument("--oom", action="store_true",
                               help="print the TPU out-of-memory report's 'Largest program allocations' list")
    memory_parser.add_argument("--svg", metavar="FILE", help="write the memory timeline as SVG")
    memory_parser.add_argument("--html", metavar="FILE", help="write a self-contained HTML report")
    memory_parser.add_argument("--json", action="store_true", help="print JSON (peak_bytes and every component)")
    memory_parser.set_defaults(run=run_memory)
