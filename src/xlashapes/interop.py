"""Interop with JAX layouts, jaxlib's ``xla_client.Shape`` and XLA's ``ShapeProto`` wire format.

JAX stays optional: importing xlashapes never imports jax; the JAX and jaxlib functions import it when called.

ShapeProto / LayoutProto: a hand-written encoder and decoder, not the ``protobuf`` runtime.
The argument, in order of weight:

* Dependencies. The runtime dependencies are numpy and ml_dtypes only. jaxlib does not bring the Python
  ``protobuf`` package either (it serializes in C++; ``import google.protobuf`` fails in an environment with
  jax 0.10.2 installed), so with protobuf as an optional extra ``shape_to_proto_bytes`` would be missing from
  a default install and from the ``jax`` extra alike, and every caller would need a fallback.
* Size. We may not copy XLA's ``.proto`` file, so protobuf would need the message descriptors built by hand at
  run time (``descriptor_pb2`` + ``message_factory``): about as much code as the four messages' encoder here
  (varints, packed repeated fields, length-delimited submessages), which the tests check byte for byte
  against jaxlib's own serializer on thousands of shapes.
* Control. The decoder must raise only ParseError/ShapeError on any input and refuse absurd sizes
  (``max_bytes``, nesting depth); here that is explicit, with the byte offset in every message.
* Speed is not the deciding factor: shapes are a few dozen bytes.

The field numbers below are declared from XLA's public ``xla/xla_data.proto`` (openxla/xla). Encoding follows
XLA's serializer: fields in field-number order, repeated scalars packed, fields at their proto3 default
omitted, except that XLA always writes ``tail_padding_alignment_in_elements`` (1 by default) in a layout and
``is_dynamic_dimension`` for every dimension of an array. The sparse-layout fields (``dim_level_types``,
``dim_unique``, ``dim_ordered``, ``physical_shape``) are encoded as LayoutProto declares them, but have no
jaxlib reference: jaxlib 0.10.2's XLA drops ``dim_level_types`` when it reads a LayoutProto, and then rejects
index/pointer types and a physical shape on what it takes for a dense layout.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from .dtypes import ELEMENT_TYPES, OPAQUE_TYPE, TOKEN_TYPE, TUPLE_TYPE, ElementType, element_type
from .errors import ParseError, ShapeError
from .layout import DIM_LEVEL_TYPES, INT64_MAX, Layout, SplitConfig, default_layout, xla_layout_problem
from .shape import Shape, tuple_shape
from .text import MAX_TUPLE_DEPTH, parse_shape

# ----------------------------------------------------------------------------------------------------
# Field numbers (xla/xla_data.proto)
# ----------------------------------------------------------------------------------------------------

SHAPE_ELEMENT_TYPE = 2
SHAPE_DIMENSIONS = 3
SHAPE_TUPLE_SHAPES = 4
SHAPE_LAYOUT = 5
SHAPE_IS_DYNAMIC_DIMENSION = 6

LAYOUT_MINOR_TO_MAJOR = 1
LAYOUT_TILES = 6
LAYOUT_ELEMENT_SIZE_IN_BITS = 7
LAYOUT_MEMORY_SPACE = 8
LAYOUT_DIM_LEVEL_TYPES = 9
LAYOUT_PHYSICAL_SHAPE = 10
LAYOUT_INDEX_PRIMITIVE_TYPE = 11
LAYOUT_POINTER_PRIMITIVE_TYPE = 12
LAYOUT_DIM_UNIQUE = 13
LAYOUT_DIM_ORDERED = 14
LAYOUT_DYNAMIC_SHAPE_METADATA_PREFIX_BYTES = 15
LAYOUT_TAIL_PADDING_ALIGNMENT = 16
LAYOUT_SPLIT_CONFIGS = 17

TILE_DIMENSIONS = 1
SPLIT_CONFIG_DIMENSION = 1
SPLIT_CONFIG_SPLIT_INDICES = 2

VARINT, FIXED64, LENGTH_DELIMITED, FIXED32 = 0, 1, 2, 5

MAX_PROTO_BYTES = 1 << 26
"""Default limit on the size of a serialized shape ``shape_from_proto_bytes`` accepts (64 MiB)."""

_UINT64 = (1 << 64) - 1

# ----------------------------------------------------------------------------------------------------
# Encoding
# ----------------------------------------------------------------------------------------------------


def varint_bytes(value: int) -> bytes:
    """``value`` (an int64, negatives as two's complement) as a protobuf base-128 varint."""
    number = value & _UINT64
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def field_key(field: int, wire_type: int) -> bytes:
    """The key that starts a field: its number and wire type as one varint."""
    return varint_bytes(field << 3 | wire_type)


def varint_field(field: int, value: int) -> bytes:
    """A singular varint field, or nothing when ``value`` is 0 (proto3 omits defaults)."""
    return field_key(field, VARINT) + varint_bytes(value) if value else b""


def length_delimited_field(field: int, payload: bytes) -> bytes:
    """A length-delimited field (submessage or packed values)."""
    return field_key(field, LENGTH_DELIMITED) + varint_bytes(len(payload)) + payload


def packed_field(field: int, values: Any) -> bytes:
    """A packed repeated varint field, or nothing when there are no values."""
    if not values:
        return b""
    return length_delimited_field(field, b"".join(varint_bytes(int(v)) for v in values))


def shape_to_proto_bytes(shape: Shape) -> bytes:
    """The serialized ``xla.ShapeProto`` of ``shape``, byte-identical to jaxlib's ``to_serialized_proto()``.

    >>> shape_to_proto_bytes(parse_shape("f32[]")).hex()
    '100b2a03800101'
    """
    return shape_message(shape)


def proto_number(etype: ElementType) -> int:
    """The ``xla.PrimitiveType`` number of ``etype``, or ShapeError when xlashapes does not know it."""
    if etype.proto_number is None:
        raise ShapeError(f"element type {etype} has no known xla.PrimitiveType number; cannot serialize it")
    return etype.proto_number


def shape_message(shape: Shape) -> bytes:
    """The ShapeProto fields of ``shape``, in field-number order."""
    parts = [varint_field(SHAPE_ELEMENT_TYPE, proto_number(shape.element_type))]
    parts.append(packed_field(SHAPE_DIMENSIONS, shape.dimensions))
    parts.extend(length_delimited_field(SHAPE_TUPLE_SHAPES, shape_message(sub)) for sub in shape.tuple_shapes)
    if shape.layout is not None:
        parts.append(length_delimited_field(SHAPE_LAYOUT, layout_message(shape.layout)))
    parts.append(packed_field(SHAPE_IS_DYNAMIC_DIMENSION, shape.dynamic_dimensions))
    return b"".join(parts)


def layout_message(layout: Layout) -> bytes:
    """The LayoutProto fields of ``layout``, in field-number order."""
    if layout.padded_dimensions is not None:
        raise ShapeError("legacy padded_dimensions/padding_value have no field in today's LayoutProto (reserved 2, 3)")
    parts = [packed_field(LAYOUT_MINOR_TO_MAJOR, layout.minor_to_major)]
    parts.extend(length_delimited_field(LAYOUT_TILES, packed_field(TILE_DIMENSIONS, tile)) for tile in layout.tiles)
    parts.append(varint_field(LAYOUT_ELEMENT_SIZE_IN_BITS, layout.element_size_in_bits))
    parts.append(varint_field(LAYOUT_MEMORY_SPACE, layout.memory_space))
    parts.append(packed_field(LAYOUT_DIM_LEVEL_TYPES, [DIM_LEVEL_TYPES.index(t) for t in layout.dim_level_types]))
    if layout.physical_shape is not None:
        parts.append(length_delimited_field(LAYOUT_PHYSICAL_SHAPE, shape_message(layout.physical_shape)))
    for field, kind in ((LAYOUT_INDEX_PRIMITIVE_TYPE, layout.index_primitive_type),
                        (LAYOUT_POINTER_PRIMITIVE_TYPE, layout.pointer_primitive_type)):
        if kind is not None:
            parts.append(varint_field(field, proto_number(kind)))
    parts.append(packed_field(LAYOUT_DIM_UNIQUE, layout.dim_unique))
    parts.append(packed_field(LAYOUT_DIM_ORDERED, layout.dim_ordered))
    parts.append(varint_field(LAYOUT_DYNAMIC_SHAPE_METADATA_PREFIX_BYTES, layout.dynamic_shape_metadata_prefix_bytes))
    parts.append(field_key(LAYOUT_TAIL_PADDING_ALIGNMENT, VARINT)
                 + varint_bytes(layout.tail_padding_alignment_in_elements))
    parts.extend(length_delimited_field(LAYOUT_SPLIT_CONFIGS, split_config_message(c)) for c in layout.split_configs)
    return b"".join(parts)


def split_config_message(config: SplitConfig) -> bytes:
    """The SplitConfigProto fields of ``config``."""
    return (varint_field(SPLIT_CONFIG_DIMENSION, config.dimension)
            + packed_field(SPLIT_CONFIG_SPLIT_INDICES, config.split_indices))


# ----------------------------------------------------------------------------------------------------
# Decoding
# ----------------------------------------------------------------------------------------------------

# How each field is read: "int" (int64 varint), "bool", "message" (length-delimited bytes); repeated or not.
_SCALAR, _REPEATED = False, True
_SHAPE_FIELDS = {
    SHAPE_ELEMENT_TYPE: ("int", _SCALAR),
    SHAPE_DIMENSIONS: ("int", _REPEATED),
    SHAPE_TUPLE_SHAPES: ("message", _REPEATED),
    SHAPE_LAYOUT: ("message", _SCALAR),
    SHAPE_IS_DYNAMIC_DIMENSION: ("bool", _REPEATED),
}
_LAYOUT_FIELDS = {
    LAYOUT_MINOR_TO_MAJOR: ("int", _REPEATED),
    LAYOUT_TILES: ("message", _REPEATED),
    LAYOUT_ELEMENT_SIZE_IN_BITS: ("int", _SCALAR),
    LAYOUT_MEMORY_SPACE: ("int", _SCALAR),
    LAYOUT_DIM_LEVEL_TYPES: ("int", _REPEATED),
    LAYOUT_PHYSICAL_SHAPE: ("message", _SCALAR),
    LAYOUT_INDEX_PRIMITIVE_TYPE: ("int", _SCALAR),
    LAYOUT_POINTER_PRIMITIVE_TYPE: ("int", _SCALAR),
    LAYOUT_DIM_UNIQUE: ("bool", _REPEATED),
    LAYOUT_DIM_ORDERED: ("bool", _REPEATED),
    LAYOUT_DYNAMIC_SHAPE_METADATA_PREFIX_BYTES: ("int", _SCALAR),
    LAYOUT_TAIL_PADDING_ALIGNMENT: ("int", _SCALAR),
    LAYOUT_SPLIT_CONFIGS: ("message", _REPEATED),
}
_TILE_FIELDS = {TILE_DIMENSIONS: ("int", _REPEATED)}
_SPLIT_CONFIG_FIELDS = {SPLIT_CONFIG_DIMENSION: ("int", _SCALAR), SPLIT_CONFIG_SPLIT_INDICES: ("int", _REPEATED)}

_TYPES_BY_NUMBER = {t.proto_number: t for t in ELEMENT_TYPES.values() if t.proto_number is not None}


class _Wire:
    """A cursor over serialized protobuf bytes; every error is a ParseError naming the byte offset."""

    __slots__ = ("base", "data", "end", "pos")

    def __init__(self, data: bytes, base: int = 0) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.base = base

    def error(self, message: str, at: int | None = None) -> ParseError:
        return ParseError(f"bad ShapeProto bytes: {message} (at byte {self.base + (self.pos if at is None else at)})")

    def varint(self) -> int:
        """The next varint as an unsigned 64-bit number."""
        start = self.pos
        result = 0
        for shift in range(0, 70, 7):
            if self.pos >= self.end:
                raise self.error("truncated varint", start)
            byte = self.data[self.pos]
            self.pos += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                if result > _UINT64:
                    raise self.error("varint overflows 64 bits", start)
                return result
        raise self.error("varint longer than 10 bytes", start)

    def fields(self) -> Iterator[tuple[int, int, int | bytes, int]]:
        """Every field as (number, wire type, value, offset of its value): ints for varints, bytes otherwise."""
        while self.pos < self.end:
            key_at = self.pos
            key = self.varint()
            field, wire_type = key >> 3, key & 7
            if field == 0 or field > 0x1FFFFFFF:
                raise self.error(f"invalid field number {field}", key_at)
            value_at = self.pos
            yield field, wire_type, self.value(wire_type, key_at), self.base + value_at

    def value(self, wire_type: int, key_at: int) -> int | bytes:
        if wire_type == VARINT:
            return self.varint()
        if wire_type in (FIXED64, FIXED32):
            return self.take(8 if wire_type == FIXED64 else 4)
        if wire_type == LENGTH_DELIMITED:
            length_at = self.pos
            length = self.varint()
            if length > self.end - self.pos:
                raise self.error(f"length {length} runs past the end", length_at)
            return self.take(length)
        raise self.error(f"unsupported wire type {wire_type} (groups are not used by ShapeProto)", key_at)

    def take(self, count: int) -> bytes:
        if count > self.end - self.pos:
            raise self.error(f"truncated fixed-width value ({count} bytes)")
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk


def _signed(number: int) -> int:
    return number - (1 << 64) if number > INT64_MAX else number


def _packed_varints(payload: bytes, base: int) -> list[int]:
    wire = _Wire(payload, base)
    values = []
    while wire.pos < wire.end:
        values.append(wire.varint())
    return values


def decoded_fields(data: bytes, schema: dict[int, tuple[str, bool]], base: int) -> dict[int, Any]:
    """The known fields of one message: repeated ones as lists, singular scalars last-wins, messages merged."""
    out: dict[int, Any] = {}
    wire = _Wire(data, base)
    for field, wire_type, value, at in wire.fields():
        spec = schema.get(field)
        if spec is None:
            continue  # unknown fields are skipped, as protobuf parsers do
        kind, repeated = spec
        if kind == "message":
            if wire_type != LENGTH_DELIMITED:
                raise wire.error(f"field {field} must be length-delimited, got wire type {wire_type}", at - base)
            assert isinstance(value, bytes)
            if repeated:
                out.setdefault(field, []).append((value, at))
            else:  # a repeated occurrence of a singular submessage merges into it, as protobuf does
                previous = out.get(field, (b"", at))
                out[field] = (previous[0] + value, previous[1])
            continue
        numbers = _scalar_values(wire, field, wire_type, value, at, repeated)
        converted = [bool(n) if kind == "bool" else _signed(n) for n in numbers]
        if repeated:
            out.setdefault(field, []).extend(converted)
        elif converted:
            out[field] = converted[-1]
    return out


def _scalar_values(wire: _Wire, field: int, wire_type: int, value: int | bytes, at: int, repeated: bool) -> list[int]:
    if wire_type == VARINT:
        assert isinstance(value, int)
        return [value]
    if wire_type == LENGTH_DELIMITED and repeated:
        assert isinstance(value, bytes)
        return _packed_varints(value, at)
    raise wire.error(f"field {field} has wire type {wire_type}, expected a varint", at - wire.base)


def shape_from_proto_bytes(data: bytes | bytearray | memoryview, *, max_bytes: int = MAX_PROTO_BYTES) -> Shape:
    """The Shape a serialized ``xla.ShapeProto`` describes; only ParseError/ShapeError on bad bytes.

    Inputs longer than ``max_bytes`` and tuples nested deeper than the text parser allows are refused.
    Layouts are taken as XLA stores them (a missing or 0 tail padding alignment reads as 1) and are not
    validated beyond having one minor_to_major entry per dimension: call ``Shape.validate()`` for that.

    >>> str(shape_from_proto_bytes(bytes.fromhex("100b2a03800101")))
    'f32[]'
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ParseError(f"ShapeProto bytes must be bytes, got {type(data).__name__}")
    blob = bytes(data)
    if len(blob) > max_bytes:
        raise ParseError(f"ShapeProto of {len(blob)} bytes exceeds the limit of {max_bytes} bytes (max_bytes)")
    return shape_from_message(blob, 0, 0)


def shape_from_message(data: bytes, base: int, depth: int) -> Shape:
    """The Shape of one ShapeProto message that starts at byte ``base`` of the whole input."""
    if depth > MAX_TUPLE_DEPTH:
        raise ParseError(f"bad ShapeProto bytes: shapes nested more than {MAX_TUPLE_DEPTH} deep (at byte {base})")
    fields = decoded_fields(data, _SHAPE_FIELDS, base)
    etype = _element_type_numbered(fields.get(SHAPE_ELEMENT_TYPE, 0), "element_type")
    dims = tuple(fields.get(SHAPE_DIMENSIONS, ()))
    dynamic = tuple(fields.get(SHAPE_IS_DYNAMIC_DIMENSION, ()))
    subs = tuple(shape_from_message(sub, at, depth + 1) for sub, at in fields.get(SHAPE_TUPLE_SHAPES, ()))
    layout = None
    if SHAPE_LAYOUT in fields:
        layout_bytes, at = fields[SHAPE_LAYOUT]
        layout = layout_from_message(layout_bytes, at, depth)
    if etype is TUPLE_TYPE:
        if dims or dynamic or layout is not None:
            raise ShapeError("ShapeProto: a tuple has no dimensions, dynamic dimensions or layout")
        return tuple_shape(subs)
    if subs:
        raise ShapeError(f"ShapeProto: only tuples hold tuple_shapes, not {etype}")
    if dynamic and len(dynamic) != len(dims):
        raise ShapeError(f"ShapeProto: {len(dynamic)} is_dynamic_dimension entries for {len(dims)} dimensions")
    if layout is not None and etype.is_array_type and len(layout.minor_to_major) != len(dims):
        raise ShapeError(f"ShapeProto: layout {layout} has {len(layout.minor_to_major)} minor_to_major entries "
                         f"but the shape has {len(dims)} dimensions")
    return Shape(etype, dims, dynamic, layout)


def layout_from_message(data: bytes, base: int, depth: int) -> Layout:
    """The Layout of one LayoutProto message."""
    fields = decoded_fields(data, _LAYOUT_FIELDS, base)
    tiles = tuple(tuple(decoded_fields(t, _TILE_FIELDS, at).get(TILE_DIMENSIONS, ()))
                  for t, at in fields.get(LAYOUT_TILES, ()))
    configs = tuple(_split_config(c, at) for c, at in fields.get(LAYOUT_SPLIT_CONFIGS, ()))
    physical = None
    if LAYOUT_PHYSICAL_SHAPE in fields:
        physical_bytes, at = fields[LAYOUT_PHYSICAL_SHAPE]
        physical = shape_from_message(physical_bytes, at, depth + 1)
    levels = tuple(_dim_level_type(n) for n in fields.get(LAYOUT_DIM_LEVEL_TYPES, ()))
    return Layout(
        tuple(fields.get(LAYOUT_MINOR_TO_MAJOR, ())),
        tiles=tiles,
        tail_padding_alignment_in_elements=fields.get(LAYOUT_TAIL_PADDING_ALIGNMENT, 0) or 1,
        index_primitive_type=_optional_type(fields.get(LAYOUT_INDEX_PRIMITIVE_TYPE, 0), "index_primitive_type"),
        pointer_primitive_type=_optional_type(fields.get(LAYOUT_POINTER_PRIMITIVE_TYPE, 0), "pointer_primitive_type"),
        element_size_in_bits=fields.get(LAYOUT_ELEMENT_SIZE_IN_BITS, 0),
        memory_space=fields.get(LAYOUT_MEMORY_SPACE, 0),
        split_configs=configs,
        dynamic_shape_metadata_prefix_bytes=fields.get(LAYOUT_DYNAMIC_SHAPE_METADATA_PREFIX_BYTES, 0),
        dim_level_types=levels,
        dim_unique=tuple(fields.get(LAYOUT_DIM_UNIQUE, ())),
        dim_ordered=tuple(fields.get(LAYOUT_DIM_ORDERED, ())),
        physical_shape=physical,
    )


def _split_config(data: bytes, base: int) -> SplitConfig:
    fields = decoded_fields(data, _SPLIT_CONFIG_FIELDS, base)
    return SplitConfig(fields.get(SPLIT_CONFIG_DIMENSION, 0), tuple(fields.get(SPLIT_CONFIG_SPLIT_INDICES, ())))


def _element_type_numbered(number: int, what: str) -> ElementType:
    if number == 0:
        raise ShapeError(f"ShapeProto: {what} is missing or PRIMITIVE_TYPE_INVALID (0)")
    found = _TYPES_BY_NUMBER.get(number)
    if found is None:
        raise ShapeError(f"ShapeProto: {what} {number} is not an xla.PrimitiveType xlashapes supports")
    return found


def _optional_type(number: int, what: str) -> ElementType | None:
    return None if number == 0 else _element_type_numbered(number, what)


def _dim_level_type(number: int) -> str:
    if not 0 <= number < len(DIM_LEVEL_TYPES):
        raise ShapeError(f"ShapeProto: dim_level_types entry {number} is not a DimLevelType (0..3)")
    return DIM_LEVEL_TYPES[number]


# ----------------------------------------------------------------------------------------------------
# JAX: jax.experimental.layout.Layout and arrays
# ----------------------------------------------------------------------------------------------------


def from_jax_layout(layout: Any, dtype: Any, dims: Any) -> Shape:
    """The array Shape a ``jax.experimental.layout.Layout`` gives ``dims`` of ``dtype``, validated.

    Fields map one to one: ``major_to_minor`` reversed is ``minor_to_major``, ``tiling`` gives the tiles
    (``None`` and ``()`` both mean untiled) and ``sub_byte_element_size_in_bits`` is ``E(n)``. Note that when
    JAX lowers a Layout itself (``Layout._to_xla_layout``) it ignores the element size of an untiled layout and
    fills in ``E(bits)`` for sub-byte integer dtypes of a tiled one; this function does neither.
    """
    major_to_minor = getattr(layout, "major_to_minor", None)
    if major_to_minor is None:
        raise ShapeError(f"expected a jax.experimental.layout.Layout, got {layout!r} (Layout.AUTO has no fields)")
    tiling = getattr(layout, "tiling", None) or ()
    bits = getattr(layout, "sub_byte_element_size_in_bits", 0) or 0
    shape = Shape(element_type(dtype), tuple(dims), (), Layout(
        tuple(major_to_minor)[::-1], tiles=tuple(tuple(t) for t in tiling), element_size_in_bits=bits))
    return shape.validate()


def to_jax_layout(shape: Shape) -> Any:
    """The ``jax.experimental.layout.Layout`` of an array shape; ShapeError for what JAX's Layout cannot hold.

    JAX's Layout holds dimension order, tiles and the element size only; memory space (``S(n)``) lives in a
    sharding's ``memory_kind`` instead, and the other layout fields have no JAX counterpart.
    """
    jax_layout_class = importlib.import_module("jax.experimental.layout").Layout
    if not shape.is_array:
        raise ShapeError(f"only arrays have a JAX layout, not {shape}")
    layout = shape.layout_or_default()
    extra = inexpressible_in_jax(layout)
    if extra:
        raise ShapeError(f"JAX's Layout cannot express {', '.join(extra)} of {shape}")
    return jax_layout_class(layout.major_to_minor, tiling=layout.tiles,
                     sub_byte_element_size_in_bits=layout.element_size_in_bits)


def inexpressible_in_jax(layout: Layout) -> list[str]:
    """The names of ``layout``'s non-default fields that JAX's Layout has no place for."""
    defaults = default_layout(len(layout.minor_to_major))
    names = ("tail_padding_alignment_in_elements", "index_primitive_type", "pointer_primitive_type", "memory_space",
             "split_configs", "dynamic_shape_metadata_prefix_bytes", "dim_level_types", "dim_unique", "dim_ordered",
             "padded_dimensions", "physical_shape")
    return [name for name in names if getattr(layout, name) != getattr(defaults, name)]


_HOST_MEMORY_KINDS = {"pinned_host": 5}


def shape_from_jax_array(array: Any, *, shard: bool = False) -> Shape:
    """The Shape of a JAX array: its dtype, shape (or one shard's with ``shard=True``) and ``.format`` layout.

    The sharding's ``pinned_host`` memory kind becomes memory space ``S(5)``, XLA's host memory space (what
    JAX lowers it to); every other memory kind stays ``S(0)``.
    """
    form = getattr(array, "format", None)
    layout = getattr(form, "layout", None)
    if form is None or getattr(layout, "major_to_minor", None) is None:
        raise ShapeError(f"{type(array).__name__} has no concrete layout in .format (a committed jax.Array has)")
    sharding = getattr(form, "sharding", None)
    dims = tuple(array.shape)
    if shard:
        if sharding is None:
            raise ShapeError("the array has no sharding to take a shard shape from")
        dims = tuple(sharding.shard_shape(dims))
    shape = from_jax_layout(layout, array.dtype, dims)
    space = _HOST_MEMORY_KINDS.get(getattr(sharding, "memory_kind", None) or "", 0)
    if space:
        assert shape.layout is not None
        shape = shape.with_layout(shape.layout.replace(memory_space=space))
    return shape


# ----------------------------------------------------------------------------------------------------
# jaxlib: xla_client.Shape
# ----------------------------------------------------------------------------------------------------


def _xla_client() -> Any:
    return importlib.import_module("jax._src.lib").xla_client


def to_xla_client_shape(shape: Shape) -> Any:
    """jaxlib's ``xla_client.Shape`` for ``shape`` (arrays get the default layout when they have none).

    ``xla_client.Shape.array_shape`` takes only minor_to_major, so a layout with tiles or any other attribute
    is a ShapeError here; so are opaque shapes, which xla_client cannot build.
    """
    xc = _xla_client()
    return _client_shape(xc, shape)


def _client_shape(xc: Any, shape: Shape) -> Any:
    if shape.is_tuple:
        return xc.Shape.tuple_shape([_client_shape(xc, sub) for sub in shape.tuple_shapes])
    if shape.element_type is TOKEN_TYPE:
        return xc.Shape.token_shape()
    if shape.element_type is OPAQUE_TYPE:
        raise ShapeError("xla_client.Shape has no constructor for opaque shapes")
    layout = shape.layout_or_default()
    if layout.replace(minor_to_major=()) != default_layout(0):
        raise ShapeError(f"xla_client.Shape.array_shape takes only minor_to_major; {shape} has more layout")
    problem = xla_layout_problem(layout, shape)
    if problem is not None:
        raise ShapeError(f"{shape}: {problem}")
    dtype = shape.element_type.numpy_dtype
    try:
        return xc.Shape.array_shape(dtype, list(shape.dimensions), list(layout.minor_to_major),
                                    list(shape.dynamic_dimensions))
    except Exception as err:  # jaxlib raises its own error types (e.g. for dtypes it does not know)
        raise ShapeError(f"xla_client rejects {shape}: {err}") from None


def from_xla_client_shape(client_shape: Any) -> Shape:
    """The Shape of a jaxlib ``xla_client.Shape``, read from its ``str()`` (exactly XLA's shape text)."""
    return parse_shape(str(client_shape))
