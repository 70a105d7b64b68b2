"""Printing HLO: instructions, computations and modules as XLA prints them (parse(print(m)) == m)."""

from __future__ import annotations

from ..shape import Shape
from ..text import shape_text
from ._source import escape
from ._views import ComputationView, InstructionView, ModuleView
from .attributes import Attributes
from .frames import StackFrameIndex
from .opcodes import RESERVED

__all__ = ["computation_text", "instruction_text", "module_text"]


def _operand_text(index: int, name: str, shape: Shape | None) -> str:
    """One operand as XLA prints it, with the ``/*index=5*/`` mark before every fifth."""
    mark = f"/*index={index}*/" if index and index % 5 == 0 else ""
    if shape is None:
        return f"{mark}%{name}"
    return f"{mark}{shape_text(shape, index_comments=True)} %{name}"


def _attributes_text(attributes: Attributes) -> str:
    """``, key=value`` for every attribute in order."""
    return "".join(f", {key}={value}" for key, value in attributes.pairs())


def instruction_text(instruction: InstructionView) -> str:
    """An instruction as one line of HLO text (without indentation).

    >>> from xlashapes.hlo import parse_instruction
    >>> instruction_text(parse_instruction("ROOT a = f32[2] add(x, y), metadata={op_name=\\"a\\"}"))
    'ROOT %a = f32[2]{0} add(%x, %y), metadata={op_name="a"}'
    """
    if instruction.parameter_number is not None:
        inner = str(instruction.parameter_number)
    elif instruction.literal_text is not None:
        inner = instruction.literal_text
    else:
        inner = ", ".join(_operand_text(i, name, shape) for i, (name, shape) in
                          enumerate(zip(instruction.operands, instruction.operand_shapes)))
    root = "ROOT " if instruction.is_root else ""
    shape = shape_text(instruction.shape, index_comments=True)
    return (f"{root}%{instruction.name} = {shape} {instruction.opcode}({inner})"
            f"{_attributes_text(instruction.attributes)}")


def computation_text(computation: ComputationView) -> str:
    """A computation: header line, indented instructions, closing brace.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> print(computation_text(parse_hlo_module("ENTRY e {\\n ROOT p = f32[] parameter(0)\\n}").entry), end="")
    ENTRY %e {
      ROOT %p = f32[] parameter(0)
    }
    """
    header = ("ENTRY " if computation.is_entry else "") + f"%{computation.name}"
    if computation.parameters is not None and computation.result_shape is not None:
        parameters = ", ".join(f"{name}: {shape_text(shape, index_comments=True)}"
                               for name, shape in computation.parameters)
        header += f" ({parameters}) -> {shape_text(computation.result_shape, index_comments=True)}"
    body = "".join(f"  {instruction_text(i)}\n" for i in computation.instructions)
    return f"{header} {{\n{body}}}{_attributes_text(computation.attributes)}\n"


def _stack_frame_text(index: StackFrameIndex) -> str:
    """The four stack frame tables as XLA prints them."""

    def fields(entry: dict[str, int]) -> str:
        return "{" + " ".join(f"{key}={value}" for key, value in entry.items()) + "}"

    sections = [
        ("FileNames", [escape(name) for name in index.file_names]),
        ("FunctionNames", [escape(name) for name in index.function_names]),
        ("FileLocations", [fields(entry) for entry in index.file_locations]),
        ("StackFrames", [fields(entry) for entry in index.stack_frames]),
    ]
    return "".join(title + "\n" + "".join(f"{i} {entry}\n" for i, entry in enumerate(entries, 1)) + "\n"
                   for title, entries in sections)


def module_text(module: ModuleView) -> str:
    """A whole module as HLO text that parses back to an equal module.

    >>> from xlashapes.hlo import parse_hlo_module
    >>> module_text(parse_hlo_module("HloModule m\\nENTRY e {\\n ROOT p = f32[] parameter(0)\\n}")).split("\\n")[0]
    'HloModule m'
    """
    name = module.name if module.name not in RESERVED else f"%{module.name}"
    parts = [f"HloModule {name}{_attributes_text(module.attributes)}\n\n"]
    if module.stack_frame_index is not None:
        parts.append(_stack_frame_text(module.stack_frame_index) + "\n")
    parts.extend(computation_text(c) + "\n" for c in module.computations)
    return "".join(parts)
