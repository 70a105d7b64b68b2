"""Broadcasting (issue 5): XLA's broadcasting document as tests, errors, dynamic shapes, lowering to HLO.

The values of the element-wise ops and their differential tests against JAX and XLA:CPU are in test_ops.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes import broadcast as xb
from xlashapes import ops

bshape = xb.broadcast_shape

# ----------------------------------------------------------------------------------------------------
# The broadcasting document, example by example
# ----------------------------------------------------------------------------------------------------

X23 = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
V789 = np.array([7, 8, 9], np.int32)


def test_doc_matrix_plus_vector_broadcast_dimension_1() -> None:
    assert bshape((2, 3), (3,), broadcast_dimensions=(1,)) == (2, 3)
    expected = [[8, 10, 12], [11, 13, 15]]
    np.testing.assert_array_equal(ops.add(X23, V789, broadcast_dimensions=(1,)), expected)


def test_doc_vector_plus_matrix_the_other_way_round() -> None:
    assert bshape((3,), (2, 3), broadcast_dimensions=(1,)) == (2, 3)
    np.testing.assert_array_equal(ops.add(V789, X23, (1,)), [[8, 10, 12], [11, 13, 15]])
    np.testing.assert_array_equal(ops.subtract(V789, X23, (1,)), [[6, 6, 6], [3, 3, 3]])


def test_doc_scalar_broadcasts_without_dimensions() -> None:
    assert bshape((2, 3), ()) == (2, 3) and bshape((), (2, 3)) == (2, 3)
    np.testing.assert_array_equal(ops.add(X23, np.int32(7)), [[8, 9, 10], [11, 12, 13]])
    np.testing.assert_array_equal(ops.add(np.int32(7), X23), [[8, 9, 10], [11, 12, 13]])


def test_doc_vector_without_broadcast_dimensions_is_invalid() -> None:
    with pytest.raises(xs.ShapeError, match="different ranks") as info:
        bshape((2, 3), (3,))
    message = str(info.value)
    assert "(2, 3)" in message and "(3,)" in message and "broadcast_dimensions=(1,)" in message
    for lhs, rhs in (("f32[3,2]", "f32[3]"), ("f32[3]", "f32[3,2]")):  # each rank named beside its operand
        with pytest.raises(xs.ShapeError, match=r"f32\[3,2\] rank 2, f32\[3\] rank 1"):
            xs.broadcast_shape(lhs, rhs)
    with pytest.raises(xs.ShapeError, match="different ranks"):
        ops.add(X23, V789)


def test_doc_3x3_matrix_plus_vector_dimension_1_replicates_rows() -> None:
    x = np.zeros((3, 3), np.int32)
    np.testing.assert_array_equal(ops.add(x, V789, (1,)), [[7, 8, 9]] * 3)


def test_doc_3x3_matrix_plus_vector_dimension_0_replicates_columns() -> None:
    x = np.zeros((3, 3), np.int32)
    np.testing.assert_array_equal(ops.add(x, V789, (0,)), [[7, 7, 7], [8, 8, 8], [9, 9, 9]])


def test_doc_2x3_matrix_with_vector_dimension_0_is_invalid() -> None:
    with pytest.raises(xs.ShapeError) as info:
        bshape((2, 3), (3,), broadcast_dimensions=(0,))
    message = str(info.value)
    assert "(2, 3)" in message and "(3,)" in message and "dimension 0" in message
    assert "size 3" in message and "size 2" in message


def test_doc_2x3x4_cuboid_with_3x4_matrix_dimensions_1_2() -> None:
    assert bshape((2, 3, 4), (3, 4), broadcast_dimensions=(1, 2)) == (2, 3, 4)
    cuboid = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4) * 100
    np.testing.assert_array_equal(ops.add(cuboid, matrix, (1, 2)), cuboid + matrix[None])


MNPQ = (2, 3, 4, 5)


@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_doc_mnpq_vector_t_matches_each_dimension(dim: int) -> None:
    t = MNPQ[dim]
    assert bshape(MNPQ, (t,), broadcast_dimensions=(dim,)) == MNPQ
    array = np.arange(math.prod(MNPQ), dtype=np.int32).reshape(MNPQ)
    vector = np.arange(t, dtype=np.int32) * 1000
    placed = [1, 1, 1, 1]
    placed[dim] = t
    np.testing.assert_array_equal(ops.add(array, vector, (dim,)), array + vector.reshape(placed))


@pytest.mark.parametrize("dims", [(2, 3), (1, 2), (0, 3), (0, 1), (1, 3)])
def test_doc_mnpq_matrix_txv_matches_a_pair_of_dimensions(dims: tuple[int, int]) -> None:
    tv = (MNPQ[dims[0]], MNPQ[dims[1]])
    assert bshape(MNPQ, tv, broadcast_dimensions=dims) == MNPQ
    array = np.arange(math.prod(MNPQ), dtype=np.int64).reshape(MNPQ)
    matrix = np.arange(math.prod(tv), dtype=np.int64).reshape(tv) * 1000
    placed = [1, 1, 1, 1]
    placed[dims[0]], placed[dims[1]] = tv
    np.testing.assert_array_equal(ops.add(matrix, array, dims), matrix.reshape(placed) + array)


def test_doc_mnpq_v_to_n_and_t_to_p_is_out_of_order() -> None:
    with pytest.raises(xs.ShapeError, match="strictly increasing") as info:
        bshape(MNPQ, (MNPQ[2], MNPQ[1]), broadcast_dimensions=(2, 1))
    assert "(2, 3, 4, 5)" in str(info.value) and "(4, 3)" in str(info.value)


def test_doc_mnpq_one_dimension_matched_twice_is_illegal() -> None:
    with pytest.raises(xs.ShapeError, match="matched twice") as info:
        bshape((2, 4, 4, 5), (4, 4), broadcast_dimensions=(2, 2))
    assert "dimension 2 of (2, 4, 4, 5)" in str(info.value) and "(4, 4)" in str(info.value)


@pytest.mark.parametrize(
    ("lhs", "rhs", "result"),
    [((2, 1), (2, 3), (2, 3)), ((1, 2, 5), (7, 2, 5), (7, 2, 5)), ((7, 2, 5), (7, 1, 5), (7, 2, 5))],
)
def test_doc_degenerate_examples(lhs: tuple[int, ...], rhs: tuple[int, ...], result: tuple[int, ...]) -> None:
    assert bshape(lhs, rhs) == result == bshape(rhs, lhs)
    assert bshape(lhs, rhs, tuple(range(len(lhs)))) == result  # the identity is allowed too


def test_doc_degenerate_7x2x5_and_7x2x6_are_incompatible() -> None:
    with pytest.raises(xs.ShapeError) as info:
        bshape((7, 2, 5), (7, 2, 6))
    message = str(info.value)
    assert "(7, 2, 5)" in message and "(7, 2, 6)" in message and "dimension 2" in message


def test_doc_outer_operation() -> None:
    assert bshape((2, 1), (1, 3)) == (2, 3)
    column = np.array([[1], [2]], np.float32)
    row = np.array([[10, 20, 30]], np.float32)
    np.testing.assert_array_equal(ops.add(column, row), [[11, 21, 31], [12, 22, 32]])
    np.testing.assert_array_equal(ops.multiply(column, row), [[10, 20, 30], [20, 40, 60]])


def test_doc_composition_vector_4_plus_matrix_1x2() -> None:
    assert bshape((4,), (1, 2), broadcast_dimensions=(0,)) == (4, 2)
    vector = np.array([1, 2, 3, 4], np.int32)
    matrix = np.array([[5, 6]], np.int32)
    np.testing.assert_array_equal(ops.add(vector, matrix, (0,)), [[6, 7], [7, 8], [8, 9], [9, 10]])


def test_doc_composition_1x2_plus_4x3x1() -> None:
    assert bshape((1, 2), (4, 3, 1), broadcast_dimensions=(1, 2)) == (4, 3, 2)
    matrix = np.array([[5, 6]], np.int32)
    cuboid = np.arange(12, dtype=np.int32).reshape(4, 3, 1) * 10
    result = ops.add(matrix, cuboid, (1, 2))
    assert result.shape == (4, 3, 2)
    for i, j, k in np.ndindex(4, 3, 2):
        assert result[i, j, k] == matrix[0, k] + cuboid[i, j, 0]


@pytest.mark.parametrize(
    ("small", "large", "dims", "result"),
    [((), (2, 3), (), (2, 3)), ((3,), (4, 3), (1,), (4, 3)), ((2, 3), (2, 3, 4), (0, 1), (2, 3, 4)),
     ((2, 1), (2, 3, 4), (0, 2), (2, 3, 4)), ((2, 3), (2, 1, 4), (0, 1), (2, 3, 4))],
)
def test_shape_inference_comment_table(small: Any, large: Any, dims: Any, result: Any) -> None:
    """The examples in the comment of XLA's ShapeInference::InferInDimBroadcastShape (after degenerate)."""
    assert bshape(small, large, dims) == result == bshape(large, small, dims)


