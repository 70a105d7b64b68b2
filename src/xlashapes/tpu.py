"""TPU layout advisor: the tiles XLA:TPU gives an array, why, and what the padding costs.

The rules, and where each comes from (repository + path; all public):

* The tiled-layout document, openxla/xla ``docs/tiled_layout.md``: most arrays are tiled ``T(8,128)`` (the
  32-bit 8x128 vector register); the small-tile format uses ``T(2,128)`` when the second-most-minor dimension
  is 1–2 and ``T(4,128)`` when it is 3–4; 16-bit types ``T(8,128)(2,1)``; 8-bit ``T(8,128)(4,1)``; 1-bit
  booleans *could* use ``T(32,128)(32,1)`` ("TPUs currently use 4 bytes for one boolean"); rank 1 has "a less
  wasteful linear-like format" that the document does not spell out.
* The rule behind all of these, in code: jax-ml/jax ``jaxlib/mosaic/dialect/tpu/transforms/
  infer_memref_layout.cc`` (``getTilingFactor``, ``inferLayout``), which Mosaic uses to match XLA's TPU
  layouts. With ``w`` the storage width in bits and ``P = 32 / w`` values packed per 32-bit word, the number
  of tile rows for a count ``n`` is 8 when ``n >= 8``, else the least ``m * 2**k >= n``, where the minimum
  ``m`` is ``P`` on TPU v4 and later and ``2 * P`` before v4. Arrays of rank >= 2 get ``T(rows(s),128)`` for
  their second-most-minor physical dimension ``s``, followed by ``(P,1)`` when ``P > 1``. Rank-1 arrays get
  the linear tile ``T(128 * rows(ceil(n / 128)))``, followed by ``(128)(P,1)`` when ``P > 1``. Before v4
  the 32-bit rows are 2, 4 or 8: exactly the document's table. From v4 on, a second-most-minor dimension of
  1 gets ``T(1,128)``: ``s32[1,1,128]{2,1,0:T(1,128)}`` in openxla/xla
  ``xla/service/send_recv_latency_hiding_scheduler_test.cc``. ``generation=3`` gives the document's table.
* Public TPU dumps agree with that rule for rank 1 (v4 and later): ``s32[16]{0:T(128)}``,
  ``u32[1024]{0:T(1024)}``, ``u32[]{:T(128)}``, ``bf16[]{:T(256)}`` in openxla/xla
  ``xla/service/latency_hiding_scheduler_test.cc``; ``s32[301]{0:T(512)}`` in openxla/xla
  ``xla/hlo/tools/hlo_diff/hlo_diff_result_test.cc``; ``bf16[1024]{0:T(1024)(128)(2,1)}`` in openxla/xla
  ``xla/shape_util.h`` (``PackedFactorFor1DInterleavedArray``); ``bf16[8192]{0:T(1024)(128)(2,1)}`` in
  jax-ml/scaling-book ``profiling.md``. An older-TPU dump doubles the minimum, as the rule says:
  ``f32[128]{0:T(256)}``, ``f32[32]{0:T(256)}``, ``f32[10]{0:T(256)}`` in openxla/xla
  ``xla/service/hlo_value_semantics_analysis_test.cc`` (``generation=3`` here).
* Scalars are tiled too: ``T(128 * m)`` with no packing tiles (``u32[]{:T(128)}``, ``bf16[]{:T(256)}``,
  ``pred[]{:T(512)}`` in openxla/xla ``xla/hlo/transforms/memory_space_propagation_test.cc``).
* Sub-byte: ``s4[8,32768,1,256]{3,1,0,2:T(8,128)(8,1)E(4)}`` in openxla/xla
  ``xla/hlo/transforms/memory_space_propagation_test.cc``: 4-bit types pack 8 per word and carry ``E(4)``.
* ``pred`` is stored in 8 bits on v4 and later: ``pred[...]{...:T(8,128)(4,1)}``, ``pred[]{:T(512)}`` (same
  file) and ``pred[1]{0:T(512)(128)(4,1)}`` in public dumps. Before v4 the document's "4 bytes per boolean"
  applies: the 32-bit rule with ``E(32)``.

Where the public record is silent, the advice says so in its reason instead of guessing quietly:

* 64-bit types (s64, u64, f64, c64) and c128: no public TPU dump shows one; the document's general rule for
  32-bit words is applied (no packing tiles).
* 2-bit and 1-bit integers and the 6-bit floats: no public TPU format (Mosaic's rule needs 4 to 32 bits);
  the layout is left as it is.
* The 1-bit boolean format ``T(32,128)(32,1)`` (``bool_tiling=True``) is the document's proposal; no public
  dump shows it. It applies to rank >= 2; the advice counts one bit per element, but the shape carries no
  ``E(1)`` because xlashapes' layout check refuses an element size below pred's 8 bits.

Not modelled: the "large second-minor" tilings XLA can enable by flag (``T(16,128)(2,1)``,
``T(32,128)(4,1)``, ``T(64,128)(8,1)E(4)``, seen on VMEM buffers), layout assignment choosing another
dimension order (the advisor keeps ``minor_to_major``), predicates kept as ``E(32)`` in some loop conditions,
and the odd hand-written test HLO that disagrees (``f32[1024]{0:T(512)}`` in openxla/xla
``xla/hlo/transforms/simplifiers/hlo_constant_splitter_test.cc``, ``s32[10]{0:T(1024)}`` in openxla/xla
``xla/tests/test_utils_test.cc``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .dtypes import ElementType, Kind
from .layout import Layout
from .shape import UNBOUNDED_SIZE, Shape, tuple_shape
from .tiling import bytes_for_elements

LANES = 128
"""Elements of 32 bits across one TPU vector register row (the 128 lanes)."""

MAX_ROWS = 8
"""Sublanes of one TPU vector register: the row count of the full ``T(8,128)`` tile."""

LATEST_GENERATION = 4
"""TPU v4 and later share one rule; earlier generations (2, 3) double the smallest tile."""


@dataclass(frozen=True)
class TpuAdvice:
    """The TPU layout advised for a shape, why, and its padding: physical vs logical bytes.

    ``logical_bytes`` counts each element at its type's own width, densely packed (sub-byte types too;
    ``Shape.data_byte_size``, see :mod:`xlashapes.tiling` for the byte counts);
    ``physical_bytes`` is ``shape.byte_size()`` with every tile level (one bit per element for the 1-bit
    format); ``waste_percent`` is the share of the physical buffer that is padding. For a tuple, ``leaves``
    holds the advice for each leaf, depth first.

    >>> from xlashapes import parse_shape
    >>> tpu_advice(parse_shape("f32[3,128]")).waste_percent
    25.0
    """

    shape: Shape
    reason: str
    logical_bytes: int
    physical_bytes: int
    waste_percent: float
    leaves: tuple[TpuAdvice, ...] = ()


@dataclass(frozen=True)
class _Format:
    """How one element type is stored on TPU: width in bits, E(n) to record, and the rule's source."""

    bits: int
    element_size: int
    note: str


