"""What an XProf profile says about a TPU run, as a summary small enough for an agent's context.

`analyze_profile(path, top)` reads the profile plane by plane (`xspace.read_planes`) and keeps only
aggregates. The definitions follow xprof's own converters, so the numbers agree with its tools
(checked in tests/test_profile.py against `xprof.convert.raw_to_tool_data.xspace_to_tool_data`):

- op time: events on each TensorCore plane's "XLA Ops" line; an op's self time is its duration less
  the durations of the ops nested inside it; ops are keyed by (program id, HLO op name) across cores.
- device busy/idle ("duty cycle"): per chip, the union of the op intervals that are not off-duty
  (infeed, outfeed, host send/recv, megacore fusion), against the span from the first to the last
  op or module event; chips are summed (xprof: xplane_to_op_stats.cc, DutyCycleTracker).
- program time (roofline denominator): per core, first op start to last op end, summed over cores.
- peaks: the device plane's `peak_teraflops_per_second` and `peak_hbm_bw_gigabytes_per_second`
  stats; else the chip table (knowledge/chips.yaml). Ridge point = peak FLOP/s / peak HBM byte/s.
- MXU utilisation: the host plane's `matrix_unit_utilization_percent` stat, when the profile has it.
- device time by class (`time_breakdown`), the way XProf's step-time breakdown splits a step: every
  op's self time goes to compute or HBM-bound ops (its roofline verdict), collectives (all-reduce,
  all-gather, reduce-scatter, collective-permute, send/recv and their async halves) or host transfers
  (infeed/outfeed, host send/recv, async copies whose layout names host memory `S(5)`); the duty-cycle
  idle is the time spent waiting on the host. The verdict is the class with the largest share. The
  class sums equal op_profile's per-category times; the split itself is ours (xprof finds no steps in
  a profile without step markers and then gives no breakdown).
- async pairs: a done op (copy-done, all-reduce-done, send-done, ...) names its start op as operand;
  the pair is one transfer, so the start's time is added to the done op and the bytes are counted once
  (op_profile puts them on one half or the other). A byte rate above the chip's peak HBM bandwidth
  cannot be a measurement (the op's time holds only part of the transfer): it is dropped with a note.

Not computed by xprof, so derived here: the step count and step times when there is no Steps line
(each run of the busiest XLA module, start to start; the count is of one core, since all chips of a
host and all hosts of a job run the same steps), the profile length (the Task Environment's start
and stop stamps, else the host events' span) and the host-event self times (as for ops).

Sources: https://github.com/openxla/xprof (xprof/convert/xplane_to_op_stats.cc,
xplane_to_op_metrics_db.cc) and https://github.com/openxla/xla (xla/tsl/profiler/convert/xla_op_utils.h).
A profile without TPU device planes (a GPU or CPU-only capture) gets a host-side summary and a note,
never TPU numbers.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from tpu_runtime.diagnose.profile_model import (  # noqa: F401  (re-exported: the report types)
    SCHEMA_VERSION,
    TIME_CLASS_WORDS,
    VERDICT_OF,
    Bound,
    CategoryTime,
    DeviceTime,
    HostEvent,
    HostSummary,
    MetricChange,
    OpChange,
    OpStatus,
    Peaks,
    PeakSource,
    ProfileComparison,
    ProfileSummary,
    Roofline,
    StepStats,
    TimeClass,
    TimeShare,
    TopOp,
    Verdict,
)
from tpu_runtime.diagnose.protowire import read_varint
from tpu_runtime.diagnose.xspace import Line, Plane, StatValue, read_planes, read_space_info

TENSORCORE_PLANE = re.compile(r"^/device:TPU:(\d+)$")
DEVICE_PLANE = re.compile(r"^/device:([A-Za-z_]+)")
HOST_PLANE = "/host:CPU"
TASK_ENV_PLANE = "Task Environment"
OPS_LINE, MODULES_LINE, STEPS_LINE = "XLA Ops", "XLA Modules", "Steps"

#: HLO categories whose time is not counted as the core being busy (xla_op_utils.h, IsOffDutyOp).
OFF_DUTY = frozenset(
    {"infeed", "outfeed", "host send", "host send-done", "host recv", "host recv-done", "megacore fusion"}
)
#: HLO categories of collectives (and their async halves): chips exchanging data over ICI/DCN.
COLLECTIVE_WORDS = (
    "all-reduce",
    "all-gather",
    "all-to-all",
    "reduce-scatter",
    "collective-permute",
    "send",
    "recv",
)
#: Categories that move data between host and device (infeed/outfeed, host send/recv).
HOST_TRANSFER_WORDS = ("infeed", "outfeed", "host send", "host recv")
#: Async copies whose layout names memory space 5 (host memory: `S(5)`) are host offload transfers.
HOST_MEMORY_SPACE = "S(5)"
#: Idle share of the device time from which the run counts as host-bound even when another class is larger.
HOST_BOUND_IDLE_PERCENT = 20.0
EXPRESSION_CHARS = 200
_MODULE_NAME = re.compile(r"^(.*)\((\d+)\)$")
_CORE_DETAILS_LOCAL_CHIP_ID = 4  # field number of CoreDetails.local_chip_id (xprof op_stats.proto)

# --- interval arithmetic (numpy, no per-event Python) ----------------------------------------------


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


# --- accumulation ------------------------------------------------------------------------------------


@dataclass
class _Op:
    name: str
    category: str
    program_id: str
    flops: int
    bytes_accessed: int
    framework_op: str | None
    source: str | None
    expression: str
    async_start: str | None = None  # for an async done op: the name of its start op
    host_memory: bool = False  # the HLO text names host memory (S(5)): a host offload transfer
    occurrences: int = 0
    self_ps: float = 0.0
    total_ps: float = 0.0
    paired_with: str | None = None


@dataclass
class _Chip:
    seg_start: list[np.ndarray] = field(default_factory=list)
    seg_end: list[np.ndarray] = field(default_factory=list)
    first_ps: int | None = None
    last_ps: int | None = None


@dataclass
class _Windows:
    """Step windows of one kind (a Steps line, or one module's runs): lengths and busy time inside."""

    total_ps: float = 0.0
    lengths: list[np.ndarray] = field(default_factory=list)
    busy: list[np.ndarray] = field(default_factory=list)


def _int_stat(stats: dict[str, StatValue], name: str) -> int:
    value = stats.get(name)
    return int(value) if isinstance(value, (int, float)) else 0


def _str_stat(stats: dict[str, StatValue], name: str) -> str | None:
    value = stats.get(name)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if value is None or value == "":
        return None
    return str(value)


def _float_stat(stats: dict[str, StatValue], name: str) -> float | None:
    value = stats.get(name)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _local_chip_id(core_details: StatValue | None) -> int | None:
    """CoreDetails.local_chip_id from the serialized message (a varint field), None when absent."""
    if not isinstance(core_details, bytes):
        return None
    pos, end = 0, len(core_details)
    try:
        while pos < end:
            tag, pos = read_varint(core_details, pos)
            number, wire = tag >> 3, tag & 7
            if wire == 0:
                value, pos = read_varint(core_details, pos)
                if number == _CORE_DETAILS_LOCAL_CHIP_ID:
                    return value
            elif wire == 2:
                length, pos = read_varint(core_details, pos)
                pos += length
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            else:
                return None
    except (IndexError, ValueError):
        return None
    return 0  # proto3 leaves a zero id out


_ASYNC_DONE = re.compile(r" ([a-z][a-z-]*-done)\(")
_OPERAND = re.compile(r"%([\w.-]+)")


def async_start_of(hlo: str) -> str | None:
    """The start op an async done op waits on: its first operand (`copy-done((...) %copy-start.4)`)."""
    done = _ASYNC_DONE.search(hlo)
    if done is None:
        return None
    operand = _OPERAND.search(hlo, done.end())
    return operand.group(1) if operand else None


def _time_class(op: _Op, bound: Bound) -> TimeClass:
    category = op.category
    if any(word in category for word in HOST_TRANSFER_WORDS):
        return "host_transfers"
    if category.startswith("copy-") and op.host_memory:
        return "host_transfers"
    if any(word in category for word in COLLECTIVE_WORDS):
        return "collectives"
    if bound == "compute":
        return "compute"
    return "hbm" if bound == "memory" else "other"


def _ms(ps: float) -> float:
    return ps / 1e9


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


class _Analyzer:
    """Folds planes into aggregates one at a time; `summary()` turns them into the report."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.ops: dict[tuple[str, str], _Op] = {}
        self.chips: dict[tuple[str, str], _Chip] = defaultdict(_Chip)
        self.program_ps = 0
        self.module_names: dict[str, str] = {}
        self.windows: dict[str, _Windows] = defaultdict(_Windows)
        self.tensorcores = 0
        self.device_kinds: Counter[str] = Counter()
        self.plane_peaks: list[tuple[float | None, float | None]] = []
        self.other_devices: Counter[str] = Counter()
        self.other_device_events = 0
        self.host_self: dict[str, float] = defaultdict(float)
        self.host_count: Counter[str] = Counter()
        self.host_threads = 0
        self.host_events = 0
        self.mxu: float | None = None
        self.profile_ns: tuple[int, int] | None = None
        self.host_span_ns: tuple[float, float] | None = None
        self.planes_without_ops: list[str] = []
        self.rejected_rates: list[str] = []

    # planes -------------------------------------------------------------------------------------

    def consume(self, plane: Plane) -> None:
        if TENSORCORE_PLANE.match(plane.name):
            self._tensorcore(plane)
        elif plane.name == HOST_PLANE:
            self._host(plane)
        elif plane.name == TASK_ENV_PLANE:
            start = plane.stats.get("profile_start_time")
            stop = plane.stats.get("profile_stop_time")
            if isinstance(start, int) and isinstance(stop, int) and stop > start:
                self.profile_ns = (start, stop)
        elif (match := DEVICE_PLANE.match(plane.name)) is not None:
            kind = match.group(1)
            if kind == "TPU":
                kind = "TPU (non-TensorCore)"
            self.other_devices[kind] += 1
            self.other_device_events += sum(len(line) for line in plane.lines())

    def _tensorcore(self, plane: Plane) -> None:
        self.tensorcores += 1
        kind = _str_stat(plane.stats, "device_type_string")
        if kind:
            self.device_kinds[kind] += 1
        self.plane_peaks.append(
            (
                _float_stat(plane.stats, "peak_teraflops_per_second"),
                _float_stat(plane.stats, "peak_hbm_bw_gigabytes_per_second"),
            )
        )
        wanted: dict[str, Line] = {}
        for line in plane.lines():
            if line.name in (OPS_LINE, MODULES_LINE, STEPS_LINE) and line.name not in wanted:
                wanted[line.name] = line
        base_ns = min((line.timestamp_ns for line in wanted.values()), default=0)

        def absolute(line: Line) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            cols = line.columns()
            start = cols.offset_ps + (line.timestamp_ns - base_ns) * 1000
            return cols.metadata_id, start, start + cols.duration_ps

        empty = np.zeros(0, dtype=np.int64)
        op_ids, op_start, op_end, dev_start, dev_end = (
            self._op_timespans(plane, wanted[OPS_LINE], base_ns) if OPS_LINE in wanted else (empty,) * 5
        )
        mod_ids, mod_start, mod_end = (
            absolute(wanted[MODULES_LINE]) if MODULES_LINE in wanted else (empty, empty, empty)
        )
        step_start, step_end = (absolute(wanted[STEPS_LINE])[1:]) if STEPS_LINE in wanted else (empty, empty)
        wanted.clear()
        if len(op_ids) == 0:
            self.planes_without_ops.append(plane.name)

        active = self._fold_ops(plane, op_ids, dev_start, dev_end)
        seg_start, seg_end = merge_intervals(op_start[active], op_end[active])

        if len(dev_start) or len(step_start):
            first = min(int(a.min()) for a in (dev_start, step_start) if len(a))
            last = max(int(a.max()) for a in (dev_end, step_end) if len(a))
            self.program_ps += last - first

        chip_id = _local_chip_id(plane.stats.get("core_details"))
        chip = self.chips[(plane.host, str(chip_id) if chip_id is not None else plane.name)]
        chip.seg_start.append(seg_start)
        chip.seg_end.append(seg_end)
        spans = [a for a in (op_start, mod_start) if len(a)]
        if spans:
            lo = min(int(a.min()) for a in spans)
            hi = max(int(a.max()) for a in (op_end, mod_end) if len(a))
            chip.first_ps = lo if chip.first_ps is None else min(chip.first_ps, lo)
            chip.last_ps = hi if chip.last_ps is None else max(chip.last_ps, hi)

        self._fold_modules(plane, mod_ids, mod_start, mod_end, seg_start, seg_end)
        if len(step_start):
            self._add_windows("Steps line", step_start, step_end, seg_start, seg_end, step_windows=True)

    @staticmethod
    def _op_timespans(plane: Plane, line: Line, base_ns: int) -> tuple[np.ndarray, ...]:
        """Op ids, op intervals as traced, and op intervals on the device's own clock.

        xprof times ops by the device_offset_ps / device_duration_ps stats where an event has them (its
        duty cycle uses the traced interval); an event without them keeps its own offset and duration.
        """
        ids = {name: key for key, name in plane.stat_names.items()}
        offset_id, duration_id = ids.get("device_offset_ps", -1), ids.get("device_duration_ps", -1)
        cols = line.columns((offset_id, duration_id))
        shift = (line.timestamp_ns - base_ns) * 1000
        offset, has_offset = cols.stats[offset_id]
        duration, has_duration = cols.stats[duration_id]
        start = cols.offset_ps + shift
        dev_start = np.where(has_offset, offset, cols.offset_ps) + shift
        dev_end = dev_start + np.where(has_duration, duration, cols.duration_ps)
        return cols.metadata_id, start, start + cols.duration_ps, dev_start, dev_end

    def _fold_ops(self, plane: Plane, ids: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """Add this core's op runs to the op table; return the mask of on-duty events."""
        if len(ids) == 0:
            return np.zeros(0, dtype=bool)
        own = self_times(start, end)
        uniq, inverse = np.unique(ids, return_inverse=True)
        counts = np.bincount(inverse, minlength=len(uniq))
        self_sum = np.bincount(inverse, weights=own, minlength=len(uniq))
        total_sum = np.bincount(inverse, weights=end - start, minlength=len(uniq))
        on_duty = np.ones(len(uniq), dtype=bool)
        for i, metadata_id in enumerate(uniq.tolist()):
            meta = plane.event_metadata(metadata_id)
            stats = meta.stats
            name = meta.display_name or meta.name
            program_id = str(stats.get("program_id", ""))
            op = self.ops.get((program_id, name))
            if op is None:
                category = _str_stat(stats, "hlo_category") or "unknown"
                source = _str_stat(stats, "source")
                if source is None and (stack := _str_stat(stats, "source_stack")):
                    source = stack.strip().splitlines()[-1]
                op = _Op(
                    name=name,
                    category=category,
                    program_id=program_id,
                    flops=_int_stat(stats, "flops"),
                    bytes_accessed=_int_stat(stats, "bytes_accessed"),
                    framework_op=_str_stat(stats, "tf_op"),
                    source=source,
                    expression=meta.name[:EXPRESSION_CHARS],
                    async_start=async_start_of(meta.name),
                    host_memory=HOST_MEMORY_SPACE in meta.name,
                )
                self.ops[(program_id, name)] = op
            op.occurrences += int(counts[i])
            op.self_ps += float(self_sum[i])
            op.total_ps += float(total_sum[i])
            on_duty[i] = op.category not in OFF_DUTY
        return np.asarray(on_duty[inverse], dtype=bool)

    def _fold_modules(
        self,
        plane: Plane,
        ids: np.ndarray,
        start: np.ndarray,
        end: np.ndarray,
        seg_start: np.ndarray,
        seg_end: np.ndarray,
    ) -> None:
        if len(ids) == 0:
            return
        # return_index: the plain np.unique checks for a masked array, which imports numpy.ma (20 ms)
        for metadata_id in np.unique(ids, return_index=True)[0].tolist():
            raw_name = plane.event_names.get(metadata_id, str(metadata_id))
            match = _MODULE_NAME.match(raw_name)
            name = match.group(1) if match else raw_name
            if match:
                self.module_names[match.group(2)] = name
            mask = ids == metadata_id
            self._add_windows(
                f"XLA module {name}", start[mask], end[mask], seg_start, seg_end, step_windows=False
            )

    def _add_windows(
        self,
        key: str,
        start: np.ndarray,
        end: np.ndarray,
        seg_start: np.ndarray,
        seg_end: np.ndarray,
        step_windows: bool,
    ) -> None:
        """Record step windows: the events themselves (Steps line), or start-to-start of module runs."""
        order = np.argsort(start, kind="stable")
        start, end = start[order], end[order]
        if step_windows or len(start) < 2:
            lo, hi = start, end
        else:
            lo, hi = start[:-1], start[1:]
        entry = self.windows[key]
        entry.total_ps += float(np.sum(end - start))
        entry.lengths.append(hi - lo)
        entry.busy.append(busy_within(seg_start, seg_end, lo, hi))

    def _host(self, plane: Plane) -> None:
        mxu = _float_stat(plane.stats, "matrix_unit_utilization_percent")
        if mxu is not None:
            self.mxu = mxu
        for line in plane.lines():
            cols = line.columns()
            if len(cols) == 0:
                continue
            self.host_threads += 1
            self.host_events += len(cols)
            first = line.timestamp_ns + int(cols.offset_ps.min()) / 1000
            last = line.timestamp_ns + int((cols.offset_ps + cols.duration_ps).max()) / 1000
            lo, hi = self.host_span_ns or (first, last)
            self.host_span_ns = (min(lo, first), max(hi, last))
            own = self_times(cols.offset_ps, cols.offset_ps + cols.duration_ps)
            uniq, inverse = np.unique(cols.metadata_id, return_inverse=True)
            sums = np.bincount(inverse, weights=own, minlength=len(uniq))
            counts = np.bincount(inverse, minlength=len(uniq))
            for i, metadata_id in enumerate(uniq.tolist()):
                name = plane.event_names.get(metadata_id, str(metadata_id))
                self.host_self[name] += float(sums[i])
                self.host_count[name] += int(counts[i])

    # report -------------------------------------------------------------------------------------

    def summary(self, path: Path) -> ProfileSummary:
        info = read_space_info(path)
        summary = ProfileSummary(
            path=str(path),
            files=[str(f) for f in info.files],
            hosts=sorted(set(info.hostnames)),
            bytes=info.bytes,
            is_tpu=self.tensorcores > 0,
            device_count=self.tensorcores,
            chip_count=len(self.chips),
            other_devices=dict(self.other_devices),
            profile_duration_ms=self._duration_ms(),
            mxu_utilization_percent=self.mxu if self.tensorcores else None,
            host=self._host_summary(),
            profiler_errors=sorted(set(info.errors))[:5],
        )
        if not summary.is_tpu:
            summary.notes.append(self._not_tpu_note())
            return summary
        summary.device_kind = self.device_kinds.most_common(1)[0][0] if self.device_kinds else None
        summary.peaks = self._peaks(summary.device_kind)
        summary.device_time = self._device_time()
        summary.steps = self._steps()
        summary.roofline = self._roofline(summary.peaks)
        summary.distinct_ops = len(self.ops)
        ops = sorted(self._paired_ops(), key=lambda op: (-op.self_ps, op.name))
        summary.top_ops = [
            self._top_op(rank, op, summary.peaks) for rank, op in enumerate(ops[: self.top], 1)
        ]
        summary.categories = self._categories()
        summary.time_breakdown = self._time_breakdown(ops, summary.peaks, summary.device_time)
        summary.bound_by, summary.bound_reason = self._verdict(summary.time_breakdown, summary.device_time)
        summary.notes.extend(self._notes(summary))
        return summary

    def _paired_ops(self) -> list[_Op]:
        """The op table with each async start op folded into the done op that waits on it.

        The two halves of one transfer (copy-start/copy-done, all-reduce-start/-done, send/send-done)
        carry the same bytes: counted once (the larger of the two, where one half leaves them out), on
        the done op, which also takes the start's time. A start
        without its done (cut off by the capture) stays on its own.
        """
        starts: dict[tuple[str, str], _Op] = {}
        for op in self.ops.values():
            if op.async_start is not None and (op.program_id, op.async_start) in self.ops:
                starts[(op.program_id, op.async_start)] = op
        out: list[_Op] = []
        for key, op in self.ops.items():
            if key in starts:
                continue  # folded into its done op below
            start_key = (op.program_id, op.async_start or "")
            start = self.ops[start_key] if starts.get(start_key) is op else None
            if start is None:
                out.append(op)
                continue
            out.append(
                replace(
                    op,
                    self_ps=op.self_ps + start.self_ps,
                    total_ps=op.total_ps + start.total_ps,
                    bytes_accessed=max(op.bytes_accessed, start.bytes_accessed),
                    flops=max(op.flops, start.flops),
                    host_memory=op.host_memory or start.host_memory,
                    paired_with=start.name,
                )
            )
        return out

    def _duration_ms(self) -> float | None:
        """The capture's length: the profiler's own start/stop stamps, else the host events' span."""
        if self.profile_ns is not None:
            return (self.profile_ns[1] - self.profile_ns[0]) / 1e6
        if self.host_span_ns is not None:
            return (self.host_span_ns[1] - self.host_span_ns[0]) / 1e6
        return None

    def _not_tpu_note(self) -> str:
        if self.other_devices:
            kinds = ", ".join(
                f"{n} {k} device plane{'s' if n > 1 else ''}" for k, n in self.other_devices.items()
            )
            what = f"it holds {kinds} ({self.other_device_events} device events)"
        else:
            what = "it holds no device planes at all (a host-only or CPU-only capture)"
        return (
            "This profile has no TPU device planes (/device:TPU:N): "
            f"{what}. TPU step time, device busy/idle, HLO op roofline and MXU figures do not apply; "
            "only the host side is summarised."
        )

    def _peaks(self, device_kind: str | None) -> Peaks:
        flops = [f for f, _ in self.plane_peaks if f]
        bws = [b for _, b in self.plane_peaks if b]
        chip_name: str | None = None
        spec = None
        if device_kind:
            from tpu_runtime.chips import UnknownChipError, get_chip

            try:
                spec = get_chip(device_kind)
                chip_name = spec.name
            except UnknownChipError:
                spec = None
        if flops and bws:
            peak_flops, peak_bw, source = max(flops), max(bws), "device_plane"
        elif spec is not None:
            # the table is per chip; a device plane is one framework device (TPU7x has two per chip)
            per_chip = spec.devices_per_chip.value if spec.devices_per_chip else 1
            peak_flops = spec.peak_bf16.value / per_chip
            peak_bw, source = spec.hbm_bandwidth.value / per_chip, "chip_table"
        else:
            return Peaks(source="none", chip=chip_name)
        ridge = peak_flops * 1e12 / (peak_bw * 1e9) if peak_bw else None
        return Peaks(
            teraflops_per_second=peak_flops,
            hbm_gigabytes_per_second=peak_bw,
            ridge_flops_per_byte=ridge,
            source=source,  # type: ignore[arg-type]
            chip=chip_name,
        )

    def _device_time(self) -> DeviceTime:
        busy = idle = 0
        for chip in self.chips.values():
            if chip.first_ps is None or chip.last_ps is None:
                continue
            s, e = merge_intervals(np.concatenate(chip.seg_start), np.concatenate(chip.seg_end))
            chip_busy = int(np.sum(e - s))
            busy += chip_busy
            idle += max(chip.last_ps - chip.first_ps - chip_busy, 0)
        return DeviceTime(
            chips=len(self.chips),
            busy_ms=_ms(busy),
            idle_ms=_ms(idle),
            busy_percent=_pct(busy, busy + idle),
            idle_percent=_pct(idle, busy + idle),
        )

    def _steps(self) -> StepStats | None:
        if not self.windows:
            return None
        if "Steps line" in self.windows:
            key = "Steps line"
        else:
            key = max(self.windows, key=lambda k: (self.windows[k].total_ps, k))
        entry = self.windows[key]
        lengths = np.concatenate(entry.lengths).astype(np.float64)
        busy = np.concatenate(entry.busy).astype(np.float64)
        if len(lengths) == 0:
            return None
        source = key
        mean = float(lengths.mean())
        idle = float(np.maximum(lengths - busy, 0).mean())
        return StepStats(
            source=source,
            count=max(len(a) for a in entry.lengths),
            windows=len(lengths),
            mean_ms=_ms(mean),
            min_ms=_ms(float(lengths.min())),
            max_ms=_ms(float(lengths.max())),
            stdev_ms=_ms(float(lengths.std())),
            compute_ms=_ms(float(busy.mean())),
            idle_ms=_ms(idle),
            idle_percent=_pct(idle, mean),
        )

    def _bound(self, flops: float, nbytes: float, peaks: Peaks | None) -> tuple[float | None, Bound]:
        intensity = flops / nbytes if nbytes > 0 else None
        if flops <= 0 and nbytes <= 0:
            return intensity, "unknown"
        if intensity is None:
            return None, "compute"
        if peaks is None or peaks.ridge_flops_per_byte is None:
            return intensity, "unknown"
        return intensity, "compute" if intensity >= peaks.ridge_flops_per_byte else "memory"

    def _roofline(self, peaks: Peaks) -> Roofline | None:
        if self.program_ps <= 0:
            return None
        flops = sum(op.flops * op.occurrences for op in self.ops.values())
        nbytes = sum(op.bytes_accessed * op.occurrences for op in self.ops.values())
        seconds = self.program_ps / 1e12
        intensity, bound = self._bound(flops, nbytes, peaks)
        flop_rate, byte_rate = flops / seconds, nbytes / seconds
        # program time is summed over cores, so these rates are per core: compare with one core's peak
        return Roofline(
            total_flops=flops,
            total_bytes=nbytes,
            program_time_ms=_ms(self.program_ps),
            gflops_per_second=flop_rate / 1e9,
            gigabytes_per_second=byte_rate / 1e9,
            operational_intensity=intensity,
            bound=bound,
            flops_utilization_percent=(
                _pct(flop_rate, peaks.teraflops_per_second * 1e12) if peaks.teraflops_per_second else None
            ),
            hbm_utilization_percent=(
                _pct(byte_rate, peaks.hbm_gigabytes_per_second * 1e9)
                if peaks.hbm_gigabytes_per_second
                else None
            ),
        )

    def _top_op(self, rank: int, op: _Op, peaks: Peaks) -> TopOp:
        seconds = op.self_ps / 1e12
        flops = op.flops * op.occurrences
        nbytes = op.bytes_accessed * op.occurrences
        intensity, bound = self._bound(flops, nbytes, peaks)
        rate = nbytes / seconds / 1e9 if seconds > 0 else 0.0
        if peaks.hbm_gigabytes_per_second and rate > peaks.hbm_gigabytes_per_second:
            self.rejected_rates.append(op.name)
            gigabytes: float | None = None
        else:
            gigabytes = rate
        return TopOp(
            rank=rank,
            name=op.name,
            category=op.category,
            program=self.module_names.get(op.program_id, op.program_id or "unknown"),
            program_id=op.program_id,
            occurrences=op.occurrences,
            self_time_ms=_ms(op.self_ps),
            total_time_ms=_ms(op.total_ps),
            avg_self_time_us=op.self_ps / op.occurrences / 1e6 if op.occurrences else 0.0,
            percent_of_device_time=_pct(op.self_ps, self.program_ps),
            flops=op.flops,
            bytes_accessed=op.bytes_accessed,
            gflops_per_second=flops / seconds / 1e9 if seconds > 0 else 0.0,
            gigabytes_per_second=gigabytes,
            operational_intensity=intensity,
            bound=bound,
            time_class=_time_class(op, bound),
            paired_with=op.paired_with,
            framework_op=op.framework_op,
            source=op.source,
            expression=op.expression,
        )

    def _categories(self) -> list[CategoryTime]:
        per: dict[str, float] = defaultdict(float)
        for op in self.ops.values():
            per[op.category] += op.self_ps
        total = sum(per.values())
        ranked = sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))[: self.top]
        return [
            CategoryTime(category=c, self_time_ms=_ms(ps), percent_of_busy=_pct(ps, total))
            for c, ps in ranked
        ]

    def _time_breakdown(self, ops: list[_Op], peaks: Peaks, device: DeviceTime) -> list[TimeShare]:
        """Device time by class, as XProf's step-time breakdown splits it: each op's self time goes to
        compute, HBM-bound ops (by its roofline verdict), collectives or host transfers (by its HLO
        category and memory space); the duty-cycle idle is the time the device waited on the host."""
        per: dict[TimeClass, float] = defaultdict(float)
        for op in ops:
            _, bound = self._bound(op.flops * op.occurrences, op.bytes_accessed * op.occurrences, peaks)
            per[_time_class(op, bound)] += op.self_ps
        per["idle"] = device.idle_ms * 1e9
        total = sum(per.values())
        shares = [
            TimeShare(time_class=c, label=TIME_CLASS_WORDS[c], ms=_ms(ps), percent=_pct(ps, total))
            for c, ps in per.items()
            if ps > 0
        ]
        return sorted(shares, key=lambda t: (-t.percent, t.time_class))

    def _verdict(self, shares: list[TimeShare], device: DeviceTime) -> tuple[Verdict, str]:
        if not shares or device.busy_ms + device.idle_ms <= 0:
            return "unknown", "the TPU planes hold no op or module events"
        first = shares[0]
        verdict = VERDICT_OF[first.time_class]
        rest = ", ".join(f"{t.time_class.replace('_', ' ')} {t.percent:.1f}%" for t in shares[1:4])
        reason = f"{first.label}: the largest share of the device time, {first.percent:.1f}%"
        busy = sum(t.ms for t in shares if t.time_class != "idle")
        if first.time_class != "idle" and busy > 0:
            reason += f" ({100 * first.ms / busy:.1f}% of the busy time)"
        if rest:
            reason += f"; then {rest}"
        idle = next((t for t in shares if t.time_class == "idle"), None)
        if verdict != "host_bound" and idle is not None and idle.percent >= HOST_BOUND_IDLE_PERCENT:
            reason += f"; the device also sits idle {idle.percent:.1f}% of the time, waiting on the host"
        return verdict, reason

    def _notes(self, summary: ProfileSummary) -> Iterable[str]:
        if self.planes_without_ops:
            names = ", ".join(self.planes_without_ops[:4])
            yield f"{len(self.planes_without_ops)} TPU plane(s) hold no XLA op events: {names}"
        if summary.steps is not None and summary.steps.source != "Steps line":
            yield (
                "No step markers (no Steps line) in the profile: each run of the busiest XLA module "
                f"({summary.steps.source}) is taken as a step, measured start to start."
            )
        if summary.bound_by == "transfer_bound":
            yield (
                "The device mostly waits on host transfers (host offload copies, infeed/outfeed): keep the "
                "data on the device across steps, or overlap the copies with compute, before tuning ops."
            )
        if any(op.paired_with for op in summary.top_ops):
            yield (
                "Async ops are paired: a done op (copy-done, all-reduce-done, ...) includes the time of its "
                "start op, and the bytes of the pair are counted once."
            )
        if self.rejected_rates and summary.peaks is not None:
            names = ", ".join(self.rejected_rates[:4])
            peak = summary.peaks.hbm_gigabytes_per_second
            yield (
                f"Byte rates above the chip's peak HBM bandwidth ({peak:.4g} "
                f"GB/s) are not shown ({names}): the op's time is too short to hold its bytes (the transfer "
                "ran while other work did)."
            )
        if summary.peaks is not None and summary.peaks.source == "chip_table":
            yield "The device planes carry no peak FLOP/s or bandwidth; the chip table's figures were used."
        if summary.peaks is not None and summary.peaks.source == "none":
            yield f"Unknown TPU kind {summary.device_kind!r}: no peak figures, so no roofline verdicts."
        if self.other_devices:
            yield "Also present: " + ", ".join(f"{n} {k} plane(s)" for k, n in self.other_devices.items())

    def _host_summary(self) -> HostSummary | None:
        if not self.host_threads:
            return None
        ranked = sorted(self.host_self.items(), key=lambda kv: (-kv[1], kv[0]))[: self.top]
        return HostSummary(
            threads=self.host_threads,
            events=self.host_events,
            top_events=[
                HostEvent(name=name[:EXPRESSION_CHARS], self_time_ms=_ms(ps), count=self.host_count[name])
                for name, ps in ranked
            ],
        )