@pytest.mark.parametrize(("small", "large", "dims"), [((3,), (4, 3), (0,)), ((2, 1), (2, 3, 4), (1, 2))])
def test_shape_inference_comment_invalid_broadcasts(small: Any, large: Any, dims: Any) -> None:
    with pytest.raises(xs.ShapeError, match="matched sizes must be equal"):
        bshape(small, large, dims)


# ----------------------------------------------------------------------------------------------------
# Shapes, text and dynamic dimensions
# ----------------------------------------------------------------------------------------------------


def test_shapes_and_text_give_a_shape_with_the_default_layout() -> None:
    lhs = xs.make_shape("bf16", [2, 3], minor_to_major=[0, 1])
    result = bshape(lhs, "bf16[3]{0}", broadcast_dimensions=[1])
    assert isinstance(result, xs.Shape)
    assert str(result) == "bf16[2,3]{1,0}"
    assert str(bshape("f32[]", "f32[2,1,3]")) == "f32[2,1,3]{2,1,0}"


def test_element_types_must_agree() -> None:
    with pytest.raises(xs.ShapeError, match="different element types") as info:
        bshape("f32[2,3]", "s32[3]", [1])
    assert "f32[2,3]" in str(info.value) and "s32[3]" in str(info.value)
    with pytest.raises(xs.ShapeError, match="different element types"):
        ops.add(np.ones(3, np.float32), np.ones(3, np.float64))
    with pytest.raises(xs.ShapeError, match="different element types"):
        ops.add(np.ones(3, ml_dtypes.bfloat16), np.ones(3, np.float16))


