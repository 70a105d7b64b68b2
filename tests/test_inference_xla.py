"""infer_shape / check_shape against XLA itself, on generated one-instruction modules (batched, crash-safe).

* Parser-inferred opcodes: the instruction is written without a shape; XLA's parser infers it and prints the
  module; infer_shape must give the same shape (dynamic dimensions included, layout ignored) or, when XLA rejects
  the module (or aborts), raise ShapeError.
* Written-shape opcodes (slice, collectives, convert, broadcast, ...): the instruction carries a written shape
  (ours, or a mutated one); XLA compiles the module for CPU; check_shape's verdict must be XLA's.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from oracle_inference import (
    FAMILIES,
    Case,
    Computation,
    inference_oracle,
    producing,
    scalar_reducer,
    written_cases,
    xla_root_shape,
)
from profiles import examples
from xlashapes import ShapeError
from xlashapes.inference import PARSER_INFERRED_OPCODES

BATCH = 40
NO_SHRINK = (Phase.explicit, Phase.generate)  # a batch of 40 cases shrinks slowly; the message names the case


def _parser_disagreements(cases: list[Case]) -> list[str]:
    """Every case where infer_shape and XLA's parser disagree."""
    answers = inference_oracle().parse([case.module() for case in cases])
    problems = []
    for case, answer in zip(cases, answers):
        ours = case.ours()
        where = f"{case.opcode}{case.operands} {case.attributes}"
        if case.opcode == "reduce-window" and len(case.operands) > 2:
            # XLA's parser infers only single-input reduce-window (its verifier knows the variadic rule)
            if answer["ok"]:
                problems.append(f"{where}: XLA's parser now infers a variadic reduce-window")
            continue
        if answer["ok"]:
            theirs = xla_root_shape(answer["text"])
            if isinstance(ours, ShapeError):
                problems.append(f"{where}: XLA infers {theirs}, we raise {ours}")
            elif not ours.equal(theirs, ignore_layout=True):
                problems.append(f"{where}: XLA infers {theirs}, we {ours}")
        elif not isinstance(ours, ShapeError):
            problems.append(f"{where}: XLA rejects ({answer.get('error', '')[:200]!r}), we infer {ours}")
    return problems


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=examples(2), deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=NO_SHRINK)
@given(data=st.data())
def test_inferred_shapes_match_xlas_parser(xla: object, family: str, data: st.DataObject) -> None:
    cases = data.draw(st.lists(FAMILIES[family], min_size=BATCH, max_size=BATCH))
    assert _parser_disagreements(cases) == []


@settings(max_examples=examples(1), deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=NO_SHRINK)
@given(data=st.data())
def test_written_shapes_get_xlas_verdict(xla: object, data: st.DataObject) -> None:
    items = data.draw(st.lists(written_cases(), min_size=60, max_size=60))
    answers = inference_oracle().verify([case.module(written) for case, written in items])
    problems = []
    for (case, written), answer in zip(items, answers):
        verdict = case.check(written)
        if (verdict is None) != bool(answer["ok"]):
            problems.append(f"{case.opcode}{case.operands} {case.attributes} written {written}: ours {verdict}, "
                            f"XLA {answer.get('error', 'accepts')[:200]!r}")
    assert problems == []


