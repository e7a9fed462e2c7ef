"""`tpu-agent diagnose PATH [--json]` without typer: the console script runs this plain command line
itself, through the same code as the typer command (`tpu_runtime.cli.diagnose_run`), so it prints the
same bytes and exits with the same code.

typer (with the pydantic adapters it converts parameters through), click and the CLI's other command
modules cost about 0.2 s of CPU before a command starts, several times the analysis of a small profile.
Only one PATH that is not an option (not `-`, stdin) with at most one `--json` takes this route; any
other flag, several paths or a shell-completion request goes to the typer app unchanged. Input the job
rejects (a missing file, a file of no known kind) gets the `error:` line and exit code of the CLI's error
boundary, printed by the same function.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False

if TYPE_CHECKING:  # typing's names only: this module is imported before every plain `diagnose`
    from collections.abc import Sequence

__all__ = ["plain_diagnose", "serve"]

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


def serve(argv: Sequence[str]) -> int | None:
    """Run a plain `diagnose` command line and return its exit code; None when the typer app is to run
    it instead (having printed nothing to stdout: an EOFError ends the job before its report)."""
    parsed = plain_diagnose(argv)
    if parsed is None:
        return None
    path, as_json = parsed
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
        return None  # typer prints its abort message (a truncated compressed file raises this)
    except BrokenPipeError:
        # as click does when the reader has gone: no traceback, no second error at exit, status 1
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
