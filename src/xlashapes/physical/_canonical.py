"""Pred bytes left canonical (0 or 1) by the copies that write them, not by a pass over them after the conversion.

XLA's pred is one byte, 0 or 1; the bytes given may be anything, so a pred conversion made its output canonical in a
second pass over it (``_geometry._canonicalize``), which cost 0.5-1x memcpy on top of the copy. Kernels whose bytes pass
through registers or a scratch in the cache make them canonical there at next to no cost: merged squares
(``merged_squares``, ``merged_lines``, ``merged_staged``) and the staged 2-d transposes (``staged_transpose``) have
twins that do (``<name>_canonical``, taken where :func:`._dispatch.fusing` says so). A pred conversion holds an account
(:func:`._dispatch.canonical_writes`); each of its outermost copies (:func:`._copy._copy`) leaves its destination
canonical, by those kernels or by a pass over that destination's span (:func:`canonical_bytes`; not where the
destination is sparse in it); a timed plan's time counts that pass (:func:`canonical_after`), so that timing prefers the
kernels that need none. Where the copies covered all the logical bytes, the conversion skips its own pass. pred
``[16384,2048]{0,1:T(8,128)(4,1)}`` laid out: 3.6 -> 2.4 ms (merged squares, the bytes made 0 or 1 in registers, against
the walk's squares and a pass).
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
        made, account.left = account.made, False
        copy()
        if account.depth == 1:  # (not all made canonical by the kernels as they wrote them: a pass, if it pays)
            fused = not account.left and account.made - made >= dst.nbytes
            done = fused or (account.passes and canonical_bytes(dst))
            account.made = made
            account.covered += dst.nbytes if done else 0
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
        if done:  # (a plan run after another, as the kernel worker runs them all, leaves its own bytes)
            left = account.made - made < d.nbytes and not (account.passes and canonical_bytes(d))
            account.made, account.left = made + (0 if left else d.nbytes), left
        return done

    return run


SPARSE = 1.25
"""A view whose bytes lie over a span more than this many times their count is left to the conversion's pass: the
pass of a copy goes over its whole span at once (bytes in between are padding, 0 or 1 already, or others' bytes, which
the pass leaves as their own copy will), and over a sparse one it cost more than the conversion's single pass (pred
``[4194,5,200,8]{0,1,2,3:T(8,128)(4,1)}`` laid out, every fourth byte of a span: 12 ms against 1.5 ms)."""


def canonical_bytes(view: np.ndarray[Any, Any]) -> bool:
    """Every byte in the span of a strided view (non-negative steps) made 0 or 1 in place (pred), in one pass over the
    span; False (nothing done) where the view is sparse in it (``SPARSE``).

    >>> a = np.array([[0x0201, 0], [0x100, 7]], np.uint16)
    >>> canonical_bytes(a.T), a.tolist(), canonical_bytes(a[:, :1])
    (True, [[257, 0], [256, 1]], False)
    """
    if min(view.strides, default=0) < 0:
        return False
    span = sum((n - 1) * step for n, step in zip(view.shape, view.strides)) + view.itemsize
    if span > SPARSE * view.nbytes:
        return False
    first = view.view(np.dtype((np.uint8, (view.itemsize,)))) if view.itemsize > 1 else view
    data = np.lib.stride_tricks.as_strided(first, shape=(span,), strides=(1,))
    np.not_equal(data, 0, out=data.view(np.bool_))
    return True
