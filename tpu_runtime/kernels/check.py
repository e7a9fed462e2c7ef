"""`kernel check` stages 1-5 in one process: the body of the sandboxed child (`check_entry`).

The parent (`tpu_runtime.kernels.job`) starts this in a child with a time and memory limit, because it
imports and runs the user's kernel file. Stages run in order; a stage whose input is missing (compiling a
kernel that does not lower) is skipped with the reason. Timing is never run here: it needs a real TPU.
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from tpu_runtime.kernels.convention import KernelModule, load_kernel_module
from tpu_runtime.kernels.mesh import prepare_host_devices
from tpu_runtime.kernels.report import (
    CPU_STAGES,
    STAGE_TITLES,
    TIMING_NOT_RUN,
    KernelCheckReport,
    StageName,
    StageResult,
)
from tpu_runtime.progress import StageProgressFn


class CheckOptions(BaseModel):
    """What one check runs with; the parent sends this to the child as JSON."""

    file: str
    params: dict[str, Any] = {}
    shapes: list[dict[str, int]] | None = None
    target_shape: dict[str, int] | None = None
    generations: list[str] = ["v5e", "v5p", "v6e", "tpu7x"]
    stages: list[StageName] = list(CPU_STAGES)
    seed: int | None = None
    held_out: bool = True


def _skipped(stage: StageName, why: str) -> StageResult:
    return StageResult(stage=stage, title=STAGE_TITLES[stage], verdict="skip", message=why)


#: Why stage 5 does not run for a kernel that declares a MESH.
_TORCH_COLLECTIVE = (
    "not run: this stage wraps the kernel with torch.tpu.pallas.jax_op and calls it on one device's fake "
    "tensors, and a kernel with a MESH runs under shard_map across several devices, which that call does "
    "not set up; stages 3-4 checked it on a multi-device TPU topology instead"
)


def _no_host_mesh(km: KernelModule) -> str:
    """Why this process cannot lay the kernel's MESH over host CPU devices ('' when it can)."""
    if not km.mesh:
        return ""
    from tpu_runtime.kernels.mesh import MeshError, cpu_mesh

    try:
        cpu_mesh(km.mesh)
    except MeshError as exc:
        return str(exc)
    return ""


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
    """Run the requested stages on a loaded kernel module and build the report.

    `torch_ahead`, when given, returns the PyTorch stage as a process started earlier ran it
    (`start_torch_stage`), or None when that process failed and the stage must run here.
    """
    start = time.perf_counter()
    notify = progress or (lambda stage, fraction: None)
    params = km.params(options.params)
    shapes = options.shapes or km.shapes
    target = options.target_shape or km.target_shape
    seed = options.seed if options.seed is not None else secrets.randbits(31)
    cases = [(shape, dtype) for shape in shapes for dtype in km.dtypes]
    wanted = set(options.stages)
    stages: list[StageResult] = []
    notes = [f"random seed {seed} (rerun with --seed {seed} to repeat these inputs)"]
    tracebacks: list[str] = []

    correctness_pass = False
    interpretable = True
    reference_calls = 0
    no_mesh = _no_host_mesh(km)
    if "correctness" in wanted and no_mesh:
        stages.append(_skipped("correctness", f"cannot be checked in interpret mode here: {no_mesh}"))
        interpretable = False
    elif "correctness" in wanted:
        from tpu_runtime.kernels.correctness import correctness_stage

        notify("correctness", 0.0)
        stage, reference_calls, details = correctness_stage(
            km, params, shapes, km.dtypes, seed, lambda f: notify("correctness", f)
        )
        correctness_pass = stage.verdict in ("pass", "warn")
        interpretable = stage.verdict != "skip"
        stages.append(stage)
        tracebacks += details
    if "honesty" in wanted:
        from tpu_runtime.kernels.honesty import honesty_stage

        notify("honesty", 0.0)
        stage, details = honesty_stage(
            km,
            params,
            seed,
            reference_calls,
            correctness_pass,
            check_held_out=options.held_out and interpretable,
            shapes=shapes,
        )
        stages.append(stage)
        tracebacks += details
    lowered = True
    unlowered = "skipped: the kernel does not lower for TPU (stage 3)"
    if "lowering" in wanted:
        from tpu_runtime.kernels.lowering import lowering_stage

        notify("lowering", 0.0)
        target_cases = [(target, dtype) for dtype in km.dtypes if (target, dtype) not in cases]
        stage, details = lowering_stage(km, params, cases + target_cases, options.generations[0])
        lowered = stage.verdict == "pass"
        if stage.verdict == "skip":
            unlowered = "skipped: stage 3 could not lower it here (it says why)"
        stages.append(stage)
        tracebacks += details
    if "compile" in wanted:
        if not lowered:
            stages.append(_skipped("compile", unlowered))
        else:
            from tpu_runtime.kernels.tpu_compile import compile_stage

            notify("compile", 0.0)
            stage, details = compile_stage(km, params, target, options.generations)
            stages.append(stage)
            tracebacks += details
    if "torch" in wanted:
        if not lowered:
            stages.append(_skipped("torch", unlowered))
        elif km.mesh:
            stages.append(_skipped("torch", _TORCH_COLLECTIVE))
        else:
            from tpu_runtime.kernels.torch_integration import torch_stage

            notify("torch", 0.0)
            ahead = torch_ahead() if torch_ahead else None
            stages.append(ahead or torch_stage(km, params, cases, options.generations[0]))
            if ahead:
                notes.append(
                    "the PyTorch stage ran in a process of its own beside stages 1-4 (importing torch_tpu "
                    "is most of it), so its seconds overlap theirs"
                )
    stages.append(
        StageResult(stage="timing", title=STAGE_TITLES["timing"], verdict="not_run", message=TIMING_NOT_RUN)
    )
    verdict: Literal["pass", "fail", "unchecked"] = "pass"
    if any(s.verdict == "fail" for s in stages):
        verdict = "fail"
    elif any(s.stage == "correctness" and s.verdict == "skip" for s in stages):
        verdict = "unchecked"
    if tracebacks:
        notes.append("tracebacks of failures are in the JSON report's `notes` after this line")
        notes += [t for t in tracebacks if t][:5]
    return KernelCheckReport(
        file=str(km.path),
        kernel=km.name,
        params=params,
        shapes=shapes,
        dtypes=km.dtypes,
        target_shape=target,
        generations=list(options.generations) if "compile" in wanted else [],
        stages=stages,
        verdict=verdict,
        seconds=round(time.perf_counter() - start, 3),
        versions=_versions(),
        notes=notes,
    )


def watch_parent() -> None:
    """Exit when the process that started this child dies (a killed CLI or tuner leaves no orphans)."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            if os.getppid() != parent:
                os._exit(3)
            time.sleep(0.5)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def prepare_child() -> None:
    """Environment and quiet logging for a child that runs kernels (before JAX is imported)."""
    import logging

    from tpu_runtime.kernels.tpu_compile import prepare_libtpu

    prepare_libtpu()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.getLogger("jax").setLevel(logging.ERROR)


def child_progress() -> StageProgressFn:
    """The progress reporter of the running child.

    `python -m tpu_runtime.child_entry` runs that module as `__main__`, so a fresh `import
    tpu_runtime.child_entry` gets a second copy whose pipe was never opened; the live one is `__main__`'s.
    """
    main = sys.modules.get("__main__")
    live = getattr(main, "report_progress", None)
    if callable(live) and getattr(main, "_progress", None) is not None:
        return live
    from tpu_runtime.child_entry import report_progress

    return report_progress


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
                Limits(timeout_s=24 * 3600.0),
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
