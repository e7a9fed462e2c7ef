"""The steps of workflows/diagnose.yaml: each reads and writes one `DiagnoseContext`, in order.

`detect` recognises every input (and the `--compare` baseline) before any analysis, so one bad path
stops the run with its one-line reason; the reader steps then fill the report, and `findings` ranks what
to change across all inputs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from tpu_runtime.diagnose.detect import STDIN, DetectedInput, detect_input
from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.profile_model import ProfileSummary
from tpu_runtime.diagnose.report import (
    CrashDiagnosis,
    DiagnoseReport,
    Finding,
    InputKind,
    InputSummary,
)
from tpu_runtime.progress import ProgressFn
from tpu_runtime.workflow import Step, produced

_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


@dataclass
class DiagnoseContext:
    """What the steps of workflows/diagnose.yaml read and write."""

    paths: list[str]
    top: int = 15
    stdin: BinaryIO | None = None
    compare: str | None = None
    detected: list[DetectedInput] = field(default_factory=list)
    baseline: DetectedInput | None = None
    report: DiagnoseReport | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def require_report(self) -> DiagnoseReport:
        return produced(self.report, "the detect step")


def detect(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    if not ctx.paths:
        raise BadInputError("diagnose", "no input given")
    if sum(p == STDIN for p in ctx.paths) > 1:
        raise BadInputError(STDIN, "standard input can be read only once")
    for i, path in enumerate(ctx.paths):
        progress(step.id, path, i / len(ctx.paths))
        ctx.detected.append(detect_input(path, ctx.stdin))
    if ctx.compare is not None:
        ctx.baseline = _detect_baseline(ctx.compare, ctx.detected)
    # constructed, not validated: the detector's fields are typed already, and the report models (built on
    # first use) then have their validators and serializers built only when the report is written as JSON
    ctx.report = DiagnoseReport.model_construct(
        inputs=[
            InputSummary.model_construct(
                path=d.path, kind=d.kind, detail=d.detail, files=[str(f) for f in d.files]
            )
            for d in ctx.detected
        ],
        top=ctx.top,
        notes=[note for d in ctx.detected for note in d.notes],
    )


def crash_logs(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    """Every readable text goes to the crash rules: logs, and metrics reports (their counters show
    recompilation and CPU fallbacks); several logs of one job are then read together (multihost).
    The rules are imported only when there is text to match (a profile alone does not load them)."""
    if not any(d.kind in ("crash_log", "metrics_report") for d in ctx.detected):
        return
    from tpu_runtime.diagnose.crashlog import diagnose_log
    from tpu_runtime.diagnose.multihost import job_notes

    report = ctx.require_report()
    for kind in ("crash_log", "metrics_report"):
        for item in _timed(ctx, step, progress, kind):
            # a log a user gives may be placed by the text classifier when nothing else places it (crashlog)
            crash = diagnose_log(_text(item, report.notes), item.path, classifier=kind == "crash_log")
            if kind == "crash_log" or crash.category != "unknown":
                report.crashes.append(crash)
    report.notes.extend(job_notes(report.crashes))


def profiles(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    """Summarise the first profile; with `--compare`, also the baseline, and what changed between them."""
    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "xspace"):
        if report.profile is not None:
            report.notes.append(
                f"{item.path}: only the first profile is summarised in `profile`; compare two profiles "
                "with --compare"
            )
            continue
        report.profile = _profile(item, ctx.top)
    if ctx.baseline is not None and report.profile is not None:
        from tpu_runtime.diagnose.profile_compare import compare_profiles

        progress(step.id, f"baseline {ctx.baseline.path}", 0.5)
        start = time.perf_counter()
        baseline = _profile(ctx.baseline, ctx.top)
        report.timings[ctx.baseline.path] = round(time.perf_counter() - start, 3)
        report.comparison = compare_profiles(baseline, report.profile)  # says itself what it refuses


def torch_traces(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "torch_trace"):
        from tpu_runtime.diagnose.torch_trace import analyze_torch_trace

        report.torch_traces.append(analyze_torch_trace(item.files[0], ctx.top, progress))


def xla_dumps(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    """XLA dump folders, and PyTorch/XLA metrics reports (the other compile-side evidence).

    Each analyser is imported with its first input (here and in the steps above), so a command
    loads only the readers its inputs need."""
    report = ctx.require_report()
    for item in _timed(ctx, step, progress, "xla_dump"):
        from tpu_runtime.diagnose.xla_dump import analyze_xla_dump

        report.xla_dumps.append(analyze_xla_dump(item.files, item.path, ctx.top, progress))
    for item in _timed(ctx, step, progress, "metrics_report"):
        from tpu_runtime.diagnose.metrics import analyze_metrics

        report.metrics.append(analyze_metrics(_text(item, []), item.path))


def findings(ctx: DiagnoseContext, step: Step, progress: ProgressFn) -> None:
    """One list across all inputs: crashes first within a severity, then by input order."""
    report = ctx.require_report()
    metrics_sources = {m.source for m in report.metrics}
    ranked: list[Finding] = [_crash_finding(c) for c in report.crashes if c.source not in metrics_sources]
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


def _text(item: DetectedInput, notes: list[str]) -> str:
    """The input's text (standard input as given; files through read_log: compressed, UTF-16, huge)."""
    from tpu_runtime.diagnose.jsonlog import unwrap
    from tpu_runtime.diagnose.logtext import read_log

    if item.text is not None:
        text, found = item.text, []
    else:
        log = read_log(item.files[0], item.compression, item.encoding)
        text, found = log.text, list(log.notes)
    unwrapped = unwrap(text, item.files[0].name if item.files else item.path)
    if unwrapped is not None:  # a notebook or a JSON log export: the lines it holds, as a plain log
        text = unwrapped.text  # (ANSI codes of a notebook's traceback: the crash rules normalise)
        found.append(unwrapped.note)
    for note in found:
        if note not in notes:
            notes.append(note)
    return text


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


def _detect_baseline(compare: str, detected: list[DetectedInput]) -> DetectedInput:
    """The `--compare` input: an XProf profile, and only when some PATH is a profile to compare with it."""
    if compare == STDIN:
        raise BadInputError(compare, "--compare takes a profile file or folder, not standard input")
    baseline = detect_input(compare)
    if baseline.kind != "xspace":
        raise BadInputError(
            compare,
            f"--compare takes an XProf profile (*.xplane.pb or its run folder), but this is a "
            f"{baseline.kind.replace('_', ' ')}",
        )
    if not any(d.kind == "xspace" for d in detected):
        raise BadInputError(compare, "--compare needs an XProf profile among the inputs to compare it with")
    return baseline


def _profile(item: DetectedInput, top: int) -> ProfileSummary:
    """The XProf summary; a profile the reader cannot read becomes a one-line BadInputError."""
    from tpu_runtime.diagnose.profile import analyze_profile

    try:
        return analyze_profile(Path(item.path), top)
    except ValueError as exc:  # the reader's ProfileReadError: a profile it cannot read
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BadInputError(item.path, message.removeprefix(f"{item.path}: ")) from None
