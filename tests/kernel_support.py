"""One way for kernel tests to check a kernel file in this process, so the check tests agree on it."""

from __future__ import annotations

from pathlib import Path

from tpu_runtime.kernels.report import KernelCheckReport

KERNELS = Path(__file__).resolve().parent / "data" / "kernels"


def check_file(path: Path, stages: list[str], **options: object) -> KernelCheckReport:
    """Run `tpu-agent kernel check`'s stages on one file here (the child environment already prepared)."""
    from tpu_runtime.kernels.check import CheckOptions, run_check
    from tpu_runtime.kernels.convention import load_kernel_module

    return run_check(load_kernel_module(path), CheckOptions(file=str(path), stages=stages, **options))  # type: ignore[arg-type]
