"""The one error tree: every error class the suite raises on purpose has the common base and the CLI's
exit code, and the CLI boundary turns any of them into one `error:` line and that exit code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tpu_runtime.cli.boundary import ErrorBoundary
from tpu_runtime.errors import BadInput, Denied, TpuAgentError

ROOT = Path(__file__).resolve().parents[1]
BUILTIN = {"Exception", "BaseException", "ValueError", "RuntimeError", "OSError", "KeyError", "TypeError"}
# Control flow, or code that runs where tpu_runtime cannot be imported (the worker gate's source and
# onboard/loader.py are sent to the worker as they are): outside the tree on purpose.
OUTSIDE = {"TpuAgentError", "StopCapture", "Refused", "_TurnLimit", "ModelLoadError"}


def _error_roots() -> dict[str, str]:
    """Each class in the suite's code whose first base is a builtin exception: `module.Class` -> base."""
    roots: dict[str, str] = {}
    for folder in ("tpu_runtime", "mcp_servers"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and node.bases:
                    first = node.bases[0]
                    if isinstance(first, ast.Name) and first.id in BUILTIN:
                        roots[f"{path.relative_to(ROOT)}:{node.name}"] = first.id
    return roots


def test_every_error_class_has_the_common_base() -> None:
    roots = _error_roots()
    assert "tpu_runtime/errors.py:TpuAgentError" in roots
    strays = sorted(name for name in roots if name.split(":")[1] not in OUTSIDE)
    assert strays == [], f"derive these from a kind in tpu_runtime/errors.py: {strays}"


def test_old_builtin_bases_still_catch_them() -> None:
    from tpu_runtime.knowledge.store import KbIndexError
    from tpu_runtime.remote.spec import SpecError
    from tpu_runtime.remote.tpu_api import TpuApiError

    assert issubclass(SpecError, ValueError) and SpecError("x").exit_code == 2
    assert issubclass(KbIndexError, RuntimeError) and KbIndexError("x").exit_code == 1
    assert issubclass(TpuApiError, RuntimeError) and TpuApiError("x").exit_code == 2


def _app(exc: Exception) -> typer.Typer:
    app = typer.Typer(cls=ErrorBoundary)

    @app.command()
    def boom() -> None:
        raise exc

    @app.command()
    def fine() -> None:
        print("ok")

    return app


@pytest.mark.parametrize(
    ("exc", "code"),
    [(TpuAgentError("it failed"), 1), (BadInput("no such file: x [y]"), 2), (Denied("no"), 4)],
)
def test_the_cli_boundary_prints_one_line_and_exits_with_the_errors_code(exc: Exception, code: int) -> None:
    result = CliRunner().invoke(_app(exc), ["boom"])
    assert result.exit_code == code
    assert result.output.strip() == f"error: {exc}"  # printed as given: brackets are not markup


def test_other_exceptions_are_not_swallowed() -> None:
    result = CliRunner().invoke(_app(KeyError("k")), ["boom"])
    assert isinstance(result.exception, KeyError)
    assert CliRunner().invoke(_app(KeyError("k")), ["fine"]).output == "ok\n"
