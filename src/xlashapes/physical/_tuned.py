"""Choices between plans that move the same bytes, made by timing them on the calls that need them.

Some copies have two plans that write the same bytes at speeds that differ by up to 3x for reasons no rule here
reads well: merged squares (:mod:`._merged`) can sweep either group of rows in their inner loop, and which one is
faster depends on cache sets, prefetch streams and page walks. Over 278 such copies of 199 random layouts, the
rule that sweeps the group whose rows were cut was more than 15% slower than the other plan on 55 of them (up to
2.8x). Rules on spans, strides and cache-set crowding each fixed some and broke others.

The generic kernel itself (:mod:`._copy`) is not always faster than NumPy's strided copy: on 25 of the 74 layouts
a survey of 920 random ones found over 6x memcpy, NumPy was faster (``s32[1024,3,64,24,1]{1,3,0,4,2}`` 19x against
3.2x; ``f16[2,3,7,2048,195]{0,2,3,4,1}`` 'to' 44x against 11.5x), so a large copy times both as well.

So a copy of at least ``TUNE_BYTES`` takes its plans in turn on its calls with the same key after the first (the
rule's plan first), ``ROUNDS`` each but those whose first time was ``DECISIVE`` times another's, and from then on
the plan with the least time on any call; where every plan but one is so dropped after the first round, that one is
kept at once. The first call is not timed: it loads the kernels' machine code and faults in a fresh output's pages
(counted, they made NumPy look 3x faster than the kernel on ``s32[384,200,3,1,48]{0,1,2,3,4:T(8,128)}``, which then
stayed at 15x memcpy instead of 1.6x). Nor is the time a later call spent loading machine code its plan's (a plan
first run on a later call loads its kernel then), and a call that compiled a kernel does not count (where no
machine code is shipped, a plan met first on a later call carried seconds of compiling, and was dropped for good as
``DECISIVE`` times slower). The bytes written never depend on the plan: only the time does. At most ``KEPT`` keys
are remembered, the least recently used dropped; keys of copies that repeat within one call (the slabs and boxes of a
large conversion) settle within it, and a loop over slabs at other page offsets makes them one key (:func:`slabs`).

A plan on trial may stop early: it is told the least time the choice's other plans took (:func:`trial_bound`), and
one that timed a part of its copy, scaled to the whole, far over that takes that as its time (:func:`estimate`) and
leaves the rest to a faster plan. NumPy's copy beside the kernel does (:func:`._copy._numpy_tried`): its trial of a
large transpose cost one call of 66-100x memcpy.

Choices nest: the kernel's plan of a copy (against NumPy) may itself time merged squares against the walk's own
blocks. A call during which an inner choice was still taking its plans in turn does not count for the outer one (it
timed the inner plan, not the outer): else the walk's first plan, 50x memcpy on ``f16[2,3,7,2048,195]{0,2,3,4,1}``
'to', set NumPy's 14.5x decisively apart before merged squares (4.1x) ever ran. (Counting a key's first call where
it faulted in few pages, and an outer choice's calls once every inner plan had a time, less what the inner choices
took beyond their fastest plans, settled the stacked layouts in 5-10 calls instead of 10-15; but it moved the
explorations of the outer choices into a conversion's first calls: over 40 survey layouts, 12 calls each way took
4.5-4.8% longer in all, and the best of calls 2-6 of 505 survey layouts was over 2x on 132 against 113.)

But a plan on trial whose call took ``FAR`` times the least time another plan of its choice took is counted, a choice
inside it still being timed or not: it is dropped (``FAR`` is over ``DECISIVE``). Its inner choices would otherwise
each take their plans in turn on calls that cost that much: bf16 ``[32768,8191]{0,1:T(8,128)(2,1)}`` read back
(512 MiB), its conversion without slabs on trial beside the slabs' 124 ms, timed the walk's three plans and a copy's
two inside it, ten calls of 20-50x memcpy (0.84-2.1 s each), and lost; pred ``[7,28528,384,7]{2,0,3,1:...(4,1)}`` read
back, its conversion without stacked slabs beside their 94 ms, six calls of 10-14x. Each now costs one such call.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import contextmanager

from ._aot import first_uses

NO_TUNING_VARIABLE = "XLASHAPES_NO_TUNING"
"""Set to anything but ``0`` or empty, every copy takes the rule's plan (times that do not depend on earlier calls)."""

