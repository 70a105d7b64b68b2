"""HLO that XLA's parser refuses: strict mode raises, non-strict mode lists each in problems() with line and column.

Every case is also put to XLA's parser, which must refuse it too.
"""

from __future__ import annotations

from typing import Any

import pytest

import xlashapes as xs
from xlashapes.hlo import parse_hlo_module


def module(body: str, header: str = "HloModule m") -> str:
    return f"{header}\nENTRY e {{\n{body}\n}}\n"


ADD = "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n"

# (name, text, line of the problem, words of its message)
REJECTED = [
    ("f64 overflow", module("  ROOT c = f64[] constant(1.8e308)"), 3, "out of range for f64"),
    ("f16 overflow", module("  ROOT c = f16[] constant(-65520)"), 3, "out of range for f16"),
    ("u4 overflow", module("  ROOT c = u4[] constant(16)"), 3, "out of range for u4"),
    ("u4 negative", module("  ROOT c = u4[] constant(-1)"), 3, "out of range for u4"),
    ("s8 in an array", module("  ROOT c = s8[2] constant({1, 128})"), 3, "out of range for s8"),
    ("f8 overflow", module("  ROOT c = f8e4m3fn[] constant(500)"), 3, "out of range for f8e4m3fn"),
    ("f32 overflow", module("  ROOT c = f32[] constant(1e39)"), 3, "out of range for f32"),
    ("wide NaN payload", module("  ROOT c = f32[] constant(nan(0x800000))"), 3, "does not fit the 23-bit mantissa"),
    ("zero NaN payload", module("  ROOT c = f32[] constant(nan(0x0))"), 3, "NaN payload"),
    ("too many elements", module("  ROOT c = f32[2] constant({1, 2, 3})"), 3, "needs 2 elements"),
    ("too few elements", module("  ROOT c = f32[2,2] constant({{1, 2}, {3}})"), 3, "needs 2 elements"),
    ("operand shape contradicts its definition",
     module("  p = f32[2,2] parameter(0)\n  c = f32[2,2] parameter(1)\n"
            "  ROOT a = f32[2,2] add(f32[2,2] p, f32[2,5] c)"),
     5, "is written f32[2,5] but is defined f32[2,2]"),
    ("api_version unspecified",
     module('  p = f32[2] parameter(0)\n  ROOT c = f32[2] custom-call(p), custom_call_target="x", '
            "api_version=API_VERSION_UNSPECIFIED"), 4, "API_VERSION_UNSPECIFIED"),
    ("global device ids without channel",
     ADD + module("  p = f32[2] parameter(0)\n  ROOT c = f32[2] all-reduce(p), replica_groups={}, "
                  "use_global_device_ids=true, to_apply=add").split("\n", 1)[1], 8, "needs a channel_id"),
    ("alias of a missing parameter",
     module("  ROOT p = f32[2] parameter(0)", "HloModule m, input_output_alias={ {0}: (5, {}, may-alias) }"), 1,
     "input_output_alias"),
    ("alias of a missing output",
     module("  ROOT p = f32[2] parameter(0)", "HloModule m, input_output_alias={ {1}: (0, {}, may-alias) }"), 1,
     "output index {1}"),
    ("alias of an unknown kind",
     module("  ROOT p = f32[2] parameter(0)", "HloModule m, input_output_alias={ {}: (0, {}, weird-alias) }"), 1,
     "unknown kind weird-alias"),
    ("malformed buffer donor", module("  ROOT p = f32[2] parameter(0)", "HloModule m, buffer_donor={ (0 {}) }"), 1,
     "attribute buffer_donor"),
    ("buffer donor list", module("  ROOT p = f32[2] parameter(0)", "HloModule m, buffer_donor={ 0, {} }"), 1,
     "attribute buffer_donor"),
    ("computation defined twice",
     "HloModule m\na {\n  ROOT x = f32[] parameter(0)\n}\na {\n  ROOT x = f32[] parameter(0)\n}\n"
     "ENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n", 5, "computation a is already defined on line 2"),
    ("tuple element type", module("  p = f32[2] parameter(0)\n  ROOT t = (s32[2]) tuple(p)"), 4,
     "is not the inferred (f32[2])"),
    ("get-tuple-element out of range",
     module("  p = (f32[2]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p), index=3"), 4,
     "index 3 is out of range for (f32[2])"),
    ("missing index", module("  p = (f32[2]) parameter(0)\n  ROOT g = f32[2] get-tuple-element(p)"), 4,
     "needs attribute index"),
    ("unknown module attribute", module("  ROOT p = f32[2] parameter(0)", "HloModule m, colour=blue"), 1,
     "the module has no attribute colour"),
    ("operand count of negate", module("  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p, p)"), 4,
     "negate takes 1 operand, not 2"),
    ("operand count of select", module("  p = pred[2] parameter(0)\n  ROOT n = pred[2] select(p, p)"), 4,
     "select takes 3 operands, not 2"),
    ("missing iota dimension", module("  ROOT i = s32[4] iota()"), 3, "needs attribute iota_dimension"),
    ("missing slice", module("  p = f32[2] parameter(0)\n  ROOT s = f32[1] slice(p)"), 4, "needs attribute slice"),
    ("attribute the opcode does not have", module("  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p), kind=kLoop"),
     4, "negate has no attribute kind"),
    ("duplicate parameter number",
     module("  p = f32[2] parameter(0)\n  ROOT q = f32[2] parameter(0)"), 4, "parameter number 0 appears twice"),
    ("unknown direction", module("  p = f32[2] parameter(0)\n  ROOT c = pred[2] compare(p, p), direction=XX"), 4,
     "direction=XX is not one of"),
    ("unknown fusion kind",
     module("  p = f32[2] parameter(0)\n  ROOT f = f32[2] fusion(p), kind=kWeird, calls=e"), 4,
     "kind=kWeird is not one of"),
    ("missing direction", module("  p = f32[2] parameter(0)\n  ROOT c = pred[2] compare(p, p)"), 4,
     "needs attribute direction"),
]


