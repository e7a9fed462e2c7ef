"""The profile summary and comparison as report models: what `diagnose` returns for an XProf profile.

Kept apart from the analysis (`profile.py`, numpy and the protobuf reader) so that a report, a renderer
or an MCP schema can name these types without loading what only reading a profile needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tpu_runtime import model_base

if TYPE_CHECKING or not model_base.PLAIN:
    from pydantic import BaseModel, ConfigDict, Field
else:  # the plain terminal report of a profile (tpu_runtime.model_base)
    from tpu_runtime.model_base import PlainModel as BaseModel
    from tpu_runtime.model_base import plain_config as ConfigDict
    from tpu_runtime.model_base import plain_field as Field

SCHEMA_VERSION = 1

Bound = Literal["compute", "memory", "unknown"]
TimeClass = Literal["compute", "hbm", "collectives", "host_transfers", "idle", "other"]
Verdict = Literal["compute_bound", "hbm_bound", "collective_bound", "transfer_bound", "host_bound", "unknown"]
#: The verdict given when a class holds the largest share of the device time.
VERDICT_OF: dict[TimeClass, Verdict] = {
    "compute": "compute_bound",
    "hbm": "hbm_bound",
    "collectives": "collective_bound",
    "host_transfers": "transfer_bound",
    "idle": "host_bound",
    "other": "unknown",
}
TIME_CLASS_WORDS: dict[TimeClass, str] = {
    "compute": "compute-bound ops",
    "hbm": "HBM-bound ops",
    "collectives": "collectives",
    "host_transfers": "host transfers",
    "idle": "idle (waiting on the host)",
    "other": "ops without a roofline verdict",
}
PeakSource = Literal["device_plane", "chip_table", "none"]


# --- the report model ----------------------------------------------------------------------------


class ReportModel(BaseModel):
    """Base of every report model (here and in `report.py`): pydantic builds a model's validator and
    serializer when it is first used, as by `--json`, an MCP schema or a crash log, instead of at import
    (`defer_build`). The profile analyser constructs its models from fields it has typed itself
    (`model_construct`), so a terminal report of a profile never builds them (tests/test_profile.py checks
    that validation would make the same summary)."""

    model_config = ConfigDict(defer_build=True)


class Peaks(ReportModel):
    """Peak rates one TPU core can reach, and where they came from."""

    teraflops_per_second: float | None = None
    hbm_gigabytes_per_second: float | None = Field(default=None, description="decimal GB/s")
    ridge_flops_per_byte: float | None = Field(
        default=None, description="operational intensity above which an op is compute-bound"
    )
    source: PeakSource = "none"
    chip: str | None = Field(default=None, description="generation in knowledge/chips.yaml, e.g. 'v6e'")


class DeviceTime(ReportModel):
    """Busy and idle time of the TPU chips, summed over chips."""

    chips: int
    busy_ms: float
    idle_ms: float
    busy_percent: float
    idle_percent: float


class StepStats(ReportModel):
    """Step time and what the device did within a step (means over all steps of all cores)."""

    source: str = Field(description="'Steps line', or the XLA module whose runs were taken as steps")
    count: int = Field(
        description="steps of the run: the most step windows one core shows (every chip of a host, and "
        "every host of a job, runs the same steps)"
    )
    windows: int = Field(default=0, description="step windows over all cores, which the means are taken over")
    mean_ms: float
    min_ms: float
    max_ms: float
    stdev_ms: float
    compute_ms: float = Field(description="device busy time within a step")
    idle_ms: float = Field(description="device idle time within a step (waiting on the host)")
    idle_percent: float


class TopOp(ReportModel):
    """One HLO op, over all its runs on all TensorCores, with the roofline verdict and its origin."""

    rank: int
    name: str
    category: str
    program: str = Field(description="XLA module name (or program id when the name is unknown)")
    program_id: str
    occurrences: int
    self_time_ms: float = Field(description="summed over runs and cores")
    total_time_ms: float
    avg_self_time_us: float
    percent_of_device_time: float = Field(description="share of the summed program time of all cores")
    flops: int = Field(description="per run, from XLA's cost analysis in the op metadata")
    bytes_accessed: int = Field(description="per run")
    gflops_per_second: float
    gigabytes_per_second: float | None = Field(
        description="bytes over self time; None when that is above the chip's peak HBM bandwidth (the time "
        "is too short to hold the transfer: an async half, or a wait hidden behind other work)"
    )
    operational_intensity: float | None = Field(description="FLOPs per byte; None without bytes")
    bound: Bound
    time_class: TimeClass = Field(
        default="other", description="what the op's time counts as (time_breakdown)"
    )
    paired_with: str | None = Field(
        default=None,
        description="the async start op folded into this done op: its time is added, its bytes counted once",
    )
    framework_op: str | None = Field(default=None, description="the JAX/PyTorch op (tf_op stat)")
    source: str | None = Field(default=None, description="user source file:line behind the op")
    expression: str | None = Field(default=None, description="the HLO instruction, shortened")


class TimeShare(ReportModel):
    """One class of device time (compute, HBM-bound ops, collectives, host transfers, idle)."""

    time_class: TimeClass
    label: str
    ms: float = Field(description="op self time of the class (idle: the duty-cycle idle), summed over cores")
    percent: float = Field(description="share of the device time: all op self time plus idle")


class CategoryTime(ReportModel):
    category: str
    self_time_ms: float
    percent_of_busy: float


class Roofline(ReportModel):
    """The whole program on the roofline: all ops' FLOPs and bytes over the summed program time."""

    total_flops: int
    total_bytes: int
    program_time_ms: float
    gflops_per_second: float
    gigabytes_per_second: float
    operational_intensity: float | None
    bound: Bound
    flops_utilization_percent: float | None = Field(description="of the peak FLOP/s of all cores")
    hbm_utilization_percent: float | None = Field(description="of the peak HBM bandwidth of all cores")


