"""Layouts validated and normalized once, in the constructor; shapes judge their layout once, at construction."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes.layout import Layout, layout_problem


@pytest.mark.parametrize("value", [[1], (1,), np.array(1.5), np.array([2, 3]), np.float32(2.5), 7, -1.0, [[1, 2]]])
def test_padding_value_is_normalized_to_a_hashable_value(value: object) -> None:
    layout = Layout((0,), padded_dimensions=(4,), padding_value=value)
    assert hash(layout) == hash(Layout((0,), padded_dimensions=(4,), padding_value=value))
    assert layout == Layout((0,), padded_dimensions=(4,), padding_value=value)
    shape = xs.make_shape("f32", [2], layout=layout)
    assert hash(shape) and xs.linear_index(shape, (1,)) == 1  # the index cache takes it


def test_padding_value_list_becomes_a_tuple() -> None:
    assert Layout((0,), padding_value=[1]).padding_value == (1,)
    assert Layout((0,), padding_value=np.array(2)).padding_value == 2
    with pytest.raises(xs.ShapeError, match="padding_value must be a number"):
        Layout((0,), padding_value={1: 2})


def test_constructor_normalizes_fields() -> None:
    layout = Layout([1, 0], tiles=[[8, 128]], index_primitive_type="uint32", dim_level_types=["C", "C"],
                    split_configs=[(0, [2])])
    assert layout.minor_to_major == (1, 0) and layout.tiles == ((8, 128),)
    assert layout.index_primitive_type is xs.element_type("u32")
    assert layout.dim_level_types == ("C", "C") and layout.split_configs == (xs.SplitConfig(0, (2,)),)
    for bad in (dict(tiles=5), dict(tiles=[(2.5,)]), dict(memory_space=2**63), dict(minor_to_major="10"),
                dict(physical_shape="f32[2]"), dict(index_primitive_type="float99")):
        with pytest.raises(xs.ShapeError):
            Layout(**{"minor_to_major": (0,), **bad})  # type: ignore[arg-type]


def test_a_shape_validates_its_layout_at_construction() -> None:
    f32 = xs.element_type("f32")
    with pytest.raises(xs.ShapeError, match="minor_to_major has 1 entries but the shape has rank 2"):
        xs.Shape(f32, (2, 3), layout=Layout((5,)))
    for layout, field in [(Layout((0,), tiles=((0,),)), "tile 0 dimension 0 is 0"),
                          (Layout((0,), dynamic_shape_metadata_prefix_bytes=-1), "M\\(-1\\) must be >= 0"),
                          (Layout((1,)), "not a permutation")]:
        kept = xs.Shape(f32, (2,), layout=layout)  # XLA keeps such shapes too (protos, top-level text)
        assert kept.layout_problem() is not None and str(kept) == f"f32[2]{layout}"
        for use in (kept.byte_size, kept.validate, lambda kept=kept: xs.linear_index(kept, (0,))):
            with pytest.raises(xs.ShapeError, match=field):
                use()
        with pytest.raises(xs.ShapeError, match=field):
            xs.make_shape("f32", [2], layout=layout)
    good = xs.Shape(f32, (2, 3), layout=Layout((0, 1)))
    assert good.layout_problem() is None and good.validate() is good
    with pytest.raises(xs.ShapeError, match="not a permutation"):
        good.with_layout(Layout((0, 0)))


def test_parsed_meaningless_layout_is_judged_once() -> None:
    shape = xs.parse_shape("f32[2,3]{1,1}")
    assert str(shape) == "f32[2,3]{1,1}"
    assert shape.layout_problem() == shape.layout_problem()
    assert "_problem" in shape.__dict__
    with pytest.raises(xs.ShapeError, match="a dimension repeats"):
        shape.byte_size()
    assert xs.parse_shape("f32[2,3]{0,1}").layout_problem() is None


def test_byte_size_does_not_revalidate(monkeypatch: pytest.MonkeyPatch) -> None:
    import xlashapes.shape as shape_module

    shape = xs.parse_shape("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}")
    assert shape.byte_size() == 8 * 1280 * 16384 * 2
    calls = []
    monkeypatch.setattr(shape_module, "layout_problem", lambda *args: calls.append(args))
    for _ in range(3):
        assert shape.byte_size() == 8 * 1280 * 16384 * 2
        assert shape.physical_dimensions() == (1, 8, 160, 128, 4, 128, 2, 1)
    assert calls == []


@settings(max_examples=examples(200), deadline=None)
@given(st.permutations(range(4)), st.lists(st.integers(-2, 6), min_size=4, max_size=4))
def test_layout_problem_agrees_with_the_constructor(order: list[int], bad_order: list[int]) -> None:
    dims = (2, 3, 4, 5)
    for mtm in (tuple(order), tuple(bad_order)):
        layout = Layout(mtm)
        problem = layout_problem(layout, xs.parse_shape("f32[2,3,4,5]"))
        shape = xs.Shape(xs.element_type("f32"), dims, layout=layout)
        assert shape.layout_problem() == problem
        if problem is None:
            assert shape.validate() is shape
        else:
            with pytest.raises(xs.ShapeError, match="minor_to_major"):
                shape.byte_size()


def test_permutation_check_is_linear() -> None:
    rank = 100_000
    start = time.process_time()
    shape = xs.make_shape("s8", [1] * rank, minor_to_major=list(range(rank)))
    assert time.process_time() - start < 1.0
    assert shape.byte_size() == 1


JUNK = st.one_of(st.integers(-(2**64), 2**64), st.floats(), st.none(), st.booleans(), st.text(max_size=3),
                 st.lists(st.integers(-3, 9), max_size=3),
                 st.lists(st.lists(st.integers(-3, 9), max_size=3), max_size=2),
                 st.just(np.array(2)), st.just(np.array([1, 2])), st.just(object()), st.just(("C", "D")),
                 st.just([(0, [1])]), st.just(np.float32(1.5)))
FIELDS = ["tiles", "tail_padding_alignment_in_elements", "index_primitive_type", "pointer_primitive_type",
          "element_size_in_bits", "memory_space", "split_configs", "dynamic_shape_metadata_prefix_bytes",
          "dim_level_types", "dim_unique", "dim_ordered", "padded_dimensions", "padding_value", "physical_shape"]


@settings(max_examples=examples(400), deadline=None)
@given(JUNK, st.dictionaries(st.sampled_from(FIELDS), JUNK, max_size=3), JUNK, JUNK)
def test_constructors_raise_only_shape_errors(order: object, fields: dict[str, object], dims: object,
                                               dynamic: object) -> None:
    try:
        layout = Layout(order, **fields)  # type: ignore[arg-type]
    except xs.ShapeError:
        layout = Layout((0,))
    assert hash(layout) == hash(Layout(layout.minor_to_major, **{f: getattr(layout, f) for f in FIELDS}))
    try:
        shape = xs.Shape(xs.element_type("f32"), dims, dynamic, layout)  # type: ignore[arg-type]
    except xs.ShapeError:
        return
    assert hash(shape) is not None and str(shape)
    try:
        shape.byte_size()
    except xs.ShapeError as error:
        assert shape.layout_problem() is not None or "int64" in str(error), error
