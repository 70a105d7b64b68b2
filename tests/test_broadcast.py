"""Broadcasting (issue 5): XLA's broadcasting document as tests, errors, dynamic shapes, and differential tests.

Differential tests: ``binary_op`` against JAX (``lax.broadcast_in_dim`` + ``lax.<op>``, XLA:CPU underneath), and
the HLO text of ``lower_binary`` parsed by XLA (``xla`` fixture) and compiled + run on XLA's CPU backend (a
worker process, like the parser oracle, so an XLA abort cannot take pytest down).
"""

from __future__ import annotations

import atexit
import base64
import math
import time
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlashapes as xs
from xla_oracle import WorkerProcess
from xlashapes import broadcast as xb

bshape = xb.broadcast_shape

# ----------------------------------------------------------------------------------------------------
# The broadcasting document, example by example
# ----------------------------------------------------------------------------------------------------

X23 = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
V789 = np.array([7, 8, 9], np.int32)


def test_doc_matrix_plus_vector_broadcast_dimension_1() -> None:
    assert bshape((2, 3), (3,), broadcast_dimensions=(1,)) == (2, 3)
    expected = [[8, 10, 12], [11, 13, 15]]
    np.testing.assert_array_equal(xb.add(X23, V789, broadcast_dimensions=(1,)), expected)


def test_doc_vector_plus_matrix_the_other_way_round() -> None:
    assert bshape((3,), (2, 3), broadcast_dimensions=(1,)) == (2, 3)
    np.testing.assert_array_equal(xb.add(V789, X23, (1,)), [[8, 10, 12], [11, 13, 15]])
    np.testing.assert_array_equal(xb.subtract(V789, X23, (1,)), [[6, 6, 6], [3, 3, 3]])


def test_doc_scalar_broadcasts_without_dimensions() -> None:
    assert bshape((2, 3), ()) == (2, 3) and bshape((), (2, 3)) == (2, 3)
    np.testing.assert_array_equal(xb.add(X23, np.int32(7)), [[8, 9, 10], [11, 12, 13]])
    np.testing.assert_array_equal(xb.add(np.int32(7), X23), [[8, 9, 10], [11, 12, 13]])


def test_doc_vector_without_broadcast_dimensions_is_invalid() -> None:
    with pytest.raises(xs.ShapeError, match="different ranks") as info:
        bshape((2, 3), (3,))
    message = str(info.value)
    assert "(2, 3)" in message and "(3,)" in message and "broadcast_dimensions=(1,)" in message
    with pytest.raises(xs.ShapeError, match="different ranks"):
        xb.add(X23, V789)


def test_doc_3x3_matrix_plus_vector_dimension_1_replicates_rows() -> None:
    x = np.zeros((3, 3), np.int32)
    np.testing.assert_array_equal(xb.add(x, V789, (1,)), [[7, 8, 9]] * 3)


def test_doc_3x3_matrix_plus_vector_dimension_0_replicates_columns() -> None:
    x = np.zeros((3, 3), np.int32)
    np.testing.assert_array_equal(xb.add(x, V789, (0,)), [[7, 7, 7], [8, 8, 8], [9, 9, 9]])


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
    np.testing.assert_array_equal(xb.add(cuboid, matrix, (1, 2)), cuboid + matrix[None])


MNPQ = (2, 3, 4, 5)


@pytest.mark.parametrize("dim", [0, 1, 2, 3])
def test_doc_mnpq_vector_t_matches_each_dimension(dim: int) -> None:
    t = MNPQ[dim]
    assert bshape(MNPQ, (t,), broadcast_dimensions=(dim,)) == MNPQ
    array = np.arange(math.prod(MNPQ), dtype=np.int32).reshape(MNPQ)
    vector = np.arange(t, dtype=np.int32) * 1000
    placed = [1, 1, 1, 1]
    placed[dim] = t
    np.testing.assert_array_equal(xb.add(array, vector, (dim,)), array + vector.reshape(placed))


@pytest.mark.parametrize("dims", [(2, 3), (1, 2), (0, 3), (0, 1), (1, 3)])
def test_doc_mnpq_matrix_txv_matches_a_pair_of_dimensions(dims: tuple[int, int]) -> None:
    tv = (MNPQ[dims[0]], MNPQ[dims[1]])
    assert bshape(MNPQ, tv, broadcast_dimensions=dims) == MNPQ
    array = np.arange(math.prod(MNPQ), dtype=np.int64).reshape(MNPQ)
    matrix = np.arange(math.prod(tv), dtype=np.int64).reshape(tv) * 1000
    placed = [1, 1, 1, 1]
    placed[dims[0]], placed[dims[1]] = tv
    np.testing.assert_array_equal(xb.add(matrix, array, dims), matrix.reshape(placed) + array)


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
    np.testing.assert_array_equal(xb.add(column, row), [[11, 21, 31], [12, 22, 32]])
    np.testing.assert_array_equal(xb.multiply(column, row), [[10, 20, 30], [20, 40, 60]])


