"""Subcommands about one shape: explain, index, offset, draw, pack, unpack, broadcast."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import ShapeError
from ..explain import (
    explain,
    explain_instruction,
    explain_lines,
    instruction_lines,
    is_instruction,
    number,
    reports_of,
    tpu_report,
)
from ..shape import UNBOUNDED_SIZE, Shape
from ..text import parse_shape
from ._common import (
    EXIT_BAD_INPUT,
    EXIT_OK,
    FIGURE_1,
    SEED_SHAPE,
    count_type,
    example_note,
    parse_index,
    parse_offset,
    read_bytes,
    text_argument,
)

MAX_DRAWN = 512
"""The most rows or columns ``draw --max-rows/--max-cols`` accept (the picture keeps one size cap)."""


def run_explain(args: argparse.Namespace) -> int:
    if args.shape is None:
        example_note("explain", f'"{SEED_SHAPE}" (the seed document\'s add.936)')
        args.shape = SEED_SHAPE
    text = text_argument(args.shape, "shape or instruction")
    if is_instruction(text):
        from ..hlo import parse_instruction

        instruction = parse_instruction(text)
        shape = instruction.shape
        report = explain_instruction(instruction)
        lines = instruction_lines(report)
    else:
        shape = parse_shape(text)
        report = explain(shape)
        lines = explain_lines(report)
    if args.tpu and not any("invalid" in leaf for leaf in reports_of(report)):  # no advice for a broken layout
        report["tpu"] = tpu_report(shape)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        if "tpu" in report:
            tpu = report["tpu"]
            size = f"{number(tpu['physical_bytes'])} physical for {number(tpu['logical_bytes'])} logical"
            lines += ["  on TPU (advisor)", f"    layout         {tpu['shape']}", f"    why            {tpu['reason']}",
                      f"    bytes          {size} ({tpu['waste_percent']:.2f}% padding)"]
        print("\n".join(lines))
    invalid = [leaf for leaf in reports_of(report) if "invalid" in leaf]
    if invalid:
        print(f"xlashapes explain: {invalid[0]['shape']} has no size: {invalid[0]['invalid']}", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def location(shape: Shape, offset: int) -> dict[str, int]:
    """Where linear offset ``offset`` sits in bytes: byte offset and, for packed sub-byte elements, the bit."""
    bits = shape.element_size_in_bits()
    place = {"element_offset": offset, "byte_offset": offset * bits // 8, "element_bits": bits}
    if bits % 8:
        place["bit_offset"] = offset * bits % 8
    return place


def numpy_index(shape: Shape, index: tuple[int, ...]) -> tuple[int, ...]:
    """``index`` with negative entries counted from the end of their dimension, as NumPy does."""
    if len(index) != shape.rank:
        raise ShapeError(f"index ({','.join(map(str, index))}) has {len(index)} entries but {shape} has rank "
                         f"{shape.rank}")
    out = []
    for dim, (value, size) in enumerate(zip(index, shape.dimensions)):
        if value < 0:
            if size == UNBOUNDED_SIZE:
                raise ShapeError(f"negative index {value} in dimension {dim}, which is unbounded ('?')")
            if value < -size:
                raise ShapeError(f"index {value} is out of range for dimension {dim} (size {size}) of {shape}")
            value += size
        out.append(value)
    return tuple(out)


def run_index(args: argparse.Namespace) -> int:
    from ..indexing import linear_index

    if args.shape is None:
        example_note("index", f'"{FIGURE_1}" 2,3')
        args.shape, args.index = FIGURE_1, "2,3"
    shape = parse_shape(text_argument(args.shape))
    if not shape.is_array:
        raise ShapeError(f"index takes one array shape, not {shape}")
    if args.index is None:
        raise ShapeError(f"give the index to locate after the shape, e.g. xlashapes index '{shape}' "
                         + (",".join(["0"] * shape.rank) or "''"))
    index = numpy_index(shape, parse_index(args.index))
    place = {"shape": str(shape), "index": list(index), **location(shape, linear_index(shape, index))}
    if args.json:
        print(json.dumps(place))
        return EXIT_OK
    line = f"{shape} index ({','.join(map(str, index))}) -> element offset {place['element_offset']}, " \
           f"byte {place['byte_offset']}"
    print(line + (f", bit {place['bit_offset']} (low-order bits first)" if "bit_offset" in place else ""))
    return EXIT_OK


def run_offset(args: argparse.Namespace) -> int:
    from ..indexing import multi_index

    if args.shape is None:
        example_note("offset", f'"{FIGURE_1}" 17')
        args.shape, args.offset = FIGURE_1, "17"
    shape = parse_shape(text_argument(args.shape))
    if not shape.is_array:
        raise ShapeError(f"offset takes one array shape, not {shape}")
    if args.offset is None:
        raise ShapeError(f"give the linear offset (in elements) after the shape, e.g. xlashapes offset '{shape}' 0")
    offset = parse_offset(args.offset)
    if offset < 0:
        raise ShapeError(f"offset {offset} is negative: offsets count elements from the start of the buffer")
    index = multi_index(shape, offset)
    if args.json:
        print(json.dumps({"shape": str(shape), "offset": offset, "index": None if index is None else list(index),
                          "padding": index is None}))
    elif index is None:
        print(f"{shape} offset {offset} -> padding (no element)")
    else:
        print(f"{shape} offset {offset} -> index ({','.join(map(str, index))})")
    return EXIT_OK


def run_draw(args: argparse.Namespace) -> int:
    from ..render import save_picture

    if args.shape is None:
        example_note("draw", f'"{FIGURE_1}" -o {args.output}')
        args.shape = FIGURE_1
    picture = save_picture(text_argument(args.shape), args.output, max_rows=args.max_rows, max_cols=args.max_cols)
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
        array = np.load(path, mmap_mode="r", allow_pickle=False)  # a .npy file is mapped, not read
    except IsADirectoryError:
        raise ShapeError(f"cannot read {path}: it is a directory") from None
    except (OSError, ValueError, EOFError) as error:
        raise ShapeError(f"cannot read {path} as a .npy array: {error}") from None
    if not isinstance(array, np.ndarray):
        names = ", ".join(getattr(array, "files", [])[:5])
        raise ShapeError(f"{path} is a .npz archive ({names}), not one .npy array: save the array with np.save")
    target = shape.element_type.numpy_dtype
    if array.dtype == target:
        return array
    if array.dtype.kind == "V" and array.dtype.fields is None and array.dtype.itemsize == target.itemsize:
        return array.view(target)  # ml_dtypes arrays come back from np.save/np.load as raw void bytes
    if array.dtype.kind not in "biufc" and array.dtype.type.__module__ != "ml_dtypes":
        raise ShapeError(f"{path} holds {array.dtype} values, not numbers: {shape.element_type} needs numbers")
    with np.errstate(all="ignore"):
        try:
            converted = array.astype(target)
            same = np.array_equal(converted.astype(array.dtype), array, equal_nan=array.dtype.kind in "fc")
        except (TypeError, ValueError, OverflowError):
            same = False
    if not same:
        raise ShapeError(f"{path} holds {array.dtype} values that {shape.element_type} cannot represent exactly")
    return converted


def run_pack(args: argparse.Namespace) -> int:
    import numpy as np

    from ..physical import pack_file, terminal_progress, to_physical

    shape = parse_shape(args.shape)
    if not shape.is_array:
        raise ShapeError(f"pack takes one array shape, not {shape}")
    array = load_array_for(args.input, shape)
    if isinstance(array, np.memmap) and array.filename is not None:
        # the file's own values: streamed through the layout, larger than memory too
        size = pack_file(args.input, shape, args.output, progress=terminal_progress(label="pack "))
    else:  # converted values (e.g. float64 into f32) are in memory already
        buffer = to_physical(array, shape)
        try:
            buffer.tofile(args.output)
        except OSError as error:
            raise ShapeError(f"cannot write {args.output}: {error}") from None
        size = int(buffer.size)
    report = {"shape": str(shape), "input": args.input, "output": args.output, "bytes": size}
    print(json.dumps(report) if args.json else f"wrote {args.output}: {size:,} bytes of {shape}")
    return EXIT_OK


def run_unpack(args: argparse.Namespace) -> int:
    import numpy as np

    from ..physical import from_physical, terminal_progress, unpack_file

    shape = parse_shape(args.shape)
    if not shape.is_array:
        raise ShapeError(f"unpack takes one array shape, not {shape}")
    expected = shape.byte_size()
    if _regular_file_size(args.input) == expected and expected:  # streamed, larger than memory too
        unpack_file(args.input, shape, args.output, progress=terminal_progress(label="unpack "))
        array = np.load(args.output, mmap_mode="r").view(shape.element_type.numpy_dtype)
    else:
        data = read_bytes(args.input, f"input for {shape} ({expected:,} bytes):", limit=expected)
        if len(data) != expected:
            raise ShapeError(f"{args.input} holds {len(data):,} bytes but {shape} takes {expected:,}")
        array = from_physical(np.frombuffer(data, dtype=np.uint8), shape)
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


def _regular_file_size(path: str) -> int | None:
    """The size of ``path`` when it is a regular file (not stdin, a device or a directory), else None."""
    import os
    import stat

    try:
        info = os.stat(path) if path != "-" else None
    except OSError:
        return None
    return info.st_size if info is not None and stat.S_ISREG(info.st_mode) else None


def run_broadcast(args: argparse.Namespace) -> int:
    from ..broadcast import binary_op_shape, lower_binary

    if args.lhs is None:
        example_note("broadcast", '"f32[2,3]" "f32[3]" --dims 1')
        args.lhs, args.rhs = "f32[2,3]", "f32[3]"
        args.dims = "1" if args.dims is None else args.dims
    if args.rhs is None:
        raise ShapeError(f"give two operand shapes, e.g. xlashapes broadcast '{args.lhs}' 'f32[]'")
    args.lhs, args.rhs = text_argument(args.lhs, "left operand"), text_argument(args.rhs, "right operand")
    dims = parse_index(args.dims, "--dims") if args.dims is not None else None
    result = binary_op_shape(args.op, args.lhs, args.rhs, dims, direction=args.direction)
    hlo = lower_binary(args.op, args.lhs, args.rhs, dims, direction=args.direction) if args.hlo else None
    if args.json:
        print(json.dumps({"lhs": str(parse_shape(args.lhs)), "rhs": str(parse_shape(args.rhs)), "op": args.op,
                          "broadcast_dimensions": None if dims is None else list(dims), "result": str(result),
                          **({"hlo": hlo} if hlo is not None else {})}))
    else:
        print(hlo if hlo is not None else str(result))
    return EXIT_OK


EXPLAIN_EPILOG = """examples:
  xlashapes explain                                   # no arguments: the example, the seed's add.936 shape
  xlashapes explain "%add.1 = f32[8,128]{1,0} add(f32[8,128]{1,0} %x, %y)"   # a pasted HLO line
  pbpaste | xlashapes explain -                       # the shape or line from stdin
  xlashapes explain "f32[3,5]{1,0:T(2,2)}"
  xlashapes explain "(f32[2]{0}, s4[128]{0:E(4)})" --json
  xlashapes explain "f32[3,1000]" --tpu                 # the tiling TPU would use, its reason and its waste
