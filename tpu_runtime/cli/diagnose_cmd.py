"""`tpu-agent diagnose PATH...` and `tpu-agent capture-profile SCRIPT`: parse, call the runtime, render.

`diagnose` runs the diagnose job and renders its report. `capture-profile` plans a profile capture on a
TPU VM (tpu_runtime.diagnose.profile_capture), files it as a run request and hands it to `tpu-agent run`'s
approval flow; it is its own command because `diagnose` takes PATH arguments and so cannot be a group.

Imports nothing heavy at module level (the CLI must start fast and without torch or jax): the job and
the renderers are imported inside the command.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tpu_runtime.cli.diagnose_run import DEFAULT_TOP, diagnose_command, err

__all__ = ["capture_profile", "diagnose"]


class CaptureFramework(StrEnum):
    torchtpu = "torchtpu"
    jax = "jax"


def diagnose(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            help="crash log (or - for stdin), *.xplane.pb or profile folder, torch.profiler trace "
            "(.json/.json.gz), --xla_dump_to folder, or a metrics report",
        ),
    ],
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
    md: Annotated[Path | None, typer.Option(help="also write the report as Markdown")] = None,
    html: Annotated[
        Path | None, typer.Option(help="also write a self-contained HTML report with a step timeline")
    ] = None,
    top: Annotated[int, typer.Option(min=1, help="rows per table (ops, buffers, syncs)")] = DEFAULT_TOP,
    compare: Annotated[
        str | None,
        typer.Option(
            metavar="OTHER",
            help="baseline XProf profile (*.xplane.pb or run folder): show what changed from it",
        ),
    ] = None,
) -> None:
    """What failed or where the time goes: crash logs, XProf profiles, torch.profiler traces, XLA dumps.

    Exit code 0 when diagnosed (also for an 'unknown' crash), 2 for input that cannot be read.
    Example: tpu-agent diagnose run.log   (or: tpu-agent diagnose trace.json.gz --html report.html;
    tpu-agent diagnose after.xplane.pb --compare before.xplane.pb)
    """
    # input that cannot be read raises BadInputError: `error: ...` and exit 2 at the CLI's boundary
    diagnose_command(paths, as_json=as_json, top=top, compare=compare, md=md, html=html)


def capture_profile(
    script: Annotated[Path, typer.Argument(help="the Python script to profile on the TPU VM")],
    script_args: Annotated[
        list[str] | None, typer.Argument(metavar="[-- ARGS...]", help="arguments for the script, after --")
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", "-t", help="target name from your targets file")
    ] = None,
    framework: Annotated[
        CaptureFramework, typer.Option(help="torchtpu (torch_tpu's profiler) or jax (jax.profiler.trace)")
    ] = CaptureFramework.torchtpu,
    duration: Annotated[
        float, typer.Option(min=0.001, help="seconds to record, counted from the script's start")
    ] = 60.0,
    out_dir: Annotated[
        str, typer.Option(help="profile folder on the TPU VM, relative to the run's folder")
    ] = "profile",
    worker: Annotated[str, typer.Option(help="all, one index, or a comma list like 0,2")] = "all",
    upload: Annotated[
        list[Path] | None, typer.Option(help="another file or folder the script needs, sent beside it")
    ] = None,
    python: Annotated[str, typer.Option(help="the Python interpreter on the TPU VM")] = "python3",
    as_json: Annotated[bool, typer.Option("--json", help="print the plan and events as JSON lines")] = False,
) -> None:
    """Record an XProf profile of SCRIPT on a TPU VM, after you approve it, and fetch it back.

    Shows the plan, files it as a run request and asks for approval on this terminal.
    Without a terminal it exits 3 with the request id: approve it with `tpu-agent approvals approve ID`,
    then run it with `tpu-agent run --request ID`.
    Example: tpu-agent capture-profile -t my-v6e --framework jax --duration 30 train.py -- --steps 50
    """
    from rich.text import Text

    from tpu_runtime.cli.run_cmd import run
    from tpu_runtime.diagnose.profile_capture import capture_plan, fetched_profiles, request_capture
    from tpu_runtime.errors import BadInput
    from tpu_runtime.remote.engine import RemoteEngine

    if not target:
        raise BadInput("--target is required (see `tpu-agent targets list`)")
    engine = RemoteEngine()
    # a capture, spec or target error is the caller's to fix (exit 2 at the CLI's boundary); a Cloud TPU API
    # failure is external (exit 1)
    plan = capture_plan(
        framework.value,
        script,
        duration,
        out_dir,
        script_args=script_args or [],
        extra_uploads=upload or [],
        python=python,
    )
    request = request_capture(engine, target, plan, workers=worker)
    local = engine.state_path / "downloads" / request.id / "w<worker>" / plan.download
    if as_json:
        line = {"type": "capture_plan", "plan": plan.model_dump(mode="json"), "request_id": request.id}
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    else:
        err.print(Text.assemble(("profile capture ", "bold"), f"({plan.framework}): {plan.profiler}"))
        for text in (
            f"  window: {plan.duration_s:g} s from the script's start; profile written to {plan.out_dir}/ "
            "on each worker",
            f"  fetched back to: {local}",
            f"  after approval, if this command is not waiting:  tpu-agent run --request {request.id}",
        ):
            err.print(text, markup=False, highlight=False, soft_wrap=True)
    run(request=request.id, as_json=as_json)
    found = fetched_profiles(engine.state_path, engine.get_request(request.id))
    if as_json:
        sys.stdout.write(json.dumps({"type": "profiles", "paths": [str(p) for p in found]}) + "\n")
    elif found:
        fetched = "  ".join(str(p) for p in found)
        err.print(f"profile fetched: {fetched}", markup=False, highlight=False, soft_wrap=True)
        err.print(f"next: tpu-agent diagnose {found[0]}", markup=False, highlight=False, soft_wrap=True)
    else:
        err.print("the run ended without a profile folder to fetch", highlight=False)
