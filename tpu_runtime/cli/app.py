"""The `tpu-agent` command line. It parses, calls a workflow, and renders the report; nothing more."""

from __future__ import annotations

import json
import sys
import typing
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tpu_runtime import __version__
from tpu_runtime.cli import lean_help
from tpu_runtime.cli.boundary import ErrorBoundary
from tpu_runtime.cli.consoles import make_console, print_json
from tpu_runtime.cli.progress_bar import ProgressBar
from tpu_runtime.errors import BadInput, TpuAgentError

lean_help.install()

app = typer.Typer(
    name="tpu-agent",
    help="Move PyTorch models onto Cloud TPUs: op coverage, numerics, HBM fit, diagnostics, kernels, docs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=ErrorBoundary,
)
ops_app = typer.Typer(
    help="TorchTPU's op table: refresh it from the installed torch_tpu, or look an op up.",
    no_args_is_help=True,
)
app.add_typer(ops_app, name="ops")

out = make_console()
err = make_console(stderr=True)


class ShrinkChoice(StrEnum):
    auto = "auto"
    always = "always"
    never = "never"


class WeightDtypeChoice(StrEnum):
    f32 = "f32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    int4 = "int4"


class KVDtypeChoice(StrEnum):
    f32 = "f32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"


@app.command()
def version() -> None:
    """Print the tpu-agent version.  Example: tpu-agent version"""
    out.print(__version__)


