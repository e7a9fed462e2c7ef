"""What a command imports decides how long a person waits before it answers (issue: speed where users
wait): `--help` and `diagnose` on a crash log load neither the ML stacks nor what only other commands use.

Each case runs the real entry point in a fresh interpreter and lists, at exit, which of the watched
modules got imported. `TORCH_DEVICE_BACKEND_AUTOLOAD` is left unset, as in a person's shell: were torch
imported, torch_tpu and libtpu would load with it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.subprocess_support import run_text

REPO = Path(__file__).resolve().parents[1]
CRASH_LOG = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"

ML = ["torch", "torch_tpu", "jax", "chromadb", "transformers", "bm25s", "xprof"]
#: Loaded only by commands that run remote work, read profiles or talk to an MCP client or LLM.
OTHER_COMMANDS = ["numpy", "google.protobuf", "asyncio", "ssl", "asyncssh", "mcp", "anthropic", "sqlite3"]

_PROBE = """
import atexit, sys
watched = sys.argv[1].split(",")
def report():
    sys.stderr.write("IMPORTED " + ",".join(m for m in watched if m in sys.modules) + "\\n")
atexit.register(report)
sys.argv = ["tpu-agent", *sys.argv[2:]]
from tpu_runtime.cli.app import main
main()
"""


def _imported(watched: list[str], *args: str) -> tuple[int, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    done = run_text(
        [sys.executable, "-c", _PROBE, ",".join(watched), *args],
        env=env,
        timeout=120,
        check=False,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("IMPORTED "))
    names = line.removeprefix("IMPORTED ").strip()
    return done.returncode, names.split(",") if names else []


def test_help_imports_only_the_cli() -> None:
    """`--help` needs typer and rich; not even pydantic, yaml or the report models."""
    watched = [*ML, *OTHER_COMMANDS, "pydantic", "yaml", "tpu_runtime.diagnose", "tpu_runtime.onboard"]
    code, imported = _imported(watched, "--help")
    assert code == 0
    assert imported == []


def test_diagnose_on_a_crash_log_imports_no_profile_reader() -> None:
    """A crash log is matched against rules: no numpy or protobuf (the profile reader), no ML stack."""
    code, imported = _imported(
        [*ML, *OTHER_COMMANDS, "tpu_runtime.diagnose.profile"], "diagnose", str(CRASH_LOG)
    )
    assert code == 0
    assert imported == []


@pytest.mark.parametrize(
    "args",
    [("ops", "show", "aten::nansum"), ("route", "my run is out of HBM")],
    ids=["ops-show", "route"],
)
def test_lookup_commands_import_no_ml_stack(args: tuple[str, ...]) -> None:
    code, imported = _imported([*ML, *OTHER_COMMANDS], *args)
    assert code == 0
    assert imported == []
