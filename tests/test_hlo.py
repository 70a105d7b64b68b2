"""HLO text: instructions and modules, checked against XLA's own parser on real dumps, round trips and fuzzing."""

from __future__ import annotations

import contextlib
import random
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from xlashapes.hlo import (
    HloModule,
    Sharding,
    instruction_text,
    parse_hlo_module,
    parse_instruction,
)

CORPUS = Path(__file__).parent / "corpus"
DUMPS = sorted(p for p in CORPUS.glob("*.hlo") if ".large" not in p.name)
OPTIMIZED = [p for p in DUMPS if p.name.endswith(".opt.hlo")]


def dump_id(path: Path) -> str:
    return path.name.removesuffix(".hlo")


@pytest.fixture(scope="module")
def hlo() -> Any:
    """jaxlib's bindings of XLA's HLO parser (skipped without jax)."""
    return pytest.importorskip("jaxlib._hlo")


def both_ways(text: str) -> HloModule:
    """Parse with the fast path and with the careful parser alone; the two must agree."""
    fast = parse_hlo_module(text)
    careful = parse_hlo_module(text, fast=False)
    assert fast == careful
    return fast


# ----------------------------------------------------------------------------------------------------
# The seed instructions
# ----------------------------------------------------------------------------------------------------


def test_seed_add_instruction() -> None:
    ins = parse_instruction(
        "add.936 = bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)} add(exponential.183, broadcast.3115)")
    assert (ins.name, ins.opcode, ins.operands, ins.attributes) == (
        "add.936", "add", ["exponential.183", "broadcast.3115"], {})
    assert ins.shape == xs.parse_shape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}")
    assert ins.operand_shapes == [None, None]
    assert not ins.is_root


def test_seed_fusion_with_operand_shape() -> None:
    text = ("%fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)} "
            "%fusion.32), kind=kCustom, calls=%all-reduce-scatter.3")
    ins = parse_instruction(text)
    assert (ins.name, ins.opcode, ins.operands) == ("fusion.3", "fusion", ["fusion.32"])
    assert str(ins.shape) == "bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}"
    assert [str(s) for s in ins.operand_shapes] == ["bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)}"]
    assert dict(ins.attributes) == {"kind": "kCustom", "calls": "%all-reduce-scatter.3"}
    assert ins.attributes.typed("kind") == "kCustom"
    assert ins.called_computations == ["all-reduce-scatter.3"]
    assert instruction_text(ins) == text
    assert parse_instruction(str(ins)) == ins


def test_seed_instructions_inside_a_module_take_the_fast_path() -> None:
    module = both_ways(
        "HloModule m\n\n%all-reduce-scatter.3 (p: bf16[32,32,8192]) -> bf16[32,32,4096] {\n"
        "  %p = bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)} parameter(0)\n"
        "  ROOT %s = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} slice(%p), slice={[0:32], [0:32], [0:4096]}\n}\n\n"
        "ENTRY %e (fusion.32: bf16[32,32,8192]) -> bf16[32,32,4096] {\n"
        "  %fusion.32 = bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)} parameter(0)\n"
        "  ROOT %fusion.3 = bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)} fusion(bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)} "
        "%fusion.32), kind=kCustom, calls=%all-reduce-scatter.3\n}\n")
    assert module.entry.root.operand_shapes[0] == module.entry["fusion.32"].shape
    assert module.problems() == []


# ----------------------------------------------------------------------------------------------------
# Modules
# ----------------------------------------------------------------------------------------------------

SMALL = """HloModule small, is_scheduled=true, entry_computation_layout={(f32[4]{0}, s32[])->(f32[4]{0}, f32[])}

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %sum = f32[] add(%x, %y)
}

%fused (p0: f32[4]) -> f32[4] {
  %p0 = f32[4]{0} parameter(0)
  %c = f32[] constant(2)
  %b = f32[4]{0} broadcast(%c), dimensions={}
  ROOT %m = f32[4]{0} multiply(%p0, %b)
}

ENTRY %main (a: f32[4], i: s32[]) -> (f32[4], f32[]) {
  %a = f32[4]{0} parameter(0), sharding={replicated}, metadata={op_name="a" source_file="x.py" source_line=3}
  %i = s32[] parameter(1)
  %f = f32[4]{0} fusion(%a), kind=kLoop, calls=%fused, backend_config={"outer_dimension_partitions":[]}
  %zero = f32[] constant(0)
  %r = f32[] reduce(%f, %zero), dimensions={0}, to_apply=%add, control-predecessors={%zero}
  ROOT %t = (f32[4]{0}, f32[]) tuple(%f, %r)
}
"""


def test_module_structure() -> None:
    module = both_ways(SMALL)
    assert module.name == "small"
    assert [c.name for c in module.computations] == ["add", "fused", "main"]
    entry = module.entry
    assert entry.name == "main" and entry.is_entry
    assert entry.root.name == "t" and entry.root.is_root
    assert [i.name for i in entry.instructions] == ["a", "i", "f", "zero", "r", "t"]
    assert [(n, str(s)) for n, s in entry.parameters or []] == [("a", "f32[4]{0}"), ("i", "s32[]")]
    assert str(entry.result_shape) == "(f32[4]{0}, f32[])"
    assert [i.name for i in entry.parameter_instructions] == ["a", "i"]
    assert entry["r"].operands == ["f", "zero"]
    assert "r" in entry and "nope" not in entry
    assert module.computation("fused").root.opcode == "multiply"
    assert len(list(module.instructions())) == 13
    assert module.problems() == []


def test_module_header_attributes() -> None:
    module = both_ways(SMALL)
    assert module.is_scheduled
    assert list(module.attributes) == ["is_scheduled", "entry_computation_layout"]
    parameters, result = module.entry_computation_layout or ((), None)
    assert [str(s) for s in parameters] == ["f32[4]{0}", "s32[]"]
    assert str(result) == "(f32[4]{0}, f32[])"
    assert module.schedule == {"add": ["x", "y", "sum"], "main": ["a", "i", "f", "zero", "r", "t"]}