@pytest.mark.parametrize(
    ("lhs", "rhs", "dims", "result"),
    [
        ("f32[1]", "f32[<=5]", (), "f32[<=5]"),
        ("f32[<=5]", "f32[1]", (), "f32[<=5]"),
        ("f32[1]", "f32[?]", (), "f32[?]"),
        ("f32[?]", "f32[1]", (), "f32[?]"),
        ("f32[3]", "f32[<=3]", (), "f32[<=3]"),
        ("f32[<=3]", "f32[<=3]", (), "f32[<=3]"),
        ("f32[<=1]", "f32[1]", (), "f32[<=1]"),
        ("f32[?]", "f32[?]", (), "f32[?]"),
        ("f32[5]", "f32[?]", (), "f32[5]"),
        ("f32[?]", "f32[5]", (), "f32[5]"),
        ("f32[<=5]", "f32[?]", (), "f32[<=5]"),
        ("f32[?]", "f32[<=5]", (), "f32[<=5]"),
        ("f32[<=1,2]", "f32[1,1]", (), "f32[1,2]"),
        ("f32[1,1]", "f32[<=1,2]", (), "f32[<=1,2]"),
        ("f32[2,?]", "f32[?]", (1,), "f32[2,?]"),
        ("f32[2,?]", "f32[1]", (1,), "f32[2,?]"),
        ("f32[2,<=5]", "f32[5]", (1,), "f32[2,<=5]"),
        ("f32[2,1]", "f32[<=4]", (1,), "f32[2,<=4]"),
        ("f32[<=2,3]", "f32[]", (), "f32[<=2,3]"),
    ],
)
def test_dynamic_dimensions_combine_as_in_xla_shape_inference(lhs: str, rhs: str, dims: Any, result: str) -> None:
    """XLA's InferDegenerateDimensionBroadcastShape / InferInDimBroadcastShape, read from its source.

    jaxlib exposes no XlaBuilder, so these are checked against the C++ code, not run through XLA.
    """
    assert xb.broadcast_shape(lhs, rhs, dims) == xs.parse_shape(result).with_default_layouts()


