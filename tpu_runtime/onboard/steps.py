"""The steps of workflows/onboard.yaml. Each reads and extends an `OnboardContext`.

Only `probe` runs the user's code (in a child process); every later step works on data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tpu_runtime.onboard.capture_types import ModelProbe, RawOp
from tpu_runtime.onboard.report import (
    ModelInfo,
    NumericsReport,
    OnboardReport,
    OpUse,
    Preflight,
    Remedy,
    Risk,
    ServingPlan,
)
from tpu_runtime.onboard.request import KV_DTYPE_BYTES, OnboardRequest
from tpu_runtime.progress import ProgressFn
from tpu_runtime.sandbox import Limits, describe_isolation, run_child
from tpu_runtime.workflow import Step, produced

if TYPE_CHECKING:
    from tpu_runtime.onboard.op_table import OpTable
    from tpu_runtime.remote.gated import Approver, GatedRun


@dataclass
class OnboardContext:
    """What the steps of workflows/onboard.yaml read and write, in order."""

    request: OnboardRequest
    approver: Approver | None = None  # the front end's prompt for the device run; None: leave it pending
    probe: ModelProbe | None = None
    op_table_source: str = ""
    ops: list[OpUse] = field(default_factory=list)
    tpu_ops: list[OpUse] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    remedies: list[Remedy] = field(default_factory=list)
    risks: list[Risk] = field(default_factory=list)
    numerics: NumericsReport | None = None
    preflight: Preflight | None = None
    serving: ServingPlan | None = None
    model_info: ModelInfo | None = None
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    isolation: str = ""


def probe(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    req = ctx.request
    limits = Limits(timeout_s=req.timeout_s, memory_bytes=int(req.memory_gb * 2**30))
    payload = {
        "model_file": str(req.model_file.resolve()) if req.model_file else None,
        "hf_config": str(req.hf_config.resolve()) if req.hf_config else None,
        "weight_dtype": req.weight_dtype,
        "memory_bytes": limits.memory_limit(),
        "entry": req.entry,
        "shrink": req.shrink,
        "shrink_above_params": req.shrink_above_params,
        "numerics": req.numerics,
        "modes": list(req.modes),
        "fake_tpu": req.fake_tpu,
        "xla": req.xla,
        "batch": req.batch,
        "seq": req.seq,
    }
    result = run_child(
        "tpu_runtime.onboard.probe:run",
        payload,
        limits,
        cwd=req.source_dir,
        on_progress=lambda stage, fraction: progress(step.id, stage, fraction),
    )
    child = result.pop("_child", {})
    ctx.isolation = describe_isolation(limits, str(child.get("network", "")))
    ctx.probe = ModelProbe.model_validate(result)
    if ctx.probe.shrink_note:
        ctx.notes.append(ctx.probe.shrink_note)
    ctx.notes.extend(ctx.probe.notes)
    size = ctx.probe.size
    if size is not None and size.build_note:
        ctx.notes.append(size.build_note)


def _judge(raw: list[RawOp], table: OpTable) -> list[OpUse]:
    from tpu_runtime.onboard.coverage import classify

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

    probe = _probe(ctx)
    table = load_op_table()
    ctx.op_table_source = table.source
    ctx.ops = _judge(probe.raw_ops, table)
    ctx.tpu_ops = _judge(probe.tpu_raw_ops, table)
    ctx.missing = sorted({u.op for u in [*ctx.ops, *ctx.tpu_ops] if u.status == "missing"})
    for op in ctx.missing:
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
                source=str(ctx.request.source_path.name),
                detail="get_inputs() returned different shapes on two calls: each new shape compiles again; "
                "pad or bucket inputs to a few fixed shapes",
            )
        )


def preflight(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.onboard import preflight as hbm

    probe = _probe(ctx)
    act = probe.activations
    kv = None
    if probe.kv is not None:
        kv_dtype = ctx.request.kv_cache_dtype
        kv = hbm.KVCacheGeometry(
            layers=probe.kv.layers,
            kv_heads=probe.kv.kv_heads,
            head_dim=probe.kv.head_dim,
            latent_dim=probe.kv.latent_dim,
            sliding_layers=probe.kv.sliding_layers,
            sliding_window=probe.kv.sliding_window,
            dtype_bytes=KV_DTYPE_BYTES[kv_dtype] if kv_dtype else _dtype_bytes(probe.dtype),
        )
    remat = None
    size = probe.size
    if size is not None and size.remat_blocks and act.training_saved_bytes:
        # with each block recomputed in backward, training keeps every block's input and one block's
        # own activations at a time
        blocks = size.remat_blocks
        remat = min(
            act.training_saved_bytes,
            blocks * size.remat_block_input_bytes + act.training_saved_bytes // blocks,
        )
    breakdown = hbm.estimate_memory(
        parameters=probe.parameters,
        parameter_bytes=probe.parameter_bytes,
        buffer_bytes=probe.buffers_bytes,
        activation_bytes_inference=act.inference_peak_bytes,
        # a shallower copy keeps fewer blocks' activations for backward: scale back to full depth
        activation_bytes_training=int(act.training_saved_bytes * act.depth_ratio),
        batch=ctx.request.batch or act.batch,
        seq=ctx.request.seq or act.seq,
        probe_batch=act.batch,
        probe_seq=act.seq,
        kv_cache=kv,
        activation_bytes_training_remat=remat,
    )
    ctx.preflight = hbm.preflight(breakdown)
    seq = ctx.request.seq or act.seq
    if probe.position_limit and seq and seq > probe.position_limit:
        ctx.notes.append(
            f"preflight: --seq {seq} exceeds the model's position limit of {probe.position_limit} tokens: "
            "the model cannot run at that length as written (extend its position encoding first)"
        )
    for generation, measured in probe.xla.items():
        fit = ctx.preflight.generations.get(generation)
        if fit is not None:
            fit.xla_bytes = int(measured["total_bytes"])
    if probe.xla_notes:
        ctx.preflight.xla_note = "; ".join(probe.xla_notes)


def serving(ctx: OnboardContext, step: Step, progress: ProgressFn) -> None:
    from tpu_runtime.onboard.serving import plan_serving

    ctx.model_info = model_info(ctx)
    ctx.serving = plan_serving(ctx.model_info, ctx.missing)


def device_numerics(ctx: OnboardContext, step: Step, progress: ProgressFn) -> GatedRun | None:
    """The same comparison on the user's TPU, handed to the runner's approval gate; otherwise say why not."""
    from tpu_runtime.onboard.report import DEVICE_CHECK_NOT_RUN, NumericsReport

    probe = _probe(ctx)
    if probe.numerics is not None:
        numerics = NumericsReport.model_validate(probe.numerics)
        ctx.numerics = numerics
        if probe.size is not None and probe.size.numerics_model:
            numerics.compared_on = probe.size.numerics_model
        numerics.device_check = DEVICE_CHECK_NOT_RUN
        if ctx.request.target:
            from tpu_runtime.onboard.device_check import DeviceCheck, device_numerics_run

            def done(check: DeviceCheck) -> None:
                numerics.device_check = check.message
                numerics.device_rows = check.rows

            return device_numerics_run(ctx.request, numerics, done, lambda line: progress(step.id, line, 0.5))
    elif probe.numerics_error:
        ctx.notes.append(f"numerics not run: {probe.numerics_error}")
    elif not ctx.request.numerics:
        ctx.notes.append("numerics not run: --no-numerics")
    return None


def _dtype_bytes(dtype: str) -> float:
    """Bytes per element of the model's weights, for a KV cache kept in the same dtype."""
    for names, size in (
        (("bfloat16", "float16"), 2.0),
        (("float8", "int8"), 1.0),
        (("int4",), 0.5),
        (("float64",), 8.0),
    ):
        if dtype in names:
            return size
    return 4.0