def test_typed_attributes() -> None:
    entry = both_ways(SMALL).entry
    assert entry["a"].sharding == Sharding("replicated")
    assert entry["a"].metadata == {"op_name": "a", "source_file": "x.py", "source_line": 3}
    assert entry["f"].backend_config == {"outer_dimension_partitions": []}
    assert entry["f"].attributes.typed("kind") == "kLoop"
    assert entry["r"].attributes.typed("dimensions") == (0,)
    assert entry["r"].attributes.typed("to_apply") == "add"
    assert entry["r"].control_predecessors == ("zero",)
    assert entry["r"].called_computations == ["add"]
    assert entry["zero"].literal == np.float32(0) and entry["zero"].literal.dtype == np.float32
    assert entry["i"].parameter_number == 1
    assert entry["r"].attributes.get_typed("missing", 7) == 7


def test_attributes_keep_raw_text_in_order() -> None:
    ins = parse_instruction(
        'x = f32[2]{0} custom-call(a), custom_call_target="foo", backend_config={uplo = 76 : ui8}, '
        "frontend_attributes={a=\"1\",b={x = #sdy.mesh<[]>}}, api_version=API_VERSION_TYPED_FFI, zz={weird [ }")
    assert ins.attributes.pairs() == [
        ("custom_call_target", '"foo"'), ("backend_config", "{uplo = 76 : ui8}"),
        ("frontend_attributes", '{a="1",b={x = #sdy.mesh<[]>}}'), ("api_version", "API_VERSION_TYPED_FFI"),
        ("zz", "{weird [ }")]
    assert ins.attributes.typed("custom_call_target") == "foo"
    assert ins.backend_config == "{uplo = 76 : ui8}"  # not JSON: kept as text
    assert ins.attributes.typed("frontend_attributes") == {"a": "1", "b": "{x = #sdy.mesh<[]>}"}
    assert ins.attributes.typed("zz") == "{weird [ }"  # unknown key that does not read: its raw text


@pytest.mark.parametrize(("attribute", "typed"), [
    ("slice={[0:2], [1:5:2]}", ((0, 2, 1), (1, 5, 2))),
    ("padding=0_1x2_3_1", ((0, 1, 0), (2, 3, 1))),
    ("window={size=3x3 stride=2x1 pad=0_1x1_1 rhs_dilate=1x2}",
     {"size": (3, 3), "stride": (2, 1), "pad": ((0, 1), (1, 1)), "rhs_dilate": (1, 2)}),
    ("dim_labels=b01f_01io->b01f", "b01f_01io->b01f"),
    ("replica_groups={{0,2},{1,3}}", ((0, 2), (1, 3))),
    ("replica_groups={}", ()),
    ("replica_groups=[2,2]<=[4]", ((0, 1), (2, 3))),
    ("replica_groups=[2,2]<=[2,2]T(1,0)", ((0, 2), (1, 3))),
    ("replica_groups=mesh['x'=4,'y'=2] {'y'}", ((0, 1), (2, 3), (4, 5), (6, 7))),
    ("replica_groups=mesh['x'=4,'y'=2] {'x'}", ((0, 2, 4, 6), (1, 3, 5, 7))),
    ("source_target_pairs={{0,1},{1,0}}", ((0, 1), (1, 0))),
    ("branch_computations={%a, %b}", ("a", "b")),
    ("calls={%a, %b}", ("a", "b")),
    ("output_to_operand_aliasing={{0}: (0, {}), {1}: (2, {0,1})}", (((0,), 0, ()), ((1,), 2, (0, 1)))),
    ("operand_layout_constraints={f32[4,4]{0,1}, s32[]}", (xs.parse_shape("f32[4,4]{0,1}"), xs.parse_shape("s32[]"))),
    ("frontend_attributes={_xla_compute_type=\"host\"}", {"_xla_compute_type": "host"}),
    ("backend_config=\"{\\\"a\\\":1}\"", {"a": 1}),
    ("index=5", 5),
    ("use_global_device_ids=true", True),
    ("channel_id=3", 3),
    ("direction=LT", "LT"),
    ("input_output_alias={ {0}: (0, {}, may-alias), {1}: (1, {2}, must-alias) }",
     (((0,), 0, (), "may-alias"), ((1,), 1, (2,), "must-alias"))),
    ("allow_spmd_sharding_propagation_to_output={true,false}", (True, False)),
    ("metadata={op_type=\"dot\" op_name=\"a/b\" source_line=4 profile_type={1,2}}",
     {"op_type": "dot", "op_name": "a/b", "source_line": 4, "profile_type": (1, 2)}),
    ("entry_computation_layout={()->f32[]}", ((), xs.parse_shape("f32[]"))),
    ("operand_precision={highest,default}", ("highest", "default")),
    ("unknown_thing={1,{2,3},\"s\"}", (1, (2, 3), "s")),
    ("unknown_word=kSomething", "kSomething"),
])
def test_typed_values(attribute: str, typed: Any) -> None:
    ins = parse_instruction(f"x = f32[] foo(y), {attribute}")
    key = attribute.split("=", 1)[0]
    assert ins.attributes.typed(key) == typed


