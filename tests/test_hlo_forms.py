"""HLO forms XLA's parser accepts beyond printed dumps (issue 13), each checked against XLA's parser itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from hlo_helpers import assert_reads_like_xla, summary, xla_verdict
from profiles import examples
from xlashapes.hlo import parse_hlo_module, parse_instruction
from xlashapes.hlo.checks import REQUIRED_ATTRIBUTES
from xlashapes.hlo.opcodes import OPCODES
from xlashapes.inference import PARSER_INFERRED_OPCODES

FORMS = {
    "no header": "ENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "no header, comment first": "// a comment\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "no header, computations first": "a {\n  ROOT x = f32[] parameter(0)\n}\n"
                                     "ENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "no header, no ENTRY": "a {\n  ROOT x = f32[] parameter(0)\n}\nb {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "colon after the name": "HloModule m:\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "colon, then attributes": "HloModule m:, entry_computation_layout={(f32[2])->f32[2]}\n"
                              "ENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "colon, then a comment": "HloModule m: // the module\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "no ENTRY": "HloModule m\ne {\n  ROOT p = f32[2] parameter(0)\n}\n",
    "parameters without colons": "HloModule m\nENTRY %c (operand f64[2], b f64[2]) -> f64[2] {\n"
                                 "  operand = f64[2] parameter(0)\n  b = f64[2] parameter(1)\n"
                                 "  ROOT a = f64[2] add(operand, b)\n}\n",
    "shapes left out": "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  q = s32[] parameter(1)\n"
                       "  n = negate(p)\n  a = add(p, n)\n  t = tuple(p, q)\n  g = get-tuple-element(t), index=1\n"
                       "  c = compare(p, a), direction=LT\n  s = select(c, p, n)\n  ROOT r = tuple(g, c, s)\n}\n",
    "inline operands": "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                       "  ROOT r = (s32[], s32[], f32[2], f32[2]) tuple(s32[] constant(1), s32[] constant(2), "
                       "f32[2] negate(f32[2] negate(p)), add(p, f32[2] constant({1, 2})))\n}\n",
    "inline computation in to_apply": "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                      "  z = f32[] constant(0)\n  ROOT r = f32[] reduce(p, z), dimensions={0}, "
                                      "to_apply={ a = f32[] parameter(0)\n    b = f32[] parameter(1)\n"
                                      "    ROOT s = add(a, b) }\n}\n",
    "two inline computations": "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  z = f32[] constant(0)\n"
                               "  r = f32[] reduce(p, z), dimensions={0}, to_apply={ a = f32[] parameter(0)\n"
                               "    b = f32[] parameter(1)\n    ROOT s = f32[] add(a, b) }\n"
                               "  ROOT f = f32[2] fusion(p), kind=kLoop, calls={ x = f32[2] parameter(0)\n"
                               "    ROOT n = f32[2] negate(x) }\n}\n",
    "inline computation in call": "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                  "  ROOT c = f32[2] call(p), to_apply={ x = f32[2] parameter(0)\n"
                                  "    ROOT n = f32[2] negate(x) }\n}\n",
    "inline computation in call-start": "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n"
                                        "  cs = ((f32[2]), f32[2], s32[]) call-start(p), to_apply={ x = f32[2] "
                                        "parameter(0)\n    ROOT n = f32[2] negate(x) }\n"
                                        "  ROOT cd = f32[2] call-done(cs)\n}\n",
    "derived send/recv shapes": "HloModule m\nENTRY e {\n  tok = token[] after-all()\n  p = u32[8] parameter(0)\n"
                                "  s = (u32[8], u32[8], token[]) send(p, tok), channel_id=1\n"
                                "  sd = token[] send-done(s), channel_id=1\n"
                                "  r = (f32[2], u32[9], token[]) recv(tok), channel_id=2\n"
                                "  rd = (f32[2], token[]) recv-done(r), channel_id=2\n"
                                "  o = f32[] outfeed(p, tok)\n"
                                "  ROOT t = (token[], (f32[2], token[]), token[]) tuple(sd, rd, o)\n}\n",
    "constant without E(n)": "HloModule m\nENTRY e {\n  c = s4[2]{0:E(4)} constant({1, 2})\n"
                             "  d = s4[2]{0:T(2)E(4)S(1)} constant({3, 4})\n  ROOT t = (s4[2], s4[2]) tuple(c, d)\n}\n",
}


@pytest.mark.parametrize("name", list(FORMS))
def test_form_reads_like_xla(name: str, xla: Any) -> None:
    assert_reads_like_xla(xla, FORMS[name])


def test_header_less_module_is_named_after_its_entry() -> None:
    assert parse_hlo_module(FORMS["no header"]).name == "module_e"
    assert parse_hlo_module(FORMS["no header, no ENTRY"]).name == "module_b"
    assert parse_hlo_module(FORMS["colon after the name"]).name == "m"


def test_inferred_shapes_of_the_few_opcodes() -> None:
    entry = parse_hlo_module(FORMS["shapes left out"]).entry
    shapes = {i.name: xs.shape_text(i.shape) for i in entry.instructions}
    assert shapes == {"p": "f32[2]{0}", "q": "s32[]", "n": "f32[2]{0}", "a": "f32[2]{0}", "t": "(f32[2]{0}, s32[])",
                      "g": "s32[]", "c": "pred[2]{0}", "s": "f32[2]{0}", "r": "(s32[], pred[2]{0}, f32[2]{0})"}
    assert not entry["n"].shape_written and entry["p"].shape_written


def test_inline_operands_are_named_as_xla_names_them() -> None:
    entry = parse_hlo_module(FORMS["inline operands"]).entry
    assert [i.name for i in entry.instructions] == [
        "p", "constant.anon", "constant.anon.1", "negate.anon", "negate.anon.1", "constant.anon.2", "add.anon", "r"]
    assert entry.root.operands == ["constant.anon", "constant.anon.1", "negate.anon.1", "add.anon"]
    assert entry["add.anon"].operands == ["p", "constant.anon.2"]
    assert entry["constant.anon.2"].literal.tolist() == [1, 2]


def test_inline_computations_are_named_and_called() -> None:
    module = parse_hlo_module(FORMS["two inline computations"])
    assert [c.name for c in module.computations] == ["_", "_.1", "e"]
    assert module.entry["r"].called_computations == ["_"]
    assert module.entry["f"].called_computations == ["_.1"]
    assert module.entry["r"].attributes["to_apply"] == "%_"
    assert module.computation("_").root.name == "s"
    printed = str(module)
    assert "to_apply=%_" in printed and parse_hlo_module(printed) == module


def test_inline_forms_read_the_same_on_both_paths_and_round_trip() -> None:
    for text in FORMS.values():
        module = parse_hlo_module(text)
        assert parse_hlo_module(text, fast=False) == module
        again = parse_hlo_module(str(module))
        assert summary(again) == summary(module)


def test_missing_shape_message_no_longer_mentions_tuples() -> None:
    text = "HloModule m\nENTRY e {\n  ROOT x = foo(y)\n}\n"
    with pytest.raises(xs.ParseError) as error:
        parse_hlo_module(text)
    assert "tuples are written" not in str(error.value)
    assert "without a shape" in error.value.reason and error.value.line == 3
    with pytest.raises(xs.ParseError, match="written without a shape"):
        parse_instruction("x = bogus-op(y)")
    with pytest.raises(xs.ParseError, match=r"expected a shape .* or an opcode") as error:
        parse_instruction("x = foo bar(y)")
    assert error.value.position == 4 and "tuple" not in error.value.reason


def test_inline_list_of_names_is_not_a_computation() -> None:
    ins = parse_instruction("x = f32[] custom-call(), custom_call_target=\"f\", called_computations={%a, %b}")
    assert ins.called_computations == ["a", "b"]
    ins = parse_instruction("x = f32[] fusion(), kind=kLoop, calls={%a}")
    assert ins.called_computations == ["a"]


# ----------------------------------------------------------------------------------------------------
# Generated modules with the new forms, compared with XLA's parser
# ----------------------------------------------------------------------------------------------------

TYPES = ["f32", "s32", "bf16", "f16"]
UNARY = ["negate", "abs", "exponential", "copy", "sign"]
BINARY = ["add", "subtract", "multiply", "maximum", "minimum"]


@st.composite
def generated_modules(draw: st.DrawFn) -> str:
    """A small module whose instructions may leave out shapes, be written inline or use header variants."""
    etype = draw(st.sampled_from(TYPES))
    dims = draw(st.lists(st.integers(0, 4), max_size=3))
    shape = f"{etype}[{','.join(map(str, dims))}]"
    lines = [f"  p0 = {shape} parameter(0)", f"  p1 = {shape} parameter(1)"]
    names = ["p0", "p1"]
    for k in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["unary", "binary", "compare", "tuple"]))
        written = draw(st.booleans())
        a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
        if draw(st.booleans()):  # an operand written inline
            b = f"{shape} {draw(st.sampled_from(UNARY))}({a})"
        if kind == "unary":
            lines.append(f"  v{k} = {shape + ' ' if written else ''}{draw(st.sampled_from(UNARY))}({a})")
        elif kind == "binary":
            lines.append(f"  v{k} = {shape + ' ' if written else ''}{draw(st.sampled_from(BINARY))}({a}, {b})")
        elif kind == "compare":
            pred = shape.replace(etype, "pred", 1)
            lines.append(f"  v{k} = {pred + ' ' if written else ''}compare({a}, {b}), direction=GE")
            continue  # a pred value is not an operand of the next ops
        else:
            lines.append(f"  v{k} = {'(' + shape + ', ' + shape + ') ' if written else ''}tuple({a}, {b})")
            lines.append(f"  w{k} = {shape + ' ' if written else ''}get-tuple-element(v{k}), index=1")
            names.append(f"w{k}")
            continue
        names.append(f"v{k}")
    if dims and draw(st.booleans()):  # a reduction whose computation is written inline
        scalar = f"{etype}[]"
        body = (f"{{ x = {scalar} parameter(0)\n    y = {scalar} parameter(1)\n"
                f"    ROOT z = {draw(st.sampled_from(BINARY))}(x, y) }}")
        lines.append(f"  red = {scalar} reduce({names[-1]}, {scalar} constant(0)), "
                     f"dimensions={{{','.join(map(str, range(len(dims))))}}}, to_apply={body}")
    lines.append(f"  ROOT r = tuple({', '.join(names[2:] or ['p0'])})")
    header = draw(st.sampled_from(["HloModule m\n", "HloModule m:\n", "", "// generated\n"]))
    params = draw(st.sampled_from([f"(p0: {shape}, p1: {shape}) -> ", f"(p0 {shape}, p1 {shape}) -> ", ""]))
    signature = ""
    if params:
        signature = f" {params}{_result(names, shape)}"
    return f"{header}ENTRY e{signature} {{\n" + "\n".join(lines) + "\n}\n"


def _result(names: list[str], shape: str) -> str:
    """The result shape written in a signature."""
    return "(" + ", ".join(shape for _ in (names[2:] or ["p0"])) + ")"


@settings(max_examples=examples(40), deadline=None)
@given(generated_modules())
def test_generated_modules_read_like_xla(text: str) -> None:
    from xla_oracle import available, oracle

    if not available():
        pytest.skip("jax/jaxlib not installed")
    xla = oracle()
    answer = xla_verdict(xla, text)
    try:
        ours = parse_hlo_module(text)
    except xs.ParseError as error:
        assert not answer["ok"], (text, error)
        return
    assert answer["ok"], (text, answer)
    assert parse_hlo_module(text, fast=False) == ours
    assert ours.name == answer["module"].name
    assert summary(ours) == summary(answer["module"])


# ----------------------------------------------------------------------------------------------------
# Real dumps with the shapes of inferable instructions taken out: XLA and we infer the same
# ----------------------------------------------------------------------------------------------------

CORPUS = sorted((Path(__file__).parent / "corpus").glob("*.unopt.hlo"))
STRIPPED = PARSER_INFERRED_OPCODES - {"broadcast"}
"""Opcodes XLA's parser infers; a broadcast without a shape means something else to it (dimensions = new sizes)."""


