"""Interval arithmetic on profile events, vectorised with numpy (no per-event Python loop).

An XProf line holds millions of events; these functions take their start and end arrays whole: self time
of nested events, the union of intervals, and how much of each window a union covers.
"""

from __future__ import annotations

import numpy as np

__all__ = ["busy_within", "merge_intervals", "self_times"]

#: Below this many events the exact stack walk, in plain Python, costs less than the vectorised passes
#: (each numpy call has a fixed cost of microseconds; a host plane holds many threads of a few events).
SMALL_LINE = 64


def self_times(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each event's duration less that of the events nested directly inside it (same order as given).

    An event is nested in another when it lies wholly inside it, as in xprof's op metrics. For properly
    nested lines (the usual case) this is vectorised: sorted by (start, longer first), an event's depth
    is the number of earlier-started events still open at its start, and its parent is the nearest
    earlier event one level up. A line where some event sticks out of the one it starts in goes
    through the exact stack walk instead.
    """
    count = len(start)
    duration = (end - start).astype(np.int64)
    if count < 2:
        return duration
    order = np.lexsort((-end, start))
    s, e = start[order], end[order]
    if count < SMALL_LINE:
        return _self_times_by_stack(s, e, order)
    if bool(np.all(s[1:] >= np.maximum.accumulate(e)[:-1])):
        return duration
    nested = np.nonzero(e > s)[0]  # instants have no self time and hold nothing
    s_n, e_n = s[nested], e[nested]
    depth = np.arange(len(nested)) - np.searchsorted(np.sort(e_n), s_n, side="right")
    parent = np.full(len(nested), -1, dtype=np.int64)
    for level in range(1, int(depth.max()) + 1):
        children = np.nonzero(depth == level)[0]
        above = np.nonzero(depth == level - 1)[0]
        if len(children) == 0 or len(above) == 0:
            continue
        slot = np.searchsorted(above, children) - 1
        ok = slot >= 0
        parent[children[ok]] = above[slot[ok]]
    kids = np.nonzero(parent >= 0)[0]
    if bool(np.any(e_n[kids] > e_n[parent[kids]])):
        return _self_times_by_stack(s, e, order)
    held = np.bincount(parent[kids], weights=e_n[kids] - s_n[kids], minlength=len(nested))
    own = (e - s).astype(np.int64)
    own[nested] -= held.astype(np.int64)
    result = np.empty(count, dtype=np.int64)
    result[order] = own
    return result


def _self_times_by_stack(s: np.ndarray, e: np.ndarray, order: np.ndarray) -> np.ndarray:
    """The exact walk for lines where events overlap without nesting, over events sorted by (start,
    longer first): keep a stack of open events; one that ends before the next event does closes; an
    event inside the top of the stack is its child."""
    begin, finish = s.tolist(), e.tolist()
    own = [b - a for a, b in zip(begin, finish, strict=True)]
    stack: list[int] = []
    for k, end_k in enumerate(finish):
        while stack and end_k > finish[stack[-1]]:  # starts are sorted, so only the end can stick out
            stack.pop()
        if stack:
            own[stack[-1]] -= end_k - begin[k]
        stack.append(k)
    result = np.empty(len(own), dtype=np.int64)
    result[order] = own
    return result


def merge_intervals(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals as sorted, disjoint (start, end) arrays."""
    if len(start) == 0:
        return start.astype(np.int64), end.astype(np.int64)
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    first = np.ones(len(s), dtype=bool)
    first[1:] = s[1:] > reach[:-1]
    starts = s[first]
    last = np.append(np.nonzero(first)[0][1:] - 1, len(s) - 1)
    return starts, reach[last]


def busy_within(seg_start: np.ndarray, seg_end: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Busy time (covered by the disjoint segments) inside each window [lo, hi)."""
    if len(seg_start) == 0:
        return np.zeros(len(lo), dtype=np.int64)
    lengths = seg_end - seg_start
    before = np.concatenate(([0], np.cumsum(lengths)))

    def covered_until(t: np.ndarray) -> np.ndarray:
        k = np.searchsorted(seg_start, t, side="right") - 1
        inside = np.where(k >= 0, np.clip(t - seg_start[np.maximum(k, 0)], 0, lengths[np.maximum(k, 0)]), 0)
        return np.where(k >= 0, before[np.maximum(k, 0)], 0) + inside

    return np.asarray(covered_until(hi) - covered_until(lo), dtype=np.int64)
