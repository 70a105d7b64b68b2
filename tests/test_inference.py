"""Shape inference without XLA: hand-checked shapes, error messages, properties and bad input."""

from __future__ import annotations

import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profiles import examples
from xlashapes import ShapeError, make_shape, parse_shape
from xlashapes.inference import (
    INFERRED_OPCODES,
    PARSER_INFERRED_OPCODES,
    WRITTEN_SHAPE_OPCODES,
    Signature,
    check_shape,
    infer_shape,
)

S = parse_shape
ADD = Signature((S("f32[]"), S("f32[]")), S("f32[]"))

# Every opcode of XLA's hlo_opcode.h (jaxlib 0.10.2's HloOpcode enum, 133 names), as HLO text spells them.
XLA_OPCODES = """abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start all-reduce
all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start async-update atan2 atanh
batch-norm-grad batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call cbrt ceil cholesky
clamp count-leading-zeros collective-broadcast collective-permute collective-permute-done collective-permute-start
compare complex concatenate conditional constant convert convolution copy copy-done copy-start cosine cosh custom-call
divide domain dot dynamic-reshape dynamic-slice dynamic-update-slice erf exponential exponential-minus-one fft floor
fusion gather get-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum
minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt power ragged-all-to-all
ragged-dot real recv recv-done reduce reduce-precision reduce-scatter reduce-window remainder replica-id reshape
reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz round-nearest-even rsqrt scaled-dot scan
scatter select select-and-scatter send send-done set-dimension-size shift-left shift-right-arithmetic
shift-right-logical sign sine sinh slice sort sqrt stochastic-convert subtract tan tanh topk transpose
triangular-solve tuple while xor""".split()


def infer(opcode: str, *operands: str, computations: dict[str, Signature] | None = None, **attributes: Any) -> str:
    """The inferred shape's text without layout."""
    return str(infer_shape(opcode, [S(o) for o in operands], attributes, computations)).split("{")[0] \
        if not opcode.startswith("(") else ""


def test_every_xla_opcode_has_a_rule_or_needs_a_written_shape() -> None:
    assert len(XLA_OPCODES) == 133
    covered = INFERRED_OPCODES | WRITTEN_SHAPE_OPCODES
    assert set(XLA_OPCODES) - covered == set()
    assert covered - set(XLA_OPCODES) == set()
    assert PARSER_INFERRED_OPCODES <= INFERRED_OPCODES | {"broadcast"}
    assert len(INFERRED_OPCODES) >= 115


