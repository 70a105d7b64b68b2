"""XLA's names: the sanitizer and the module-wide uniquer its HloModule runs on every name the parser reads.

XLA adds the parsed computations to the module in the order they were completed (a computation written inline
before the one that holds it) and passes every computation name, then every instruction name, through a
``NameUniquer`` (``xla/service/name_uniquer.cc``): the name is sanitized, a numeric suffix ``.N`` is split off and
the pair (root, N) is taken if free, else the smallest free number counting up from the last one handed out for that
root. So ``x`` defined in two computations becomes ``x`` and ``x.1``, and ``x.01`` becomes ``x.1``. Names XLA's own
printer wrote never change; :func:`apply_xla_names` finds that out cheaply and only then renames.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from ..dtypes import TEXT_TYPE_NAMES
from .attributes import CALLED_COMPUTATION_KEYS, Attributes
from .model import HloComputation, HloInstruction

__all__ = ["NameUniquer", "apply_xla_names", "illegal_instruction_name", "odd_name", "sanitized_name"]

_DISALLOWED = re.compile(r"[^A-Za-z0-9_.\-]")


def sanitized_name(name: str) -> str:
    """The name XLA's sanitizer makes of ``name``.

    >>> sanitized_name("__c"), sanitized_name("f32"), sanitized_name("tuple"), sanitized_name("9a b")
    ('a_c', 'f32_', 'tuple', '_a_b')
    """
    if not name:
        return ""
    result = ("_" if not (name[0].isascii() and (name[0].isalpha() or name[0] == "_")) else name[0])
    result += _DISALLOWED.sub("_", name[1:])
    if result in TEXT_TYPE_NAMES:
        result += "_"
    if result.startswith("__") and not result.startswith("__xla_"):
        result = "a" + result[1:]
    return result


def illegal_instruction_name(name: str) -> bool:
    """Whether XLA's parser refuses ``name`` for an instruction (its sanitizer would change it).

    >>> illegal_instruction_name("pred"), illegal_instruction_name("__x"), illegal_instruction_name("__xla_x")
    (True, True, False)
    """
    return sanitized_name(name) != name


def odd_name(name: str) -> bool:
    """Whether the uniquer changes ``name`` (as the lexer reads names) even when no other name has its root.

    That is a last ``.`` part that is a number with a leading zero (``x.01`` is ``x.1``, ``x.-0`` is ``x.0``), a
    ``__`` prefix (``__c`` is ``a_c``) or a type name (``f32`` is ``f32_``).

    >>> odd_name("x.01"), odd_name("x.0"), odd_name("x.0.c1"), odd_name("__c"), odd_name("f32"), odd_name("x.-1")
    (True, False, False, True, True, False)
    """
    return _ODD_SUFFIX.search(name) is not None or sanitized_name(name) != name


_ODD_SUFFIX = re.compile(r"\.(?:-?0[0-9]+|-0)\Z")


class NameUniquer:
    """XLA's NameUniquer with ``.`` as the separator.

    >>> u = NameUniquer()
    >>> [u.unique(n) for n in ("x", "x", "x.1", "x.01", "y.0", "y")]
    ['x', 'x.1', 'x.2', 'x.3', 'y.0', 'y.1']
    """

    __slots__ = ("_roots",)

    def __init__(self) -> None:
        self._roots: dict[str, tuple[set[int], list[int]]] = {}

    def unique(self, name: str) -> str:
        """A unique name for ``name`` (itself when free)."""
        root = sanitized_name(name or "name")
        number = 0
        numbered = False
        dot = root.rfind(".")
        if 0 < dot < len(root) - 1:
            suffix = _int64(root[dot + 1:])
            if suffix is not None:
                numbered = True
                number = suffix
                root = root[:dot]
        used, following = self._roots.setdefault(root, (set(), [0]))
        if number in used:
            while following[0] in used:
                following[0] += 1
            number = following[0]
            following[0] += 1
        used.add(number)
        if number == 0:
            return f"{root}.0" if numbered else root
        return f"{root}.{number}"


def _int64(text: str) -> int | None:
    """``text`` as absl::SimpleAtoi reads it into an int64 (None when it does not)."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isdigit() or not body.isascii():
        return None
    value = int(text)
    return value if -(1 << 63) <= value < (1 << 63) else None


def apply_xla_names(computations: list[HloComputation]) -> None:
    """Rename computations and instructions as XLA's module does when the parser adds them (in completion order).

    The parser calls this only when a name was read twice or may change otherwise (``x.0`` beside ``x``, ``x.01``).
    """
    computation_names = NameUniquer()
    instruction_names = NameUniquer()
    called: dict[str, str] = {}
    repeated = _repeated(c.name for c in computations)
    for computation in computations:
        new = computation_names.unique(computation.name)
        if new != computation.name and computation.name not in repeated:  # a computation defined twice stays
            called[computation.name] = new
            computation.name = new
        _rename_instructions(computation, instruction_names)
    if called:
        for computation in computations:
            for instruction in computation.instructions:
                if instruction.parsed_attributes is not None or any(old in instruction.tail for old in called):
                    _rewrite(instruction, CALLED_COMPUTATION_KEYS, called)


def _repeated(names: Iterable[str]) -> set[str]:
    """The names that occur more than once."""
    return {name for name, count in Counter(names).items() if count > 1}


def _rename_instructions(computation: HloComputation, uniquer: NameUniquer) -> None:
    """Rename one computation's instructions and every reference to them inside it."""
    renamed: dict[str, str] = {}
    repeated = _repeated(i.name for i in computation.instructions)
    for instruction in computation.instructions:
        new = uniquer.unique(instruction.name)
        if new != instruction.name and instruction.name not in repeated:
            renamed.setdefault(instruction.name, new)  # a name repeated inside one computation stays (a problem)
            instruction.name = new
    if not renamed:
        return
    for instruction in computation.instructions:
        if any(o in renamed for o in instruction.operands):
            instruction.operands = [renamed.get(o, o) for o in instruction.operands]
        if "control-predecessors" in instruction.tail or instruction.parsed_attributes is not None:
            _rewrite(instruction, ("control-predecessors",), renamed)
    if computation.parameters is not None:
        computation.parameters = [(renamed.get(n, n), s) for n, s in computation.parameters]


def _rewrite(instruction: HloInstruction, keys: Iterable[str], renamed: dict[str, str]) -> None:
    """Rename the names listed in attributes ``keys`` of ``instruction``."""
    attributes = instruction.attributes
    wanted = set(keys)
    pairs = []
    typed: dict[str, Any] = {}
    for key, raw in attributes.pairs():
        if key in wanted:
            value = attributes.typed(key)
            names = value if isinstance(value, tuple) else (value,)
            if any(n in renamed for n in names):
                names = tuple(renamed.get(n, n) for n in names)
                listed = ", ".join(f"%{n}" for n in names)
                raw = f"{{{listed}}}" if isinstance(value, tuple) else listed
                typed[key] = names if isinstance(value, tuple) else names[0]
        pairs.append((key, raw))
    if typed:  # the new values are known: they are not read again from the text
        instruction.parsed_attributes = Attributes(pairs, attributes.positions(), attributes.source, typed)
