"""Interop: ShapeProto bytes (checked against jaxlib's serializer), JAX layouts and xla_client shapes."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import xlashapes as xs
from profiles import examples
from xlashapes import interop
from xlashapes.interop import (
    MAX_PROTO_BYTES,
    from_jax_array,
    from_jax_layout,
    from_proto_bytes,
    from_xla_client_shape,
    to_jax_layout,
    to_proto_bytes,
    to_xla_client_shape,
    varint_bytes,
)
from xlashapes.layout import COMBINE_DIMENSION, INT64_MAX, INT64_MIN, Layout
from xlashapes.shape import UNBOUNDED_SIZE

ARRAY_TYPES = sorted(name for name, t in xs.ELEMENT_TYPES.items() if t.is_array_type)
NUMBERED_ARRAY_TYPES = [name for name in ARRAY_TYPES if xs.ELEMENT_TYPES[name].proto_number is not None]
UNSIGNED = ["u8", "u16", "u32", "u64"]


def decode(hex_text: str) -> xs.Shape:
    return from_proto_bytes(bytes.fromhex(hex_text))


# ----- wire format: known vectors (observed from jaxlib 0.10.2's to_serialized_proto) -------------------

KNOWN = [
    ("f32[3,5]{0,1}", "100b1a0203052a070a02000180010132020000"),
    ("f32[3,5]{1,0}", "100b1a0203052a070a02010080010132020000"),
    ("s8[]", "10022a03800101"),
    ("f32[]", "100b2a03800101"),
    ("token[]", "1011"),
    ("()", "100d"),
    ("f32[?,3]{1,0}", "100b1a0b80808080808080808001032a070a02010080010132020100"),
    ("s4[3]{0}", "10151a01032a060a0100800101320100"),
    ("(f32[3,5]{0,1}, f32[3,5]{1,0})",
     "100d2213100b1a0203052a070a020001800101320200002213100b1a0203052a070a02010080010132020000"),
    # from jaxlib's HloModule proto (layout attributes xla_client.Shape cannot build)
    ("f32[3,5]{1,0:T(2,2)L(4)#(s32)*(u32)E(32)S(1)M(8)}",
     "100b1a0203052a170a02010032040a02020238204001580460087808800104320200" "00"),
    ("f32[3,5]{1,0:SC(0:2)}", "100b1a0203052a0d0a0201008001018a010312010232020000"),
    ("pred[]{:T(512)}", "10012a0932040a028004800101"),
]


@pytest.mark.parametrize(("text", "hex_text"), KNOWN, ids=[k[0] for k in KNOWN])
def test_known_encodings(text: str, hex_text: str) -> None:
    shape = xs.parse_shape(text)
    assert to_proto_bytes(shape).hex() == hex_text
    assert decode(hex_text) == shape


def test_varints() -> None:
    assert varint_bytes(0) == b"\x00"
    assert varint_bytes(300) == b"\xac\x02"
    assert varint_bytes(-1) == b"\xff" * 9 + b"\x01"
    assert varint_bytes(INT64_MIN) == b"\x80" * 9 + b"\x01"
    assert varint_bytes(INT64_MAX) == b"\xff" * 8 + b"\x7f"


def test_combined_tile_dimension_is_int64_min() -> None:
    shape = xs.parse_shape("f32[2,7,8,11,10]{4,3,2,1,0:T(*,*,2,*,3)}")
    data = to_proto_bytes(shape)
    assert varint_bytes(COMBINE_DIMENSION) in data
    assert from_proto_bytes(data) == shape


def test_every_numbered_element_type_round_trips() -> None:
    for name in NUMBERED_ARRAY_TYPES:
        shape = xs.make_shape(name, [2, 3])
        assert from_proto_bytes(to_proto_bytes(shape)) == shape
    for shape in (xs.token_shape(), xs.opaque_shape(), xs.tuple_shape([])):
        assert from_proto_bytes(to_proto_bytes(shape)) == shape


def test_types_without_a_proto_number_cannot_be_encoded() -> None:
    for name, etype in xs.ELEMENT_TYPES.items():
        if etype.is_array_type and etype.proto_number is None:
            with pytest.raises(xs.ShapeError, match="PrimitiveType number"):
                to_proto_bytes(xs.make_shape(name, [2]))


def test_legacy_padding_cannot_be_encoded() -> None:
    with pytest.raises(xs.ShapeError, match="reserved"):
        to_proto_bytes(xs.make_shape("f32", [2, 3], padded_dimensions=[3, 5]))


def test_sparse_fields_round_trip() -> None:
    layout = Layout((1, 0), dim_level_types=("D", "C"), dim_unique=(True, False), dim_ordered=(True, True),
                    index_primitive_type="u32", pointer_primitive_type="u64",
                    physical_shape=xs.parse_shape("(s32[5], f32[15])"))
    shape = xs.Shape(xs.element_type("f32"), (3, 5), (), layout)
    assert from_proto_bytes(to_proto_bytes(shape)) == shape


# ----- decoding: protobuf rules ------------------------------------------------------------------------


def test_unpacked_repeated_fields_and_unknown_fields() -> None:
    # element_type f32; dimensions 3 and 5 unpacked; unknown field 9 (varint) and 10 (fixed32) skipped;
    # layout with minor_to_major unpacked and no tail padding field (reads as 1).
    data = bytes.fromhex("100b" "1803" "1805" "4807" "550000803f" "2a04" "0801" "0800")
    shape = from_proto_bytes(data)
    assert str(shape) == "f32[3,5]{1,0}"
    assert shape.layout is not None and shape.layout.tail_padding_alignment_in_elements == 1


def test_repeated_singular_message_merges() -> None:
    # two layout fields merge: minor_to_major [1] then [0] -> [1, 0]; last memory space wins
    data = bytes.fromhex("100b1a020305" "2a0408014001" "2a0408004005")
    assert str(from_proto_bytes(data)) == "f32[3,5]{1,0:S(5)}"


def test_memoryview_and_bytearray_inputs() -> None:
    data = to_proto_bytes(xs.parse_shape("bf16[8]"))
    assert from_proto_bytes(bytearray(data)) == from_proto_bytes(memoryview(data))


BAD = [
    ("", "missing"),                          # no element type
    ("1000", "PRIMITIVE_TYPE_INVALID"),
    ("1063", "not an xla.PrimitiveType"),     # 99
    ("1022", "not an xla.PrimitiveType"),     # BUFFER (34)
    ("10", "truncated varint"),
    ("10ffffffffffffffffffff01", "longer than 10 bytes"),
    ("10ffffffffffffffffff7f", "overflows 64 bits"),
    ("1a05", "runs past the end"),
    ("0b", "wire type 3"),
    ("0008", "invalid field number 0"),
    ("100b2a050d00000000", "expected a varint"),  # minor_to_major as a fixed32
    ("100b2a01", "runs past the end"),
    ("100b1a010332020000", "is_dynamic_dimension"),
    ("100b1a01032a0408000801", "minor_to_major entries"),  # rank 1, two minor_to_major entries
    ("100d1a0103", "tuple has no dimensions"),
    ("100b2202100b", "only tuples"),
    ("1011" "2a00", "no dimensions and no layout"),
    ("100b1a0105" "1a0107" "32020000", None),  # dimensions given in two packed runs: f32[5,7]
    ("100b1aff01", "runs past the end"),
    ("100b2a024807", "not a DimLevelType"),
    ("100b2a025863", "index_primitive_type 99"),
    ("100b1a01fe", "truncated varint"),
]


@pytest.mark.parametrize(("hex_text", "message"), BAD, ids=[b[0] or "empty" for b in BAD])
def test_bad_bytes_are_clean_errors(hex_text: str, message: str | None) -> None:
    try:
        shape = decode(hex_text)
    except xs.XlaShapesError as err:
        assert isinstance(err, (xs.ParseError, xs.ShapeError))
        if message is not None:
            assert message in str(err)
    else:
        assert message is None, shape


def test_bytes_offsets_in_messages() -> None:
    with pytest.raises(xs.ParseError, match=r"at byte 3"):
        decode("100b1aff01")


def test_non_bytes_input() -> None:
    with pytest.raises(xs.ParseError, match="must be bytes"):
        from_proto_bytes("100b")  # type: ignore[arg-type]


def test_absurd_sizes_are_refused() -> None:
    with pytest.raises(xs.ParseError, match="max_bytes"):
        from_proto_bytes(b"\x10\x0b" + b"\x18\x01" * 100, max_bytes=64)
    assert MAX_PROTO_BYTES >= 1 << 20
    deep = xs.parse_shape("f32[]")
    for _ in range(250):
        deep = xs.tuple_shape([deep])
    with pytest.raises(xs.ParseError, match="nested more than"):
        from_proto_bytes(to_proto_bytes(deep))
    huge_length = bytes.fromhex("100b2a") + varint_bytes(1 << 62)
    with pytest.raises(xs.ParseError, match="runs past the end"):
        from_proto_bytes(huge_length)


def test_decoded_layouts_are_not_validated_beyond_rank() -> None:
    shape = decode("100b1a0203052a070a02010180010132020000")  # minor_to_major {1,1}: XLA's parser takes it
    assert str(shape) == "f32[3,5]{1,1}"
    with pytest.raises(xs.ShapeError):
        shape.validate()


@settings(max_examples=examples(500), deadline=None)
@given(st.binary(max_size=120))
def test_fuzzed_garbage_only_clean_errors(data: bytes) -> None:
    check_decodes_cleanly(data)


def check_decodes_cleanly(data: bytes) -> None:
    try:
        shape = from_proto_bytes(data)
    except (xs.ParseError, xs.ShapeError):
        return
    try:
        again = to_proto_bytes(shape)
    except xs.ShapeError:
        return  # e.g. an index type without a proto number: decoding took it, encoding names the problem
    assert from_proto_bytes(again) == shape


def test_mutated_encodings_only_clean_errors() -> None:
    rng = random.Random(8)
    for _ in range(300):
        data = bytearray(to_proto_bytes(random_shape(rng, full_layout=True)))
        for _ in range(12):
            mutated = mutate(rng, bytearray(data))
            check_decodes_cleanly(bytes(mutated))


def mutate(rng: random.Random, data: bytearray) -> bytearray:
    choice = rng.randrange(5)
    position = rng.randrange(len(data) + 1)
    if choice == 0 and data:
        data[min(position, len(data) - 1)] ^= 1 << rng.randrange(8)
    elif choice == 1:
        data.insert(position, rng.randrange(256))
    elif choice == 2 and data:
        del data[min(position, len(data) - 1)]
    elif choice == 3:
        del data[position:]
    else:
        data[position:position] = data[: rng.randrange(len(data) + 1)]
    return data


# ----- generated shapes --------------------------------------------------------------------------------


def random_dims(rng: random.Random, rank: int) -> tuple[list[int], list[bool]]:
    """Sizes (with bounded and unbounded dynamic ones) whose product stays within int64, as jaxlib wants."""
    while True:
        dims, dynamic = random_dims_once(rng, rank)
        product = 1
        for size in dims:
            product *= max(size, 1)
        if product < 1 << 58:  # jaxlib also refuses when the byte size overflows int64
            return dims, dynamic


def random_dims_once(rng: random.Random, rank: int) -> tuple[list[int], list[bool]]:
    dims: list[int] = []
    dynamic: list[bool] = []
    big = rng.random() < 0.1
    for i in range(rank):
        size = rng.choice([0, 1, 2, 3, 5, 8, 13, 128, 1000]) if rng.random() < 0.8 else rng.randrange(1, 20)
        if big and i == 0:
            size = rng.randrange(1, 1 << 40)
        kind = rng.random()
        if kind < 0.1:
            dims.append(UNBOUNDED_SIZE)
            dynamic.append(True)
        else:
            dims.append(size)
            dynamic.append(kind < 0.25)
    return dims, dynamic


def random_array(rng: random.Random, types: list[str], full_layout: bool) -> xs.Shape:
    rank = rng.randrange(0, 6)
    dims, dynamic = random_dims(rng, rank)
    order = list(range(rank))
    rng.shuffle(order)
    name = rng.choice(types)
    fields: dict[str, Any] = {}
    if full_layout:
        fields = random_layout_fields(rng, name, [d for d in dims], order)
    layout = Layout(tuple(order), **fields)
    return xs.Shape(xs.element_type(name), tuple(dims), tuple(dynamic), layout)


def random_layout_fields(rng: random.Random, name: str, dims: list[int], order: list[int]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if rng.random() < 0.6:
        tiles = []
        for _ in range(rng.randrange(1, 4)):
            width = rng.randrange(1, 4)
            tile = [rng.choice([1, 2, 3, 8, 128]) for _ in range(width)]
            for j in range(width - 1):
                if rng.random() < 0.15:
                    tile[j] = COMBINE_DIMENSION
            tiles.append(tuple(tile))
        fields["tiles"] = tuple(tiles)
    if rng.random() < 0.2:
        fields["tail_padding_alignment_in_elements"] = rng.randrange(1, 9)
    if rng.random() < 0.2:
        bits = xs.ELEMENT_TYPES[name].bits
        fields["element_size_in_bits"] = rng.choice([bits, 32, 64])
    if rng.random() < 0.3:
        fields["memory_space"] = rng.randrange(0, 6)
    if rng.random() < 0.1:
        fields["dynamic_shape_metadata_prefix_bytes"] = rng.randrange(1, 17)
    if rng.random() < 0.1:
        fields["index_primitive_type"] = rng.choice(UNSIGNED)
        fields["pointer_primitive_type"] = rng.choice(UNSIGNED)
    sizes = [dims[d] for d in reversed(order)]  # physical order, major first
    splittable = [i for i, s in enumerate(sizes) if s >= 3]
    if splittable and rng.random() < 0.15:
        position = rng.choice(splittable)
        cut = sorted(rng.sample(range(1, min(sizes[position], 1000)), k=1))
        fields["split_configs"] = ((position, tuple(cut)),)
    return fields


def random_shape(rng: random.Random, *, full_layout: bool = False, types: list[str] | None = None,
                 depth: int = 0) -> xs.Shape:
    types = types or NUMBERED_ARRAY_TYPES
    roll = rng.random()
    if depth < 3 and roll < 0.12:
        return xs.tuple_shape([random_shape(rng, full_layout=False, types=types, depth=depth + 1)
                               for _ in range(rng.randrange(0, 4))])
    if roll < 0.15:
        return xs.token_shape()
    return random_array(rng, types, full_layout)


# ----- jaxlib: xla_client.Shape and its serializer ------------------------------------------------------


@pytest.fixture(scope="module")
def xc() -> Any:
    pytest.importorskip("jax")
    from jax._src.lib import xla_client

    return xla_client


@pytest.fixture(scope="module")
def client_types(xc: Any) -> list[str]:
    """The element types xla_client.Shape.array_shape accepts (all but the 6-bit floats in jaxlib 0.10.2)."""
    accepted = []
    for name in NUMBERED_ARRAY_TYPES:
        try:
            xc.Shape.array_shape(xs.ELEMENT_TYPES[name].numpy_dtype, [2], [0])
        except Exception:
            continue
        accepted.append(name)
    return accepted


def test_proto_bytes_equal_jaxlib_for_thousands_of_shapes(xc: Any, client_types: list[str]) -> None:
    rng = random.Random(2024)
    for _ in range(4000):
        shape = random_shape(rng, types=client_types)
        client = to_xla_client_shape(shape)
        ours = to_proto_bytes(shape)
        assert ours == client.to_serialized_proto(), str(shape)
        assert from_proto_bytes(ours) == shape
        assert str(client) == str(shape)
        assert from_xla_client_shape(client) == shape


def test_xla_client_structure_matches(xc: Any, client_types: list[str]) -> None:
    rng = random.Random(7)
    for _ in range(300):
        shape = random_array(rng, client_types, full_layout=False)
        client = to_xla_client_shape(shape)
        assert tuple(client.dimensions()) == shape.dimensions
        assert tuple(client.layout().minor_to_major()) == shape.layout_or_default().minor_to_major
        assert tuple(client.is_dynamic_dimension(i) for i in range(shape.rank)) == shape.dynamic_dimensions
        assert np.dtype(client.numpy_dtype()) == shape.element_type.numpy_dtype


def test_xla_client_refusals(xc: Any) -> None:
    with pytest.raises(xs.ShapeError, match="opaque"):
        to_xla_client_shape(xs.opaque_shape())
    with pytest.raises(xs.ShapeError, match="only minor_to_major"):
        to_xla_client_shape(xs.parse_shape("f32[8,128]{1,0:T(8,128)}"))
    with pytest.raises(xs.ShapeError, match="only minor_to_major"):
        to_xla_client_shape(xs.parse_shape("f32[8]{0:S(1)}"))
    with pytest.raises(xs.ShapeError):
        to_xla_client_shape(xs.parse_shape("f32[2,2]{1,1}"))
    with pytest.raises(xs.ShapeError, match="xla_client rejects"):
        to_xla_client_shape(xs.make_shape("f6e2m3fn", [3]))
    with pytest.raises(xs.ShapeError, match="xla_client rejects"):
        to_xla_client_shape(xs.make_shape("f32", [INT64_MAX, 2]))


def test_shape_without_layout_gets_xla_default(xc: Any) -> None:
    bare = xs.parse_shape("f32[3,5]").without_layout()
    assert str(to_xla_client_shape(bare)) == "f32[3,5]{1,0}"
    assert to_proto_bytes(bare).hex() == "100b1a02030532020000"  # no layout field at all


# ----- jaxlib's HLO module proto: every layout attribute -----------------------------------------------

_MODULE_WORKER = r"""
import json, sys
from jaxlib import _hlo
out = []
for text in json.load(sys.stdin):
    module = "HloModule m\nENTRY e {\n  ROOT p = " + text + " parameter(0)\n}\n"
    try:
        out.append(_hlo.hlo_module_from_text(module).as_serialized_hlo_module_proto().hex())
    except Exception as err:
        out.append("error: " + str(err))
