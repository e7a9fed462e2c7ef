"""MCP progress notifications from the runtime's `ProgressFn` calls, which arrive on worker threads."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio.from_thread
from mcp.server.mcpserver import Context

if TYPE_CHECKING:
    from anyio.lowlevel import EventLoopToken

    from tpu_runtime.progress import ProgressFn

logger = logging.getLogger(__name__)


def send_progress(
    ctx: Context, done: float, total: float, message: str, token: EventLoopToken | None = None
) -> None:
    """One progress notification from a thread outside the event loop (`token` names the loop when the
    thread is not an AnyIO worker). Best effort: a notification that cannot be sent never fails the call."""
    try:
        anyio.from_thread.run(ctx.report_progress, done, total, message, token=token)
    except Exception as exc:
        logger.debug("progress notification dropped: %s", exc)


def workflow_progress(ctx: Context, workflow: str, *, finished: str | None = None) -> ProgressFn:
    """A `ProgressFn` (called on the worker thread) that counts the workflow's steps for MCP: step index
    plus the fraction of the step, out of the number of steps, only ever increasing as MCP requires; a
    step id the workflow does not name (a reader's sub-step) counts as the step it runs in.

    With `finished`, the end of a step is announced by the start of the next and the end of the last by
    `finished`; without, no step reports itself complete (the tool's result says that)."""
    from tpu_runtime.workflow import load_workflow

    steps = load_workflow(workflow).steps
    order = {step.id: i for i, step in enumerate(steps)}
    titles = {step.id: step.title for step in steps}
    total = float(len(steps))
    most = 1.0 if finished is not None else 0.99
    last = -1.0

    def notify(step_id: str, message: str, fraction: float) -> None:
        nonlocal last
        index = order.get(step_id, max(int(last), 0))
        done = index + min(max(fraction, 0.0), most)
        ends = finished is not None and fraction >= 1.0
        if done <= last or (ends and index < len(steps) - 1):
            return
        last = done
        title = titles.get(step_id, step_id)
        if ends and finished is not None:
            text = finished
        else:
            text = title if message in ("", title) else f"{title}: {message}"
        send_progress(ctx, done, total, text)

    return notify
