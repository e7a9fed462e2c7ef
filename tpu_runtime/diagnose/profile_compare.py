"""What changed from one profile summary to another: headline metrics and the ops of both top lists."""

from __future__ import annotations

from collections import Counter

from tpu_runtime.diagnose.profile_model import (
    MetricChange,
    OpChange,
    OpStatus,
    ProfileComparison,
    ProfileSummary,
)

__all__ = ["compare_profiles"]


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
