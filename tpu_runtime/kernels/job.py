"""`kernel check` as one call from a front end: a request in, a `KernelCheckReport` out.

The kernel file is user code, so stages 1-5 run in a child process (`sandbox_run.run_in_child`): the
steps of workflows/kernel.yaml in `tpu_runtime.kernels.check`; stage 6 (timing) runs here, through the
approval gate of the workflow runner.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from tpu_runtime.kernels.remote_timing import TimingOptions
from tpu_runtime.kernels.report import CPU_STAGES, KernelCheckReport, StageName, stage_result
from tpu_runtime.kernels.sandbox_run import (
    KernelToolError,
    canonical_generations,
    require_timing_target,
    run_in_child,
)
from tpu_runtime.progress import ProgressFn

if TYPE_CHECKING:
    from tpu_runtime.remote.gated import Approver

__all__ = [
    "DEFAULT_GENERATIONS",
    "KernelCheckRequest",
    "KernelToolError",
    "canonical_generations",
    "require_timing_target",
    "run_in_child",
    "run_kernel_check",
]

DEFAULT_GENERATIONS = ["v5e", "v5p", "v6e", "tpu7x"]

#: What the report says for stage 5 when the person left it out with --no-torch.
NO_TORCH = (
    "not run: left out with --no-torch. This stage imports torch and torch_tpu in a process of its own "
    "(4-7 s of CPU, most of a check on 2 cores); without it nothing shows that torch.tpu.pallas.jax_op "
    "accepts the kernel or that its fake-tensor output shapes match the kernel's"
)


class KernelCheckRequest(BaseModel):
    file: Path
    params: dict[str, Any] = {}
    shapes: list[dict[str, int]] | None = None
    target_shape: dict[str, int] | None = None
    generations: list[str] = Field(default_factory=lambda: list(DEFAULT_GENERATIONS))
    stages: list[StageName] = Field(default_factory=lambda: list(CPU_STAGES))
    seed: int | None = None
    no_torch: bool = Field(default=False, description="leave out stage 5 and say so in the report")
    timeout_s: float = Field(default=600.0, gt=0)
    memory_gb: float = Field(default=0.0, ge=0)
    timing: TimingOptions = Field(
        default_factory=TimingOptions, description="stage 6 on a TPU target, after approval"
    )


def run_kernel_check(
    request: KernelCheckRequest, progress: ProgressFn | None = None, approver: Approver | None = None
) -> KernelCheckReport:
    """Run `kernel check` on one file; raises KernelToolError for bad input or a kernel that hangs.

    With `request.timing.target`, stage 6 times the kernel there once the person approves it
    (`approver`: a front end's prompt; without one the request waits for `tpu-agent approvals approve`).
    """
    path = request.file.expanduser().resolve()
    if not path.is_file():
        raise KernelToolError(f"no such kernel file: {request.file}")
    if request.timing.target:
        require_timing_target(request.timing.target)
    generations = canonical_generations(request.generations) if "compile" in request.stages else []
    payload = request.model_dump(mode="json")
    payload.pop("timeout_s")
    payload.pop("memory_gb")
    payload.pop("timing")
    payload.pop("no_torch")
    payload.update({"file": str(path), "generations": generations or ["v6e"]})
    if request.no_torch:
        payload["stages"] = [s for s in payload["stages"] if s != "torch"]

    def on_progress(stage: str, fraction: float) -> None:
        if progress:
            progress(stage, f"kernel check: {stage}", fraction)

    result = run_in_child(
        "tpu_runtime.kernels.check:check_entry", payload, request.timeout_s, request.memory_gb, on_progress
    )
    report = KernelCheckReport.model_validate(result)
    if not generations:
        report.generations = []
    if request.no_torch and "torch" in request.stages:
        skipped = stage_result("torch", "skip", NO_TORCH)
        at = next((i for i, s in enumerate(report.stages) if s.stage == "timing"), len(report.stages))
        report.stages.insert(at, skipped)
    if request.timing.target:
        from tpu_runtime.kernels.child import CheckOptions
        from tpu_runtime.kernels.steps import KernelContext
        from tpu_runtime.workflow import run_workflow

        context = KernelContext(
            options=CheckOptions(file=str(path)), report=report, timing=request.timing, approver=approver
        )
        run_workflow("kernel", context, progress, only=["timing"], announce=False)
    return report