@pytest.mark.parametrize(
    ("lhs", "rhs", "dims", "message"),
    [
        ("f32[<=5]", "f32[3]", (), "dimension 0 has size <=5 in f32[<=5] and 3 in f32[3]"),
        ("f32[2,?]", "f32[3]", (1,), "dimension 1 of f32[2,?] has size ?"),
        ("f32[2,5]", "f32[<=1]", (1,), "differ in dynamism"),
    ],
)
def test_dynamic_dimension_errors(lhs: str, rhs: str, dims: Any, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message.replace("[", r"\[").replace("?", r"\?")):
        xb.broadcast_shape(lhs, rhs, dims)


# ----------------------------------------------------------------------------------------------------
# Every illegal input is a ShapeError or ParseError with a useful message
# ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lhs", "rhs", "dims", "message"),
    [
        ((2, 3), (2, 3), (1, 0), "must be empty or the identity"),
        ((2, 3), (3,), (2,), "out of range"),
        ((2, 3), (3,), (-1,), "negative"),
        ((2, 3), (3,), (0, 1), "has 2 entries but the lower-rank operand"),
        ((2, 3), (), (0,), "has 1 entries"),
        ((2, 3), (3,), (True,), "must be an integer"),
        ((2, 3), (3,), "1", "must be a sequence"),
        ((2, 3), (3,), 1, "must be a sequence"),
        ((2, 3), (3,), (1.0,), "must be an integer"),
        ((True, 3), (3,), (1,), "must be an integer"),
        ((2, -3), (3,), (1,), "negative size"),
        ((2, 2**63), (3,), (1,), "int64"),
        (None, (3,), (), "must be a sequence"),
        (3, (3,), (), "must be a sequence"),
        ((2, 3), "f32[3]", (1,), "both operands as shapes"),
        ("(f32[2], s32[])", "f32[2]", (), "a tuple"),
        ("token[]", "f32[2]", (), "token"),
        (xs.tuple_shape([]), "f32[2]", (), "a tuple"),
        (np.zeros((2, 3)), (3,), (1,), "NumPy array"),
    ],
)
def test_illegal_inputs_raise_shape_error(lhs: Any, rhs: Any, dims: Any, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        bshape(lhs, rhs, dims)


def test_bad_shape_text_is_a_parse_error() -> None:
    with pytest.raises(xs.ParseError):
        bshape("f32[2,", "f32[2]")
    with pytest.raises(xs.ParseError):
        xb.lower_binary("add", "F32[2]", "f32[2]")


def test_huge_shapes_are_fine_but_huge_results_are_refused_before_allocating() -> None:
    big = 2**62
    assert bshape((big, 1), (1, big)) == (big, big)
    column = np.zeros((1_000_000, 1), np.float32)
    row = np.zeros((1, 1_000_000), np.float32)
    start = time.perf_counter()
    with pytest.raises(xs.ShapeError, match="more than the limit") as info:
        ops.add(column, row)
    assert time.perf_counter() - start < 1.0
    assert "1000000000000 elements" in str(info.value)


def test_element_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.ones((4, 1), np.int32)
    y = np.ones((1, 4), np.int32)
    assert ops.add(x, y, max_elements=16).shape == (4, 4)
    with pytest.raises(xs.ShapeError, match="limit of 15"):
        ops.add(x, y, max_elements=15)
    monkeypatch.setattr(ops, "DEFAULT_MAX_ELEMENTS", 10)
    with pytest.raises(xs.ShapeError, match="limit of 10"):
        ops.add(x, y)
    for bad in (-1, True, 2.5, "9"):
        with pytest.raises(xs.ShapeError, match="max_elements"):
            ops.add(x, y, max_elements=bad)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: ops.binary_op("plus", np.ones(2), np.ones(2)), "unknown binary op"),
        (lambda: ops.binary_op(3, np.ones(2), np.ones(2)), "must be a name"),
        (lambda: ops.binary_op("compare", np.ones(2), np.ones(2)), "needs direction"),
        (lambda: ops.binary_op("compare", np.ones(2), np.ones(2), direction="LESS"), "unknown comparison"),
        (lambda: ops.binary_op("compare", np.ones(2), np.ones(2), direction=1), "unknown comparison"),
        (lambda: ops.binary_op("add", np.ones(2), np.ones(2), direction="LT"), "not compare"),
        (lambda: ops.subtract(np.ones(2, bool), np.ones(2, bool)), "pred"),
        (lambda: ops.power(np.ones(2, bool), np.ones(2, bool)), "pred"),
        (lambda: ops.shift_left(np.ones(2, np.float32), np.ones(2, np.float32)), "needs integers"),
        (lambda: ops.shift_left(np.ones(2, bool), np.ones(2, bool)), "pred"),
        (lambda: ops.and_(np.ones(2, np.float32), np.ones(2, np.float32)), "pred or integers"),
        (lambda: ops.atan2(np.ones(2, np.int32), np.ones(2, np.int32)), "real floating"),
        (lambda: ops.maximum(np.ones(2, np.complex64), np.ones(2, np.complex64)), "complex"),
        (lambda: ops.compare(np.ones(2, np.complex64), np.ones(2, np.complex64), "LT"), "complex"),
        (lambda: ops.add(np.ones(2, np.float32), 1.0), "Python float"),
        (lambda: ops.add([1.0, 2.0], np.ones(2)), "must be a NumPy array"),
        (lambda: ops.add(np.array(["a"]), np.array(["b"])), "no XLA element type"),
        (lambda: ops.add(np.array([None]), np.array([None])), "no XLA element type"),
        (lambda: ops.add(np.ones(3, np.float32), np.ones(2, np.float32)), "cannot be broadcast"),
        (lambda: xb.binary_op_shape("add", (2, 3), "f32[3]", [1]), "no element type"),
        (lambda: xb.lower_binary("add", "f32[2,?]", "f32[1]", [1]), "unbounded"),
        (lambda: xb.lower_binary("add", "f32[<=1,3]", "f32[2,3]"), "dynamic size 1"),
    ],
)
def test_bad_operations_raise_shape_error(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        call()


def test_op_names_accept_xla_and_python_spellings() -> None:
    assert ops.canonical_op("Shift_Right_Logical") == "shift-right-logical"
    assert ops.canonical_op("Max") == "maximum" and ops.canonical_op("rem") == "remainder"
    assert ops.canonical_direction("compare", " le ") == "LE"


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=12),
    st.binary(max_size=4), st.lists(st.one_of(st.integers(-2, 5), st.booleans(), st.none()), max_size=4),
    st.sampled_from(["f32[2,3]", "f32[3]", "s32[]", "(f32[2])", "token[]", "f32[?,2]", "f32[<=2,1]", "F32[2]",
                     xs.tuple_shape([]), np.zeros(2), np.int64(2), (2**63,), (1, 2**63 - 1)]),
)


