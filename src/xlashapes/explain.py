"""The explain report: everything the model knows about a shape, as plain data and as lines for a person."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ._ints import checked_product
from .layout import layout_problem, memory_space_name
from .shape import UNBOUNDED_SIZE, Shape
from .text import dimension_text
from .tiling import tile_levels

if TYPE_CHECKING:
    from .hlo import HloInstruction


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
        "numpy_dtype": etype.numpy_dtype_name,
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
    levels = tile_levels(shape.dimensions, layout)  # the one tile walk (legacy padded_dimensions included)
    report["tiling"] = [{"tile": None if level.tile is None else list(level.tile), "dims": list(level.dims)}
                        for level in levels]
    logical = shape.element_count()
    allocated = checked_product(sizes, "allocated elements")
    tiled = checked_product(levels[-1].dims, "tiled elements")
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
        "padding_percent": percent(physical_bytes - logical_bytes, physical_bytes),
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


def percent(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 3) if whole else 0.0


def number(n: int) -> str:
    return f"{n:,}"


def explain_lines(report: dict[str, Any], indent: str = "") -> list[str]:
    """The explain report as lines of text for a person."""
    lines = [indent + report["shape"]]
    pad = indent + "  "
    if report.get("tuple"):
        for leaf in report["leaves"]:
            lines.append(f"{pad}element {tuple(leaf['index'])}:")
            lines.extend(explain_lines(leaf, pad + "  "))
        lines.append(f"{pad}total bytes      {number(report['total_bytes'])}")
        return lines
    if "dimensions" not in report:
        lines.append(f"{pad}{report['element_type']}: {number(report['bytes']['physical'])} bytes")
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
    lines.append(f"{pad}padding          tiles +{number(elements['tile_padding'])} elements, "
                 f"tail alignment +{number(elements['tail_padding'])}, legacy +{number(elements['legacy_padding'])}")
    lines.append(f"{pad}elements         {number(elements['logical'])} logical, "
                 f"{number(elements['physical'])} physical ({report['element_size_in_bits']} bits each)")
    size = report["bytes"]
    lines.append(f"{pad}bytes            {number(size['logical'])} logical, {number(size['physical'])} physical "
                 f"({size['padding_percent']}% padding)")
    if size["xla_array_size_first_tile_only"] != size["physical"]:
        lines.append(f"{pad}                 XLA's ShapeUtil::ArraySize (first tile only) says "
                     f"{number(size['xla_array_size_first_tile_only'])}")
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


INSTRUCTION_LINE = re.compile(r"\s*(?:ROOT\s+)?%?[A-Za-z_][\w.\-]*\s*=")
"""A pasted HLO instruction line starts ``[ROOT] [%]name =``; shape text never does."""


def is_instruction(text: str) -> bool:
    """True when ``text`` looks like an HLO instruction line rather than a shape.

    >>> is_instruction("%add.936 = f32[2]{0} add(%x, %y)"), is_instruction("f32[<=3]")
    (True, False)
    """
    return INSTRUCTION_LINE.match(text) is not None


def explain_instruction(instruction: HloInstruction) -> dict[str, Any]:
    """The explain report of an instruction's result shape and of every operand shape written in its text."""
    operands = []
    for name, shape in zip(instruction.operands, instruction.operand_shapes):
        operands.append({"name": name, "report": None if shape is None else explain(shape)})
    return {"instruction": instruction.name, "opcode": instruction.opcode, "result": explain(instruction.shape),
            "operands": operands}


def instruction_lines(report: dict[str, Any]) -> list[str]:
    """The instruction report as lines of text for a person."""
    lines = [f"instruction {report['instruction']} ({report['opcode']}), result:"]
    lines += explain_lines(report["result"], "  ")
    for number_, operand in enumerate(report["operands"]):
        if operand["report"] is None:
            lines.append(f"operand {number_}: %{operand['name']} (its shape is not written in the line)")
        else:
            lines.append(f"operand {number_}: %{operand['name']}")
            lines += explain_lines(operand["report"], "  ")
    return lines


def reports_of(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Every array report inside an explain or instruction report (tuple leaves, result, operands)."""
    if "instruction" in report:
        inner = [report["result"]] + [o["report"] for o in report["operands"] if o["report"] is not None]
        return [leaf for r in inner for leaf in reports_of(r)]
    if report.get("tuple"):
        return [leaf for r in report["leaves"] for leaf in reports_of(r)]
    return [report]
