"""xlashapes: XLA's array model — shapes, layouts, tiling, memory spaces, index math and physical bytes.

The facade: the names most programs need, one per job (``__all__``). Everything else stays importable from its
module: ``xlashapes.layout.tiled_dimensions``, ``xlashapes.hlo.Attributes``, ``xlashapes.interop.varint_bytes``
... Element-wise ops are ``xlashapes.ops.add`` ... ``xlashapes.ops.compare``.

>>> import numpy as np
>>> import xlashapes as xs
>>> xs.parse_shape("f32[3,5]{1,0:T(2,2)}").byte_size()
96
>>> xs.ops.add(np.ones(2, np.float32), np.float32(1)).tolist()
[2.0, 2.0]
"""

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from .broadcast import binary_op_shape, broadcast_shape, lower_binary
from .dtypes import ELEMENT_TYPES, ElementType, element_type
from .errors import ParseError, ShapeError, XlaShapesError
from .explain import explain
from .indexing import dimension_stride, indices_in_memory_order, linear_index, multi_index
from .layout import Layout, SplitConfig, default_layout
from .shape import UNBOUNDED_SIZE, Shape, make_shape, opaque_shape, token_shape, tuple_shape
from .text import parse_layout, parse_shape, shape_text
from .tiling import COMBINE_DIMENSION
from .tpu import TpuAdvice, tpu_advice, tpu_layout

if _TYPE_CHECKING:
    from . import ops
    from .hlo import HloComputation, HloInstruction, HloModule, parse_hlo_module, parse_instruction
    from .inference import infer_shape
    from .interop import (
        from_jax_array,
        from_jax_layout,
        from_proto_bytes,
        from_xla_client_shape,
        to_jax_layout,
        to_proto_bytes,
        to_xla_client_shape,
    )
    from .memory import MemoryReport, memory_report
    from .physical import from_physical, relayout, to_physical

_LAZY = {
    **dict.fromkeys(("HloComputation", "HloInstruction", "HloModule", "parse_hlo_module", "parse_instruction"), "hlo"),
    "infer_shape": "inference",
    **dict.fromkeys(("from_jax_array", "from_jax_layout", "from_proto_bytes", "from_xla_client_shape", "to_jax_layout",
                     "to_proto_bytes", "to_xla_client_shape"), "interop"),
    **dict.fromkeys(("MemoryReport", "memory_report"), "memory"),
    **dict.fromkeys(("from_physical", "relayout", "to_physical"), "physical"),
}
"""The facade's names imported on first use, by the submodule that holds them: the HLO reader, the memory model and
the physical-bytes engine take 0.2 s to import, which a command that only reads a shape need not pay."""

_SUBMODULES = ("broadcast", "cli", "dtypes", "errors", "explain", "hlo", "indexing", "inference", "interop", "layout",
               "memory", "ops", "physical", "render", "shape", "text", "tiling", "tpu")
"""The public submodules (``dir()`` lists them; ``xlashapes.hlo`` ... import on first use)."""


def __getattr__(name: str) -> _Any:
    """A facade name or submodule imported on first use (:data:`_LAZY`)."""
    if name in _LAZY:
        value = getattr(_importlib.import_module(f".{_LAZY[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = _importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__version__ = "0.1.0"

__all__ = [
    "COMBINE_DIMENSION",
    "ELEMENT_TYPES",
    "UNBOUNDED_SIZE",
    "ElementType",
    "HloComputation",
    "HloInstruction",
    "HloModule",
    "Layout",
    "MemoryReport",
    "ParseError",
    "Shape",
    "ShapeError",
    "SplitConfig",
    "TpuAdvice",
    "XlaShapesError",
    "binary_op_shape",
    "broadcast_shape",
    "default_layout",
    "dimension_stride",
    "element_type",
    "explain",
    "from_jax_array",
    "from_jax_layout",
    "from_physical",
    "from_proto_bytes",
    "from_xla_client_shape",
    "indices_in_memory_order",
    "infer_shape",
    "linear_index",
    "lower_binary",
    "make_shape",
    "memory_report",
    "multi_index",
    "opaque_shape",
    "ops",
    "parse_hlo_module",
    "parse_instruction",
    "parse_layout",
    "parse_shape",
    "relayout",
    "shape_text",
    "to_jax_layout",
    "to_physical",
    "to_proto_bytes",
    "to_xla_client_shape",
    "token_shape",
    "tpu_advice",
    "tpu_layout",
    "tuple_shape",
]


def __dir__() -> list[str]:
    """The facade's names (``__all__``), ``__version__`` and the public submodules, for ``dir()`` and completion."""
    return sorted({*__all__, "__version__", *_SUBMODULES})
