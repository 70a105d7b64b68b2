"""Time ``linear_index`` / ``multi_index`` on 10 million random inputs against NumPy's ravel/unravel (run by hand).

    /work/venv/bin/python benchmarks/bench_indexing.py [--count N] [--repeat R]
"""

from __future__ import annotations

import argparse

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
        ours, numpy = best_times(
            [lambda: multi_index(shape, offsets), lambda: np.unravel_index(logical, shape.dimensions)],  # noqa: B023
            args.repeat,
        )
        print(f"{text:40s} multi_index  {ours * 1e3:8.1f} ms   np.unravel_index (untiled)     {numpy * 1e3:8.1f} ms"
              f"   ratio {ours / numpy:5.2f}x   ({args.count:,} offsets, best of {args.repeat})")


if __name__ == "__main__":
    main()