TUNE_BYTES = 1 << 62 if os.environ.get(NO_TUNING_VARIABLE, "").strip() not in ("", "0") else 4 << 20
"""Copies of at least this many bytes choose their plan by timing it (smaller ones: the rule's plan)."""

ROUNDS = 2
"""Calls each plan takes, in turn, before the fastest is kept."""

DECISIVE = 2.0
"""After one round, a plan this many times slower than another takes no more rounds (so a plan that is far slower,
say the NumPy copy beside a fast kernel, costs one call, not ``ROUNDS``)."""

FAR = 4.0
"""A plan on trial whose call took this many times the least time another plan of its choice took is dropped on that
time, though a choice inside it was still being timed (whose other plans might have made it up to that much faster)."""

KEPT = 512
"""Most keys whose timings are kept."""

PAGE = 4096
"""Bytes of a memory page (keys hold the offsets of a copy's ends in theirs: the same walk at other offsets meets
the cache otherwise; :func:`page_offset`)."""

_LOCK = threading.Lock()
_SLABS = threading.local()  # (depth: loops over slabs running on this thread, whose keys leave out page offsets)
_NESTED = threading.local()  # (exploring: whether a choice made inside the running plan was still being timed)
_TIMES: OrderedDict[Hashable, list[list[float]]] = OrderedDict()


def run_fastest(key: Hashable, plans: Sequence[Callable[[], bool]]) -> bool:
    """Run the plan that ``key``'s timings pick (:func:`plan_for`) and keep its time; False (nothing done, nothing
    kept) where that plan cannot run.

    >>> forget(); ran = []
    >>> [run_fastest("k", [lambda: ran.append(0) or True, lambda: ran.append(1) or True]) for _ in range(3)], ran
    ([True, True, True], [0, 0, 1])
    """
    plan, settled = plan_for(key, len(plans)), _choice(key, len(plans))[1]
    outer = getattr(_NESTED, "exploring", False)
    trial = getattr(_NESTED, "bound", None), getattr(_NESTED, "estimate", None)  # (an outer plan's)
    _NESTED.exploring = ran = False
    bound = None if settled else _least_other(key, plan)
    _NESTED.bound, _NESTED.estimate = bound, None
    try:
        before = first_uses()
        start = time.perf_counter()
        ran = plans[plan]()
        seconds = time.perf_counter() - start
        after = first_uses()
        inner, estimate = _NESTED.exploring, _NESTED.estimate
    finally:  # (a plan that did not run, a route that does not apply, explores nothing: it never settles)
        _NESTED.exploring = outer or (ran and not settled) or _NESTED.exploring
        _NESTED.bound, _NESTED.estimate = trial
    if not ran:
        return False
    if estimate is not None:  # (the plan's own time, from a part of the copy: :func:`estimate`)
        timed(key, len(plans), plan, estimate, after[1] == before[1])
        return True
    # (not counted: a plan that took a choice still being timed inside, not its own time, unless ``FAR`` over the
    # others'; a call that compiled)
    seconds -= after[0] - before[0]
    far = bound is not None and seconds >= FAR * bound
    timed(key, len(plans), plan, seconds, (far or not inner) and after[1] == before[1])
    return True


def _least_other(key: Hashable, plan: int) -> float | None:
    """The least time any plan of ``key`` but ``plan`` has taken (None: none timed yet)."""
    with _LOCK:
        times = _TIMES.get(key)
        kept = [t for other, ts in enumerate(times or []) if other != plan for t in ts]
    return min(kept) if kept else None


def trial_bound() -> float | None:
    """While the running plan of a choice is on trial (its key not settled), the least time another of its plans
    took; else None. A plan far slower than that can stop early (:func:`estimate`).

    >>> forget(); seen = []; timed("k", 2, 0, 1.0); timed("k", 2, 0, 1.0)
    >>> run_fastest("k", [lambda: True, lambda: bool(seen.append(trial_bound())) or True]) and seen
    [1.0]
    """
    return getattr(_NESTED, "bound", None)


