"""Constant literals: a constant's text read against its shape, with XLA's nesting, count and range rules.

Integers must fit their type (u64 up to 2**64 - 1); a finite float must not round to infinity (or NaN) in its
type (``f16[] constant(-65520)``, ``f64[] constant(1.8e308)`` are refused); a NaN payload must fit the type's
mantissa; every dimension needs exactly its number of elements.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..dtypes import ElementType, ml_dtypes_module
from ..shape import Shape
from ..text import shape_text
from ._source import Source
from ._tokens import TokenReader, is_uint64

__all__ = ["literal_value"]


class _Literal(TokenReader):
    """Reads one literal."""

    __slots__ = ()

    def real(self, etype: ElementType) -> float:
        """A floating-point number (or integer, inf, -inf, nan) that ``etype`` can hold."""
        token = self.token
        if token.kind == "keyword" and token.value == "inf":
            self.advance()
            return math.inf
        if token.kind not in ("decimal", "int", "neg_inf"):
            raise self.fail("expected a number")
        self.advance()
        value = float(token.value)  # type: ignore[arg-type]
        written = self.text[token.start:token.end]
        if math.isnan(value):
            _check_nan_payload(self, written, etype, token)
        elif math.isinf(value) and "inf" not in written:
            raise self.error(f"value {written} is out of range for {etype}", token)
        elif math.isfinite(value) and etype.name not in ("f64", "c128"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                converted = float(np.array(value).astype(_component_dtype(etype)))
            if not math.isfinite(converted):
                raise self.error(f"value {written} is out of range for {etype}", token)
        return value

    def integer_of(self, etype: ElementType) -> int:
        """An integer that ``etype`` can hold."""
        token = self.token
        if token.kind == "error" and is_uint64(self.text, token):
            self.advance()
            value = int(self.text[token.start:token.end])
        else:
            value = self.integer("an integer")
        low, high = _integer_range(etype)
        if not low <= value <= high:
            raise self.error(f"{value} is out of range for {etype} [{low}, {high}]", token)
        return value


def _component_dtype(etype: ElementType) -> Any:
    """The NumPy dtype of one real component of ``etype``."""
    if etype.name == "c64":
        return np.float32
    if etype.name == "c128":
        return np.float64
    return etype.numpy_dtype


def _integer_range(etype: ElementType) -> tuple[int, int]:
    """The smallest and largest value of an integral (or pred) type."""
    if etype.name == "pred":
        return -(2**63), 2**64 - 1  # XLA reads any integer as a boolean (non-zero is true)
    info = ml_dtypes_module().iinfo(etype.numpy_dtype)
    return int(info.min), int(info.max)


def _check_nan_payload(p: _Literal, written: str, etype: ElementType, token: Any) -> None:
    """ParseError when ``nan(0x...)`` sets more payload bits than the type's mantissa has."""
    if "(" not in written:
        return
    payload = int(written[written.index("(") + 3:-1], 16)
    mantissa = int(ml_dtypes_module().finfo(_component_dtype(etype)).nmant)
    if payload == 0 or payload >= 1 << mantissa:
        raise p.error(f"NaN payload {written[written.index('(') + 1:-1]} does not fit the {mantissa}-bit mantissa "
                      f"of {etype}", token)


def literal_value(source: Source, start: int, text: str, shape: Shape) -> Any:
    """The literal ``text`` (at ``start`` of ``source``) of a constant of ``shape``, as NumPy values.

    >>> from xlashapes.text import parse_shape
    >>> literal_value(Source("{1, 2}"), 0, "{1, 2}", parse_shape("f32[2]"))
    array([1., 2.], dtype=float32)
    """
    if text == "{...}":
        return None
    parser = _Literal(source, start)
    try:
        value = _literal(parser, shape)
    except RecursionError:
        raise source.error("literal nested too deeply", start) from None
    if parser.prev_end != start + len(text):
        raise parser.fail("unexpected text after the literal")
    return value


def _literal(p: _Literal, shape: Shape) -> Any:
    """A tuple or array literal of ``shape``."""
    if shape.is_tuple:
        p.expect("(", "expected '(' to start a tuple literal")
        elements = []
        for i, element in enumerate(shape.tuple_shapes):
            if i:
                p.expect(",", "expected ',' between tuple elements")
            elements.append(_literal(p, element))
        p.expect(")", f"expected ')' after {len(shape.tuple_shapes)} tuple elements")
        return tuple(elements)
    if not shape.is_array:
        raise p.fail(f"{shape} values have no literal")
    values: list[Any] = []
    if not shape.dimensions:
        values.append(_scalar(p, shape.element_type))
    elif not _nested_values(p, shape, 0, values):
        return None
    return _array(values, shape)


def _nested_values(p: _Literal, shape: Shape, level: int, values: list[Any]) -> bool:
    """``{...}`` for dimension ``level`` into ``values``; False when the literal is elided as ``{...}``."""
    opening = p.expect("{", f"expected '{{' for dimension {level} of {shape_text(shape)}")
    if level == 0 and p.token.kind == "...":
        p.advance()
        p.expect("}", "expected '}' after '...'")
        return False
    count = 0
    size = shape.dimensions[level]
    while p.token.kind != "}":
        if count and p.token.kind == ",":
            p.advance()
        if count >= size:
            raise p.error(f"dimension {level} of {shape_text(shape)} needs {size} elements, this has more", opening)
        if level + 1 < shape.rank:
            _nested_values(p, shape, level + 1, values)
        else:
            values.append(_scalar(p, shape.element_type))
        count += 1
    if count != size:
        raise p.error(f"dimension {level} of {shape_text(shape)} needs {size} elements, this has {count}", opening)
    p.advance()
    return True


def _scalar(p: _Literal, etype: ElementType) -> Any:
    """One element of type ``etype``."""
    token = p.token
    if etype.name == "pred" and token.kind == "keyword":
        return p.boolean()
    if etype.is_integral or etype.name == "pred":
        return p.integer_of(etype)
    if etype.is_complex:
        p.expect("(", "expected '(' for a complex number")
        real = p.real(etype)
        p.expect(",", "expected ','")
        imag = p.real(etype)
        p.expect(")", "expected ')'")
        return complex(real, imag)
    if etype.is_floating:
        return p.real(etype)
    raise p.fail(f"{etype} has no literal values")


def _array(values: list[Any], shape: Shape) -> np.ndarray[Any, Any]:
    """The values as a NumPy array of the shape's type and dimensions."""
    dtype = shape.element_type.numpy_dtype
    if shape.element_type.is_floating:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array(values, dtype=np.float64).astype(dtype).reshape(shape.dimensions)
    if shape.element_type.name == "pred":
        return np.array([bool(v) for v in values], dtype=dtype).reshape(shape.dimensions)
    return np.array(values, dtype=dtype).reshape(shape.dimensions)