@settings(max_examples=examples(400), deadline=None)
@given(JUNK, JUNK, JUNK)
def test_fuzzed_inputs_only_raise_shape_or_parse_errors(lhs: Any, rhs: Any, dims: Any) -> None:
    for call in (lambda: bshape(lhs, rhs, dims), lambda: xb.binary_op_shape("add", lhs, rhs, dims),
                 lambda: xb.lower_binary("multiply", lhs, rhs, dims)):
        try:
            call()
        except (xs.ShapeError, xs.ParseError):
            pass


ARRAY_JUNK = st.one_of(
    JUNK, st.sampled_from([np.ones(2, np.float32), np.ones((2, 1), np.int8), np.array(3, np.int8),
                           np.ones(2, ">f4"), np.array([1, 2], dtype=object), np.ones(0, ml_dtypes.bfloat16)]),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.sampled_from([*ops.BINARY_OPS, "bogus", None]), ARRAY_JUNK, ARRAY_JUNK, JUNK,
       st.sampled_from([None, "LT", "xx", 3]))
def test_fuzzed_arrays_only_raise_shape_errors(op: Any, x: Any, y: Any, dims: Any, direction: Any) -> None:
    try:
        result = ops.binary_op(op, x, y, dims, direction)
    except xs.ShapeError:
        return
    assert isinstance(result, np.ndarray)