@pytest.mark.parametrize(("attribute", "at", "message"), [
    ("dimensions={0,x}", "x", "expected an integer"),
    ("dimensions={0,1", "{", "expected an instruction or }"),
    ("slice={[0:1:2:3]}", "[0:", "expected [start:limit]"),
    ("window={size=3x3 pad=0_0_0x1_1_1}", "0_0_0", "expected 2 numbers per dimension"),
    ("sharding={devices=[2,2]0,1,2}", "[2,2]", "3 devices do not fill [2,2]"),
    ("sharding={devices=[2,2]<=[8]}", "[2,2]", "does not fit"),
    ("replica_groups=[2,3]<=[4]", "[2,3]", "does not hold 4 devices"),
    ("to_apply=%a %b", "%b", "unexpected text in attribute to_apply"),
])
def test_typed_values_that_do_not_read(attribute: str, at: str, message: str) -> None:
    text = f"HloModule m\nENTRY e {{\n  ROOT x = f32[] foo(), {attribute}\n}}\n"
    key = attribute.split("=", 1)[0]
    try:
        ins = parse_hlo_module(text).entry.root
    except xs.ParseError as error:  # some do not even pass the syntax check
        assert message in error.reason
        return
    with pytest.raises(xs.ParseError) as error:
        ins.attributes.typed(key)
    assert message in error.value.reason
    assert (error.value.line, error.value.column) == (3, text.split("\n")[2].rindex(at) + 1)


@pytest.mark.parametrize(("text", "expected"), [
    ("{devices=[4,2]<=[8]}", Sharding("tiled", (4, 2), tuple(range(8)))),
    ("{devices=[2,2]0,2,1,3}", Sharding("tiled", (2, 2), (0, 2, 1, 3))),
    ("{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}",
     Sharding("tiled", (1, 2, 4), (0, 2, 4, 6, 1, 3, 5, 7), last_tile_dim_replicate=True)),
    ("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", Sharding("tiled", (2, 1, 2), (0, 1, 2, 3),
                                                               last_tile_dims=("manual",))),
    ("{maximal device=3}", Sharding("maximal", device=3)),
    ("{manual}", Sharding("manual")),
    ("{{replicated}, {maximal device=0}}", Sharding("tuple", tuple_shardings=(
        Sharding("replicated"), Sharding("maximal", device=0)))),
    ("{}", Sharding("tuple")),
])
def test_sharding(text: str, expected: Sharding) -> None:
    assert parse_instruction(f"x = f32[] foo(), sharding={text}").sharding == expected


def test_stack_frame_tables() -> None:
    text = (
        'HloModule m\n\nFileNames\n1 "a.py"\n2 "b\\"q\\".py"\n\nFunctionNames\n1 "f"\n2 "<module>"\n\n'
        "FileLocations\n1 {file_name_id=1 function_name_id=1 line=5 end_line=5 column=1 end_column=9}\n"
        "2 {file_name_id=2 function_name_id=2 line=9 end_line=9 column=0 end_column=4}\n\n"
        "StackFrames\n1 {file_location_id=2 parent_frame_id=1}\n2 {file_location_id=1 parent_frame_id=2}\n\n"
        'ENTRY e {\n  ROOT p = f32[] parameter(0), metadata={op_name="p" stack_frame_id=2}\n}\n')
    module = both_ways(text)
    index = module.stack_frame_index
    assert index is not None
    assert index.file_names == ["a.py", 'b"q".py']
    assert index.function_names == ["f", "<module>"]
    assert index.stack_frames[1] == {"file_location_id": 1, "parent_frame_id": 2}
    frame_id = module.entry.root.metadata["stack_frame_id"]
    assert [(f["file"], f["function"], f["line"]) for f in index.frame(frame_id)] == [
        ("a.py", "f", 5), ('b"q".py', "<module>", 9)]
    assert parse_hlo_module(str(module)) == module


def test_stack_frame_tables_may_also_trail() -> None:
    tables = 'FileNames\n1 "a.py"\nFunctionNames\n1 "f"\nFileLocations\n' \
             "1 {file_name_id=1 function_name_id=1 line=1 end_line=1 column=0 end_column=1}\n" \
             "StackFrames\n1 {file_location_id=1 parent_frame_id=1}\n"
    body = "ENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n"
    leading = both_ways(f"HloModule m\n{tables}{body}")
    assert leading.stack_frame_index is not None
    assert both_ways(f"HloModule m\n{body}{tables}") == leading
    with pytest.raises(xs.ParseError, match="appear twice"):
        parse_hlo_module(f"HloModule m\n{tables}{body}{tables}")


def test_tuples_with_index_comments_and_many_operands() -> None:
    shapes = ", ".join(("/*index=5*/" if i == 5 else "") + "f32[]" for i in range(7))
    names = ", ".join(("/*index=5*/" if i == 5 else "") + f"%p{i}" for i in range(7))
    params = "\n".join(f"  %p{i} = f32[] parameter({i})" for i in range(7))
    text = f"HloModule m\n\nENTRY %e {{\n{params}\n  ROOT %t = ({shapes}) tuple({names})\n}}\n"
    module = both_ways(text)
    root = module.entry.root
    assert root.operands == [f"p{i}" for i in range(7)]
    assert len(root.shape.tuple_shapes) == 7
    assert f"  ROOT %t = ({shapes}) tuple({names})\n" in str(module)
    gte = parse_instruction("%g = f32[] get-tuple-element((f32[], /*index=1*/s32[]) %t), index=1")
    assert gte.attributes.typed("index") == 1 and gte.operand_shapes[0] is not None


MULTILINE_CONSTANT = """HloModule m

ENTRY %e () -> f32[2,3] {
  %c = f32[2,3]{1,0} constant({ { 1, 2.5, -3 },
    { 4, inf, -inf } })
  %u = u64[2]{0} constant({18446744073709551615, 0})
  %z = c64[2]{0} constant({(1, 2), (3, -4)})
  %b = pred[3]{0} constant({true, false, 1})
  %s = s4[2]{0:E(4)} constant({-8, 7})
  %big = f32[100]{0} constant({...})
  %t = (f32[], s32[2]{0}) constant((1.5, {3, 4}))
  ROOT %r = f32[2,3]{1,0} copy(%c)
}
"""


