"""PyTorch/XLA metrics reports (`torch_xla.debug.metrics.metrics_report()`): compiles, syncs, fallbacks.

The report is a list of `Metric: NAME` blocks (TotalSamples, Accumulator, Percentiles ...) and
`Counter: NAME` blocks (Value). The numbers that matter on a TPU: how many graphs were compiled
(CompileTime / UncachedCompile) against how many ran (ExecuteTime), how often the host read values
back (TransferFromDeviceTime), and which ATen ops fell back to the CPU (counters named `aten::*`).
The installed torch_tpu (0.2.0) ships no metrics report of its own, so this is the one format read.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.report import Citation, Finding, MetricsSummary, MetricStat
from tpu_runtime.diagnose.units import parse_duration

__all__ = ["analyze_metrics"]

_BLOCK = re.compile(r"^(?P<kind>Metric|Counter): (?P<name>\S+)\s*$")
_FIELD = re.compile(r"^\s+(?P<key>TotalSamples|Accumulator|Value): (?P<value>.+?)\s*$")

TROUBLESHOOT = Citation(
    label="PyTorch/XLA troubleshooting: metrics report, recompilation, CPU fallback",
    url="https://docs.pytorch.org/xla/release/r2.7/learn/troubleshoot.html",
)


def analyze_metrics(text: str, source: str) -> MetricsSummary:
    metrics: dict[str, MetricStat] = {}
    counters: dict[str, int] = {}
    current: tuple[str, str] | None = None
    for line in text.splitlines():
        block = _BLOCK.match(line)
        if block is not None:
            current = (block["kind"], block["name"])
            if block["kind"] == "Metric":
                metrics[block["name"]] = MetricStat(name=block["name"], samples=0, total="")
            continue
        field = _FIELD.match(line)
        if field is None or current is None:
            continue
        kind, name = current
        key, value = field["key"], field["value"]
        if kind == "Counter" and key == "Value":
            counters[name] = _int(value)
        elif kind == "Metric" and key == "TotalSamples":
            metrics[name].samples = _int(value)
        elif kind == "Metric" and key == "Accumulator":
            metrics[name].total = value
            metrics[name].total_seconds = parse_duration(value)
    if not metrics and not counters:
        raise BadInputError(source, "no 'Metric:' or 'Counter:' blocks: not a PyTorch/XLA metrics report")
    compile_metric = metrics.get("CompileTime")
    execute_metric = metrics.get("ExecuteTime")
    transfers = metrics.get("TransferFromDeviceTime")
    compilations = counters.get("UncachedCompile", compile_metric.samples if compile_metric else None)
    summary = MetricsSummary(
        source=source,
        format="pytorch_xla",
        metrics=sorted(metrics.values(), key=lambda m: m.total_seconds or 0.0, reverse=True),
        counters=counters,
        compilations=compilations,
        compile_seconds=compile_metric.total_seconds if compile_metric else None,
        executions=execute_metric.samples if execute_metric else None,
        device_to_host_transfers=transfers.samples if transfers else None,
        fallback_ops=dict(
            sorted(((k, v) for k, v in counters.items() if k.startswith("aten::")), key=lambda kv: -kv[1])
        ),
        findings=[],
    )
    summary.findings = list(_findings(summary))
    return summary


def _int(value: str) -> int:
    try:
        return int(float(value.split()[0]))
    except (ValueError, IndexError):
        return 0


def _findings(s: MetricsSummary) -> Iterable[Finding]:
    if s.compilations is not None and s.compilations >= 8:
        runs = f" for {s.executions} executions" if s.executions else ""
        spent = f", {s.compile_seconds:.1f} s compiling" if s.compile_seconds is not None else ""
        yield Finding(
            kind="recompilation",
            severity="high" if s.compilations >= 20 else "medium",
            message=f"{s.compilations} graph compilations{runs}{spent}",
            fix="Keep the traced graph the same every step: fixed input shapes (pad or bucket), no Python "
            "branches on tensor values, no .item() inside the step; run with PT_XLA_DEBUG=1 to see why each "
            "compilation happened.",
            citations=[TROUBLESHOOT],
        )
    if s.fallback_ops:
        ops = ", ".join(f"{k} ({v})" for k, v in list(s.fallback_ops.items())[:6])
        yield Finding(
            kind="cpu_fallback",
            severity="high",
            message=f"ops that ran on the CPU fallback: {ops}",
            fix="Each call copies tensors to the host and back. Replace them with ops the backend lowers "
            "(`tpu-agent ops show <op>` gives rewrites), or move that computation out of the step.",
            citations=[TROUBLESHOOT],
        )
    if s.device_to_host_transfers and s.executions and s.device_to_host_transfers >= s.executions:
        yield Finding(
            kind="host_sync",
            severity="medium",
            message=f"{s.device_to_host_transfers} device-to-host transfers for {s.executions} executions: "
            "the host reads values back about every step",
            fix="Read losses and metrics every N steps (or accumulate them on the device); avoid .item(), "
            ".cpu() and printing tensors inside the step.",
            citations=[TROUBLESHOOT],
        )