def tpu_layout(shape: Shape, *, bool_tiling: bool = False, generation: int = LATEST_GENERATION) -> Shape:
    """``shape`` with the tiles XLA:TPU gives it (every leaf of a tuple); dimension order is kept.

    >>> from xlashapes import parse_shape
    >>> str(tpu_layout(parse_shape("bf16[32,256]")))
    'bf16[32,256]{1,0:T(8,128)(2,1)}'
    """
    if shape.is_tuple:
        return tuple_shape([tpu_layout(sub, bool_tiling=bool_tiling, generation=generation)
                            for sub in shape.tuple_shapes])
    return _advised_leaf(shape, bool_tiling, generation)[0]


def tpu_advice(shape: Shape, *, bool_tiling: bool = False, generation: int = LATEST_GENERATION) -> TpuAdvice:
    """The advised TPU layout of ``shape`` with its reason and its padding waste (ShapeError if unbounded).

    >>> from xlashapes import parse_shape
    >>> advice = tpu_advice(parse_shape("f32[3,128]"))
    >>> str(advice.shape), advice.logical_bytes, advice.physical_bytes
    ('f32[3,128]{1,0:T(4,128)}', 1536, 2048)
    """
    if shape.is_tuple:
        indexed = list(shape.leaves())
        leaves = tuple(tpu_advice(leaf, bool_tiling=bool_tiling, generation=generation) for _, leaf in indexed)
        logical = sum(a.logical_bytes for a in leaves)
        physical = sum(a.physical_bytes for a in leaves)
        reason = "; ".join(f"{index}: {a.reason}" for (index, _), a in zip(indexed, leaves)) or "empty tuple"
        advised = tpu_layout(shape, bool_tiling=bool_tiling, generation=generation)
        return TpuAdvice(advised, reason, logical, physical, waste_percent(logical, physical), leaves)
    advised, reason, bits = _advised_leaf(shape, bool_tiling, generation)
    if bits:  # the 1-bit format: sizes at 1 bit per element, which the shape itself cannot record
        logical = bytes_for_elements(advised.element_count(), bits)
        physical = bytes_for_elements(advised.physical_element_count(), bits)
    else:
        logical = logical_byte_size(advised)
        physical = advised.byte_size()
    return TpuAdvice(advised, reason, logical, physical, waste_percent(logical, physical))


def waste_percent(logical: int, physical: int) -> float:
    """The share of ``physical`` bytes that hold no data, in percent (0 for an empty buffer).

    >>> waste_percent(1536, 2048)
    25.0
    """
    return 100.0 * (physical - logical) / physical if physical else 0.0


def logical_byte_size(shape: Shape) -> int:
    """Bytes the elements of an array (or tuple's leaves) need at their type's own width: ``shape.data_byte_size()``.

    >>> from xlashapes import parse_shape
    >>> logical_byte_size(parse_shape("s4[3]"))
    2
    """
    return shape.data_byte_size()


