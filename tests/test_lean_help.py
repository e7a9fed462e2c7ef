"""typer's help renderer loads without rich.markdown and rich.traceback, and nothing it prints changes.

Each case runs in a fresh interpreter: the stand-ins act only on the first import of typer.rich_utils.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

_STAND_INS = """
import sys
from tpu_runtime.cli import lean_help
lean_help.install()
import typer.rich_utils as ru
assert "rich.markdown" not in sys.modules and "rich.traceback" not in sys.modules
import rich.markdown, rich.traceback
assert type(rich.markdown) is type(sys) and hasattr(rich.markdown, "MarkdownIt"), "the real module"
assert isinstance(ru.Markdown("# title"), rich.markdown.Markdown)
try:
    raise ValueError("boom")
except ValueError as exc:
    tb = ru.Traceback.from_exception(type(exc), exc, exc.__traceback__)
assert isinstance(tb, rich.traceback.Traceback)
print("ok")
"""

_HELP = """
import sys
if sys.argv[1] == "eager":
    import rich.markdown, rich.traceback  # loaded first: typer.rich_utils gets the real classes
sys.argv = ["tpu-agent", *sys.argv[2:]]
from tpu_runtime.cli.app import main
main()
"""


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color", "FORCE_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=120
    )


def test_stand_ins_give_the_real_classes_on_use() -> None:
    done = _run(_STAND_INS)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@pytest.mark.slow
def test_help_and_usage_errors_print_the_same_with_or_without_the_stand_ins() -> None:
    for args in (("--help",), ("diagnose", "--help"), ("kernel", "--help"), ("no-such-command",)):
        lean, eager = _run(_HELP, "lean", *args), _run(_HELP, "eager", *args)
        assert lean.returncode == eager.returncode
        assert (lean.stdout, lean.stderr) == (eager.stdout, eager.stderr)
        assert "tpu-agent" in lean.stdout + lean.stderr