def without_shapes(text: str) -> tuple[str, int]:
    """``text`` with the written shape removed from every instruction whose opcode inference knows."""
    count = 0

    def strip(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(3) not in STRIPPED:
            return match.group(0)
        count += 1
        return f"{match.group(1)}{match.group(3)}("

    pattern = re.compile(r"^(\s*(?:ROOT )?%?[\w.\-]+ = )(\S+|\(.*?\)) ([a-z][a-z\-]*)\(", re.MULTILINE)
    return pattern.sub(strip, text), count


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name.removesuffix(".hlo"))
def test_corpus_without_shapes_reads_like_xla(path: Path, xla: Any) -> None:
    text, count = without_shapes(path.read_text())
    assert count > 0
    module = assert_reads_like_xla(xla, text)
    original = parse_hlo_module(path.read_text())
    assert summary(module) == summary(original)


def test_only_the_opcodes_xlas_parser_infers_may_omit_their_shape(xla: Any) -> None:
    """Every opcode written without a shape: XLA and we accept or refuse alike; XLA's 'cannot infer' is ours too."""
    cannot = 0
    for opcode in sorted(OPCODES):
        text = f"HloModule m\nENTRY e {{\n  p = f32[2] parameter(0)\n  ROOT r = {opcode}(p)\n}}\n"
        answer = xla.parse_module(text)
        try:
            ours = "; ".join(p.message for p in parse_hlo_module(text).problems() if "needs attribute" in p.message)
        except xs.ParseError as error:
            ours = str(error)
        assert bool(answer["ok"]) == (ours == ""), (opcode, answer, ours)
        missing = re.search(r"attribute (\w+) is expected but not seen", answer.get("error", ""))
        if missing:  # XLA's parser wants an attribute (it names one; we name one of those missing)
            assert "needs attribute" in ours and missing.group(1) in REQUIRED_ATTRIBUTES[opcode], (opcode, ours)
        if "cannot infer shape for opcode" in answer.get("error", ""):
            cannot += 1
            assert opcode not in PARSER_INFERRED_OPCODES and "cannot infer the shape of" in ours, (opcode, ours)
            assert "line 4, column 12" in ours, ours  # at the opcode, as XLA points
    assert cannot >= 60


