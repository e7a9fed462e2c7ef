"""Folding an XProf profile's planes into aggregates: per-op time, per-chip busy intervals, step windows.

Each plane is read once and dropped (`PlaneFolder.consume`); what stays is small: one `OpAggregate` per
(program id, HLO op name) across cores, the on-duty intervals of each chip, the step windows of the Steps
line or of each XLA module's runs, the host events' self times. `profile_summary` turns it into the report.

The arithmetic on a line's events goes through an `ArrayOps`: Python lists for a profile of few events
(`profile_lists.ListOps`: it never loads numpy), numpy arrays for more (`profile_intervals.NumpyOps`);
`ops_for` picks, and both give the same figures.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tpu_runtime.diagnose.profile_lists import ArrayOps, Column, ListOps
from tpu_runtime.diagnose.xspace import (
    Line,
    Plane,
    ProfileReadError,
    StatValue,
    count_events,
    profile_files,
)
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
#: Profiles of at most this many events are folded on Python lists: loading numpy costs about 0.06 s of
#: CPU, the lists about 1.7 us an event more than numpy, so above it numpy pays for itself (the 0.86 MB
#: v6e fixture holds 26,700 events, 19,300 of them on its host plane).
LIST_EVENTS = 36_000
#: Larger profiles go to numpy without counting (about 30,000 events per MB in the fixtures).
LIST_PROFILE_BYTES = 2 << 20


def ops_for(path: Path) -> ArrayOps:
    """The arithmetic for a profile: lists when it holds few events, else numpy. Counting its events
    parses each line's framing once more (about 2 ms for the v6e fixture) and stops past the limit; a
    profile that cannot be read is left to the fold, which says what is wrong where it reads."""
    if sum(file.stat().st_size for file in profile_files(path)) <= LIST_PROFILE_BYTES:
        try:
            events = count_events(path, LIST_EVENTS)
        except ProfileReadError:
            return ListOps()
        if events <= LIST_EVENTS:
            return ListOps()
    from tpu_runtime.diagnose.profile_intervals import NumpyOps

    return NumpyOps()


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
    seg_start: list[Column] = field(default_factory=list)
    seg_end: list[Column] = field(default_factory=list)
    first_ps: int | None = None
    last_ps: int | None = None


@dataclass
class StepWindows:
    """Step windows of one kind (a Steps line, or one module's runs): lengths and busy time inside."""

    total_ps: float = 0.0
    lengths: list[Column] = field(default_factory=list)
    busy: list[Column] = field(default_factory=list)


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

    def __init__(self, top: int, ops: ArrayOps | None = None) -> None:
        self.top = top
        self.xp: ArrayOps = ops if ops is not None else ListOps()
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
        xp = self.xp
        empty = xp.empty()
        op_ids, op_start, op_end, dev_start, dev_end = (
            self._op_timespans(plane, wanted[OPS_LINE], base_ns) if OPS_LINE in wanted else (empty,) * 5
        )
        mod_ids, mod_start, mod_end = (
            xp.events(wanted[MODULES_LINE], base_ns) if MODULES_LINE in wanted else (empty, empty, empty)
        )
        step_start, step_end = (
            xp.events(wanted[STEPS_LINE], base_ns)[1:] if STEPS_LINE in wanted else (empty, empty)
        )
        wanted.clear()
        if len(op_ids) == 0:
            self.planes_without_ops.append(plane.name)

        inverse, on_duty = self._fold_ops(plane, op_ids, dev_start, dev_end)
        seg_start, seg_end = xp.merge(xp.keep(op_start, inverse, on_duty), xp.keep(op_end, inverse, on_duty))

        if len(dev_start) or len(step_start):
            first = min(xp.lowest(a) for a in (dev_start, step_start) if len(a))
            last = max(xp.highest(a) for a in (dev_end, step_end) if len(a))
            self.program_ps += last - first

        chip_id = _local_chip_id(plane.stats.get("core_details"))
        chip = self.chips[(plane.host, str(chip_id) if chip_id is not None else plane.name)]
        chip.seg_start.append(seg_start)
        chip.seg_end.append(seg_end)
        spans = [a for a in (op_start, mod_start) if len(a)]
        if spans:
            lo = min(xp.lowest(a) for a in spans)
            hi = max(xp.highest(a) for a in (op_end, mod_end) if len(a))
            chip.first_ps = lo if chip.first_ps is None else min(chip.first_ps, lo)
            chip.last_ps = hi if chip.last_ps is None else max(chip.last_ps, hi)

        self._fold_modules(plane, mod_ids, mod_start, mod_end, seg_start, seg_end)
        if len(step_start):
            self._add_windows("Steps line", step_start, step_end, seg_start, seg_end, step_windows=True)

    def _op_timespans(self, plane: Plane, line: Line, base_ns: int) -> tuple[Column, ...]:
        """Op ids, op intervals as traced, and op intervals on the device's own clock.

        xprof times ops by the device_offset_ps / device_duration_ps stats where an event has them (its
        duty cycle uses the traced interval); an event without them keeps its own offset and duration.
        """
        ids = {name: key for key, name in plane.stat_names.items()}
        offset_id, duration_id = ids.get("device_offset_ps", -1), ids.get("device_duration_ps", -1)
        return self.xp.op_events(line, base_ns, offset_id, duration_id)

    def _fold_ops(self, plane: Plane, ids: Column, start: Column, end: Column) -> tuple[Column, list[bool]]:
        """Add this core's op runs to the op table; return each event's index into the distinct ids and
        whether each distinct id is on duty."""
        if len(ids) == 0:
            return self.xp.empty(), []
        own = self.xp.self_times(start, end)
        uniq, counts, self_sum, total_sum, inverse = self.xp.groups(ids, own, start, end)
        on_duty = [True] * len(uniq)
        for i, metadata_id in enumerate(uniq):
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
            op.occurrences += counts[i]
            op.self_ps += self_sum[i]
            op.total_ps += total_sum[i]
            on_duty[i] = op.category not in OFF_DUTY
        return inverse, on_duty

    def _fold_modules(
        self,
        plane: Plane,
        ids: Column,
        start: Column,
        end: Column,
        seg_start: Column,
        seg_end: Column,
    ) -> None:
        if len(ids) == 0:
            return
        for metadata_id in self.xp.distinct(ids):
            raw_name = plane.event_names.get(metadata_id, str(metadata_id))
            match = _MODULE_NAME.match(raw_name)
            name = match.group(1) if match else raw_name
            if match:
                self.module_names[match.group(2)] = name
            runs_start, runs_end = self.xp.where_id(ids, metadata_id, start, end)
            self._add_windows(
                f"XLA module {name}", runs_start, runs_end, seg_start, seg_end, step_windows=False
            )

    def _add_windows(
        self,
        key: str,
        start: Column,
        end: Column,
        seg_start: Column,
        seg_end: Column,
        step_windows: bool,
    ) -> None:
        """Record step windows: the events themselves (Steps line), or start-to-start of module runs."""
        total, lengths, busy = self.xp.windows(start, end, seg_start, seg_end, step_windows)
        entry = self.windows[key]
        entry.total_ps += total
        entry.lengths.append(lengths)
        entry.busy.append(busy)

    def _host(self, plane: Plane) -> None:
        mxu = _float_stat(plane.stats, "matrix_unit_utilization_percent")
        if mxu is not None:
            self.mxu = mxu
        xp = self.xp
        for line in plane.lines():
            ids, offset, end = xp.spans(line)
            if len(ids) == 0:
                continue
            self.host_threads += 1
            self.host_events += len(ids)
            first = line.timestamp_ns + xp.lowest(offset) / 1000
            last = line.timestamp_ns + xp.highest(end) / 1000
            lo, hi = self.host_span_ns or (first, last)
            self.host_span_ns = (min(lo, first), max(hi, last))
            own = xp.self_times(offset, end)
            uniq, counts, sums, _totals, _inverse = xp.groups(ids, own, offset, end)
            for metadata_id, own_ps, count in zip(uniq, sums, counts, strict=True):
                name = plane.event_names.get(metadata_id, str(metadata_id))
                self.host_self[name] += own_ps
                self.host_count[name] += count

    # report -------------------------------------------------------------------------------------