HAND_WRITTEN = [
    # element-wise with dynamic dims: a bound meets its size, ? meets anything
    Case("add", ("f32[<=4,3]", "f32[4,3]")),
    Case("multiply", ("f32[?,3]", "f32[5,3]")),
    Case("add", ("f32[1,3]", "f32[?,3]")),
    Case("compare", ("s32[<=2]", "s32[<=2]"), "direction=GT"),
    Case("select", ("pred[<=3]", "f32[3]", "f32[3]")),
    Case("clamp", ("f32[]", "f32[<=7]", "f32[]")),
    # dot with mixed precision and dynamic batch
    Case("dot", ("bf16[<=8,4]", "f32[4,3]"), "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    Case("dot", ("s8[2,3]", "s32[3,2]"), "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    # concatenate and pad keep dynamic dims
    Case("concatenate", ("f32[<=2,3]", "f32[4,3]"), "dimensions={0}"),
    Case("pad", ("f32[<=4]", "f32[]"), "padding=1_1_1"),
    Case("transpose", ("f32[2,<=3,4]",), "dimensions={2,0,1}"),
    Case("reduce", ("f32[<=5,3]", "f32[]"), "dimensions={1}, to_apply=red", (("red", scalar_reducer(("f32",))),)),
    Case("select", ("pred[?]", "s32[3]", "s32[<=3]")),
    Case("clamp", ("s32[3]", "s32[?]", "s32[<=3]")),
    Case("dot", ("f32[<=3,2]", "f32[3,2]"), "lhs_batch_dims={0}, rhs_batch_dims={0}, lhs_contracting_dims={1}, "
         "rhs_contracting_dims={1}"),
    Case("ragged-dot", ("f32[8,4]", "f32[3,4,5]", "s32[3]"), "lhs_contracting_dims={1}, rhs_contracting_dims={1}, "
         "lhs_ragged_dims={0}, rhs_group_dims={0}"),
    Case("ragged-dot", ("f32[8,4]", "f32[4,5]", "s32[3]"), "lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
         "lhs_ragged_dims={1}"),
    Case("topk", ("f32[?]",), "k=2"),
    Case("scaled-dot", ("f8e4m3fn[8,32]", "f32[8,1]", "f8e4m3fn[32,5]", "f32[1,5]"),
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    Case("scaled-dot", ("bf16[8,32]", "bf16[8,2]", "f32[32,5]", "f32[2,5]"),
         "lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
    Case("set-dimension-size", ("f32[4,3]", "s32[]"), "dimensions={1}"),
    Case("get-dimension-size", ("f32[<=4,3]",), "dimensions={0}"),
    Case("bitcast-convert", ("f32[2]",)),  # needs its shape written
    Case("broadcast", ("f32[2]",), "dimensions={3,1}"),  # XLA's parser: new major sizes 3 and 1
    Case("topk", ("f32[<=5,9]",), "k=4"),
    Case("convolution", ("f32[1,<=9,2]", "f32[3,2,4]"), "window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f"),
    Case("fft", ("f32[3,8]",), "fft_type=RFFT, fft_length={8}"),
    Case("fft", ("c64[3,5]",), "fft_type=IRFFT, fft_length={8}"),
    Case("triangular-solve", ("f32[4,4]", "f32[2,4]"), "left_side=false, lower=true, transpose_a=TRANSPOSE"),
]


STEP = Computation(("f32[3]", "s32[2]", "f32[]"), "(f32[3], s32[], f32[])",
                   ("a = f32[3] negate(x0)", "i = s32[] constant(1)",
                    "ROOT t = (f32[3], s32[], f32[]) tuple(a, i, x2)"))
SCANS = [
    Case("scan", ("f32[5,3]", "s32[5,2]", "f32[]"), "dimensions={0}, to_apply=f, num_carries=1", (("f", STEP),)),
    Case("scan", ("f32[3,<=7]", "s32[2,<=7]", "f32[]"), "dimensions={1}, to_apply=f, num_carries=1, is_reverse=true",
         (("f", STEP),)),
    Case("scan", ("f32[5,3]", "s32[5,2]", "f32[]"), "dimensions={0}, to_apply=f, num_carries=2", (("f", STEP),)),
]


def test_hand_written_cases_match_xla(xla: object) -> None:
    assert _parser_disagreements(HAND_WRITTEN + SCANS) == []


def test_oracle_batches_and_survives_aborts(xla: object) -> None:
    """A module that aborts XLA costs only its own answer; the rest of the batch is still answered."""
    bad = Case("get-tuple-element", ("f32[2]",), "index=0")  # XLA's parser CHECK-fails on a non-tuple
    good = Case("negate", ("f32[2]",))
    oracle = inference_oracle()
    before = oracle.round_trips
    answers = oracle.parse([good.module(), bad.module(), good.module()])
    assert [a["ok"] for a in answers] == [True, False, True]
    assert answers[1].get("crash") is True
    assert oracle.round_trips - before == 2
    assert isinstance(bad.ours(), ShapeError)


WRITTEN_BY_US = [
    Case("slice", ("f32[10,4]",), "slice={[1:10:3],[0:4]}"),
    Case("dynamic-slice", ("f32[8,4]", "s32[]", "s32[]"), "dynamic_slice_sizes={3,4}"),
    Case("dynamic-update-slice", ("f32[8,4]", "f32[2,4]", "s64[]", "s64[]")),
    Case("reduce-precision", ("bf16[3]",), "exponent_bits=5, mantissa_bits=2"),
    Case("all-gather", ("f32[2,3]",), "dimensions={1}, replica_groups={{0,1}}", header=", replica_count=2"),
    Case("reduce-scatter", ("f32[8,2]",), "dimensions={0}, replica_groups={{0,1}}, to_apply=red",
         (("red", scalar_reducer(("f32",))),), header=", replica_count=2"),
    Case("all-reduce", ("f32[4]", "f32[2]"), "replica_groups={{0}}, to_apply=red",
         (("red", scalar_reducer(("f32",))),)),
    Case("all-to-all", ("f32[4,8]",), "dimensions={1}, replica_groups={{0,1}}", header=", replica_count=2"),
    Case("collective-permute", ("f32[4]",), "source_target_pairs={{0,1},{1,0}}", header=", replica_count=2"),
    Case("replica-id", ()),
    Case("partition-id", ()),
]


def test_shapes_we_infer_for_written_shape_ops_compile(xla: object) -> None:
    """For opcodes XLA's parser cannot infer, the shape we infer, written in, passes XLA's verifiers."""
    modules = []
    for case in WRITTEN_BY_US:
        inferred = case.ours()
        assert not isinstance(inferred, ShapeError), case
        modules.append(case.module(str(inferred)))
    answers = inference_oracle().verify(modules)
    assert [(case.opcode, answer.get("error")) for case, answer in zip(WRITTEN_BY_US, answers)
            if not answer["ok"]] == []


def test_parser_inferred_opcodes_are_the_ones_xlas_parser_fills_in(xla: object) -> None:
    """A shapeless instruction XLA cannot infer is refused ("cannot infer shape", or for opt-barrier a failed
    unary rule); the others are inferred."""
    g = producing(("f32[2]",), "f32[2]")
    red = scalar_reducer(("f32",))
    cases = [Case(op, ("f32[2]",)) for op in ("slice", "dynamic-slice", "reduce-precision", "opt-barrier",
                                              "copy-start", "iota", "convert", "bitcast", "reshape", "rng")]
    cases += [Case("fusion", ("f32[2]",), "kind=kLoop, calls=g", (("g", g),)),
              Case("all-reduce", ("f32[2]",), "to_apply=red", (("red", red),)),
              Case("async-start", ("f32[2]",), "calls=g", (("g", g),)),
              Case("send", ("f32[2]", "token[]"), "channel_id=1")]
    inferred = [Case("call", ("f32[2]",), "to_apply=g", (("g", g),)), Case("copy", ("f32[2]",)),
                Case("map", ("f32[2]", "f32[2]"), "dimensions={0}, to_apply=red", (("red", red),)),
                Case("domain", ("f32[2]",), 'domain={kind="sharding", entry={maximal device=0}, '
                                            'exit={maximal device=1}}'),
                Case("replica-id", ()), Case("after-all", ("token[]",))]
    answers = inference_oracle().parse([case.module() for case in cases + inferred])
    for case, answer in zip(cases, answers[:len(cases)]):
        error = answer.get("error", "")
        assert "cannot infer shape" in error or "Unknown operation for unary" in error, case.opcode
        assert case.opcode not in PARSER_INFERRED_OPCODES
    for case, answer in zip(inferred, answers[len(cases):]):
        assert answer["ok"], (case.opcode, answer)
        assert case.opcode in PARSER_INFERRED_OPCODES
        assert xla_root_shape(answer["text"]).equal(case.ours(), ignore_layout=True)


def test_async_pairs_we_infer_compile(xla: object) -> None:
    """-start / -done pairs with both shapes inferred here and written in: XLA's verifiers accept them."""
    from xlashapes import parse_shape
    from xlashapes.inference import infer_shape

    g = Computation(("f32[4]",), "f32[4]", ("ROOT n = f32[4] negate(x0)",))  # only a root and parameters
    pairs = [
        (Case("all-gather-start", ("f32[2,3]",), "dimensions={0}, replica_groups={{0,1}}", header=", replica_count=2"),
         "all-gather-done"),
        (Case("all-reduce-start", ("f32[4]",), "replica_groups={{0}}, to_apply=red",
              (("red", scalar_reducer(("f32",))),)), "all-reduce-done"),
        (Case("collective-permute-start", ("f32[4]",), "source_target_pairs={{0,1},{1,0}}",
              header=", replica_count=2"), "collective-permute-done"),
        (Case("copy-start", ("f32[4]",)), "copy-done"),
    ]
    # a generic async-start/-done pair does not survive XLA:CPU's way in (HLO -> StableHLO -> HLO rewraps it), so
    # only its structure is checked here: ((operands), the callee's result, s32[] context)
    assert str(Case("async-start", ("f32[4]",), "calls=g", (("g", g),)).ours()) == "((f32[4]{0}), f32[4]{0}, s32[])"
    modules = []
    for case, done in pairs:
        start = case.ours()
        assert not isinstance(start, ShapeError), case
        finished = infer_shape(done, [start])
        text = str(parse_shape(str(start)))
        modules.append(Case(case.opcode, case.operands, case.attributes, case.computations, header=case.header,
                            then=(done, str(finished))).module(text))
    answers = inference_oracle().verify(modules)
    assert [(case.opcode, answer.get("error")) for (case, _), answer in zip(pairs, answers) if not answer["ok"]] == []


# What XLA's parser fills in but its verifier (HloVerifier) refuses: problems() reports these, as it should.
VERIFIER_ONLY = ("XLA does not convert implicitly",  # mixed floating-point precision (allow_mixed_precision off)
                 "takes tokens",  # after-all / add-dependency of non-tokens
                 "sort dimension",  # sort's dimension is checked by the verifier only
                 "of the declared shape", "entries but the operand")  # the shapeless broadcast quirk


@pytest.mark.parametrize("family", sorted(FAMILIES))
@settings(max_examples=examples(1), deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=NO_SHRINK)
@given(data=st.data())
def test_our_parser_fills_shapes_like_xla_and_its_output_verifies(xla: object, family: str,
                                                                 data: st.DataObject) -> None:
    """The HLO reader (not only infer_shape): the shape it fills in is XLA's, layout included; XLA's printout of
    the module passes problems() except for what XLA's own verifier refuses."""
    from xlashapes import ParseError
    from xlashapes.hlo import parse_hlo_module

    cases = data.draw(st.lists(FAMILIES[family], min_size=BATCH, max_size=BATCH))
    answers = inference_oracle().parse([case.module() for case in cases])
    disagreements = []
    for case, answer in zip(cases, answers):
        if not answer["ok"]:
            continue
        where = f"{case.opcode}{case.operands} {case.attributes}"
        try:
            ours = parse_hlo_module(case.module())
        except ParseError as error:
            disagreements.append(f"{where}: XLA reads it, we raise {error}")
            continue
        theirs = parse_hlo_module(answer["text"])
        mine, xlas = ([str(i.shape) for i in m.entry.instructions if i.name == "r"] for m in (ours, theirs))
        if mine != xlas:
            disagreements.append(f"{where}: XLA fills in {xlas}, we {mine}")
        disagreements += [f"{where}: {p.message}" for p in theirs.problems()
                          if not any(known in p.message for known in VERIFIER_ONLY)]
    assert disagreements == []


@settings(max_examples=examples(1), deadline=None, suppress_health_check=list(HealthCheck), database=None,
          phases=NO_SHRINK)
@given(data=st.data())
def test_problems_gives_xlas_verdict_on_written_shapes(xla: object, data: st.DataObject) -> None:
    """problems() (the verifier wired to check_shape) accepts a written shape exactly when XLA compiles it."""
    from xlashapes import ParseError
    from xlashapes.hlo import parse_hlo_module

    items = data.draw(st.lists(written_cases(), min_size=60, max_size=60))
    answers = inference_oracle().verify([case.module(written) for case, written in items])
    disagreements = []
    for (case, written), answer in zip(items, answers):
        try:
            found = [p.message for p in parse_hlo_module(case.module(written)).problems()]
        except ParseError as error:
            found = [f"ParseError: {error}"]
        if bool(answer["ok"]) != (found == []):
            disagreements.append(f"{case.opcode}{case.operands} {case.attributes} written {written}: ours {found}, "
                                 f"XLA {answer.get('error', 'accepts')[:200]!r}")
    assert disagreements == []
