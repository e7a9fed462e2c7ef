"""Stage 4: compile the kernel at its target shape for each requested TPU generation, on this host.

`jax.experimental.topologies.get_topology_desc("v6e:1x1", "tpu")` gives compile-only devices: libtpu's
XLA:TPU and Mosaic compile for that chip without one, and fail with the chip's real limits (VMEM overflow,
unsupported operations). For each generation the stage reports whether it compiles, the kernel's modelled
VMEM against the chip's VMEM, XLA's memory and cost analysis, and a roofline estimate
(`tpu_runtime.kernels.roofline`).

FLOPs are summed one pallas_call at a time (`introspect.kernel_work`): a call's own `pl.CostEstimate` where
it has one, else its body's matmuls times the grid steps it runs; never from the reference, which may be
dense where the kernel skips work, and not from XLA's cost analysis of the whole program, which sees only
the calls that carry an estimate (Mosaic kernels are opaque to it) plus the plain-jnp ops around them.
The peak they are divided by is the one for the kernel's matmul operand dtype
(`roofline.device_peaks`). HBM bytes come from the pipeline traffic model. Tracing runs with a compile-only
device of the generation as JAX's default device. Which figures are estimates is listed per generation.
"""

from __future__ import annotations

import contextlib
import functools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tpu_runtime.kernels.convention import KernelModule
from tpu_runtime.kernels.explain import explain_compile, first_line
from tpu_runtime.kernels.report import GenerationResult, StageResult, stage_result
from tpu_runtime.kernels.roofline import device_peaks, estimate, step_cost_note
from tpu_runtime.kernels.topology import compile_device, topology_for, tpu_default_device

if TYPE_CHECKING:
    from tpu_runtime.kernels.introspect import KernelWork

DEFAULT_GENERATIONS = ("v5e", "v5p", "v6e", "tpu7x")


def compile_for_device(fn: Any, avals: tuple[Any, ...], device: Any) -> Any:
    """XLA:TPU-compile `fn` for one compile-only device; returns the compiled executable."""
    import jax
    from jax.sharding import SingleDeviceSharding

    sharding = SingleDeviceSharding(device)
    jitted = jax.jit(fn, in_shardings=tuple(sharding for _ in avals), out_shardings=sharding)
    return jitted.trace(*avals).lower(lowering_platforms=("tpu",)).compile()


@dataclass
class TargetModel:
    """Generation-independent facts about the kernel at its target shape."""

    dtype: str
    steps: int
    dynamic_grid: bool
    vmem_bytes: int
    vmem_limit_bytes: int | None
    kernel_flops: float
    flops_upper_bound: bool
    matmul_dtype: str | None
    flops_source: str
    traffic_bytes: float
    traffic_note: str
    calls: int


def target_model(km: KernelModule, params: dict[str, Any], target: dict[str, int], dtype: str) -> TargetModel:
    import jax
    import numpy as np

    from tpu_runtime.kernels.introspect import (
        concrete_pallas_operands,
        describe,
        hbm_traffic,
        kernel_work,
        pallas_call_eqns,
    )
    from tpu_runtime.kernels.lowering import fixed_inputs, input_avals

    fn = functools.partial(km.kernel, **params)
    avals = input_avals(km, target, dtype)
    closed = jax.make_jaxpr(fn)(*avals)
    eqns = pallas_call_eqns(closed)
    infos = [describe(e) for e in eqns]
    counted = kernel_work(closed)
    notes: list[str] = []
    if any(i.num_prefetch for i in infos):
        concrete = concrete_pallas_operands(fn, fixed_inputs(km, target, dtype))
        traffics = [hbm_traffic(eqn, operands) for eqn, operands in concrete]
        notes.append("scalar-prefetch index maps evaluated on inputs drawn with a fixed seed")
    else:
        traffics = [hbm_traffic(eqn, None) for eqn in eqns]
    notes += [t.note for t in traffics if t.note]
    exact = all(t.exact for t in traffics)
    total = float(sum(t.bytes for t in traffics))
    source = "pipeline model: blocks fetched when their index changes" + (
        "" if exact else " (partly estimated)"
    )
    limits = [i.vmem_limit_bytes for i in infos if i.vmem_limit_bytes]
    del np
    return TargetModel(
        dtype=dtype,
        steps=sum(max(i.steps, 0) for i in infos),
        dynamic_grid=any(i.steps < 0 for i in infos),
        vmem_bytes=max((i.vmem_bytes for i in infos), default=0),
        vmem_limit_bytes=min(limits) if limits else None,
        kernel_flops=counted.total,
        flops_upper_bound=counted.upper_bound,
        matmul_dtype=counted.dominant_dtype(),
        flops_source=_flops_source(counted, len(eqns)),
        traffic_bytes=total,
        traffic_note="; ".join([source, *notes]),
        calls=len(eqns),
    )


def _cost(compiled: Any) -> dict[str, float]:
    analysis = compiled.cost_analysis()
    if isinstance(analysis, (list, tuple)):
        analysis = analysis[0] if analysis else {}
    return {str(k): float(v) for k, v in (analysis or {}).items()}