def _advised_leaf(shape: Shape, bool_tiling: bool, generation: int) -> tuple[Shape, str, int]:
    """The advised shape of one non-tuple shape, the reason, and the bits per element sizes must assume (0: own)."""
    if not shape.is_array:
        return shape, f"{shape} has no layout", 0
    shape.validate()  # a parsed layout may mean nothing (f32[2]{5}): ShapeError naming the field
    layout = shape.layout_or_default()
    storage = storage_format(shape.element_type, bool_tiling and shape.rank >= 2, generation)
    if storage is None:
        return shape.with_layout(layout), (
            f"no public TPU format for {shape.element_type} ({shape.element_type.bits}-bit); layout left as is"), 0
    tiles, why = tpu_tiles(shape, layout, storage, generation)
    advised = shape.with_layout(layout.replace(tiles=tiles, element_size_in_bits=storage.element_size))
    notes = [why, storage.note]
    if bool_tiling and shape.element_type.kind is Kind.PRED and shape.rank < 2:
        notes.append("the 1-bit format T(32,128)(32,1) is 2-D, so bool_tiling applies to rank >= 2 only")
    return advised, "; ".join(n for n in notes if n), 1 if storage.bits == 1 else 0


def storage_format(etype: ElementType, bool_tiling: bool, generation: int) -> _Format | None:
    """How ``etype`` is stored on TPU, or None when the public record shows no TPU format for it.

    >>> from xlashapes import element_type
    >>> storage_format(element_type("s4"), False, 4).element_size
    4
    """
    bits = etype.bits
    if etype.kind is Kind.PRED:
        if bool_tiling:
            return _Format(1, 0, "1-bit booleans as the tiled-layout document proposes (no public dump shows it); "
                           "sizes count 1 bit per element, but the shape carries no E(1) because xlashapes' "
                           "layout check refuses E below pred's 8 bits, so its own byte_size() counts a byte")
        if generation < LATEST_GENERATION:
            return _Format(32, 32, "PRED takes 4 bytes before TPU v4 (tiled-layout document)")
        return _Format(8, 0, "pred is stored in 8 bits on TPU v4 and later (public dumps)")
    if bits > 32:
        return _Format(32, 0, f"no public TPU dump of a {bits}-bit type; the general 32-bit rule is applied")
    if bits not in (4, 8, 16, 32):
        return None
    return _Format(bits, bits if bits < 8 else 0, "")


Tiles = tuple[tuple[int, ...], ...]


def tpu_tiles(shape: Shape, layout: Layout, storage: _Format, generation: int) -> tuple[Tiles, str]:
    """The TPU tiles for an array of ``shape`` with ``layout``'s dimension order, and why.

    >>> from xlashapes import parse_shape
    >>> s = parse_shape("f32[3,128]")
    >>> tpu_tiles(s, s.layout_or_default(), storage_format(s.element_type, False, 4), 4)[0]
    ((4, 128),)
    """
    if storage.bits == 1:
        return ((32, LANES), (32, 1)), "1-bit tile format T(32,128)(32,1)"
    packing = 32 // storage.bits
    smallest = min(packing * (1 if generation >= LATEST_GENERATION else 2), MAX_ROWS)
    packed: Tiles = ((packing, 1),) if packing > 1 else ()
    words = f", {packing} values per 32-bit word" if packed else ""
    if shape.rank == 0:
        guess = "; no public dump of a sub-byte scalar, the rule is extrapolated" if storage.bits < 8 else ""
        return ((LANES * smallest,),), f"scalar: a {smallest}-row linear tile T({LANES * smallest}){guess}"
    if shape.rank == 1:
        count = _known_size(shape.dimensions[0])
        groups = None if count is None else -(-count // LANES)
        rows = tile_rows(groups, smallest)
        inner: Tiles = ((LANES,), *packed) if packed else ()
        return ((LANES * rows,), *inner), (
            f"rank 1: {_count_text(groups, 'group')} of 128 -> {_rows(rows)}, linear tile T({LANES * rows}){words}")
    second_minor = _known_size(shape.dimensions[layout.minor_to_major[1]])
    rows = tile_rows(second_minor, smallest)
    kind = "TPU tile format" if rows == MAX_ROWS else "small tile format"
    return ((rows, LANES), *packed), (
        f"second-most-minor dim {_count_text(second_minor, '')} -> {_rows(rows)}, T({rows},128) ({kind}){words}")


def tile_rows(count: int | None, smallest: int) -> int:
    """Tile rows for ``count`` rows of data: 8 when there are 8 or more, else the least ``smallest * 2**k``.

    >>> tile_rows(3, 2), tile_rows(100, 2)
    (4, 8)
    """
    if count is None or count >= MAX_ROWS:
        return MAX_ROWS
    rows = smallest
    while rows < count:
        rows *= 2
    return rows


def _known_size(size: int) -> int | None:
    return None if size == UNBOUNDED_SIZE else size


def _count_text(count: int | None, unit: str) -> str:
    if count is None:
        return "unbounded (taken as 8 rows or more)"
    if not unit:
        return str(count)
    return f"{count} {unit}" + ("" if count == 1 else "s")


def _rows(count: int) -> str:
    return f"{count} row" + ("" if count == 1 else "s")
