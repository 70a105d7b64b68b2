"""XLA's element-wise binary opcodes: names and spellings, comparison directions, element types each takes.

The vocabulary shared by :mod:`xlashapes.broadcast` (shape inference and HLO lowering of an op) and
:mod:`xlashapes.ops` (the op's values); its public home is ``xlashapes.ops``.

>>> canonical_op("Shift_Left"), canonical_direction("compare", "lt")
('shift-left', 'LT')
"""

from __future__ import annotations

from .dtypes import ELEMENT_TYPES, PRED, ElementType
from .errors import ShapeError

BINARY_OPS: tuple[str, ...] = (
    "add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "and", "or", "xor",
    "shift-left", "shift-right-arithmetic", "shift-right-logical", "atan2", "compare",
)
"""XLA's element-wise binary opcodes, by their HLO names."""

COMPARISON_DIRECTIONS: tuple[str, ...] = ("EQ", "NE", "LT", "LE", "GT", "GE")
"""The ``direction=`` values ``compare`` takes."""

_ALIASES = {"sub": "subtract", "mul": "multiply", "div": "divide", "rem": "remainder", "pow": "power",
            "max": "maximum", "min": "minimum"}
SHIFTS = frozenset({"shift-left", "shift-right-arithmetic", "shift-right-logical"})
"""The three shift opcodes."""
_NO_PRED = frozenset({"subtract", "divide", "remainder", "power", "atan2"}) | SHIFTS
_NO_COMPLEX = frozenset({"remainder", "maximum", "minimum", "and", "or", "xor", "atan2"}) | SHIFTS
_PRED_OR_INTEGER = frozenset({"and", "or", "xor"}) | SHIFTS
_ORDERED = frozenset({"LT", "LE", "GT", "GE"})


def canonical_op(op: object) -> str:
    """The HLO name of binary op ``op``: ``"shift_left"`` → ``"shift-left"``, ``"Max"`` → ``"maximum"``.

    >>> canonical_op("Max")
    'maximum'
    """
    if not isinstance(op, str):
        raise ShapeError(f"the op must be a name such as 'add', got {op!r}")
    name = op.strip().lower().replace("_", "-")
    name = _ALIASES.get(name, name)
    if name not in BINARY_OPS:
        raise ShapeError(f"unknown binary op {op!r}; expected one of {', '.join(BINARY_OPS)}")
    return name


def canonical_direction(op: str, direction: object) -> str | None:
    """The comparison direction for ``op`` (``"lt"`` → ``"LT"``): required for compare, refused otherwise.

    >>> canonical_direction("compare", " le "), canonical_direction("add", None)
    ('LE', None)
    """
    if op != "compare":
        if direction is not None:
            raise ShapeError(f"a comparison direction ({direction!r}) was given for {op}, which is not compare")
        return None
    if direction is None:
        raise ShapeError(f"compare needs direction=, one of {', '.join(COMPARISON_DIRECTIONS)}")
    if not isinstance(direction, str) or direction.strip().upper() not in COMPARISON_DIRECTIONS:
        raise ShapeError(f"unknown comparison direction {direction!r}; expected one of "
                         f"{', '.join(COMPARISON_DIRECTIONS)}")
    return direction.strip().upper()


def result_element_type(op: str, etype: ElementType, direction: str | None) -> ElementType:
    """The element type of ``op`` on operands of ``etype`` (``pred`` for compare); ShapeError where XLA refuses.

    >>> result_element_type("compare", ELEMENT_TYPES["f32"], "LT").name
    'pred'
    """
    what = f"{op} does not accept {etype} operands"
    if etype.kind == PRED and op in _NO_PRED:
        raise ShapeError(f"{what}: XLA allows pred only in add, multiply, maximum, minimum, and, or, xor, compare")
    if op in _PRED_OR_INTEGER and not (etype.is_integral or etype.kind == PRED):
        raise ShapeError(f"{what}: it needs {'integers' if op in SHIFTS else 'pred or integers'}")
    if op == "atan2" and not etype.is_floating:
        raise ShapeError(f"{what}: it needs real floating-point values")
    if etype.is_complex and (op in _NO_COMPLEX or direction in _ORDERED):
        action = f"compare with direction {direction}" if op == "compare" else op
        raise ShapeError(f"{action} is not defined for complex {etype} operands (XLA:CPU has no such kernel)")
    return ELEMENT_TYPES["pred"] if op == "compare" else etype