def test_non_native_byte_order_is_accepted() -> None:
    x = np.array([1.5, 2.5], ">f4")
    result = ops.add(x, np.array([1, 1], np.float32))
    assert result.dtype == np.float32 and result.tolist() == [2.5, 3.5]


# ----------------------------------------------------------------------------------------------------
# Properties
# ----------------------------------------------------------------------------------------------------


@st.composite
def broadcast_cases(draw: st.DrawFn, max_rank: int = 4, max_size: int = 4) -> tuple[Any, ...]:
    """(lhs dims, rhs dims, broadcast_dimensions, result dims), valid by construction."""
    rank = draw(st.integers(0, max_rank))
    out = draw(st.lists(st.integers(0, max_size), min_size=rank, max_size=rank))
    big = [draw(st.sampled_from([size, 1])) for size in out]
    small_rank = draw(st.integers(0, rank))
    dims = sorted(draw(st.lists(st.sampled_from(range(rank)), unique=True, min_size=small_rank,
                                max_size=small_rank))) if rank else []
    small = [draw(st.sampled_from([out[d], 1])) for d in dims]
    for j in range(rank):
        if big[j] != out[j] and not (j in dims and small[dims.index(j)] == out[j]):
            big[j] = out[j]
    if small_rank == rank and not draw(st.booleans()):
        dims = []  # equal ranks: the identity and no broadcast_dimensions are both allowed
    lhs, rhs = (tuple(small), tuple(big)) if draw(st.booleans()) else (tuple(big), tuple(small))
    return lhs, rhs, tuple(dims), tuple(out)


@settings(max_examples=examples(500), deadline=None)
@given(broadcast_cases())
def test_result_shape_is_symmetric_and_as_constructed(case: tuple[Any, ...]) -> None:
    lhs, rhs, dims, out = case
    assert bshape(lhs, rhs, dims) == out == bshape(rhs, lhs, dims)
    text = str(bshape(f"s8[{','.join(map(str, lhs))}]", f"s8[{','.join(map(str, rhs))}]", dims))
    assert text.startswith(f"s8[{','.join(map(str, out))}]")


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 1, 2, 3]), st.sampled_from([0, 1, 1, 2, 3])), max_size=4))
def test_equal_rank_broadcasting_agrees_with_numpy(pairs: list[tuple[int, int]]) -> None:
    a, b = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
    try:
        expected: tuple[int, ...] | None = np.broadcast_shapes(a, b)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(xs.ShapeError, match="cannot be broadcast"):
            bshape(a, b)
    else:
        assert bshape(a, b) == expected == bshape(b, a)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(0, 4), max_size=4), st.integers(-1000, 1000), st.integers(0, 2**32 - 1),
       st.sampled_from([np.int32, np.float32, np.uint8]))
def test_scalar_broadcast_matches_numpy(dims: list[int], scalar: int, seed: int, dtype: Any) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, dims).astype(dtype)
    s = np.array(scalar).astype(dtype)[()]
    assert bshape(dims, ()) == np.broadcast_shapes(tuple(dims), ()) == bshape((), dims)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(ops.add(x, s), x + s)
        np.testing.assert_array_equal(ops.multiply(s, x), s * x)
        np.testing.assert_array_equal(ops.compare(x, s, "GE"), x >= s)


# ----------------------------------------------------------------------------------------------------
# Lowering to HLO
# ----------------------------------------------------------------------------------------------------


def test_lowering_of_the_document_example() -> None:
    assert xb.lower_binary("add", "f32[2,3]", "f32[3]", broadcast_dimensions=(1,)) == (
        "HloModule xlashapes_add\n\nENTRY main {\n"
        "  lhs = f32[2,3]{1,0} parameter(0)\n"
        "  rhs = f32[3]{0} parameter(1)\n"
        "  rhs.in_dim = f32[2,3]{1,0} broadcast(rhs), dimensions={1}\n"
        "  ROOT result = f32[2,3]{1,0} add(lhs, rhs.in_dim)\n}\n")