@pytest.mark.parametrize(("opcode", "operands", "attributes", "expected"), [
    ("slice", ["f32[10,4]"], {"slice": ((1, 10, 3), (0, 4, 1))}, "f32[3,4]"),
    ("slice", ["f32[<=10]"], {"slice": ((0, 10, 1),)}, "f32[<=10]"),
    ("slice", ["f32[<=10]"], {"slice": ((0, 5, 1),)}, "f32[<=5]"),  # shape_inference.cc: still dynamic
    ("slice", ["f32[<=10,?]"], {"slice": ((3, 4, 1), (0, 7, 2))}, "f32[1,4]"),  # one element, or out of a ?
    ("dynamic-slice", ["f32[<=8,<=4]", "s32[]", "s32[]"], {"dynamic_slice_sizes": (1, 3)}, "f32[1,3]"),
    ("dynamic-update-slice", ["f32[<=8,4]", "f32[<=2,4]", "s32[]", "s32[]"], {}, "f32[<=8,4]"),
    ("dynamic-update-slice", ["f32[8,4]", "f32[<=8,4]", "s32[]", "s32[]"], {}, "f32[<=8,4]"),
    ("dynamic-slice", ["f32[<=8,4]", "s32[]", "s32[]"], {"dynamic_slice_sizes": (8, 2)}, "f32[<=8,2]"),
    ("dynamic-update-slice", ["f32[8,4]", "f32[2,4]", "s32[]", "s32[]"], {}, "f32[8,4]"),
    ("reduce-precision", ["bf16[3]"], {"exponent_bits": 8, "mantissa_bits": 7}, "bf16[3]"),
    ("all-reduce", ["f32[4]", "s32[2]"], {}, "(f32[4], s32[2])"),
    ("all-reduce-start", ["f32[4]"], {}, "f32[4]"),
    ("all-reduce-done", ["f32[4]"], {}, "f32[4]"),
    ("all-gather", ["f32[2,3]"], {"dimensions": (1,), "replica_groups": ((0, 1, 2, 3),)}, "f32[2,12]"),
    ("all-gather-start", ["f32[2]"], {"dimensions": (0,), "replica_groups": ((0, 1), (2, 3))}, "(f32[2], f32[4])"),
    ("all-gather-done", ["(f32[2], f32[4])"], {}, "f32[4]"),
    ("reduce-scatter", ["f32[8,2]"], {"dimensions": (0,), "replica_groups": ((0, 1, 2, 3),)}, "f32[2,2]"),
    ("all-to-all", ["f32[4,8]"], {"dimensions": (1,), "replica_groups": ((0, 1),)}, "f32[4,8]"),
    ("all-to-all", ["f32[4]", "f32[4]"], {"replica_groups": ((0, 1),)}, "(f32[4], f32[4])"),
    ("collective-permute", ["f32[4]"], {"source_target_pairs": ((0, 1), (1, 0))}, "f32[4]"),
    ("collective-permute-start", ["f32[4]"], {}, "(f32[4], f32[4], u32[], u32[])"),
    ("collective-permute-done", ["(f32[4], f32[4], u32[], u32[])"], {}, "f32[4]"),
    ("collective-broadcast", ["f32[4]"], {"replica_groups": ((0, 1),)}, "f32[4]"),
    ("ragged-all-to-all", ["f32[8,2]", "f32[6,2]", "s64[2]", "s64[2]", "s64[2]", "s64[2]"], {}, "f32[6,2]"),
    ("send", ["f32[8]", "token[]"], {"channel_id": 1}, "(f32[8], u32[], token[])"),
    ("send-done", ["(f32[8], u32[], token[])"], {"channel_id": 1}, "token[]"),
    ("recv-done", ["(f32[8], u32[], token[])"], {"channel_id": 1}, "(f32[8], token[])"),
    ("outfeed", ["f32[8]", "token[]"], {}, "token[]"),
    ("copy-start", ["f32[8]"], {}, "(f32[8], f32[8], u32[])"),
    ("copy-done", ["(f32[8], f32[8], u32[])"], {}, "f32[8]"),
    ("async-done", ["((f32[8]), s32[4], s32[])"], {}, "s32[4]"),
    ("async-update", ["((f32[8]), s32[4], s32[])"], {}, "((f32[8]), s32[4], s32[])"),
    ("opt-barrier", ["(f32[8], s32[])"], {}, "(f32[8], s32[])"),
    ("add-dependency", ["f32[8]", "token[]"], {}, "f32[8]"),
    ("domain", ["f32[8]"], {}, "f32[8]"),
    ("partition-id", [], {}, "u32[]"),
    ("rng-get-and-update-state", [], {"delta": 4}, "u64[2]"),
    ("set-dimension-size", ["f32[4,<=3]", "s32[]"], {"dimensions": (0,)}, "f32[<=4,<=3]"),
    ("real", ["c128[2]"], {}, "f64[2]"),
    ("complex", ["f64[2]", "f64[2]"], {}, "c128[2]"),
    ("is-finite", ["bf16[<=2]"], {}, "pred[<=2]"),
    ("batch-norm-grad", ["f32[8,4]", "f32[4]", "f32[4]", "f32[4]", "f32[8,4]"], {"feature_index": 1},
     "(f32[8,4], f32[4], f32[4])"),
    ("cholesky", ["c64[2,3,3]"], {"lower": True}, "c64[2,3,3]"),
    ("gather", ["f32[3,5,6]", "s32[3,2]"], {"offset_dims": (1,), "collapsed_slice_dims": (1,),
                                             "start_index_map": (1,), "operand_batching_dims": (0,),
                                             "start_indices_batching_dims": (0,), "index_vector_dim": 2,
                                             "slice_sizes": (1, 1, 4)}, "f32[3,4,2]"),
])
def test_inferred_shapes(opcode: str, operands: list[str], attributes: dict[str, Any], expected: str) -> None:
    result = infer_shape(opcode, [S(o) for o in operands], attributes)
    assert result.equal(S(expected), ignore_layout=True)