def analyze_profile(path: Path, top: int = 10) -> ProfileSummary:
    """Summarise an `*.xplane.pb` or a profile run folder; raises `xspace.ProfileReadError` on bad input."""
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    analyzer = _Analyzer(top)
    for plane in read_planes(path):
        analyzer.consume(plane)
    return analyzer.summary(path)


# --- comparing two profiles ----------------------------------------------------------------------------


def _kind(p: ProfileSummary) -> str:
    if p.is_tpu:
        return f"a {p.device_kind or 'TPU'} profile"
    if p.other_devices:
        return "a profile of " + " and ".join(f"{k} devices" for k in p.other_devices)
    return "a host-only profile"


def _across_kinds(a: ProfileSummary, b: ProfileSummary, threshold_percent: float) -> ProfileComparison:
    """A TPU profile against one without TPU planes: only the capture length compares."""
    length = MetricChange(
        name="profile length (ms)",
        before=a.profile_duration_ms,
        after=b.profile_duration_ms,
        change_percent=_change(a.profile_duration_ms, b.profile_duration_ms),
    )
    refused = (
        f"not compared: step time, device busy/idle, roofline and ops, since the baseline is {_kind(a)} "
        f"and this run is {_kind(b)}"
    )
    return ProfileComparison(
        before=a.path,
        after=b.path,
        threshold_percent=threshold_percent,
        metrics=[length],
        ops=[],
        summary=refused,
        comparable="the profile length only",
        refused=refused,
    )


