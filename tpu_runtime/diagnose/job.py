"""`diagnose` as one call: paths in, one `DiagnoseReport` out. Front ends (CLI, MCP) call this and render.

The steps are those of workflows/diagnose.yaml (run by tpu_runtime/workflow.py, implemented in
`tpu_runtime.diagnose.steps`): every input, and the `compare` baseline, is detected first, so a bad path
fails the whole call (BadInputError, one line) before any long analysis starts; then each input goes to
the reader for its kind, and the findings of all inputs are ranked into one list.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

from tpu_runtime.diagnose.report import DiagnoseReport
from tpu_runtime.diagnose.steps import DiagnoseContext
from tpu_runtime.progress import ProgressFn
from tpu_runtime.workflow import run_workflow

__all__ = ["run_diagnose"]


def run_diagnose(
    paths: Sequence[str],
    top: int = 15,
    progress: ProgressFn | None = None,
    stdin: BinaryIO | None = None,
    compare: str | None = None,
) -> DiagnoseReport:
    """Detect and analyse each path; raises BadInputError for input that cannot be read.

    `compare` names a baseline XProf profile (file or run folder): the report's `comparison` then says
    what changed from it to the first profile among `paths`.
    """
    context = DiagnoseContext(paths=list(paths), top=top, stdin=stdin, compare=compare)
    run_workflow("diagnose", context, progress)
    report = context.require_report()
    report.timings.update({f"step:{k}": v for k, v in context.timings.items()})
    return report
