"""`tpu-agent bundle --harness NAME [--out DIR] [--json]`: write one coding assistant's native bundle."""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from tpu_runtime.cli.consoles import make_console

err = make_console(stderr=True)
out = make_console()


class HarnessChoice(StrEnum):
    claude_code = "claude-code"
    gemini_cli = "gemini-cli"
    codex = "codex"
    antigravity = "antigravity"
    cursor = "cursor"
    vscode = "vscode"


def bundle(
    harness: Annotated[HarnessChoice, typer.Option(help="which client's layout to write")],
    out_dir: Annotated[
        Path | None,
        typer.Option("--out", help="folder to write into (default: where this checkout keeps the bundle)"),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the files written as JSON")] = False,
) -> None:
    """Build a client's bundle (MCP servers, instructions, approval guard) from agents/, skills/ and hooks/.

    Example: tpu-agent bundle --harness codex --out codex-bundle --json
    """
    from tpu_runtime.bundle import build_bundle, load_source, write_bundle
    from tpu_runtime.bundle.source import SourceError
    from tpu_runtime.cli.serve_cmd import server_modules

    try:
        source = load_source(list(server_modules()))
    except SourceError as exc:
        err.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    files = build_bundle(harness.value, source)
    written = write_bundle(harness.value, source, out_dir)
    target = out_dir or source.root
    if as_json:
        payload = {
            "harness": harness.value,
            "out": str(target),
            "files": [item.path for item in files],
            "written": [str(path) for path in written],
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return
    out.print(
        f"{harness.value}: {len(files)} files in {target} ({len(written)} changed)",
        highlight=False,
        markup=False,
    )
