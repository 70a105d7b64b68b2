"""The ``xlashapes`` command line: answers about shapes and layouts without writing Python."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import ShapeError, XlaShapesError
from .layout import apply_tile, checked_product, layout_problem, memory_space_name
from .shape import UNBOUNDED_SIZE, Shape
from .text import dimension_text, layout_text, parse_shape, shape_text

SEED_SHAPE = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"
"""The seed document's ``add.936`` shape, explained when no shape is given."""

EXIT_OK = 0
EXIT_BAD_INPUT = 2


# ----------------------------------------------------------------------------------------------------
# explain
# ----------------------------------------------------------------------------------------------------


def explain_array(shape: Shape) -> dict[str, Any]:
    """Everything the model knows about one array shape, as plain data (what ``explain --json`` prints)."""
    layout = shape.layout_or_default()
    problem = layout_problem(layout, shape)
    etype = shape.element_type
    report: dict[str, Any] = {
        "shape": str(shape),
        "element_type": etype.name,
        "kind": etype.kind,
        "bits": etype.bits,
        "numpy_dtype": str(etype.numpy_dtype),
        "dimensions": list(shape.dimensions),
        "dynamic_dimensions": list(shape.dynamic_dimensions),
        "letters": list(shape.dimension_letters() or ()),
        "rank": shape.rank,
        "true_rank": shape.true_rank,
        "minor_to_major": list(layout.minor_to_major),
        "memory_space": layout.memory_space,
        "memory_space_name": memory_space_name(layout.memory_space),
    }
    unbounded = [i for i, size in enumerate(shape.dimensions) if size == UNBOUNDED_SIZE]
    if problem is None and unbounded:
        problem = f"dimension {unbounded[0]} is unbounded ('?'), so the array has no size"
    if problem is not None:
        report["invalid"] = problem
        return report
    report["major_to_minor"] = list(layout.major_to_minor)
    sizes = layout.padded_dimensions if layout.padded_dimensions is not None else shape.dimensions
    physical = [sizes[d] for d in layout.major_to_minor]
    levels = [{"tile": None, "dims": list(physical)}]
    for tile in layout.tiles:
        physical = apply_tile(physical, tile)
        levels.append({"tile": list(tile), "dims": list(physical)})
    report["tiling"] = levels
    logical = shape.element_count()
    allocated = checked_product(sizes, "allocated elements")
    tiled = checked_product(physical, "tiled elements")
    total = shape.physical_element_count()
    report["elements"] = {
        "logical": logical,
        "legacy_padding": allocated - logical,
        "tile_padding": tiled - allocated,
        "tail_padding": total - tiled,
        "physical": total,
    }
    physical_bytes = shape.byte_size()
    logical_bytes = shape.xla_byte_size_of()
    report["element_size_in_bits"] = shape.element_size_in_bits()
    report["bytes"] = {
        "logical": logical_bytes,
        "physical": physical_bytes,
        "padding_percent": _percent(physical_bytes - logical_bytes, physical_bytes),
        "xla_array_size_first_tile_only": shape.xla_array_size(),
    }
    if layout.dynamic_shape_metadata_prefix_bytes:
        report["dynamic_metadata_prefix_bytes"] = layout.dynamic_shape_metadata_prefix_bytes
    if layout.split_configs:
        report["split_configs"] = [
            {"physical_dimension": c.dimension, "split_indices": list(c.split_indices)} for c in layout.split_configs
        ]
    return report


def explain(shape: Shape) -> dict[str, Any]:
    """The explain report of any shape: arrays, tuples (one entry per leaf), tokens, opaque values."""
    if shape.is_tuple:
        leaves = [{"index": list(index), **explain(leaf)} for index, leaf in shape.leaves()]
        return {"shape": str(shape), "tuple": True, "leaves": leaves, "total_bytes": shape.byte_size()}
    if not shape.is_array:
        return {"shape": str(shape), "element_type": shape.element_type.name, "bytes": {"physical": shape.byte_size()}}
    return explain_array(shape)


