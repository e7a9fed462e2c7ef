"""The steps of workflows/onboard.yaml. Each reads and extends an `OnboardContext`.

Only `probe` runs the user's code (in a child process); every later step works on data.
"""

from __future__ import annotations

from tpu_runtime.onboard.capture_types import ModelProbe, RawOp
from tpu_runtime.onboard.job import OnboardContext
from tpu_runtime.onboard.report import OpUse
from tpu_runtime.sandbox import Limits, run_child
from tpu_runtime.workflow import ProgressFn, Step


def probe(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    req = ctx.request
    payload = {
        "model_file": str(req.model_file.resolve()),
        "entry": req.entry,
        "shrink": req.shrink,
        "shrink_above_params": req.shrink_above_params,
        "numerics": req.numerics,
        "modes": list(req.modes),
        "fake_tpu": req.fake_tpu,
    }
    limits = Limits(timeout_s=req.timeout_s, memory_bytes=int(req.memory_gb * 2**30))
    result = run_child(
        "tpu_runtime.onboard.probe:run",
        payload,
        limits,
        cwd=req.model_file.resolve().parent,
        on_progress=lambda stage, fraction: progress(step.id, stage, fraction),
    )
    result.pop("_child", None)
    ctx.probe = ModelProbe.model_validate(result)
    if ctx.probe.shrink_note:
        ctx.notes.append(ctx.probe.shrink_note)


def _judge(raw: list[RawOp], ctx: OnboardContext) -> list[OpUse]:
    from tpu_runtime.onboard.coverage import classify
    from tpu_runtime.onboard.op_table import load_op_table

    table = load_op_table()
    ctx.op_table_source = table.source
    uses = []
    for r in raw:
        verdict = classify(r.op, table)
        uses.append(
            OpUse(
                op=r.op,
                phase=r.phase,
                count=r.count,
                status=verdict.status,
                detail=verdict.detail,
                tpu_op=verdict.tpu_op,
                module=r.module,
                source=r.source,
            )
        )
    return uses


def coverage(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.onboard.op_table import load_op_table
    from tpu_runtime.onboard.remedies import remedies_for

    assert ctx.probe is not None
    ctx.ops = _judge(ctx.probe.raw_ops, ctx)
    ctx.tpu_ops = _judge(ctx.probe.tpu_raw_ops, ctx)
    missing = sorted(
        {u.op for u in ctx.ops if u.status == "missing"}
        | {u.op for u in ctx.tpu_ops if u.status == "missing"}
    )
    ctx.missing = missing
    table = load_op_table()
    for op in missing:
        ctx.remedies.extend(remedies_for(op, table))


def risks(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.onboard.report import Risk
    from tpu_runtime.onboard.risks import find_risks

    assert ctx.probe is not None
    ctx.risks = find_risks(ctx.probe.raw_ops)
    if ctx.probe.input_shapes_vary:
        ctx.risks.append(
            Risk(
                kind="varying_input_shape",
                op="(inputs)",
                source=str(ctx.request.model_file.name),
                detail="get_inputs() returned different shapes on two calls: each new shape compiles again; "
                "pad or bucket inputs to a few fixed shapes",
            )
        )


def preflight(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    """Filled in by the preflight module; kept as a step so the playbook shows it."""
    ctx.notes.extend([])


def serving(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    ctx.notes.extend([])


def device_numerics(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    ctx.notes.extend([])