def estimate(seconds: float) -> None:
    """Take ``seconds`` as the running plan's time instead of the call's (a plan on trial that timed part of its copy,
    scaled to the whole, and left the rest to a faster plan: :func:`._copy._numpy_tried`). Counted even where a
    choice inside was still being timed: the estimate is the plan's own.

    >>> forget(); timed("k", 2, 0, 1.0); timed("k", 2, 0, 1.0)
    >>> run_fastest("k", [lambda: True, lambda: estimate(5.0) or True]) and _TIMES["k"]
    [[1.0], [5.0]]
    """
    _NESTED.estimate = seconds


def plan_for(key: Hashable, count: int) -> int:
    """The plan (``0 <= plan < count``) the next call with ``key`` takes: each in turn ``ROUNDS`` times (plan 0,
    the rule's, first), then the one with the least time.

    >>> forget(); [plan_for("k", 2) for _ in range(2)]
    [0, 0]
    """
    return _choice(key, count)[0]


def _choice(key: Hashable, count: int) -> tuple[int, bool]:
    """:func:`plan_for`, and whether ``key``'s timings have settled (False while its plans are still taken in turn)."""
    with _LOCK:
        times = _TIMES.get(key)
        if times is None:
            return 0, False
        _TIMES.move_to_end(key)
        for round_ in range(ROUNDS):
            live = [plan for plan in range(count) if not (round_ and _dropped(times, plan))]
            if len(live) == 1:  # (every other plan dropped: no more rounds)
                return live[0], True
            for plan in live:
                if len(times[plan]) <= round_:
                    return plan, False
        return min(range(count), key=lambda plan: min(times[plan])), True


def _dropped(times: list[list[float]], plan: int) -> bool:
    """Whether ``plan``'s first time was ``DECISIVE`` times another plan's (no more rounds for it)."""
    return times[plan][0] >= DECISIVE * min(kept[0] for kept in times)


def timed(key: Hashable, count: int, plan: int, seconds: float, counted: bool = True) -> None:
    """Keep the time a call with ``key`` took on ``plan`` (the first ``ROUNDS`` of each plan, then each plan's best;
    not the first call's, nor one not ``counted``).

    >>> forget(); timed("k", 2, 0, 9.0); timed("k", 2, 0, 2.0); plan_for("k", 2)
    1
    >>> timed("k", 2, 1, 1.5); timed("k", 2, 0, 3.0); timed("k", 2, 1, 1.0); plan_for("k", 2)
    1
    """
    with _LOCK:
        times = _TIMES.get(key)
        if times is None:  # (the first call: kernels loaded, a fresh output's pages faulted in; not counted)
            _TIMES[key] = [[] for _ in range(count)]
            while len(_TIMES) > KEPT:
                _TIMES.popitem(last=False)
            return
        if not counted:
            return
        kept = times[plan]
        if len(kept) < ROUNDS:
            kept.append(seconds)
        else:
            kept[-1] = min(kept[-1], seconds)


def page_offset(address: int) -> int:
    """The offset of ``address`` in its memory page, as keys hold it; 0 inside :func:`slabs`.

    >>> page_offset(4096 * 3 + 80), page_offset(80) == page_offset(4096 + 80)
    (80, True)
    """
    return 0 if getattr(_SLABS, "depth", 0) else address % PAGE


@contextmanager
def slabs() -> Iterator[None]:
    """Keys made inside (on this thread) leave out page offsets: a copy cut into slabs times them all under one key.

    A copy cut into 4 MiB slabs whose ends are at other offsets in their pages (bf16 ``[4,32768,2048]{0,1,2}`` laid
    out in two passes, a slab every 32 bytes of offset: 128 keys) took a key per slab, each used once a call: every
    slab took its plans in turn on the same calls, for five calls (13-18x memcpy each), and the outer choice that
    timed the passes waited for all of them. Under one key they settle in the first call that takes them.

    >>> with slabs():
    ...     page_offset(80)
    0
    """
    _SLABS.depth = getattr(_SLABS, "depth", 0) + 1
    try:
        yield
    finally:
        _SLABS.depth -= 1


def done(route: Callable[[], object]) -> bool:
    """``route()``, then True (done), as a plan of :func:`run_fastest` returns.

    >>> done(lambda: None)
    True
    """
    route()
    return True


def forget() -> None:
    """Drop every timing (the next calls take their plans in turn again).

    >>> forget(); len(_TIMES)
    0
    """
    with _LOCK:
        _TIMES.clear()
