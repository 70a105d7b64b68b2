"""Interop: XLA's ``ShapeProto`` wire bytes, JAX layouts and arrays, jaxlib's ``xla_client.Shape``.

One naming convention for every conversion: ``to_X`` makes an X from a Shape, ``from_X`` makes a Shape from an X.

=========================  ===========================================================
``to_proto_bytes``         Shape → serialized ``xla.ShapeProto`` (no protobuf needed)
``from_proto_bytes``       serialized ``xla.ShapeProto`` → Shape
``to_jax_layout``          Shape → ``jax.experimental.layout.Layout``
``from_jax_layout``        JAX Layout + dtype + dims → Shape
``from_jax_array``         a JAX array (its ``.format``) → Shape
``to_xla_client_shape``    Shape → jaxlib ``xla_client.Shape``
``from_xla_client_shape``  jaxlib ``xla_client.Shape`` → Shape
=========================  ===========================================================

The wire codec is in :mod:`xlashapes.interop._proto`, the JAX/jaxlib adapters in :mod:`xlashapes.interop.jax`
(jax is imported only when one of them is called). The names before this convention (``shape_to_proto_bytes``,
``shape_from_proto_bytes``, ``shape_from_jax_array``) remain here as aliases.

>>> from xlashapes import parse_shape
>>> data = to_proto_bytes(parse_shape("f32[3,5]{0,1}"))
>>> str(from_proto_bytes(data))
'f32[3,5]{0,1}'
"""

from __future__ import annotations

from ._proto import (
    MAX_PROTO_BYTES,
    field_key,
    from_proto_bytes,
    layout_message,
    length_delimited_field,
    packed_field,
    proto_number,
    shape_message,
    split_config_message,
    to_proto_bytes,
    varint_bytes,
    varint_field,
)
from .jax import (
    JaxLayout,
    XlaClientShape,
    from_jax_array,
    from_jax_layout,
    from_xla_client_shape,
    inexpressible_in_jax,
    to_jax_layout,
    to_xla_client_shape,
)

shape_to_proto_bytes = to_proto_bytes
"""Old name of :func:`to_proto_bytes`."""

shape_from_proto_bytes = from_proto_bytes
"""Old name of :func:`from_proto_bytes`."""

shape_from_jax_array = from_jax_array
"""Old name of :func:`from_jax_array`."""

__all__ = [
    "MAX_PROTO_BYTES",
    "JaxLayout",
    "XlaClientShape",
    "field_key",
    "from_jax_array",
    "from_jax_layout",
    "from_proto_bytes",
    "from_xla_client_shape",
    "inexpressible_in_jax",
    "layout_message",
    "length_delimited_field",
    "packed_field",
    "proto_number",
    "shape_from_jax_array",
    "shape_from_proto_bytes",
    "shape_message",
    "shape_to_proto_bytes",
    "split_config_message",
    "to_jax_layout",
    "to_proto_bytes",
    "to_xla_client_shape",
    "varint_bytes",
    "varint_field",
]