def test_constants_with_literals() -> None:
    entry = both_ways(MULTILINE_CONSTANT).entry
    np.testing.assert_array_equal(entry["c"].literal, np.array([[1, 2.5, -3], [4, np.inf, -np.inf]], np.float32))
    assert entry["c"].literal_text == "{ { 1, 2.5, -3 },\n    { 4, inf, -inf } }"
    assert entry["u"].literal.dtype == np.uint64 and int(entry["u"].literal[0]) == 2**64 - 1
    np.testing.assert_array_equal(entry["z"].literal, np.array([1 + 2j, 3 - 4j], np.complex64))
    assert entry["b"].literal.tolist() == [True, False, True]
    assert entry["s"].literal.tolist() == [-8, 7]
    assert entry["big"].literal is None
    scalar, vector = entry["t"].literal
    assert scalar == 1.5 and vector.tolist() == [3, 4]
    assert entry["c"].line == 4 and entry["u"].line == 6


@pytest.mark.parametrize(("literal", "message"), [
    ("f32[2,2]{1,0} constant({1, 2})", "expected '{' for dimension 1"),
    ("f32[2]{0} constant({1, 2, 3})", "needs 2 elements"),
    ("s8[1]{0} constant({300})", "out of range"),
    ("f32[] constant(true)", "expected a number"),
    ("pred[] constant(1.5)", "expected an integer"),
])
def test_bad_literals_are_problems(literal: str, message: str) -> None:
    module = parse_hlo_module(f"HloModule m\nENTRY e {{\n  ROOT c = {literal}\n}}\n")
    problems = module.problems()
    assert len(problems) == 1 and message in problems[0].message and problems[0].line == 3
    with pytest.raises(xs.ParseError):
        _ = module.entry.root.literal


ASYNC = """HloModule async_ops, is_scheduled=true

%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}

%wrapped (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  ROOT %cc = f32[4]{0} custom-call(%p), custom_call_target="foo"
}

ENTRY %e (a: f32[4]) -> f32[4] {
  %a = f32[4]{0} parameter(0)
  %start = ((f32[4]{0}), f32[4]{0}, s32[]) async-start(%a), calls=%wrapped
  %done = f32[4]{0} async-done(%start)
  %cs = (f32[4]{0}, f32[4]{0}, u32[]) copy-start(%done), cross_program_prefetch_index=0
  %cd = f32[4]{0} copy-done(%cs)
  %ars = f32[4]{0} all-reduce-start(%cd), channel_id=1, replica_groups=[1,2]<=[2], to_apply=%add
  %ard = f32[4]{0} all-reduce-done(%ars)
  %ccs = ((f32[4]{0}), f32[4]{0}, s32[]) custom-call-start(%ard), custom_call_target="foo"
  ROOT %ccd = f32[4]{0} custom-call-done(%ccs)
}
"""


def test_async_operations(hlo: Any) -> None:
    module = both_ways(ASYNC)
    assert [i.opcode for i in module.entry.instructions][1:] == [
        "async-start", "async-done", "copy-start", "copy-done", "all-reduce-start", "all-reduce-done",
        "custom-call-start", "custom-call-done"]
    assert module.entry["start"].called_computations == ["wrapped"]
    assert module.entry["ars"].attributes.typed("replica_groups") == ((0, 1),)
    assert module.problems() == []
    assert_matches_xla(hlo, ASYNC, module)


# ----------------------------------------------------------------------------------------------------
# Cross-checks
# ----------------------------------------------------------------------------------------------------

BROKEN = """HloModule broken

%c {
  ROOT %p = f32[] parameter(0)
}

%c {
  %p = f32[] parameter(0)
  %p = f32[] parameter(1)
  ROOT %s = f32[] add(%p, %later)
  %later = f32[] bogus-op(%nowhere), to_apply=%missing, kind=a, kind=b
  ROOT %again = f32[] negate(%p), control-predecessors={%ghost}
}

ENTRY %e {
  ROOT %x = f32[] parameter(0), dimensions={oops}
}

ENTRY %e2 {
  ROOT %y = f32[] parameter(0)
}
"""


def test_problems_do_not_stop_parsing() -> None:
    module = parse_hlo_module(BROKEN)
    found = [(p.line, p.message) for p in module.problems()]
    assert found == [
        (7, "computation c is already defined on line 3"),
        (9, "instruction p is already defined on line 8"),
        (10, "operand later of s is used before its definition in computation c"),
        (11, "unknown opcode bogus-op"),
        (11, "operand nowhere of later is not defined in computation c"),
        (11, "computation missing (in to_apply) is not defined"),
        (11, "attribute kind of later is repeated"),
        (12, "computation c has more than one ROOT"),
        (12, "control predecessor ghost is not defined"),
        (16, "attribute dimensions of x: expected an integer, found 'oops'"),
        (19, "more than one ENTRY computation"),
    ]
    undefined = module.problems()[4]
    assert (undefined.line, undefined.column) == (11, 27)
    assert module.computations[1].root.name == "s"  # the first ROOT


def test_strict_mode_and_validate_raise_parse_errors() -> None:
    with pytest.raises(xs.ParseError) as error:
        parse_hlo_module(BROKEN, strict=True)
    assert (error.value.line, error.value.column) == (7, 1)
    assert "computation c is already defined" in str(error.value)
    with pytest.raises(xs.ParseError, match="already defined"):
        parse_hlo_module(BROKEN).validate()
    assert parse_hlo_module(SMALL, strict=True).validate().name == "small"


# ----------------------------------------------------------------------------------------------------
# Syntax errors
# ----------------------------------------------------------------------------------------------------

GOOD_LINE = "  ROOT %r = f32[2]{0} add(%a, %b), metadata={op_name=\"x\"}"


def module_with(line: str) -> str:
    return ("HloModule m\n\nENTRY %e {\n  %a = f32[2]{0} parameter(0)\n  %b = f32[2]{0} parameter(1)\n"
            f"{line}\n}}\n")


