"""The compiled kernel of squares over merged axes (:mod:`._merged`): a transposing copy whose rows on each side
are anywhere, their addresses in tables, moved in squares transposed in registers, numba.

Its one entry point, ``merged_squares``, takes a block of the outer axes at a time; each block is a 2-d transpose of
the across group (source-contiguous rows) and the along group (destination-contiguous rows).
"""

from __future__ import annotations

from typing import Any

from ._intrinsics import _1, _fence, _jit, _prefetch_run, _prefetch_write, _side, _table_entry, _width
from ._kinds import LINE
from ._shuffles import _table_square


@_jit
def merged_squares(
    dst: int, src: int, pad: Any, outer: Any, d_rows: int, across: int, s_rows: int, along: int, first: int,
    last: int, inner_across: int, stream: int,
) -> None:
    """Squares over merged axes (:mod:`._merged`): for every block ``first <= b < last`` of the outer axes, the
    ``across x along`` transpose whose source rows (``along`` of them, contiguous for ``across`` elements) start at
    the entries of the int64 table at ``s_rows`` and whose destination rows (``across``, contiguous for ``along``)
    start at the entries of ``d_rows`` (bytes, from the block's corner), moved in squares in registers
    (:func:`._shuffles._table_square`; the last square of each side overlapping the one before).

    ``outer`` (int64, 5 x axes) holds each outer axis's count of blocks, destination and source steps (elements), its
    block length and its last block's start (the last block of a cut axis overlaps the one before). The loop over
    the shorter-lived side runs innermost: ``inner_across``, the destination rows, written a square's width at a time
    (each row's next line prefetched for writing); else the source rows, read so (each row's next line prefetched).
    """
    width = _width(pad)
    n = _side(pad)
    line = LINE // width
    axes = outer.shape[1]
    for block in range(first, last):
        rest = block
        d, s = dst, src
        for a in range(axes - 1, -1, -1):
            k = rest % outer[0, a]
            rest //= outer[0, a]
            start = min(k * outer[3, a], outer[4, a])
            d += start * outer[1, a] * width
            s += start * outer[2, a] * width
        outer_side, inner_side = (along, across) if inner_across else (across, along)
        for p0 in range(0, outer_side, n):
            p = min(p0, outer_side - n)
            ahead = p0 % line == 0 and p0 + line < outer_side
            for q0 in range(0, inner_side, n):
                q = min(q0, inner_side - n)
                i, u, whole = (p, q, p == p0) if inner_across else (q, p, q == q0)
                if ahead:
                    for r in range(n):
                        if inner_across:
                            _prefetch_write(d + (i + line) * width + _table_entry(d_rows, u + r))
                        else:
                            _prefetch_run(s + (u + line) * width + _table_entry(s_rows, i + r), _1)
                _table_square(d + i * width, d_rows + u * 8, s + u * width, s_rows + i * 8, stream if whole else 0,
                              pad)
    if stream:
        _fence()
