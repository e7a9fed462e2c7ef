"""Stage 3: lower the kernel for TPU with `jax.export(..., platforms=["tpu"])`, on this machine.

Lowering runs Pallas' TPU lowering and Mosaic's serialization, which enforce what interpret mode lets
through: block shapes that do not tile (last two dimensions divisible by 8 and 128 or equal to the array),
primitives with no Mosaic lowering, and unsupported dtype uses. It needs no TPU and no libtpu compile. Every
declared case and the target shape (with each dtype) is lowered; each must produce a Mosaic custom call.
"""

from __future__ import annotations

import functools
import time
from typing import Any

from tpu_runtime.kernels.convention import KernelModule
from tpu_runtime.kernels.explain import explain_lowering, first_line
from tpu_runtime.kernels.report import StageResult, stage_result

_FIXED_SEED = 0
_inputs_cache: dict[tuple[int, tuple[tuple[str, int], ...], str], tuple[Any, ...]] = {}


def fixed_inputs(km: KernelModule, shape: dict[str, int], dtype: str) -> tuple[Any, ...]:
    """Inputs drawn with a fixed seed (so estimates are repeatable), made once per shape and dtype."""
    from tpu_runtime.kernels.correctness import make_case_inputs, rng_for

    key = (id(km.module), tuple(sorted(shape.items())), dtype)
    if key not in _inputs_cache:
        _inputs_cache.clear()  # keep at most one large input set alive
        _inputs_cache[key] = make_case_inputs(km, rng_for(_FIXED_SEED), shape, dtype)
    return _inputs_cache[key]


def input_avals(km: KernelModule, shape: dict[str, int], dtype: str) -> tuple[Any, ...]:
    """Shapes and dtypes of `make_inputs` for one shape and dtype."""
    import jax

    return tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in fixed_inputs(km, shape, dtype))


def lower_for_tpu(km: KernelModule, params: dict[str, Any], avals: tuple[Any, ...]) -> str:
    """The StableHLO text of the kernel exported for TPU; raises what lowering raises."""
    import jax

    exported = jax.export.export(jax.jit(functools.partial(km.kernel, **params)), platforms=["tpu"])(*avals)
    text: str = exported.mlir_module()
    return text


def lower_on_mesh(km: KernelModule, params: dict[str, Any], avals: tuple[Any, ...], mesh: Any) -> str:
    """A collective kernel's StableHLO for TPU, traced with `mesh` (compile-only TPU devices) as JAX's
    current mesh; `jax.export` is not used because it serializes for a device count, not a mesh."""
    import jax

    from tpu_runtime.kernels.mesh import current_mesh

    with current_mesh(mesh), jax.default_device(mesh.devices.flat[0]):
        traced = jax.jit(functools.partial(km.kernel, **params)).trace(*avals)
        lowered = traced.lower(lowering_platforms=("tpu",))
    text: str = lowered.as_text()
    return text


def lowering_stage(
    km: KernelModule,
    params: dict[str, Any],
    cases: list[tuple[dict[str, int], str]],
    generation: str = "v6e",
) -> tuple[StageResult, list[str]]:
    """Lower every case with a compile-only `generation` device as the default device (Mosaic reads the
    TPU generation from it); the first failure is the stage's message, with a plain fix."""
    from tpu_runtime.kernels.topology import tpu_default_device

    start = time.perf_counter()
    details: list[str] = []
    tracebacks: list[str] = []
    failure: str | None = None
    where = f"{generation} as the default device"
    mesh = None
    if km.mesh:
        from tpu_runtime.kernels.mesh import MeshError, topology_mesh

        try:
            topology, mesh = topology_mesh(generation, km.mesh)
        except MeshError as exc:
            return _skip(f"not run: {exc}", start), tracebacks
        where = f"a {topology} compile-only mesh {km.mesh}"
    for shape, dtype in cases:
        label = "(" + ", ".join(f"{k}={v}" for k, v in shape.items()) + f") {dtype}"
        try:
            avals = input_avals(km, shape, dtype)
        except Exception as exc:
            failure = failure or f"{label}: make_inputs raised {type(exc).__name__}: {first_line(exc)}"
            continue
        try:
            if mesh is not None:
                text = lower_on_mesh(km, params, avals, mesh)
            else:
                with tpu_default_device(generation):
                    text = lower_for_tpu(km, params, avals)
        except Exception as exc:
            explained = explain_lowering(exc, km.path)
            details.append(f"{label}: {explained.message}")
            tracebacks.append(explained.detail)
            failure = failure or f"{label}: {explained.message}"
            continue
        kernels = text.count("tpu_custom_call")
        if kernels == 0:
            failure = (
                failure or f"{label}: the lowered program has no Mosaic kernel (no pallas_call reached TPU)"
            )
            continue
        details.append(f"{label}: lowered, {kernels} Mosaic kernel(s), {len(text) // 1024} KiB of StableHLO")
    stage = stage_result(
        "lowering",
        "fail" if failure else "pass",
        failure or f"lowers for TPU ({where}) at all {len(cases)} shape/dtype combinations",
        started=start,
        details=details,
    )
    return stage, tracebacks


def _skip(message: str, start: float) -> StageResult:
    return stage_result("lowering", "skip", message, started=start)