# XLA's parser reads these; XLA's verifier (HloVerifier, run before compiling) refuses them, as problems() does.
VERIFIER_ONLY = {"tuple element type", "get-tuple-element out of range"}


@pytest.mark.parametrize(("name", "text", "line", "message"), REJECTED, ids=[r[0] for r in REJECTED])
def test_rejected_forms(name: str, text: str, line: int, message: str, xla: Any) -> None:
    module_ = parse_hlo_module(text)
    problems = module_.problems()
    assert problems, name
    assert message in problems[0].message and problems[0].line == line, problems
    assert problems[0].column >= 1
    with pytest.raises(xs.ParseError) as error:
        parse_hlo_module(text, strict=True)
    assert message in error.value.reason and error.value.line == line
    verdict = xla.parse_module(text)
    assert verdict["ok"] == (name in VERIFIER_ONLY), (name, verdict)


def test_parameter_number_out_of_range_is_a_problem() -> None:
    """XLA's parser aborts the process on this one (a CHECK failure), so it is not asked."""
    text = module("  ROOT p = f32[2] parameter(1)")
    problems = parse_hlo_module(text).problems()
    assert [p.message for p in problems] == ["p: parameter number 1 is out of range: computation e has 1 parameter"]
    with pytest.raises(xs.ParseError, match="out of range"):
        parse_hlo_module(text, strict=True)


def test_literal_range_errors_point_at_the_value() -> None:
    text = module("  ROOT c = s8[3] constant({1, 2, 300})")
    problem = parse_hlo_module(text).problems()[0]
    assert (problem.line, problem.column) == (3, text.split("\n")[2].index("300") + 1)


@pytest.mark.parametrize("literal", ["f16[] constant(65504)", "f16[] constant(65519)", "f32[] constant(inf)",
                                     "f32[] constant(-inf)", "f32[] constant(nan(0x7fffff))", "u64[] constant(0)",
                                     "pred[] constant(2)", "u4[] constant(15)", "s4[] constant(-8)",
                                     "c64[] constant((1, -2.5))", "bf16[] constant(3e38)"])
def test_literals_in_range_are_accepted(literal: str, xla: Any) -> None:
    text = module(f"  ROOT c = {literal}")
    assert parse_hlo_module(text, strict=True).problems() == []
    assert xla.parse_module(text)["ok"]


def test_buffer_donor_repeats_are_accepted_like_xla(xla: Any) -> None:
    text = module("  ROOT p = f32[2] parameter(0)", "HloModule m, buffer_donor={ (0, {}), (0, {}) }")
    assert parse_hlo_module(text).problems() == []
    assert parse_hlo_module(text).attributes.typed("buffer_donor") == ((0, ()), (0, ()))
    assert xla.parse_module(text)["ok"]


def test_written_shapes_checked_against_inference_with_line_and_column() -> None:
    text = module("  p = f32[2] parameter(0)\n  q = s32[] parameter(1)\n  t = (f32[2], f32[]) tuple(p, q)\n"
                  "  ROOT n = f32[3] negate(p)")
    problems = parse_hlo_module(text).problems()
    assert [(p.line, p.column) for p in problems] == [(5, 3), (6, 3)]
    assert "is not the inferred (f32[2], s32[])" in problems[0].message
    assert "is not the inferred f32[2]" in problems[1].message


def test_lower_binary_with_a_bounded_dynamic_dimension_passes_the_verifier(xla: Any) -> None:
    """XLA infers s4[3,1,0,<=1] here; its verifier compares ignoring dynamic-ness (ShapeUtil::Compatible)."""
    text = xs.lower_binary("multiply", "s4[3,1,0,1]", "s4[1,0,<=1]", [1, 2, 3])
    assert parse_hlo_module(text, strict=True).problems() == []
    assert xla.parse_module(text)["ok"]
    inferred = parse_hlo_module(text.replace("ROOT result = s4[3,1,0,1]{3,2,1,0} multiply", "ROOT result = multiply"))
    assert xs.shape_text(inferred.entry.root.shape) == "s4[3,1,0,<=1]{3,2,1,0}"
