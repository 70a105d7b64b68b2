"""XLA shapes: arrays, tuples, tokens and opaque values, with their sizes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._ints import INT64_MIN, checked_int, checked_ints, checked_product, checked_round_up, checked_sequence
from ._printer import shape_text
from .dtypes import OPAQUE_TYPE, TOKEN_TYPE, TUPLE_TYPE, ElementType, element_type
from .errors import ShapeError
from .layout import Layout, default_layout, layout_problem
from .tiling import bytes_for_elements, element_bits, physical_element_count, tiled_dimensions

UNBOUNDED_SIZE = INT64_MIN
"""The size XLA records for an unbounded dynamic dimension (``?``)."""

POINTER_SIZE = 8
"""Bytes of a pointer in a tuple's index table (XLA's default for 64-bit hosts)."""

_LETTERS = {2: "yx", 3: "zyx", 4: "pzyx"}

ShapeIndex = tuple[int, ...]


@dataclass(frozen=True, repr=False)
class Shape:
    """An XLA shape. Arrays have an element type, dimensions and a layout; tuples hold shapes.

    The constructor checks every field and judges the layout against the dimensions once: a layout of
    another rank is a ShapeError at once. A layout of the right rank that means nothing (``{1,1}``, ``T(0)``,
    ``#(s32)`` on a dense array) is kept, because XLA keeps it too (its parser accepts ``f32[2]{1}`` at top level,
    its protos carry anything): such a shape prints as XLA prints it, and its sizes, index math and
    ``validate()`` raise ShapeError naming the field. ``make_shape`` and ``with_layout`` refuse it at once.

    >>> s = make_shape("f32", [2, 3])
    >>> str(s), s.rank, s.element_count()
    ('f32[2,3]{1,0}', 2, 6)
    """

    element_type: ElementType
    dimensions: tuple[int, ...] = ()
    dynamic_dimensions: tuple[bool, ...] = ()
    layout: Layout | None = None
    tuple_shapes: tuple[Shape, ...] = ()

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "element_type", element_type(self.element_type))
        set_(self, "dimensions", checked_ints(self.dimensions, "dimensions"))
        dynamic = tuple(_flag(d, f"dynamic_dimensions[{i}]")
                        for i, d in enumerate(checked_sequence(self.dynamic_dimensions, "dynamic_dimensions")))
        dynamic = dynamic or (False,) * len(self.dimensions)
        if len(dynamic) != len(self.dimensions):
            raise ShapeError(
                f"dynamic_dimensions has {len(dynamic)} entries but there are {len(self.dimensions)} dimensions"
            )
        set_(self, "dynamic_dimensions", dynamic)
        for i, (size, is_dynamic) in enumerate(zip(self.dimensions, dynamic)):
            if size < 0 and not (size == UNBOUNDED_SIZE and is_dynamic):
                raise ShapeError(f"dimension {i} has negative size {size}")
        if self.layout is not None and not isinstance(self.layout, Layout):
            raise ShapeError(f"layout must be a Layout, got {type(self.layout).__name__}")
        set_(self, "tuple_shapes", checked_sequence(self.tuple_shapes, "tuple_shapes"))
        for sub in self.tuple_shapes:
            if not isinstance(sub, Shape):
                raise ShapeError(f"tuple elements must be Shapes, got {type(sub).__name__}")
        kind = self.element_type
        if kind is TUPLE_TYPE:
            if self.dimensions or self.layout is not None:
                raise ShapeError("a tuple shape has no dimensions and no layout")
        elif self.tuple_shapes:
            raise ShapeError(f"only tuples hold tuple_shapes, not {kind}")
        elif not kind.is_array_type and (self.dimensions or self.layout is not None):
            raise ShapeError(f"{kind} shapes have no dimensions and no layout")
        if self.layout is not None:
            if len(self.layout.minor_to_major) != len(self.dimensions):
                raise ShapeError(f"layout {self.layout} of {kind}{list(self.dimensions)}: minor_to_major has "
                                 f"{len(self.layout.minor_to_major)} entries but the shape has rank {self.rank}")
            self.__dict__["_problem"] = layout_problem(self.layout, self)  # judged once; sizes raise it

    def __str__(self) -> str:
        text: str | None = self.__dict__.get("_text")
        if text is None:
            text = shape_text(self)
            object.__setattr__(self, "_text", text)  # shapes are immutable: print once
        return text

    def __repr__(self) -> str:
        return f"Shape({str(self)!r})"

    @classmethod
    def trusted(cls, etype: ElementType, dimensions: tuple[int, ...], dynamic_dimensions: tuple[bool, ...],
                layout: Layout | None) -> Shape:
        """An array shape from values already in canonical form (the parser's), its layout not yet judged.

        The layout's rank must match; whether it means anything is decided on first use (sizes, index math,
        ``validate``), which raise ShapeError naming the field. Only the text parser calls this.

        >>> Shape.trusted(element_type("f32"), (2,), (False,), Layout((5,)))
        Shape('f32[2]{5}')
        """
        shape = object.__new__(cls)
        fields = shape.__dict__
        fields["element_type"] = etype
        fields["dimensions"] = dimensions
        fields["dynamic_dimensions"] = dynamic_dimensions
        fields["layout"] = layout
        fields["tuple_shapes"] = ()
        return shape

    # ----- kind -----------------------------------------------------------------------------------
    @property
    def is_array(self) -> bool:
        """True for arrays (including scalars).

        >>> make_shape("f32", []).is_array, token_shape().is_array
        (True, False)
        """
        return self.element_type.is_array_type

    @property
    def is_tuple(self) -> bool:
        """True for tuples.

        >>> tuple_shape([]).is_tuple
        True
        """
        return self.element_type is TUPLE_TYPE

    @property
    def is_token(self) -> bool:
        """True for ``token[]``.

        >>> token_shape().is_token
        True
        """
        return self.element_type is TOKEN_TYPE

    @property
    def is_opaque(self) -> bool:
        """True for ``opaque[]``.

        >>> opaque_shape().is_opaque
        True
        """
        return self.element_type is OPAQUE_TYPE

    @property
    def is_scalar(self) -> bool:
        """True for arrays of rank 0.

        >>> make_shape("f32", []).is_scalar, make_shape("f32", [1]).is_scalar
        (True, False)
        """
        return self.is_array and not self.dimensions

    # ----- dimensions -----------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """Number of dimensions.

        >>> make_shape("f32", [2, 3]).rank
        2
        """
        return len(self.dimensions)

    @property
    def true_rank(self) -> int:
        """Dimensions whose size is not 1 (XLA's ShapeUtil::TrueRank).

        >>> make_shape("f32", [8, 1, 128]).true_rank
        2
        """
        return sum(1 for size in self.dimensions if size != 1)

    def dimension_number(self, dimension: int) -> int:
        """A dimension number with Python-style negatives resolved: -1 is the last dimension.

        >>> make_shape("f32", [2, 3]).dimension_number(-1)
        1
        """
        number = checked_int(dimension, "dimension")
        if not -self.rank <= number < self.rank:
            raise ShapeError(f"dimension {dimension} is out of range for rank {self.rank} shape {self}")
        return number % self.rank

    def dimension(self, dimension: int) -> int:
        """The size of ``dimension`` (negative numbers count from the end).

        >>> make_shape("f32", [2, 3]).dimension(-1)
        3
        """
        return self.dimensions[self.dimension_number(dimension)]

    def is_dynamic_dimension(self, dimension: int) -> bool:
        """True when ``dimension`` is dynamic (``<=N`` or ``?``).

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[<=4,3]").is_dynamic_dimension(0)
        True
        """
        return self.dynamic_dimensions[self.dimension_number(dimension)]

    def is_unbounded_dimension(self, dimension: int) -> bool:
        """True when ``dimension`` is ``?`` (dynamic with no bound).

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[?,3]").is_unbounded_dimension(0)
        True
        """
        return self.dimensions[self.dimension_number(dimension)] == UNBOUNDED_SIZE

    @property
    def is_dynamic(self) -> bool:
        """True when any dimension (of any tuple element) is dynamic.

        >>> from xlashapes import parse_shape
        >>> parse_shape("(f32[2], s32[<=3])").is_dynamic
        True
        """
        if self.is_tuple:
            return any(sub.is_dynamic for sub in self.tuple_shapes)
        return any(self.dynamic_dimensions)

    @property
    def is_static(self) -> bool:
        """True when no dimension is dynamic.

        >>> make_shape("f32", [2]).is_static
        True
        """
        return not self.is_dynamic

    def dimension_letters(self) -> tuple[str, ...] | None:
        """The conventional letters of the dims: (y, x) for 2-D, (z, y, x) for 3-D, (p, z, y, x) for 4-D.

        >>> make_shape("f32", [2, 3, 4]).dimension_letters()
        ('z', 'y', 'x')
        """
        letters = _LETTERS.get(self.rank)
        return tuple(letters) if letters else None

    def dimension_by_letter(self, letter: str) -> int:
        """The dimension number a letter names: for a 4-D shape, ``'p'`` is 0 and ``'x'`` is 3.

        >>> make_shape("f32", [2, 3, 4, 5]).dimension_by_letter("p")
        0
        """
        letters = self.dimension_letters() or ()
        if letter not in letters:
            raise ShapeError(f"rank {self.rank} shape {self} has no dimension {letter!r}")
        return letters.index(letter)

    # ----- tuples ---------------------------------------------------------------------------------
    def subshape(self, index: Sequence[int]) -> Shape:
        """The shape at ``index`` inside nested tuples: ``s.subshape((1, 0))``.

        >>> from xlashapes import parse_shape
        >>> parse_shape("(f32[2], (s32[], pred[3]))").subshape((1, 1))
        Shape('pred[3]{0}')
        """
        shape = self
        for depth, i in enumerate(index):
            if not shape.is_tuple or not 0 <= i < len(shape.tuple_shapes):
                raise ShapeError(f"shape index {tuple(index)} does not exist in {self} (at depth {depth})")
            shape = shape.tuple_shapes[i]
        return shape

    def leaves(self) -> Iterator[tuple[ShapeIndex, Shape]]:
        """Every non-tuple subshape with its shape index, depth first.

        >>> from xlashapes import parse_shape
        >>> [index for index, _ in parse_shape("(f32[2], (s32[], token[]))").leaves()]
        [(0,), (1, 0), (1, 1)]
        """
        if not self.is_tuple:
            yield (), self
            return
        for i, sub in enumerate(self.tuple_shapes):
            for index, leaf in sub.leaves():
                yield (i, *index), leaf

    # ----- layout ---------------------------------------------------------------------------------
    def with_layout(self, layout: Layout | None = None, **fields: Any) -> Shape:
        """This array with ``layout`` (or the default layout with ``fields`` set), validated.

        >>> str(make_shape("f32", [2, 3]).with_layout(memory_space=1))
        'f32[2,3]{1,0:S(1)}'
        """
        if not self.is_array:
            raise ShapeError(f"{self} is not an array and has no layout")
        if layout is None:
            layout = default_layout(self.rank).replace(**fields)
        elif fields:
            layout = layout.replace(**fields)
        shape = replace(self, layout=layout)
        shape.validate()
        return shape

    def with_default_layouts(self) -> Shape:
        """This shape with the default layout filled in on every array that has none.

        >>> str(make_shape("f32", [2, 3]).without_layout().with_default_layouts())
        'f32[2,3]{1,0}'
        """
        if self.is_tuple:
            return replace(self, tuple_shapes=tuple(s.with_default_layouts() for s in self.tuple_shapes))
        if self.is_array and self.layout is None:
            return replace(self, layout=default_layout(self.rank))
        return self

    def without_layout(self) -> Shape:
        """This shape with every layout removed.

        >>> str(make_shape("f32", [2, 3]).without_layout())
        'f32[2,3]'
        """
        if self.is_tuple:
            return replace(self, tuple_shapes=tuple(s.without_layout() for s in self.tuple_shapes))
        return replace(self, layout=None)

    def validate(self) -> Shape:
        """Check every layout against its array; raise ShapeError naming the field. Returns self.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[2]{5}").validate()
        Traceback (most recent call last):
        xlashapes.errors.ShapeError: layout {5} of f32[2]: minor_to_major [5] is not a permutation of 0..0 ...
        """
        for _, leaf in self.leaves():
            problem = leaf.layout_problem()
            if problem is not None:
                raise ShapeError(f"layout {leaf.layout} of {leaf.element_type}{list(leaf.dimensions)}: {problem}")
        return self

    def layout_problem(self) -> str | None:
        """What is wrong with this array's layout (None when nothing is, or for a tuple); decided once.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[2]{0:T(0)}").layout_problem()
        "tile 0 dimension 0 is 0; tile sizes must be positive or '*'"
        """
        fields = self.__dict__
        if "_problem" in fields:
            known: str | None = fields["_problem"]
            return known
        problem = layout_problem(self.layout, self) if self.layout is not None else None
        fields["_problem"] = problem
        return problem

    def physical_dimensions(self) -> tuple[int, ...]:
        """The physical (tiled) dims from major to minor after padding and every tile level.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[3,5]{1,0:T(2,2)}").physical_dimensions()
        (2, 3, 2, 2)
        """
        array = self._sized_array("physical dimensions")
        return tiled_dimensions(array.dimensions, array.layout_or_default())

    def layout_or_default(self) -> Layout:
        """The layout, or the default one when this array has none.

        >>> str(Shape(element_type("f32"), (2, 3)).layout_or_default())
        '{1,0}'
        """
        return self.layout if self.layout is not None else default_layout(self.rank)

    # ----- equality -------------------------------------------------------------------------------
    def equal(
        self,
        other: Shape,
        *,
        ignore_layout: bool = False,
        ignore_dynamic: bool = False,
        ignore_element_type: bool = False,
        ignore_memory_space: bool = False,
        ignore_tiles: bool = False,
    ) -> bool:
        """Shape equality with XLA's Shape::Equal options; plain ``==`` compares everything.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[2]{0:S(1)}").equal(parse_shape("f32[2]"), ignore_memory_space=True)
        True
        """
        if self.is_tuple or other.is_tuple:
            return (
                self.is_tuple
                and other.is_tuple
                and len(self.tuple_shapes) == len(other.tuple_shapes)
                and all(
                    a.equal(b, ignore_layout=ignore_layout, ignore_dynamic=ignore_dynamic,
                            ignore_element_type=ignore_element_type, ignore_memory_space=ignore_memory_space,
                            ignore_tiles=ignore_tiles)
                    for a, b in zip(self.tuple_shapes, other.tuple_shapes)
                )
            )
        if not ignore_element_type and self.element_type != other.element_type:
            return False
        if ignore_element_type and self.is_array != other.is_array:
            return False
        if self.dimensions != other.dimensions:
            if not ignore_dynamic or not _dims_match_ignoring_dynamic(self, other):
                return False
        if not ignore_dynamic and self.dynamic_dimensions != other.dynamic_dimensions:
            return False
        if ignore_layout:
            return True
        return _comparable_layout(self, ignore_memory_space, ignore_tiles) == _comparable_layout(
            other, ignore_memory_space, ignore_tiles
        )

    def compatible(self, other: Shape) -> bool:
        """XLA's ShapeUtil::Compatible: same element type and dimensions, ignoring layout and dynamism.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[<=2,3]{0,1}").compatible(parse_shape("f32[2,3]"))
        True
        """
        return self.equal(other, ignore_layout=True, ignore_dynamic=True)

    # ----- sizes ----------------------------------------------------------------------------------
    def element_count(self) -> int:
        """Logical elements of an array (bounded dynamic dims count at their bound).

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[<=10,3]").element_count()
        30
        """
        array = self._sized_array("element count")
        return checked_product(array.dimensions, f"element count of {self}")

    def physical_element_count(self) -> int:
        """Elements the buffer holds, padding from tiles, tail alignment and legacy padding included.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[3,5]{1,0:T(2,2)}").physical_element_count()
        24
        """
        count: int | None = self.__dict__.get("_physical_count")
        if count is None:
            array = self._sized_array("physical element count")
            count = physical_element_count(array.dimensions, array.layout_or_default())
            self.__dict__["_physical_count"] = count  # shapes are immutable: count once
        return count

    def element_size_in_bits(self) -> int:
        """Bits one element occupies in memory: E(n) when set, else the type's byte width.

        >>> from xlashapes import parse_shape
        >>> parse_shape("s4[8]").element_size_in_bits(), parse_shape("s4[8]{0:E(4)}").element_size_in_bits()
        (8, 4)
        """
        return element_bits(self.element_type, self.layout)

    def byte_size(self, pointer_size: int = POINTER_SIZE) -> int:
        """Physical bytes: every tile level, tail padding, E(n) packing, legacy padding.

        For a tuple: the bytes of all its leaf buffers (see ``tuple_index_table_size`` for XLA's
        ByteSizeOf of the tuple itself). A token takes 0 bytes, an opaque value one pointer.

        >>> from xlashapes import parse_shape
        >>> parse_shape("f32[3,5]{1,0:T(2,2)}").byte_size(), parse_shape("s4[3]{0:E(4)}").byte_size()
        (96, 2)
        """
        if self.is_tuple:
            return sum(leaf.byte_size(pointer_size) for _, leaf in self.leaves())
        if self.is_token:
            return 0
        if self.is_opaque:
            return pointer_size
        return bytes_for_elements(self.physical_element_count(), self.element_size_in_bits())

    def leaf_byte_sizes(self) -> dict[ShapeIndex, int]:
        """The byte size of every leaf buffer of a tuple (or of this array, at index ``()``).

        >>> from xlashapes import parse_shape
        >>> parse_shape("(f32[2], s8[3])").leaf_byte_sizes()
        {(0,): 8, (1,): 3}
        """
        return {index: leaf.byte_size() for index, leaf in self.leaves()}

    def tuple_index_table_size(self, pointer_size: int = POINTER_SIZE) -> int:
        """Bytes of a tuple's table of pointers to its elements (XLA's ByteSizeOf for a tuple).

        >>> from xlashapes import parse_shape
        >>> parse_shape("(f32[2], s8[3])").tuple_index_table_size()
        16
        """
        if not self.is_tuple:
            raise ShapeError(f"{self} is not a tuple")
        return pointer_size * len(self.tuple_shapes)

    def xla_byte_size_of(self, pointer_size: int = POINTER_SIZE) -> int:
        """XLA's ShapeUtil::ByteSizeOf: the logical elements (no padding) at the stored width (E(n), else bytes).

        An unpacked s4 counts one byte per element (ByteSizeOfPrimitiveType); see ``data_byte_size`` for the
        bytes of the data at the type's own width. A tuple gives its index table.

        >>> from xlashapes import parse_shape
        >>> parse_shape("s4[3]").xla_byte_size_of(), parse_shape("s4[3]{0:E(4)}").xla_byte_size_of()
        (3, 2)
        """
        if self.is_tuple:
            return self.tuple_index_table_size(pointer_size)
        if not self.is_array:
            return self.byte_size(pointer_size)
        return bytes_for_elements(self.element_count(), self.element_size_in_bits())

    def data_byte_size(self, pointer_size: int = POINTER_SIZE) -> int:
        """Bytes of the logical elements at the type's own bit width, densely packed, whatever the layout.

        The unpadded size TPU memory reports give: s4 counts half a byte, pred one byte even under E(32).
        Tuples sum their leaves; a token takes 0 bytes, an opaque value one pointer.

        >>> from xlashapes import parse_shape
        >>> parse_shape("s4[3]").data_byte_size(), parse_shape("pred[4]{0:E(32)}").data_byte_size()
        (2, 4)
        """
        if self.is_tuple:
            return sum(leaf.data_byte_size(pointer_size) for _, leaf in self.leaves())
        if not self.is_array:
            return self.byte_size(pointer_size)
        return bytes_for_elements(self.element_count(), self.element_type.bits)

    def xla_array_size(self) -> int:
        """What XLA's ShapeUtil::ArraySize returns: padding from the first tile only, then L(n) and E(n).

        >>> from xlashapes import parse_shape
        >>> s = parse_shape("f32[2,4]{1,0:T(2,4)(3,1)}")
        >>> s.xla_array_size(), s.byte_size()
        (32, 48)
        """
        array = self._sized_array("array size")
        layout = array.layout_or_default()
        if not layout.tiles:
            return array.xla_byte_size_of()
        tile = layout.tiles[0]
        count = 1
        for i in range(max(len(tile), array.rank)):
            size = array.dimensions[layout.minor_to_major[i]] if i < array.rank else 1
            if i < len(tile):
                t = tile[len(tile) - 1 - i]
                size = -(-size // t) * t if t > 0 else size
            count = checked_product((count, size), f"array size of {self}")
        count = checked_round_up(count, layout.tail_padding_alignment_in_elements, f"array size of {self}")
        return bytes_for_elements(count, array.element_size_in_bits())

    def _sized_array(self, what: str) -> Shape:
        if not self.is_array:
            raise ShapeError(f"{what} needs an array shape, not {self}")
        if UNBOUNDED_SIZE in self.dimensions:
            i = self.dimensions.index(UNBOUNDED_SIZE)
            if self.dynamic_dimensions[i]:
                raise ShapeError(f"{what} of {self}: dimension {i} is unbounded ('?') and has no size")
        if self.__dict__.get("_problem", 0) is not None and self.layout_problem() is not None:
            self.validate()  # raises, naming the field
        return self


def _flag(value: Any, what: str) -> bool:
    """A dynamic-dimension flag: a bool (or 0/1, a NumPy bool), else ShapeError naming ``what``."""
    if isinstance(value, (bool, np.bool_)) or (type(value) is int and value in (0, 1)):
        return bool(value)
    raise ShapeError(f"{what} must be True or False, got {value!r}")


def _dims_match_ignoring_dynamic(a: Shape, b: Shape) -> bool:
    if a.rank != b.rank:
        return False
    return all(x == y or x == UNBOUNDED_SIZE or y == UNBOUNDED_SIZE for x, y in zip(a.dimensions, b.dimensions))


def _comparable_layout(shape: Shape, ignore_memory_space: bool, ignore_tiles: bool) -> Layout | None:
    layout = shape.layout
    if layout is None:
        return None
    if ignore_memory_space:
        layout = layout.replace(memory_space=0)
    if ignore_tiles:
        layout = layout.replace(tiles=())
    return layout


def make_shape(
    etype: str | ElementType | Any,
    dimensions: Sequence[int],
    minor_to_major: Sequence[int] | None = None,
    *,
    dynamic_dimensions: Sequence[bool] | None = None,
    layout: Layout | None = None,
    **layout_fields: Any,
) -> Shape:
    """A validated array shape with the default layout, or one built from ``minor_to_major`` and fields.

    >>> str(make_shape("f32", [2, 3], minor_to_major=[0, 1], tiles=[(2, 2)]))
    'f32[2,3]{0,1:T(2,2)}'
    """
    etype = element_type(etype)
    if not etype.is_array_type:
        raise ShapeError(f"make_shape makes arrays; use token_shape(), opaque_shape() or tuple_shape() for {etype}")
    dims = checked_ints(dimensions, "dimensions")
    if layout is None:
        order = (checked_ints(minor_to_major, "minor_to_major") if minor_to_major is not None
                 else tuple(range(len(dims) - 1, -1, -1)))
        layout = Layout(order, **layout_fields)
    elif minor_to_major is not None or layout_fields:
        raise ShapeError("give either layout= or minor_to_major/layout fields, not both")
    shape = Shape(etype, dims, tuple(dynamic_dimensions or ()), layout)
    return shape.validate()


def tuple_shape(shapes: Sequence[Shape]) -> Shape:
    """A tuple of ``shapes``: ``tuple_shape([a, b])`` prints ``(a, b)``.

    >>> tuple_shape([make_shape("f32", [2]), token_shape()])
    Shape('(f32[2]{0}, token[])')
    """
    return Shape(TUPLE_TYPE, tuple_shapes=tuple(shapes))


def token_shape() -> Shape:
    """The token shape ``token[]``.

    >>> str(token_shape())
    'token[]'
    """
    return Shape(TOKEN_TYPE)


def opaque_shape() -> Shape:
    """The opaque shape ``opaque[]``.

    >>> opaque_shape().byte_size()
    8
    """
    return Shape(OPAQUE_TYPE)
