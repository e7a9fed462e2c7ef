"""The steps of workflows/kernel.yaml: each reads and writes one `KernelContext`, in order.

`kernel check` runs the CPU stages (correctness, honesty, lowering, compile, torch) in its sandboxed child,
where the user's kernel module is loaded (`KernelContext.km`), then `timing` in the front end's process,
through the approval gate. A stage whose input is missing (compiling a kernel that does not lower) is
skipped with the reason. `scaffold` and `tune` are the playbook's first and last CPU steps (`kernel new`,
`kernel tune`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpu_runtime.kernels.child import CheckOptions
from tpu_runtime.kernels.report import KernelCheckReport, StageName, StageResult, TuneReport, stage_result
from tpu_runtime.progress import ProgressFn
from tpu_runtime.workflow import Step, produced

if TYPE_CHECKING:
    from tpu_runtime.kernels.convention import KernelModule
    from tpu_runtime.kernels.remote_timing import TimingOptions
    from tpu_runtime.kernels.tune import KernelTuneRequest
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.gated import Approver, GatedRun

#: Why stage 5 does not run for a kernel that declares a MESH.
TORCH_COLLECTIVE = (
    "not run: this stage wraps the kernel with torch.tpu.pallas.jax_op and calls it on one device's fake "
    "tensors, and a kernel with a MESH runs under shard_map across several devices, which that call does "
    "not set up; stages 3-4 checked it on a multi-device TPU topology instead"
)


@dataclass
class KernelContext:
    """What the steps of workflows/kernel.yaml read and write."""

    options: CheckOptions
    km: KernelModule | None = None  # the loaded kernel module: CPU stages run where it is loaded
    torch_ahead: Callable[[], StageResult | None] | None = None  # stage 5 started in a process of its own
    params: dict[str, Any] = field(default_factory=dict)
    shapes: list[dict[str, int]] = field(default_factory=list)
    target_shape: dict[str, int] = field(default_factory=dict)
    seed: int = 0
    stages: list[StageResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    reference_calls: int = 0
    correctness_pass: bool = False
    interpretable: bool = True
    lowered: bool = True
    unlowered: str = "skipped: the kernel does not lower for TPU (stage 3)"
    # scaffold: a new kernel module from a template when the file does not exist yet
    template: str | None = None
    # tune: the bounded autotune run and what it found
    tune_request: KernelTuneRequest | None = None
    tune_report: TuneReport | None = None
    # timing: the checked report it times, where, and who approves
    report: KernelCheckReport | None = None
    timing: TimingOptions | None = None
    approver: Approver | None = None
    engine: RemoteEngine | None = None

    @property
    def cases(self) -> list[tuple[dict[str, int], str]]:
        return [(shape, dtype) for shape in self.shapes for dtype in self.module.dtypes]

    @property
    def module(self) -> KernelModule:
        if self.km is None:
            raise RuntimeError("the kernel module is not loaded in this process")
        return self.km


def skipped(stage: StageName, why: str) -> StageResult:
    return stage_result(stage, "skip", why)


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


def scaffold(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    """Write the kernel module from `ctx.template` when the file does not exist yet (`kernel new`)."""
    from tpu_runtime.kernels.scaffold import create_kernel

    path = Path(ctx.options.file)
    if path.exists():
        return
    if ctx.template is None:
        raise FileNotFoundError(f"no such kernel file: {path}; give a template to start from")
    progress(step.id, f"writing {path.name} from the {ctx.template} template", 0.0)
    ctx.options.file = str(create_kernel(path.stem, ctx.template, path.parent))


def correctness(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    km = ctx.module
    no_mesh = _no_host_mesh(km)
    if no_mesh:
        ctx.stages.append(skipped("correctness", f"cannot be checked in interpret mode here: {no_mesh}"))
        ctx.interpretable = False
        return
    from tpu_runtime.kernels.correctness import correctness_stage

    progress(step.id, step.title, 0.0)
    stage, ctx.reference_calls, details = correctness_stage(
        km, ctx.params, ctx.shapes, km.dtypes, ctx.seed, lambda f: progress(step.id, step.title, f)
    )
    ctx.correctness_pass = stage.verdict in ("pass", "warn")
    ctx.interpretable = stage.verdict != "skip"
    ctx.stages.append(stage)
    ctx.tracebacks += details


def honesty(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.kernels.honesty import honesty_stage

    progress(step.id, step.title, 0.0)
    stage, details = honesty_stage(
        ctx.module,
        ctx.params,
        ctx.seed,
        ctx.reference_calls,
        ctx.correctness_pass,
        check_held_out=ctx.options.held_out and ctx.interpretable,
        shapes=ctx.shapes,
    )
    ctx.stages.append(stage)
    ctx.tracebacks += details


def lowering(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.kernels.lowering import lowering_stage

    km = ctx.module
    progress(step.id, step.title, 0.0)
    cases = ctx.cases
    target_cases = [
        (ctx.target_shape, dtype) for dtype in km.dtypes if (ctx.target_shape, dtype) not in cases
    ]
    stage, details = lowering_stage(km, ctx.params, cases + target_cases, ctx.options.generations[0])
    ctx.lowered = stage.verdict == "pass"
    if stage.verdict == "skip":
        ctx.unlowered = "skipped: stage 3 could not lower it here (it says why)"
    ctx.stages.append(stage)
    ctx.tracebacks += details


def compile_for_tpu(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    if not ctx.lowered:
        ctx.stages.append(skipped("compile", ctx.unlowered))
        return
    from tpu_runtime.kernels.tpu_compile import compile_stage

    progress(step.id, step.title, 0.0)
    stage, details = compile_stage(ctx.module, ctx.params, ctx.target_shape, ctx.options.generations)
    ctx.stages.append(stage)
    ctx.tracebacks += details


def torch_op(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    km = ctx.module
    if not ctx.lowered:
        ctx.stages.append(skipped("torch", ctx.unlowered))
        return
    if km.mesh:
        ctx.stages.append(skipped("torch", TORCH_COLLECTIVE))
        return
    from tpu_runtime.kernels.torch_integration import torch_stage

    progress(step.id, step.title, 0.0)
    ahead = ctx.torch_ahead() if ctx.torch_ahead else None
    ctx.stages.append(ahead or torch_stage(km, ctx.params, ctx.cases, ctx.options.generations[0]))
    if ahead:
        ctx.notes.append(
            "the PyTorch stage ran in a process of its own beside stages 1-4 (importing torch_tpu "
            "is most of it), so its seconds overlap theirs"
        )


def tune(ctx: KernelContext, step: Step, progress: ProgressFn) -> None:
    """Autotune on the CPU within the request's budget (`kernel tune`); timing on a TPU is its own step."""
    from tpu_runtime.kernels.tune import run_kernel_tune

    if ctx.tune_request is None:
        return
    cpu_only = ctx.tune_request.model_copy(
        update={"timing": ctx.tune_request.timing.model_copy(update={"target": None})}
    )
    ctx.tune_report = run_kernel_tune(cpu_only, progress)


def timing(ctx: KernelContext, step: Step, progress: ProgressFn) -> GatedRun | None:
    """Stage 6: the timing run on the user's TPU, handed to the runner's approval gate."""
    from tpu_runtime.kernels.remote_timing import TimingOptions, timing_run

    report = produced(ctx.report, "the check stages")
    options = ctx.timing or TimingOptions()
    if options.target:
        progress(step.id, f"kernel check: timing on {options.target}", 0.0)

    def done(stage: StageResult) -> None:
        report.stages = [stage if s.stage == "timing" else s for s in report.stages]
        if stage.verdict == "fail":
            report.verdict = "fail"

    on_line = lambda line: progress(step.id, line, 0.5)  # noqa: E731
    return timing_run(report, Path(ctx.options.file), options, done, on_line, engine=ctx.engine)