class HostEvent(ReportModel):
    name: str
    self_time_ms: float
    count: int


class HostSummary(ReportModel):
    """What the host threads did (the only view of a profile without TPU planes)."""

    threads: int
    events: int
    top_events: list[HostEvent]


class ProfileSummary(ReportModel):
    """Everything `tpu-agent diagnose` says about one profile; sized by `top`, never raw events."""

    schema_version: int = SCHEMA_VERSION
    path: str
    files: list[str]
    hosts: list[str]
    bytes: int
    is_tpu: bool
    device_kind: str | None = None
    device_count: int = Field(default=0, description="TensorCore planes (/device:TPU:N)")
    chip_count: int = 0
    other_devices: dict[str, int] = Field(default_factory=dict, description="non-TensorCore device planes")
    profile_duration_ms: float | None = None
    peaks: Peaks | None = None
    device_time: DeviceTime | None = None
    steps: StepStats | None = None
    bound_by: Verdict = "unknown"
    bound_reason: str = ""
    time_breakdown: list[TimeShare] = Field(
        default_factory=list,
        description="device time by class, largest first; the verdict is the largest share",
    )
    roofline: Roofline | None = None
    mxu_utilization_percent: float | None = None
    categories: list[CategoryTime] = Field(default_factory=list)
    distinct_ops: int = 0
    top_ops: list[TopOp] = Field(default_factory=list)
    host: HostSummary | None = None
    notes: list[str] = Field(default_factory=list)
    profiler_errors: list[str] = Field(default_factory=list)


# --- comparing two profiles ----------------------------------------------------------------------------

OpStatus = Literal["added", "removed", "faster", "slower", "unchanged"]


class MetricChange(ReportModel):
    name: str
    before: float | None
    after: float | None
    change_percent: float | None


class OpChange(ReportModel):
    """One op of either top list. 'added'/'removed' mean it entered or left the top list."""

    name: str
    program: str
    status: OpStatus
    before_avg_us: float | None = None
    after_avg_us: float | None = None
    before_self_ms: float | None = None
    after_self_ms: float | None = None
    change_percent: float | None = Field(default=None, description="of the average time per run")


class ProfileComparison(ReportModel):
    before: str
    after: str
    threshold_percent: float
    metrics: list[MetricChange]
    ops: list[OpChange]
    summary: str
    comparable: str = Field(default="all figures", description="what the two profiles share to compare")
    refused: str | None = Field(
        default=None, description="one line on what is not compared and why (profiles of different kinds)"
    )