@pytest.mark.parametrize(("line", "at", "message"), [
    ("  ROOT %r = f32[2]{0} add(%a, %b", None, "expected ',' or ')'"),
    ("  ROOT %r = F32[2]{0} add(%a, %b)", "F32", "type names are lowercase"),
    ("  ROOT %r = f32[2]{0} add(%a %b)", "%b)", "expected ',' or ')'"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), metadata={op_name=\"x\"", None, "expected an instruction or }"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), metadata={op_name=\"x}", '"x}', "unterminated string"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), kind", "kind", "expected an attribute name"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), kind=", None, "expected a value"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), kind=[1,2", None, "expected ']' to close '['"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), kind=(1]", "]", "expected ')' to close '('"),
    ("  ROOT %r = f32[2]{0} add(%a, %b), x=$", "$", "unexpected text"),
    ("  ROOT %r f32[2]{0} add(%a, %b)", "f32", "expected '=' after the instruction name"),
    ("  ROOT %r = f32[2]{0} 7(%a, %b)", "7(", "expected an opcode"),
    ("  ROOT %r = f32[2]{0:T(2)S(1)E(4)} add(%a, %b)", "E(4)", "repeated or out of order"),
    ("  ROOT %r = f32[2]{0} parameter(-1)", "-1", "negative"),
    ("  ROOT %r = f32[2]{0} constant()", ")", "expected a literal"),
    ("  ROOT %r = f32[2]{0} constant({1, 2)", ")", "expected '}' to close '{'"),
    ("  ROOT = f32[2]{0} add(%a, %b)", "=", "expected an instruction name"),
    ("  ROOT %r = f32[2]{0} add(%a, %b) /* unterminated", "/*", "unterminated comment"),
    ("  ROOT %r = f32[2]{0} add(%a, %b) $", "$", "unexpected"),
])
def test_syntax_errors_point_at_the_text(line: str, at: str | None, message: str) -> None:
    text = module_with(line)
    for fast in (True, False):
        with pytest.raises(xs.ParseError) as error:
            parse_hlo_module(text, fast=fast)
        assert message in error.value.reason, str(error.value)
        if at is not None:
            expected = (6, line.rindex(at) + 1)
            assert (error.value.line, error.value.column) == expected, str(error.value)
        assert str(error.value).rstrip().endswith("^")


@pytest.mark.parametrize(("text", "line", "message"), [
    ("", 1, "expected 'HloModule'"),
    ("HloModule", 1, "expected a module name"),
    ("HloModule m", 1, "expected a computation name"),
    ("HloModule m\nENTRY e {\n}\n", 3, "expected an instruction in computation e"),
    ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n", 4, "expected an instruction or }"),
    ("HloModule m\nENTRY e (p: f32[]) f32[] {\n  ROOT p = f32[] parameter(0)\n}", 2, "expected '->'"),
    ("HloModule m\nENTRY e (f32[]) -> f32[] {\n  ROOT p = f32[] parameter(0)\n}", 2, "expected a parameter name"),
    ("HloModule m\nFileNames\n1 \"a\"\nFileLocations\n", 4, "expected 'FunctionNames'"),
    ("HloModule m\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n\x00", 5, "NUL"),
    ("HloModule m, x=((((\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}\n", 1, "unterminated"),
    ("HloModule m\nENTRY e {\n  ROOT p = " + "(" * 3000 + "f32[]" + ")" * 3000 + " parameter(0)\n}\n", 3,
     "nested more than"),
])
def test_module_errors(text: str, line: int, message: str) -> None:
    for fast in (True, False):
        with pytest.raises(xs.ParseError) as error:
            parse_hlo_module(text, fast=fast)
        assert message in error.value.reason and error.value.line == line, str(error.value)


def test_non_text_input() -> None:
    with pytest.raises(xs.ParseError, match="must be a str"):
        parse_hlo_module(b"HloModule m")  # type: ignore[arg-type]
    with pytest.raises(xs.ParseError, match="unexpected text after the instruction"):
        parse_instruction("a = f32[] add(b, c) d = f32[] add(b, c)")


# ----------------------------------------------------------------------------------------------------
# The fast path hands lines back whenever the careful parser could read them differently
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    # attributes continued on the next line
    module_with("  %r = f32[2]{0} add(%a, %b)\n    , metadata={op_name=\"x\"}\n  ROOT %n = f32[2]{0} negate(%r)"),
    # a number after "-> f32[2] {" turns the brace into a layout
    "HloModule m\nENTRY %e (a: f32[2]) -> f32[2] {\n0}\n{\n  ROOT %a = f32[2]{0} parameter(0)\n}\n",
    # computation attributes after the closing brace
    "HloModule m\nENTRY e {\n  ROOT a = f32[] parameter(0)\n}\n, execution_thread=\"main\"\n",
    # everything on one line
    "HloModule m ENTRY e { a = f32[] parameter(0) ROOT b = f32[] negate(a), metadata={op_name=\"n\"} }",
    # comments, odd spacing, names that are keywords or types with '%'
    "HloModule m\n// comment\nENTRY %e {\n  %ROOT = f32[] parameter(0) /* c */\n"
    "  %f32 = f32[] negate( %ROOT )\n  ROOT %true = (f32[]) tuple(\n    %f32)\n}\n",
    # a value that continues after a space, and one cut by a newline
    module_with("  ROOT %r = f32[2]{0} add(%a, %b), replica_groups=mesh['x'=2] {'x'}, kind=kLoop"),
    module_with("  ROOT %r = f32[2]{0} add(%a, %b), replica_groups=mesh['x'=2]\n {'x'}"),
    # what the lexer does not skip or cannot read, even where Python sees blanks or digits
    module_with("  \x0b\n  ROOT %r = f32[2]{0} add(%a, %b)"),
    module_with("  ROOT %r = f32[2]{0} parameter(\u0663)"),
    module_with("  ROOT %r = f32[2]{0} add(%a, %b), channel_id=99999999999999999999"),
    module_with("  ROOT %r = f32[2]{0} add(%a, %b), replica_groups=[1,99999999999999999999]<=[2]"),
    module_with("  ROOT %r = f32[2]{0} add(0)"),
    module_with("  ROOT %r = f32[2]{0} parameter(x)"),
    module_with("  ROOT %r = f32[2]{0} constant(x, %y)"),
    module_with("  ROOT %r = u64[] constant(18446744073709551615)"),
    module_with("  ROOT %r = u64[] constant(18446744073709551616)"),
    # Windows line ends
    SMALL.replace("\n", "\r\n"),
    # an empty computation, a computation that never ends
    "HloModule m\nENTRY e {\n}\n",
    "HloModule m\nENTRY %e () -> f32[] {\n  ROOT %a = f32[] constant(1)\n",
])
def test_fast_and_careful_paths_agree(text: str) -> None:
    try:
        fast = parse_hlo_module(text)
    except xs.ParseError as error:
        with pytest.raises(xs.ParseError) as careful_error:
            parse_hlo_module(text, fast=False)
        assert (careful_error.value.position, careful_error.value.reason) == (error.position, error.reason)
    else:
        assert fast == parse_hlo_module(text, fast=False)


