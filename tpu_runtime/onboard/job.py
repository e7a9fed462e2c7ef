"""`onboard` as one call: a request in, an `OnboardReport` out. Front ends call this and render."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, model_validator

from tpu_runtime.onboard.capture_types import ModelProbe
from tpu_runtime.onboard.report import (
    KVDtype,
    ModelInfo,
    NumericsReport,
    OnboardReport,
    OpUse,
    PrecisionMode,
    Preflight,
    Remedy,
    Risk,
    ServingPlan,
    WeightDtype,
)
from tpu_runtime.progress import ProgressFn
from tpu_runtime.workflow import run_workflow

if TYPE_CHECKING:
    from tpu_runtime.remote.gated import Approver


KV_DTYPE_BYTES: dict[str, int] = {"f32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}


class OnboardRequest(BaseModel):
    model_file: Path | None = None
    hf_config: Path | None = Field(
        default=None, description="a Hugging Face config.json (or the folder holding it) instead of a file"
    )
    weight_dtype: WeightDtype | None = Field(default=None, description="weights as served; default: as built")
    kv_cache_dtype: KVDtype | None = Field(default=None, description="KV cache elements; default: weights'")
    entry: str | None = None
    batch: int | None = Field(default=None, ge=1)
    seq: int | None = Field(default=None, ge=1)
    shrink: Literal["auto", "always", "never"] = "auto"
    shrink_above_params: int = 100_000_000  # GPT-2 small and up: same op set, a fraction of the time
    numerics: bool = True
    modes: list[PrecisionMode] = ["default", "high", "highest", "bf16"]
    fake_tpu: bool = True
    xla: str = "auto"  # 'auto', 'none', 'all' or a comma-separated list of generations
    timeout_s: float = 600.0
    memory_gb: float = 0.0  # 0: three quarters of the machine
    # The device numerics check (tpu_runtime.onboard.device_check) runs on this target after approval.
    target: str | None = None
    device_workers: str = "all"  # all, one index, or a comma list
    device_python: str = "python3"  # the interpreter on the TPU VM
    device_env: dict[str, str] = {}  # environment of the device run, shown for approval
    device_time_limit_s: float = Field(default=1800.0, gt=0)

    @model_validator(mode="after")
    def _one_source(self) -> OnboardRequest:
        if (self.model_file is None) == (self.hf_config is None):
            raise ValueError("give exactly one of a model file and --hf-config")
        if self.hf_config is not None and self.target:
            raise ValueError("--target compares layers of a model file on the device; --hf-config has none")
        return self

    @property
    def source_path(self) -> Path:
        """The model file, or the Hugging Face config it was asked to build."""
        path = self.model_file or self.hf_config
        assert path is not None  # the validator guarantees one
        return path

    @property
    def source_dir(self) -> Path:
        path = self.source_path.resolve()
        return path if path.is_dir() else path.parent


@dataclass
class OnboardContext:
    """What the steps of workflows/onboard.yaml read and write, in order."""

    request: OnboardRequest
    approver: Approver | None = None  # the front end's prompt for the device run; None: leave it pending
    probe: ModelProbe | None = None
    op_table_source: str = ""
    ops: list[OpUse] = field(default_factory=list)
    tpu_ops: list[OpUse] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    remedies: list[Remedy] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)
    numerics: NumericsReport | None = None
    preflight: Preflight | None = None
    serving: ServingPlan | None = None
    model_info: ModelInfo | None = None
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    isolation: str = ""


def run_onboard(
    request: OnboardRequest, progress: ProgressFn | None = None, approver: Approver | None = None
) -> OnboardReport:
    """Raises `tpu_runtime.sandbox.ChildFailure` when the user's model cannot be run.

    With `request.target`, the device numerics step files a run request; `approver` (a front end's
    prompt) lets the person decide on it now, otherwise it waits for `tpu-agent approvals approve`.
    Raises `TargetError` before anything runs when the target is not in the person's targets file.
    """
    from tpu_runtime.onboard.steps import build_report

    if request.target:
        from tpu_runtime.remote.targets import require_target

        require_target(request.target)

    context = run_workflow("onboard", OnboardContext(request=request, approver=approver), progress)
    return build_report(context)
