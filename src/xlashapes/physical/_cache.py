"""Where the compiled kernels are cached on disk (read by the kernels at decoration time and by the dispatch)."""

from __future__ import annotations

import os

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