def test_comma_continuation_reads_like_xla(hlo: Any) -> None:
    text = module_with("  %r = f32[2]{0} add(%a, %b)\n    , metadata={op_name=\"x\"}\n  ROOT %n = f32[2]{0} negate(%r)")
    module = both_ways(text)
    assert module.entry["r"].metadata == {"op_name": "x"}
    assert_matches_xla(hlo, text, module)


# ----------------------------------------------------------------------------------------------------
# Real dumps: XLA reads the same instructions; printing round-trips
# ----------------------------------------------------------------------------------------------------


def assert_matches_xla(hlo: Any, text: str, module: HloModule) -> None:
    """Every instruction's name, opcode, shape text and operand names equal what XLA's parser reads."""
    xla_computations = {c.name: c for c in hlo.hlo_module_from_text(text).computations()}
    for computation in module.computations:
        xla_instructions = {i.name: i for i in xla_computations[computation.name].instructions()}
        assert len(xla_instructions) == len(computation.instructions)
        for ins in computation.instructions:
            xla = xla_instructions[ins.name]
            printed = xla.to_string().split(" = ", 1)[1]
            shape = xs.shape_text(ins.shape, index_comments=True)
            assert printed.startswith(f"{shape} "), (printed[:200], shape)
            assert same_opcode(ins.opcode, xla.opcode.name), (ins.opcode, xla.opcode.name)
            assert [o.name for o in xla.operands()] == ins.operands


OPCODE_ALIASES = {"kExp": "exponential", "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one",
                  "kSin": "sine", "kCos": "cosine", "kClz": "count-leading-zeros", "kPopulationCount": "popcnt",
                  "kOptimizationBarrier": "opt-barrier", "kTopK": "topk"}


def same_opcode(ours: str, xla_enum: str) -> bool:
    """Our opcode text against XLA's enum name (``kGetTupleElement``); ``custom-call-start`` is an async start."""
    for kind, suffix in (("kAsyncStart", "-start"), ("kAsyncUpdate", "-update"), ("kAsyncDone", "-done")):
        if xla_enum == kind:
            return ours.endswith(suffix)
    expected = OPCODE_ALIASES.get(xla_enum, re.sub(r"(?<!^)([A-Z])", r"-\1", xla_enum[1:]).lower())
    return ours == expected


def test_corpus_is_present_and_small() -> None:
    assert len(DUMPS) >= 14
    assert sum(p.stat().st_size for p in DUMPS) < 3_000_000


@pytest.mark.parametrize("path", DUMPS, ids=dump_id)
def test_corpus_matches_xla(path: Path, hlo: Any) -> None:
    text = path.read_text()
    module = both_ways(text)
    assert module.problems() == []
    assert_matches_xla(hlo, text, module)


@pytest.mark.parametrize("path", DUMPS, ids=dump_id)
def test_corpus_round_trips(path: Path) -> None:
    module = parse_hlo_module(path.read_text())
    printed = str(module)
    again = both_ways(printed)
    assert again == module
    assert str(again) == printed


