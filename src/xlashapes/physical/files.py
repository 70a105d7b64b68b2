"""Streaming files through a layout: ``.npy`` to the exact bytes of a layout and back, larger than memory.

Both files are memory-mapped and converted one chunk of slabs at a time (see :mod:`._chunks`); after each chunk
the pages are handed back to the operating system, so the process holds about one chunk whatever the file size.
A ``progress`` callable gets (bytes done, bytes in all) after each chunk; :func:`terminal_progress` draws a bar.

>>> import os, tempfile, numpy as np
>>> folder = tempfile.mkdtemp()
>>> np.save(os.path.join(folder, "x.npy"), np.arange(6, dtype=np.uint8).reshape(2, 3))
>>> pack_file(os.path.join(folder, "x.npy"), "u8[2,3]{0,1}", os.path.join(folder, "x.bin"))
6
>>> open(os.path.join(folder, "x.bin"), "rb").read().hex()
'000301040205'
>>> unpack_file(os.path.join(folder, "x.bin"), "u8[2,3]{0,1}", os.path.join(folder, "y.npy"))
6
>>> np.load(os.path.join(folder, "y.npy")).tolist()
[[0, 1, 2], [3, 4, 5]]
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

import numpy as np

from ..errors import ShapeError
from ..shape import Shape
from ._convert import _read_physical, _write_physical
from ._dispatch import run_settings, with_fallback
from ._geometry import _geometry, _logical_storage, _padding_storage, _resolved_shape
from ._slabbed import Progress, read_in_slabs, release, write_in_slabs

__all__ = ["pack_file", "terminal_progress", "unpack_file"]


def pack_file(
    npy_path: str | os.PathLike[str],
    shape: Shape | str,
    out_path: str | os.PathLike[str],
    *,
    padding_value: Any = None,
    progress: Progress | None = None,
    threads: int = 1,
) -> int:
    """Write the ``.npy`` array at ``npy_path`` as ``shape``'s exact bytes to ``out_path``; the bytes written."""
    _check_distinct(npy_path, out_path)
    array_shape = _resolved_shape(shape)
    geometry = _geometry(array_shape)
    x = _load(npy_path)
    if x.dtype.kind == "V" and not x.dtype.fields and x.dtype.itemsize == geometry.dtype.itemsize:
        x = x.view(geometry.dtype)  # .npy files keep ml_dtypes types (bf16, fp8, s4 ...) as plain bytes
    storage = _logical_storage(x, geometry)
    pad = _padding_storage(geometry, padding_value)
    run = run_settings(1 << 62, threads, max(x.nbytes, geometry.nbytes))
    if geometry.nbytes == 0:
        _write_empty(out_path)
        return 0
    try:
        out = np.memmap(out_path, dtype=np.uint8, mode="w+", shape=(geometry.nbytes,))
    except OSError as err:
        raise ShapeError(f"cannot write {os.fspath(out_path)!r}: {err.strerror or err}") from None
    target = out  # (``out`` itself is deleted below, the map released)

    def write() -> None:
        if not write_in_slabs(storage, geometry, pad, target, run, progress):
            _write_physical(storage, geometry, pad, target, run)
            if progress is not None:
                progress(geometry.nbytes, geometry.nbytes)

    try:
        with_fallback(write)
        out.flush()
    finally:
        release(out)
        del out
    return geometry.nbytes


def unpack_file(
    bin_path: str | os.PathLike[str],
    shape: Shape | str,
    out_path: str | os.PathLike[str],
    *,
    progress: Progress | None = None,
    threads: int = 1,
) -> int:
    """Read ``shape``'s bytes from ``bin_path`` and save the array as ``.npy`` at ``out_path``; the bytes read."""
    _check_distinct(bin_path, out_path)
    array_shape = _resolved_shape(shape)
    geometry = _geometry(array_shape)
    try:
        size = os.path.getsize(bin_path)
    except OSError as err:
        raise ShapeError(f"cannot read {os.fspath(bin_path)!r}: {err.strerror or err}") from None
    if size != geometry.nbytes:
        raise ShapeError(f"{os.fspath(bin_path)!r} has {size} bytes but {array_shape} takes {geometry.nbytes}")
    run = run_settings(1 << 62, threads, geometry.nbytes)
    try:
        result = np.lib.format.open_memmap(os.fspath(out_path), mode="w+", dtype=geometry.dtype, shape=geometry.dims)
    except (OSError, ValueError) as err:
        raise ShapeError(f"cannot write {os.fspath(out_path)!r}: {err}") from None
    try:
        if geometry.nbytes and result.size:
            data = np.memmap(bin_path, dtype=np.uint8, mode="r")
            storage = result.view(geometry.storage)

            def read() -> None:
                if not read_in_slabs(data, geometry, storage, run, progress):
                    _read_physical(data, geometry, storage, run)
                    if progress is not None:
                        progress(geometry.nbytes, geometry.nbytes)

            with_fallback(read)
            release(data)
            del data
        result.flush()
    finally:
        release(result)
        del result
    return geometry.nbytes


def terminal_progress(stream: TextIO | None = None, label: str = "") -> Progress | None:
    """A progress callable drawing a bar on ``stream`` (stderr) when it is a terminal, else None.

    >>> import io
    >>> terminal_progress(io.StringIO()) is None
    True
    """
    out = sys.stderr if stream is None else stream
    if not (hasattr(out, "isatty") and out.isatty()):
        return None
    start = time.monotonic()

    def draw(done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        filled = int(30 * fraction)
        rate = done / max(1e-9, time.monotonic() - start) / 2**20
        end = "\n" if done >= total else ""
        out.write(f"\r{label}[{'#' * filled}{'.' * (30 - filled)}] {fraction:6.1%} {rate:8.1f} MiB/s{end}")
        out.flush()

    return draw


def _load(path: str | os.PathLike[str]) -> np.ndarray[Any, Any]:
    """The ``.npy`` array at ``path``, memory-mapped; ShapeError for anything else."""
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as err:
        raise ShapeError(f"cannot read {os.fspath(path)!r} as a .npy array: {err}") from None
    if not isinstance(array, np.ndarray):
        raise ShapeError(f"{os.fspath(path)!r} is not a single .npy array")
    return array


def _check_distinct(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """ShapeError when the output would overwrite the input while it is read."""
    same = os.path.realpath(source) == os.path.realpath(target)
    if not same and os.path.exists(source) and os.path.exists(target):
        same = os.path.samefile(source, target)
    if same:
        raise ShapeError(f"the output {os.fspath(target)!r} is the input file: write to another file")


def _write_empty(path: str | os.PathLike[str]) -> None:
    """Create (or truncate) an empty file."""
    try:
        with open(path, "wb"):
            pass
    except OSError as err:
        raise ShapeError(f"cannot write {os.fspath(path)!r}: {err.strerror or err}") from None

