"""`onboard` as one call: a request in, an `OnboardReport` out. Front ends call this and render."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tpu_runtime.onboard.capture_types import ModelProbe
from tpu_runtime.onboard.report import (
    ModelInfo,
    NumericsReport,
    OnboardReport,
    OpUse,
    PrecisionMode,
    Preflight,
    Remedy,
    Risk,
    ServingPlan,
)
from tpu_runtime.workflow import ProgressFn, run_workflow


class OnboardRequest(BaseModel):
    model_file: Path
    entry: str | None = None
    batch: int | None = Field(default=None, ge=1)
    seq: int | None = Field(default=None, ge=1)
    shrink: Literal["auto", "always", "never"] = "auto"
    shrink_above_params: int = 200_000_000
    numerics: bool = True
    modes: list[PrecisionMode] = ["default", "high", "highest", "bf16"]
    fake_tpu: bool = True
    xla: str = "auto"  # 'auto', 'none', 'all' or a comma-separated list of generations
    timeout_s: float = 600.0
    memory_gb: float = 0.0  # 0: three quarters of the machine


@dataclass
class OnboardContext:
    """What the steps of workflows/onboard.yaml read and write, in order."""

    request: OnboardRequest
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


def run_onboard(request: OnboardRequest, progress: ProgressFn | None = None) -> OnboardReport:
    """Raises `tpu_runtime.sandbox.ChildFailure` when the user's model cannot be run."""
    from tpu_runtime.onboard.steps import build_report

    context = run_workflow("onboard", OnboardContext(request=request), progress)
    return build_report(context)
