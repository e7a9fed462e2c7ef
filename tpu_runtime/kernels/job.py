"""`kernel check` as one call from a front end: a request in, a `KernelCheckReport` out.

The kernel file is user code, so everything that imports it runs in a child process
(`tpu_runtime.sandbox.run_child`) with a time and memory limit; a kernel that hangs, crashes or exhausts
memory ends as a `KernelToolError` with one line that says which stage was running.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from tpu_runtime.errors import BadInput
from tpu_runtime.kernels.remote_timing import TimingOptions
from tpu_runtime.kernels.report import CPU_STAGES, KernelCheckReport, StageName
from tpu_runtime.progress import ProgressFn

if TYPE_CHECKING:
    from tpu_runtime.remote.gated import Approver

DEFAULT_GENERATIONS = ["v5e", "v5p", "v6e", "tpu7x"]


class KernelToolError(BadInput):
    """The kernel could not be checked or tuned at all; `message` is one line, `detail` the log tail."""

    def __init__(self, message: str, detail: str = "", kind: str = "bad_input") -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail
        self.kind = kind


def require_timing_target(name: str) -> None:
    """A timing target that is not in the person's targets file ends the job before it starts."""
    from tpu_runtime.remote.targets import TargetError, require_target

    try:
        require_target(name)
    except TargetError as exc:
        raise KernelToolError(str(exc)) from None


class KernelCheckRequest(BaseModel):
    file: Path
    params: dict[str, Any] = {}
    shapes: list[dict[str, int]] | None = None
    target_shape: dict[str, int] | None = None
    generations: list[str] = Field(default_factory=lambda: list(DEFAULT_GENERATIONS))
    stages: list[StageName] = Field(default_factory=lambda: list(CPU_STAGES))
    seed: int | None = None
    timeout_s: float = Field(default=600.0, gt=0)
    memory_gb: float = Field(default=0.0, ge=0)
    timing: TimingOptions = Field(
        default_factory=TimingOptions, description="stage 6 on a TPU target, after approval"
    )


def canonical_generations(names: list[str]) -> list[str]:
    """Validate generation names against knowledge/chips.yaml; raises KernelToolError with the known list."""
    from tpu_runtime.chips import UnknownChipError, get_chip

    out: list[str] = []
    for name in names:
        try:
            canonical = get_chip(name).name
        except UnknownChipError as exc:
            raise KernelToolError(str(exc)) from None
        if canonical not in out:
            out.append(canonical)
    return out


def _limits(timeout_s: float, memory_gb: float) -> Any:
    from tpu_runtime.sandbox import Limits

    return Limits(timeout_s=timeout_s, memory_bytes=int(memory_gb * 2**30))


def run_in_child(
    target: str,
    payload: dict[str, Any],
    timeout_s: float,
    memory_gb: float,
    on_progress: Callable[[str, float], None] | None = None,
) -> dict[str, Any]:
    """run_child with kernel wording for every way the child can fail."""
    from tpu_runtime.sandbox import ChildFailure, run_child

    last = {"stage": "starting"}

    def track(stage: str, fraction: float) -> None:
        last["stage"] = stage
        if on_progress:
            on_progress(stage, fraction)

    try:
        result = run_child(target, payload, _limits(timeout_s, memory_gb), on_progress=track)
    except ChildFailure as failure:
        stage = last["stage"].split(":")[0]
        if failure.kind == "timeout":
            message = (
                f"the kernel did not finish within {timeout_s:.0f} s (during: {stage}) and was stopped; "
                "a kernel "
                "that hangs (a loop that never ends, a semaphore never signalled) or --timeout too small"
            )
        elif failure.kind == "memory":
            message = (
                f"the kernel used too much host memory (during: {stage}) and was stopped: {failure.message}"
            )
        elif failure.kind == "crashed":
            how = re.search(r"\((.*?)\)", failure.message)
            cause = how.group(1) if how else "no result"
            message = f"the process running the kernel died ({cause}) during: {stage}"
        else:
            message = failure.message
        raise KernelToolError(message, failure.detail, failure.kind) from None
    result.pop("_child", None)
    return result


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
    payload.update({"file": str(path), "generations": generations or ["v6e"]})

    def on_progress(stage: str, fraction: float) -> None:
        if progress:
            progress(stage, f"kernel check: {stage}", fraction)

    result = run_in_child(
        "tpu_runtime.kernels.check:check_entry", payload, request.timeout_s, request.memory_gb, on_progress
    )
    report = KernelCheckReport.model_validate(result)
    if not generations:
        report.generations = []
    if request.timing.target:
        from tpu_runtime.kernels.remote_timing import timing_stage

        if progress:
            progress("timing", f"kernel check: timing on {request.timing.target}", 0.0)
        stage = timing_stage(
            report,
            path,
            request.timing,
            approver,
            (lambda line: progress("timing", line, 0.5)) if progress else None,
        )
        report.stages = [stage if s.stage == "timing" else s for s in report.stages]
        if stage.verdict == "fail":
            report.verdict = "fail"
    return report


def describe_kernel(path: Path, timeout_s: float = 120.0) -> dict[str, Any]:
    """The module's declarations (DEFAULTS, SPACE, parameters...), read in a child; validates the file."""
    return run_in_child("tpu_runtime.kernels.check:describe_entry", {"file": str(path)}, timeout_s, 0.0)