EXAMPLES = sorted((Path(xs.__file__).parent / "examples").glob("*.hlo"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_bundled_examples(path: Path, hlo: Any) -> None:
    text = path.read_text()
    module = both_ways(text)
    assert module.problems() == []
    assert_matches_xla(hlo, text, module)
    assert parse_hlo_module(str(module)) == module


@pytest.mark.parametrize("path", OPTIMIZED, ids=dump_id)
def test_printed_corpus_is_read_by_xla(path: Path, hlo: Any) -> None:
    module = parse_hlo_module(path.read_text())
    assert_matches_xla(hlo, str(module), module)


@pytest.mark.parametrize("path", DUMPS, ids=dump_id)
def test_corpus_typed_attributes_read(path: Path) -> None:
    module = parse_hlo_module(path.read_text())
    for ins in module.instructions():
        for key in ins.attributes:
            ins.attributes.typed(key)
        if ins.literal_text is not None:
            _ = ins.literal
    assert module.schedule is None or set(module.schedule) <= {c.name for c in module.computations}


def test_corpus_features() -> None:
    modules = {dump_id(p): parse_hlo_module(p.read_text()) for p in DUMPS}
    opcodes = {i.opcode for m in modules.values() for i in m.instructions()}
    assert {"fusion", "while", "conditional", "call", "custom-call", "all-reduce", "all-gather", "reduce-scatter",
            "all-to-all", "collective-permute", "tuple", "get-tuple-element", "constant", "parameter", "gather",
            "scatter", "convolution", "dot", "reduce-window", "select-and-scatter", "sort", "fft", "opt-barrier",
            "rng-bit-generator", "reduce-precision", "popcnt"} <= opcodes
    sharded = modules["sharded.opt"]
    groups = {i.attributes.typed("replica_groups") for i in sharded.instructions() if "replica_groups" in i.attributes}
    assert ((0, 1), (2, 3), (4, 5), (6, 7)) in groups
    assert sharded.attributes.typed("num_partitions") == 8
    assert all(m.is_scheduled for name, m in modules.items() if name.endswith(".opt"))
    for name, module in modules.items():
        index = module.stack_frame_index
        assert (index is not None) == name.endswith(".opt")
        for ins in module.instructions():
            frame_id = ins.metadata.get("stack_frame_id")
            if index is not None and frame_id is not None:
                stack = index.frame(frame_id)
                assert stack and all(f["file"] == "make_corpus.py" or f["file"].endswith("make_corpus.py")
                                     for f in stack)
    attention = modules["attention_grad.opt"]
    index = attention.stack_frame_index
    frame_id = next(i.metadata["stack_frame_id"] for i in attention.instructions() if "stack_frame_id" in i.metadata)
    assert index is not None
    assert [f["function"] for f in index.frame(frame_id)][-3:] == ["write", "main", "<module>"]


def reformat(text: str, rng: random.Random) -> str:
    """The same module with operand and attribute lists broken over lines and extra blanks and comments."""
    out = []
    for line in text.split("\n"):
        if " = " in line and rng.random() < 0.5:
            line = line.replace(" = ", rng.choice(["  =  ", " /* c */ = ", "=\n      "]), 1)
            line = re.sub(r"\), (?=[a-z_\-]+=)", lambda m: rng.choice(["),\n    ", ") , ", ")/**/, "]), line, count=1)
            line = line.replace("(%", rng.choice(["(\n  %", "( %", "(%"]), 1)
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("path", OPTIMIZED[:4], ids=dump_id)
def test_reformatted_corpus_matches_xla(path: Path, hlo: Any) -> None:
    original = parse_hlo_module(path.read_text())
    text = reformat(path.read_text(), random.Random(path.name))
    module = both_ways(text)
    assert [[(i.name, i.opcode, i.shape, i.operands) for i in c.instructions] for c in module.computations] == [
        [(i.name, i.opcode, i.shape, i.operands) for i in c.instructions] for c in original.computations]
    assert_matches_xla(hlo, text, module)


# ----------------------------------------------------------------------------------------------------
# Fuzzing: mutated dumps raise ParseError or parse, the same way on both paths, quickly
# ----------------------------------------------------------------------------------------------------

PIECES = ["{", "}", "(", ")", "[", "]", ",", ", ", ":", "=", "%", '"', "'", "/*", "*/", "//", "\n", " ", "-", "<=",
          "->", "0", "9", "x", "_", ".", "...", "ROOT ", "ENTRY ", "f32[2]", "{1,0}", ", kind=kLoop", "\\", "nan(",
          "T(8,128)", "%x", "-inf", "18446744073709551616", "}\n", "\n}\n", "constant(", "parameter(", "/*index=5*/",
          "{{", "}}", "mesh['a'=2]", "[2]<=[2]", "\x00", "é"]


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Fail instead of hanging (SIGALRM where available)."""
    if not hasattr(signal, "setitimer"):
        yield
        return

    def expire(*_: Any) -> None:
        raise TimeoutError(f"parsing took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(text: str, fast: bool) -> Any:
    """The parsed module, or the error's position and reason."""
    try:
        return parse_hlo_module(text, fast=fast)
    except xs.ParseError as error:
        return (error.position, error.reason)


def exercise(module: HloModule) -> None:
    """Everything that reads lazily: problems, typed values, literals, printing."""
    module.problems()
    for ins in module.instructions():
        for key in ins.attributes:
            with contextlib.suppress(xs.ParseError):
                ins.attributes.typed(key)
        if ins.literal_text is not None:
            with contextlib.suppress(xs.ParseError):
                _ = ins.literal
    assert parse_hlo_module(str(module)) == module


@st.composite
def mutated_dumps(draw: st.DrawFn) -> str:
    path = draw(st.sampled_from(DUMPS))
    lines = path.read_text().split("\n")
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        action = draw(st.sampled_from(["insert", "delete", "replace", "duplicate", "drop", "swap"]))
        at = draw(st.integers(0, len(line)))
        if action == "insert":
            lines[i] = line[:at] + draw(st.sampled_from(PIECES)) + line[at:]
        elif action == "delete":
            lines[i] = line[:at] + line[at + draw(st.integers(1, 5)):]
        elif action == "replace":
            lines[i] = line[:at] + draw(st.sampled_from(PIECES)) + line[at + 1:]
        elif action == "duplicate":
            lines.insert(i, line)
        elif action == "drop":
            del lines[i]
        else:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_dumps())
def test_fuzz_mutated_dumps(text: str) -> None:
    started = time.perf_counter()
    with time_limit(10):
        fast = outcome(text, True)
        careful = outcome(text, False)
        assert fast == careful
        if isinstance(fast, HloModule):
            exercise(fast)
    assert time.perf_counter() - started < 10


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*PIECES, *"abcfs1234 "]), max_size=20).map("".join))
def test_fuzz_instruction_fragments(tail: str) -> None:
    for text in (f"x = f32[2]{{0}} add(a, b){tail}", f"x = {tail}", f"x = f32[] constant({tail})",
                 f"x = f32[] add({tail})", f"x = f32[] parameter({tail})"):
        with time_limit(5):
            module_text = f"HloModule m\nENTRY e {{\n  a = f32[2]{{0}} parameter(0)\n  {text}\n}}\n"
            assert outcome(module_text, True) == outcome(module_text, False)
            try:
                ins = parse_instruction(text)
            except xs.ParseError:
                continue
            for key in ins.attributes:
                with contextlib.suppress(xs.ParseError):
                    ins.attributes.typed(key)
            assert parse_instruction(str(ins)) == ins


