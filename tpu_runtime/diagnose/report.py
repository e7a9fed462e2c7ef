"""The one report model of `tpu-agent diagnose`; every front end renders this and nothing else.

JSON schema (`DiagnoseReport.model_dump(mode="json")`; the full JSON Schema with field descriptions comes
from `DiagnoseReport.model_json_schema()`). `schema_version` changes whenever a field is renamed or
removed. Top level:

- `inputs`: one entry per PATH: `path`, detected `kind` (crash_log, xspace, torch_trace, xla_dump,
  metrics_report) and how it was recognised.
- `crashes`: one `CrashDiagnosis` per crash log, with `category` (hbm_oom, vmem_oom,
  mosaic_compile_error, xla_compile_error, unsupported_op, recompilation, runtime_init_failure,
  version_mismatch, collective_timeout, host_oom, shape_dtype_error, unknown), `facts`, `cause`, `fix`,
  `citations` ({label, url} and, for crash logs, the knowledge-base fact `kb` with `kb_text` and
  `kb_source`), `evidence` (`lines`: the log lines that decided the category; `fix_rule`: the
  sub-rule that chose the fix, e.g. `hbm_oom/tile_padding`, or the category itself when no sub-rule
  applied; `fix_reason`: the facts that made it apply) and `confidence` at the top level. An `unknown`
  crash carries the error lines found, the frameworks and versions seen and the next diagnostic steps.
- `torch_traces`: one `TorchTraceSummary` per torch.profiler trace (top ops by self time, steps and the
  gaps between them, data loader stalls, host-device syncs).
- `xla_dumps`: one `XlaDumpSummary` per `--xla_dump_to` folder (modules, recompilations, fusions,
  largest buffers, collectives).
- `metrics`: one `MetricsSummary` per PyTorch/XLA metrics report.
- `profile`: the XProf profile summary (`*.xplane.pb`; `tpu_runtime.diagnose.profile_model.ProfileSummary`),
  or null when no input is a profile.
- `comparison`: with `--compare OTHER`, what changed from the baseline profile OTHER to `profile`
  (`ProfileComparison`: headline metrics and the ops of both top lists), else null.
- `findings`: what to change, across all inputs, most severe first, each with a concrete `fix`,
  `citations` and the input it came from (`source`); each summary also keeps its own `findings`.

Sizes are bytes, durations milliseconds unless a field name says otherwise (`*_us`: microseconds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

from tpu_runtime import model_base

if TYPE_CHECKING or not model_base.PLAIN:
    from pydantic import Field
else:  # the plain terminal report of a profile (tpu_runtime.model_base)
    from tpu_runtime.model_base import plain_field as Field

from tpu_runtime.diagnose.profile_model import ProfileComparison, ProfileSummary, ReportModel

SCHEMA_VERSION = 2

Category = Literal[
    "hbm_oom",
    "vmem_oom",
    "mosaic_compile_error",
    "xla_compile_error",
    "unsupported_op",
    "recompilation",
    "runtime_init_failure",
    "version_mismatch",
    "collective_timeout",
    "host_oom",
    "shape_dtype_error",
    "unknown",
]
CATEGORIES: tuple[Category, ...] = get_args(Category)
InputKind = Literal["crash_log", "xspace", "torch_trace", "xla_dump", "metrics_report"]
Severity = Literal["high", "medium", "low", "info"]


KB_ID_PATTERN = r"^tpu-err:[a-z0-9-]+$"


class Citation(ReportModel):
    """A public source for a cause or a fix: a short label and the URL of the official page.

    A crash-log citation may also name the knowledge-base fact behind it (`kb`, a stable id from
    knowledge/errors.md) with that fact's sentence and the URL the sentence restates, so an agent can
    quote the team's own wording and look the id up with the knowledge tools.
    """

    label: str
    url: str
    kb: str | None = Field(
        default=None,
        pattern=KB_ID_PATTERN,
        description="the knowledge-base fact id (knowledge/errors.md), e.g. 'tpu-err:hbm-oom-compile'",
    )
    kb_text: str = Field(
        default="", description="the knowledge base's sentence for `kb` (what the error means), in our words"
    )
    kb_source: str | None = Field(default=None, description="the public URL that `kb_text` restates")


class Finding(ReportModel):
    """One thing worth changing, found in a trace, a dump or a metrics report."""

    kind: str = Field(description="machine-readable name, e.g. 'host_sync', 'dataloader_stall'")
    severity: Severity
    message: str = Field(description="what the data shows, with the numbers")
    fix: str = Field(default="", description="what to change, concretely")
    citations: list[Citation] = []
    source: str = Field(default="", description="the input it came from (set in the report's ranked list)")


class InputSummary(ReportModel):
    path: str = Field(description="as given on the command line; '-' is standard input")
    kind: InputKind
    detail: str = Field(description="how the kind was recognised, and which files were read")
    files: list[str] = Field(default=[], description="the files read (profile runs, dump folders)")


# ------------------------------------------------------------------------------------------ crash logs


class CrashEvidence(ReportModel):
    """Why a crash got its category and its fix: quoted log lines and the rule that chose the fix."""

    lines: list[str] = Field(
        default=[], description="the log lines that decided the category (prefixes removed)"
    )
    fix_rule: str = Field(
        default="",
        description="the sub-rule that chose the fix ('<category>/<id>'), or the category when none applied",
    )
    fix_reason: str = Field(default="", description="the facts that made that sub-rule apply, in words")


class CrashDiagnosis(ReportModel):
    """What a crash log says failed, why, and what to do about it."""

    source: str = Field(description="the log's path, or '-' for standard input")
    category: Category
    title: str = Field(description="the category in words")
    summary: str = Field(default="", description="one line with the key numbers, when the log has them")
    facts: dict[str, Any] = Field(
        description="what the log holds: sizes in bytes (*_bytes), shapes, kernel/op, TPU generation, "
        "the user's source line (source_file, source_line, source_function, source_code), exception"
    )
    cause: str
    fix: str
    citations: list[Citation]
    evidence: CrashEvidence = Field(description="the lines that decided the category and the fix's sub-rule")
    confidence: float = Field(
        ge=0.0,
        le=1.0,
        description="how specific the matched patterns are: about 0.9 for an error's own signature, "
        "0.5-0.7 for generic wording; 0 for 'unknown'",
    )
    other_matches: list[Category] = Field(
        default=[], description="other categories whose patterns also matched, weaker or earlier"
    )
    lines: int = Field(description="lines read")

    def with_fallback_fix(
        self,
        *,
        facts: dict[str, Any],
        fix: str,
        citation: Citation,
        fix_rule: str,
        fix_reason: str,
        lines: list[str] | None = None,
    ) -> CrashDiagnosis:
        """This diagnosis with a fix found after the rules (a similar known error, a fact of the sheets):
        its citation goes first and its sub-rule and reason become the evidence."""
        return self.model_copy(
            update={
                "facts": facts,
                "fix": fix,
                "citations": [citation, *(c for c in self.citations if c.url != citation.url)],
                "evidence": CrashEvidence(
                    lines=self.evidence.lines if lines is None else lines,
                    fix_rule=fix_rule,
                    fix_reason=fix_reason,
                ),
            }
        )


# ------------------------------------------------------------------------------------ torch.profiler


class OpStat(ReportModel):
    """One op name aggregated over a trace; self time excludes the ops nested inside it."""

    name: str
    side: Literal["host", "device"]
    count: int
    self_us: float
    total_us: float
    self_pct: float = Field(description="share of all self time on its side, in percent")


class StepStat(ReportModel):
    """One ProfilerStep#N on the step timeline."""

    step: int
    start_ms: float = Field(description="from the first step's start")
    duration_ms: float
    gap_before_ms: float | None = Field(description="idle time since the previous step ended")
    dataloader_ms: float = Field(description="time in enumerate(DataLoader) events inside the step")
    syncs: int = Field(description="host-device syncs inside the step")