def compile_generation(
    km: KernelModule,
    params: dict[str, Any],
    avals: tuple[Any, ...],
    model: TargetModel,
    generation: str,
) -> tuple[GenerationResult, str]:
    """Compile for one generation; returns its result and, on failure, the raw error."""
    if km.mesh:
        return _compile_on_mesh(km, params, avals, model, generation)
    name, topology = topology_for(generation)
    peaks = device_peaks(name, model.matmul_dtype or model.dtype)
    base: dict[str, Any] = {
        "generation": name,
        "topology": topology,
        "vmem_bytes": model.vmem_bytes,
        "vmem_limit_bytes": model.vmem_limit_bytes,
        "vmem_capacity_bytes": peaks.vmem_capacity,
        "grid_steps": None if model.dynamic_grid else model.steps,
    }
    try:
        device = compile_device(topology)
    except Exception as exc:
        return GenerationResult(
            **base,
            verdict="skip",
            message=f"libtpu has no compile-only topology {topology}: {first_line(exc)}",
        ), ""
    base["device_kind"] = str(device.device_kind)
    start = time.perf_counter()
    try:
        with tpu_default_device(name):
            compiled = compile_for_device(functools.partial(km.kernel, **params), avals, device)
    except Exception as exc:
        return _compile_failed(exc, base, name, peaks.vmem_capacity, start)
    return _compiled_result(compiled, base, model, name, time.perf_counter() - start)


def _compile_on_mesh(
    km: KernelModule, params: dict[str, Any], avals: tuple[Any, ...], model: TargetModel, generation: str
) -> tuple[GenerationResult, str]:
    """A collective kernel: compile with its MESH laid over a compile-only topology of that many devices."""
    import jax

    from tpu_runtime.kernels.mesh import MeshError, current_mesh, topology_mesh

    name = topology_for(generation)[0]
    peaks = device_peaks(name, model.matmul_dtype or model.dtype)
    base: dict[str, Any] = {
        "generation": name,
        "topology": "",
        "vmem_bytes": model.vmem_bytes,
        "vmem_limit_bytes": model.vmem_limit_bytes,
        "vmem_capacity_bytes": peaks.vmem_capacity,
        "grid_steps": None if model.dynamic_grid else model.steps,
    }
    try:
        topology, mesh = topology_mesh(name, km.mesh)
    except MeshError as exc:
        return GenerationResult(**base, verdict="skip", message=str(exc)), ""
    device = mesh.devices.flat[0]
    base.update(topology=topology, device_kind=str(device.device_kind))
    start = time.perf_counter()
    try:
        with current_mesh(mesh), jax.default_device(device):
            traced = jax.jit(functools.partial(km.kernel, **params)).trace(*avals)
            compiled = traced.lower(lowering_platforms=("tpu",)).compile()
    except Exception as exc:
        return _compile_failed(exc, base, name, peaks.vmem_capacity, start)
    result, detail = _compiled_result(compiled, base, model, name, time.perf_counter() - start)
    result.message += (
        f"; figures are per device of the {topology} mesh, and the remote DMAs between devices (ICI) "
        "are not in the roofline"
    )
    return result, detail


def _compile_failed(
    exc: Exception, base: dict[str, Any], name: str, vmem_capacity: int | None, start: float
) -> tuple[GenerationResult, str]:
    """A failed compile, explained, with the seconds it took since `start` (one form for both paths)."""
    explained = explain_compile(exc, name, vmem_capacity)
    return GenerationResult(
        **base,
        verdict="fail",
        message=explained.message,
        compile_seconds=round(time.perf_counter() - start, 3),
    ), explained.detail


