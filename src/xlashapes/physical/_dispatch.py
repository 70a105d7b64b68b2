"""When the compiled kernels run: loading them (numba, optional), thresholds, threads, scratch and addresses."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from itertools import pairwise
from typing import Any

import numpy as np

from .._ints import checked_int
from ..errors import ShapeError
from . import _aot
from ._geometry import _line_aligned

NUMBA_BYTES = 1 << 20
"""Arrays at least this large go through the compiled kernels (smaller ones never import numba)."""
FIRST_NUMBA_BYTES = 64 << 20
"""Until numba is loaded, only arrays at least this large load it: importing numba and the cached kernels costs
a new process about 0.3-0.5 s, more than the compiled path saves on smaller arrays."""
STREAM_BYTES = 8 << 20
"""Kernels write outputs at least this large with streaming stores (as a big ``memcpy`` does)."""
THREAD_BYTES = 4 << 20
"""With more than one thread, conversions at least this large are split over the threads."""
@dataclass(frozen=True)
class Run:
    """The settings of one conversion: memory limit, threads and the compiled-path thresholds (bytes)."""

    limit: int
    threads: int
    numba_bytes: int = NUMBA_BYTES
    stream_bytes: int = STREAM_BYTES
    thread_bytes: int = THREAD_BYTES


def run_settings(limit: int, threads: Any, nbytes: int = 0) -> Run:
    """The settings for a call on an array of ``nbytes``, with the thresholds as this module holds them now.

    >>> run_settings(1 << 30, 2).threads
    2
    """
    count = checked_int(threads, "threads (xlashapes.physical.THREADS)")
    if count < 1:
        raise ShapeError(f"threads must be >= 1, got {count}")
    loaded = numba_loaded() or _aot.engine_loaded()
    first = NUMBA_BYTES if loaded or nbytes >= FIRST_NUMBA_BYTES else max(NUMBA_BYTES, FIRST_NUMBA_BYTES)
    return Run(limit, count, first, STREAM_BYTES, THREAD_BYTES)


def numba_loaded() -> bool:
    """True once numba is imported (by these kernels or anything else in the process).

    >>> isinstance(numba_loaded(), bool)
    True
    """
    return "numba" in sys.modules and sys.modules["numba"] is not None


def compiled_enabled() -> bool:
    """False when ``XLASHAPES_NO_NUMBA`` is set to anything but empty or 0 (the NumPy path is forced).

    >>> isinstance(compiled_enabled(), bool)
    True
    """
    return os.environ.get("XLASHAPES_NO_NUMBA", "").strip() in ("", "0")


def kernels_summary() -> str:
    """One line on what large conversions run in this process: shipped machine code, code compiled on first use, or
    the NumPy path, and why.

    >>> isinstance(kernels_summary(), str)
    True
    """
    from ._cache import cache_directory
    from ._prebuilt import archive, archive_problem

    if not compiled_enabled():
        return "the NumPy path (XLASHAPES_NO_NUMBA is set)"
    if not _aot.numba_available():
        return "the NumPy path (numba is not installed)"
    shipped = archive()
    if shipped is not None:
        return f"machine code shipped for {shipped.name}, nothing to compile (kept code: {cache_directory()})"
    return (f"compiled by numba on first use, 2-4 s a layout, kept in {cache_directory()} (no shipped machine code: "
            f"{archive_problem()})")


def kernels() -> Any:
    """The compiled 2-d kernels (``tiled_to_physical``, ``pack`` ...: :class:`._aot.Entries` of ``_kernels``), or
    None when numba is missing (or failed to import) or ``XLASHAPES_NO_NUMBA`` forces NumPy. Their kept machine
    code is used where this process can load it (no numba import), else numba's."""
    return _entries_of("_kernels")


def walker() -> Any:
    """The generic compiled kernel's entry points (``walk_runs`` ... :mod:`._kinds`, ``shifted_rows``,
    ``staged_transpose``), or None (as :func:`kernels`)."""
    return _entries_of("_walk")


def stacker() -> Any:
    """The stacked tiled kernel's entry point (``tiled_stacked``: :mod:`._stacks`), or None (as :func:`kernels`)."""
    return _entries_of("_stacks")


