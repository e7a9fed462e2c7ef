"""The `tpu-agent` console script: prints the top-level help from the per-user cache when it is
current (`tpu_runtime.cli.help_cache`), runs a plain `diagnose PATH [--json]` itself
(`tpu_runtime.cli.diagnose_route`), and hands every other command line to the typer app unchanged.

It imports neither typer, rich nor pydantic itself, so `tpu-agent --help` costs little more than the
interpreter's start-up once the help has been rendered by typer once, and `diagnose` of a small
profile is not dominated by building the command tree.
"""

from __future__ import annotations

import sys

from tpu_runtime.cli import help_cache


def main() -> None:
    argv = sys.argv[1:]
    code = help_cache.serve(argv)
    if code is None and argv[:1] == ["diagnose"]:
        from tpu_runtime.cli import diagnose_route

        code = diagnose_route.serve(argv)
    if code is not None:
        sys.exit(code)
    from tpu_runtime.cli.app import main as typer_main

    help_cache.render_and_keep(argv, typer_main)
