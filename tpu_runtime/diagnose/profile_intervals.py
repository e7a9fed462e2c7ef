"""Interval arithmetic on profile events, vectorised with numpy (no per-event Python loop).

An XProf line holds millions of events; these functions take their start and end arrays whole: self time
of nested events, the union of intervals, and how much of each window a union covers. `NumpyOps` is the
plane folder's arithmetic on them for large profiles (small ones use `profile_lists.ListOps`, no numpy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from tpu_runtime.diagnose.profile_lists import Groups, WindowStats

if TYPE_CHECKING:
    from tpu_runtime.diagnose.xspace import Line

__all__ = ["NumpyOps", "busy_within", "merge_intervals", "self_times"]

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


class NumpyOps:
    """`profile_lists.ArrayOps` on numpy arrays, for profiles large enough that numpy pays for its import."""

    def empty(self) -> np.ndarray:
        return np.zeros(0, dtype=np.int64)

    def events(self, line: Line, base_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cols = line.columns()
        start = cols.offset_ps + (line.timestamp_ns - base_ns) * 1000
        return cols.metadata_id, start, start + cols.duration_ps

    def op_events(
        self, line: Line, base_ns: int, offset_id: int, duration_id: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        cols = line.columns((offset_id, duration_id))
        shift = (line.timestamp_ns - base_ns) * 1000
        offset, has_offset = cols.stats[offset_id]
        duration, has_duration = cols.stats[duration_id]
        start = cols.offset_ps + shift
        dev_start = np.where(has_offset, offset, cols.offset_ps) + shift
        dev_end = dev_start + np.where(has_duration, duration, cols.duration_ps)
        return cols.metadata_id, start, start + cols.duration_ps, dev_start, dev_end

    def spans(self, line: Line) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cols = line.columns()
        return cols.metadata_id, cols.offset_ps, cols.offset_ps + cols.duration_ps

    def self_times(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        return self_times(start, end)

    def groups(self, ids: np.ndarray, own: np.ndarray, start: np.ndarray, end: np.ndarray) -> Groups:
        uniq, inverse = np.unique(ids, return_inverse=True)
        counts = np.bincount(inverse, minlength=len(uniq))
        self_sum = np.bincount(inverse, weights=own, minlength=len(uniq))
        total_sum = np.bincount(inverse, weights=end - start, minlength=len(uniq))
        # as Python numbers: indexing an array one element at a time costs more than the sums
        return uniq.tolist(), counts.tolist(), self_sum.tolist(), total_sum.tolist(), inverse

    def keep(self, column: np.ndarray, inverse: np.ndarray, wanted: list[bool]) -> np.ndarray:
        return column[np.asarray(wanted, dtype=bool)[inverse]]

    def merge(self, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return merge_intervals(start, end)

    def lowest(self, column: np.ndarray) -> int:
        return int(column.min())

    def highest(self, column: np.ndarray) -> int:
        return int(column.max())

    def distinct(self, ids: np.ndarray) -> list[int]:
        # return_index: the plain np.unique checks for a masked array, which imports numpy.ma (20 ms)
        distinct: list[int] = np.unique(ids, return_index=True)[0].tolist()
        return distinct

    def where_id(
        self, ids: np.ndarray, wanted: int, start: np.ndarray, end: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        mask = ids == wanted
        return start[mask], end[mask]

    def windows(
        self, start: np.ndarray, end: np.ndarray, seg_start: np.ndarray, seg_end: np.ndarray, own_events: bool
    ) -> tuple[float, np.ndarray, np.ndarray]:
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
        if own_events or len(start) < 2:
            lo, hi = start, end
        else:
            lo, hi = start[:-1], start[1:]
        return float(np.sum(end - start)), hi - lo, busy_within(seg_start, seg_end, lo, hi)

    def union_length(self, starts: list[np.ndarray], ends: list[np.ndarray]) -> int:
        s, e = merge_intervals(np.concatenate(starts), np.concatenate(ends))
        return int(np.sum(e - s))

    def window_stats(self, lengths: list[np.ndarray], busy: list[np.ndarray]) -> WindowStats | None:
        spans = np.concatenate(lengths).astype(np.float64)
        inside = np.concatenate(busy).astype(np.float64)
        if len(spans) == 0:
            return None
        return (
            len(spans),
            float(spans.mean()),
            float(spans.min()),
            float(spans.max()),
            float(spans.std()),
            float(inside.mean()),
            float(np.maximum(spans - inside, 0).mean()),
        )