def _percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def _number(n: int) -> str:
    return f"{n:,}"


def explain_lines(report: dict[str, Any], indent: str = "") -> list[str]:
    """The explain report as lines of text for a person."""
    lines = [indent + report["shape"]]
    pad = indent + "  "
    if report.get("tuple"):
        for leaf in report["leaves"]:
            lines.append(f"{pad}element {tuple(leaf['index'])}:")
            lines.extend(explain_lines(leaf, pad + "  "))
        lines.append(f"{pad}total bytes      {_number(report['total_bytes'])}")
        return lines
    if "dimensions" not in report:
        lines.append(f"{pad}{report['element_type']}: {_number(report['bytes']['physical'])} bytes")
        return lines
    lines.append(f"{pad}element type     {report['element_type']}: {report['bits']}-bit {report['kind']}"
                 f" (NumPy {report['numpy_dtype']})")
    sizes = [dimension_text(s, d) for s, d in zip(report["dimensions"], report["dynamic_dimensions"])]
    dims = "[" + ", ".join(sizes) + "]"
    lettered = ", ".join(f"{letter}={size}" for letter, size in zip(report["letters"], sizes))
    lines.append(f"{pad}dimensions       {dims}" + (f"  ({lettered})" if lettered else "")
                 + f"; rank {report['rank']}, true rank {report['true_rank']}")
    if "invalid" in report:
        lines.append(f"{pad}NO SIZE          {report['invalid']}")
        return lines
    order = ", ".join(f"dim {d}" for d in report["major_to_minor"])
    lines.append(f"{pad}physical order   major to minor: {order or '(scalar)'}")
    lines.append(f"{pad}tiling")
    for level in report["tiling"]:
        name = "untiled" if level["tile"] is None else "tile (" + ",".join(
            "*" if t < 0 else str(t) for t in level["tile"]) + ")"
        lines.append(f"{pad}  {name:<20} {level['dims']}")
    elements = report["elements"]
    lines.append(f"{pad}padding          tiles +{_number(elements['tile_padding'])} elements, "
                 f"tail alignment +{_number(elements['tail_padding'])}, legacy +{_number(elements['legacy_padding'])}")
    lines.append(f"{pad}elements         {_number(elements['logical'])} logical, "
                 f"{_number(elements['physical'])} physical ({report['element_size_in_bits']} bits each)")
    size = report["bytes"]
    lines.append(f"{pad}bytes            {_number(size['logical'])} logical, {_number(size['physical'])} physical "
                 f"({size['padding_percent']}% padding)")
    if size["xla_array_size_first_tile_only"] != size["physical"]:
        lines.append(f"{pad}                 XLA's ShapeUtil::ArraySize (first tile only) says "
                     f"{_number(size['xla_array_size_first_tile_only'])}")
    lines.append(f"{pad}memory space     S({report['memory_space']}): {report['memory_space_name']}")
    if "split_configs" in report:
        lines.append(f"{pad}split configs    {report['split_configs']}")
    if "dynamic_metadata_prefix_bytes" in report:
        lines.append(f"{pad}dynamic metadata {report['dynamic_metadata_prefix_bytes']} bytes before the data (M)")
    return lines


def tpu_report(shape: Shape) -> dict[str, Any]:
    """What the TPU layout advisor chooses for ``shape`` and why."""
    from .tpu import tpu_advice

    advice = tpu_advice(shape)
    return {"shape": str(advice.shape), "reason": advice.reason, "logical_bytes": advice.logical_bytes,
            "physical_bytes": advice.physical_bytes, "waste_percent": advice.waste_percent}