def tabler() -> Any:
    """The table kernels' entry points (``merged_squares``, ``merged_lines``, ``permuted_blocks``: :mod:`._tables`), or
    None (as :func:`kernels`)."""
    return _entries_of("_tables")


def indexer() -> Any:
    """The ``multi_index`` kernel's entry point (``multi_indices``: :mod:`._inverse`), or None (as :func:`kernels`)."""
    return _entries_of("_inverse")


def _entries_of(module: str) -> Any:
    """The entry points of kernel module ``module``, or None (as :func:`kernels`)."""
    if not compiled_enabled() or _aot.numba_failed():
        return None
    return import_entries(module)


@cache
def import_entries(module: str) -> Any:
    """The entry points of :mod:`xlashapes.physical.<module>`, made once each; None without numba."""
    return _aot.entries(module)


def with_fallback(work: Callable[[], None]) -> None:
    """``work()``; done again (on the NumPy path) if a kernel found numba unimportable on the way.

    Every path writes the whole output, so the second run leaves no trace of the first.

    >>> with_fallback(lambda: None)
    """
    try:
        work()
    except _aot.Unavailable:
        work()  # kernels() and walker() are None now


def scratch(nbytes: int) -> np.ndarray[Any, Any]:
    """A kernel's scratch buffer for units of ``nbytes``: at least 32 KiB, with room to move partial lines."""
    return np.empty(max(nbytes + 1024, 1 << 15), np.uint8)


KEPT_BYTES = 64 << 20
"""Most bytes of conversion temporaries kept, once their conversion is over, for the next ones (:func:`temporary`)."""

KEPT_COUNT = 4
"""Most temporaries kept for the next conversions (:func:`temporary`)."""

_KEPT: list[np.ndarray[Any, Any]] = []  # idle temporaries, the one given back last at the end
_KEPT_LOCK = threading.Lock()


@contextmanager
def temporary(nbytes: int) -> Iterator[np.ndarray[Any, Any]]:
    """A ``uint8`` buffer of ``nbytes`` on a cache line for one conversion's temporary (E(n) groups' bytes, the
    slabs of two passes): of the idle ones kept from earlier conversions that are large enough, the one given back
    last (its lines likeliest still cached; a conversion that takes one temporary at a time keeps using one), else a
    new one; afterwards it is kept for the next conversions, at most ``KEPT_COUNT`` of them and ``KEPT_BYTES`` in
    all, those given back longest ago dropped first (:func:`release_temporaries` frees them).

    New memory is not free: the system maps and zeroes each page on first touch, which on this project's machine
    costs more than the conversion's own pass over it (s4 ``[512,256,512]{1,0,2:T(8,128)(2,1)E(4)}`` read back
    3.2x memcpy with a new 32 MiB temporary, 1.9x with the kept one). Concurrent conversions each get their own, and
    so do the temporaries of one conversion's routes (one kept temporary went back and forth between a route's
    slabs and another's, and was new to one of them on most calls).

    >>> with temporary(100) as buffer:
    ...     buffer.size, buffer.ctypes.data % 64
    (100, 0)
    """
    with _KEPT_LOCK:
        fits = [k for k, kept in enumerate(_KEPT) if kept.size >= nbytes]
        held = _KEPT.pop(fits[-1]) if fits else None
    buffer = held if held is not None else _line_aligned(nbytes)
    try:
        yield buffer[:nbytes]
    finally:
        if buffer.size <= KEPT_BYTES:
            with _KEPT_LOCK:
                _KEPT.append(buffer)
                while len(_KEPT) > KEPT_COUNT or sum(kept.size for kept in _KEPT) > KEPT_BYTES:
                    del _KEPT[0]


def release_temporaries() -> int:
    """Free the temporaries kept for the next conversions (:func:`temporary`); returns their size in bytes (0: none).

    >>> release_temporaries() >= 0
    True
    """
    with _KEPT_LOCK:
        freed = sum(buffer.size for buffer in _KEPT)
        _KEPT.clear()
    return freed


