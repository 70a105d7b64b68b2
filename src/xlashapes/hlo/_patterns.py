"""The regular expressions of the fast path: whole canonical lines (every one matches in linear time).

Lines longer than ``MAX_FAST_LINE`` characters go to the careful parser, which is linear by construction.
"""

from __future__ import annotations

import re

MAX_FAST_LINE = 1 << 18
"""Lines longer than this are read by the careful parser (a bound on any regex backtracking)."""

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*+"  # possessive: what follows a name is never a name character
_STR = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_STR1 = r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'"


def _nested(open_: str, close: str, inner: str, depth: int) -> str:
    """A regex for a bracket group nested ``depth`` deep; ``inner`` matches an atom that is not a bracket."""
    plain = f"[^{open_}{close}\"\\n]*" if inner else f"[^{open_}{close}\\n]*"
    pattern = f"\\{open_}{plain}(?:{inner}{plain})*\\{close}" if inner else f"\\{open_}{plain}\\{close}"
    for _ in range(depth - 1):
        atoms = f"(?:{inner}|{pattern})" if inner else pattern
        pattern = f"\\{open_}{plain}(?:{atoms}{plain})*\\{close}"
    return pattern


_BRACE = _nested("{", "}", _STR, 6)  # raw {...}: balanced braces outside "strings"
_PARENS = _nested("(", ")", "", 3)  # (...) three deep: tuples of tiled arrays
_ARRAY = r"[a-z][a-z0-9]*+\[[^\]\n]*+\](?:\{[^{}\n]*+\})?"
_SHAPE = f"(?:{_ARRAY}|{_PARENS})"
_OPERANDS = r"[^()\n]*(?:" + _nested("(", ")", "", 2) + r"[^()\n]*)*"
_INTS = r"\d{1,18}(?:,\d{1,18})*"  # integers that fit int64 (longer ones are lexer errors)
_VALUE = "|".join((
    _STR,
    _BRACE,
    "%" + _NAME,
    r"[0-9bf?]{2,}_[0-9io?]{2,}->[0-9bf?]{2,}",  # dim labels
    r"-?\d+_-?\d+(?:_\d+)?(?:x-?\d+_-?\d+(?:_\d+)?)*",  # padding
    r"\d+(?:x\d+)+",  # 3x3
    r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d{1,18})",  # numbers
    rf"\[{_INTS}\]<=\[{_INTS}\](?:T\({_INTS}\))?",  # iota device lists
    rf"{_NAME}(?:\[{_STR1}=\d{{1,18}}(?:,{_STR1}=\d{{1,18}})*\](?: {_BRACE})?)?",  # words, mesh[...] {...}
))
_INLINE_KEY = r"(?:to_apply|calls|condition|body|select|scatter|true_computation|false_computation)=\{(?![%}])"
_TAIL = rf"(?:, (?!{_INLINE_KEY}){_NAME}=(?:{_VALUE}))*"  # a computation written inline: the careful parser
_NAMES = rf"(?:%?{_NAME}(?:, (?:/\*index=\d+\*/)?%?{_NAME})*)?"
_SEGMENTS = r"(?!__(?!xla_))[A-Za-z_][A-Za-z0-9_\-]*+(?:\.(?!-?0\d*[ ])[A-Za-z0-9_\-]*+)*+"
_INSTRUCTION_NAME = _SEGMENTS + r"(\.0)?"
"""A name XLA's uniquer keeps as written unless another name has its root and number: no ``__`` prefix (but
``__xla_``) and a last ``.`` part that is not a number written with a leading zero (``x.01``, ``x.-0``) but may be
``.0`` (its own group: ``x.0`` and ``x`` are the same name to the uniquer)."""
_COMPUTATION_NAME = r"(?!__(?!xla_))[A-Za-z_][A-Za-z0-9_\-]*+(?:\.(?!-?0\d+[ ]|-0[ ])[A-Za-z0-9_\-]*+)*+"
"""A computation name as above, its last part ``.0`` included (the reader looks for a ``c`` beside ``c.0``)."""
_HEAD = (rf"[ \t]*(ROOT[ \t]+)?(%?)({_INSTRUCTION_NAME}) = ({_SHAPE} [a-z][a-z0-9\-]*+)"
         rf"\((?:({_NAMES})|(\d{{1,18}})|({_OPERANDS}))\)")
INSTRUCTION = re.compile(rf"{_HEAD}({_TAIL})[ \t\r]*", re.ASCII)
INSTRUCTION_HEAD = re.compile(rf"{_HEAD}(.*)", re.ASCII)
"""INSTRUCTION with any tail: where TAIL then matches the rest, both give the same groups (same search order).

Groups: ROOT, %, name, a last ``.0`` of the name, shape and opcode (one group: ``f32[2]{0} add``), operand names,
a parameter number, other operands, the tail."""
TAIL = re.compile(rf"({_TAIL})[ \t\r]*", re.ASCII)
ATTRIBUTE = re.compile(f", ({_NAME})=({_VALUE})", re.ASCII)
INDEX_COMMENT = re.compile(r"/\*index=\d+\*/", re.ASCII)
SHAPED_OPERAND = re.compile(rf"(?:/\*index=\d+\*/)?(?:({_SHAPE}) )?(%?)({_NAME})(?:, |$)", re.ASCII)
SCALAR_LITERAL = re.compile(r"-?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d{1,18}|inf|nan)|true|false|\{\.\.\.\}",
                             re.ASCII)
COMPUTATION = re.compile(
    rf"(ENTRY[ \t]+)?(%?)({_COMPUTATION_NAME})(?: \(([^\n-]*(?:-(?!>)[^\n-]*)*)\) -> (.+))? \{{[ \t\r]*", re.ASCII)
PARAMETER_SPLIT = re.compile(rf"(?:^|, )({_NAME}): ", re.ASCII)
BLANKS = " \t\r"  # what the lexer skips on a line
PLAIN_OPERAND = re.compile(rf"(?:({_ARRAY}) )?(%?)({_NAME})[ \t\r\n]*([,)])[ \t\r\n]*", re.ASCII)
"""One operand of a list: an optional array shape, a name, then ``,`` or ``)`` (the careful parser's quick step)."""
SIMPLE_ATTRIBUTE = re.compile(
    rf",[ \t\r\n]*({_NAME})=([A-Za-z_][A-Za-z0-9_.\-]*|-?\d{{1,18}})(?=[ \t\r]*(?:[,)}}\n]|\Z))", re.ASCII)
"""``, key=word`` or ``, key=integer`` ending where the careful parser ends a value (its quick step)."""
