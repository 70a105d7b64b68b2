"""JAX and jaxlib adapters: ``jax.experimental.layout.Layout`` / ``Format``, JAX arrays, ``xla_client.Shape``.

JAX stays optional: importing xlashapes never imports jax; these functions import it when called. Element types
go through :func:`xlashapes.element_type`, so every spelling it takes works (``"bf16"``, a NumPy dtype,
``jnp.bfloat16`` ...).

>>> class FakeLayout:  # anything with JAX Layout's fields works; a real one comes from jax.experimental.layout
...     major_to_minor, tiling, sub_byte_element_size_in_bits = (1, 0), ((8, 128),), 0
>>> str(from_jax_layout(FakeLayout(), "f32", (8, 256)))
'f32[8,256]{0,1:T(8,128)}'
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol, cast

from .._ints import checked_int, checked_ints, checked_sequence
from ..dtypes import OPAQUE_TYPE, TOKEN_TYPE, element_type
from ..errors import ShapeError
from ..layout import Layout, default_layout, xla_layout_problem
from ..shape import Shape
from ..text import parse_shape


class JaxLayout(Protocol):
    """What xlashapes reads of a ``jax.experimental.layout.Layout`` (the type ``to_jax_layout`` returns)."""

    @property
    def major_to_minor(self) -> tuple[int, ...]: ...

    @property
    def tiling(self) -> tuple[tuple[int, ...], ...] | None: ...

    @property
    def sub_byte_element_size_in_bits(self) -> int: ...


class XlaClientShape(Protocol):
    """What xlashapes uses of jaxlib's ``xla_client.Shape`` (the type ``to_xla_client_shape`` returns)."""

    def dimensions(self) -> tuple[int, ...]: ...

    def to_serialized_proto(self) -> bytes: ...


def from_jax_layout(layout: Any, dtype: Any, dims: Any) -> Shape:
    """The array Shape a ``jax.experimental.layout.Layout`` gives ``dims`` of ``dtype``, validated.

    Fields map one to one: ``major_to_minor`` reversed is ``minor_to_major``, ``tiling`` gives the tiles
    (``None`` and ``()`` both mean untiled) and ``sub_byte_element_size_in_bits`` is ``E(n)``. Note that when
    JAX lowers a Layout itself (``Layout._to_xla_layout``) it ignores the element size of an untiled layout and
    fills in ``E(bits)`` for sub-byte integer dtypes of a tiled one; this function does neither.

    >>> class Untiled:  # the fields of jax.experimental.layout.Layout((0,))
    ...     major_to_minor, tiling, sub_byte_element_size_in_bits = (0,), None, 0
    >>> str(from_jax_layout(Untiled(), "s8", (4,)))
    's8[4]{0}'
    """
    major_to_minor = getattr(layout, "major_to_minor", None)
    if major_to_minor is None:
        raise ShapeError(f"expected a jax.experimental.layout.Layout, got {layout!r} (Layout.AUTO has no fields)")
    order = checked_ints(major_to_minor, "Layout.major_to_minor")
    tiling = getattr(layout, "tiling", None)
    tiling = () if tiling is None else checked_sequence(tiling, "Layout.tiling")
    tiles = tuple(checked_ints(tile, f"Layout.tiling[{i}]") for i, tile in enumerate(tiling))
    raw_bits = getattr(layout, "sub_byte_element_size_in_bits", None)
    bits = 0 if raw_bits is None else checked_int(raw_bits, "Layout.sub_byte_element_size_in_bits")
    sizes = checked_ints(dims, "dims")
    shape = Shape(element_type(dtype), sizes, (), Layout(order[::-1], tiles=tiles, element_size_in_bits=bits))
    return shape.validate()