class SyncStat(ReportModel):
    """A host-device sync (the host waits for a device value), grouped by op and user source line."""

    name: str
    count: int
    total_us: float
    source: str | None = Field(
        description="innermost user Python frame above it (traces recorded with_stack=True): 'file:line "
        "(function)', the line being where torch.profiler saw the frame start, not the sync's own line"
    )


class StallStat(ReportModel):
    """Time spent waiting for the data loader, per step and in total."""

    count: int
    total_ms: float
    max_ms: float
    mean_ms: float
    share_of_steps_pct: float | None = Field(description="data loader time over step time, in percent")
    slow_steps: list[int] = Field(description="steps where the loader took a quarter of the step or more")


class TorchTraceSummary(ReportModel):
    source: str
    format: str = Field(description="'json' or 'json.gz'")
    events: int
    threads: int
    span_ms: float = Field(description="first event start to last event end")
    device_events: int = Field(description="device-side events (kernels, memcpy, TPU ops); 0 on CPU traces")
    host_ops: list[OpStat]
    device_ops: list[OpStat]
    steps: list[StepStat]
    steps_truncated: int = Field(default=0, description="steps left out of `steps` (the list is capped)")
    step_ms: dict[str, float] = Field(description="min, median, mean, max step time")
    gap_ms: dict[str, float] = Field(description="total, max, mean gap between consecutive steps")
    dataloader: StallStat | None
    syncs: list[SyncStat]
    findings: list[Finding]
    notes: list[str] = []