def test_shapeless_transpose_and_tuple_keep_xlas_layouts(xla: Any) -> None:
    text = ("HloModule m\nENTRY e {\n  p = f32[2,3,4]{0,2,1} parameter(0)\n  q = s32[3]{0} parameter(1)\n"
            "  t = transpose(p), dimensions={1,2,0}\n  n = negate(t)\n  ROOT r = tuple(n, q)\n}\n")
    module = assert_reads_like_xla(xla, text)
    assert str(module.entry.root.shape) == "(f32[3,4,2]{2,1,0}, s32[3]{0})"


def test_shapeless_broadcast_reads_its_dimensions_as_new_sizes(xla: Any) -> None:
    text = "HloModule m\nENTRY e {\n  p = f32[3] parameter(0)\n  ROOT b = broadcast(p), dimensions={2}\n}\n"
    module = parse_hlo_module(text)
    answer = xla_verdict(xla, text)
    assert answer["ok"] and summary(module) == summary(answer["module"])
    assert str(module.entry.root.shape) == "f32[2,3]{1,0}"
    # what XLA builds keeps dimensions={2}, which its verifier then refuses (no dimension 2 maps operand dim 0)
    assert "does not match dimension 2" in module.problems()[0].message


LAID_OUT = """  a = f32[2,3]{0,1} parameter(0)
  a2 = f32[2,3]{1,0} parameter(1)
  p = pred[2,3]{0,1} parameter(2)
  p2 = pred[2,3]{1,0} parameter(3)
  m = f32[3,4]{0,1} parameter(4)
  t = f32[2,3,4]{0,2,1} parameter(5)
  z = f32[] parameter(6)
  i = s32[2,3]{0,1} parameter(7)
  tu = (f32[2,3]{1,0}, s32[2,3]{0,1}) parameter(8)
  c = c64[4,8]{0,1} parameter(9)
  r8 = f32[4,8]{0,1} parameter(10)
  sq = f32[3,3]{0,1} parameter(11)
  bb = f32[3,4]{0,1} parameter(12)
  f = f32[3]{0} parameter(13)
  ix = s32[2,1]{0,1} parameter(14)
  tk = token[] parameter(15)
  d = f32[2,<=3]{0,1} parameter(16)
  pr = pred[] parameter(17)
  u = f32[2,3]{0,1} parameter(18)
  tiled = f32[8,128]{1,0:T(8,128)S(1)} parameter(19)
  nib = s4[8,128]{1,0:E(4)} parameter(20)
  tiled3 = f32[8,128,2]{2,1,0:T(2,128)} parameter(21)
  sc = f32[3,5,2]{2,1,0} parameter(22)
"""
LAID_OUT_CALLEES = """add_f {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
lt_f {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = pred[] compare(x, y), direction=LT
}
lt_2 {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  x2 = s32[] parameter(2)
  y2 = s32[] parameter(3)
  ROOT s = pred[] compare(x, y), direction=LT
}
keep {
  x = f32[2,3]{0,1} parameter(0)
  ROOT r = f32[2,3]{1,0} negate(x)
}
other {
  x = f32[2,3]{1,0} parameter(0)
  ROOT r = f32[2,3]{0,1} negate(x)
}
step {
  x = f32[3,2]{0,1} parameter(0)
  y = f32[2,3]{0,1} parameter(1)
  ROOT s = (f32[3,2]{0,1}, f32[2,3]{0,1}) tuple(x, y)
}
true_c {
  x = f32[2,3]{0,1} parameter(0)
  ROOT r = pred[] constant(true)
}
"""
LAYOUT_PROBES = [
    "negate(tiled)", "compare(tiled, tiled), direction=LT", "compare(nib, nib), direction=LT", "negate(nib)",
    "transpose(tiled3), dimensions={1,0,2}", "tuple(tiled, nib)",
    "negate(a)", "add(a, a2)", "add(a2, a)", "compare(a2, a), direction=LT", "is-finite(a)", "real(c)", "abs(c)",
    "add(a, d)", "select(p, a2, a2)", "select(p2, a, a)", "select(pr, a, a2)", "clamp(a, a2, a2)", "clamp(z, a, z)",
    "transpose(t), dimensions={1,2,0}", "transpose(t), dimensions={2,0,1}", "reverse(a), dimensions={0}",
    "concatenate(a, a2), dimensions={0}", "pad(a, z), padding=0_1x1_0",
    "dot(a, m), lhs_contracting_dims={1}, rhs_contracting_dims={0}", "cholesky(sq)",
    "triangular-solve(sq, bb), left_side=true, lower=true, transpose_a=NO_TRANSPOSE",
    "fft(c), fft_type=FFT, fft_length={8}", "fft(r8), fft_type=RFFT, fft_length={8}",
    "reduce(t, z), dimensions={1}, to_apply=add_f", "reduce-window(a, z), window={size=1x2}, to_apply=add_f",
    "sort(a, i), dimensions={1}, to_apply=lt_2", "map(a, a2), dimensions={0,1}, to_apply=add_f",
    "topk(a), k=2, largest=true", "tuple(a, i)", "get-tuple-element(tu), index=0", "call(a), to_apply=keep",
    "while(a), condition=true_c, body=keep", "conditional(pr, a, a2), true_computation=keep, false_computation=other",
    "conditional(pr, a2, a), true_computation=other, false_computation=keep", "add-dependency(a, tk)",
    "gather(a, ix), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, "
    "slice_sizes={1,3}",
    "scatter(a, ix, u), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, "
    "index_vector_dim=1, to_apply=add_f",
    "batch-norm-training(a, f, f), epsilon=0.001, feature_index=1",
    "batch-norm-grad(a, f, f, f, a2), epsilon=0.001, feature_index=1",
    "select-and-scatter(a, u, z), window={size=1x1}, select=lt_f, scatter=add_f",
    "sort(a2), dimensions={1}, to_apply=lt_f", "scan(sc, a), dimensions={1}, num_carries=1, to_apply=step",
    "scan(sc, a), dimensions={0}, num_carries=1, to_apply=step",
]


