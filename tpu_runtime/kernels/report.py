"""The report models of `tpu-agent kernel check` and `tpu-agent kernel tune`; front ends render these.

The JSON form (`model_dump(mode="json")`) is the stable schema; `schema_version` changes whenever a field
is renamed or removed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1

Verdict = Literal["pass", "fail", "warn", "skip", "not_run"]
StageName = Literal["correctness", "honesty", "lowering", "compile", "torch", "timing"]
CPU_STAGES: tuple[StageName, ...] = ("correctness", "honesty", "lowering", "compile", "torch")
ALL_STAGES: tuple[StageName, ...] = (*CPU_STAGES, "timing")


class _StageTitles(Mapping[str, str]):
    """Stage name -> '<n>. <title of its step in workflows/kernel.yaml>', read on first use."""

    @cached_property
    def _titles(self) -> dict[str, str]:
        from tpu_runtime.workflow import load_workflow

        steps = load_workflow("kernel").titles()
        return {stage: f"{n}. {steps[stage]}" for n, stage in enumerate(ALL_STAGES, start=1)}

    def __getitem__(self, stage: str) -> str:
        return self._titles[stage]

    def __iter__(self) -> Iterator[str]:
        return iter(self._titles)

    def __len__(self) -> int:
        return len(self._titles)


STAGE_TITLES: Mapping[str, str] = _StageTitles()
TIMING_NOT_RUN = (
    "not run: timing needs a real TPU. It runs only on your TPU VM after you approve the exact command; "
    "no TPU target is configured, and no timing is ever estimated in its place"
)


class CaseResult(BaseModel):
    """One (shape, dtype) run of the kernel against its reference."""

    shape: dict[str, int]
    dtype: str
    verdict: Verdict
    message: str
    max_abs_error: float | None = None
    max_scaled_error: float | None = Field(
        default=None, description="max |out - ref| / (atol + rtol * |ref|); at most 1 passes"
    )
    tolerance: str = ""
    seconds: float = 0.0


class GenerationResult(BaseModel):
    """Stage 4 for one TPU generation: compile, VMEM and the roofline estimate at the target shape."""

    generation: str
    topology: str
    device_kind: str = ""
    verdict: Verdict
    message: str
    compile_seconds: float | None = None
    vmem_bytes: int | None = Field(default=None, description="model: buffered blocks + VMEM scratch, tiled")
    vmem_limit_bytes: int | None = Field(default=None, description="the kernel's vmem_limit_bytes, if set")
    vmem_capacity_bytes: int | None = Field(default=None, description="VMEM per core (knowledge/chips.yaml)")
    hbm_bytes: int | None = Field(
        default=None, description="XLA memory analysis: arguments + outputs + temps"
    )
    flops: float | None = None
    flops_source: str = ""
    hbm_traffic_bytes: float | None = None
    traffic_source: str = ""
    grid_steps: int | None = Field(
        default=None, description="None when the grid size is known only at run time"
    )
    estimate_seconds: float | None = None
    bound: Literal["compute", "memory", "overhead"] | None = None
    peak_flops: float | None = None
    peak_flops_kind: str = Field(default="", description="which published peak: bf16, f32, int8 or fp8")
    hbm_bandwidth: float | None = None
    estimates: list[str] = Field(default=[], description="the figures above that are estimates, and of what")


class StageResult(BaseModel):
    stage: StageName
    title: str
    verdict: Verdict
    message: str
    details: list[str] = []
    seconds: float = 0.0
    cases: list[CaseResult] = []
    generations: list[GenerationResult] = []
    snippet: str | None = None


def stage_result(
    stage: StageName,
    verdict: Verdict,
    message: str,
    *,
    started: float | None = None,
    details: list[str] | None = None,
    cases: list[CaseResult] | None = None,
    generations: list[GenerationResult] | None = None,
    snippet: str | None = None,
) -> StageResult:
    """A stage's result under its title (`STAGE_TITLES`); `started`, the `time.perf_counter()` reading
    taken when the stage began, gives its seconds (0 without it)."""
    return StageResult(
        stage=stage,
        title=STAGE_TITLES[stage],
        verdict=verdict,
        message=message,
        details=details or [],
        seconds=0.0 if started is None else round(time.perf_counter() - started, 3),
        cases=cases or [],
        generations=generations or [],
        snippet=snippet,
    )


class KernelCheckReport(BaseModel):
    """Everything `tpu-agent kernel check FILE` found, stage by stage."""

    schema_version: int = SCHEMA_VERSION
    file: str
    kernel: str
    params: dict[str, Any]
    shapes: list[dict[str, int]]
    dtypes: list[str]
    target_shape: dict[str, int]
    generations: list[str]
    stages: list[StageResult]
    verdict: Literal["pass", "fail", "unchecked"] = Field(
        description="unchecked: nothing failed, but interpret mode could not run the kernel, so its "
        "numbers are unknown"
    )
    seconds: float
    versions: dict[str, str] = {}
    notes: list[str] = []

    def stage(self, name: str) -> StageResult | None:
        return next((s for s in self.stages if s.stage == name), None)


class Attempt(BaseModel):
    """One tuning attempt: a parameter set, every check's verdict, and its estimate."""

    n: int
    params: dict[str, Any]
    verdict: Literal["pass", "fail", "interrupted"]
    stage_verdicts: dict[str, str] = {}
    message: str = ""
    vmem_bytes: int | None = None
    estimate_seconds: float | None = None
    bound: str | None = None
    grid_steps: int | None = None
    measured_seconds: float | None = None
    seconds: float = 0.0
    log: str = ""


class TuneReport(BaseModel):
    """A bounded autotune run: what was tried, what won, by how much, and where the record lives."""

    schema_version: int = SCHEMA_VERSION
    file: str
    run_dir: str
    generation: str
    budget: int
    attempts_used: int
    candidates_total: int
    ranking: str
    resumed: bool
    attempts: list[Attempt]
    best: Attempt | None
    default: Attempt | None
    speedup_over_default: float | None = Field(
        default=None,
        description="default's time / best's time, measured when ranked by measurement, else estimated "
        "(1.0: the default is best)",
    )
    message: str
    notes: list[str] = []
