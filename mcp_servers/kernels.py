"""The `tpu-kernels` MCP server: the tpu-kernel-development agent's tools over `tpu_runtime.kernels`.

Thin by design: each tool checks its arguments, confines its paths (`_paths`), calls the kernel engine on
a worker thread and shapes the answer. The kernel file is user code: the engine imports it only in a
child process with a time limit, so a kernel that raises, crashes or hangs ends as a one-line error
result and this server keeps answering.

- tool `kernel_templates` -> the templates `new_kernel` can start from (read-only, no JAX).
- tool `new_kernel` -> `NewKernel`: writes one kernel module from a template into an allowed folder;
  refuses to overwrite unless `force=true` (hence annotated destructive).
- tool `check_kernel` -> `KernelCheckReport`: correctness, honesty, lowering, compile per generation,
  PyTorch wrapper; progress per stage. Read-only.
- tool `tune_kernel` -> `TuneReport`: bounded autotune recorded in a resumable run folder; progress per
  attempt.
- resource template `kernel-report://{report_id}`: the last check and tune reports of this process; each
  result carries its id in `_meta` and a `resource_link` (`mcp_servers._report_store`).
- prompt `kernel`: the playbook of workflows/kernel.yaml (`_workflow_prompt`).

Style as in `mcp_servers.onboarding`: `register(server)` adds everything to a given server,
`build_server()` makes a stand-alone one; importing this module loads only the report models.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import anyio
import anyio.lowlevel
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult
from pydantic import BaseModel, Field

from mcp_servers._paths import ClientRoots, PathNotAllowed, allowed_folders, confine, confine_input
from mcp_servers._progress import send_progress
from mcp_servers._report_store import ReportStore
from mcp_servers._results import error_result, worker_call
from mcp_servers._results import model_result as _result
from mcp_servers._server import declare_tool, make_server, serve_stdio
from mcp_servers._workflow_prompt import playbook_text
from tpu_runtime.errors import BadInput
from tpu_runtime.kernels.report import STAGE_TITLES, KernelCheckReport, StageName, TuneReport

if TYPE_CHECKING:
    from tpu_runtime.progress import ProgressFn

NAME = "tpu-kernels"
WORKFLOW = "kernel"
REPORT_SCHEME = "kernel-report"
MAX_BUDGET = 1000
MAX_SHAPES = 16
MAX_TIMEOUT_S = 24 * 3600.0
KERNEL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.py)?$"

CpuStage = Literal["correctness", "honesty", "lowering", "compile", "torch"]
CHECK_STAGES: tuple[CpuStage, ...] = ("correctness", "honesty", "lowering", "compile", "torch")
PATH_HELP = "the kernel module (.py); relative paths start at the first allowed folder"

INSTRUCTIONS = (
    "Pallas TPU kernels, checked without a TPU. kernel_templates lists starting points; new_kernel writes "
    "a kernel module (kernel(), a plain jax.numpy reference(), make_inputs(), SHAPES, SPACE, DEFAULTS); "
    "check_kernel runs it stage by stage (correctness in TPU interpret mode with race and out-of-bounds "
    "detection, honesty, lowering, compile per TPU generation with VMEM and a roofline estimate, the "
    "PyTorch wrapper); tune_kernel tries parameter candidates within a fixed budget and ranks those that "
    "pass every check by the compile-time estimate. Nothing runs on a chip: quote estimates as "
    "estimates, never as measurements. The 'kernel' prompt is the step-by-step playbook."
)

TEMPLATES_DESCRIPTION = """\
The kernel templates new_kernel can start from: tiled matmul (float32; bfloat16 with a float32 \
accumulator), int8 quantized matmul, RMSNorm, softmax, flash attention forward, grouped matmul for MoE. \
Each is a complete kernel module that passes check_kernel as shipped. Read-only; returns name and a \
one-line summary of each."""

NEW_KERNEL_DESCRIPTION = """\
Write a new kernel module FOLDER/NAME.py from a template (see kernel_templates). The module defines \
kernel(*inputs, **params) (the Pallas TPU kernel), reference(*inputs) (the same computation in plain \
jax.numpy, what correctness means), make_inputs(rng, shape, dtype), SHAPES, DTYPES, TARGET_SHAPE, \
SPACE (tunable values) and DEFAULTS. Edit it, then run check_kernel on the returned `file`.