@pytest.mark.parametrize("probe", LAYOUT_PROBES)
def test_shapeless_instructions_get_xlas_layouts(probe: str, xla: Any) -> None:
    """Operands with non-default layouts: the layout XLA's parser gives the inferred shape is ours too."""
    text = f"HloModule m\n{LAID_OUT_CALLEES}ENTRY e {{\n{LAID_OUT}  ROOT out = {probe}\n}}\n"
    ours = parse_hlo_module(text)
    answer = xla_verdict(xla, text)
    assert answer["ok"], answer
    assert summary(ours)["e"]["out"] == summary(answer["module"])["e"]["out"]
    assert parse_hlo_module(text, fast=False) == ours


@st.composite
def laid_out_instructions(draw: st.DrawFn) -> tuple[str, str]:
    """(parameters, shapeless ROOT instruction) over operands with random layouts (some tiled, some in S(1))."""
    rank = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    order = draw(st.permutations(range(rank)))
    extra = draw(st.sampled_from(["", ":S(1)", ":T(2)", ":T(2)S(1)"]))
    etype = draw(st.sampled_from(["f32", "bf16", "s32"]))
    shape = f"{etype}[{','.join(map(str, sizes))}]{{{','.join(map(str, order))}{extra}}}"
    other = f"{etype}[{','.join(map(str, sizes))}]{{{','.join(map(str, draw(st.permutations(range(rank)))))}}}"
    predicate = f"pred[{','.join(map(str, sizes))}]{{{','.join(map(str, draw(st.permutations(range(rank)))))}}}"
    parameters = f"  a = {shape} parameter(0)\n  b = {other} parameter(1)\n  p = {predicate} parameter(2)\n"
    permutation = ",".join(map(str, draw(st.permutations(range(rank)))))
    dims = ",".join(map(str, sorted(draw(st.sets(st.integers(0, rank - 1), min_size=1)))))
    root = draw(st.sampled_from([
        "negate(a)", "abs(a)", "add(a, b)", "multiply(b, a)", "compare(a, b), direction=GT", "select(p, a, b)",
        "clamp(b, a, b)", f"transpose(a), dimensions={{{permutation}}}", f"reverse(a), dimensions={{{dims}}}",
        "tuple(a, b, p)", "copy(a)", f"concatenate(a, b), dimensions={{{rank - 1}}}"]))
    return parameters, root