def test_doc_composition_vector_4_plus_matrix_1x2() -> None:
    assert bshape((4,), (1, 2), broadcast_dimensions=(0,)) == (4, 2)
    vector = np.array([1, 2, 3, 4], np.int32)
    matrix = np.array([[5, 6]], np.int32)
    np.testing.assert_array_equal(xb.add(vector, matrix, (0,)), [[6, 7], [7, 8], [8, 9], [9, 10]])


def test_doc_composition_1x2_plus_4x3x1() -> None:
    assert bshape((1, 2), (4, 3, 1), broadcast_dimensions=(1, 2)) == (4, 3, 2)
    matrix = np.array([[5, 6]], np.int32)
    cuboid = np.arange(12, dtype=np.int32).reshape(4, 3, 1) * 10
    result = xb.add(matrix, cuboid, (1, 2))
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
        xb.add(np.ones(3, np.float32), np.ones(3, np.float64))
    with pytest.raises(xs.ShapeError, match="different element types"):
        xb.add(np.ones(3, ml_dtypes.bfloat16), np.ones(3, np.float16))


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
        xb.add(column, row)
    assert time.perf_counter() - start < 1.0
    assert "1000000000000 elements" in str(info.value)


def test_element_limit_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.ones((4, 1), np.int32)
    y = np.ones((1, 4), np.int32)
    assert xb.add(x, y, max_elements=16).shape == (4, 4)
    with pytest.raises(xs.ShapeError, match="limit of 15"):
        xb.add(x, y, max_elements=15)
    monkeypatch.setattr(xb, "DEFAULT_MAX_ELEMENTS", 10)
    with pytest.raises(xs.ShapeError, match="limit of 10"):
        xb.add(x, y)
    for bad in (-1, True, 2.5, "9"):
        with pytest.raises(xs.ShapeError, match="max_elements"):
            xb.add(x, y, max_elements=bad)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: xb.binary_op("plus", np.ones(2), np.ones(2)), "unknown binary op"),
        (lambda: xb.binary_op(3, np.ones(2), np.ones(2)), "must be a name"),
        (lambda: xb.binary_op("compare", np.ones(2), np.ones(2)), "needs direction"),
        (lambda: xb.binary_op("compare", np.ones(2), np.ones(2), direction="LESS"), "unknown comparison"),
        (lambda: xb.binary_op("compare", np.ones(2), np.ones(2), direction=1), "unknown comparison"),
        (lambda: xb.binary_op("add", np.ones(2), np.ones(2), direction="LT"), "not compare"),
        (lambda: xb.subtract(np.ones(2, bool), np.ones(2, bool)), "pred"),
        (lambda: xb.power(np.ones(2, bool), np.ones(2, bool)), "pred"),
        (lambda: xb.shift_left(np.ones(2, np.float32), np.ones(2, np.float32)), "needs integers"),
        (lambda: xb.shift_left(np.ones(2, bool), np.ones(2, bool)), "pred"),
        (lambda: xb.and_(np.ones(2, np.float32), np.ones(2, np.float32)), "pred or integers"),
        (lambda: xb.atan2(np.ones(2, np.int32), np.ones(2, np.int32)), "real floating"),
        (lambda: xb.maximum(np.ones(2, np.complex64), np.ones(2, np.complex64)), "complex"),
        (lambda: xb.compare(np.ones(2, np.complex64), np.ones(2, np.complex64), "LT"), "complex"),
        (lambda: xb.add(np.ones(2, np.float32), 1.0), "Python float"),
        (lambda: xb.add([1.0, 2.0], np.ones(2)), "must be a NumPy array"),
        (lambda: xb.add(np.array(["a"]), np.array(["b"])), "no XLA element type"),
        (lambda: xb.add(np.array([None]), np.array([None])), "no XLA element type"),
        (lambda: xb.add(np.ones(3, np.float32), np.ones(2, np.float32)), "cannot be broadcast"),
        (lambda: xb.binary_op_shape("add", (2, 3), "f32[3]", [1]), "no element type"),
        (lambda: xb.lower_binary("add", "f32[2,?]", "f32[1]", [1]), "unbounded"),
        (lambda: xb.lower_binary("add", "f32[<=1,3]", "f32[2,3]"), "dynamic size 1"),
    ],
)
def test_bad_operations_raise_shape_error(call: Callable[[], Any], message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        call()


def test_op_names_accept_xla_and_python_spellings() -> None:
    assert xb.canonical_op("Shift_Right_Logical") == "shift-right-logical"
    assert xb.canonical_op("Max") == "maximum" and xb.canonical_op("rem") == "remainder"
    assert xb.canonical_direction("compare", " le ") == "LE"


JUNK = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=12),
    st.binary(max_size=4), st.lists(st.one_of(st.integers(-2, 5), st.booleans(), st.none()), max_size=4),
    st.sampled_from(["f32[2,3]", "f32[3]", "s32[]", "(f32[2])", "token[]", "f32[?,2]", "f32[<=2,1]", "F32[2]",
                     xs.tuple_shape([]), np.zeros(2), np.int64(2), (2**63,), (1, 2**63 - 1)]),
)


