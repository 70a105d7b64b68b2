"""Time ``linear_index`` / ``multi_index`` on 10 million random inputs against NumPy's ravel/unravel (run by hand).

``multi_index`` of that many offsets takes the compiled kernel where it runs (:mod:`xlashapes.physical._inverse`);
its NumPy path (``XLASHAPES_NO_NUMBA=1``) is timed in the same rounds.

    /work/venv/bin/python benchmarks/bench_indexing.py [--count N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import xlashapes as xs
from _timing import best_times
from xlashapes.indexing import linear_index, multi_index

SHAPES = ("f32[4096,4096]{1,0:T(8,128)}", "bf16[4096,4096]{1,0:T(8,128)(2,1)}", "f32[3000,5000]{0,1:T(8,128)}")




def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for text in SHAPES:
        shape = xs.parse_shape(text)
        indices = rng.integers(0, shape.dimensions, size=(args.count, shape.rank), dtype=np.int64)
        columns = tuple(indices[:, d] for d in range(shape.rank))
        linear_index(shape, indices[:10])  # build the cached plan and tables outside the timing
        ours, numpy = best_times(
            [lambda: linear_index(shape, indices), lambda: np.ravel_multi_index(columns, shape.dimensions)],  # noqa: B023
            args.repeat,
        )
        print(f"{text:40s} linear_index {ours * 1e3:8.1f} ms   np.ravel_multi_index (untiled) {numpy * 1e3:8.1f} ms"
              f"   ratio {ours / numpy:5.2f}x   ({args.count:,} indices, best of {args.repeat})")
        offsets = rng.integers(0, shape.physical_element_count(), size=args.count, dtype=np.int64)
        multi_index(shape, offsets[:10])
        logical = offsets % shape.element_count()  # the same count of in-range offsets for NumPy (padded shapes)
        ours, numpy, numpy_path = best_times(
            [lambda: multi_index(shape, offsets), lambda: np.unravel_index(logical, shape.dimensions),  # noqa: B023
             lambda: numpy_path_multi_index(shape, offsets)],  # noqa: B023
            args.repeat,
        )
        print(f"{text:40s} multi_index  {ours * 1e3:8.1f} ms   np.unravel_index (untiled)     {numpy * 1e3:8.1f} ms"
              f"   ratio {ours / numpy:5.2f}x   ({args.count:,} offsets, best of {args.repeat}; {kernels_summary()})")
        print(f"{'':40s} its NumPy path {numpy_path * 1e3:6.1f} ms   ratio {numpy_path / numpy:5.2f}x")


def kernels_summary() -> str:
    """Which path ``multi_index`` has taken in this process: the compiled kernel once it ran (a new process takes it
    for outputs of 64 MiB and up, or 1 MiB once compiled code is loaded), else the NumPy path."""
    from xlashapes.physical import _dispatch

    kernel = _dispatch.indexer()
    return "compiled kernel" if kernel is not None and kernel.multi_indices.natives else "NumPy path"


def numpy_path_multi_index(shape: xs.Shape, offsets: np.ndarray) -> object:
    """``multi_index`` on its NumPy path; ``XLASHAPES_NO_NUMBA`` left as the caller set it."""
    saved = os.environ.get("XLASHAPES_NO_NUMBA")
    os.environ["XLASHAPES_NO_NUMBA"] = "1"
    try:
        return multi_index(shape, offsets)
    finally:
        if saved is None:
            del os.environ["XLASHAPES_NO_NUMBA"]
        else:
            os.environ["XLASHAPES_NO_NUMBA"] = saved


if __name__ == "__main__":
    main()
