"""The profile reader's arithmetic on Python lists, for profiles small enough that loading numpy would
cost more than the work (`ListOps`); `profile_intervals.NumpyOps` does the same on arrays for large ones.

Both give the same numbers, bit for bit: integer work is exact either way, sums of floats are taken in
numpy's order (sequential per op, as `np.bincount` does; pairwise for means and deviations, as
`np.add.reduce` does; `pairwise_sum`), and self times use the exact stack walk, which the vectorised
numpy version equals on every line (tests/test_profile.py checks both against the same reference).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate
from operator import lt, sub
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from tpu_runtime.diagnose.xspace import Line

__all__ = [
    "ArrayOps",
    "ListOps",
    "WindowStats",
    "busy_within",
    "merge_intervals",
    "pairwise_sum",
    "self_times",
]

#: A column of int64 values: a list here, a numpy array in `NumpyOps`.
Column = Any
#: (sorted distinct ids, runs per id, summed self time per id, summed duration per id, index of each
#: event's id in the first list)
Groups = tuple[list[int], list[int], list[float], list[float], Column]
#: (windows, mean, min, max, standard deviation of the window lengths, mean busy time, mean idle time)
WindowStats = tuple[int, float, float, float, float, float, float]


def self_times(start: Sequence[int], end: Sequence[int]) -> list[int]:
    """Each event's duration less that of the events nested directly inside it (same order as given):
    the stack walk of `profile_intervals._self_times_by_stack`, over events sorted by (start, longer
    first); an event that sticks out of the top of the stack closes it."""
    own = list(map(sub, end, start))
    if len(own) < 2 or not any(map(lt, start[1:], accumulate(end, max))):
        return own  # each event starts after every earlier one has ended: nothing nests (fast path)
    if all(map(lt, start, start[1:])):
        order: Iterable[int] = range(len(own))  # starts strictly rising, the usual file order: sorted
    else:
        order = [k for _, _, k in sorted(zip(start, [-e for e in end], range(len(own)), strict=True))]
    stack: list[int] = []
    for k in order:
        end_k = end[k]
        while stack and end_k > end[stack[-1]]:
            stack.pop()
        if stack:
            own[stack[-1]] -= end_k - start[k]
        stack.append(k)
    return own


def merge_intervals(start: Sequence[int], end: Sequence[int]) -> tuple[list[int], list[int]]:
    """The union of intervals as sorted, disjoint (start, end) lists."""
    starts: list[int] = []
    ends: list[int] = []
    for k in sorted(range(len(start)), key=start.__getitem__):
        s, e = start[k], end[k]
        if starts and s <= ends[-1]:
            if e > ends[-1]:
                ends[-1] = e
        else:
            starts.append(s)
            ends.append(e)
    return starts, ends


def busy_within(
    seg_start: Sequence[int], seg_end: Sequence[int], lo: Sequence[int], hi: Sequence[int]
) -> list[int]:
    """Busy time (covered by the disjoint segments) inside each window [lo, hi)."""
    if not seg_start:
        return [0] * len(lo)
    lengths = [e - s for s, e in zip(seg_start, seg_end, strict=True)]
    before = [0]
    for length in lengths:
        before.append(before[-1] + length)

    def covered_until(t: int) -> int:
        k = bisect_right(seg_start, t) - 1
        if k < 0:
            return 0
        return before[k] + min(max(t - seg_start[k], 0), lengths[k])

    return [covered_until(b) - covered_until(a) for a, b in zip(lo, hi, strict=True)]


#: numpy's unrolled block in its pairwise summation (PW_BLOCKSIZE in numpy/_core/src/umath/loops_utils.h).
_PAIRWISE_BLOCK = 128


def pairwise_sum(values: Sequence[float], lo: int = 0, count: int | None = None) -> float:
    """The float64 sum numpy's `np.add.reduce` gives for a contiguous array (so `.sum()`, `.mean()` and
    `.std()`): eight running sums per block of at most 128, blocks halved recursively (same rounding)."""
    n = len(values) - lo if count is None else count
    if n < 8:
        total = 0.0
        for i in range(lo, lo + n):
            total += values[i]
        return total
    if n <= _PAIRWISE_BLOCK:
        r = list(values[lo : lo + 8])
        i = 8
        full = n - n % 8
        while i < full:
            for j in range(8):
                r[j] += values[lo + i + j]
            i += 8
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            total += values[lo + i]
            i += 1
        return total
    half = n // 2
    half -= half % 8
    return pairwise_sum(values, lo, half) + pairwise_sum(values, lo + half, n - half)


def _std(values: Sequence[float], mean: float) -> float:
    """numpy's `.std()` (ddof 0): the root of the mean squared deviation, each sum pairwise."""
    squares = [(v - mean) * (v - mean) for v in values]
    return math.sqrt(pairwise_sum(squares) / len(values))