@settings(max_examples=400, deadline=None)
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


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([*xb.BINARY_OPS, "bogus", None]), ARRAY_JUNK, ARRAY_JUNK, JUNK,
       st.sampled_from([None, "LT", "xx", 3]))
def test_fuzzed_arrays_only_raise_shape_errors(op: Any, x: Any, y: Any, dims: Any, direction: Any) -> None:
    try:
        result = xb.binary_op(op, x, y, dims, direction)
    except xs.ShapeError:
        return
    assert isinstance(result, np.ndarray)


def test_non_native_byte_order_is_accepted() -> None:
    x = np.array([1.5, 2.5], ">f4")
    result = xb.add(x, np.array([1, 1], np.float32))
    assert result.dtype == np.float32 and result.tolist() == [2.5, 3.5]


# ----------------------------------------------------------------------------------------------------
# Element-wise semantics: known answers (each one observed on XLA's CPU runtime, jaxlib 0.10.2)
# ----------------------------------------------------------------------------------------------------

I32_MIN = -(2**31)


@pytest.mark.parametrize(
    ("op", "dtype", "lhs", "rhs", "expected"),
    [
        ("divide", np.int32, [7, -7, 7, -7, 5, I32_MIN, 0], [2, 2, -2, -2, 0, -1, 0], [3, -3, -3, 3, -1, I32_MIN, -1]),
        ("remainder", np.int32, [7, -7, 7, -7, 5, I32_MIN, -5], [2, 2, -2, -2, 0, -1, 0], [1, -1, 1, -1, 5, 0, -5]),
        ("divide", np.uint32, [7, 5, 0], [2, 0, 0], [3, 2**32 - 1, 2**32 - 1]),
        ("remainder", np.uint32, [7, 5, 0], [2, 0, 0], [1, 5, 0]),
        ("power", np.int32, [2, -1, -1, 1, 2, 0, 0, -2, -3], [10, -1, -2, -5, -1, -1, 0, 3, -1],
         [1024, -1, 1, 1, 0, 0, 1, -8, 0]),
        ("power", np.uint8, [2, 3, 0, 255], [9, 5, 0, 2], [0, 243, 1, 1]),
        ("shift-left", np.int32, [1, 1, 1, -1, 1], [3, 31, 32, -1, 100], [8, I32_MIN, 0, 0, 0]),
        ("shift-right-arithmetic", np.int32, [-8, -8, 8, -8, 8], [1, 32, 32, -1, 31], [-4, -1, 0, -1, 0]),
        ("shift-right-logical", np.int32, [-8, -8, 8, -8], [1, 32, 28, -1], [2147483644, 0, 0, 0]),
        ("shift-right-arithmetic", np.uint8, [128, 200, 7], [1, 9, 1], [192, 255, 3]),
        ("shift-right-logical", np.int8, [-128, -1], [1, 7], [64, 1]),
        ("shift-left", ml_dtypes.int4, [1, 3, -1], [3, 2, 4], [-8, -4, 0]),
        ("add", np.int8, [127, -128], [1, -1], [-128, 127]),
        ("multiply", ml_dtypes.uint4, [15, 7], [15, 3], [1, 5]),
    ],
)
def test_integer_semantics_known_answers(op: str, dtype: Any, lhs: list[int], rhs: list[int],
                                         expected: list[int]) -> None:
    result = xb.binary_op(op, np.array(lhs).astype(dtype), np.array(rhs).astype(dtype))
    assert result.dtype == np.dtype(dtype)
    assert result.astype(np.int64).tolist() == np.array(expected).astype(dtype).astype(np.int64).tolist()