def test_called_computations_decide_control_flow_shapes() -> None:
    state = S("(s32[], f32[4])")
    sigs = {"cond": Signature((state,), S("pred[]")), "body": Signature((state,), state), "add": ADD,
            "g": Signature((S("f32[4]"),), S("s32[2]"))}
    assert infer_shape("while", [state], {"condition": "cond", "body": "body"}, sigs) == state.with_default_layouts()
    assert str(infer_shape("call", [S("f32[4]")], {"to_apply": "g"}, sigs)) == "s32[2]{0}"
    assert str(infer_shape("fusion", [S("f32[4]")], {"calls": "%g", "kind": "kLoop"}, sigs)) == "s32[2]{0}"
    start = infer_shape("async-start", [S("f32[4]")], {"calls": "g"}, sigs)
    assert str(start) == "((f32[4]{0}), s32[2]{0}, s32[])"
    assert str(infer_shape("async-done", [start], {}, sigs)) == "s32[2]{0}"
    with pytest.raises(ShapeError, match="body result"):
        bad = {**sigs, "body": Signature((state,), S("(s32[], f32[5])"))}
        infer_shape("while", [state], {"condition": "cond", "body": "body"}, bad)
    with pytest.raises(ShapeError, match="signature was not given"):
        infer_shape("call", [S("f32[4]")], {"to_apply": "missing"}, sigs)


def test_collective_chains_agree_with_the_synchronous_forms() -> None:
    attrs = {"dimensions": (0,), "replica_groups": ((0, 1, 2),)}
    x = S("f32[2,5]")
    start = infer_shape("all-gather-start", [x], attrs)
    assert infer_shape("all-gather-done", [start]) == infer_shape("all-gather", [x], attrs)
    start = infer_shape("collective-permute-start", [x], {"source_target_pairs": ((0, 1),)})
    assert infer_shape("collective-permute-done", [start]) == infer_shape("collective-permute", [x])
    gathered = infer_shape("all-gather", [x], attrs)
    assert infer_shape("reduce-scatter", [gathered], attrs).equal(x, ignore_layout=True)