def address(array: np.ndarray[Any, Any]) -> int:
    """The address of an array's first byte (the kernels take addresses; the caller keeps the array alive)."""
    return int(array.ctypes.data)


class Canonical:
    """A pred conversion's account of its copies (:func:`._copy._copy`): the bytes of the outermost ones, each left
    canonical (0 or 1) by the copy itself (``covered``); the bytes the kernels made canonical as they wrote them in
    the copy running (``made``); how deep the copies running are nested (``depth``). Where ``covered`` is all the
    logical bytes, no pass over the bytes after the conversion is needed.

    >>> with canonical_writes(True) as account:
    ...     account.depth = 1; made_canonical(8)
    >>> account.made, canonical_account() is None
    (8, True)
    """

    def __init__(self) -> None:
        self.covered = 0
        self.made = 0
        self.depth = 0
        self.passes = True
        self.left = False  # (the last plan of the copy running left its bytes as they were)

    def covers(self, nbytes: int) -> bool:
        """True when the outermost copies left ``nbytes`` canonical (all of a conversion's logical bytes)."""
        return 0 < nbytes == self.covered


_CANONICAL = threading.local()


@contextmanager
def canonical_writes(wanted: bool) -> Iterator[Canonical | None]:
    """The account of a conversion that wants its bytes canonical (``wanted``: pred), the current one until the
    block ends (None for other conversions; a conversion inside another has its own)."""
    before = getattr(_CANONICAL, "account", None)
    account = Canonical() if wanted else None
    _CANONICAL.account = account
    try:
        yield account
    finally:
        _CANONICAL.account = before


@contextmanager
def no_passes(wanted: bool) -> Iterator[None]:
    """Within the block, where ``wanted``, the copies of the current pred conversion make no pass of their own over
    their bytes (only their kernels make them canonical, as they write them)."""
    account = canonical_account()
    before = account.passes if account is not None else True
    if account is not None and wanted:
        account.passes = False
    try:
        yield
    finally:
        if account is not None:
            account.passes = before


def canonical_account() -> Canonical | None:
    """The account of the conversion running on this thread that wants its bytes canonical, or None."""
    found: Canonical | None = getattr(_CANONICAL, "account", None)
    return found


def fusing() -> bool:
    """True where the kernels should make the bytes they write canonical: in the outermost copy of a conversion that
    wants them so (copies inside it, as two passes through a buffer, write plain bytes)."""
    account = canonical_account()
    return account is not None and account.depth == 1


def made_canonical(nbytes: int) -> None:
    """Count ``nbytes`` a kernel wrote canonical in the outermost copy running (:func:`fusing`)."""
    account = canonical_account()
    if account is not None and account.depth == 1:
        account.made += nbytes


_POOLS: dict[int, ThreadPoolExecutor] = {}  # by thread count, made on first use
_POOLS_LOCK = threading.Lock()


def parts(units: int, nbytes: int, run: Run, step: int = 1) -> list[tuple[int, int]]:
    """Ranges [first, last) of ``units`` work units, one per thread (just one below ``run.thread_bytes``), each
    a multiple of ``step`` units long but the last (which takes the rest).

    >>> parts(10, 1 << 30, Run(0, 3))
    [(0, 3), (3, 6), (6, 10)]
    >>> parts(10, 1 << 30, Run(0, 3), 4)
    [(0, 4), (4, 10)]
    """
    steps = units // step
    threads = max(1, min(run.threads, steps)) if nbytes >= run.thread_bytes else 1
    return list(pairwise([*(steps * k // threads * step for k in range(threads)), units]))


def run_parts(work: Callable[[tuple[int, int]], None], ranges: list[tuple[int, int]]) -> None:
    """``work`` on each range: on this thread if there is one, else on a pool of threads (the kernels drop the GIL)."""
    if len(ranges) == 1:
        work(ranges[0])
        return
    with _POOLS_LOCK:
        pool = _POOLS.get(len(ranges))
        if pool is None:
            pool = _POOLS[len(ranges)] = ThreadPoolExecutor(len(ranges), thread_name_prefix="xlashapes")
    for _ in pool.map(work, ranges):
        pass
