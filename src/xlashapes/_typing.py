"""NumPy array type aliases shared by the modules (one spelling of ``np.ndarray[Any, Any]`` everywhere).

>>> import numpy as np
>>> def first(values: Array) -> Array:
...     return values[:1]
>>> first(np.arange(3)).tolist()
[0]
"""

from __future__ import annotations

from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

Array: TypeAlias = npt.NDArray[Any]
"""Any NumPy array (any dtype, any shape)."""

BoolArray: TypeAlias = npt.NDArray[np.bool_]
"""A NumPy array of bools (XLA's ``pred``)."""

Int64Array: TypeAlias = npt.NDArray[np.int64]
"""A NumPy array of int64 values (indices, offsets, sizes)."""

UInt64Array: TypeAlias = npt.NDArray[np.uint64]
"""A NumPy array of uint64 values (bit patterns)."""

ByteArray: TypeAlias = npt.NDArray[np.uint8]
"""A NumPy array of raw bytes (uint8)."""