@pytest.mark.parametrize(("opcode", "operands", "attributes", "message"), [
    ("dot", ["f32[2,3]", "f32[4,5]"], {"lhs_contracting_dims": (1,), "rhs_contracting_dims": (0,)}, "contracting"),
    ("dot", ["f32[2,3]", "f32[3,5]"], {"lhs_contracting_dims": (2,), "rhs_contracting_dims": (0,)}, "out of range"),
    ("slice", ["f32[4]"], {"slice": ((0, 5, 1),)}, "limit 5 of dimension 0"),
    ("slice", ["f32[4]"], {"slice": ((0, 4, 0),)}, "stride 0"),
    ("reduce", ["f32[4]", "f32[]"], {"dimensions": (0,)}, "to_apply"),
    ("transpose", ["f32[2,3]"], {"dimensions": (0, 0)}, "permutation"),
    ("concatenate", ["f32[2,3]", "f32[2,4]"], {"dimensions": (0,)}, "differ in dimension 1"),
    ("pad", ["f32[2]", "f32[]"], {"padding": ((-3, 0, 0),)}, "negative"),
    ("get-tuple-element", ["f32[2]"], {"index": 0}, "tuple operand"),
    ("get-tuple-element", ["(f32[2])"], {"index": 1}, "index 1"),
    ("all-gather", ["f32[2]"], {"dimensions": (0,)}, "written shape"),
    ("reduce-scatter", ["f32[3]"], {"dimensions": (0,), "replica_groups": ((0, 1),)}, "shards"),
    ("convolution", ["f32[1,4,3]", "f32[2,3,8]"], {"window": {"size": (3,)}, "dim_labels": "b0f_0io->b0f"},
     "window size 3"),
    ("fft", ["f32[8]"], {"fft_type": "FFT", "fft_length": (8,)}, "complex"),
    ("add", ["f32[2]", "s32[2]"], {}, "one element type"),
    ("add", ["f32[2,3]", "f32[3]"], {}, "different ranks"),
    ("compare", ["f32[2]", "f32[2]"], {"direction": "XX"}, "direction"),
    ("reshape", ["f32[6]"], {}, "must be written"),
    ("frobnicate", ["f32[6]"], {}, "unknown opcode"),
    ("dimensions-bad", [], {}, "unknown opcode"),
    ("transpose", ["f32[2,3]"], {"dimensions": "abc"}, "dimensions"),
    ("convolution", ["f32[1,4,3]", "f32[3,3,8]"], {"window": {"size": ("x",)}, "dim_labels": "b0f_0io->b0f"},
     "malformed"),
    ("slice", ["f32[4]"], {"slice": (7,)}, "malformed"),
    ("convolution", ["f32[1,4,3]", "f32[3,3,8]"], {"window": {"size": (3,)}, "dim_labels": "bad"}, "dim_labels"),
])
def test_errors_name_the_problem(opcode: str, operands: list[str], attributes: dict[str, Any], message: str) -> None:
    with pytest.raises(ShapeError, match=message):
        infer_shape(opcode, [S(o) for o in operands], attributes)


@pytest.mark.parametrize(("opcode", "operands", "attributes", "good", "bad"), [
    ("broadcast", ["f32[3]"], {"dimensions": (1,)}, "f32[2,3]", "f32[3,2]"),
    ("reshape", ["f32[2,3]"], {}, "f32[3,2]", "f32[7]"),
    ("convert", ["f32[2,3]"], {}, "s8[2,3]", "s8[3,2]"),
    ("bitcast-convert", ["f32[2]"], {}, "u16[2,2]", "u16[2]"),
    ("bitcast-convert", ["u8[3,4]"], {}, "s32[3]", "s32[3,4]"),
    ("stochastic-convert", ["f32[2]", "u32[2]"], {}, "s8[2]", "s8[3]"),
    ("iota", [], {"iota_dimension": 1}, "s32[2,3]", "s32[2]"),
    ("rng", ["f32[]", "f32[]"], {"distribution": "rng_uniform"}, "f32[5]", "s32[5]"),
    ("rng-bit-generator", ["u64[2]"], {"algorithm": "rng_default"}, "(u64[2], u32[4])", "(u64[3], u32[4])"),
    ("infeed", ["token[]"], {}, "(f32[4], token[])", "f32[4]"),
    ("recv", ["token[]"], {"channel_id": 1}, "(f32[4], u32[], token[])", "(f32[4], token[])"),
    ("dynamic-reshape", ["f32[6]", "s32[]", "s32[]"], {}, "f32[<=3,2]", "f32[6]"),
    ("slice", ["f32[4]"], {"slice": ((1, 3, 1),)}, "f32[2]", "f32[3]"),
    ("sort", ["f32[4]"], {"dimensions": (0,)}, "f32[4]", "f32[5]"),
    ("after-all", ["token[]", "token[]"], {}, "token[]", "f32[]"),
])
def test_check_shape_accepts_the_right_written_shape(opcode: str, operands: list[str], attributes: dict[str, Any],
                                                      good: str, bad: str) -> None:
    shapes = [S(o) for o in operands]
    check_shape(opcode, shapes, S(good), attributes)
    with pytest.raises(ShapeError):
        check_shape(opcode, shapes, S(bad), attributes)


