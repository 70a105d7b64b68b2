"""XLA's ``ShapeProto`` / ``LayoutProto`` wire format: a hand-written encoder and decoder, not the ``protobuf`` runtime.
The argument, in order of weight:

* Dependencies. The runtime dependencies are numpy and ml_dtypes only. jaxlib does not bring the Python
  ``protobuf`` package either (it serializes in C++; ``import google.protobuf`` fails in an environment with
  jax 0.10.2 installed), so with protobuf as an optional extra ``to_proto_bytes`` would be missing from
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

Repeated occurrences of a singular submessage (``layout`` given twice) are merged as protobuf merges them: each
occurrence is decoded on its own, scalars last-wins and repeated fields appended, in time linear in the input.

>>> from xlashapes import parse_shape
>>> shape = from_proto_bytes(to_proto_bytes(parse_shape("bf16[8,128]{1,0:T(8,128)(2,1)}")))
>>> str(shape)
'bf16[8,128]{1,0:T(8,128)(2,1)}'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

from .._ints import INT64_MAX
from ..dtypes import ELEMENT_TYPES, TUPLE_TYPE, ElementType
from ..errors import ParseError, ShapeError
from ..layout import DIM_LEVEL_TYPES, Layout, SplitConfig
from ..shape import Shape, tuple_shape
from ..text import MAX_TUPLE_DEPTH

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
"""Default limit on the size of a serialized shape ``from_proto_bytes`` accepts (64 MiB)."""

_UINT64 = (1 << 64) - 1

# ----------------------------------------------------------------------------------------------------
# Encoding
# ----------------------------------------------------------------------------------------------------


def varint_bytes(value: int) -> bytes:
    """``value`` (an int64, negatives as two's complement) as a protobuf base-128 varint.

    >>> varint_bytes(300).hex()
    'ac02'
    """
    number = value & _UINT64
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def field_key(field: int, wire_type: int) -> bytes:
    """The key that starts a field: its number and wire type as one varint.

    >>> field_key(SHAPE_LAYOUT, LENGTH_DELIMITED).hex()
    '2a'
    """
    return varint_bytes(field << 3 | wire_type)


def varint_field(field: int, value: int) -> bytes:
    """A singular varint field, or nothing when ``value`` is 0 (proto3 omits defaults).

    >>> varint_field(LAYOUT_MEMORY_SPACE, 1).hex(), varint_field(LAYOUT_MEMORY_SPACE, 0)
    ('4001', b'')
    """
    return field_key(field, VARINT) + varint_bytes(value) if value else b""


def length_delimited_field(field: int, payload: bytes) -> bytes:
    """A length-delimited field (submessage or packed values).

    >>> length_delimited_field(SHAPE_LAYOUT, b"\x40\x01").hex()
    '2a024001'
    """
    return field_key(field, LENGTH_DELIMITED) + varint_bytes(len(payload)) + payload


def packed_field(field: int, values: Any) -> bytes:
    """A packed repeated varint field, or nothing when there are no values.

    >>> packed_field(SHAPE_DIMENSIONS, [3, 5]).hex()
    '1a020305'
    """
    if not values:
        return b""
    return length_delimited_field(field, b"".join(varint_bytes(int(v)) for v in values))


def to_proto_bytes(shape: Shape) -> bytes:
    """The serialized ``xla.ShapeProto`` of ``shape``, byte-identical to jaxlib's ``to_serialized_proto()``.

    >>> from xlashapes import parse_shape
    >>> to_proto_bytes(parse_shape("f32[]")).hex()
    '100b2a03800101'
    """
    if not isinstance(shape, Shape):
        raise ShapeError(f"to_proto_bytes needs a Shape, got {type(shape).__name__}")
    return shape_message(shape)


def proto_number(etype: ElementType) -> int:
    """The ``xla.PrimitiveType`` number of ``etype``, or ShapeError when xlashapes does not know it.

    >>> proto_number(ELEMENT_TYPES["f32"])
    11
    """
    if etype.proto_number is None:
        raise ShapeError(f"element type {etype} has no known xla.PrimitiveType number; cannot serialize it")
    return etype.proto_number


def shape_message(shape: Shape) -> bytes:
    """The ShapeProto fields of ``shape``, in field-number order.

    >>> from xlashapes import parse_shape
    >>> shape_message(parse_shape("token[]")).hex()
    '1011'
    """
    parts = [varint_field(SHAPE_ELEMENT_TYPE, proto_number(shape.element_type))]
    parts.append(packed_field(SHAPE_DIMENSIONS, shape.dimensions))
    parts.extend(length_delimited_field(SHAPE_TUPLE_SHAPES, shape_message(sub)) for sub in shape.tuple_shapes)
    if shape.layout is not None:
        parts.append(length_delimited_field(SHAPE_LAYOUT, layout_message(shape.layout)))
    parts.append(packed_field(SHAPE_IS_DYNAMIC_DIMENSION, shape.dynamic_dimensions))
    return b"".join(parts)


def layout_message(layout: Layout) -> bytes:
    """The LayoutProto fields of ``layout``, in field-number order.

    >>> layout_message(Layout((0,), memory_space=1)).hex()
    '0a01004001800101'
    """
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
    """The SplitConfigProto fields of ``config``.

    >>> split_config_message(SplitConfig(0, (2, 4))).hex()
    '12020204'
    """
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
        pos = self.pos
        if pos < self.end:
            byte = self.data[pos]
            if byte < 0x80:  # the common one-byte case, fast
                self.pos = pos + 1
                return byte
        return self.long_varint()

    def long_varint(self) -> int:
        """The next varint, any length (up to 10 bytes)."""
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

    def field(self) -> tuple[int, int, int | bytes, int]:
        """The next field as (number, wire type, value, offset of its value): ints for varints, bytes otherwise."""
        key_at = self.pos
        key = self.varint()
        field, wire_type = key >> 3, key & 7
        if field == 0 or field > 0x1FFFFFFF:
            raise self.error(f"invalid field number {field}", key_at)
        value_start = self.pos
        value = self.value(wire_type, key_at)
        value_at = self.pos - len(value) if isinstance(value, bytes) else value_start  # a payload's first byte
        return field, wire_type, value, self.base + value_at

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


Chunks: TypeAlias = Sequence[tuple[bytes, int]]
"""The occurrences of one message in the input: (payload, offset of the payload in the whole input) each."""


def decoded_fields(chunks: Chunks, schema: dict[int, tuple[str, bool]]) -> dict[int, Any]:
    """The known fields of one message given in one or more occurrences, merged as protobuf merges them.

    Repeated fields are lists (a repeated submessage is a list of (payload, offset)); singular scalars are
    last-wins; a singular submessage is the list of its occurrences (payload, offset), decoded together later.
    Each occurrence is decoded on its own, so merging costs time linear in the input.

    >>> decoded_fields([(bytes.fromhex("4001"), 0), (bytes.fromhex("4005"), 2)], _LAYOUT_FIELDS)
    {8: 5}
    """
    out: dict[int, Any] = {}
    for data, base in chunks:
        wire = _Wire(data, base)
        while wire.pos < wire.end:
            field, wire_type, value, at = wire.field()
            spec = schema.get(field)
            if spec is None:
                continue  # unknown fields are skipped, as protobuf parsers do
            kind, repeated = spec
            if kind == "message":
                if wire_type != LENGTH_DELIMITED:
                    raise wire.error(f"field {field} must be length-delimited, got wire type {wire_type}", at - base)
                assert isinstance(value, bytes)
                out.setdefault(field, []).append((value, at))
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


def from_proto_bytes(data: bytes | bytearray | memoryview, *, max_bytes: int = MAX_PROTO_BYTES) -> Shape:
    """The Shape a serialized ``xla.ShapeProto`` describes; only ParseError/ShapeError on bad bytes.

    Inputs longer than ``max_bytes`` and tuples nested deeper than the text parser allows are refused.
    Layouts are taken as XLA stores them (a missing or 0 tail padding alignment reads as 1) and are not
    validated beyond having one minor_to_major entry per dimension: call ``Shape.validate()`` for that.

    >>> str(from_proto_bytes(bytes.fromhex("100b2a03800101")))
    'f32[]'
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ParseError(f"ShapeProto bytes must be bytes, got {type(data).__name__}")
    blob = bytes(data)
    if len(blob) > max_bytes:
        raise ParseError(f"ShapeProto of {len(blob)} bytes exceeds the limit of {max_bytes} bytes (max_bytes)")
    return shape_from_message([(blob, 0)], 0, 0)


def shape_from_message(chunks: Chunks, base: int, depth: int) -> Shape:
    """The Shape of one ShapeProto message (its occurrences ``chunks``; the first starts at byte ``base``).

    >>> str(shape_from_message([(bytes.fromhex("100b1a0103"), 0)], 0, 0))
    'f32[3]'
    """
    if depth > MAX_TUPLE_DEPTH:
        raise ParseError(f"bad ShapeProto bytes: shapes nested more than {MAX_TUPLE_DEPTH} deep (at byte {base})")
    fields = decoded_fields(chunks, _SHAPE_FIELDS)
    etype = _element_type_numbered(fields.get(SHAPE_ELEMENT_TYPE, 0), "element_type")
    dims = tuple(fields.get(SHAPE_DIMENSIONS, ()))
    dynamic = tuple(fields.get(SHAPE_IS_DYNAMIC_DIMENSION, ()))
    subs = tuple(shape_from_message([(sub, at)], at, depth + 1) for sub, at in fields.get(SHAPE_TUPLE_SHAPES, ()))
    layout = None
    if SHAPE_LAYOUT in fields:
        layout = layout_from_message(fields[SHAPE_LAYOUT], depth)
    if etype is TUPLE_TYPE:
        if dims or dynamic or layout is not None:
            raise ShapeError("ShapeProto: a tuple has no dimensions, dynamic dimensions or layout")
        return tuple_shape(subs)
    if subs:
        raise ShapeError(f"ShapeProto: only tuples hold tuple_shapes, not {etype}")
    if dynamic and len(dynamic) != len(dims):
        raise ShapeError(f"ShapeProto: {len(dynamic)} is_dynamic_dimension entries for {len(dims)} dimensions")
    if layout is not None and etype.is_array_type and len(layout.minor_to_major) != len(dims):
        raise ShapeError(f"ShapeProto: the layout has {len(layout.minor_to_major)} minor_to_major entries "
                         f"but the shape has {len(dims)} dimensions")
    return Shape(etype, dims, dynamic, layout)


def layout_from_message(chunks: Chunks, depth: int) -> Layout:
    """The Layout of one LayoutProto message (its occurrences ``chunks``).

    >>> str(layout_from_message([(bytes.fromhex("0a020100"), 0), (bytes.fromhex("4001"), 4)], 0))
    '{1,0:S(1)}'
    """
    fields = decoded_fields(chunks, _LAYOUT_FIELDS)
    tiles = tuple(tuple(decoded_fields([(t, at)], _TILE_FIELDS).get(TILE_DIMENSIONS, ()))
                  for t, at in fields.get(LAYOUT_TILES, ()))
    configs = tuple(_split_config(c, at) for c, at in fields.get(LAYOUT_SPLIT_CONFIGS, ()))
    physical = None
    if LAYOUT_PHYSICAL_SHAPE in fields:
        occurrences = fields[LAYOUT_PHYSICAL_SHAPE]
        physical = shape_from_message(occurrences, occurrences[0][1], depth + 1)
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
    fields = decoded_fields([(data, base)], _SPLIT_CONFIG_FIELDS)
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


