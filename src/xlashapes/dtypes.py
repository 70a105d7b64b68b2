"""XLA's primitive element types: names, bit widths, kinds and NumPy dtypes.

ml_dtypes (bf16, fp8, int4 ... as NumPy dtypes) is imported on first use, not with the package: its 0.7.0 release
takes 0.5 s to import on this 2-core Xeon (0.6.0: 5 ms), which every ``xlashapes`` command that reads shapes or HLO
text and never makes such an array would pay (:func:`ml_dtypes_module`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np

from .errors import ShapeError


class Kind(str, Enum):
    """The kind of an element type; a ``str`` too, so ``Kind.PRED == "pred"``.

    >>> element_type("u8").kind is Kind.UNSIGNED, str(Kind.UNSIGNED)
    (True, 'unsigned')
    """

    PRED = "pred"
    SIGNED = "signed"
    UNSIGNED = "unsigned"
    FLOAT = "float"
    COMPLEX = "complex"
    TOKEN = "token"
    OPAQUE = "opaque"
    TUPLE = "tuple"

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


# The kinds as module constants (the names other modules import).
PRED = Kind.PRED
SIGNED = Kind.SIGNED
UNSIGNED = Kind.UNSIGNED
FLOAT = Kind.FLOAT
COMPLEX = Kind.COMPLEX
TOKEN = Kind.TOKEN
OPAQUE = Kind.OPAQUE
TUPLE = Kind.TUPLE


@dataclass(frozen=True)
class ElementType:
    """One XLA primitive type, e.g. ``bf16``: 16 bits, a float, NumPy dtype ``ml_dtypes.bfloat16``.

    >>> t = element_type("bf16")
    >>> t.bits, t.kind, t.numpy_dtype
    (16, <Kind.FLOAT: 'float'>, dtype(bfloat16))
    """

    name: str
    bits: int
    kind: Kind
    proto_number: int | None
    numpy_name: str | None

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"ElementType({self.name!r})"

    @property
    def is_array_type(self) -> bool:
        """True for types an array can hold (not token, opaque or tuple).

        >>> element_type("f32").is_array_type, element_type("token").is_array_type
        (True, False)
        """
        return self.kind not in (TOKEN, OPAQUE, TUPLE)

    @property
    def is_integral(self) -> bool:
        """True for signed and unsigned integers (not pred).

        >>> element_type("u8").is_integral, element_type("pred").is_integral
        (True, False)
        """
        return self.kind in (SIGNED, UNSIGNED)

    @property
    def is_signed(self) -> bool:
        """True for signed integers, floats and complex types.

        >>> element_type("s4").is_signed, element_type("u4").is_signed
        (True, False)
        """
        return self.kind in (SIGNED, FLOAT, COMPLEX)

    @property
    def is_floating(self) -> bool:
        """True for real floating-point types.

        >>> element_type("f8e4m3fn").is_floating
        True
        """
        return self.kind == FLOAT

    @property
    def is_complex(self) -> bool:
        """True for c64 and c128.

        >>> element_type("c64").is_complex
        True
        """
        return self.kind == COMPLEX

    @property
    def is_sub_byte(self) -> bool:
        """True for array types narrower than a byte (s1, u2, s4, f4e2m1fn ...).

        >>> element_type("s4").is_sub_byte, element_type("s8").is_sub_byte
        (True, False)
        """
        return self.is_array_type and 0 < self.bits < 8

    @property
    def byte_width(self) -> int:
        """Bytes one unpacked element occupies (XLA's ByteSizeOfPrimitiveType: sub-byte types take 1).

        >>> element_type("s4").byte_width, element_type("c128").byte_width
        (1, 16)
        """
        return (self.bits + 7) // 8

    @property
    def numpy_dtype(self) -> np.dtype[Any]:
        """The NumPy dtype holding one element (ml_dtypes for bf16, fp8, int4 ...).

        >>> element_type("s4").numpy_dtype
        dtype(int4)
        """
        if self.numpy_name is None:
            raise ShapeError(f"element type {self.name} has no NumPy dtype")
        return _numpy_dtype(self.name, self.numpy_name)

    @property
    def numpy_dtype_name(self) -> str | None:
        """``str(numpy_dtype)``, known without importing ml_dtypes; None for types with no NumPy dtype.

        >>> element_type("bf16").numpy_dtype_name, element_type("pred").numpy_dtype_name
        ('bfloat16', 'bool')
        """
        return None if self.numpy_name is None else self.numpy_name.rstrip("_")


@functools.cache
def _numpy_dtype(name: str, numpy_name: str) -> np.dtype[Any]:
    """The NumPy dtype called ``numpy_name`` (NumPy's own, else ml_dtypes', imported then) of element type ``name``."""
    found = getattr(np, numpy_name, None) or getattr(ml_dtypes_module(), numpy_name, None)
    if found is None:
        raise ShapeError(f"element type {name} needs ml_dtypes.{numpy_name}; upgrade ml_dtypes")
    dtype: np.dtype[Any] = np.dtype(found)
    return dtype


def ml_dtypes_module() -> Any:
    """The ml_dtypes module, imported on the first call (see the module docstring).

    >>> ml_dtypes_module().finfo("bfloat16").nmant
    7
    """
    import ml_dtypes

    return ml_dtypes


_TABLE: tuple[tuple[str, int, Kind, int | None, str | None], ...] = (
    ("pred", 8, PRED, 1, "bool_"),
    ("s1", 1, SIGNED, 30, "int1"),
    ("s2", 2, SIGNED, 26, "int2"),
    ("s4", 4, SIGNED, 21, "int4"),
    ("s8", 8, SIGNED, 2, "int8"),
    ("s16", 16, SIGNED, 3, "int16"),
    ("s32", 32, SIGNED, 4, "int32"),
    ("s64", 64, SIGNED, 5, "int64"),
    ("u1", 1, UNSIGNED, 31, "uint1"),
    ("u2", 2, UNSIGNED, 27, "uint2"),
    ("u4", 4, UNSIGNED, 22, "uint4"),
    ("u8", 8, UNSIGNED, 6, "uint8"),
    ("u16", 16, UNSIGNED, 7, "uint16"),
    ("u32", 32, UNSIGNED, 8, "uint32"),
    ("u64", 64, UNSIGNED, 9, "uint64"),
    ("f16", 16, FLOAT, 10, "float16"),
    ("bf16", 16, FLOAT, 16, "bfloat16"),
    ("f32", 32, FLOAT, 11, "float32"),
    ("f64", 64, FLOAT, 12, "float64"),
    ("c64", 64, COMPLEX, 15, "complex64"),
    ("c128", 128, COMPLEX, 18, "complex128"),
    ("f8e5m2", 8, FLOAT, 19, "float8_e5m2"),
    ("f8e4m3fn", 8, FLOAT, 20, "float8_e4m3fn"),
    ("f8e4m3b11fnuz", 8, FLOAT, 23, "float8_e4m3b11fnuz"),
    ("f8e5m2fnuz", 8, FLOAT, 24, "float8_e5m2fnuz"),
    ("f8e4m3fnuz", 8, FLOAT, 25, "float8_e4m3fnuz"),
    ("f8e4m3", 8, FLOAT, 28, "float8_e4m3"),
    ("f8e3m4", 8, FLOAT, 29, "float8_e3m4"),
    ("f4e2m1fn", 4, FLOAT, 32, "float4_e2m1fn"),
    ("f8e8m0fnu", 8, FLOAT, 33, "float8_e8m0fnu"),
    ("f6e2m3fn", 6, FLOAT, 36, "float6_e2m3fn"),
    ("f6e3m2fn", 6, FLOAT, 35, "float6_e3m2fn"),
    ("token", 0, TOKEN, 17, None),
    ("opaque", 0, OPAQUE, 14, None),
    ("tuple", 0, TUPLE, 13, None),
)

ELEMENT_TYPES: dict[str, ElementType] = {row[0]: ElementType(*row) for row in _TABLE}
"""Every XLA primitive type by its lowercase HLO name."""

TUPLE_TYPE = ELEMENT_TYPES["tuple"]
TOKEN_TYPE = ELEMENT_TYPES["token"]
OPAQUE_TYPE = ELEMENT_TYPES["opaque"]

# Names the shape text accepts as an element type (tuples are written with parentheses instead).
TEXT_TYPE_NAMES = frozenset(name for name in ELEMENT_TYPES if name != "tuple")


# NumPy/JAX spellings of the array types: their NumPy names ("bfloat16", "float32", "int4", "bool").
_NUMPY_NAMES: dict[str, ElementType] = {
    **{t.numpy_name.rstrip("_"): t for t in ELEMENT_TYPES.values() if t.numpy_name is not None},
    "bool_": ELEMENT_TYPES["pred"],
}
_BY_DTYPE: dict[np.dtype[Any], ElementType] = {}


def element_type(spec: str | ElementType | Any) -> ElementType:
    """The ElementType named by ``spec``: an HLO name, a NumPy/JAX name, a NumPy/ml_dtypes/JAX dtype or type.

    Accepted: ``"bf16"``, ``"bfloat16"``, ``"float32"``, ``"int4"``, ``np.float32``, ``np.dtype("int8")``,
    ``ml_dtypes.bfloat16``, ``jnp.bfloat16`` (anything ``np.dtype()`` takes), or an ElementType.

    >>> element_type("bf16").bits, element_type("bfloat16").name, element_type(np.float32).name
    (16, 'bf16', 'f32')
    """
    if isinstance(spec, ElementType):
        return spec
    if isinstance(spec, str):
        found = ELEMENT_TYPES.get(spec) or _NUMPY_NAMES.get(spec)
        if found is not None:
            return found
        raise ShapeError(f"unknown element type {spec!r}{_suggestion(spec)}; expected an XLA name "
                         f"({', '.join(ELEMENT_TYPES)}) or a NumPy name (float32, bfloat16, int4, ...)")
    if spec is None:  # np.dtype(None) would be float64
        raise ShapeError("element type is None; expected an XLA name, a NumPy name or a dtype")
    try:
        dtype = np.dtype(spec)
    except Exception:  # np.dtype() of an arbitrary object may raise anything its attributes raise
        raise ShapeError(f"unknown element type {spec!r}; expected an XLA name, a NumPy name or a dtype") from None
    return _from_dtype(dtype)


def hlo_name_for(word: str) -> str | None:
    """The XLA name of a type spelled the NumPy way (``"float32"`` -> ``"f32"``), or None.

    >>> hlo_name_for("float32"), hlo_name_for("F32"), hlo_name_for("x")
    ('f32', 'f32', None)
    """
    found = _NUMPY_NAMES.get(word) or ELEMENT_TYPES.get(word.lower()) or _NUMPY_NAMES.get(word.lower())
    return None if found is None or found.name == "tuple" else found.name


def _suggestion(word: str) -> str:
    name = hlo_name_for(word)
    return f" (did you mean {name}?)" if name is not None else ""


def _from_dtype(dtype: np.dtype[Any]) -> ElementType:
    found = _BY_DTYPE.get(dtype)
    if found is not None:
        return found
    own = [t for t in ELEMENT_TYPES.values() if t.numpy_name is not None and hasattr(np, t.numpy_name)]
    others = [t for t in ELEMENT_TYPES.values() if t.numpy_name is not None and t not in own]
    for candidate in own if dtype.type.__module__ == "numpy" else [*own, *others]:  # (NumPy's own: no ml_dtypes)
        if _same_dtype(candidate, dtype):
            _BY_DTYPE[dtype] = candidate
            return candidate
    raise ShapeError(f"NumPy dtype {dtype} has no XLA element type")
def _same_dtype(candidate: ElementType, dtype: np.dtype[Any]) -> bool:
    try:
        return candidate.numpy_dtype == dtype
    except ShapeError:
        return False