def test_pred_semantics() -> None:
    p = np.array([0, 0, 1, 1], bool)
    q = np.array([0, 1, 0, 1], bool)
    for op, expected in [("add", [0, 1, 1, 1]), ("maximum", [0, 1, 1, 1]), ("or", [0, 1, 1, 1]),
                         ("multiply", [0, 0, 0, 1]), ("minimum", [0, 0, 0, 1]), ("and", [0, 0, 0, 1]),
                         ("xor", [0, 1, 1, 0])]:
        result = xb.binary_op(op, p, q)
        assert result.dtype == np.bool_ and result.tolist() == [bool(v) for v in expected], op
    assert xb.compare(p, q, "LT").tolist() == [False, True, False, False]


def test_float_maximum_minimum_propagate_nan_and_order_signed_zeros() -> None:
    nan = np.nan
    a = np.array([nan, 1, nan, -0.0, 0.0, 1], np.float32)
    b = np.array([1, nan, nan, 0.0, -0.0, 2], np.float32)
    high, low = xb.maximum(a, b), xb.minimum(a, b)
    assert np.isnan(high[:3]).all() and np.isnan(low[:3]).all()
    assert high[3:].tolist() == [0.0, 0.0, 2.0] and not np.signbit(high[3:5]).any()
    assert low[3:].tolist() == [0.0, 0.0, 1.0] and np.signbit(low[3:5]).all()


def test_compare_gives_pred_with_ieee_semantics() -> None:
    a = np.array([np.nan, 1, np.nan, -0.0, 0.0, 1], np.float32)
    b = np.array([1, np.nan, np.nan, 0.0, -0.0, 2], np.float32)
    table = {"EQ": [0, 0, 0, 1, 1, 0], "NE": [1, 1, 1, 0, 0, 1], "LT": [0, 0, 0, 0, 0, 1],
             "LE": [0, 0, 0, 1, 1, 1], "GT": [0, 0, 0, 0, 0, 0], "GE": [0, 0, 0, 1, 1, 0]}
    for direction, expected in table.items():
        result = xb.compare(a, b, direction)
        assert result.dtype == np.bool_ and result.tolist() == [bool(v) for v in expected]


def test_float_remainder_is_fmod() -> None:
    a = np.array([5.5, -5.5, 5.5, 1, np.inf], np.float32)
    b = np.array([2, 2, -2, 0, 2], np.float32)
    result = xb.remainder(a, b)
    assert result[:3].tolist() == [1.5, -1.5, 1.5] and np.isnan(result[3:]).all()


def test_narrow_floats_round_once_from_f32() -> None:
    a = np.array([1, 256, 0.1], ml_dtypes.bfloat16)
    b = np.array([2**-9, 1, 0.2], ml_dtypes.bfloat16)
    expected = (a.astype(np.float32) + b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    result = xb.add(a, b)
    assert result.dtype == ml_dtypes.bfloat16
    assert result.tobytes() == expected.tobytes()


def test_nan_becomes_negative_zero_in_types_without_nan() -> None:
    """XLA:CPU converts NaN to -0.0 in f4e2m1fn (which has no NaN); ml_dtypes alone would keep NaN's sign."""
    zero = np.zeros(2, ml_dtypes.float4_e2m1fn)
    result = xb.divide(zero, zero)
    assert result.view(np.uint8).tolist() == [8, 8]


def test_complex_power_special_cases() -> None:
    x = np.array([0j, 1 + 1j, 1, 2], np.complex64)
    y = np.array([0j, 0j, 5 + 3j, 0.5], np.complex64)
    np.testing.assert_allclose(xb.power(x, y), [1, 1, 1, np.sqrt(2)], rtol=1e-6)


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


@settings(max_examples=500, deadline=None)
@given(broadcast_cases())
def test_result_shape_is_symmetric_and_as_constructed(case: tuple[Any, ...]) -> None:
    lhs, rhs, dims, out = case
    assert bshape(lhs, rhs, dims) == out == bshape(rhs, lhs, dims)
    text = str(bshape(f"s8[{','.join(map(str, lhs))}]", f"s8[{','.join(map(str, rhs))}]", dims))
    assert text.startswith(f"s8[{','.join(map(str, out))}]")


@settings(max_examples=300, deadline=None)
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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=4), st.integers(-1000, 1000), st.integers(0, 2**32 - 1),
       st.sampled_from([np.int32, np.float32, np.uint8]))
