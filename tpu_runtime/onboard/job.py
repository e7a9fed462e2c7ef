"""`onboard` as one call: a request in, an `OnboardReport` out. Front ends call this and render.

The steps are those of workflows/onboard.yaml (run by tpu_runtime/workflow.py, implemented with their
context in `tpu_runtime.onboard.steps`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tpu_runtime.onboard.report import OnboardReport
from tpu_runtime.onboard.request import KV_DTYPE_BYTES, OnboardRequest
from tpu_runtime.onboard.steps import OnboardContext, build_report
from tpu_runtime.progress import ProgressFn
from tpu_runtime.workflow import run_workflow

if TYPE_CHECKING:
    from tpu_runtime.remote.gated import Approver

__all__ = ["KV_DTYPE_BYTES", "OnboardContext", "OnboardRequest", "run_onboard"]


def run_onboard(
    request: OnboardRequest, progress: ProgressFn | None = None, approver: Approver | None = None
) -> OnboardReport:
    """Raises `tpu_runtime.sandbox.ChildFailure` when the user's model cannot be run.

    With `request.target`, the device numerics step files a run request; `approver` (a front end's
    prompt) lets the person decide on it now, otherwise it waits for `tpu-agent approvals approve`.
    Raises `TargetError` before anything runs when the target is not in the person's targets file.
    """
    if request.target:
        from tpu_runtime.remote.targets import require_target

        require_target(request.target)

    context = run_workflow("onboard", OnboardContext(request=request, approver=approver), progress)
    return build_report(context)