# Pieces of instruction lines: the good ones first, then (after None) ones that are wrong or need the careful parser.
LINE_PARTS: dict[str, list[str | None]] = {
    "prefix": ["  ", "  ROOT ", None, "ROOT\t", "", " /*c*/ "],
    "name": ["%a1", "a1", "a-b.c_d", None, "ROOT", "%ROOT", "f32", "%f32", "true", "nan", "%x:", "1a"],
    "equals": [" = ", None, "=", " =  "],
    "shape": ["f32[2]{0}", "f32[]", "(f32[], s32[])", "f32[2]", "((f32[]), /*index=5*/s32[])", "bf16[2]{0:T(2)}",
              "(f32[2]{0:T(2)})", "u64[]", None, "f32[2]{}", "F32[2]", "f32[2]{0} ", "token[]"],
    "opcode": ["add", "constant", "parameter", "fusion", "custom-call-start", "get-tuple-element", None, "foo",
               "f32"],
    "operands": ["()", "(a1)", "(%a1, %b)", "(0)", "(f32[2]{0} %a1)", "(a1, /*index=5*/b)", "({1,2})", "({...})",
                 "(1.5)", "(true)", "((f32[]) %t)", "(f32[2] a1, %b)", "(18446744073709551615)", "(-inf)", "(nan)",
                 "({ {1}, {2} })", None, "(-1)", "(a1, )", "(99999999999999999999)", "(%a1 %b)", "(a1,b)",
                 "(a1)(b)"],
    "attribute": [", kind=kLoop", ", dimensions={0}", ', metadata={op_name="x" source_line=3}', ", x=[1,2]<=[2]",
                  ", x=mesh['a'=2] {'a'}", ", x=b01f_01io->b01f", ", x=0_0x1_1", ", x=3x3", ", x=-1.5e3", ", x=%c",
                  ', x="s\\"q"', ", x=nan", ", x=true", ", x=[1,2]<=[2]T(0)", ", x={'}'}", ", x=f32[2]{0}",
                  ", x=(1, 2)", None, ", x=99999999999999999999", ", x={", ", x=1_2_3_4", ", x=a b", ", x={a}{b}",
                  ", x=", ",x=1", ", ROOT=1", ", x=1,", ", x='q'", ', x={"}"}', ", x=a:", ", x=ENTRY"],
    "suffix": ["", " ", "\r", None, " // c", " /* c */", ",", " x"],
    "next": ["  ROOT %z = f32[] constant(0)", "", None, "  , kind=kLoop", "  0", "}\n, execution_thread=\"x\"",
             "  /*c*/"],
}


def draw_part(draw: st.DrawFn, key: str) -> str:
    """Mostly a good piece, sometimes any piece."""
    choices = LINE_PARTS[key]
    good = choices[:choices.index(None)]
    picked = draw(st.sampled_from(good if draw(st.integers(0, 9)) < 8 else choices))
    return picked if picked is not None else good[0]


@st.composite
def generated_lines(draw: st.DrawFn) -> str:
    parts = {key: draw_part(draw, key) for key in LINE_PARTS if key != "attribute"}
    attributes = "".join(draw_part(draw, "attribute") for _ in range(draw(st.integers(0, 3))))
    line = (parts["prefix"] + parts["name"] + parts["equals"] + parts["shape"] + " " + parts["opcode"]
            + parts["operands"] + attributes + parts["suffix"])
    return f"HloModule m\nENTRY %e (p: f32[]) -> f32[] {{\n  %b = f32[] parameter(0)\n{line}\n{parts['next']}\n}}\n"


@settings(max_examples=300, deadline=None)
@given(generated_lines())
def test_fuzz_generated_lines(text: str) -> None:
    with time_limit(5):
        fast = outcome(text, True)
        assert fast == outcome(text, False)
        if isinstance(fast, HloModule):
            exercise(fast)


def test_problems_check_shapes_against_the_broadcasting_rules() -> None:
    text = """HloModule m
ENTRY e {
  a = f32[2,3]{1,0} parameter(0)
  b = f32[3]{0} parameter(1)
  bb = f32[2,3]{1,0} broadcast(b), dimensions={1}
  bad = f32[2,4]{1,0} broadcast(b), dimensions={1}
  ok = f32[2,3]{1,0} add(a, bb)
  outer = f32[2,3]{1,0} multiply(f32[2,1]{1,0} c, f32[1,3]{1,0} d)
  wrong = f32[3,2]{1,0} add(a, bb)
  cmp = f32[2,3]{1,0} compare(a, bb), direction=LT
  mix = f32[2,3]{1,0} add(a, b)
  ROOT t = (f32[2,3]{1,0}) tuple(ok)
}
"""
    module = xs.parse_hlo_module(text)
    problems = {p.line: p.message for p in module.problems() if "not defined" not in p.message}
    assert set(problems) == {6, 9, 10, 11}
    assert "operand dimension 0 (size 3) does not match dimension 1" in problems[6]
    assert "is not the broadcast of its operands f32[2,3] and f32[2,3], which is f32[2,3]" in problems[9]
    assert "gives pred, not f32" in problems[10]
    assert "broadcast_dimensions" in problems[11]
    with pytest.raises(xs.ParseError) as info:
        xs.parse_hlo_module(text, strict=True)
    assert info.value.line == 6


def test_a_shape_verdict_is_reused_but_each_instruction_gets_its_own_problem() -> None:
    lines = [f"  w{i} = f32[3,2]{{1,0}} add(a, a), metadata={{op_name=\"x{i}\"}}" for i in range(3)]
    text = "HloModule m\nENTRY e {\n  a = f32[2,3]{1,0} parameter(0)\n" + "\n".join(lines) + (
        "\n  ok = f32[2,3]{1,0} add(a, a), metadata={op_name=\"y\"}\n  ROOT r = f32[2,3]{1,0} add(a, a)\n}\n")
    problems = xs.parse_hlo_module(text).problems()
    assert [(p.line, p.message.split(":")[0]) for p in problems] == [(4, "w0"), (5, "w1"), (6, "w2")]
    assert all("is not the broadcast of its operands" in p.message for p in problems)


def test_real_dumps_satisfy_the_broadcasting_rules() -> None:
    for path in DUMPS:
        problems = xs.parse_hlo_module(path.read_text()).problems()
        assert problems == [], (path.name, problems[:3])
