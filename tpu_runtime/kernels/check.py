"""`kernel check` stages 1-5 in one process: the body of the sandboxed child (`check_entry`).

The parent (`tpu_runtime.kernels.job`) starts this in a child with a time and memory limit, because it
imports and runs the user's kernel file. The stages are steps of workflows/kernel.yaml
(`tpu_runtime.kernels.steps`), run in order by the workflow runner. Timing is never run here: it needs a
real TPU.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from tpu_runtime.kernels.child import CheckOptions, child_progress, prepare_child, watch_parent
from tpu_runtime.kernels.convention import KernelModule, load_kernel_module
from tpu_runtime.kernels.mesh import prepare_host_devices
from tpu_runtime.kernels.report import (
    CPU_STAGES,
    TIMING_NOT_RUN,
    KernelCheckReport,
    StageResult,
    stage_result,
)
from tpu_runtime.kernels.steps import KernelContext
from tpu_runtime.progress import StageProgressFn
from tpu_runtime.workflow import run_workflow

__all__ = [
    "CheckOptions",
    "check_entry",
    "child_progress",
    "describe_entry",
    "prepare_child",
    "run_check",
    "start_torch_stage",
    "watch_parent",
]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in ("jax", "jaxlib", "libtpu", "torch_tpu"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def run_check(
    km: KernelModule,
    options: CheckOptions,
    progress: StageProgressFn | None = None,
    torch_ahead: Callable[[], StageResult | None] | None = None,
) -> KernelCheckReport:
    """Run the requested stages (steps of workflows/kernel.yaml) on a loaded kernel module; the report.

    `torch_ahead`, when given, returns the PyTorch stage as a process started earlier ran it
    (`start_torch_stage`), or None when that process failed and the stage must run here.
    """
    start = time.perf_counter()
    notify = progress or (lambda stage, fraction: None)
    seed = options.seed if options.seed is not None else secrets.randbits(31)
    ctx = KernelContext(
        options=options,
        km=km,
        torch_ahead=torch_ahead,
        params=km.params(options.params),
        shapes=options.shapes or km.shapes,
        target_shape=options.target_shape or km.target_shape,
        seed=seed,
        notes=[f"random seed {seed} (rerun with --seed {seed} to repeat these inputs)"],
    )
    wanted = [stage for stage in CPU_STAGES if stage in options.stages]
    # the stages report (stage, fraction) themselves, in the form the child's progress pipe carries
    run_workflow(
        "kernel", ctx, lambda step, message, fraction: notify(step, fraction), only=wanted, announce=False
    )
    stages = ctx.stages
    stages.append(stage_result("timing", "not_run", TIMING_NOT_RUN))
    verdict: Literal["pass", "fail", "unchecked"] = "pass"
    if any(s.verdict == "fail" for s in stages):
        verdict = "fail"
    elif any(s.stage == "correctness" and s.verdict == "skip" for s in stages):
        verdict = "unchecked"
    notes, tracebacks = ctx.notes, ctx.tracebacks
    if tracebacks:
        notes.append("tracebacks of failures are in the JSON report's `notes` after this line")
        notes += [t for t in tracebacks if t][:5]
    return KernelCheckReport(
        file=str(km.path),
        kernel=km.name,
        params=ctx.params,
        shapes=ctx.shapes,
        dtypes=km.dtypes,
        target_shape=ctx.target_shape,
        generations=list(options.generations) if "compile" in wanted else [],
        stages=stages,
        verdict=verdict,
        seconds=round(time.perf_counter() - start, 3),
        versions=_versions(),
        notes=notes,
    )


def check_entry(payload: dict[str, Any]) -> dict[str, Any]:
    """Child entry point (`tpu_runtime.sandbox.run_child` target)."""
    watch_parent()
    options = CheckOptions.model_validate(payload)
    collective = prepare_host_devices(Path(options.file)) > 1
    prepare_child()
    torch_ahead = None if collective else start_torch_stage(options)
    km = load_kernel_module(Path(options.file))
    return run_check(km, options, child_progress(), torch_ahead).model_dump(mode="json")


def start_torch_stage(options: CheckOptions) -> Callable[[], StageResult | None] | None:
    """Start the PyTorch stage in a process of its own now, so importing torch_tpu (most of the stage:
    4-6 s) overlaps stages 1-4 here; returns how to wait for its result, or None to run it in line.

    In line where it would only cost: torch_tpu absent (the stage is an instant skip), the stage not
    asked for, or on a TPU VM (two processes would both open libtpu, which allows one per host there).
    The result is the same stage: the process loads the same file with the same options; if it fails in
    any way the stage runs here afterwards, as before.
    """
    import importlib.util

    from tpu_runtime.platform_env import on_tpu_vm

    if "torch" not in options.stages or importlib.util.find_spec("torch_tpu") is None or on_tpu_vm():
        return None
    from tpu_runtime.sandbox import ChildFailure, Limits, run_child

    box: dict[str, Any] = {}

    def work() -> None:
        try:  # no limits of its own: it is inside this child's process tree, which the parent watches
            box["result"] = run_child(
                "tpu_runtime.kernels.torch_integration:torch_stage_entry",
                options.model_dump(mode="json"),
                Limits(timeout_s=24 * 3600.0, watch_memory=False),
            )
        except ChildFailure as failure:
            box["failure"] = failure

    thread = threading.Thread(target=work, name="torch-stage-ahead", daemon=True)
    thread.start()

    def result() -> StageResult | None:
        thread.join()
        if "result" not in box:
            return None
        box["result"].pop("_child", None)
        return StageResult.model_validate(box["result"])

    return result


def describe_entry(payload: dict[str, Any]) -> dict[str, Any]:
    """Child entry point: load the module and return its declarations (validates it as a side effect)."""
    watch_parent()
    prepare_host_devices(Path(payload["file"]))
    prepare_child()
    km = load_kernel_module(Path(payload["file"]))
    return {
        "name": km.name,
        "defaults": km.params(),
        "space": km.space,
        "parameters": sorted(km.kernel_parameters()),
        "shapes": km.shapes,
        "dtypes": km.dtypes,
        "target_shape": km.target_shape,
    }
