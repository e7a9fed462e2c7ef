"""Folding an XProf profile's planes into aggregates: per-op time, per-chip busy intervals, step windows.

Each plane is read once and dropped (`PlaneFolder.consume`); what stays is small: one `OpAggregate` per
(program id, HLO op name) across cores, the on-duty intervals of each chip, the step windows of the Steps
line or of each XLA module's runs, the host events' self times. `profile_summary` turns it into the report.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from tpu_runtime.diagnose.profile_intervals import busy_within, merge_intervals, self_times
from tpu_runtime.diagnose.xspace import Line, Plane, StatValue
from tpu_runtime.protowire import read_varint

TENSORCORE_PLANE = re.compile(r"^/device:TPU:(\d+)$")
DEVICE_PLANE = re.compile(r"^/device:([A-Za-z_]+)")
HOST_PLANE = "/host:CPU"
TASK_ENV_PLANE = "Task Environment"
OPS_LINE, MODULES_LINE, STEPS_LINE = "XLA Ops", "XLA Modules", "Steps"

#: HLO categories whose time is not counted as the core being busy (xla_op_utils.h, IsOffDutyOp).
OFF_DUTY = frozenset(
    {"infeed", "outfeed", "host send", "host send-done", "host recv", "host recv-done", "megacore fusion"}
)
#: Async copies whose layout names memory space 5 (host memory: `S(5)`) are host offload transfers.
HOST_MEMORY_SPACE = "S(5)"
EXPRESSION_CHARS = 200
_MODULE_NAME = re.compile(r"^(.*)\((\d+)\)$")
_CORE_DETAILS_LOCAL_CHIP_ID = 4  # field number of CoreDetails.local_chip_id (xprof op_stats.proto)


@dataclass
class OpAggregate:
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
class ChipSpans:
    seg_start: list[np.ndarray] = field(default_factory=list)
    seg_end: list[np.ndarray] = field(default_factory=list)
    first_ps: int | None = None
    last_ps: int | None = None


@dataclass
class StepWindows:
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


class PlaneFolder:
    """Folds planes into aggregates one at a time, keeping no event (`ProfileAnalyzer` reports on them)."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.ops: dict[tuple[str, str], OpAggregate] = {}
        self.chips: dict[tuple[str, str], ChipSpans] = defaultdict(ChipSpans)
        self.program_ps = 0
        self.module_names: dict[str, str] = {}
        self.windows: dict[str, StepWindows] = defaultdict(StepWindows)
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
                op = OpAggregate(
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
            # as Python numbers first: indexing an array one element at a time costs more than the sums
            for metadata_id, own_ps, count in zip(uniq.tolist(), sums.tolist(), counts.tolist(), strict=True):
                name = plane.event_names.get(metadata_id, str(metadata_id))
                self.host_self[name] += own_ps
                self.host_count[name] += count

    # report -------------------------------------------------------------------------------------
