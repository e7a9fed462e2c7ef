"""Running a user's kernel code in a sandboxed child from the front end's process, and the one error a
kernel job raises when it cannot check or tune the kernel at all.

The kernel file is user code, so everything that imports it runs in a child process
(`tpu_runtime.sandbox.run_child`) with a time and memory limit; a kernel that hangs, crashes or exhausts
memory ends as a `KernelToolError` with one line that says which stage was running. Shared by `job`
(kernel check) and `tune`, which import it, never each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tpu_runtime.errors import BadInput


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


def describe_kernel(path: Path, timeout_s: float = 120.0) -> dict[str, Any]:
    """The module's declarations (DEFAULTS, SPACE, parameters...), read in a child; validates the file."""
    return run_in_child("tpu_runtime.kernels.check:describe_entry", {"file": str(path)}, timeout_s, 0.0)
