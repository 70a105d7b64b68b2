"""Shapes, layouts, sizes and validation: the seed documents' examples and properties."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import xlashapes as xs
from xlashapes.layout import INT64_MAX

ADD_936 = "bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)S(1)}"


def test_seed_add_936_shape() -> None:
    s = xs.parse_shape(ADD_936)
    assert s.element_type.name == "bf16"
    assert s.element_type.bits == 16
    assert s.element_type.numpy_dtype == np.dtype(ml_dtypes.bfloat16)
    assert s.dimensions == (8, 1, 1280, 16384)
    assert s.rank == 4
    assert s.true_rank == 3
    assert s.dimension(-1) == 16384
    assert s.layout is not None
    assert s.layout.minor_to_major == (3, 2, 0, 1)
    assert s.layout.tiles == ((8, 128), (2, 1))
    assert s.layout.memory_space == 1
    assert s.layout.memory_space_name.startswith("on-chip fast memory")
    assert str(s) == ADD_936
    assert s.element_count() == 8 * 1280 * 16384
    # 1280 and 16384 are multiples of 8 and 128: no padding, 2 bytes each.
    assert s.byte_size() == 8 * 1280 * 16384 * 2
    assert s.physical_dimensions() == (1, 8, 160, 128, 4, 128, 2, 1)


def test_seed_fusion_shapes() -> None:
    out = xs.parse_shape("bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}")
    operand = xs.parse_shape("bf16[32,32,8192]{2,1,0:T(8,128)(2,1)S(1)}")
    assert out.byte_size() == 32 * 32 * 4096 * 2
    assert operand.byte_size() == 2 * out.byte_size()
    assert out.layout is not None and out.layout.memory_space == 1
    assert str(out) == "bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}"


def test_seed_make_shape_dimension_order() -> None:
    # ShapeUtil::MakeShape(F32, {A, B, C, D}): dimension 0 is A, the most major in the default layout.
    a, b, c, d = 2, 3, 5, 7
    s = xs.make_shape("f32", [a, b, c, d])
    assert s.dimensions == (a, b, c, d)
    assert s.layout is not None and s.layout.minor_to_major == (3, 2, 1, 0)
    assert s.layout.major_to_minor == (0, 1, 2, 3)
    assert [s.dimension(i) for i in range(-4, 0)] == [a, b, c, d]
    assert str(s) == "f32[2,3,5,7]{3,2,1,0}"


def test_seed_dimension_letters() -> None:
    assert xs.make_shape("f32", [4, 5]).dimension_letters() == ("y", "x")
    assert xs.make_shape("f32", [3, 4, 5]).dimension_letters() == ("z", "y", "x")
    four = xs.make_shape("f32", [2, 3, 4, 5])
    assert four.dimension_letters() == ("p", "z", "y", "x")
    assert four.dimension(four.dimension_by_letter("x")) == 5
    assert four.dimension(four.dimension_by_letter("p")) == 2
    assert xs.make_shape("f32", [2]).dimension_letters() is None


def test_seed_negative_dimension_numbers() -> None:
    s = xs.make_shape("f32", [2, 3, 4])
    assert s.dimension(-1) == 4 and s.dimension(-3) == 2 and s.dimension(0) == 2
    with pytest.raises(xs.ShapeError, match="dimension 3 is out of range"):
        s.dimension(3)
    with pytest.raises(xs.ShapeError, match="dimension -4"):
        s.dimension(-4)


def test_seed_2x3_sizes() -> None:
    row = xs.make_shape("f32", [2, 3])
    col = xs.make_shape("f32", [2, 3], minor_to_major=[0, 1])
    padded = xs.make_shape("f32", [2, 3], minor_to_major=[0, 1], padded_dimensions=[3, 5], padding_value=0)
    assert str(row) == "f32[2,3]{1,0}" and str(col) == "f32[2,3]{0,1}"
    assert row.byte_size() == col.byte_size() == 24
    assert padded.physical_element_count() == 15  # a d 0 b e 0 c f 0 0 0 0 0 0 0
    assert padded.byte_size() == 60
    assert padded.physical_dimensions() == (5, 3)


def test_tiled_layout_document_sizes() -> None:
    # f32[3,5] with 2x2 tiles pads to 4x6 = 24 elements.
    assert xs.parse_shape("f32[3,5]{1,0:T(2,2)}").byte_size() == 24 * 4
    # Combined dims: T(*,*,2,*,3) on [2,7,8,11,10] is (2,3) tiling of [112,110].
    combined = xs.parse_shape("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    flat = xs.parse_shape("f32[112,110]{1,0:T(2,3)}")
    assert combined.physical_dimensions() == flat.physical_dimensions() == (56, 37, 2, 3)
    assert combined.byte_size() == flat.byte_size()


def test_byte_size_sub_byte_and_alignment() -> None:
    assert xs.parse_shape("s4[128]{0:E(4)}").byte_size() == 64
    assert xs.parse_shape("s4[3]{0:E(4)}").byte_size() == 2
    assert xs.parse_shape("s4[3]").byte_size() == 3  # unpacked: one byte per element
    assert xs.parse_shape("u2[5]{0:E(2)}").byte_size() == 2
    assert xs.parse_shape("f32[3]{0:L(4)}").byte_size() == 16
    assert xs.parse_shape("pred[3]").byte_size() == 3
    assert xs.parse_shape("c128[2]").byte_size() == 32
    # Tiles larger than the rank pad the missing major dims (treated as size 1).
    assert xs.parse_shape("f32[5]{0:T(2,128)}").byte_size() == 2 * 128 * 4
    # A later tile can add padding of its own: (2,4) then (3,1) pads each 2-row tile to 3 rows.
    assert xs.parse_shape("f32[2,4]{1,0:T(2,4)(3,1)}").physical_element_count() == 12


def test_byte_size_agrees_with_xla_first_tile_rule_where_exact() -> None:
    for text in ("f32[1000,1000]{1,0:T(8,128)}", "bf16[37,300]{1,0:T(8,128)(2,1)}", "s8[9,129]{0,1:T(8,128)(4,1)}",
                 "f32[5]{0:T(2,128)}", "f32[3,5]{1,0:T(2,2)L(7)}", "s4[33,257]{1,0:T(8,128)E(4)}"):
        s = xs.parse_shape(text)
        assert s.byte_size() == s.xla_array_size(), text
    untiled = xs.parse_shape("s4[3,3]{1,0:E(4)}")
    assert untiled.byte_size() == untiled.xla_byte_size_of() == 5


def test_tuple_sizes_and_leaves() -> None:
    t = xs.parse_shape("(f32[2]{0}, (s4[3]{0:E(4)}, token[]), bf16[4,4])")
    assert t.is_tuple and len(t.tuple_shapes) == 3
    assert t.leaf_byte_sizes() == {(0,): 8, (1, 0): 2, (1, 1): 0, (2,): 32}
    assert t.byte_size() == 42
    assert t.tuple_index_table_size() == 24 and t.xla_byte_size_of() == 24
    assert str(t.subshape((1, 0))) == "s4[3]{0:E(4)}"
    with pytest.raises(xs.ShapeError, match="does not exist"):
        t.subshape((3,))
    assert xs.parse_shape("()").byte_size() == 0
    assert xs.opaque_shape().byte_size() == 8


def test_dynamic_shapes() -> None:
    s = xs.parse_shape("f32[<=10,3]")
    assert s.is_dynamic and s.is_dynamic_dimension(0) and not s.is_dynamic_dimension(1)
    assert s.element_count() == 30  # bounded dims count at their bound
    u = xs.parse_shape("f32[?,3]")
    assert u.is_unbounded_dimension(0) and u.dimensions[0] == xs.UNBOUNDED_SIZE
    with pytest.raises(xs.ShapeError, match="unbounded"):
        u.byte_size()
    assert u.compatible(xs.parse_shape("f32[7,3]{0,1}"))
    assert not u.equal(xs.parse_shape("f32[7,3]"))


def test_equality_options() -> None:
    a = xs.parse_shape("f32[2,3]{1,0}")
    b = xs.parse_shape("f32[2,3]{0,1}")
    c = xs.parse_shape("f32[2,3]{1,0:S(1)}")
    d = xs.parse_shape("f32[2,3]{1,0:T(2,2)}")
    assert a != b and a.equal(b, ignore_layout=True) and a.compatible(b)
    assert a != c and a.equal(c, ignore_memory_space=True)
    assert a != d and a.equal(d, ignore_tiles=True)
    assert a.equal(xs.parse_shape("s32[2,3]"), ignore_element_type=True)
    assert not a.compatible(xs.parse_shape("f32[3,2]"))
    assert a == xs.parse_shape("f32[2,3]")


def test_validate_names_the_field() -> None:
    with pytest.raises(xs.ShapeError, match="minor_to_major has 1 entries"):
        xs.make_shape("f32", [2, 3], minor_to_major=[0])
    with pytest.raises(xs.ShapeError, match="not a permutation"):
        xs.parse_shape("f32[2,3]{1,1}").validate()
    with pytest.raises(xs.ShapeError, match="tile 0 dimension 0 is 0"):
        xs.parse_shape("f32[2]{0:T(0)}").byte_size()
    with pytest.raises(xs.ShapeError, match="padded_dimensions\\[1\\] = 2 is smaller"):
        xs.make_shape("f32", [2, 3], padded_dimensions=[3, 2])
    with pytest.raises(xs.ShapeError, match="E\\(4\\) is smaller than f32"):
        xs.parse_shape("f32[2]{0:E(4)}").validate()
    with pytest.raises(xs.ShapeError, match="index_primitive_type \\(s32\\) is only allowed in a sparse layout"):
        xs.parse_shape("f32[2]{0:#(s32)}").validate()
    sparse = xs.Layout((0,), dim_level_types=("C",), index_primitive_type="s32")
    with pytest.raises(xs.ShapeError, match="index_primitive_type s32 is not an unsigned integer type"):
        xs.make_shape("f32", [2], layout=sparse)
    xs.make_shape("f32", [2], layout=sparse.replace(index_primitive_type="u32"))
    with pytest.raises(xs.ShapeError, match="split config dimension 1"):
        xs.parse_shape("f32[4]{0:SC(1:2)}").validate()
    with pytest.raises(xs.ShapeError, match="tile 0 is empty"):
        xs.parse_shape("f32[2]{0:T()}").validate()
    with pytest.raises(xs.ShapeError, match="memory space"):
        xs.parse_shape("f32[2]{0:S(-1)}").validate()
    with pytest.raises(xs.ShapeError, match="split indices"):
        xs.parse_shape("f32[4]{0:SC(0:3,2)}").validate()
    with pytest.raises(xs.ShapeError, match="ends in"):
        xs.make_shape("f32", [2, 3], tiles=[(2, xs.COMBINE_DIMENSION)])
    with pytest.raises(xs.ShapeError, match="dim_level_types has 1 entries"):
        xs.make_shape("f32", [2, 3], dim_level_types=("C",))


def test_overflow_is_refused() -> None:
    big = xs.parse_shape("f32[9223372036854775807]")
    assert big.element_count() == INT64_MAX
    with pytest.raises(xs.ShapeError, match="overflows int64"):
        big.byte_size()
    with pytest.raises(xs.ShapeError, match="overflows int64"):
        xs.parse_shape("f32[4294967296,4294967296]").element_count()
    with pytest.raises(xs.ShapeError, match="does not fit in int64"):
        xs.make_shape("f32", [2**63])


def test_constructor_errors_are_shape_errors() -> None:
    for bad in (lambda: xs.make_shape("F32", [2]), lambda: xs.make_shape("f32", [2.5]),
                lambda: xs.make_shape("f32", [True]), lambda: xs.make_shape("f32", "23"),
                lambda: xs.make_shape("f32", [-1]), lambda: xs.make_shape("token", []),
                lambda: xs.Layout((0,), tiles=5), lambda: xs.Layout((0,), dim_level_types=("X",)),
                lambda: xs.make_shape("f32", [2], minor_to_major=[0], layout=xs.default_layout(1))):
        with pytest.raises(xs.ShapeError):
            bad()


def test_element_types() -> None:
    assert len(xs.ELEMENT_TYPES) == 35
    assert xs.element_type("s4").is_sub_byte and xs.element_type("s4").byte_width == 1
    assert xs.element_type(np.float32).name == "f32"
    assert xs.element_type(ml_dtypes.bfloat16).name == "bf16"
    assert xs.element_type(np.dtype("complex64")).name == "c64"
    assert xs.element_type("u4").numpy_dtype == np.dtype(ml_dtypes.uint4)
    assert xs.element_type("pred").numpy_dtype == np.dtype(bool)
    for t in xs.ELEMENT_TYPES.values():
        if t.is_array_type:
            assert t.numpy_dtype.itemsize == t.byte_width or t.is_sub_byte, t
    with pytest.raises(xs.ShapeError):
        _ = xs.element_type("token").numpy_dtype
    with pytest.raises(xs.ShapeError, match="unknown element type"):
        xs.element_type("f8")


def test_with_layout_and_defaults() -> None:
    s = xs.make_shape("bf16", [256, 512])
    tiled = s.with_layout(tiles=((8, 128), (2, 1)), memory_space=1)
    assert str(tiled) == "bf16[256,512]{1,0:T(8,128)(2,1)S(1)}"
    assert str(tiled.without_layout()) == "bf16[256,512]"
    assert tiled.without_layout().with_default_layouts() == s
    assert str(xs.tuple_shape([s, xs.token_shape()])) == "(bf16[256,512]{1,0}, token[])"
