"""Where the compiled kernels are cached on disk (read by the kernels at decoration time and by the dispatch)."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from functools import lru_cache

CACHE_VARIABLE = "XLASHAPES_CACHE_DIR"
"""Environment variable naming the directory of the compiled kernels' cache (numba's ``cache=True`` files)."""


def cache_directory() -> str:
    """Where the compiled kernels are cached: ``$XLASHAPES_CACHE_DIR``, else ``$XDG_CACHE_HOME/xlashapes``,
    else ``~/.cache/xlashapes``.

    >>> cache_directory().endswith("xlashapes") or "XLASHAPES_CACHE_DIR" in os.environ
    True
    """
    chosen = os.environ.get(CACHE_VARIABLE, "").strip()
    if chosen:
        return os.path.abspath(os.path.expanduser(chosen))
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(base), "xlashapes")


KERNEL_SOURCES = ("_intrinsics.py", "_inverse.py", "_kernel_args.py", "_kernels.py", "_kinds.py", "_shuffles.py",
                  "_side_by_side.py", "_stacks.py", "_staging.py", "_tables.py", "_tile_parts.py", "_walk.py")
"""The kernel source files digested into the cache's subdirectory name (numba's files and the kept objects)."""


@lru_cache(maxsize=1)
def kernels_digest() -> str:
    """``kernels-`` and a digest of the kernels' source files: each version of the sources gets its own cache
    subdirectory (numba's cache checks a function's own file only, not the files of what it inlines). Computed
    without importing numba, so that the ahead-of-time loader finds the same directory.

    >>> kernels_digest().startswith("kernels-") and len(kernels_digest()) == 24
    True
    """
    digest = hashlib.sha256()
    folder = os.path.dirname(os.path.abspath(__file__))
    for name in KERNEL_SOURCES:
        try:
            with open(os.path.join(folder, name), "rb") as source:
                digest.update(source.read())
        except OSError:
            digest.update(name.encode())
    return "kernels-" + digest.hexdigest()[:16]


def kernels_directory() -> str:
    """The cache subdirectory of this version of the kernel sources (numba's files and the machine-code objects).

    >>> os.path.basename(kernels_directory()) == kernels_digest()
    True
    """
    return os.path.join(cache_directory(), kernels_digest())


STALE_DAYS = 30
"""Days after which another version's kernel cache (or kept machine code for another host) is removed."""


def prune_stale(folder: str, prefix: str, keep: str, days: float = STALE_DAYS) -> list[str]:
    """Remove the subdirectories of ``folder`` named ``prefix...`` but ``keep`` that were not used (their mtime:
    written, or :func:`mark_used`) for ``days`` days: the caches of kernel sources or hosts no longer in use.
    Returns their paths; errors leave a directory in place.

    >>> prune_stale("/no/such/folder", "kernels-", "kernels-0")
    []
    """
    removed: list[str] = []
    limit = time.time() - days * 86400
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        try:
            stale = entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < limit
        except OSError:
            continue
        if entry.name.startswith(prefix) and entry.name != keep and stale:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed


def mark_used(*folders: str) -> None:
    """Set the mtime of ``folders`` to now (a process uses their contents), so that :func:`prune_stale` keeps them.

    >>> mark_used("/no/such/folder")
    """
    for folder in folders:
        try:
            os.utime(folder)
        except OSError:
            pass
