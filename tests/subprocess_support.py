"""One way for tests to run a process and read its output, so the CLI, import and client tests agree.

Output is captured as text, the working folder is the checkout unless a test says otherwise, and a
non-zero exit is the caller's to assert (`check=True` raises instead).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.conftest import REPO

__all__ = ["python_output", "run_text"]


def run_text(
    args: Sequence[str],
    *,
    cwd: Path = REPO,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
    input: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`args` run to completion with stdout and stderr captured as text."""
    return subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=timeout,
        input=input,
        check=check,
    )


def python_output(code: str, *, timeout: float = 120) -> str:
    """The stripped stdout of `python -c CODE` run from the checkout, asserted to have exited cleanly."""
    done = run_text([sys.executable, "-c", code], timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
