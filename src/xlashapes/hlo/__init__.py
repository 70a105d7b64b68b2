"""Reading HLO text: instructions, computations and whole modules as XLA dumps print them.

Modules of this package:

- :mod:`~xlashapes.hlo.model`: ``HloModule``, ``HloComputation``, ``HloInstruction`` (and the value types
  ``Problem``, ``Sharding``, ``StackFrameIndex`` they use)
- :mod:`~xlashapes.hlo.parser`: ``parse_hlo_module`` / ``parse_instruction`` (a fast regex path and a careful
  token path that give the same module)
- :mod:`~xlashapes.hlo.attributes`: ``Attributes`` and the typed readers of attribute values
- :mod:`~xlashapes.hlo.literals`: constant literals; :mod:`~xlashapes.hlo.printer`: printing;
  :mod:`~xlashapes.hlo.checks`: the verifier behind ``HloModule.problems()``

>>> m = parse_hlo_module("HloModule m\\nENTRY e {\\n  p = f32[2] parameter(0)\\n  ROOT n = f32[2] negate(p)\\n}")
>>> [(i.name, i.opcode, str(i.shape)) for i in m.entry.instructions]
[('p', 'parameter', 'f32[2]{0}'), ('n', 'negate', 'f32[2]{0}')]
"""

from __future__ import annotations

from .attributes import CALLED_COMPUTATION_KEYS, MAX_DEVICES, Attributes, Sharding
from .checks import REQUIRED_ATTRIBUTES, Problem
from .frames import StackFrameIndex
from .model import HloComputation, HloInstruction, HloModule
from .opcodes import OPCODES
from .parser import parse_hlo_module, parse_instruction
from .printer import computation_text, instruction_text, module_text

__all__ = [
    "CALLED_COMPUTATION_KEYS",
    "MAX_DEVICES",
    "OPCODES",
    "REQUIRED_ATTRIBUTES",
    "Attributes",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "Problem",
    "Sharding",
    "StackFrameIndex",
    "computation_text",
    "instruction_text",
    "module_text",
    "parse_hlo_module",
    "parse_instruction",
]