# ---------------------------------------------------------------------------------------- XLA dumps


class XlaModule(ReportModel):
    """One compiled HLO module in a dump folder."""

    id: str = Field(description="the dump's module number, e.g. '0006'")
    name: str = Field(description="HloModule name, e.g. 'jit_train_step'")
    signature: str = Field(description="entry_computation_layout: parameter and result shapes")
    fingerprint: str = Field(description="hash from the file name if it has one, else of the HLO text")
    instructions: int
    fusions: int
    fusion_kinds: dict[str, int]
    collectives: int
    assigned_bytes: int | None = Field(description="sum of buffer allocations (buffer-assignment file)")
    files: list[str]


class Recompilation(ReportModel):
    """The same module name compiled more than once with different programs."""

    name: str
    compilations: int
    signatures: list[str] = Field(description="distinct parameter/result layouts, in dump order")
    module_ids: list[str]


class BufferStat(ReportModel):
    module: str
    name: str
    size_bytes: int
    shape: str
    allocation: int
    kind: str = Field(description="parameter, output, temp, constant, thread-local ... (buffer assignment)")


class CollectiveStat(ReportModel):
    module: str
    kind: Literal["all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all"]
    name: str
    shape: str
    replica_groups: str = ""
    op_name: str = ""
    source: str | None = Field(default=None, description="user file:line from the HLO metadata")


class XlaDumpSummary(ReportModel):
    source: str
    module_count: int
    distinct_names: int
    modules: list[XlaModule]
    modules_truncated: int = 0
    recompilations: list[Recompilation]
    fusion_total: int
    fusion_kinds: dict[str, int]
    largest_buffers: list[BufferStat]
    collective_counts: dict[str, int]
    collectives: list[CollectiveStat]
    findings: list[Finding]
    notes: list[str] = []


# ----------------------------------------------------------------------------------- metrics reports


class MetricStat(ReportModel):
    name: str
    samples: int
    total: str = Field(description="the accumulator as printed")
    total_seconds: float | None = None


class MetricsSummary(ReportModel):
    source: str
    format: str = Field(description="'pytorch_xla' (met.metrics_report())")
    metrics: list[MetricStat]
    counters: dict[str, int]
    compilations: int | None
    compile_seconds: float | None
    executions: int | None
    device_to_host_transfers: int | None
    fallback_ops: dict[str, int] = Field(description="aten:: counters: ops that ran on the CPU fallback")
    findings: list[Finding]


# ---------------------------------------------------------------------------------------------- report


class DiagnoseReport(ReportModel):
    schema_version: int = SCHEMA_VERSION
    inputs: list[InputSummary]
    crashes: list[CrashDiagnosis] = []
    torch_traces: list[TorchTraceSummary] = []
    xla_dumps: list[XlaDumpSummary] = []
    metrics: list[MetricsSummary] = []
    profile: ProfileSummary | None = Field(
        default=None, description="XProf profile summary of the first profile among the inputs"
    )
    comparison: ProfileComparison | None = Field(
        default=None,
        description="with --compare OTHER: what changed from the baseline profile OTHER to `profile`",
    )
    findings: list[Finding] = Field(
        default=[], description="what to change, across all inputs, most severe first (crashes lead)"
    )
    top: int = Field(description="rows per table (--top)")
    timings: dict[str, float] = Field(
        default={}, description="seconds per input (keyed by path) and per workflow step ('step:<id>')"
    )
    notes: list[str] = []