def _compiled_result(
    compiled: Any, base: dict[str, Any], model: TargetModel, name: str, elapsed: float
) -> tuple[GenerationResult, str]:
    """The generation's verdict, memory, cost and roofline estimate from a compiled executable."""
    peaks = device_peaks(name, model.matmul_dtype or model.dtype)
    seconds = round(elapsed, 3)
    cost = _cost(compiled)
    memory = compiled.memory_analysis()
    hbm = None
    if memory is not None:
        hbm = int(
            memory.argument_size_in_bytes
            + memory.output_size_in_bytes
            - memory.alias_size_in_bytes
            + memory.temp_size_in_bytes
        )
    estimates = ["time (roofline: the slower of compute and HBM traffic at the published peaks)"]
    flops, flops_source = model.kernel_flops, model.flops_source
    estimates.append(f"FLOPs ({flops_source})")
    traffic, traffic_source = model.traffic_bytes, model.traffic_note
    if not math.isfinite(traffic):
        traffic = cost.get("bytes accessed", 0.0) or sum(
            v for k, v in cost.items() if k.startswith("bytes accessed")
        )
        traffic_source = "XLA cost analysis bytes accessed"
    estimates.append(f"HBM traffic ({traffic_source})")
    seconds_est, bound = estimate(flops, traffic, peaks)
    vmem_note = ""
    verdict = "pass"
    if peaks.vmem_capacity and model.vmem_bytes > peaks.vmem_capacity:
        verdict, vmem_note = (
            "warn",
            "; the VMEM model exceeds the chip's VMEM although the compiler accepted it",
        )
    elif model.vmem_limit_bytes and model.vmem_bytes > model.vmem_limit_bytes:
        verdict, vmem_note = "warn", "; the VMEM model exceeds the kernel's vmem_limit_bytes"
    capacity = f" of {peaks.vmem_capacity / 2**20:.0f} MiB" if peaks.vmem_capacity else ""
    steps_text = (
        "grid size known only at run time"
        if model.dynamic_grid
        else f"{model.steps} grid step{'s' if model.steps != 1 else ''}"
    )
    message = (
        f"compiles in {seconds:.2f} s; VMEM {model.vmem_bytes / 2**20:.2f} MiB{capacity} (model); "
        f"{_bound_text(bound)} at the {peaks.flops_kind} peak, about {_duration(seconds_est)} on one {name} "
        f"device (roofline estimate); {steps_text}{step_cost_note(model.steps, seconds_est)}{vmem_note}"
    )
    if peaks.note:
        message += f"; {peaks.note}"
    return GenerationResult(
        **base,
        verdict=verdict,  # type: ignore[arg-type]
        message=message,
        compile_seconds=seconds,
        hbm_bytes=hbm,
        flops=flops,
        flops_source=flops_source,
        hbm_traffic_bytes=traffic,
        traffic_source=traffic_source,
        estimate_seconds=seconds_est,
        bound=bound,
        peak_flops=peaks.peak_flops,
        peak_flops_kind=peaks.flops_kind,
        hbm_bandwidth=peaks.hbm_bandwidth,
        estimates=estimates,
    ), ""


def _flops_source(counted: KernelWork, calls: int) -> str:
    """Where the FLOPs figure comes from, call by call (see `introspect.KernelWork`)."""

    def share(n: int) -> str:
        return f" ({n} of {calls} pallas_calls)" if calls > 1 else ""

    parts = []
    if counted.estimated_calls:
        parts.append(f"the kernel's own pl.CostEstimate{share(counted.estimated_calls)}")
    if counted.counted_calls:
        text = "counted from the kernel body's matmuls x the grid steps it runs" + share(
            counted.counted_calls
        )
        if counted.upper_bound:
            text += ", an upper bound: conditional blocks counted as taken"
        parts.append(text)
    if counted.uncounted:
        parts.append(
            f"not counted{share(counted.uncounted)}: grid size known only at run time and no pl.CostEstimate"
        )
    return "; ".join(parts) or "no pallas_call"


def _bound_text(bound: str) -> str:
    return {"compute": "compute-bound", "memory": "HBM-bandwidth-bound"}[bound]


def _duration(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


@contextlib.contextmanager
def _model_mesh(km: KernelModule, generations: list[str]) -> Iterator[None]:
    """A collective kernel traces only with its mesh current: any generation's topology mesh serves."""
    from tpu_runtime.kernels.mesh import MeshError, current_mesh, topology_mesh

    mesh = None
    for generation in generations if km.mesh else []:
        try:
            mesh = topology_mesh(generation, km.mesh)[1]
            break
        except MeshError:
            continue
    with current_mesh(mesh):
        yield


def compile_stage(
    km: KernelModule,
    params: dict[str, Any],
    target: dict[str, int],
    generations: list[str],
) -> tuple[StageResult, list[str]]:
    """Compile at the target shape (first dtype) for every generation."""
    from tpu_runtime.kernels.lowering import input_avals

    start = time.perf_counter()
    dtype = km.dtypes[0]
    label = "(" + ", ".join(f"{k}={v}" for k, v in target.items()) + f") {dtype}"
    tracebacks: list[str] = []
    try:
        avals = input_avals(km, target, dtype)
        with _model_mesh(km, generations):
            model = target_model(km, params, target, dtype)
    except Exception as exc:
        stage = stage_result(
            "compile",
            "fail",
            f"could not trace the kernel at the target shape {label}: "
            f"{type(exc).__name__}: {first_line(exc)}",
            started=start,
        )
        return stage, tracebacks
    results = []
    for generation in generations:
        result, detail = compile_generation(km, params, avals, model, generation)
        results.append(result)
        if detail:
            tracebacks.append(detail)
    failed = [r for r in results if r.verdict == "fail"]
    warned = [r for r in results if r.verdict in ("warn", "skip")]
    if failed:
        verdict, message = "fail", "; ".join(f"{r.generation}: {r.message}" for r in failed)
        ok = [r.generation for r in results if r.verdict == "pass"]
        if ok:
            message += f" (compiles for {', '.join(ok)})"
    elif warned:
        verdict, message = "warn", "; ".join(f"{r.generation}: {r.message}" for r in warned)
    else:
        verdict = "pass"
        message = f"compiles at the target shape {label} for {', '.join(r.generation for r in results)}"
    stage = stage_result(
        "compile",
        verdict,  # type: ignore[arg-type]
        message,
        started=start,
        details=[
            f"target shape {label}; {model.calls} pallas_call(s), "
            + ("grid size known only at run time" if model.dynamic_grid else f"{model.steps} grid steps")
        ],
        generations=results,
    )
    return stage, tracebacks
