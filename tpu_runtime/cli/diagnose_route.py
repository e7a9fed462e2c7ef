"""`tpu-agent diagnose PATH [--json]` without typer: the console script runs this plain command line
itself, through the same code as the typer command (`tpu_runtime.cli.diagnose_run`), so it prints the
same bytes and exits with the same code.

typer (with the pydantic adapters it converts parameters through), click and the CLI's other command
modules cost about 0.2 s of CPU before a command starts, several times the analysis of a small profile.
Only one PATH that is not an option (not `-`, stdin) with at most one `--json` takes this route; any
other flag, several paths or a shell-completion request goes to the typer app unchanged. Input the job
rejects (a missing file, a file of no known kind) gets the `error:` line and exit code of the CLI's error
boundary, printed by the same function.

An XProf profile goes further: the report models are defined without pydantic
(`tpu_runtime.model_base.use_plain_models`), whose import would be the largest cost left, and `--json`
writes them as pydantic would (`model_base.plain_dump`); any other input, or a playbook whose
precompiled form is out of date, keeps pydantic's models.

The process ends with the command, so the cyclic garbage collector stays off from the start of the
route (the job pauses it anyway, `tpu_runtime.gc_pause`) and what exists at its end is frozen
(`gc.freeze`): the interpreter's last collection at exit then does not walk every object the imports
made, about 0.02 s of CPU on the small profile. An EOFError hands the command line to typer with the
collector on again.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False

if TYPE_CHECKING:  # typing's names only: this module is imported before every plain `diagnose`
    from collections.abc import Sequence

__all__ = ["plain_diagnose", "plain_models_serve", "serve"]

COMMAND = "diagnose"
JSON_FLAG = "--json"


def plain_diagnose(argv: Sequence[str]) -> tuple[str, bool] | None:
    """(PATH, as_json) when `argv` is `diagnose PATH` with at most one `--json` before or after it;
    None for any other command line."""
    if len(argv) < 2 or argv[0] != COMMAND:
        return None
    rest = list(argv[1:])
    as_json = JSON_FLAG in rest
    if as_json:
        rest.remove(JSON_FLAG)
    if len(rest) != 1 or rest[0].startswith("-") or not rest[0]:
        return None
    if any(name.startswith("_") and name.endswith("_COMPLETE") for name in os.environ):
        return None  # click answers a shell-completion request instead of running the command
    return rest[0], as_json


def plain_models_serve(path: str) -> bool:
    """Whether the report of `path` can be built on plain models: it is an XProf profile (the
    analyser constructs its models from typed fields; other readers validate theirs), the diagnose
    playbook is read precompiled (validating it would need pydantic), and no model is loaded yet. Only
    a folder or a `*.pb` file is recognised here (a large log or trace is not read twice)."""
    from pathlib import Path

    from tpu_runtime import model_base

    if any(name in sys.modules for name in model_base.MODEL_MODULES):
        return False
    if not (path.endswith(".pb") or Path(path).is_dir()):
        return False
    from tpu_runtime.diagnose.detect import detect_input
    from tpu_runtime.errors import TpuAgentError
    from tpu_runtime.resources import workflows_dir
    from tpu_runtime.yaml_data import compiled

    try:
        if detect_input(path).kind != "xspace":
            return False
    except (TpuAgentError, OSError, EOFError):
        return False  # the job meets the same input again and reports it
    return compiled(workflows_dir() / f"{COMMAND}.yaml", "workflow") is not None


def serve(argv: Sequence[str]) -> int | None:
    """Run a plain `diagnose` command line and return its exit code; None when the typer app is to run
    it instead (having printed nothing to stdout: an EOFError ends the job before its report)."""
    parsed = plain_diagnose(argv)
    if parsed is None:
        return None
    path, as_json = parsed
    gc.disable()
    if plain_models_serve(path):
        from tpu_runtime.model_base import use_plain_models

        use_plain_models()
    from tpu_runtime.cli.consoles import print_error
    from tpu_runtime.cli.diagnose_run import DEFAULT_TOP, diagnose_command
    from tpu_runtime.errors import TpuAgentError

    try:
        diagnose_command([path], as_json=as_json, top=DEFAULT_TOP)
        sys.stdout.flush()
    except TpuAgentError as exc:  # as the CLI's error boundary (tpu_runtime.cli.boundary) reports it
        print_error(str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130  # as typer ends an interrupted command: no message
    except EOFError:
        gc.enable()
        return None  # typer prints its abort message (a truncated compressed file raises this)
    except BrokenPipeError:
        # as click does when the reader has gone: no traceback, no second error at exit, status 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        if not gc.isenabled():  # the process ends next: its exit collection need not walk all this again
            gc.freeze()
    return 0