def test_scalar_broadcast_matches_numpy(dims: list[int], scalar: int, seed: int, dtype: Any) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(-100, 100, dims).astype(dtype)
    s = np.array(scalar).astype(dtype)[()]
    assert bshape(dims, ()) == np.broadcast_shapes(tuple(dims), ()) == bshape((), dims)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(xb.add(x, s), x + s)
        np.testing.assert_array_equal(xb.multiply(s, x), s * x)
        np.testing.assert_array_equal(xb.compare(x, s, "GE"), x >= s)


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


# ----------------------------------------------------------------------------------------------------
# Differential tests: values
# ----------------------------------------------------------------------------------------------------

INT_TYPES = ["s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "s4", "u4", "s2", "u2"]
FLOAT_TYPES = ["f16", "bf16", "f32", "f64", "f8e4m3fn", "f8e5m2"]
COMPLEX_TYPES = ["c64", "c128"]
ALL_OPS = list(xb.BINARY_OPS)


def _random_values(rng: np.random.Generator, etype: xs.ElementType, dims: tuple[int, ...], op: str,
                   side: str) -> np.ndarray[Any, Any]:
    dtype = etype.numpy_dtype
    if etype.kind == "pred":
        return rng.integers(0, 2, dims).astype(bool)
    if etype.is_integral:
        signed = etype.kind == "signed"
        low, high = (-(2 ** (etype.bits - 1)), 2 ** (etype.bits - 1) - 1) if signed else (0, 2**etype.bits - 1)
        if side == "rhs" and op in ("shift-left", "shift-right-arithmetic", "shift-right-logical"):
            low, high = max(low, -2), min(high, etype.bits + 2)
        if op == "power":
            # the exponent range where XLA:CPU's integer power is exact (it reads only 6 exponent bits)
            low, high = (max(low, -3), min(high, 63)) if side == "rhs" else (max(low, -4), min(high, 4))
        values = rng.integers(low, high, dims, endpoint=True, dtype=np.int64 if signed else np.uint64)
        special = np.array([0, 1, high, low] + ([-1] if signed else []), dtype=values.dtype)
        mask = rng.random(dims) < 0.2
        values = np.where(mask, rng.choice(special, dims), values)
        return values.astype(dtype)
    if etype.is_complex:
        return (rng.standard_normal(dims) + 1j * rng.standard_normal(dims)).astype(dtype)
    reals = rng.standard_normal(dims) * (2.0 if op == "power" else 8.0)
    special = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan])
    reals = np.where(rng.random(dims) < 0.1, rng.choice(special, dims), reals)
    return reals.astype(dtype)


def _same_values(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any], op: str, etype: xs.ElementType,
                 *, fused: bool = False) -> None:
    """Bit-exact, except a few ulps for transcendental ops, complex multiply/divide and (``fused``) divide.

    ``fused``: XLA:CPU turns ``x / broadcast(y)`` into ``x * broadcast(1 / y)``, which can be 1 ulp off.
    """
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    assert ours.shape == theirs.shape
    if ours.dtype == np.bool_ or etype.is_integral:
        np.testing.assert_array_equal(ours, theirs)
        return
    approximate = op in ("power", "atan2") or (etype.is_complex and op in ("multiply", "divide"))
    approximate = approximate or (fused and op == "divide")
    if etype.is_complex:
        parts = [(ours.real, theirs.real), (ours.imag, theirs.imag)]
    else:
        parts = [(ours.astype(np.float64), theirs.astype(np.float64))]
    eps = float(ml_dtypes.finfo(ours.real.dtype).eps)
    for a, b in parts:
        a, b = a.astype(np.float64), b.astype(np.float64)
        if approximate:
            np.testing.assert_allclose(a, b, rtol=16 * eps, atol=16 * eps, equal_nan=True)
            continue
        same = (a == b) | (np.isnan(a) & np.isnan(b))
        assert same.all(), (a[~same], b[~same])
        zeros = (a == 0) & (b == 0)
        assert (np.signbit(a[zeros]) == np.signbit(b[zeros])).all()


