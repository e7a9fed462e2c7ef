"""`tpu-agent kernel new|check|tune`: Pallas TPU kernels from template to tuned parameters.

Parses options, calls `tpu_runtime.kernels` and renders the report. Imports nothing heavy at module import
time: JAX, libtpu and the kernel file only ever load in child processes the engine starts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tpu_runtime.cli.consoles import make_console, print_json
from tpu_runtime.cli.progress_bar import ProgressBar
from tpu_runtime.errors import BadInput

if TYPE_CHECKING:
    pass

kernel_app = typer.Typer(
    help="Pallas TPU kernels: scaffold from a template, check (correctness, honesty, lowering, compile, "
    "PyTorch), autotune within a recorded budget.",
    no_args_is_help=True,
)

out = make_console()
err = make_console(stderr=True)

#: Exit codes of `kernel check`: 0 pass, 1 fail, 3 unchecked (interpret mode cannot run the kernel; nothing
#: failed, but its numbers are unknown). 2 is a usage error.
_EXIT = {"pass": 0, "fail": 1, "unchecked": 3}
KernelMemory = Annotated[float, typer.Option(help="host memory the kernel may use (0: 3/4 of RAM)")]
JsonReport = Annotated[bool, typer.Option("--json", help="print the report as JSON")]
_STAGE_NAMES = ("correctness", "honesty", "lowering", "compile", "torch")


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_assignments(items: list[str], option: str) -> dict[str, Any]:
    """'a=1,b=2' (repeatable) -> {'a': 1, 'b': 2}; values parsed as JSON when they can be."""
    parsed: dict[str, Any] = {}
    for item in items:
        for part in item.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise BadInput(f"{option} takes NAME=VALUE pairs such as block_m=256, got {part!r}")
            parsed[key.strip()] = _value(value.strip())
    return parsed


def parse_shape(text: str, option: str) -> dict[str, int]:
    shape = parse_assignments([text], option)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in shape.values()):
        raise BadInput(f"{option} takes integer dimensions such as m=512,k=512,n=512, got {text!r}")
    return {k: int(v) for k, v in shape.items()}


def _split(values: list[str]) -> list[str]:
    return [v.strip() for item in values for v in item.split(",") if v.strip()]


@kernel_app.command("new")
def kernel_new(
    name: Annotated[
        str | None, typer.Argument(help="name of the new kernel module (a Python identifier)")
    ] = None,
    template: Annotated[str | None, typer.Option("--template", "-t", help="template to start from")] = None,
    folder: Annotated[Path, typer.Option("--dir", help="folder to write NAME.py into")] = Path("."),
    force: Annotated[bool, typer.Option(help="overwrite an existing NAME.py")] = False,
    list_only: Annotated[bool, typer.Option("--list", help="list the templates and exit")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
) -> None:
    """Create a kernel module from a template: the kernel, its plain-jnp reference, inputs, shapes, space.

    Example: tpu-agent kernel new my_matmul --template matmul_bf16
    """
    from tpu_runtime.cli.render.kernel.terminal import render_templates
    from tpu_runtime.kernels.convention import CONVENTION_SUMMARY
    from tpu_runtime.kernels.scaffold import create_kernel, list_templates

    templates = list_templates()
    if list_only or name is None:
        if as_json:
            sys.stdout.write(
                json.dumps([{"name": t.name, "summary": t.summary} for t in templates], indent=2) + "\n"
            )
            return
        render_templates(templates, out)
        if name is None and not list_only:
            out.print("create one with: tpu-agent kernel new NAME --template TEMPLATE")
        return
    if template is None:
        raise BadInput(f"--template is required; choose one of: {', '.join(t.name for t in templates)}")
    path = create_kernel(name, template, folder, force=force)  # ScaffoldError: exit 2 at the boundary
    if as_json:
        payload = {"file": str(path), "template": template, "convention": CONVENTION_SUMMARY}
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    out.print(f"wrote [bold]{path}[/] from template [cyan]{template}[/]", highlight=False)
    out.print(CONVENTION_SUMMARY, markup=False, highlight=False, soft_wrap=True)
    out.print(
        f"next: edit it, then  tpu-agent kernel check {path}   and   "
        f"tpu-agent kernel tune {path} --budget 16",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )


@kernel_app.command("check")
def kernel_check(
    file: Annotated[Path, typer.Argument(help="the kernel module (.py) to check")],
    generation: Annotated[
        list[str] | None,
        typer.Option(
            "--generation",
            "-g",
            help="TPU generation(s) to compile for: v5e, v5p, v6e, tpu7x (repeat or comma-separate)",
        ),
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="override a DEFAULTS value: NAME=VALUE")
    ] = None,
    shape: Annotated[
        list[str] | None,
        typer.Option("--shape", help="check this shape instead of SHAPES: m=512,k=512 (repeatable)"),
    ] = None,
    target_shape: Annotated[
        str | None, typer.Option(help="compile and estimate at this shape, not TARGET_SHAPE")
    ] = None,
    stages: Annotated[
        str, typer.Option(help="comma-separated subset of: correctness,honesty,lowering,compile,torch")
    ] = ",".join(_STAGE_NAMES),
    no_torch: Annotated[
        bool,
        typer.Option(
            "--no-torch",
            help="leave out stage 5 (PyTorch: imports torch_tpu, most of a check's time); "
            "the report says it was not run",
        ),
    ] = False,
    seed: Annotated[
        int | None, typer.Option(help="seed for the random inputs (default: fresh each run)")
    ] = None,
    timeout: Annotated[
        float, typer.Option(help="seconds the whole check may run before it is stopped")
    ] = 600.0,
    memory_gb: KernelMemory = 0.0,
    as_json: JsonReport = False,
    debug: Annotated[bool, typer.Option(help="show tracebacks of failures")] = False,
    target: Annotated[
        str | None, typer.Option(help="TPU target: time the kernel there (stage 6) once you approve it")
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="timed runs on the TPU; the median is reported")] = 50,
) -> None:
    """Check a kernel stage by stage: correctness, honesty, lowering, compile, PyTorch. Exit 1 on a fail, 3
    when interpret mode cannot run the kernel.

    Stages: interpret-mode correctness with race detection and poisoned outputs; no reference calls,
    jnp fallbacks, swallowed errors or special-cased shapes; jax.export for TPU; XLA:TPU compile per
    generation with VMEM and a roofline estimate; torch.tpu.pallas.jax_op on fake tensors.

    With --target, a kernel that passes is then timed on your TPU VM: the exact command is shown and
    runs only after you approve it (on this terminal, or `tpu-agent approvals approve ID`).

    Example: tpu-agent kernel check my_matmul.py -g v5e -g v6e   (or: ... --target my-v6e)
    """
    from tpu_runtime.cli.approval_prompt import tty_approver
    from tpu_runtime.cli.render.kernel.terminal import render_check
    from tpu_runtime.kernels.job import (
        DEFAULT_GENERATIONS,
        KernelCheckRequest,
        KernelToolError,
        run_kernel_check,
    )
    from tpu_runtime.kernels.remote_timing import TimingOptions

    chosen = _split(stages.split(",")) if stages else []
    unknown = [s for s in chosen if s not in _STAGE_NAMES]
    if unknown or not chosen:
        raise BadInput(f"--stages takes a comma-separated subset of {','.join(_STAGE_NAMES)}, got {stages!r}")
    if not file.is_file():
        raise BadInput(f"no such kernel file: {file}")
    request = KernelCheckRequest(
        file=file,
        params=parse_assignments(param or [], "--param"),
        shapes=[parse_shape(s, "--shape") for s in shape] if shape else None,
        target_shape=parse_shape(target_shape, "--target-shape") if target_shape else None,
        generations=_split(generation) if generation else list(DEFAULT_GENERATIONS),
        stages=chosen,  # type: ignore[arg-type]
        no_torch=no_torch,
        seed=seed,
        timeout_s=timeout,
        memory_gb=memory_gb,
        timing=TimingOptions(target=target, repeats=repeats),
    )
    try:
        with ProgressBar(err, transient=False) as progress:
            report = run_kernel_check(request, progress, tty_approver(progress) if target else None)
    except KernelToolError as exc:
        if debug and exc.detail:
            err.print(exc.detail, markup=False, highlight=False)
        raise BadInput(
            exc.message + ("" if debug or not exc.detail else " (--debug shows the log)")
        ) from None
    if as_json:
        print_json(report)
    else:
        render_check(report, out, debug=debug)
    raise typer.Exit(_EXIT[report.verdict])


@kernel_app.command("tune")
def kernel_tune(
    file: Annotated[Path, typer.Argument(help="the kernel module (.py) to tune")],
    budget: Annotated[
        int, typer.Option(min=1, help="most candidates to try in this run (fixed when it starts)")
    ],
    space: Annotated[
        str | None,
        typer.Option(help="parameter space as JSON, e.g. '{\"block_m\": [128, 256]}' (default: SPACE)"),
    ] = None,
    generation: Annotated[str, typer.Option("--generation", "-g", help="TPU generation to rank for")] = "v6e",
    run_dir: Annotated[
        Path | None, typer.Option(help="run folder (default: one per file, generation and space)")
    ] = None,
    attempt_timeout: Annotated[
        float, typer.Option(help="seconds one attempt may run before it is stopped")
    ] = 600.0,
    memory_gb: KernelMemory = 0.0,
    as_json: JsonReport = False,
    target: Annotated[
        str | None,
        typer.Option(help="TPU target: time the passing candidates there and rank by measured time"),
    ] = None,
    repeats: Annotated[int, typer.Option(min=1, help="timed runs per candidate on the TPU")] = 50,
) -> None:
    """Autotune within a budget, every attempt recorded in a resumable run folder.

    A candidate that fails any check never wins. Offline, candidates are ranked by the compile-time
    roofline estimate; the best is reported with its margin over DEFAULTS. With --target, the candidates
    that pass are timed on your TPU VM as one loop whose whole plan and budget you approve once, and the
    ranking is by measured median time.

    Example: tpu-agent kernel tune my_matmul.py --budget 16 -g v6e   (or: ... --target my-v6e)
    """
    from tpu_runtime.cli.approval_prompt import tty_approver
    from tpu_runtime.cli.render.kernel.terminal import render_tune
    from tpu_runtime.kernels.remote_timing import TimingOptions
    from tpu_runtime.kernels.tune import KernelTuneRequest, run_kernel_tune

    parsed_space = None
    if space is not None:
        try:
            parsed_space = json.loads(space)
        except json.JSONDecodeError as exc:
            raise BadInput(f"--space is not valid JSON: {exc}") from None
        if not isinstance(parsed_space, dict) or not all(isinstance(v, list) for v in parsed_space.values()):
            raise BadInput('--space must be a JSON object of lists, e.g. {"block_m": [128, 256]}')
    if not file.is_file():
        raise BadInput(f"no such kernel file: {file}")
    request = KernelTuneRequest(
        file=file,
        budget=budget,
        space=parsed_space,
        generation=generation,
        run_dir=run_dir,
        attempt_timeout_s=attempt_timeout,
        memory_gb=memory_gb,
        timing=TimingOptions(target=target, repeats=repeats),
    )
    with ProgressBar(err, transient=False) as progress:  # KernelToolError: exit 2 at the boundary
        report = run_kernel_tune(request, progress, tty_approver(progress) if target else None)
    if as_json:
        print_json(report)
    else:
        render_tune(report, out)
    raise typer.Exit(0 if report.best is not None else 1)
