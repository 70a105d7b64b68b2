"""The minimal reproducer of every campaign finding (tools/fuzz/FINDINGS.md): which still reproduce here?

    python tools/fuzz/reproducers.py          # one line per finding: FIXED or what it still raises
"""

from __future__ import annotations

import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

import xlashapes as xs


def jax_layout(major_to_minor: object, tiling: object = None) -> object:
    return types.SimpleNamespace(major_to_minor=major_to_minor, tiling=tiling, sub_byte_element_size_in_bits=0)


def slow(call: Callable[[], object], seconds: float) -> Callable[[], object]:
    """``call``, raising TimeoutError when it takes more than ``seconds`` of CPU time."""

    def timed() -> object:
        start = time.process_time()
        try:
            call()
        except xs.XlaShapesError:
            pass
        took = time.process_time() - start
        if took > seconds:
            raise TimeoutError(f"{took:.2f} s")
        return None

    return timed


def wrong(check: Callable[[], bool], what: str) -> Callable[[], object]:
    def run() -> object:
        if not check():
            raise AssertionError(what)
        return None

    return run


def _ranks_message() -> bool:
    try:
        xs.broadcast_shape("f32[3,2]", "f32[3]")
    except xs.ShapeError as error:
        return "(f32[3,2] rank 2, f32[3] rank 1)" in str(error)
    return False


FINDINGS: list[tuple[str, str, Callable[[], object]]] = [
    ("F1", "core text.py: integer over 4,300 digits",
     lambda: xs.parse_shape("f32[" + "0" * 4300 + "1]")),
    ("F2", "core text.py: integer over 4,300 digits in a layout",
     lambda: xs.parse_layout("{" + "0" * 4301 + "}")),
    ("F3", "hlo hlo.py: integer over 4,300 digits in a constant",
     lambda: xs.parse_instruction("c = u32[] constant(" + "1" * 4301 + ")")),
    ("F4", "core text.py: parse_shape cache on an unhashable argument",
     lambda: xs.parse_shape(["f32[2]"])),  # type: ignore[arg-type]
    ("F5", "core tpu.py: tpu_layout of a parsed layout that is not a permutation",
     lambda: xs.tpu_layout(xs.parse_shape("f32[3,5]{1,4}"))),
    ("F6", "core tpu.py: tpu_advice through explain --tpu (negative minor_to_major entry)",
     lambda: xs.tpu_advice(xs.parse_shape("c128[2,2]{0,-21}"))),
    ("F7", "core layout.py: Layout(split_configs=2)",
     lambda: xs.Layout((), split_configs=2)),  # type: ignore[arg-type]
    ("F8", "core layout.py: Layout(dim_level_types=1)",
     lambda: xs.Layout((), dim_level_types=1)),  # type: ignore[arg-type]
    ("F9", "core layout.py: Layout(tiles=np.array([1, 0])) (truth value of an array)",
     lambda: xs.Layout((), tiles=np.array([1, 0]))),  # type: ignore[arg-type]
    ("F10", "core layout.py: Layout(split_configs=np.array([1, 0]))",
     lambda: xs.Layout((), split_configs=np.array([1, 0]))),  # type: ignore[arg-type]
    ("F11", "core layout.py: Layout(dim_level_types=np.array([1, 0]))",
     lambda: xs.Layout((), dim_level_types=np.array([1, 0]))),  # type: ignore[arg-type]
    ("F12", "core shape.py: Shape(dynamic_dimensions=1.5)",
     lambda: xs.Shape("u4", (), 1.5)),  # type: ignore[arg-type]
    ("F13", "core shape.py: make_shape(minor_to_major=1.5)",
     lambda: xs.make_shape("s8", [], 1.5)),  # type: ignore[arg-type]
    ("F14", "surface interop.py: from_jax_layout(tiling=1.5)",
     lambda: xs.from_jax_layout(jax_layout([], 1.5), "s4", [])),
    ("F15", "surface interop.py: from_jax_layout(dims=True)",
     lambda: xs.from_jax_layout(jax_layout([]), "u2", True)),
    ("F16", "surface interop.py: from_jax_layout(tiling=np.array([1, 0]))",
     lambda: xs.from_jax_layout(jax_layout([]), "s8", []) and
     xs.from_jax_layout(jax_layout([], np.array([1, 0])), "s8", [])),
    ("F17", "core indexing.py: linear_index with 10,000 tile levels (quadratic; 100,000: MemoryError at 3 GB)",
     slow(lambda: xs.linear_index("f32[2]{0:T(2)" + "(1)" * 10000 + "}", (0,)), 1.0)),
    ("F18", "core indexing.py: linear_index at rank 30,000 (quadratic)",
     slow(lambda: xs.linear_index("f32[" + "1," * 30000 + "1]", (0,) * 30001), 1.0)),
    ("F19", "core text.py: a 1 MB layout list takes > 1 s",
     slow(lambda: xs.parse_shape("f32[2]{" + "0," * 500000 + "0}"), 1.0)),
    ("F20", "hlo hlo.py: a 1 MB replica_groups list takes > 1 s in parse + problems()",
     slow(lambda: xs.parse_hlo_module("HloModule m\nENTRY e {\n  p = f32[2]{0} parameter(0)\n  ROOT a = f32[2]{0} "
                                      "all-reduce(p), replica_groups={" + "{0,1}," * 170000 + "{0,1}}, to_apply=e\n}\n")
          .problems(), 1.0)),
    ("F21", "broadcast broadcast.py: the rank message lists (smaller, larger), not (lhs, rhs)",
     wrong(_ranks_message, "f32[3,2] + f32[3]: message does not name each rank beside its operand")),
    ("F22", "core text.py: M(-16) parses but is not printed (the round trip changes the shape)",
     wrong(lambda: xs.parse_shape(str(xs.parse_shape("f32[2]{0:M(-16)}"))) == xs.parse_shape("f32[2]{0:M(-16)}"),
           "f32[2]{0:M(-16)} prints as f32[2]{0}, which parses to a different Shape")),
    ("F23", "core text.py: a run of 64,000 '?' in an HLO attribute value (quadratic lexer)",
     slow(lambda: xs.parse_instruction("a = f32[2]{0} add(x, y), foo=" + "?" * 64000), 1.0)),
    ("F24", "hlo hlo.py: a 32 KB operand name with a ':' (the fast path's operand regex backtracks)",
     slow(lambda: xs.parse_hlo_module("HloModule m\nENTRY e {\n  ROOT a = f32[2]{0} add(" + "m_1a" * 8000
                                      + ":)\n}\n"), 1.0)),
    ("F27", "memory memory/_dataflow.py: get-tuple-element index=0x (a malformed index read with int())",
     lambda: xs.memory_report(xs.parse_hlo_module("HloModule m\nENTRY e {\n  p = (f32[2], f32[3]) parameter(0)\n"
                                                  "  ROOT g = f32[2] get-tuple-element(p), index=0x\n}\n"))),
]


def main() -> None:
    still = 0
    for key, what, call in FINDINGS:
        try:
            call()
            outcome = "FIXED"
        except xs.XlaShapesError:
            outcome = "FIXED (now a ParseError/ShapeError)"
        except Exception as error:
            outcome = f"{type(error).__name__}: {str(error)[:90]}"
            still += 1
        print(f"{key:<4} {what:<100} {outcome}")
    print(f"{still} of {len(FINDINGS)} still reproduce")


if __name__ == "__main__":
    main()