`folder` must lie inside the folders the user works in (the client's roots; relative paths start at \
the first of them) and is created if missing. An existing NAME.py is never touched unless force=true, \
which overwrites it."""

CHECK_DESCRIPTION = """\
Check a Pallas TPU kernel module stage by stage, on CPU, without a TPU. Read-only: the module runs in \
a child process (clean environment, no network, memory limit), stopped after timeout_s seconds.

Stages (`stages` picks a subset; each is reported): correctness (TPU interpret mode with race \
detection, SHAPES x DTYPES plus a held-out shape, fresh random inputs, poisoned outputs so unwritten \
blocks show, NaN/Inf, out-of-bounds reads with the ref and index, against a float64 reference); \
honesty (no reference calls, jnp fallbacks, swallowed errors or special-cased shapes); lowering \
(jax.export for TPU, Mosaic errors explained); compile (XLA:TPU on a compile-only topology of each \
generation in `generations`: VMEM against the chip's limit, roofline estimate, compute- or \
memory-bound); torch (torch.tpu.pallas.jax_op on fake tensors, with the snippet to paste). Timing is \
always not_run: it needs the user's TPU.

Returns a KernelCheckReport (JSON): `verdict` (pass/fail), `stages` (each with verdict, message, \
details, correctness `cases`, per-generation compile results, `snippet`), the params, shapes and seed \
used (`notes[0]`). A FAIL is a normal result: read the failing stage's message, fix the kernel, check \
again. The result also links kernel-report://ID, where the report stays readable. A module that \
cannot be checked at all (does not import, lacks reference(), hangs past timeout_s, crashes) gives an \
error whose text is one line saying why. Takes about 10-60 s."""

TUNE_DESCRIPTION = """\
Autotune a kernel's parameters within a fixed budget: tries DEFAULTS first, then points of the \
kernel's SPACE (or `space`), each through correctness, honesty, lowering and compile for one TPU \
`generation`. A candidate that fails any check never wins; the passing ones are ranked by the \
compile-time roofline estimate (nothing runs on a chip, so no time is measured). Every attempt \
(params, each stage's verdict, VMEM, estimate, log) is recorded in a run folder; calling again with \
the same arguments resumes it and never exceeds the budget, including after a crash. Writes only the \
run folder.

Returns a TuneReport (JSON): `attempts`, `best` and `default` with their estimates, \
`speedup_over_default`, `ranking` (how candidates were ranked), `run_dir`, `message`; the result \
also links kernel-report://ID, where the report stays readable. `run_dir` must \
lie inside the folders the user works in; without it the run is kept in tpu-agent's data folder (the \
same one `tpu-agent kernel tune` uses). Each attempt takes about 10-30 s; one stopped after \
attempt_timeout_s counts as failed."""

logger = logging.getLogger(__name__)
T = TypeVar("T")


class KernelTemplate(BaseModel):
    """One template `new_kernel` accepts."""

    name: str = Field(description="the value to pass as new_kernel's `template`")
    summary: str = Field(description="what the kernel computes and how it tiles it")


class NewKernel(BaseModel):
    """The module `new_kernel` wrote and what to do next."""

    file: str = Field(description="absolute path of the new kernel module")
    template: str
    overwritten: bool = Field(description="true when an existing file was replaced (force=true)")
    convention: str = Field(description="what the module defines, to guide edits")
    next_step: str = Field(description="the check to run next")


@functools.cache
def _templates() -> tuple[KernelTemplate, ...]:
    """The shipped templates (package data, fixed while the server runs; parsing them takes ~10 ms)."""
    from tpu_runtime.kernels.scaffold import list_templates

    return tuple(KernelTemplate(name=t.name, summary=t.summary) for t in list_templates())


def _error_line(text: str) -> CallToolResult:
    return error_result(text, first_line_only=True)


class _Progress:
    """Monotonic MCP progress fed from any thread (the worker, or the sandbox's progress reader).

    The sandbox reports progress on its own reader thread, not an AnyIO worker thread, so notifications
    go back to the event loop through its token. The lock only guards the counter: it is never held
    while waiting for the loop, which may itself be closing this object. Late events are dropped.
    """

    def __init__(self, ctx: Context, total: float) -> None:
        self.ctx = ctx
        self.total = total
        self.token = anyio.lowlevel.current_token()
        self.last = -1.0
        self.closed = threading.Event()
        self.lock = threading.Lock()

    def send(self, done: float, message: str) -> None:
        done = min(max(done, 0.0), self.total)
        with self.lock:
            if self.closed.is_set() or done <= self.last:
                return
            self.last = done
        send_progress(self.ctx, done, self.total, message, token=self.token)

    def close(self) -> None:
        self.closed.set()


def _check_progress(progress: _Progress, stages: list[StageName]) -> ProgressFn:
    """Engine progress (stage, message, fraction) -> stage index + fraction, out of the stages run."""
    order: dict[str, int] = {stage: i for i, stage in enumerate(stages)}

    def notify(step: str, message: str, fraction: float) -> None:
        index = order.get(step)
        if index is None:
            return
        title = STAGE_TITLES.get(step, step)
        progress.send(index + min(max(fraction, 0.0), 0.99), title)

    return notify


def _tune_progress(progress: _Progress, budget: int) -> ProgressFn:
    """Engine progress -> 0 while the module is read, n when attempt n starts, budget + 1 when done."""

    def notify(step: str, message: str, fraction: float) -> None:
        if step == "describe":
            progress.send(0.0, message)
        elif step == "tune" and fraction < 1.0:
            progress.send(1.0 + round(fraction * budget), message)

    return notify


async def _call(
    fn: Callable[[], T], what: str, limiter: anyio.CapacityLimiter, progress: _Progress
) -> T | CallToolResult:
    """Run an engine call on a worker thread; unusable kernels and internal faults become one-line errors."""
    try:
        return await worker_call(fn, what, logger, limiter, first_line_only=True)
    finally:
        progress.close()


def register(server: MCPServer) -> None:
    """Add the kernel tools, the report resource template and the `kernel` prompt to `server`."""
    reports: ReportStore[KernelCheckReport | TuneReport] = ReportStore(REPORT_SCHEME, "kernel report")
    reports.register(
        server,
        name="kernel_report",
        title="Kernel check or tune report",
        produced_by="check_kernel or tune_kernel",
    )
    # Each check is a child process that imports JAX and compiles; two at a time keep the host usable.
    checks = anyio.CapacityLimiter(2)
    # A tune already runs its attempts one after another; a second tune waits rather than competing.
    tunes = anyio.CapacityLimiter(1)

    @declare_tool(server, "kernel_templates", "List Pallas kernel templates", TEMPLATES_DESCRIPTION)
    def kernel_templates() -> list[KernelTemplate]:
        return list(_templates())

    @declare_tool(
        server,
        "new_kernel",
        "Create a Pallas kernel module from a template",
        NEW_KERNEL_DESCRIPTION,
        read_only=False,
        destructive=True,
    )
    def new_kernel(
        name: Annotated[
            str,
            Field(
                min_length=1,
                max_length=100,
                description="module name, a Python identifier such as my_rmsnorm (.py is added)",
            ),
        ],
        template: Annotated[
            str, Field(min_length=1, max_length=100, description="a name from kernel_templates")
        ],
        roots: ClientRoots,
        folder: Annotated[
            str, Field(min_length=1, description="folder to write NAME.py into (default: the first root)")
        ] = ".",
        force: Annotated[bool, Field(description="overwrite an existing NAME.py")] = False,
    ) -> Annotated[CallToolResult, NewKernel]:
        from tpu_runtime.kernels.convention import CONVENTION_SUMMARY
        from tpu_runtime.kernels.scaffold import ScaffoldError, create_kernel

        if not re.fullmatch(KERNEL_NAME_PATTERN, name):
            return _error_line(
                f"kernel name {name!r} must be a Python identifier (letters, digits, _), e.g. my_matmul"
            )
        try:
            where = confine(folder, allowed_folders(roots))
        except PathNotAllowed as exc:
            return _error_line(str(exc))
        if where.exists() and not where.is_dir():
            return _error_line(f"{where} is a file, not a folder")
        target = where / (name if name.endswith(".py") else f"{name}.py")
        existed = target.exists()
        if existed and not force:
            return _error_line(
                f"{target} already exists; pass force=true to overwrite it, or choose another name"
            )
        try:
            path = create_kernel(name, template, where, force=force)
        except ScaffoldError as exc:
            return _error_line(str(exc))
        except OSError as exc:
            return _error_line(f"cannot write {target}: {exc.strerror or exc}")
        return _result(
            NewKernel(
                file=str(path),
                template=template,
                overwritten=existed,
                convention=CONVENTION_SUMMARY,
                next_step=f"edit the kernel, then call check_kernel with path={str(path)!r}",
            )
        )

    @declare_tool(
        server,
        "check_kernel",
        "Check a Pallas TPU kernel (correctness, honesty, lowering, compile, PyTorch)",
        CHECK_DESCRIPTION,
    )
    async def check_kernel(
        path: Annotated[
            str,
            Field(
                min_length=1, description="the kernel module (.py); relative paths start at the first root"
            ),
        ],
        ctx: Context,
        roots: ClientRoots,
        generations: Annotated[
            tuple[Annotated[str, Field(min_length=1)], ...],
            Field(
                min_length=1,
                max_length=8,
                description="TPU generations to compile for: v5e, v5p, v6e, tpu7x",
            ),
        ] = ("v6e",),
        params: Annotated[
            dict[str, Any] | None,
            Field(description='override DEFAULTS, e.g. {"block_m": 256} (default: the module\'s DEFAULTS)'),
        ] = None,
        shapes: Annotated[
            list[dict[str, Annotated[int, Field(ge=1)]]] | None,
            Field(
                min_length=1,
                max_length=MAX_SHAPES,
                description='check these shapes instead of SHAPES, e.g. [{"m": 256, "k": 512, "n": 256}]',
            ),
        ] = None,
        target_shape: Annotated[
            dict[str, Annotated[int, Field(ge=1)]] | None,
            Field(description="lower, compile and estimate at this shape instead of TARGET_SHAPE"),
        ] = None,
        stages: Annotated[
            tuple[CpuStage, ...],
            Field(min_length=1, description="the stages to run (default: all five)"),
        ] = CHECK_STAGES,
        seed: Annotated[
            int | None, Field(ge=0, description="seed for the random inputs (default: fresh each run)")
        ] = None,
        timeout_s: Annotated[
            float, Field(gt=0, le=MAX_TIMEOUT_S, description="seconds the whole check may run")
        ] = 600.0,
    ) -> Annotated[CallToolResult, KernelCheckReport]:
        try:
            file = confine_input(path, allowed_folders(roots), "no such kernel file")
        except BadInput as exc:
            return _error_line(str(exc))
        from tpu_runtime.kernels.job import KernelCheckRequest, run_kernel_check

        chosen: list[StageName] = [stage for stage in CHECK_STAGES if stage in stages]
        request = KernelCheckRequest(
            file=file,
            params=params or {},
            shapes=shapes,
            target_shape=target_shape,
            generations=list(generations),
            stages=chosen,
            seed=seed,
            timeout_s=timeout_s,
        )
        progress = _Progress(ctx, float(len(chosen)))
        call = functools.partial(run_kernel_check, request, _check_progress(progress, chosen))
        report = await _call(call, "check_kernel", checks, progress)
        if isinstance(report, CallToolResult):
            return report
        await ctx.report_progress(float(len(chosen)), float(len(chosen)), f"verdict: {report.verdict}")
        return reports.result(f"check-{file.stem}", report, f"kernel check report for {file.name}")

    @declare_tool(
        server,
        "tune_kernel",
        "Autotune a Pallas TPU kernel within a budget",
        TUNE_DESCRIPTION,
        read_only=False,
    )
    async def tune_kernel(
        path: Annotated[
            str,
            Field(
                min_length=1, description="the kernel module (.py); relative paths start at the first root"
            ),
        ],
        budget: Annotated[
            int,
            Field(ge=1, le=MAX_BUDGET, description="most candidates this run may try, fixed when it starts"),
        ],
        ctx: Context,
        roots: ClientRoots,
        space: Annotated[
            dict[str, Annotated[list[Any], Field(min_length=1)]] | None,
            Field(description='parameter -> values to try, e.g. {"block_m": [128, 256]} (default: SPACE)'),
        ] = None,
        generation: Annotated[
            str, Field(min_length=1, description="the TPU generation to rank for: v5e, v5p, v6e or tpu7x")
        ] = "v6e",
        run_dir: Annotated[
            Annotated[str, Field(min_length=1)] | None,
            Field(description="run folder to record attempts in, or to resume (default: tpu-agent's own)"),
        ] = None,
        attempt_timeout_s: Annotated[
            float, Field(gt=0, le=MAX_TIMEOUT_S, description="seconds one attempt may run")
        ] = 600.0,
    ) -> Annotated[CallToolResult, TuneReport]:
        allowed = allowed_folders(roots)
        try:
            file = confine(path, allowed)
            folder = confine(run_dir, allowed) if run_dir is not None else None
        except PathNotAllowed as exc:
            return _error_line(str(exc))
        if not file.is_file():
            return _error_line(f"no such kernel file: {file}")
        from tpu_runtime.kernels.tune import KernelTuneRequest, run_kernel_tune

        request = KernelTuneRequest(
            file=file,
            budget=budget,
            space=space,
            generation=generation,
            run_dir=folder,
            attempt_timeout_s=attempt_timeout_s,
        )
        progress = _Progress(ctx, float(budget + 1))
        call = functools.partial(run_kernel_tune, request, _tune_progress(progress, budget))
        report = await _call(call, "tune_kernel", tunes, progress)
        if isinstance(report, CallToolResult):
            return report
        await ctx.report_progress(float(budget + 1), float(budget + 1), report.message)
        return reports.result(f"tune-{file.stem}", report, f"kernel tune report for {file.name}")

    @server.prompt(
        name="kernel",
        title="Write, check and tune a Pallas TPU kernel",
        description="The kernel playbook (workflows/kernel.yaml): each step, what it proves, and where it "
        "stops for the person's approval.",
    )
    def kernel(
        goal: Annotated[
            str, Field(description="the kernel wanted, or the path of the kernel module to work on")
        ],
    ) -> str:
        return _playbook_text(goal)


def _playbook_text(goal: str) -> str:
    closing = [
        "Tools: kernel_templates and new_kernel (scaffold), check_kernel (the check stages; do not go on "
        "while one fails), tune_kernel (the budget is fixed before it starts). Quote VMEM, roofline and "
        "tuning figures from their results as compile-time estimates: nothing ran on a chip. Each check "
        "and tune report stays readable as kernel-report://ID (the id comes with the result).",
    ]
    return playbook_text(WORKFLOW, goal, closing, gate_where="their TPU")


def build_server() -> MCPServer:
    """A stand-alone `tpu-kernels` server."""
    return make_server(NAME, INSTRUCTIONS, register)


if __name__ == "__main__":
    serve_stdio(build_server)