def run_explain(args: argparse.Namespace) -> int:
    shape = parse_shape(args.shape)
    report = explain(shape)
    if args.tpu:
        report["tpu"] = tpu_report(shape)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        lines = explain_lines(report)
        if args.tpu:
            tpu = report["tpu"]
            size = f"{_number(tpu['physical_bytes'])} physical for {_number(tpu['logical_bytes'])} logical"
            lines += ["  on TPU (advisor)", f"    layout         {tpu['shape']}", f"    why            {tpu['reason']}",
                      f"    bytes          {size} ({tpu['waste_percent']:.2f}% padding)"]
        print("\n".join(lines))
    leaves = report["leaves"] if report.get("tuple") else [report]
    return EXIT_BAD_INPUT if any("invalid" in leaf for leaf in leaves) else EXIT_OK


# ----------------------------------------------------------------------------------------------------
# index, offset, draw
# ----------------------------------------------------------------------------------------------------

FIGURE_1 = "f32[3,5]{1,0:T(2,2)}"
"""The tiled-layout document's Figure 1: element (2,3) is at linear index 17."""


def parse_index(text: str) -> tuple[int, ...]:
    """``"2,3"`` (or ``"(2, 3)"``, or ``""`` for a scalar) as a tuple of ints, else ShapeError."""
    body = text.strip().strip("()[]").strip()
    if not body:
        return ()
    try:
        return tuple(int(part) for part in body.split(","))
    except ValueError:
        raise ShapeError(f"index {text!r} is not a comma-separated list of integers, e.g. 2,3") from None


