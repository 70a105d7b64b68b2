"""Pred bytes left canonical (0 or 1) by the copies that write them, not by a pass over them after the conversion.

XLA's pred is one byte, 0 or 1; the bytes given may be anything, so a pred conversion made its output canonical in a
second pass over it (``_geometry._canonicalize``), which cost 0.5-1x memcpy on top of the copy. Kernels whose bytes
pass through registers or a scratch in the cache make them canonical there at next to no cost: merged squares
(``merged_squares``, ``merged_lines``, ``merged_staged``) and the staged 2-d transposes (``staged_transpose``), their
``canon`` argument set where :func:`._dispatch.fusing` says so. A pred conversion holds an account
(:func:`._dispatch.canonical_writes`); each of its outermost copies (:func:`._copy._copy`) leaves its destination
canonical, by those kernels or by a pass over that destination alone (:func:`canonical_bytes`); a timed plan's time
counts that pass (:func:`canonical_after`), so that timing prefers the kernels that need none. Where the copies
covered all the logical bytes, the conversion skips its own pass. pred ``[16384,2048]{0,1:T(8,128)(4,1)}`` laid out:
3.6 -> 2.4 ms (merged squares, the bytes made 0 or 1 in registers, against the walk's squares and a pass).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import _dispatch as dispatch


def canonical_copy(dst: np.ndarray[Any, Any], copy: Callable[[], None]) -> None:
    """``copy()`` (which writes ``dst``), in a pred conversion (:func:`._dispatch.canonical_writes`) as one of its
    outermost copies: ``dst`` then left canonical, by the kernels or a pass over it, and counted in the account; the
    copies inside it (two passes through a buffer) write plain bytes."""
    account = dispatch.canonical_account()
    if account is None:
        copy()
        return
    account.depth += 1
    try:
        made = account.made
        copy()
        if account.depth == 1:
            if account.made - made < dst.nbytes:  # (not all made canonical by the kernels as they wrote them)
                canonical_bytes(dst)
            account.made = made
            account.covered += dst.nbytes
    finally:
        account.depth -= 1


def canonical_plans(plans: list[Callable[[], bool]], d: np.ndarray[Any, Any]) -> list[Callable[[], bool]]:
    """``plans`` as they are, or in a pred conversion's outermost copy each followed by its pass to canonical bytes
    where it needs one (:func:`canonical_after`), so that timing them counts that pass."""
    return [canonical_after(plan, d) for plan in plans] if dispatch.fusing() else plans


def canonical_after(plan: Callable[[], bool], d: np.ndarray[Any, Any]) -> Callable[[], bool]:
    """``plan`` (writing ``d``), then, in a pred conversion's outermost copy (:func:`._dispatch.fusing`), ``d`` made
    canonical where its kernels did not make all of it so: a timed plan's time then counts the pass it leaves."""

    def run() -> bool:
        account = dispatch.canonical_account()
        if account is None or account.depth != 1:
            return plan()
        made = account.made
        done = plan()
        if done and account.made - made < d.nbytes:
            canonical_bytes(d)
        if done:
            account.made = made + d.nbytes
        return done

    return run


def canonical_bytes(view: np.ndarray[Any, Any]) -> None:
    """Every byte of a strided view made 0 or 1 in place (pred), its elements seen as bytes whatever their width.

    >>> a = np.array([[0x0201, 0], [0x100, 7]], np.uint16)
    >>> canonical_bytes(a.T); a.tolist()
    [[257, 0], [256, 1]]
    """
    data = view.view(np.dtype((np.uint8, (view.itemsize,)))) if view.itemsize > 1 else view
    np.not_equal(data, 0, out=data.view(np.bool_))
