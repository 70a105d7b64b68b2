"""HLO opcode names as XLA prints them, and the words the lexer never reads as plain names."""

from __future__ import annotations

from ..dtypes import TEXT_TYPE_NAMES
from ..text import KEYWORDS

__all__ = ["OPCODES", "RESERVED"]

_BASE_OPCODES = frozenset("""
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start all-reduce all-reduce-done
all-reduce-start all-to-all and asin asinh async-done async-start async-update atan atan2 atanh batch-norm-grad
batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call cbrt ceil cholesky clamp
count-leading-zeros collective-broadcast collective-permute collective-permute-done collective-permute-start
collective-reduce compare complex concatenate conditional constant convert convolution copy copy-done copy-start
cosine cosh custom-call divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf exponential
exponential-minus-one fft floor fusion gather get-dimension-size get-tuple-element imag infeed iota is-finite log
log-plus-one logistic map maximum minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id
popcnt power ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision reduce-scatter reduce-window
remainder replica-id reshape reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz
round-nearest-even rsqrt scaled-dot scan scatter select select-and-scatter send send-done set-dimension-size
shift-left shift-right-arithmetic shift-right-logical shuffle sign sine sinh slice sort sqrt stochastic-convert
subtract tan tanh topk transpose triangular-solve tuple while xor
""".split())

OPCODES = _BASE_OPCODES | frozenset(
    f"{base}-{suffix}" for base in _BASE_OPCODES for suffix in ("start", "update", "done")
)
"""Opcode names XLA prints, including the ``-start``/``-update``/``-done`` forms of asynchronous ops."""

# Words the lexer never reads as a plain name: bare instruction and operand names must avoid them.
RESERVED = frozenset(KEYWORDS) | TEXT_TYPE_NAMES | {"nan"}
"""Keywords, type names and ``nan``: a name spelled like one of these must be written with ``%``.

>>> "f32" in RESERVED, "add" in OPCODES, "all-reduce-start" in OPCODES
(True, True, True)
"""
