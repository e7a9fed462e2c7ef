"""The steps of workflows/diagnose.yaml: each reads and writes one `DiagnoseContext`, in order.

`detect` recognises every input before any analysis, so one bad path stops the run with its one-line
reason; the reader steps then fill the report, and `findings` ranks what to change across all inputs.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from tpu_runtime.diagnose.detect import STDIN, DetectedInput, detect_input
from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.report import (
    CrashDiagnosis,
    DiagnoseReport,
    Finding,
    InputKind,
    InputSummary,
)
from tpu_runtime.workflow import ProgressFn, Step

PROFILE_MODULE = "tpu_runtime.diagnose.profile"
PROFILE_MISSING = (
    "profile analysis not installed: {path} is an XProf profile, but this build has no "
    f"{PROFILE_MODULE}.analyze_profile, so no profile summary was produced"
)
_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass
class DiagnoseContext:
    """What the steps of workflows/diagnose.yaml read and write."""

    paths: list[str]
    top: int = 15
    stdin: BinaryIO | None = None
    detected: list[DetectedInput] = field(default_factory=list)
    report: DiagnoseReport | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def require_report(self) -> DiagnoseReport:
        if self.report is None:
            raise RuntimeError("the detect step has not run")
        return self.report


def detect(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    if not ctx.paths:
        raise BadInputError("diagnose", "no input given")
    if sum(p == STDIN for p in ctx.paths) > 1:
        raise BadInputError(STDIN, "standard input can be read only once")
    for i, path in enumerate(ctx.paths):
        progress(step.id, path, i / len(ctx.paths))
        ctx.detected.append(detect_input(path, ctx.stdin))
    ctx.report = DiagnoseReport(
        inputs=[
            InputSummary(path=d.path, kind=d.kind, detail=d.detail, files=[str(f) for f in d.files])
            for d in ctx.detected
        ],
        top=ctx.top,
        notes=[note for d in ctx.detected for note in d.notes],
    )


def crash_logs(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.diagnose.crashlog import diagnose_log

    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "crash_log"):
        report.crashes.append(diagnose_log(_text(item), item.path))


def profiles(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "xspace"):
        if report.profile is not None:
            report.notes.append(
                f"{item.path}: only the first profile is summarised in `profile`; compare two profiles "
                "with --compare"
            )
            continue
        report.profile = _profile(item, ctx.top, report.notes)


def torch_traces(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.diagnose.torch_trace import analyze_torch_trace

    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "torch_trace"):
        report.torch_traces.append(analyze_torch_trace(item.files[0], ctx.top, progress))


def xla_dumps(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    """XLA dump folders, and PyTorch/XLA metrics reports (the other compile-side evidence)."""
    from tpu_runtime.diagnose.metrics import analyze_metrics
    from tpu_runtime.diagnose.xla_dump import analyze_xla_dump

    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "xla_dump"):
        report.xla_dumps.append(analyze_xla_dump(item.files, item.path, ctx.top, progress))
    for item in _timed(ctx, step, progress, "metrics_report"):
        report.metrics.append(analyze_metrics(_text(item), item.path))


def findings(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    """One list across all inputs: crashes first within a severity, then by input order."""
    report = ctx.require_report()
    ranked: list[Finding] = [_crash_finding(c) for c in report.crashes]
    per_input: list[tuple[str, list[Finding]]] = [
        *((t.source, t.findings) for t in report.torch_traces),
        *((d.source, d.findings) for d in report.xla_dumps),
        *((m.source, m.findings) for m in report.metrics),
    ]
    for source, found in per_input:
        ranked += [f.model_copy(update={"source": source}) for f in found]
    report.findings = sorted(ranked, key=lambda f: _SEVERITY_ORDER[f.severity])


# ---------------------------------------------------------------------------------------------- helpers


def _timed(
    ctx: DiagnoseContext, step: Step, progress: ProgressFn, kind: InputKind
) -> Iterator[DetectedInput]:
    """The inputs of one kind; the time spent on each goes into the report's timings under its path."""
    report = ctx.require_report()
    mine = [d for d in ctx.detected if d.kind == kind]
    for i, item in enumerate(mine):
        progress(step.id, item.path, i / len(mine))
        start = time.perf_counter()
        yield item
        report.timings[item.path] = round(time.perf_counter() - start, 3)


def _text(item: DetectedInput) -> str:
    if item.text is not None:
        return item.text
    return item.files[0].read_text(encoding="utf-8", errors="replace")


def _crash_finding(crash: CrashDiagnosis) -> Finding:
    message = f"{crash.title}: {crash.summary}" if crash.summary else crash.title
    if crash.category == "unknown":
        message = f"unknown failure: {crash.summary or 'no known signature matched'}"
    return Finding(
        kind=crash.category,
        severity="medium" if crash.category == "unknown" else "high",
        message=message,
        fix=crash.fix,
        citations=crash.citations,
        source=crash.source,
    )


def _profile(item: DetectedInput, top: int, notes: list[str]) -> dict[str, Any] | None:
    """The XProf summary from the profile reader when it is installed; otherwise a note, never a guess."""
    try:
        module = importlib.import_module(PROFILE_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != PROFILE_MODULE:
            raise
        notes.append(PROFILE_MISSING.format(path=item.path))
        return None
    analyze: Callable[[Path, int], Any] | None = getattr(module, "analyze_profile", None)
    if analyze is None:
        notes.append(PROFILE_MISSING.format(path=item.path))
        return None
    try:
        result = analyze(Path(item.path), top)
    except ValueError as exc:  # the reader's ProfileReadError: a profile it cannot read
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInputError(item.path, message.removeprefix(f"{item.path}: ")) from None
    dumped: dict[str, Any] = result.model_dump(mode="json") if hasattr(result, "model_dump") else dict(result)
    return dumped
