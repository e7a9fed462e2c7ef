"""From a profile's folded aggregates to its `ProfileSummary`: the figures, the verdict and the notes.

The roofline verdict of each op (compute- or HBM-bound against the chip's ridge point), the device time
split by class the way XProf's step-time breakdown splits it, and the notes that say where a figure
comes from; the definitions are listed in `tpu_runtime.diagnose.profile`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from tpu_runtime.diagnose.profile_model import (
    TIME_CLASS_WORDS,
    VERDICT_OF,
    Bound,
    CategoryTime,
    DeviceTime,
    HostEvent,
    HostSummary,
    Peaks,
    ProfileSummary,
    Roofline,
    StepStats,
    TimeClass,
    TimeShare,
    TopOp,
    Verdict,
)
from tpu_runtime.diagnose.profile_planes import EXPRESSION_CHARS, OpAggregate, PlaneFolder
from tpu_runtime.diagnose.xspace import read_space_info

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
#: Idle share of the device time from which the run counts as host-bound even when another class is larger.
HOST_BOUND_IDLE_PERCENT = 20.0


def _time_class(op: OpAggregate, bound: Bound) -> TimeClass:
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


def _chip_key(device_kind: str) -> str | None:
    """The generation a device kind names, from the precompiled chip names (no pydantic, no PyYAML), or
    from the sheet itself when it has changed since it was compiled (`tpu_runtime.chips`)."""
    from tpu_runtime.chip_names import compiled_alias_index, key_in

    index = compiled_alias_index()
    if index is None:
        from tpu_runtime.chips import chip_key

        return chip_key(device_kind)
    return key_in(index, device_kind)


def _ms(ps: float) -> float:
    return ps / 1e9


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


class ProfileAnalyzer(PlaneFolder):
    """The folded aggregates as the report: peaks, device time, steps, roofline, top ops, verdict, notes."""

    def summary(self, path: Path) -> ProfileSummary:
        info = read_space_info(path)
        summary = ProfileSummary.model_construct(
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

    def _paired_ops(self) -> list[OpAggregate]:
        """The op table with each async start op folded into the done op that waits on it.

        The two halves of one transfer (copy-start/copy-done, all-reduce-start/-done, send/send-done)
        carry the same bytes: counted once (the larger of the two, where one half leaves them out), on
        the done op, which also takes the start's time. A start
        without its done (cut off by the capture) stays on its own.
        """
        starts: dict[tuple[str, str], OpAggregate] = {}
        for op in self.ops.values():
            if op.async_start is not None and (op.program_id, op.async_start) in self.ops:
                starts[(op.program_id, op.async_start)] = op
        out: list[OpAggregate] = []
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
        # the generation's name only: the sheet's figures are read when the planes carry no peaks
        chip_name = _chip_key(device_kind) if device_kind else None
        if flops and bws:
            peak_flops, peak_bw, source = max(flops), max(bws), "device_plane"
        elif chip_name is not None:
            from tpu_runtime.chips import get_chip  # the sheet's figures, validated (pydantic, PyYAML)

            spec = get_chip(chip_name)
            # the table is per chip; a device plane is one framework device (TPU7x has two per chip)
            per_chip = spec.devices_per_chip.value if spec.devices_per_chip else 1
            peak_flops = spec.peak_bf16.value / per_chip
            peak_bw, source = spec.hbm_bandwidth.value / per_chip, "chip_table"
        else:
            return Peaks.model_construct(source="none", chip=chip_name)
        ridge = peak_flops * 1e12 / (peak_bw * 1e9) if peak_bw else None
        return Peaks.model_construct(
            teraflops_per_second=peak_flops,
            hbm_gigabytes_per_second=peak_bw,
            ridge_flops_per_byte=ridge,
            source=source,
            chip=chip_name,
        )

    def _device_time(self) -> DeviceTime:
        busy = idle = 0
        for chip in self.chips.values():
            if chip.first_ps is None or chip.last_ps is None:
                continue
            chip_busy = self.xp.union_length(chip.seg_start, chip.seg_end)
            busy += chip_busy
            idle += max(chip.last_ps - chip.first_ps - chip_busy, 0)
        return DeviceTime.model_construct(
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
        stats = self.xp.window_stats(entry.lengths, entry.busy)
        if stats is None:
            return None
        windows, mean, lowest, highest, stdev, busy, idle = stats
        return StepStats.model_construct(
            source=key,
            count=max(len(a) for a in entry.lengths),
            windows=windows,
            mean_ms=_ms(mean),
            min_ms=_ms(lowest),
            max_ms=_ms(highest),
            stdev_ms=_ms(stdev),
            compute_ms=_ms(busy),
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
        return Roofline.model_construct(
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

    def _top_op(self, rank: int, op: OpAggregate, peaks: Peaks) -> TopOp:
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
        return TopOp.model_construct(
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
            CategoryTime.model_construct(category=c, self_time_ms=_ms(ps), percent_of_busy=_pct(ps, total))
            for c, ps in ranked
        ]

    def _time_breakdown(self, ops: list[OpAggregate], peaks: Peaks, device: DeviceTime) -> list[TimeShare]:
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
            TimeShare.model_construct(
                time_class=c, label=TIME_CLASS_WORDS[c], ms=_ms(ps), percent=_pct(ps, total)
            )
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
        return HostSummary.model_construct(
            threads=self.host_threads,
            events=self.host_events,
            top_events=[
                HostEvent.model_construct(
                    name=name[:EXPRESSION_CHARS], self_time_ms=_ms(ps), count=self.host_count[name]
                )
                for name, ps in ranked
            ],
        )