@st.composite
def value_cases(draw: st.DrawFn, types: list[str], ops: list[str]) -> tuple[Any, ...]:
    op = draw(st.sampled_from(ops))
    etype = xs.element_type(draw(st.sampled_from(types)))
    direction = draw(st.sampled_from(xb.COMPARISON_DIRECTIONS)) if op == "compare" else None
    try:
        xb.binary_op_shape(op, f"{etype.name}[]", f"{etype.name}[]", direction=direction)
    except xs.ShapeError:
        etype = xs.element_type("s32" if op in ("and", "or", "xor") or op.startswith("shift") else "f32")
    lhs, rhs, dims, out = draw(broadcast_cases(max_rank=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = _random_values(rng, etype, lhs, op, "lhs")
    y = _random_values(rng, etype, rhs, op, "rhs")
    return op, direction, etype, x, y, dims, out


def _jax() -> Any:
    return pytest.importorskip("jax")


_LAX_NAMES = {"add": "add", "subtract": "sub", "multiply": "mul", "divide": "div", "remainder": "rem",
              "power": "pow", "maximum": "max", "minimum": "min", "and": "bitwise_and", "or": "bitwise_or",
              "xor": "bitwise_xor", "shift-left": "shift_left", "shift-right-arithmetic": "shift_right_arithmetic",
              "shift-right-logical": "shift_right_logical", "atan2": "atan2"}


def _lax_result(op: str, direction: str | None, x: Any, y: Any, dims: tuple[int, ...],
                out: tuple[int, ...]) -> np.ndarray[Any, Any]:
    jax = _jax()
    from jax import lax

    def expand(array: Any) -> Any:
        own = dims if array.ndim < len(out) else tuple(range(array.ndim))
        return lax.broadcast_in_dim(array, out, own)

    with jax.enable_x64(True):
        a, b = expand(jax.numpy.asarray(x)), expand(jax.numpy.asarray(y))
        if op == "compare":
            assert direction is not None
            result = getattr(lax, direction.lower())(a, b)
        else:
            result = getattr(lax, _LAX_NAMES[op])(a, b)
        return np.asarray(result)


JAX_OPS = [op for op in ALL_OPS if op != "power"] + ["power"]
JAX_TYPES = ["pred", *INT_TYPES[:-2], *FLOAT_TYPES, *COMPLEX_TYPES]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(value_cases(JAX_TYPES, JAX_OPS))
def test_binary_op_matches_jax_lax(case: tuple[Any, ...]) -> None:
    op, direction, etype, x, y, dims, out = case
    if op == "power" and etype.is_integral:
        etype, x, y = xs.element_type("f32"), x.astype(np.float32), y.astype(np.float32)  # lax.pow is float only
    if etype.kind == "pred" and op in ("add", "multiply", "maximum", "minimum"):
        op = {"add": "or", "multiply": "and", "maximum": "or", "minimum": "and"}[op]  # JAX rejects bool arithmetic
    ours = xb.binary_op(op, x, y, dims, direction)
    assert ours.shape == out
    _same_values(ours, _lax_result(op, direction, x, y, dims, out), op, etype)


# ----- XLA's CPU backend running the lowered HLO, in a worker process -----

_RUNNER = r"""
import base64, json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import jax.extend.backend
from jaxlib import _hlo, xla_client as xc
import xlashapes as xs
backend = jax.extend.backend.get_backend("cpu")
device = backend.devices()[0]
def decode(spec):
    dtype = xs.element_type(spec["type"]).numpy_dtype
    return np.frombuffer(base64.b64decode(spec["data"]), dtype=dtype).reshape(spec["shape"])
def encode(array):
    array = np.asarray(array)
    return {"type": xs.element_type(array.dtype).name, "shape": list(array.shape),
            "data": base64.b64encode(array.tobytes()).decode()}
def run(request):
    proto = _hlo.hlo_module_from_text(request["module"]).as_serialized_hlo_module_proto()
    executable = backend.compile_and_load(xc._xla.mlir.hlo_to_stablehlo(proto), xc.DeviceList((device,)),
                                          xc.CompileOptions())
    outputs = executable.execute([jax.device_put(decode(a), device) for a in request["args"]])
    return np.asarray(outputs[0])
for line in sys.stdin:
    try:
        answer = {"ok": True, "result": encode(run(json.loads(line)))}
    except Exception as err:
        answer = {"ok": False, "error": str(err)}
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
"""


class CpuRunner(WorkerProcess):
    """Compiles and runs HLO text on XLA:CPU in a worker process (restarted if XLA aborts)."""

    def __init__(self) -> None:
        super().__init__(_RUNNER)

    def run(self, module: str, *args: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        request = {"module": module, "args": [
            {"type": xs.element_type(a.dtype).name, "shape": list(a.shape),
             "data": base64.b64encode(a.tobytes()).decode()} for a in args]}
        answer = self.ask(request)
        if answer.get("crash"):
            raise AssertionError(f"XLA aborted while running:\n{module}")
        assert answer["ok"], f"{answer['error']}\n{module}"
        spec = answer["result"]
        dtype = xs.element_type(spec["type"]).numpy_dtype
        result: np.ndarray[Any, Any] = np.frombuffer(base64.b64decode(spec["data"]), dtype=dtype)
        return result.reshape(spec["shape"])


@pytest.fixture(scope="session")
def xla_cpu() -> CpuRunner:
    """XLA's CPU backend; tests using it are skipped without jax."""
    _jax()
    runner = CpuRunner()
    atexit.register(runner.close)
    return runner


def _shape_text(array: np.ndarray[Any, Any]) -> str:
    return f"{xs.element_type(array.dtype).name}[{','.join(map(str, array.shape))}]"


CPU_TYPES = ["pred", *INT_TYPES, *FLOAT_TYPES, *COMPLEX_TYPES]


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(value_cases(CPU_TYPES, ALL_OPS))
def test_lowered_hlo_runs_on_xla_cpu_like_binary_op(xla_cpu: CpuRunner, case: tuple[Any, ...]) -> None:
    op, direction, etype, x, y, dims, out = case
    module = xb.lower_binary(op, _shape_text(x), _shape_text(y), dims, direction)
    ours = xb.binary_op(op, x, y, dims, direction)
    assert ours.shape == out
    _same_values(ours, xla_cpu.run(module, x, y), op, etype, fused=True)


EDGE_CASES = [
    ("divide", np.int64, [7, -7, -(2**63), 5, -9], [2, 2, -1, 0, 0]),
    ("remainder", np.int64, [7, -7, -(2**63), 5, -9], [2, -2, -1, 0, 0]),
    ("divide", np.uint64, [2**64 - 1, 5, 0], [2, 0, 0]),
    ("remainder", ml_dtypes.int4, [-8, -8, 7, -3], [-1, 0, 2, 2]),
    ("divide", ml_dtypes.int4, [-8, -8, 7, -3], [-1, 0, 2, 2]),
    ("shift-left", np.int64, [1, 1, -1, 3], [63, 64, -1, 2]),
    ("shift-right-arithmetic", np.int64, [-(2**63), -5, 5, -1], [63, 64, 65, -7]),
    ("shift-right-logical", np.uint64, [2**64 - 1, 8, 8], [63, 64, 3]),
    ("shift-right-arithmetic", ml_dtypes.uint4, [8, 15, 7, 9], [1, 4, 1, 15]),
    ("power", np.int64, [3, -3, 2, -1, -1, 1, 5], [40, 3, 63, -5, -6, -100, -1]),
    ("power", np.int8, [3, -3, 2, -1, -1, 1, -128], [5, 5, 7, -5, -6, -100, 1]),
    ("power", np.uint16, [3, 65535, 2, 0], [20, 3, 15, 0]),
    ("maximum", np.float64, [np.nan, 1, -0.0, 0.0, -np.inf], [1, np.nan, 0.0, -0.0, 3]),
    ("minimum", np.float16, [np.nan, 1, -0.0, 0.0, np.inf], [1, np.nan, 0.0, -0.0, 3]),
    ("maximum", ml_dtypes.bfloat16, [-0.0, 0.0, np.nan], [0.0, -0.0, 2]),
    ("divide", np.float32, [1, -1, 0, np.inf], [0, 0, 0, np.inf]),
    ("remainder", np.float64, [5.5, -5.5, 1, np.inf, 3], [2, 2, 0, 2, np.inf]),
    ("power", np.float32, [0, 0, -8, 2, 1, np.nan], [-1, 0, 1 / 3, 0.5, np.nan, 0]),
    ("add", ml_dtypes.float8_e4m3fn, [448, 240, -448], [448, 16, -32]),
    ("multiply", np.uint32, [2**32 - 1, 65536], [2**32 - 1, 65536]),
    ("subtract", ml_dtypes.uint2, [0, 1, 3], [1, 3, 0]),
]


@pytest.mark.parametrize(("op", "dtype", "lhs", "rhs"), EDGE_CASES)
def test_edge_cases_match_xla_cpu(xla_cpu: CpuRunner, op: str, dtype: Any, lhs: list[Any], rhs: list[Any]) -> None:
    x = np.array(lhs, dtype=dtype)
    y = np.array(rhs, dtype=dtype)
    module = xb.lower_binary(op, _shape_text(x), _shape_text(y))
    _same_values(xb.binary_op(op, x, y), xla_cpu.run(module, x, y), op, xs.element_type(np.dtype(dtype)))


@pytest.mark.parametrize(("op", "lhs", "rhs", "dims", "direction"), [c for c in LOWERING_CASES if "<=" not in c[1]
                                                                     and "<=" not in c[2]])
def test_lowering_cases_run_on_xla_cpu(xla_cpu: CpuRunner, op: str, lhs: str, rhs: str, dims: Any,
                                       direction: Any) -> None:
    rng = np.random.default_rng(5)
    left, right = xs.parse_shape(lhs), xs.parse_shape(rhs)
    x = _random_values(rng, left.element_type, left.dimensions, op, "lhs")
    y = _random_values(rng, right.element_type, right.dimensions, op, "rhs")
    ours = xb.binary_op(op, x, y, dims, direction)
    module = xb.lower_binary(op, lhs, rhs, dims, direction)
    _same_values(ours, xla_cpu.run(module, x, y), op, left.element_type, fused=True)


# ----- every op with every element type XLA:CPU can compute, on the composition example -----

UNRUNNABLE = {"s1", "u1", "f6e2m3fn", "f6e3m2fn"}  # XLA:CPU / StableHLO / JAX reject these element types


def _sweep() -> list[tuple[str, str, str | None]]:
    cases = []
    for op in xb.BINARY_OPS:
        for index, etype in enumerate(t for t in xs.ELEMENT_TYPES.values() if t.numpy_name is not None):
            directions = ("EQ", "NE") if etype.is_complex else xb.COMPARISON_DIRECTIONS
            direction = directions[index % len(directions)] if op == "compare" else None
            try:
                xb.binary_op_shape(op, f"{etype.name}[]", f"{etype.name}[]", direction=direction)
            except xs.ShapeError:
                continue
            if etype.name not in UNRUNNABLE:
                cases.append((op, etype.name, direction))
    return cases


SWEEP = _sweep()


def _sweep_operands(op: str, type_name: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    etype = xs.element_type(type_name)
    rng = np.random.default_rng(sum(map(ord, op + type_name)))
    return _random_values(rng, etype, (1, 2), op, "lhs"), _random_values(rng, etype, (4, 3, 1), op, "rhs")


@pytest.mark.parametrize(("op", "type_name", "direction"), SWEEP)
def test_every_op_and_type_matches_xla_cpu(xla_cpu: CpuRunner, op: str, type_name: str, direction: Any) -> None:
    x, y = _sweep_operands(op, type_name)
    ours = xb.binary_op(op, x, y, (1, 2), direction)
    module = xb.lower_binary(op, _shape_text(x), _shape_text(y), (1, 2), direction)
    _same_values(ours, xla_cpu.run(module, x, y), op, xs.element_type(type_name), fused=True)


JAX_SWEEP_TYPES = {"pred", "s8", "u32", "s64", "s4", "u2", "bf16", "f16", "f64", "f8e4m3fn", "f4e2m1fn", "c64"}


@pytest.mark.parametrize(("op", "type_name", "direction"),
                         [c for c in SWEEP if c[1] in JAX_SWEEP_TYPES
                          and not (c[1] == "pred" and c[0] in ("add", "multiply"))
                          and not (c[0] == "power" and xs.element_type(c[1]).is_integral)])
def test_every_op_and_type_matches_jax(op: str, type_name: str, direction: Any) -> None:
    """One type of each kind (JAX rejects add/multiply on bool and integer lax.pow); the rest goes through lax."""
    x, y = _sweep_operands(op, type_name)
    ours = xb.binary_op(op, x, y, (1, 2), direction)
    _same_values(ours, _lax_result(op, direction, x, y, (1, 2), (4, 3, 2)), op, xs.element_type(type_name))


def test_xla_cpu_integer_power_reads_only_six_exponent_bits(xla_cpu: CpuRunner) -> None:
    """Pins the documented divergence: binary_op is exact, XLA:CPU computes 3**64 as 3**0 and 3**65 as 3**1."""
    x = np.array([3, 3, 2], np.int32)
    y = np.array([64, 65, 64], np.int32)
    cpu = xla_cpu.run(xb.lower_binary("power", "s32[3]", "s32[3]"), x, y)
    assert cpu.tolist() == [1, 3, 1]
    exact = [pow(3, 64, 2**32), pow(3, 65, 2**32), 0]
    assert xb.power(x, y).astype(np.int64).tolist() == [v - 2**32 if v >= 2**31 else v for v in exact]