@settings(max_examples=examples(40), deadline=None)
@given(laid_out_instructions())
def test_generated_shapeless_instructions_get_xlas_layouts(xla: Any, case: tuple[str, str]) -> None:
    parameters, root = case
    text = f"HloModule m\nENTRY e {{\n{parameters}  ROOT out = {root}\n}}\n"
    answer = xla_verdict(xla, text)
    assert answer["ok"], answer
    assert summary(parse_hlo_module(text))["e"]["out"] == summary(answer["module"])["e"]["out"]


@pytest.mark.parametrize(("written", "data"), [
    ("(f32[2])", "f32[2]"), ("(f32[2], token[])", "f32[2]"), ("(f32[2]{0}, u32[9], token[])", "f32[2]"),
    ("(f32[2], f32[3])", "f32[2]"), ("(f32[2], u32[], token[], f32[])", "f32[2]"),
    ("(bf16[2,3]{0,1})", "bf16[2,3]{0,1}")])
def test_recv_shape_is_derived_from_the_written_data_shape(written: str, data: str, xla: Any) -> None:
    """XLA keeps only the first element of recv's written tuple: (data, u32[], token[])."""
    text = (f"HloModule m\nENTRY e {{\n  tok = token[] after-all()\n  r = {written} recv(tok), channel_id=2\n"
            f"  ROOT d = ({data}, token[]) recv-done(r), channel_id=2\n}}\n")
    module = assert_reads_like_xla(xla, text)
    assert module.entry.instructions[1].shape == xs.parse_shape(f"({data}, u32[], token[])")