def test_verifier_only_checks() -> None:
    with pytest.raises(ShapeError, match="sort dimension 3"):
        check_shape("sort", [S("f32[4]")], S("f32[4]"), {"dimensions": (3,)})
    assert str(infer_shape("sort", [S("f32[4]")], {"dimensions": (3,)})) == "f32[4]{0}"  # XLA's parser agrees
    with pytest.raises(ShapeError, match="tokens"):
        check_shape("add-dependency", [S("f32[4]"), S("f32[]")], S("f32[4]"))
    assert str(infer_shape("broadcast", [S("f32[2]")], {"dimensions": (3,)})) == "f32[3,2]{1,0}"  # parser quirk


# ----- properties -----------------------------------------------------------------------------------------

sizes = st.lists(st.integers(0, 6), max_size=4)


@settings(max_examples=examples(200))
@given(sizes, st.data())
def test_transpose_then_inverse_is_identity(dims: list[int], data: st.DataObject) -> None:
    x = make_shape("f32", dims)
    perm = data.draw(st.permutations(range(len(dims))))
    inverse = [perm.index(i) for i in range(len(dims))]
    y = infer_shape("transpose", [infer_shape("transpose", [x], {"dimensions": tuple(perm)})],
                    {"dimensions": tuple(inverse)})
    assert y == x


@settings(max_examples=examples(200))
@given(sizes, st.data())
def test_concatenate_adds_and_slice_takes_back(dims: list[int], data: st.DataObject) -> None:
    if not dims:
        return
    dim = data.draw(st.integers(0, len(dims) - 1))
    extra = data.draw(st.integers(0, 5))
    other = list(dims)
    other[dim] = extra
    joined = infer_shape("concatenate", [make_shape("f32", dims), make_shape("f32", other)], {"dimensions": (dim,)})
    assert joined.dimensions[dim] == dims[dim] + extra
    ranges = tuple((0, d, 1) if i != dim else (0, dims[dim], 1) for i, d in enumerate(joined.dimensions))
    assert infer_shape("slice", [joined], {"slice": ranges}) == make_shape("f32", dims)


@settings(max_examples=examples(200))
@given(sizes, st.data())
def test_reduce_removes_exactly_the_reduced_dims(dims: list[int], data: st.DataObject) -> None:
    chosen = data.draw(st.sets(st.integers(0, max(len(dims) - 1, 0)), max_size=len(dims))) if dims else set()
    out = infer_shape("reduce", [make_shape("f32", dims), S("f32[]")],
                      {"dimensions": tuple(sorted(chosen)), "to_apply": "add"}, {"add": ADD})
    assert out.dimensions == tuple(d for i, d in enumerate(dims) if i not in chosen)


@settings(max_examples=examples(200))
@given(sizes, sizes)
def test_dot_without_contraction_is_an_outer_product(a: list[int], b: list[int]) -> None:
    out = infer_shape("dot", [make_shape("f32", a), make_shape("f32", b)], {})
    assert out.dimensions == (*a, *b)


_OPCODES = sorted(INFERRED_OPCODES | WRITTEN_SHAPE_OPCODES | {"nonsense"})
_VALUES = st.one_of(st.integers(-3, 5), st.booleans(), st.text(max_size=3), st.none(),
                    st.lists(st.integers(-2, 4), max_size=3).map(tuple),
                    st.lists(st.lists(st.integers(-2, 4), max_size=3).map(tuple), max_size=3).map(tuple),
                    st.dictionaries(st.sampled_from(["size", "stride", "pad", "lhs_dilate"]),
                                    st.lists(st.integers(-1, 3), max_size=2).map(tuple), max_size=3))