def test_lowering_of_the_composition_reshapes_degenerate_dimensions_away() -> None:
    text = xb.lower_binary("compare", "f32[1,2]", "f32[4,3,1]", (1, 2), direction="gt")
    assert text.splitlines()[3:] == [
        "  lhs = f32[1,2]{1,0} parameter(0)",
        "  rhs = f32[4,3,1]{2,1,0} parameter(1)",
        "  lhs.in_dim = f32[4,1,2]{2,1,0} broadcast(lhs), dimensions={1,2}",
        "  lhs.reshape = f32[4,2]{1,0} reshape(lhs.in_dim)",
        "  lhs.broadcast = f32[4,3,2]{2,1,0} broadcast(lhs.reshape), dimensions={0,2}",
        "  rhs.reshape = f32[4,3]{1,0} reshape(rhs)",
        "  rhs.broadcast = f32[4,3,2]{2,1,0} broadcast(rhs.reshape), dimensions={0,1}",
        "  ROOT result = pred[4,3,2]{2,1,0} compare(lhs.broadcast, rhs.broadcast), direction=GT",
        "}",
    ]


def test_lowering_of_a_scalar_and_of_equal_shapes() -> None:
    text = xb.lower_binary("multiply", "s32[]", "s32[2,3]")
    assert "  lhs.broadcast = s32[2,3]{1,0} broadcast(lhs), dimensions={}" in text
    text = xb.lower_binary("add", xs.make_shape("f32", [2, 3], [0, 1]), "f32[2,3]")
    assert "broadcast" not in text and "ROOT result = f32[2,3]{1,0} add(lhs, rhs)" in text
    assert "lhs = f32[2,3]{0,1} parameter(0)" in text


LOWERING_CASES = [
    ("add", "f32[2,3]", "f32[3]", (1,), None),
    ("add", "f32[3]", "f32[2,3]", (1,), None),
    ("add", "f32[3,3]", "f32[3]", (0,), None),
    ("subtract", "s32[4]", "s32[1,2]", (0,), None),
    ("multiply", "bf16[1,2]", "bf16[4,3,1]", (1, 2), None),
    ("maximum", "f32[2,1]", "f32[1,3]", (), None),
    ("compare", "u8[]", "u8[2,3,4]", (), "LE"),
    ("power", "c64[2,1,4]", "c64[2,3]", (0, 1), None),
    ("shift-right-arithmetic", "s4[2,3,4,5]", "s4[4,5]", (2, 3), None),
    ("and", "pred[2,1]", "pred[2,3]", (), None),
    ("atan2", "f64[0,1]", "f64[1,3]", (), None),
    ("add", "f32[<=4,3]", "f32[3]", (1,), None),
    ("add", "f32[2,<=3]", "f32[2,1]", (), None),
    ("divide", "f32[2,3]{0,1}", "f32[3]{0}", (1,), None),
    ("remainder", "s64[1,1,1]", "s64[2,1,3]", (), None),
    ("multiply", "s4[3,1,0,1]", "s4[1,0,<=1]", (1, 2, 3), None),  # issue 15: problems() rejects this lowering
]


@pytest.mark.parametrize(("op", "lhs", "rhs", "dims", "direction"), LOWERING_CASES)
def test_lowered_hlo_parses_in_xla(xla: Any, op: str, lhs: str, rhs: str, dims: Any, direction: Any) -> None:
    text = xb.lower_binary(op, lhs, rhs, dims, direction)
    answer = xla.parse_module(text)
    assert answer["ok"], answer
    printed = answer["text"]
    result = xb.binary_op_shape(op, lhs, rhs, dims, direction)
    assert f"ROOT %result = {result} " in printed
    assert ("broadcast(" in printed) == ("broadcast(" in text)


