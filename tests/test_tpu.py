"""TPU layout advisor: the tiled-layout document's examples, the rank-1 rule and public TPU dumps."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from xlashapes.tpu import TpuAdvice, logical_byte_size, tile_rows, tpu_advice, tpu_layout, waste_percent


def advised(text: str, **options: bool | int) -> str:
    return str(tpu_layout(xs.parse_shape(text), **options))  # type: ignore[arg-type]


# ----- the tiled-layout document (openxla/xla docs/tiled_layout.md) ------------------------------------


def test_document_16_bit_tile_format_bf16_32x256() -> None:
    assert advised("bf16[32,256]") == "bf16[32,256]{1,0:T(8,128)(2,1)}"


def test_document_small_tile_format_second_minor_2() -> None:
    assert advised("f32[2,128]") == "f32[2,128]{1,0:T(2,128)}"


def test_document_small_tile_format_second_minor_3() -> None:
    assert advised("f32[3,128]") == "f32[3,128]{1,0:T(4,128)}"


def test_document_8_bit_tile_format() -> None:
    assert advised("s8[32,256]") == "s8[32,256]{1,0:T(8,128)(4,1)}"
    assert advised("u8[16,128]") == "u8[16,128]{1,0:T(8,128)(4,1)}"


def test_document_1_bit_tile_format_with_bool_tiling() -> None:
    advice = tpu_advice(xs.parse_shape("pred[64,256]"), bool_tiling=True)
    assert str(advice.shape) == "pred[64,256]{1,0:T(32,128)(32,1)}"
    assert advice.logical_bytes == advice.physical_bytes == 64 * 256 // 8  # one bit per element
    assert "no public dump" in advice.reason


def test_document_tpu_tile_format_most_arrays() -> None:
    assert advised("f32[1024,1024]") == "f32[1024,1024]{1,0:T(8,128)}"
    assert advised("f32[5,7]") == "f32[5,7]{1,0:T(8,128)}"


@pytest.mark.parametrize(("second_minor", "rows"), [(1, 2), (2, 2), (3, 4), (4, 4), (5, 8), (8, 8), (9, 8)])
def test_document_table_is_the_pre_v4_rule(second_minor: int, rows: int) -> None:
    assert advised(f"f32[{second_minor},128]", generation=3) == f"f32[{second_minor},128]{{1,0:T({rows},128)}}"


def test_document_pred_takes_4_bytes_before_v4() -> None:
    advice = tpu_advice(xs.parse_shape("pred[8,128]"), generation=3)
    assert str(advice.shape) == "pred[8,128]{1,0:T(8,128)E(32)}"
    assert advice.physical_bytes == 4 * advice.logical_bytes


# ----- TPU v4 and later (Mosaic's rule, jax-ml/jax jaxlib/mosaic/.../infer_memref_layout.cc) -------------


def test_v4_second_minor_1_is_t_1_128_send_recv_latency_hiding_scheduler_test() -> None:
    # openxla/xla xla/service/send_recv_latency_hiding_scheduler_test.cc: s32[1,1,128]{2,1,0:T(1,128)}
    assert advised("s32[1,1,128]") == "s32[1,1,128]{2,1,0:T(1,128)}"


def test_v4_small_tiles_of_packed_types() -> None:
    assert advised("bf16[1,6144]") == "bf16[1,6144]{1,0:T(2,128)(2,1)}"
    assert advised("bf16[3,6144]") == "bf16[3,6144]{1,0:T(4,128)(2,1)}"
    assert advised("pred[1,1]") == "pred[1,1]{1,0:T(4,128)(4,1)}"
    assert advised("s4[1,256]") == "s4[1,256]{1,0:T(8,128)(8,1)E(4)}"


def test_second_minor_is_physical_not_logical() -> None:
    assert advised("f32[3,300]{0,1}") == "f32[3,300]{0,1:T(8,128)}"
    assert advised("f32[300,3]{0,1}") == "f32[300,3]{0,1:T(4,128)}"


def test_tile_rows() -> None:
    assert [tile_rows(n, 1) for n in range(10)] == [1, 1, 2, 4, 4, 8, 8, 8, 8, 8]
    assert [tile_rows(n, 2) for n in range(10)] == [2, 2, 2, 4, 4, 8, 8, 8, 8, 8]
    assert [tile_rows(n, 4) for n in range(10)] == [4, 4, 4, 4, 4, 8, 8, 8, 8, 8]
    assert tile_rows(None, 1) == 8


# ----- rank 1 -------------------------------------------------------------------------------------------

RANK_1_RULE = [
    # (shape, advised layout, source)
    ("s32[16]", "{0:T(128)}", "openxla/xla xla/service/latency_hiding_scheduler_test.cc"),
    ("s32[32]", "{0:T(128)}", "openxla/xla xla/service/latency_hiding_scheduler_test.cc"),
    ("u32[1]", "{0:T(128)}", "openxla/xla xla/service/latency_hiding_scheduler_test.cc"),
    ("u32[1024]", "{0:T(1024)}", "openxla/xla xla/service/latency_hiding_scheduler_test.cc"),
    ("s32[6]", "{0:T(128)}", "openxla/xla xla/hlo/transforms/memory_space_propagation_test.cc"),
    ("s32[301]", "{0:T(512)}", "openxla/xla xla/hlo/tools/hlo_diff/hlo_diff_result_test.cc"),
    ("bf16[1024]", "{0:T(1024)(128)(2,1)}", "openxla/xla xla/shape_util.h PackedFactorFor1DInterleavedArray"),
    ("bf16[8192]", "{0:T(1024)(128)(2,1)}", "jax-ml/scaling-book profiling.md"),
    ("bf16[4096]", "{0:T(1024)(128)(2,1)}", "jax-ml/scaling-book profiling.md"),
    ("s32[2048]", "{0:T(1024)}", "the brief's example; Mosaic: 16 groups of 128 -> 8 rows"),
    ("u32[256]", "{0:T(256)}", "Mosaic: 2 groups of 128 -> 2 rows"),
    ("bf16[128]", "{0:T(256)(128)(2,1)}", "Mosaic: 16-bit minimum 2 rows"),
    ("pred[1]", "{0:T(512)(128)(4,1)}", "Mosaic: 8-bit minimum 4 rows"),
    ("s4[1000]", "{0:T(1024)(128)(8,1)E(4)}", "Mosaic: 4-bit minimum 8 rows, E(4) as the s4 dumps"),
]


@pytest.mark.parametrize(("text", "layout", "source"), RANK_1_RULE, ids=[r[0] for r in RANK_1_RULE])
def test_rank_1_linear_tiles(text: str, layout: str, source: str) -> None:
    assert advised(text) == text + layout, source


def test_rank_1_before_v4_hlo_value_semantics_analysis_test() -> None:
    # openxla/xla xla/service/hlo_value_semantics_analysis_test.cc (an older TPU): f32[128]{0:T(256)} ...
    for text in ("f32[128]", "f32[32]", "f32[10]"):
        assert advised(text, generation=3) == text + "{0:T(256)}"
    assert advised("f32[784,128]", generation=3) == "f32[784,128]{1,0:T(8,128)}"
    assert advised("f32[32,10]", generation=3) == "f32[32,10]{1,0:T(8,128)}"


def test_rank_1_group_boundaries() -> None:
    sizes = {0: 128, 1: 128, 128: 128, 129: 256, 256: 256, 257: 512, 512: 512, 513: 1024, 1024: 1024, 10**6: 1024}
    for size, tile in sizes.items():
        assert advised(f"f32[{size}]") == f"f32[{size}]{{0:T({tile})}}"


# ----- scalars ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "layout"), [
    ("u32[]", "{:T(128)}"),   # openxla/xla xla/service/latency_hiding_scheduler_test.cc
    ("s32[]", "{:T(128)}"),   # same file
    ("bf16[]", "{:T(256)}"),  # same file
    ("pred[]", "{:T(512)}"),  # openxla/xla xla/hlo/transforms/memory_space_propagation_test.cc
])
def test_scalars_get_one_linear_tile(text: str, layout: str) -> None:
    assert advised(text) == text + layout


def test_scalar_waste() -> None:
    advice = tpu_advice(xs.parse_shape("f32[]"))
    assert (advice.logical_bytes, advice.physical_bytes) == (4, 512)
    assert advice.waste_percent == pytest.approx(100 * 508 / 512)


# ----- public dumps, reproduced exactly from their untiled shapes ----------------------------------------

PUBLIC_DUMPS = [
    ("bf16[1,20,256,16,4,288,1]{2,5,1,4,3,6,0:T(8,128)(2,1)}", "xla/service/latency_hiding_scheduler_test.cc"),
    ("bf16[8,1024,1,20,256,1,1]{4,1,3,0,6,5,2:T(8,128)(2,1)}", "xla/service/latency_hiding_scheduler_test.cc"),
    ("s4[8,32768,1,256]{3,1,0,2:T(8,128)(8,1)E(4)}", "xla/hlo/transforms/memory_space_propagation_test.cc"),
    ("pred[1,16384,1,256]{3,1,0,2:T(8,128)(4,1)}", "xla/hlo/transforms/memory_space_propagation_test.cc"),
    ("s32[1,1,128]{2,1,0:T(1,128)}", "xla/service/send_recv_latency_hiding_scheduler_test.cc"),
    ("bf16[32,32,4096]{2,1,0:T(8,128)(2,1)S(1)}", "docs/shapes.md"),
    ("bf16[8,1,1280,16384]{3,2,0,1:T(8,128)(2,1)}", "docs/shapes.md"),
]


@pytest.mark.parametrize(("dump", "source"), PUBLIC_DUMPS, ids=[d[0] for d in PUBLIC_DUMPS])
def test_public_dump_reproduced(dump: str, source: str) -> None:
    shape = xs.parse_shape(dump)
    assert shape.layout is not None
    untiled = shape.with_layout(shape.layout.replace(tiles=(), element_size_in_bits=0))
    assert str(tpu_layout(untiled)) == dump, f"openxla/xla {source}"


def test_memory_space_and_other_fields_are_kept() -> None:
    assert advised("f32[16,128]{1,0:S(1)}") == "f32[16,128]{1,0:T(8,128)S(1)}"
    assert advised("f32[16,128]{0,1:T(2,2)}") == "f32[16,128]{0,1:T(8,128)}"


# ----- silent public record -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["s2[4,4]", "u1[8]", "f6e2m3fn[3,3]", "f6e3m2fn[]"])
def test_no_public_format_leaves_layout(text: str) -> None:
    advice = tpu_advice(xs.parse_shape(text))
    assert advice.shape == xs.parse_shape(text)
    assert "no public TPU format" in advice.reason


@pytest.mark.parametrize("text", ["s64[16,128]", "f64[3]", "c64[]", "c128[2,2]", "u64[9,9]"])
def test_64_bit_types_say_the_record_is_silent(text: str) -> None:
    advice = tpu_advice(xs.parse_shape(text))
    assert "no public TPU dump" in advice.reason
    assert advice.shape.layout is not None and advice.shape.layout.tiles


def test_bool_tiling_is_2d_only() -> None:
    advice = tpu_advice(xs.parse_shape("pred[5]"), bool_tiling=True)
    assert str(advice.shape) == "pred[5]{0:T(512)(128)(4,1)}"
    assert "rank >= 2 only" in advice.reason


# ----- sizes, tuples, unusual shapes ---------------------------------------------------------------------


def test_sizes_agree_with_byte_size() -> None:
    advice = tpu_advice(xs.parse_shape("f32[3,5]"))
    assert str(advice.shape) == "f32[3,5]{1,0:T(4,128)}"
    assert advice.physical_bytes == advice.shape.byte_size() == 4 * 128 * 4
    assert advice.logical_bytes == advice.shape.xla_byte_size_of() == 60
    assert advice.waste_percent == pytest.approx(100 * (2048 - 60) / 2048)


def test_sub_byte_logical_bytes_are_packed() -> None:
    advice = tpu_advice(xs.parse_shape("s4[8,256]"))
    assert advice.logical_bytes == advice.shape.xla_byte_size_of() == 1024
    assert advice.physical_bytes == advice.shape.byte_size() == 1024


def test_tuple_advice_per_leaf() -> None:
    shape = xs.parse_shape("(f32[3,5], token[], (s8[7], bf16[]))")
    advice = tpu_advice(shape)
    assert str(advice.shape) == ("(f32[3,5]{1,0:T(4,128)}, token[], (s8[7]{0:T(512)(128)(4,1)}, "
                                 "bf16[]{:T(256)}))")
    assert [str(a.shape) for a in advice.leaves] == [
        "f32[3,5]{1,0:T(4,128)}", "token[]", "s8[7]{0:T(512)(128)(4,1)}", "bf16[]{:T(256)}"]
    assert advice.physical_bytes == advice.shape.byte_size() == sum(a.physical_bytes for a in advice.leaves)
    assert advice.logical_bytes == 60 + 0 + 7 + 2
    assert "(2, 1): scalar" in advice.reason
    assert tpu_layout(shape) == advice.shape


def test_empty_tuple() -> None:
    advice = tpu_advice(xs.parse_shape("()"))
    assert advice == TpuAdvice(xs.parse_shape("()"), "empty tuple", 0, 0, 0.0, ())


def test_shape_without_layout_gets_default_order() -> None:
    bare = xs.parse_shape("f32[3,5]").without_layout()
    assert str(tpu_layout(bare)) == "f32[3,5]{1,0:T(4,128)}"


def test_dynamic_dimensions() -> None:
    assert advised("f32[<=3,128]") == "f32[<=3,128]{1,0:T(4,128)}"
    assert advised("f32[?,128]") == "f32[?,128]{1,0:T(8,128)}"
    assert advised("f32[?]") == "f32[?]{0:T(1024)}"
    with pytest.raises(xs.ShapeError):
        tpu_advice(xs.parse_shape("f32[?,128]"))  # no byte size for an unbounded dimension


def test_waste_percent_and_logical_size_helpers() -> None:
    assert waste_percent(0, 0) == 0.0
    assert waste_percent(1, 4) == 75.0
    assert logical_byte_size(xs.parse_shape("(pred[3], s4[3], token[])")) == 3 + 2


ARRAY_TYPES = sorted(name for name, t in xs.ELEMENT_TYPES.items() if t.is_array_type)


@st.composite
def array_shapes(draw: st.DrawFn) -> xs.Shape:
    rank = draw(st.integers(0, 4))
    dims = draw(st.lists(st.integers(0, 300), min_size=rank, max_size=rank))
    order = draw(st.permutations(list(range(rank))))
    return xs.make_shape(draw(st.sampled_from(ARRAY_TYPES)), dims, minor_to_major=order)


@settings(max_examples=300, deadline=None)
@given(array_shapes(), st.booleans(), st.sampled_from([2, 3, 4, 5, 6]))
def test_generated_shapes(shape: xs.Shape, bool_tiling: bool, generation: int) -> None:
    advice = tpu_advice(shape, bool_tiling=bool_tiling, generation=generation)
    out = advice.shape
    assert out.layout is not None and shape.layout is not None
    assert out.layout.minor_to_major == shape.layout.minor_to_major
    assert out.dimensions == shape.dimensions and out.element_type == shape.element_type
    assert advice.reason
    assert 0 <= advice.logical_bytes <= advice.physical_bytes
    assert 0.0 <= advice.waste_percent <= 100.0
    if "1 bit per element" not in advice.reason:
        assert advice.physical_bytes == out.byte_size()
    assert xs.parse_shape(str(out)) == out  # the advised layout is valid shape text
    assert tpu_layout(out, bool_tiling=bool_tiling, generation=generation) == out  # idempotent


# ----- issue 15: meaningless layouts are ShapeErrors, never IndexError ---------------------------------


@pytest.mark.parametrize("text", ["f32[3,3,3,8]{3,72,1,0}", "f32[2,3]{1,1}", "f32[2]{5}", "f32[4,4]{1,0:T(0)}",
                                  "tuple"])
def test_meaningless_layouts_are_shape_errors(text: str) -> None:
    # XLA's parser refuses these inside a tuple; a tuple built in Python may still hold one
    shape = xs.tuple_shape([xs.parse_shape("f32[2]"), xs.parse_shape("f32[3,3,3,8]{3,72,1,0}")]) \
        if text == "tuple" else xs.parse_shape(text)
    for advise in (tpu_layout, tpu_advice):
        with pytest.raises(xs.ShapeError, match="layout"):
            advise(shape)


def test_meaningless_layouts_from_protos_and_modules_are_shape_errors() -> None:
    from xlashapes.interop import shape_from_proto_bytes, shape_to_proto_bytes
    from xlashapes.memory import memory_report, upper_bound_report

    shape = xs.parse_shape("f32[3,3,3,8]{3,72,1,0}")
    decoded = shape_from_proto_bytes(shape_to_proto_bytes(shape))
    with pytest.raises(xs.ShapeError, match="dimension 72 is out of range"):
        tpu_layout(decoded)
    module = xs.parse_hlo_module("HloModule m\nENTRY e {\n  ROOT p = f32[3,3,3,8]{3,72,1,0} parameter(0)\n}\n")
    report = upper_bound_report(module, tpu=True)  # the buffer without a size is reported, not a crash
    assert report.buffers == () and report.unsized == ("p",)
    assert memory_report(module, backend="tpu").unsized == ("p",)


def test_logical_bytes_is_the_data_byte_size() -> None:
    for text in ("s4[3]", "s4[3]{0:E(4)}", "pred[8,128]{1,0:E(32)}", "(f32[2], s4[5])", "token[]", "bf16[3,5]"):
        shape = xs.parse_shape(text)
        assert logical_byte_size(shape) == shape.data_byte_size()
    assert xs.parse_shape("s4[3]").data_byte_size() == 2 and xs.parse_shape("s4[3]").xla_byte_size_of() == 3
