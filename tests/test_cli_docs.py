"""docs/cli.md is the `--help` of every command; it must match the CLI as it is now."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("cli_docs", ROOT / "scripts" / "cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_command_reference_is_up_to_date() -> None:
    generator = _generator()
    expected = generator.render()
    current = (ROOT / "docs" / "cli.md").read_text()
    assert current == expected, "docs/cli.md is out of date: run python scripts/cli_docs.py"


@pytest.mark.slow
def test_the_reference_covers_every_command_and_subcommand() -> None:
    import typer

    from tpu_runtime.cli.app import app

    generator = _generator()
    paths = list(generator.command_paths(typer.main.get_command(app)))
    titles = {
        line.removeprefix("## `").removesuffix("`")
        for line in generator.render().splitlines()
        if line.startswith("## `")
    }
    assert {("kernel", "check"), ("approvals", "approve"), ("kb", "build"), ("diagnose",)} <= set(paths)
    assert titles == {" ".join(("tpu-agent", *p)) for p in paths}
