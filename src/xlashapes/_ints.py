"""int64 checks in one place: every size, index and layout number xlashapes accepts fits XLA's int64; and the integer
helpers beside them (rounding up, divisors)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .errors import ShapeError

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


def checked_int(value: Any, what: str) -> int:
    """``value`` as a Python int within int64, or ShapeError naming ``what``.

    >>> checked_int(7, "size")
    7
    """
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:
        return value
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise ShapeError(f"{what} must be an integer, got {value!r}")
    try:
        number = int(value.__index__())
    except (TypeError, ValueError, OverflowError):
        raise ShapeError(f"{what} must be an integer, got {value!r}") from None
    if not INT64_MIN <= number <= INT64_MAX:
        raise ShapeError(f"{what} = {number} does not fit in int64")
    return number


def checked_ints(values: Iterable[Any], what: str) -> tuple[int, ...]:
    """A tuple of int64 values, or ShapeError naming ``what`` and the offending entry.

    >>> checked_ints([1, 2], "dimensions")
    (1, 2)
    """
    if type(values) is tuple and all(type(v) is int and INT64_MIN <= v <= INT64_MAX for v in values):
        return values
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise ShapeError(f"{what} must be a sequence of integers, got {values!r}")
    try:
        items = list(values)
    except TypeError:  # e.g. a 0-d NumPy array
        raise ShapeError(f"{what} must be a sequence of integers, got {values!r}") from None
    return tuple(checked_int(v, f"{what}[{i}]") for i, v in enumerate(items))


def checked_sequence(value: Any, what: str) -> tuple[Any, ...]:
    """A sequence's entries as a tuple, or ShapeError naming ``what`` (strings and scalars are not sequences).

    >>> checked_sequence([1, "a"], "entries")
    (1, 'a')
    """
    if type(value) is tuple:
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable) or getattr(value, "ndim", 1) == 0:
        raise ShapeError(f"{what} must be a sequence, got {value!r}")
    return tuple(value)


def checked_product(values: Iterable[int], what: str) -> int:
    """The product of non-negative ``values``, or ShapeError when it overflows int64.

    >>> checked_product((3, 5), "elements")
    15
    """
    product = 1
    for v in values:
        product *= v
        if product > INT64_MAX:
            raise ShapeError(f"{what} overflows int64")
    return product


def checked_round_up(value: int, multiple: int, what: str) -> int:
    """``value`` rounded up to a multiple of ``multiple`` (>= 1), or ShapeError when that overflows int64.

    >>> checked_round_up(15, 4, "elements")
    16
    """
    rounded = -(-value // multiple) * multiple
    if rounded > INT64_MAX:
        raise ShapeError(f"{what} overflows int64")
    return rounded


def ceil_div(value: int, divisor: int) -> int:
    """``value / divisor`` rounded up (both positive).

    >>> ceil_div(5, 2)
    3
    """
    return -(-value // divisor)


def divisor_near(n: int, target: int) -> int:
    """The largest divisor of ``n`` that is at most ``target`` (at least 1).

    >>> divisor_near(4096, 100), divisor_near(97, 10)
    (64, 1)
    """
    best = 1
    k = 1
    while k * k <= n:
        if n % k == 0:
            for q in (k, n // k):
                if best < q <= target:
                    best = q
        k += 1
    return best
