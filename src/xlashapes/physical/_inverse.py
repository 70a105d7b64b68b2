"""The compiled kernel of ``multi_index`` on many offsets: a program of the inverse walk, run a chunk at a time, numba.

**Why.** The NumPy path (:func:`xlashapes._index_inverse._fast_indices`) takes 12-17 passes over each chunk of
offsets, one ufunc call and one temporary each, and was 1.3-1.8x ``np.unravel_index`` on 10M offsets. The walk itself
is the same for every offset: :func:`xlashapes._index_inverse.inverse_program` records it once per shape as a few
operations on registers (rows of a chunk of offsets), and this kernel runs those operations over each chunk, every one
a short loop over values in the cache that the compiler vectorizes. One kernel takes every layout: the program, not
the machine code, differs between shapes. Measured (``benchmarks/bench_indexing.py``, 10M offsets, this 2-core
machine): 0.79-0.87x ``np.unravel_index`` on its three shapes, against 1.31-1.84x for the NumPy path in the same runs.

**Divisions.** A register split by a power of two is a shift and a mask. Any other divisor is a multiplication by
its reciprocal in doubles, truncated, then corrected by one where the remainder says so: vectorized, where a 64-bit
division instruction takes one value at a time. A value below ``2**52`` is exact as a double, and the roundings of
the reciprocal and of the product move the quotient by less than one: it comes out one short where the reciprocal
rounds down (``1/49`` does far enough that ``98 * (1/49)`` is below 2); one too many is checked for too. The caller
keeps offsets below ``2**52``.

**Operations** (rows of ``program``: a code of ``._kernel_args.INVERSE_OPERATIONS`` and five words; register -1
reads as zeros):

- ``split a by q r shift``: ``q = a // by``, ``r = a % by`` (``shift`` >= 0: ``by`` is ``1 << shift``).
- ``join outer tile d inner``: ``d = outer * tile + inner``.
- ``below a limit``: an offset whose ``a`` is not below ``limit`` is padding.
- ``store a dim``: dim ``dim`` of each offset's index is ``a``, -1 on padding.

Register 0 holds the offsets at the start. The kernel writes ``out[i, dim]`` and ``valid[i]`` (0 or 1); it
returns nothing (entries return a status only) but writes to ``bad[0]`` the position of the first chunk holding an
offset outside ``[0, limit)`` (then nothing past that chunk is written), -1 when there is none.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._intrinsics import _jit
from ._kernel_args import INVERSE_OPERATIONS

SPLIT, JOIN, BELOW, STORE = (INVERSE_OPERATIONS[name] for name in ("split", "join", "below", "store"))


@_jit
def multi_indices(offsets: Any, out: Any, valid: Any, program: Any, registers: Any, limit: int, bad: Any) -> None:
    """Run ``program`` over ``offsets`` (see the module's docstring) a row of ``registers`` (``(count + 1, chunk)``:
    the last row says which offsets name an element) at a time, into ``out`` (``(n, rank)``) and ``valid``.

    A register is a row of a 2-d array, not a range of a flat one: an index ``row * chunk + i`` may be negative for
    all the compiler knows, so each one took a wrap-around check, and the loops ran 2.3x as long.
    """
    n = offsets.shape[0]
    chunk = registers.shape[1]
    ok = registers.shape[0] - 1
    bad[0] = -1
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        outside = False
        for i in range(m):
            x = offsets[start + i]
            outside |= (x < 0) | (x >= limit)
            registers[0, i] = x
            registers[ok, i] = 1
        if outside:
            bad[0] = start
            return
        for k in range(program.shape[0]):
            code, a, b = program[k, 0], program[k, 1], program[k, 2]
            c, d, e = program[k, 3], program[k, 4], program[k, 5]
            if code == SPLIT:  # a by b into c (quotient), d (remainder); e: the shift of a power of two, or -1
                if e >= 0:
                    mask = b - 1
                    for i in range(m):
                        x = registers[a, i]
                        registers[c, i] = x >> e
                        registers[d, i] = x & mask
                else:
                    reciprocal = 1.0 / b
                    for i in range(m):
                        x = registers[a, i]
                        q = np.int64(np.float64(x) * reciprocal)
                        r = x - q * b
                        q = q - (r < 0) + (r >= b)
                        registers[c, i] = q
                        registers[d, i] = x - q * b
            elif code == JOIN:  # c = a * b + d
                if a < 0:
                    for i in range(m):
                        registers[c, i] = registers[d, i]
                elif d < 0:
                    for i in range(m):
                        registers[c, i] = registers[a, i] * b
                else:
                    for i in range(m):
                        registers[c, i] = registers[a, i] * b + registers[d, i]
            elif code == BELOW:  # a < b
                for i in range(m):
                    registers[ok, i] &= registers[a, i] < b
            elif a < 0:  # STORE zeros into dim b
                for i in range(m):
                    out[start + i, b] = registers[ok, i] - 1
            else:  # STORE a into dim b
                for i in range(m):
                    out[start + i, b] = registers[a, i] | (registers[ok, i] - 1)
        for i in range(m):
            valid[start + i] = registers[ok, i]