"""


def register(sub: Any) -> None:
    """Add the shape subcommands to the top-level parser's subparsers."""
    explain_parser = sub.add_parser(
        "explain", help="what a shape and its layout mean: dims, tiling, padding, bytes, memory space",
        epilog=EXPLAIN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explain_parser.add_argument("shape", nargs="?", default=None,
                                help="XLA shape text, a pasted HLO instruction line, or - for stdin "
                                     "(none: the seed document's example)")
    explain_parser.add_argument("--json", action="store_true", help="print the report as JSON")
    explain_parser.add_argument("--tpu", action="store_true",
                                help="also show the TPU layout the advisor chooses, and why")
    explain_parser.set_defaults(run=run_explain)

    index_parser = sub.add_parser(
        "index", help="the linear offset (element, byte, bit) of a logical index",
        epilog=f"examples:\n  xlashapes index                       # no arguments: the example, {FIGURE_1} 2,3\n"
               '  xlashapes index "s4[8]{0:E(4)}" 5     # byte 2, bit 4\n'
               '  xlashapes index "f32[3,5]" -1,0       # negative entries count from the end: (2,0)',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    index_parser.add_argument("shape", nargs="?", default=None, help="XLA shape text, or - for stdin")
    index_parser.add_argument("index", nargs="?", default=None,
                              help="comma-separated index; negative entries count from the end as in NumPy")
    index_parser.add_argument("--json", action="store_true", help="print JSON")
    index_parser.set_defaults(run=run_index)

    offset_parser = sub.add_parser(
        "offset", help="the logical index stored at a linear offset, or 'padding'",
        epilog=f"examples:\n  xlashapes offset                      # no arguments: the example, {FIGURE_1} 17\n"
               f'  xlashapes offset "{FIGURE_1}" 5   # padding',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    offset_parser.add_argument("shape", nargs="?", default=None, help="XLA shape text, or - for stdin")
    offset_parser.add_argument("offset", nargs="?", default=None, help="linear offset in elements")
    offset_parser.add_argument("--json", action="store_true", help="print JSON")
    offset_parser.set_defaults(run=run_offset)

    draw_parser = sub.add_parser(
        "draw", help="draw a layout like the tiled-layout document's figures (.svg, or .png with Pillow)",
        epilog=f"examples:\n  xlashapes draw                                   # no arguments: {FIGURE_1}\n"
               '  xlashapes draw "f32[4,8]{1,0:T(2,4)(2,1)}" -o fig2.png\n'
               '  xlashapes draw "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}" -o tpu.png   # the first tiles',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    draw_parser.add_argument("shape", nargs="?", default=None, help="XLA shape text, or - for stdin")
    draw_parser.add_argument("-o", "--output", default="layout.svg", help="output .svg or .png (default: %(default)s)")
    draw_parser.add_argument("--max-rows", type=count_type(1, MAX_DRAWN), default=16,
                             help=f"rows drawn at most, 1 to {MAX_DRAWN} (default: %(default)s)")
    draw_parser.add_argument("--max-cols", type=count_type(1, MAX_DRAWN), default=32,
                             help=f"columns drawn at most, 1 to {MAX_DRAWN} (default: %(default)s)")
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
        epilog='examples:\n  xlashapes broadcast                                       # no arguments: the example\n'
               '  xlashapes broadcast "f32[2,3]" "f32[3]" --dims 1          # f32[2,3]{1,0}\n'
               '  xlashapes broadcast "f32[2,1]" "f32[1,3]"                 # the outer operation\n'
               '  xlashapes broadcast "f32[2,3]" "f32[3]" --dims 1 --hlo    # the explicit HLO XLA runs\n'
               '  xlashapes broadcast "f32[7,2,5]" "f32[7,2,6]"             # error, exit 2',
        formatter_class=argparse.RawDescriptionHelpFormatter)
    broadcast_parser.add_argument("lhs", nargs="?", default=None, help="left operand shape")
    broadcast_parser.add_argument("rhs", nargs="?", default=None, help="right operand shape")
    broadcast_parser.add_argument("--dims", default=None, help="broadcast_dimensions, comma-separated (default: none)")
    broadcast_parser.add_argument("--op", default="add", help="the element-wise op (default: %(default)s)")
    broadcast_parser.add_argument("--direction", default=None, help="comparison direction for --op compare (EQ, LT...)")
    broadcast_parser.add_argument("--hlo", action="store_true", help="print the explicit HLO module")
    broadcast_parser.add_argument("--json", action="store_true", help="print JSON")
    broadcast_parser.set_defaults(run=run_broadcast)
