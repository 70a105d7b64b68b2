"""Subcommands about one shape: explain, index, offset, draw, pack, unpack, broadcast."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..errors import ShapeError
from ..explain import explain, explain_lines, number, tpu_report
from ..shape import Shape
from ..text import parse_shape
from ._common import EXIT_BAD_INPUT, EXIT_OK, FIGURE_1, SEED_SHAPE, parse_index


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
            size = f"{number(tpu['physical_bytes'])} physical for {number(tpu['logical_bytes'])} logical"
            lines += ["  on TPU (advisor)", f"    layout         {tpu['shape']}", f"    why            {tpu['reason']}",
                      f"    bytes          {size} ({tpu['waste_percent']:.2f}% padding)"]
        print("\n".join(lines))
    leaves = report["leaves"] if report.get("tuple") else [report]
    return EXIT_BAD_INPUT if any("invalid" in leaf for leaf in leaves) else EXIT_OK


def location(shape: Shape, offset: int) -> dict[str, int]:
    """Where linear offset ``offset`` sits in bytes: byte offset and, for packed sub-byte elements, the bit."""
    bits = shape.element_size_in_bits()
    place = {"element_offset": offset, "byte_offset": offset * bits // 8, "element_bits": bits}
    if bits % 8:
        place["bit_offset"] = offset * bits % 8
    return place


def run_index(args: argparse.Namespace) -> int:
    from ..indexing import linear_index

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
    from ..indexing import multi_index

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
    from ..render import save_picture

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
    from ..physical import to_physical

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

    from ..physical import from_physical

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


def run_broadcast(args: argparse.Namespace) -> int:
    from ..broadcast import binary_op_shape, lower_binary

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


EXPLAIN_EPILOG = f"""examples:
  xlashapes explain                                   # the seed's add.936 shape, {SEED_SHAPE}
  xlashapes explain "f32[3,5]{{1,0:T(2,2)}}"
  xlashapes explain "(f32[2]{{0}}, s4[128]{{0:E(4)}})" --json
  xlashapes explain "f32[3,1000]" --tpu                 # the tiling TPU would use, its reason and its waste
"""


def register(sub: Any) -> None:
    """Add the shape subcommands to the top-level parser's subparsers."""
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