@app.command()
def onboard(
    model_file: Annotated[
        Path | None, typer.Argument(help="a .py file that defines the model and example inputs")
    ] = None,
    hf_config: Annotated[
        Path | None,
        typer.Option(help="a Hugging Face config.json or a checkpoint folder with one (no weights needed)"),
    ] = None,
    dtype: Annotated[
        WeightDtypeChoice | None, typer.Option(help="weight dtype as served (default: as the model is built)")
    ] = None,
    kv_cache_dtype: Annotated[
        KVDtypeChoice | None, typer.Option(help="KV cache dtype for serving (default: the weights')")
    ] = None,
    entry: Annotated[str | None, typer.Option(help="module:callable returning (model, inputs)")] = None,
    batch: Annotated[int | None, typer.Option(min=1, help="batch size to size HBM for")] = None,
    seq: Annotated[int | None, typer.Option(min=1, help="sequence length to size HBM for")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    md: Annotated[Path | None, typer.Option(help="also write the report as Markdown")] = None,
    html: Annotated[
        Path | None, typer.Option(help="also write a self-contained HTML report with charts")
    ] = None,
    shrink: Annotated[
        ShrinkChoice, typer.Option(help="run a shallower copy for op capture")
    ] = ShrinkChoice.auto,
    numerics: Annotated[bool, typer.Option(help="compare layers against a float64 CPU reference")] = True,
    xla: Annotated[
        str, typer.Option(help="compile for compile-only TPU topologies: auto, none, all, or e.g. v6e,v5e")
    ] = "auto",
    timeout: Annotated[float, typer.Option(help="seconds the model may run before it is stopped")] = 600.0,
    memory_gb: Annotated[float, typer.Option(help="host memory the model may use (0: 3/4 of RAM)")] = 0.0,
    top: Annotated[int, typer.Option(help="rows per table in the terminal summary")] = 15,
    debug: Annotated[bool, typer.Option(help="show the model's traceback when it fails")] = False,
    target: Annotated[
        str | None, typer.Option(help="TPU target: also run the numerics check there, once you approve it")
    ] = None,
) -> None:
    """Which ops TorchTPU lacks, whether the numbers match, whether it fits in HBM, how to serve it.

    Example: tpu-agent onboard examples/tiny_gpt.py --batch 8 --seq 1024 --html report.html
    Example: tpu-agent onboard --hf-config Llama-3-8B/config.json --dtype bf16 --batch 8 --seq 8192
    """
    from tpu_runtime.cli.approval_prompt import tty_approver
    from tpu_runtime.onboard.job import OnboardRequest, run_onboard
    from tpu_runtime.remote.targets import TargetError
    from tpu_runtime.sandbox import ChildFailure

    if (model_file is None) == (hf_config is None):
        raise BadInput("give a model file or --hf-config PATH (one of them)")
    if model_file is not None and model_file.is_dir():
        hint = (
            f"it holds config.json: onboard the architecture with --hf-config {model_file}"
            if (model_file / "config.json").is_file()
            else "give the model's .py file (or --hf-config for a folder with config.json)"
        )
        raise BadInput(f"{model_file} is a folder; {hint}")
    if model_file is not None and not model_file.is_file():
        raise BadInput(f"no such file: {model_file}")
    if hf_config is not None and not hf_config.exists():
        raise BadInput(f"no such file or folder: {hf_config}")
    if hf_config is not None and target:
        raise BadInput("--target compares a model file's layers on the device; not with --hf-config")
    request = OnboardRequest(
        model_file=model_file,
        hf_config=hf_config,
        weight_dtype=dtype.value if dtype else None,
        kv_cache_dtype=kv_cache_dtype.value if kv_cache_dtype else None,
        entry=entry,
        batch=batch,
        seq=seq,
        shrink=shrink.value,
        numerics=numerics,
        timeout_s=timeout,
        memory_gb=memory_gb,
        xla=xla,
        target=target,
    )
    try:
        with ProgressBar(err, with_step=True) as progress:
            report = run_onboard(request, progress, approver=tty_approver(progress) if target else None)
    except ChildFailure as failure:
        if debug and failure.detail:
            err.print(failure.detail, markup=False, highlight=False)
        raise TpuAgentError(failure.message + ("" if debug else " (--debug shows the traceback)")) from None
    except TargetError as exc:
        raise BadInput(f"--target: {exc}") from None
    if as_json:
        print_json(report)
    else:
        from tpu_runtime.cli.render.onboard.terminal import render_onboard_terminal

        render_onboard_terminal(report, out, top=top)
    if md:
        from tpu_runtime.cli.render.onboard.markdown import render_onboard_markdown

        md.write_text(render_onboard_markdown(report))
        err.print(f"wrote {md}")
    if html:
        from tpu_runtime.cli.render.onboard.html import render_onboard_html

        html.write_text(render_onboard_html(report))
        err.print(f"wrote {html}")


@ops_app.command("refresh")
def ops_refresh() -> None:
    """Regenerate TorchTPU's op table from the installed torch_tpu.  Example: tpu-agent ops refresh"""
    from tpu_runtime.onboard.op_table import refresh_op_table

    try:
        path = refresh_op_table()
    except RuntimeError as exc:
        raise TpuAgentError(str(exc)) from None
    out.print(f"wrote {path}")


@ops_app.command("show")
def ops_show(
    op: Annotated[str, typer.Argument(help="an ATen op, e.g. aten::nonzero or aten::add.Tensor")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """How TorchTPU handles one op, and what to do when it is missing.

    Example: tpu-agent ops show aten::_fft_r2c
    """
    from tpu_runtime.onboard.coverage import aten_op_exists, classify
    from tpu_runtime.onboard.op_table import load_op_table
    from tpu_runtime.onboard.remedies import remedies_for
    from tpu_runtime.onboard.risks import shape_notes

    table = load_op_table()
    name = op if "::" in op else f"aten::{op}"
    verdict = classify(name, table)
    if verdict.kind == "unknown" and name.startswith("aten::") and not aten_op_exists(name):
        raise BadInput(f"{name} is not an operator of the installed torch (check the spelling and overload)")
    remedies = remedies_for(name, table) if verdict.status == "missing" else []
    notes = shape_notes(name)
    if as_json:
        payload = {
            "op": name,
            "status": verdict.status,
            "detail": verdict.detail,
            "tpu_op": verdict.tpu_op,
            "table": table.source,
            "notes": notes,
            "remedies": [r.model_dump(mode="json") for r in remedies],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    out.print(f"[bold]{name}[/]: {verdict.status} — {verdict.detail}", highlight=False)
    for note in notes:
        out.print(f"  [yellow]{note}[/]", highlight=False)
    for remedy in remedies:
        out.print(f"  [cyan]{remedy.kind}[/]: {remedy.summary}", highlight=False)
        if remedy.code:
            out.print(remedy.code, markup=False, highlight=False)


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json", help="print the checks as JSON")] = False) -> None:
    """Check this machine for the hazards that make TPU tooling hang or crawl; exit 1 on a problem.

    Example: tpu-agent doctor   (then paste the export lines it prints into your shell profile)
    """
    from rich.table import Table
    from rich.text import Text

    from tpu_runtime.doctor import run_doctor

    report = run_doctor()
    if as_json:
        print_json(report)
    else:
        style = {"ok": "green", "warn": "yellow", "problem": "bold red", "info": "cyan"}
        table = Table("check", "", "what was found", "what to do", box=None, pad_edge=False)
        for c in report.checks:
            table.add_row(c.name, Text(c.status, style=style[c.status]), Text(c.detail), Text(c.fix))
        out.print(table)
        if report.exports:
            out.print("\nFor this machine, in your shell profile:")
            for line in report.exports:
                out.print(f"  {line}", markup=False, highlight=False)
    if report.problems:
        raise typer.Exit(1)


@app.command()
def serve(
    name: Annotated[
        str,
        typer.Argument(help="which MCP server: onboarding, diagnostics, kernels, knowledge, runs, or all"),
    ],
    http: Annotated[
        str | None,
        typer.Option(
            metavar="HOST:PORT", help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio"
        ),
    ] = None,
) -> None:
    """Run an MCP server for coding agents (stdio unless --http is given).

    Example: tpu-agent serve all   (or: tpu-agent serve onboarding --http 127.0.0.1:8765)
    """
    from tpu_runtime.cli.serve_cmd import run_server

    run_server(name, http)  # a bad name or address is a BadInput: exit 2 at the boundary


from tpu_runtime.cli.run_cmd import register_remote_commands  # noqa: E402  (targets, run, approvals, audit)

register_remote_commands(app)


from tpu_runtime.cli.kb_cmd import register_kb  # noqa: E402  (imports typer and rich only)

register_kb(app)


from tpu_runtime.cli.diagnose_cmd import capture_profile, diagnose  # noqa: E402  (typer and rich only)

app.command()(diagnose)
app.command("capture-profile", no_args_is_help=True)(capture_profile)


from tpu_runtime.cli.route_cmd import register_route  # noqa: E402  (imports typer and rich only)

register_route(app)


from tpu_runtime.cli.kernel_cmd import kernel_app  # noqa: E402  (imports typer and rich only)

app.add_typer(kernel_app, name="kernel")


from tpu_runtime.cli.bundle_cmd import bundle  # noqa: E402  (imports typer and rich only)

app.command()(bundle)


def _resolve_annotations(group: typer.Typer) -> None:
    """Evaluate each command's string annotations once, here, instead of four times in typer.

    Typer builds every command of the tree on each start (even for `--help`) and evaluates each
    parameter's annotation string in `inspect.signature(eval_str=True)` and in `get_type_hints`, twice
    per command: with `from __future__ import annotations` that was most of the start-up time after the
    imports. Resolved annotations are the same objects typer would have built.
    """
    for info in group.registered_commands:
        if info.callback is not None:
            info.callback.__annotations__ = typing.get_type_hints(info.callback, include_extras=True)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            _resolve_annotations(sub.typer_instance)


_resolve_annotations(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