def location(shape: Shape, offset: int) -> dict[str, int]:
    """Where linear offset ``offset`` sits in bytes: byte offset and, for packed sub-byte elements, the bit."""
    bits = shape.element_size_in_bits()
    place = {"element_offset": offset, "byte_offset": offset * bits // 8, "element_bits": bits}
    if bits % 8:
        place["bit_offset"] = offset * bits % 8
    return place


def run_index(args: argparse.Namespace) -> int:
    from .indexing import linear_index

    shape = parse_shape(args.shape)
    index = parse_index(args.index)
    place = {"shape": str(shape), "index": list(index), **location(shape, linear_index(shape, index))}
    if args.json:
        print(json.dumps(place))
        return EXIT_OK
    line = f"{shape} index ({args.index.strip('()[] ')}) -> element offset {place['element_offset']}, " \
           f"byte {place['byte_offset']}"
    print(line + (f", bit {place['bit_offset']} (low-order bits first)" if "bit_offset" in place else ""))
    return EXIT_OK


def run_offset(args: argparse.Namespace) -> int:
    from .indexing import multi_index

    shape = parse_shape(args.shape)
    offset = parse_index(args.offset)
    if len(offset) != 1:
        raise ShapeError(f"offset {args.offset!r} must be one integer")
    index = multi_index(shape, offset[0])
    if args.json:
        print(json.dumps({"shape": str(shape), "offset": offset[0], "index": None if index is None else list(index),
                          "padding": index is None}))
    elif index is None:
        print(f"{shape} offset {offset[0]} -> padding (no element)")
    else:
        print(f"{shape} offset {offset[0]} -> index ({','.join(map(str, index))})")
    return EXIT_OK


def run_draw(args: argparse.Namespace) -> int:
    from .render import save_picture

    picture = save_picture(args.shape, args.output, max_rows=args.max_rows, max_cols=args.max_cols)
    if args.json:
        print(json.dumps({"shape": str(picture.shape), "output": str(args.output), "rows": picture.rows,
                          "cols": picture.cols, "notes": list(picture.notes)}))
    else:
        print(f"wrote {args.output}: {picture.rows}x{picture.cols} cells of {picture.shape}"
              + "".join(f"; {note}" for note in picture.notes))
    return EXIT_OK


def load_array_for(path: str, shape: Shape) -> Any:
    """The .npy array at ``path`` in ``shape``'s NumPy dtype: same bits, or a lossless conversion, else ShapeError."""
    import numpy as np

    try:
        array = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise ShapeError(f"cannot read {path} as a .npy array: {error}") from None
    target = shape.element_type.numpy_dtype
    if array.dtype == target:
        return array
    if array.dtype.kind == "V" and array.dtype.itemsize == target.itemsize:
        return array.view(target)  # ml_dtypes arrays come back from np.save/np.load as raw void bytes
    converted = array.astype(target)
    if not np.array_equal(converted.astype(array.dtype), array, equal_nan=array.dtype.kind in "fc"):
        raise ShapeError(f"{path} holds {array.dtype} values that {shape.element_type} cannot represent exactly")
    return converted


def run_pack(args: argparse.Namespace) -> int:
    from .physical import to_physical

    shape = parse_shape(args.shape)
    if not shape.is_array:
        raise ShapeError(f"pack takes one array shape, not {shape}")
    buffer = to_physical(load_array_for(args.input, shape), shape)
    try:
        buffer.tofile(args.output)
    except OSError as error:
        raise ShapeError(f"cannot write {args.output}: {error}") from None
    report = {"shape": str(shape), "input": args.input, "output": args.output, "bytes": int(buffer.size)}
    print(json.dumps(report) if args.json else f"wrote {args.output}: {buffer.size:,} bytes of {shape}")
    return EXIT_OK


def run_unpack(args: argparse.Namespace) -> int:
    import numpy as np

    from .physical import from_physical

    shape = parse_shape(args.shape)
    if not shape.is_array:
        raise ShapeError(f"unpack takes one array shape, not {shape}")
    try:
        buffer = np.fromfile(args.input, dtype=np.uint8)
    except OSError as error:
        raise ShapeError(f"cannot read {args.input}: {error}") from None
    array = from_physical(buffer, shape)
    try:
        np.save(args.output, array)
    except OSError as error:
        raise ShapeError(f"cannot write {args.output}: {error}") from None
    native = array.dtype.kind != "V" and array.dtype.type.__module__ == "numpy"
    report = {"shape": str(shape), "input": args.input, "output": args.output, "dtype": str(array.dtype)}
    if args.json:
        print(json.dumps(report))
    else:
        hint = "" if native else f" (load with np.load(...).view(ml_dtypes.{array.dtype.name}))"
        print(f"wrote {args.output}: {array.dtype}{list(array.shape)}{hint}")
    return EXIT_OK


EXAMPLE_MODULE = "mlp_train_step.hlo"
"""The bundled HLO module (a JAX MLP training step, optimized for CPU) that ``memory`` reads by default."""


def example_path(name: str) -> str:
    """The path of a bundled example file."""
    from importlib.resources import files

    return str(files("xlashapes") / "examples" / name)


def _mib(size: int) -> str:
    return f"{size / 2**20:,.2f} MiB"


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
    lines = [f"module {report.module}: {len(report.buffers):,} buffers, {_mib(physical)} physical, {_mib(logical)} "
             f"logical ({_percent(physical - logical, physical)}% padding)", "by memory space:"]
    lines += [f"  S({space}) {memory_space_name(space):<42} {_mib(size):>14}"
              for space, size in report.by_memory_space().items()]
    lines.append("by computation:")
    lines += [f"  {name:<48} {_mib(size):>14}" for name, size in list(report.by_computation().items())[:top]]
    lines.append(f"largest {min(top, len(report.buffers))} buffers:")
    lines.append(f"  {'bytes':>14} {'padding':>8}  {'instruction':<36} shape")
    for b in report.largest(top):
        pad = f"{_percent(b.padding_bytes, b.physical_bytes)}%"
        lines.append(f"  {b.physical_bytes:>14,} {pad:>8}  {b.instruction:<36} {b.shape}")
    if report.unsized:
        lines.append(f"no size (unbounded dims): {', '.join(report.unsized[:10])}")
    return lines


def run_memory(args: argparse.Namespace) -> int:
    from .hlo import parse_hlo_module
    from .memory import memory_report

    path = args.module or example_path(EXAMPLE_MODULE)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise ShapeError(f"cannot read {path}: {error}") from None
    large = len(text) > 4 * 2**20 and sys.stderr.isatty()
    if large:
        print(f"  parsing {_mib(len(text))} of HLO ...", file=sys.stderr)
    module = parse_hlo_module(text)
    report = memory_report(module, tpu=args.tpu, progress=_progress_bar(sys.stderr) if large else None)
    if args.json:
        print(json.dumps(memory_json(report, args.top), indent=1))
    else:
        print("\n".join(memory_lines(report, args.top)))
    return EXIT_OK


def run_broadcast(args: argparse.Namespace) -> int:
    from .broadcast import binary_op_shape, lower_binary

    dims = parse_index(args.dims) if args.dims is not None else None
    result = binary_op_shape(args.op, args.lhs, args.rhs, dims, direction=args.direction)
    hlo = lower_binary(args.op, args.lhs, args.rhs, dims, direction=args.direction) if args.hlo else None
    if args.json:
        print(json.dumps({"lhs": str(parse_shape(args.lhs)), "rhs": str(parse_shape(args.rhs)), "op": args.op,
                          "broadcast_dimensions": None if dims is None else list(dims), "result": str(result),
                          **({"hlo": hlo} if hlo is not None else {})}))
    else:
        print(hlo if hlo is not None else str(result))
    return EXIT_OK


# ----------------------------------------------------------------------------------------------------
# entry point
# ----------------------------------------------------------------------------------------------------

EXPLAIN_EPILOG = f"""examples:
  xlashapes explain                                   # the seed's add.936 shape, {SEED_SHAPE}
  xlashapes explain "f32[3,5]{{1,0:T(2,2)}}"
  xlashapes explain "(f32[2]{{0}}, s4[128]{{0:E(4)}})" --json
  xlashapes explain "f32[3,1000]" --tpu                 # the tiling TPU would use, its reason and its waste
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="xlashapes",
        description="XLA's array model at the terminal: shapes, layouts, tiling, memory spaces and bytes.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"xlashapes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    explain_parser = sub.add_parser(
        "explain", help="what a shape and its layout mean: dims, tiling, padding, bytes, memory space",
        epilog=EXPLAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explain_parser.add_argument("shape", nargs="?", default=SEED_SHAPE, help="XLA shape text (default: %(default)s)")
    explain_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    explain_parser.add_argument("--tpu", action="store_true",
                                help="also show the TPU layout the advisor chooses, and why")
    explain_parser.set_defaults(run=run_explain)

    index_parser = sub.add_parser(
        "index", help="the linear offset (element, byte, bit) of a logical index",
        epilog=f"examples:\n  xlashapes index                       # {FIGURE_1} index 2,3 -> 17\n"
               '  xlashapes index "s4[8]{0:E(4)}" 5     # byte 2, bit 4',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    index_parser.add_argument("shape", nargs="?", default=FIGURE_1, help="XLA shape text (default: %(default)s)")
    index_parser.add_argument("index", nargs="?", default="2,3", help="comma-separated index (default: %(default)s)")
    index_parser.add_argument("--json", action="store_true", help="print JSON")
    index_parser.set_defaults(run=run_index)

    offset_parser = sub.add_parser(
        "offset", help="the logical index stored at a linear offset, or 'padding'",
        epilog=f"examples:\n  xlashapes offset                      # {FIGURE_1} offset 17 -> (2,3)\n"
               f'  xlashapes offset "{FIGURE_1}" 5   # padding',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    offset_parser.add_argument("shape", nargs="?", default=FIGURE_1, help="XLA shape text (default: %(default)s)")
    offset_parser.add_argument("offset", nargs="?", default="17", help="linear offset in elements")
    offset_parser.add_argument("--json", action="store_true", help="print JSON")
    offset_parser.set_defaults(run=run_offset)

    draw_parser = sub.add_parser(
        "draw", help="draw a layout like the tiled-layout document's figures (.svg, or .png with Pillow)",
        epilog=f"examples:\n  xlashapes draw                                   # {FIGURE_1} -> layout.svg\n"
               '  xlashapes draw "f32[4,8]{1,0:T(2,4)(2,1)}" -o fig2.png',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    draw_parser.add_argument("shape", nargs="?", default=FIGURE_1, help="XLA shape text (default: %(default)s)")
    draw_parser.add_argument("-o", "--output", default="layout.svg", help="output .svg or .png (default: %(default)s)")
    draw_parser.add_argument("--max-rows", type=int, default=16, help="rows drawn at most (whole tiles)")
    draw_parser.add_argument("--max-cols", type=int, default=64, help="columns drawn at most (whole tiles)")
    draw_parser.add_argument("--json", action="store_true", help="print JSON")
    draw_parser.set_defaults(run=run_draw)

    pack_parser = sub.add_parser(
        "pack", help="write a .npy array as the exact bytes of a layout",
        epilog='examples:\n  xlashapes pack x.npy "bf16[256,512]{1,0:T(8,128)(2,1)}" x.bin\n'
               '  xlashapes pack v.npy "s4[6]{0:E(4)}" v.bin      # packed, first element in the low bits',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    pack_parser.add_argument("input", help="a .npy file with the array (its dims must match the shape)")
    pack_parser.add_argument("shape", help="XLA shape text with the layout to write")
    pack_parser.add_argument("output", help="the binary file to write")
    pack_parser.add_argument("--json", action="store_true", help="print JSON")
    pack_parser.set_defaults(run=run_pack)

    unpack_parser = sub.add_parser(
        "unpack", help="read the bytes of a layout back into a .npy array",
        epilog='examples:\n  xlashapes unpack x.bin "bf16[256,512]{1,0:T(8,128)(2,1)}" x.npy',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    unpack_parser.add_argument("input", help="the binary file (exactly the shape's byte size)")
    unpack_parser.add_argument("shape", help="XLA shape text with the layout the bytes are in")
    unpack_parser.add_argument("output", help="the .npy file to write")
    unpack_parser.add_argument("--json", action="store_true", help="print JSON")
    unpack_parser.set_defaults(run=run_unpack)

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

    broadcast_parser = sub.add_parser(
        "broadcast", help="the result shape of an element-wise op under XLA's broadcasting rules, or why it fails",
        epilog='examples:\n  xlashapes broadcast "f32[2,3]" "f32[3]" --dims 1          # f32[2,3]{1,0}\n'
               '  xlashapes broadcast "f32[2,1]" "f32[1,3]"                 # the outer operation\n'
               '  xlashapes broadcast "f32[2,3]" "f32[3]" --dims 1 --hlo    # the explicit HLO XLA runs\n'
               '  xlashapes broadcast "f32[7,2,5]" "f32[7,2,6]"             # error, exit 2',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    broadcast_parser.add_argument("lhs", nargs="?", default="f32[2,3]", help="left operand shape")
    broadcast_parser.add_argument("rhs", nargs="?", default="f32[3]", help="right operand shape")
    broadcast_parser.add_argument("--dims", default=None,
                                  help="broadcast_dimensions, comma-separated (default: none; 1 for the defaults)")
    broadcast_parser.add_argument("--op", default="add", help="the element-wise op (default: %(default)s)")
    broadcast_parser.add_argument("--direction", default=None, help="comparison direction for --op compare (EQ, LT...)")
    broadcast_parser.add_argument("--hlo", action="store_true", help="print the explicit HLO module")
    broadcast_parser.add_argument("--json", action="store_true", help="print JSON")
    broadcast_parser.set_defaults(run=run_broadcast)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "broadcast" and args.dims is None and args.lhs == "f32[2,3]" and args.rhs == "f32[3]":
        args.dims = "1"  # the bundled example: matrix + vector along dimension 1
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help()
        return EXIT_OK
    try:
        return run(args)
    except XlaShapesError as error:
        print(f"xlashapes {args.command}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT


__all__ = ["explain", "explain_lines", "layout_text", "main", "shape_text"]