class ArrayOps(Protocol):
    """What the plane folder computes on a line's events, on lists (`ListOps`) or numpy arrays."""

    def empty(self) -> Column: ...

    def events(self, line: Line, base_ns: int) -> tuple[Column, Column, Column]:
        """Metadata ids, start and end (ps from `base_ns`) of a line's events."""

    def op_events(
        self, line: Line, base_ns: int, offset_id: int, duration_id: int
    ) -> tuple[Column, Column, Column, Column, Column]:
        """Ids, traced start and end, and start and end on the device's clock (the stats where present)."""

    def spans(self, line: Line) -> tuple[Column, Column, Column]:
        """Ids, offsets and ends of a line's events, on the line's own clock (host threads)."""

    def self_times(self, start: Column, end: Column) -> Column: ...

    def groups(self, ids: Column, own: Column, start: Column, end: Column) -> Groups:
        """Per distinct id: runs, summed self time and summed duration (float sums in event order)."""

    def keep(self, column: Column, inverse: Column, wanted: list[bool]) -> Column:
        """The events whose id's entry in `wanted` (by the index `groups` gave) is true."""

    def merge(self, start: Column, end: Column) -> tuple[Column, Column]: ...

    def lowest(self, column: Column) -> int: ...

    def highest(self, column: Column) -> int: ...

    def distinct(self, ids: Column) -> list[int]: ...

    def where_id(self, ids: Column, wanted: int, start: Column, end: Column) -> tuple[Column, Column]:
        """Start and end of the events of one id, in event order."""

    def windows(
        self, start: Column, end: Column, seg_start: Column, seg_end: Column, own_events: bool
    ) -> tuple[float, Column, Column]:
        """Sorted by start: summed event time, window lengths and busy time inside each window (the
        events themselves, or start to start when not `own_events` and there are two or more)."""

    def union_length(self, starts: list[Column], ends: list[Column]) -> int: ...

    def window_stats(self, lengths: list[Column], busy: list[Column]) -> WindowStats | None: ...


class ListOps:
    """`ArrayOps` on Python lists."""

    def empty(self) -> list[int]:
        return []

    def events(self, line: Line, base_ns: int) -> tuple[list[int], list[int], list[int]]:
        rows = line.rows()
        shift = (line.timestamp_ns - base_ns) * 1000
        start = [offset + shift for offset in rows.offset_ps]
        return rows.metadata_id, start, [s + d for s, d in zip(start, rows.duration_ps, strict=True)]

    def op_events(
        self, line: Line, base_ns: int, offset_id: int, duration_id: int
    ) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        rows = line.rows((offset_id, duration_id))
        shift = (line.timestamp_ns - base_ns) * 1000
        offset, has_offset = rows.stats[offset_id]
        duration, has_duration = rows.stats[duration_id]
        start = [o + shift for o in rows.offset_ps]
        end = [s + d for s, d in zip(start, rows.duration_ps, strict=True)]
        dev_start = [
            (o if has else own) + shift
            for o, has, own in zip(offset, has_offset, rows.offset_ps, strict=True)
        ]
        dev_end = [
            s + (d if has else own)
            for s, d, has, own in zip(dev_start, duration, has_duration, rows.duration_ps, strict=True)
        ]
        return rows.metadata_id, start, end, dev_start, dev_end

    def spans(self, line: Line) -> tuple[list[int], list[int], list[int]]:
        rows = line.rows()
        end = [o + d for o, d in zip(rows.offset_ps, rows.duration_ps, strict=True)]
        return rows.metadata_id, rows.offset_ps, end

    def self_times(self, start: list[int], end: list[int]) -> list[int]:
        return self_times(start, end)

    def groups(self, ids: list[int], own: list[int], start: list[int], end: list[int]) -> Groups:
        uniq = sorted(set(ids))
        index = {metadata_id: i for i, metadata_id in enumerate(uniq)}
        inverse = list(map(index.__getitem__, ids))
        counts = [0] * len(uniq)
        self_sum = [0.0] * len(uniq)
        total_sum = [0.0] * len(uniq)
        for k, own_ps, span in zip(inverse, own, map(sub, end, start), strict=True):
            counts[k] += 1
            self_sum[k] += own_ps  # in event order, as np.bincount adds its weights
            total_sum[k] += span
        return uniq, counts, self_sum, total_sum, inverse

    def keep(self, column: list[int], inverse: list[int], wanted: list[bool]) -> list[int]:
        return [value for value, k in zip(column, inverse, strict=True) if wanted[k]]

    def merge(self, start: list[int], end: list[int]) -> tuple[list[int], list[int]]:
        return merge_intervals(start, end)

    def lowest(self, column: list[int]) -> int:
        return min(column)

    def highest(self, column: list[int]) -> int:
        return max(column)

    def distinct(self, ids: list[int]) -> list[int]:
        return sorted(set(ids))

    def where_id(
        self, ids: list[int], wanted: int, start: list[int], end: list[int]
    ) -> tuple[list[int], list[int]]:
        rows = [k for k, metadata_id in enumerate(ids) if metadata_id == wanted]
        return [start[k] for k in rows], [end[k] for k in rows]

    def windows(
        self, start: list[int], end: list[int], seg_start: list[int], seg_end: list[int], own_events: bool
    ) -> tuple[float, list[int], list[int]]:
        order = sorted(range(len(start)), key=start.__getitem__)
        start, end = [start[k] for k in order], [end[k] for k in order]
        if own_events or len(start) < 2:
            lo, hi = start, end
        else:
            lo, hi = start[:-1], start[1:]
        total = float(sum(e - s for s, e in zip(start, end, strict=True)))
        lengths = [b - a for a, b in zip(lo, hi, strict=True)]
        return total, lengths, busy_within(seg_start, seg_end, lo, hi)

    def union_length(self, starts: list[list[int]], ends: list[list[int]]) -> int:
        s, e = merge_intervals(_joined(starts), _joined(ends))
        return sum(b - a for a, b in zip(s, e, strict=True))

    def window_stats(self, lengths: list[list[int]], busy: list[list[int]]) -> WindowStats | None:
        spans = [float(x) for x in _joined(lengths)]
        if not spans:
            return None
        inside = [float(x) for x in _joined(busy)]
        count = len(spans)
        mean = pairwise_sum(spans) / count
        idle = pairwise_sum([max(a - b, 0.0) for a, b in zip(spans, inside, strict=True)]) / count
        busy_mean = pairwise_sum(inside) / count
        return count, mean, min(spans), max(spans), _std(spans, mean), busy_mean, idle


def _joined(parts: Iterable[list[int]]) -> list[int]:
    return [x for part in parts for x in part]