def _probe(ctx: OnboardContext) -> ModelProbe:
    return produced(ctx.probe, "the probe step")


def model_info(ctx: OnboardContext) -> ModelInfo:
    probe = _probe(ctx)
    return ModelInfo(
        file=str(ctx.request.source_path),
        convention=probe.convention,
        input_style=probe.input_style,
        class_name=probe.class_name,
        parameters=probe.parameters,
        parameter_bytes=probe.parameter_bytes,
        buffers_bytes=probe.buffers_bytes,
        dtype=probe.dtype,
        is_decoder_lm=probe.kv is not None,
        decoder_lm_evidence=probe.lm_evidence,
        position_limit=probe.position_limit,
        hf_architecture=probe.hf_architecture,
        hf_model_type=probe.hf_model_type,
        shrunk=probe.shrink_note is not None,
        shrink_note=probe.shrink_note,
        output_summary=probe.output_summary,
    )


def build_report(ctx: OnboardContext) -> OnboardReport:
    """One report from what the steps found."""
    probe = _probe(ctx)
    timings = {f"child.{k}": round(v, 3) for k, v in probe.timings.items()}
    timings.update(ctx.timings)
    return OnboardReport(
        model=ctx.model_info or model_info(ctx),
        op_table=ctx.op_table_source,
        ops=ctx.ops,
        tpu_ops=ctx.tpu_ops,
        tpu_trace_note=probe.tpu_note,
        missing=ctx.missing,
        remedies=ctx.remedies,
        risks=ctx.risks,
        numerics=ctx.numerics,
        preflight=ctx.preflight,
        serving=ctx.serving,
        timings=timings,
        size=probe.size,
        peak_host_memory_bytes=probe.peak_rss_bytes,
        isolation=ctx.isolation,
        notes=ctx.notes,
    )