def test_lowering_declares_the_whole_ops_shape_as_xla_builder_does() -> None:
    """Issue 15: ``multiply(s4[3,1,0,1], s4[1,0,<=1])`` with dimensions {1,2,3} declares ``s4[3,1,0,1]``.

    That is XLA's shape inference for the whole op (InDim gives ``[3,1,0,<=1]``, then the degenerate rule takes the
    static 1 of the lhs), which XlaBuilder declares on the instruction. The instruction's own operands,
    ``s4[3,1,0,1]`` and ``s4[3,1,0,<=1]``, infer ``s4[3,1,0,<=1]``; XLA's verifier accepts the declared shape because
    it compares with ``ShapeUtil::Compatible``, which ignores dynamism (and XLA's parser takes the module: see
    test_lowered_hlo_parses_in_xla). So the lowering is right; a checker must compare sizes, not dynamism.
    """
    text = xb.lower_binary("multiply", "s4[3,1,0,1]", "s4[1,0,<=1]", [1, 2, 3])
    assert text.splitlines()[-2] == "  ROOT result = s4[3,1,0,1]{3,2,1,0} multiply(lhs, rhs.in_dim)"
    assert "  rhs.in_dim = s4[3,1,0,<=1]{3,2,1,0} broadcast(rhs), dimensions={1,2,3}" in text
    whole = xb.binary_op_shape("multiply", "s4[3,1,0,1]", "s4[1,0,<=1]", [1, 2, 3])
    operands = xb.broadcast_shape("s4[3,1,0,1]", "s4[3,1,0,<=1]")
    assert str(whole) == "s4[3,1,0,1]{3,2,1,0}" and str(operands) == "s4[3,1,0,<=1]{3,2,1,0}"
    assert whole.dimensions == operands.dimensions and whole.element_type == operands.element_type


@pytest.mark.parametrize(
    ("array", "sizes", "dims", "expected"),
    [
        (np.array([7, 8, 9]), (2, 3), (1,), [[7, 8, 9], [7, 8, 9]]),
        (np.array([7, 8]), (2, 3), (0,), [[7, 7, 7], [8, 8, 8]]),
        (np.array(5), (2,), (), [5, 5]),
        (np.array([[1], [2]]), (2, 3), (), [[1, 1, 1], [2, 2, 2]]),
        (np.array([[5, 6]]), (4, 3, 2), (1, 2), [[[5, 6]] * 3] * 4),
    ],
)
def test_broadcast_array_views_an_operand_at_the_result_size(array: Any, sizes: Any, dims: Any, expected: Any) -> None:
    view = xb.broadcast_array(array, sizes, dims)
    assert view.tolist() == expected and not view.flags.writeable


@pytest.mark.parametrize(
    ("array", "sizes", "dims"),
    [(np.ones(3), (2, 3), (0,)), (np.ones(3), (2, 3), ()), (np.ones(3), (2, 3), (2,)), (np.ones((2, 3)), (3,), ()),
     (np.ones(3), (2, 3), "1"), (np.ones(3), (2, -3), (1,)), ([1, 2, 3], (2, 3), (1,)), (None, (2,), ())],
)
def test_broadcast_array_refuses_what_does_not_fit(array: Any, sizes: Any, dims: Any) -> None:
    with pytest.raises(xs.ShapeError):
        xb.broadcast_array(array, sizes, dims)


def test_opcode_names_keep_their_broadcast_import_path() -> None:
    """hlo.py and the CLI import these from xlashapes.broadcast; their home is xlashapes.ops."""
    assert xb.BINARY_OPS is ops.BINARY_OPS and xb.COMPARISON_DIRECTIONS is ops.COMPARISON_DIRECTIONS
    assert xb.canonical_op is ops.canonical_op


@settings(max_examples=examples(100), deadline=None)
@given(broadcast_cases(max_rank=3), st.integers(0, 2**32 - 1))
def test_broadcast_array_matches_an_index_by_index_reference(case: tuple[Any, ...], seed: int) -> None:
    """Each element of the view is the operand element its broadcast dimensions point at (1-sized ones repeat)."""
    lhs, rhs, dims, out = case
    rng = np.random.default_rng(seed)
    for operand in (lhs, rhs):
        array = rng.integers(0, 100, operand)
        view = xb.broadcast_array(array, out, dims if len(operand) < len(out) else ())
        assert view.shape == out
        own = dims if len(operand) < len(out) else tuple(range(len(out)))
        for index in np.ndindex(*out):
            source = tuple(index[d] if array.shape[i] != 1 else 0 for i, d in enumerate(own))
            assert view[index] == array[source]