def _change(before: float | None, after: float | None) -> float | None:
    """Percent change; None when either side is missing or the change from zero has no percentage."""
    if before is None or after is None:
        return None
    if before == 0:
        return 0.0 if after == 0 else None
    return 100.0 * (after - before) / before


def compare_profiles(
    a: ProfileSummary, b: ProfileSummary, threshold_percent: float = 5.0
) -> ProfileComparison:
    """What changed from profile `a` to profile `b`: headline metrics and the ops of both top lists.

    Device figures compare only between two TPU profiles; otherwise the comparison says so in `refused`.
    """
    if a.is_tpu != b.is_tpu or (not a.is_tpu and not b.is_tpu):
        return _across_kinds(a, b, threshold_percent)
    pairs: list[tuple[str, float | None, float | None]] = [
        ("step time mean (ms)", a.steps.mean_ms if a.steps else None, b.steps.mean_ms if b.steps else None),
        ("step idle (ms)", a.steps.idle_ms if a.steps else None, b.steps.idle_ms if b.steps else None),
        (
            "device busy (%)",
            a.device_time.busy_percent if a.device_time else None,
            b.device_time.busy_percent if b.device_time else None,
        ),
        (
            "program time (ms)",
            a.roofline.program_time_ms if a.roofline else None,
            b.roofline.program_time_ms if b.roofline else None,
        ),
        (
            "GFLOP/s per core",
            a.roofline.gflops_per_second if a.roofline else None,
            b.roofline.gflops_per_second if b.roofline else None,
        ),
    ]
    metrics = [MetricChange(name=n, before=x, after=y, change_percent=_change(x, y)) for n, x, y in pairs]
    before_ops = {(op.program, op.name): op for op in a.top_ops}
    after_ops = {(op.program, op.name): op for op in b.top_ops}
    ops: list[OpChange] = []
    for key in list(before_ops) + [k for k in after_ops if k not in before_ops]:
        x, y = before_ops.get(key), after_ops.get(key)
        status: OpStatus
        pct = _change(x.avg_self_time_us if x else None, y.avg_self_time_us if y else None)
        if x is None:
            status = "added"
        elif y is None:
            status = "removed"
        elif (pct is None and y.avg_self_time_us > x.avg_self_time_us) or (pct or 0.0) > threshold_percent:
            status = "slower"
        elif (pct or 0.0) < -threshold_percent:
            status = "faster"
        else:
            status = "unchanged"
        ops.append(
            OpChange(
                name=key[1],
                program=key[0],
                status=status,
                before_avg_us=x.avg_self_time_us if x else None,
                after_avg_us=y.avg_self_time_us if y else None,
                before_self_ms=x.self_time_ms if x else None,
                after_self_ms=y.self_time_ms if y else None,
                change_percent=pct,
            )
        )
    order = {"slower": 0, "faster": 1, "added": 2, "removed": 3, "unchanged": 4}
    ops.sort(key=lambda c: (order[c.status], -abs(c.change_percent or 0.0)))
    counts: Counter[str] = Counter(c.status for c in ops)
    step = metrics[0]
    if step.change_percent is not None and step.before is not None and step.after is not None:
        head = f"step time {step.before:.4g} ms -> {step.after:.4g} ms ({step.change_percent:+.1f}%)"
    else:
        head = "no step time in both profiles"
    tail = ", ".join(f"{counts[s]} {s}" for s in ("slower", "faster", "added", "removed") if counts[s])
    comparable = "all figures"
    if a.device_kind != b.device_kind:
        comparable = (
            f"all figures, across chips ({a.device_kind} -> {b.device_kind}): op times change with the chip"
        )
    return ProfileComparison(
        comparable=comparable,
        before=a.path,
        after=b.path,
        threshold_percent=threshold_percent,
        metrics=metrics,
        ops=ops,
        summary=f"{head}; top ops: {tail or 'no change beyond ' + format(threshold_percent, 'g') + '%'}",
    )