json.dump(out, sys.stdout)
"""


def xla_module_protos(texts: list[str]) -> list[str]:
    """XLA's serialized HloModuleProto for a parameter of each shape, in a worker that may abort safely."""
    result = subprocess.run([sys.executable, "-c", _MODULE_WORKER], input=json.dumps(texts), text=True,
                            capture_output=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    answer: list[str] = json.loads(result.stdout)
    return answer


def message_fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """A minimal independent protobuf reader for the test: (field, value) pairs, varints and bytes only."""
    fields: list[tuple[int, int | bytes]] = []
    pos = 0

    def varint() -> int:
        nonlocal pos
        value, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value

    while pos < len(data):
        key = varint()
        if key & 7 == 0:
            fields.append((key >> 3, varint()))
        elif key & 7 == 2:
            length = varint()
            fields.append((key >> 3, data[pos : pos + length]))
            pos += length
        else:
            raise AssertionError(f"unexpected wire type {key & 7}")
    return fields


def first_instruction_shape(module: bytes) -> bytes:
    """HloModuleProto.computations[0].instructions[0].shape (fields 3, 2, 3)."""
    computation = next(v for f, v in message_fields(module) if f == 3)
    assert isinstance(computation, bytes)
    instruction = next(v for f, v in message_fields(computation) if f == 2)
    assert isinstance(instruction, bytes)
    shape = next(v for f, v in message_fields(instruction) if f == 3)
    assert isinstance(shape, bytes)
    return shape


def test_proto_bytes_equal_xla_module_protos_with_full_layouts(xc: Any, client_types: list[str]) -> None:
    rng = random.Random(99)
    shapes = [random_array(rng, client_types, full_layout=True) for _ in range(800)]
    shapes += [random_shape(rng, types=client_types) for _ in range(200)]
    shapes += [xs.parse_shape(text) for text, _ in KNOWN]
    texts = [str(s) for s in shapes]
    protos = xla_module_protos(texts)
    for shape, text, proto in zip(shapes, texts, protos):
        assert not proto.startswith("error"), (text, proto)
        theirs = first_instruction_shape(bytes.fromhex(proto))
        assert to_proto_bytes(shape) == theirs, text
        assert from_proto_bytes(theirs) == shape, text


def test_jaxlib_numbers_for_the_6_bit_floats(xc: Any) -> None:
    """jaxlib 0.10.2 serializes f6e3m2fn as PrimitiveType 35 and f6e2m3fn as 36 (not yet in dtypes.py)."""
    protos = xla_module_protos(["f6e3m2fn[2]{0}", "f6e2m3fn[2]{0}"])
    numbers = {}
    for name, proto in zip(("f6e3m2fn", "f6e2m3fn"), protos):
        element = dict(message_fields(first_instruction_shape(bytes.fromhex(proto))))[2]
        numbers[name] = element
        known = xs.ELEMENT_TYPES[name].proto_number
        assert known is None or known == element
    assert numbers == {"f6e3m2fn": 35, "f6e2m3fn": 36}


# ----- JAX: jax.experimental.layout.Layout and arrays ---------------------------------------------------


@pytest.fixture(scope="module")
def jax_layout_class() -> Any:
    pytest.importorskip("jax")
    from jax.experimental.layout import Layout as JaxLayout

    return JaxLayout


@st.composite
def jax_expressible_shapes(draw: st.DrawFn) -> xs.Shape:
    rank = draw(st.integers(0, 4))
    dims = draw(st.lists(st.integers(0, 64), min_size=rank, max_size=rank))
    order = tuple(draw(st.permutations(list(range(rank)))))
    tiles = tuple(tuple(draw(st.lists(st.sampled_from([1, 2, 4, 8, 128]), min_size=1, max_size=3)))
                  for _ in range(draw(st.integers(0, 3))))
    name = draw(st.sampled_from(NUMBERED_ARRAY_TYPES))
    own = xs.ELEMENT_TYPES[name].bits
    bits = draw(st.sampled_from([0, own, 32] if own <= 32 else [0, own]))
    layout = Layout(order, tiles=tiles, element_size_in_bits=bits)
    return xs.Shape(xs.element_type(name), tuple(dims), (), layout)


@settings(max_examples=examples(300), deadline=None)
@given(jax_expressible_shapes())
def test_jax_layout_round_trip(jax_layout_class: Any, shape: xs.Shape) -> None:
    layout = to_jax_layout(shape)
    assert isinstance(layout, jax_layout_class)
    assert shape.layout is not None
    assert layout.major_to_minor == shape.layout.minor_to_major[::-1]
    assert layout.tiling == shape.layout.tiles
    assert layout.sub_byte_element_size_in_bits == shape.layout.element_size_in_bits
    dtype = shape.element_type.numpy_dtype
    assert from_jax_layout(layout, dtype, shape.dimensions) == shape
    assert to_jax_layout(from_jax_layout(layout, dtype, shape.dimensions)) == layout


@settings(max_examples=examples(200), deadline=None)
@given(jax_expressible_shapes())
def test_jax_layout_agrees_with_jaxs_own_lowering(jax_layout_class: Any, shape: xs.Shape) -> None:
    """Where JAX does not add E(bits) for sub-byte integers, its ``_to_xla_layout`` prints our layout."""
    assert shape.layout is not None
    etype = shape.element_type
    if etype.is_integral and etype.bits < 8 and shape.layout.element_size_in_bits == 0:
        return
    layout = to_jax_layout(shape)
    assert str(layout._to_xla_layout(etype.numpy_dtype)) == str(shape.layout)


def test_jax_layout_none_tiling_and_auto(jax_layout_class: Any) -> None:
    shape = from_jax_layout(jax_layout_class((0, 1)), np.float32, (3, 5))
    assert str(shape) == "f32[3,5]{1,0}"
    with pytest.raises(xs.ShapeError, match="AUTO"):
        from_jax_layout(jax_layout_class.AUTO, np.float32, (3, 5))
    with pytest.raises(xs.ShapeError):
        from_jax_layout(jax_layout_class((0,)), np.float32, (3, 5))  # rank mismatch


def test_to_jax_layout_refusals(jax_layout_class: Any) -> None:
    with pytest.raises(xs.ShapeError, match="memory_space"):
        to_jax_layout(xs.parse_shape("f32[8]{0:S(1)}"))
    with pytest.raises(xs.ShapeError, match="tail_padding_alignment_in_elements"):
        to_jax_layout(xs.parse_shape("f32[8]{0:L(4)}"))
    with pytest.raises(xs.ShapeError, match="only arrays"):
        to_jax_layout(xs.parse_shape("(f32[8])"))
    assert to_jax_layout(xs.parse_shape("f32[8]").without_layout()) == jax_layout_class((0,), tiling=())


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int8", "bool", "int4", "float16", "uint32"])
@pytest.mark.parametrize("dims", [(), (3,), (3, 5), (2, 1, 4)])
def test_shape_from_jax_array(jax_layout_class: Any, dtype: str, dims: tuple[int, ...]) -> None:
    import jax.numpy as jnp

    array = jnp.zeros(dims, dtype=dtype)
    shape = from_jax_array(array)
    assert shape.dimensions == dims
    assert shape.element_type == xs.element_type(array.dtype)
    assert to_jax_layout(shape) == array.format.layout
    assert from_jax_array(array, shard=True) == shape


def test_shape_from_jax_array_with_column_major_layout(jax_layout_class: Any) -> None:
    import jax
    from jax.experimental.layout import Format

    device = jax.devices()[0]
    sharding = jax.sharding.SingleDeviceSharding(device)
    try:
        array = jax.device_put(np.arange(15, dtype=np.float32).reshape(3, 5),
                               Format(jax_layout_class((1, 0)), sharding))
    except Exception as err:  # a backend may not take explicit layouts
        pytest.skip(f"device_put with a layout is not supported here: {err}")
    assert str(from_jax_array(array)) == "f32[3,5]{0,1}"


def test_shape_from_jax_array_on_host_memory(jax_layout_class: Any) -> None:
    import jax

    device = jax.devices()[0]
    try:
        array = jax.device_put(np.zeros((4,), np.float32),
                               jax.sharding.SingleDeviceSharding(device, memory_kind="pinned_host"))
    except Exception as err:
        pytest.skip(f"no pinned_host memory here: {err}")
    assert str(from_jax_array(array)) == "f32[4]{0:S(5)}"


def test_shape_from_non_jax_array(jax_layout_class: Any) -> None:
    with pytest.raises(xs.ShapeError, match="no concrete layout"):
        from_jax_array(np.zeros(3))


def test_importing_xlashapes_does_not_import_jax() -> None:
    code = ("import sys, xlashapes, xlashapes.interop, xlashapes.interop.jax, xlashapes.tpu, xlashapes.ops; "
            "print('jax' in sys.modules, 'jaxlib' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "False False", result.stderr


# ----- naming, merging in linear time, element type spellings (issues 11 and 15) -------------------------------


def test_old_names_remain_aliases_of_the_new_ones() -> None:
    assert interop.shape_to_proto_bytes is to_proto_bytes
    assert interop.shape_from_proto_bytes is from_proto_bytes
    assert interop.shape_from_jax_array is from_jax_array
    assert xs.to_proto_bytes is to_proto_bytes and xs.from_proto_bytes is from_proto_bytes
    for old in ("shape_to_proto_bytes", "shape_from_proto_bytes", "shape_from_jax_array"):
        assert not hasattr(xs, old), old  # the facade has one name per conversion


def test_repeated_layout_fields_merge_in_linear_time() -> None:
    """A singular submessage repeated 250,000 times (1 MB) merges occurrence by occurrence, not by concatenation."""
    head = bytes.fromhex("100b1a020305" "2a0408010800")  # f32[3,5]{1,0}
    data = head + bytes.fromhex("2a024001") * 125_000 + bytes.fromhex("2a024005") * 125_000  # S(1) ... then S(5)
    start = time.perf_counter()
    shape = from_proto_bytes(data)
    elapsed = time.perf_counter() - start
    assert str(shape) == "f32[3,5]{1,0:S(5)}"
    assert elapsed < 2.0, elapsed  # concatenating the occurrences took minutes here


def test_each_occurrence_of_a_message_is_decoded_on_its_own() -> None:
    """As protobuf merges them: a field cut across two occurrences is an error, with the byte where it is cut."""
    with pytest.raises(xs.ParseError, match=r"truncated varint \(at byte 9\)"):
        decode("100b1a020305" "2a0140" "2a0105")  # memory_space's key ends the first layout, its value starts the next
    with pytest.raises(xs.ParseError, match=r"at byte 12"):
        decode("100b1a020305" "2a024005" "2a02ff01")  # the second layout's first byte is byte 12
    merged = decode("100b1a03030507" "2a0408010800" "2a024005" "2a020802")  # minor_to_major [1, 0], S(5), [2]
    assert str(merged) == "f32[3,5,7]{1,0,2:S(5)}"  # repeated fields append, scalars take the last value


def test_offsets_name_the_byte_inside_nested_messages() -> None:
    with pytest.raises(xs.ParseError, match=r"expected a varint \(at byte 5\)"):
        decode("100b2a050d00000000")  # the fixed32 value inside the layout starts at byte 5


class FakeJaxLayout:
    """What from_jax_layout reads of a JAX Layout (jax itself is not needed for these)."""

    def __init__(self, major_to_minor: Any, tiling: Any = (), bits: Any = 0) -> None:
        self.major_to_minor = major_to_minor
        self.tiling = tiling
        self.sub_byte_element_size_in_bits = bits


@pytest.mark.parametrize("spelling", ["bf16", "bfloat16", "float32", "f32", np.float32, np.dtype("int8"), "bool",
                                      "int4", ml_dtypes.bfloat16, np.dtype(ml_dtypes.float8_e4m3fn)])
def test_from_jax_layout_takes_every_spelling_element_type_takes(spelling: Any) -> None:
    """Element types go through xs.element_type: whatever it accepts works, whatever it refuses is a ShapeError."""
    try:
        expected = xs.element_type(spelling)
    except xs.ShapeError:
        with pytest.raises(xs.ShapeError):
            from_jax_layout(FakeJaxLayout((0, 1)), spelling, (3, 5))
        return
    shape = from_jax_layout(FakeJaxLayout((0, 1)), spelling, (3, 5))
    assert shape.element_type == expected and str(shape) == f"{expected.name}[3,5]{{1,0}}"


@pytest.mark.parametrize(
    ("layout", "dims", "message"),
    [
        (FakeJaxLayout("01"), (3, 5), "major_to_minor"),
        (FakeJaxLayout((0, 1), tiling=5), (3, 5), "tiling"),
        (FakeJaxLayout((0, 1), tiling=[(8, "x")]), (3, 5), r"tiling\[0\]"),
        (FakeJaxLayout((0, 1), bits="4"), (3, 5), "sub_byte_element_size_in_bits"),
        (FakeJaxLayout((0, 1)), 35, "dims"),
        (FakeJaxLayout((0, 1)), (3, None), "dims"),
        (FakeJaxLayout((0, 1)), (3, 2**63), "dims"),
        (FakeJaxLayout((0, 0)), (3, 5), "not a permutation"),
    ],
)
def test_from_jax_layout_bad_input_is_a_shape_error(layout: Any, dims: Any, message: str) -> None:
    with pytest.raises(xs.ShapeError, match=message):
        from_jax_layout(layout, "f32", dims)


@pytest.mark.parametrize("junk", [None, "f32[2]", b"\x10\x0b", 3, np.zeros(2)])
def test_conversions_from_a_shape_refuse_anything_else(junk: Any) -> None:
    with pytest.raises(xs.ShapeError, match="needs a Shape"):
        to_proto_bytes(junk)
    with pytest.raises(xs.ShapeError, match="needs a Shape"):
        to_jax_layout(junk)
    with pytest.raises(xs.ShapeError, match="needs a Shape"):
        to_xla_client_shape(junk)


def field_boundaries(payload: bytes) -> list[int]:
    """The offsets where each top-level field of a message starts (and its end), read by the test's own reader."""
    offsets, position = [0], 0
    for field, value in message_fields(payload):
        position += len(varint_bytes(field << 3 | (2 if isinstance(value, bytes) else 0)))
        position += len(varint_bytes(len(value))) + len(value) if isinstance(value, bytes) else len(varint_bytes(value))
        offsets.append(position)
    assert position == len(payload)
    return offsets


def test_a_layout_split_into_two_occurrences_decodes_to_the_same_shape() -> None:
    """Protobuf's merge rule: two occurrences of the layout, cut at any field boundary, mean the one layout."""
    rng = random.Random(11)
    checked = 0
    for _ in range(300):
        shape = random_array(rng, NUMBERED_ARRAY_TYPES, full_layout=True)
        assert shape.layout is not None
        head = interop.varint_field(2, interop.proto_number(shape.element_type))
        head += interop.packed_field(3, shape.dimensions)
        layout = interop.layout_message(shape.layout)
        tail = interop.packed_field(6, shape.dynamic_dimensions)
        cut = rng.choice(field_boundaries(layout))
        data = (head + interop.length_delimited_field(5, layout[:cut]) + interop.length_delimited_field(5, layout[cut:])
                + tail)
        assert from_proto_bytes(data) == shape, (str(shape), cut)
        checked += 1
    assert checked == 300