def to_jax_layout(shape: Shape) -> JaxLayout:
    """The ``jax.experimental.layout.Layout`` of an array shape; ShapeError for what JAX's Layout cannot hold.

    JAX's Layout holds dimension order, tiles and the element size only; memory space (``S(n)``) lives in a
    sharding's ``memory_kind`` instead, and the other layout fields have no JAX counterpart.

    >>> import pytest; jax = pytest.importorskip("jax")  # this example needs jax
    >>> from xlashapes import parse_shape
    >>> to_jax_layout(parse_shape("f32[8,256]{0,1:T(8,128)}")).major_to_minor
    (1, 0)
    """
    if not isinstance(shape, Shape):
        raise ShapeError(f"to_jax_layout needs a Shape, got {type(shape).__name__}")
    jax_layout_class = importlib.import_module("jax.experimental.layout").Layout
    if not shape.is_array:
        raise ShapeError(f"only arrays have a JAX layout, not {shape}")
    layout = shape.layout_or_default()
    extra = inexpressible_in_jax(layout)
    if extra:
        raise ShapeError(f"JAX's Layout cannot express {', '.join(extra)} of {shape}")
    made = jax_layout_class(layout.major_to_minor, tiling=layout.tiles,
                            sub_byte_element_size_in_bits=layout.element_size_in_bits)
    return cast(JaxLayout, made)


def inexpressible_in_jax(layout: Layout) -> list[str]:
    """The names of ``layout``'s non-default fields that JAX's Layout has no place for.

    >>> inexpressible_in_jax(Layout((1, 0), memory_space=1, tail_padding_alignment_in_elements=4))
    ['tail_padding_alignment_in_elements', 'memory_space']
    """
    defaults = default_layout(len(layout.minor_to_major))
    names = ("tail_padding_alignment_in_elements", "index_primitive_type", "pointer_primitive_type", "memory_space",
             "split_configs", "dynamic_shape_metadata_prefix_bytes", "dim_level_types", "dim_unique", "dim_ordered",
             "padded_dimensions", "physical_shape")
    return [name for name in names if getattr(layout, name) != getattr(defaults, name)]


_HOST_MEMORY_KINDS = {"pinned_host": 5}


def from_jax_array(array: Any, *, shard: bool = False) -> Shape:
    """The Shape of a JAX array: its dtype, shape (or one shard's with ``shard=True``) and ``.format`` layout.

    The sharding's ``pinned_host`` memory kind becomes memory space ``S(5)``, XLA's host memory space (what
    JAX lowers it to); every other memory kind stays ``S(0)``.

    >>> import pytest; jnp = pytest.importorskip("jax.numpy")  # this example needs jax
    >>> str(from_jax_array(jnp.zeros((2, 3), jnp.bfloat16)))
    'bf16[2,3]{1,0}'
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


def to_xla_client_shape(shape: Shape) -> XlaClientShape:
    """jaxlib's ``xla_client.Shape`` for ``shape`` (arrays get the default layout when they have none).

    ``xla_client.Shape.array_shape`` takes only minor_to_major, so a layout with tiles or any other attribute
    is a ShapeError here; so are opaque shapes, which xla_client cannot build.

    >>> import pytest; jax = pytest.importorskip("jax")  # this example needs jax
    >>> from xlashapes import parse_shape
    >>> str(to_xla_client_shape(parse_shape("f32[3,5]{0,1}")))
    'f32[3,5]{0,1}'
    """
    if not isinstance(shape, Shape):
        raise ShapeError(f"to_xla_client_shape needs a Shape, got {type(shape).__name__}")
    xc = _xla_client()
    return cast(XlaClientShape, _client_shape(xc, shape))


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
    """The Shape of a jaxlib ``xla_client.Shape``, read from its ``str()`` (exactly XLA's shape text).

    >>> import pytest; jax = pytest.importorskip("jax")  # this example needs jax
    >>> from xlashapes import parse_shape
    >>> from_xla_client_shape(to_xla_client_shape(parse_shape("s8[4]"))) == parse_shape("s8[4]")
    True
    """
    return parse_shape(str(client_shape))
