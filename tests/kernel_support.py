"""One way for kernel tests to check a kernel file in this process, so the check tests agree on it."""

from __future__ import annotations

from pathlib import Path

from tpu_runtime.kernels.report import KernelCheckReport, StageResult

KERNELS = Path(__file__).resolve().parent / "data" / "kernels"


def check_file(path: Path, stages: list[str], **options: object) -> KernelCheckReport:
    """Run `tpu-agent kernel check`'s stages on one file here (the child environment already prepared)."""
    from tpu_runtime.kernels.check import CheckOptions, run_check
    from tpu_runtime.kernels.convention import load_kernel_module

    return run_check(load_kernel_module(path), CheckOptions(file=str(path), stages=stages, **options))  # type: ignore[arg-type]


def verdicts(report: KernelCheckReport) -> dict[str, str]:
    """Each stage's verdict by stage name."""
    return {s.stage: s.verdict for s in report.stages}


def all_pass(*stages: str) -> dict[str, str]:
    """The verdicts of a kernel passing every CPU stage it ran: timing needs a real TPU, so it is not run."""
    return {stage: "pass" for stage in stages} | {"timing": "not_run"}


def stage_with(report: KernelCheckReport, name: str, verdict: str) -> StageResult:
    """The report's stage `name`, asserted to have run with `verdict`."""
    stage = report.stage(name)
    assert stage is not None and stage.verdict == verdict, stage.message if stage else report
    return stage
