"""Make XProf profiles for tests and benchmarks from a real one, with our own XSpace writer.

Profiles cannot be captured without a TPU, so larger and altered profiles are derived from the real
v6e fixture: planes are copied to more devices, timelines are repeated with jittered durations, and one
op can be slowed down while every later event moves with it (time is dilated, so lines stay coherent).
All writing goes through the message classes of `tpu_runtime.diagnose.xspace.schema()`.
"""

from __future__ import annotations

import bisect
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tpu_runtime.diagnose.xspace import schema

TPU_PREFIX = "/device:TPU:"


def load_space(path: Path) -> Any:
    """Parse a whole `*.xplane.pb` into an XSpace message (fine for fixture-sized files)."""
    space = schema().XSpace()
    space.ParseFromString(path.read_bytes())
    return space


def write_space(space: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(space.SerializeToString())
    return path


def tpu_planes(space: Any) -> list[Any]:
    return [p for p in space.planes if p.name.startswith(TPU_PREFIX)]


def _event_ids_named(plane: Any, op_name: str) -> set[int]:
    """Event metadata ids of an op, by its short name ('fusion.1') or full HLO text."""
    return {k for k, v in plane.event_metadata.items() if op_name in (v.display_name, v.name)}


def _device_stat(event: Any, stat_id: int | None) -> Any:
    for stat in event.stats:
        if stat.metadata_id == stat_id:
            return stat
    return None


class _Stretch:
    """Time dilation that stretches given (start, duration) spans by a factor."""

    def __init__(self, spans: list[tuple[int, int]], factor: float) -> None:
        self.spans = sorted(spans)
        self.starts = [s for s, _ in self.spans]
        self.factor = factor
        self.added_before = [0]
        for _, dur in self.spans:
            self.added_before.append(self.added_before[-1] + round(dur * (factor - 1.0)))

    def __call__(self, t: int) -> int:
        return _dilate(t, self.starts, self.spans, self.added_before, self.factor)


def scale_op(space: Any, op_name: str, factor: float) -> int:
    """Stretch every execution of HLO op `op_name` by `factor` on each TPU plane; return how many.

    Time after (and inside) each stretched event is dilated so later events shift by the added time and
    enclosing events (modules, steps) grow with it. The device clock (device_offset_ps and
    device_duration_ps stats) is dilated the same way by the op's device-clock spans.
    """
    changed = 0
    for plane in tpu_planes(space):
        ids = _event_ids_named(plane, op_name)
        stat_ids = {v.name: k for k, v in plane.stat_metadata.items()}
        off_id, dur_id = stat_ids.get("device_offset_ps"), stat_ids.get("device_duration_ps")
        traced: list[tuple[int, int]] = []
        device: list[tuple[int, int]] = []
        for line in plane.lines:
            if line.name != "XLA Ops":
                continue
            for event in line.events:
                if event.metadata_id not in ids:
                    continue
                traced.append((event.offset_ps, event.duration_ps))
                off, dur = _device_stat(event, off_id), _device_stat(event, dur_id)
                if off is not None and dur is not None:
                    device.append((off.uint64_value, dur.uint64_value))
        if not traced:
            continue
        trace_clock, device_clock = _Stretch(traced, factor), _Stretch(device, factor)
        for line in plane.lines:
            for event in line.events:
                begin = trace_clock(event.offset_ps)
                end = trace_clock(event.offset_ps + event.duration_ps)
                event.offset_ps, event.duration_ps = begin, end - begin
                off, dur = _device_stat(event, off_id), _device_stat(event, dur_id)
                if off is not None and dur is not None:
                    d_begin = device_clock(off.uint64_value)
                    d_end = device_clock(off.uint64_value + dur.uint64_value)
                    off.uint64_value, dur.uint64_value = d_begin, d_end - d_begin
        changed += len(traced)
    return changed


def _dilate(
    t: int, starts: list[int], spans: list[tuple[int, int]], added_before: list[int], factor: float
) -> int:
    """Where time t lands once each span is stretched by `factor` (time before the first span stays)."""
    i = bisect.bisect_right(starts, t) - 1
    if i < 0:
        return t
    start, dur = spans[i]
    inside = min(max(t - start, 0), dur)
    return t + added_before[i] + round(inside * (factor - 1.0))


def delay_module_runs(space: Any, module_prefix: str, gap_ps: int) -> int:
    """Insert `gap_ps` of idle time before every run of the XLA modules named `module_prefix...` on
    each TPU plane (the device waiting on the host); later events move, nothing stretches."""
    runs = 0
    for plane in tpu_planes(space):
        ids = {k for k, v in plane.event_metadata.items() if v.name.startswith(module_prefix)}
        starts = sorted(
            e.offset_ps
            for line in plane.lines
            if line.name == "XLA Modules"
            for e in line.events
            if e.metadata_id in ids
        )
        if not starts:
            continue
        stat_ids = {k for k, v in plane.stat_metadata.items() if v.name == "device_offset_ps"}
        for line in plane.lines:
            for event in line.events:
                shift = gap_ps * bisect.bisect_right(starts, event.offset_ps)
                event.offset_ps += shift
                for stat in event.stats:
                    if stat.metadata_id in stat_ids:  # the device clock moves with the trace
                        stat.uint64_value += shift
        runs += len(starts)
    return runs


def edit_device_stats(space: Any, drop: Iterable[str] = (), device_type: str | None = None) -> None:
    """Remove the named stats from every TPU plane, and optionally rename its device type."""
    dropped = set(drop)
    for plane in tpu_planes(space):
        names = {k: v.name for k, v in plane.stat_metadata.items()}
        kept = [st for st in plane.stats if names.get(st.metadata_id) not in dropped]
        del plane.stats[:]
        plane.stats.extend(kept)
        if device_type is not None:
            for stat in plane.stats:
                if names.get(stat.metadata_id) == "device_type_string":
                    stat.str_value = device_type


def add_steps_line(space: Any, module_prefix: str) -> int:
    """Give each TPU plane a "Steps" line whose events are the runs of one module (as a training loop
    with step markers would have); return the number of steps written."""
    written = 0
    for plane in tpu_planes(space):
        ids = {k for k, v in plane.event_metadata.items() if v.name.startswith(module_prefix)}
        runs = [
            e
            for line in plane.lines
            if line.name == "XLA Modules"
            for e in line.events
            if e.metadata_id in ids
        ]
        step_id = max(plane.event_metadata) + 1
        plane.event_metadata[step_id].id = step_id
        plane.event_metadata[step_id].name = "train_step"
        steps = plane.lines.add(id=1, name="Steps")
        for run in runs:
            steps.events.add(metadata_id=step_id, offset_ps=run.offset_ps, duration_ps=run.duration_ps)
        written += len(runs)
    return written


def _copy_line_events(
    src: Any, dst: Any, repeats: int, period_ps: int, rng: random.Random, jitter: float, clock: dict[int, str]
) -> None:
    """Append `repeats` copies of src's events to dst, each shifted by a period (on the trace and on the
    device clock: `clock` maps the ids of the device_offset_ps / device_duration_ps stats to their names).

    On an "XLA Ops" line (flat: ops never nest there) each run is shortened by up to `jitter`, on both
    clocks, so repeats differ the way real runs do; shortening a flat line cannot make events overlap.
    Lines whose events nest (host threads, modules) keep their durations so children stay inside.
    """
    events = list(src.events)
    vary = jitter > 0 and src.name == "XLA Ops"
    for k in range(repeats):
        shift = k * period_ps
        for event in events:
            new = dst.events.add()
            new.CopyFrom(event)
            new.offset_ps = event.offset_ps + shift
            keep = 1.0 - rng.uniform(0.0, jitter) if vary and event.duration_ps else 1.0
            if keep != 1.0:
                new.duration_ps = max(1, round(event.duration_ps * keep))
            for stat in new.stats:
                kind = clock.get(stat.metadata_id)
                if kind == "device_offset_ps":
                    stat.uint64_value += shift
                elif kind == "device_duration_ps" and keep != 1.0:
                    stat.uint64_value = max(1, round(stat.uint64_value * keep))


def _timeline_period(space: Any) -> int:
    """The span (ps) covered by the events of all lines, so repeats follow each other without overlap."""
    end = 0
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                end = max(end, event.offset_ps + event.duration_ps)
    return end + 1_000_000


def varint(value: int) -> bytes:
    """Protobuf's base-128 varint encoding of a non-negative integer."""
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def core_details(index: int) -> bytes:
    """A serialized CoreDetails for the index-th chip: device_ordinal (field 2), local_chip_id (4),
    global_chip_id (5) and global_core_id (6) all set to `index` (xprof's op_stats.proto numbering)."""
    return b"".join(bytes([number << 3]) + varint(index) for number in (2, 4, 5, 6) if index)


def _set_core_details(plane: Any, index: int) -> None:
    """Give a copied TPU plane its own chip identity, so chips are not merged as one."""
    ids = [key for key, meta in plane.stat_metadata.items() if meta.name == "core_details"]
    for stat in plane.stats:
        if ids and stat.metadata_id == ids[0]:
            stat.bytes_value = core_details(index)


def synthesize(base: Any, devices: int, repeats: int, seed: int = 0, jitter: float = 0.05) -> Any:
    """A larger XSpace like `base`: `devices` TPU planes and each timeline repeated `repeats` times.

    Extra devices copy the base's TPU planes in turn (renamed `/device:TPU:N`, new plane ids, a chip
    of their own); host and other planes keep their names. Op runs are shortened by up to `jitter` so
    repeats are not identical (see `_copy_line_events`).
    """
    rng = random.Random(seed)
    period = _timeline_period(base)
    out = schema().XSpace()
    out.hostnames.extend(base.hostnames)
    base_tpus = tpu_planes(base)
    others = [p for p in base.planes if not p.name.startswith(TPU_PREFIX)]
    next_id = max((p.id for p in base.planes), default=0) + 1

    def copy_plane(src: Any, name: str, plane_id: int) -> None:
        plane = out.planes.add()
        plane.id, plane.name = plane_id, name
        for key, meta in src.event_metadata.items():
            plane.event_metadata[key].CopyFrom(meta)
        for key, meta in src.stat_metadata.items():
            plane.stat_metadata[key].CopyFrom(meta)
        plane.stats.extend(src.stats)
        clock = {
            key: meta.name
            for key, meta in src.stat_metadata.items()
            if meta.name in ("device_offset_ps", "device_duration_ps")
        }
        for src_line in src.lines:
            line = plane.lines.add()
            for field in ("id", "display_id", "name", "display_name", "timestamp_ns", "duration_ps"):
                setattr(line, field, getattr(src_line, field))
            _copy_line_events(src_line, line, repeats, period, rng, jitter, clock)

    for index in range(devices):
        src = base_tpus[index % len(base_tpus)]
        plane_id = src.id if index < len(base_tpus) else next_id + index
        copy_plane(src, f"{TPU_PREFIX}{index}", plane_id)
        _set_core_details(out.planes[-1], index)
    for src in others:
        copy_plane(src, src.name, src.id)
    return out


def synthesize_to_size(
    base_path: Path, target_bytes: int, out_path: Path, devices: int = 8, seed: int = 0
) -> Path:
    """Write a profile of about `target_bytes` derived from `base_path`, with `devices` TPU planes.

    The repeat count is solved from the serialized size of one and of two repeats (a fixed part for the
    metadata, a per-repeat part for the events), so the result lands within a repeat of the target.
    """
    base = load_space(base_path)
    one = synthesize(base, devices, 1, seed).ByteSize()
    per_repeat = synthesize(base, devices, 2, seed).ByteSize() - one
    fixed = one - per_repeat
    repeats = max(1, round((target_bytes - fixed) / per_repeat))
    return write_space(synthesize(base, devices, repeats, seed), out_path)


def cut(data: bytes, fraction: float) -> bytes:
    """The first `fraction` of a serialized profile (a capture or copy interrupted part way)."""
    return data[: int(len(data) * fraction)]


def op_names(space: Any, plane_names: Iterable[str] | None = None) -> set[str]:
    """Names of the events on the XLA Ops lines of the TPU planes (optionally only the named planes)."""
    wanted = set(plane_names) if plane_names is not None else None
    names: set[str] = set()
    for plane in tpu_planes(space):
        if wanted is not None and plane.name not in wanted:
            continue
        for line in plane.lines:
            if line.name == "XLA Ops":
                names.update(plane.event_metadata[e.metadata_id].name for e in line.events)
    return names