@pytest.mark.parametrize("shape", ["", "f32[3] "])
@pytest.mark.parametrize("padding", ["0_0_-1", "0_0_-1x0_0", "-1_0_-1"])
def test_negative_interior_padding_does_not_read(shape: str, padding: str, xla: Any) -> None:
    """XLA's lexer reads no negative interior padding (its error: '=' expected); ours stops at the same '_-'."""
    text = f"HloModule m\nENTRY e {{\n  p = f32[3] parameter(0)\n  z = f32[] constant(0)\n" \
           f"  ROOT r = {shape}pad(p, z), padding={padding}\n}}\n"
    assert not xla.parse_module(text)["ok"]
    with pytest.raises(xs.ParseError) as info:
        parse_hlo_module(text, strict=True)
    assert info.value.line == 5 and "found '_-" in str(info.value)


# ----------------------------------------------------------------------------------------------------
# Fuzzing the new forms: both paths agree, only ParseErrors, problems() and printing work
# ----------------------------------------------------------------------------------------------------

PIECES = ["{", "}", "(", ")", ",", ", ", "=", " = ", ":", "%", "ROOT ", "ENTRY ", "HloModule m", "HloModule m:",
          "f32[2] ", "s32[] ", "negate(", "add(", "tuple(", "constant(1)", "parameter(0)", "to_apply={", "calls={",
          ", index=0", ", direction=LT", "\n", " ", "_", ".anon", "/*c*/", "//c\n", "-> f32[2]", "f32[2] negate(p)"]


@st.composite
def mutated_forms(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(list(FORMS.values())))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.sampled_from(PIECES))
        if action == "insert":
            text = text[:at] + piece + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 6)):]
        else:
            text = text[:at] + piece + text[at + len(piece):]
    return text


def reading(text: str, fast: bool) -> Any:
    try:
        return parse_hlo_module(text, fast=fast)
    except xs.ParseError as error:
        return (error.position, error.reason)


@settings(max_examples=examples(300), deadline=None)
@given(mutated_forms())
def test_fuzz_mutated_forms(text: str) -> None:
    fast = reading(text, True)
    assert fast == reading(text, False)
    if isinstance(fast, xs.HloModule):
        for problem in fast.problems():
            assert problem.line >= 1 and problem.column >= 1
        printed = str(fast)
        again = parse_hlo_module(printed)
        assert summary(again) == summary(fast)
