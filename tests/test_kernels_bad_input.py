"""Bad input through the real path: the kernel file runs in a child process with a time limit, and every
failure to run it at all becomes one clear line (KernelToolError), never a traceback or a hung CLI."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tpu_runtime.kernels.job import KernelCheckRequest, KernelToolError, run_kernel_check
from tpu_runtime.kernels.sandbox_run import describe_kernel

KERNELS = Path(__file__).resolve().parent / "data" / "kernels"


@pytest.mark.slow
def test_import_error_names_the_module_and_line() -> None:
    with pytest.raises(KernelToolError) as caught:
        describe_kernel(KERNELS / "import_error.py", timeout_s=120)
    message = caught.value.message
    assert message.startswith("cannot import import_error.py (line 6)")
    assert "No module named 'not_a_real_module_for_tpu_agent_tests'" in message


@pytest.mark.slow
def test_a_missing_reference_is_named() -> None:
    with pytest.raises(KernelToolError) as caught:
        run_kernel_check(
            KernelCheckRequest(file=KERNELS / "no_reference.py", stages=["correctness"], timeout_s=120)
        )
    assert "no_reference.py has no `reference` function" in caught.value.message
    assert "\n" not in caught.value.message


@pytest.mark.slow
def test_a_hanging_kernel_is_stopped_at_the_time_limit(
    new_children: Callable[[], list[psutil.Process]],
) -> None:
    start = time.monotonic()
    with pytest.raises(KernelToolError) as caught:
        run_kernel_check(KernelCheckRequest(file=KERNELS / "hangs.py", stages=["correctness"], timeout_s=5))
    elapsed = time.monotonic() - start
    assert caught.value.kind == "timeout"
    assert "did not finish within 5 s" in caught.value.message and "stopped" in caught.value.message
    assert elapsed < 30
    assert not new_children()


def test_unknown_file_and_generation_fail_before_any_child() -> None:
    with pytest.raises(KernelToolError, match="no such kernel file"):
        run_kernel_check(KernelCheckRequest(file=KERNELS / "does_not_exist.py"))
    with pytest.raises(KernelToolError, match="unknown TPU generation 'v9z'"):
        run_kernel_check(KernelCheckRequest(file=KERNELS / "axpy.py", generations=["v9z"]))