_KEYS = ["dimensions", "index", "slice", "padding", "window", "dim_labels", "lhs_contracting_dims",
         "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims", "to_apply", "calls", "condition", "body",
         "replica_groups", "fft_type", "fft_length", "k", "feature_index", "offset_dims", "slice_sizes",
         "index_vector_dim", "start_index_map", "collapsed_slice_dims", "update_window_dims",
         "inserted_window_dims", "scatter_dims_to_operand_dims", "dynamic_slice_sizes", "direction",
         "branch_computations", "exponent_bits", "mantissa_bits", "iota_dimension", "feature_group_count"]
_SHAPES = st.sampled_from(["f32[]", "f32[2,3]", "s32[]", "pred[2,3]", "(f32[2], s32[])", "token[]", "c64[4]",
                           "f32[<=3,2]", "f32[?,2]", "u32[2]", "s32[2,1]", "f32[0]", "()"])


@settings(max_examples=examples(300))
@given(st.sampled_from(_OPCODES), st.lists(_SHAPES, max_size=5),
       st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=4), st.booleans())
def test_bad_input_only_raises_shape_error(opcode: str, operands: list[str], attributes: dict[str, Any],
                                           written: bool) -> None:
    sigs = {"add": ADD, "abc": Signature((S("f32[2]"),), S("pred[]"))}
    shapes = [S(o) for o in operands]
    try:
        if written:
            check_shape(opcode, shapes, shapes[0] if shapes else S("f32[]"), attributes, sigs)
        else:
            result = infer_shape(opcode, shapes, attributes, sigs)
            assert result.is_array or result.is_tuple or result.is_token
    except ShapeError:
        pass


def test_non_shapes_are_refused() -> None:
    with pytest.raises(ShapeError, match="operand 0"):
        infer_shape("negate", ["f32[2]"])  # type: ignore[list-item]
    with pytest.raises(ShapeError, match="opcode"):
        infer_shape(3, [])  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="Signature"):
        Signature((S("f32[]"),), "f32[]")  # type: ignore[arg-type]


def test_inference_is_linear_in_the_operand_sizes() -> None:
    """Rank 10000 and 5000 operands: well under a second (a generous guard against quadratic rules)."""
    big = make_shape("f32", [1] * 10000)
    start = time.perf_counter()
    infer_shape("transpose", [big], {"dimensions": tuple(reversed(range(10000)))})
    infer_shape("reduce", [big, S("f32[]")], {"dimensions": tuple(range(0, 10000, 2)), "to_apply": "add"},
                {"add": ADD})
    infer_shape("concatenate", [S("f32[1,2]")] * 5000, {"dimensions": (0,)})
    infer_shape("tuple", [S("f32[1,2]")] * 5000)
    assert time.perf_counter() - start < 1.0


def test_an_instructions_attributes_can_be_given_as_they_are() -> None:
    """HloInstruction.attributes (raw text, read with typed()) works like the dict of typed values."""
    from xlashapes import parse_instruction

    ins = parse_instruction("r = f32[2,5]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}")
    result = infer_shape("dot", [S("f32[2,3]"), S("f32[3,5]")], ins.attributes)
    assert result.equal(ins.shape, ignore_layout=True)
    bad = parse_instruction("r = f32[2] transpose(a), dimensions={1,0}").attributes
    with pytest.raises(ShapeError, match="permutation"):
        infer_shape("transpose", [S("f32[2]")], bad)


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_check_shape_accepts_what_infer_shape_gives(data: st.DataObject) -> None:
    """For every generated case with an inferred shape, check_shape accepts that shape (and rejects another)."""
    from oracle_inference import FAMILIES

    case = data.draw(st.sampled_from(sorted(FAMILIES)).flatmap(lambda family: FAMILIES[family]))
    inferred = case.ours()
    if isinstance(inferred, ShapeError) or case.opcode in ("sort", "after-all", "add-dependency", "broadcast"):
        return
    other = S("token[]") if not inferred.is_token else S("f32[]")
    assert case.check(str(inferred)) is None
    assert isinstance(case.check(str(other)), ShapeError)
