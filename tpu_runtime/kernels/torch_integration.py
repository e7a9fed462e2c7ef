"""Stage 5: the kernel as a PyTorch op through TorchTPU's `torch.tpu.pallas.jax_op`, checked offline.

`jax_op(name, fn)` registers a `torch.library` custom op whose fake (meta) implementation exports the JAX
function for TPU and reads the output shapes from it. So without a TPU we can (a) wrap the kernel with its
parameters bound by `functools.partial` (jax_op needs every remaining argument annotated `jax.Array` or a
plain type), and (b) call the op on PyTorch fake tensors of every declared shape and compare the output
shapes and dtypes with the kernel's own `out_shape` as JAX traces it for TPU (the reference is not traced
here: a reference that loops over concrete sizes cannot be). Running it on a device needs a TPU VM; the
stage says so and prints the snippet to paste into the model.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import time
from typing import Any

from tpu_runtime.kernels.convention import KernelModule
from tpu_runtime.kernels.explain import first_line
from tpu_runtime.kernels.report import StageResult, stage_result

_TORCH_DTYPES = {
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
    "uint8": "uint8",
    "uint32": "uint32",
    "bool": "bool",
}


def op_name(km: KernelModule, params: dict[str, Any]) -> str:
    digest = hashlib.sha256(repr(sorted(params.items())).encode()).hexdigest()[:8]
    safe = "".join(c if c.isalnum() else "_" for c in km.name)
    return f"tpu_agent_check::{safe}_{digest}"


def snippet(km: KernelModule, params: dict[str, Any]) -> str:
    """What the user pastes into their PyTorch code."""
    bound = ", ".join(f"{k}={v!r}" for k, v in params.items())
    module = km.path.stem if km.path.stem.isidentifier() else "my_kernel"
    args = ", ".join(_array_params(km)) or "*inputs"
    return (
        "import functools\n\n"
        "import torch\n"
        "import torch_tpu  # noqa: F401  (registers torch.tpu)\n\n"
        f"from {module} import kernel  # {km.path.name}\n\n"
        f"{km.name}_op = torch.tpu.pallas.jax_op(\n"
        f'    "my_kernels::{km.name}", functools.partial(kernel{", " + bound if bound else ""})\n'
        ")\n\n"
        "# inside forward(), on tensors on torch.device('tpu'):\n"
        f"out = {km.name}_op({args})\n"
    )


def _array_params(km: KernelModule) -> list[str]:
    import inspect

    names = []
    for name, p in inspect.signature(km.kernel).parameters.items():
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) and (
            p.default is inspect.Parameter.empty
        ):
            names.append(name)
    return names


def torch_stage(
    km: KernelModule, params: dict[str, Any], cases: list[tuple[dict[str, int], str]], generation: str = "v6e"
) -> StageResult:
    start = time.perf_counter()
    code = snippet(km, params)

    def stage(verdict: str, message: str, details: list[str] | None = None) -> StageResult:
        return stage_result(
            "torch",
            verdict,  # type: ignore[arg-type]
            message,
            started=start,
            details=details,
            snippet=code,
        )

    if importlib.util.find_spec("torch_tpu") is None:
        return stage(
            "skip", "torch_tpu is not installed (install the 'tpu' extra); the snippet below is untested"
        )
    from tpu_runtime.gc_pause import gc_paused
    from tpu_runtime.kernels.torch_imports import deferred_inductor_passes

    try:
        # this stage compiles nothing (1.3 s of torch_tpu's import deferred); the collector waits (0.3 s)
        with gc_paused(), deferred_inductor_passes():
            import torch
            import torch_tpu  # noqa: F401

        jax_op = torch.tpu.pallas.jax_op  # type: ignore[attr-defined]
    except Exception as exc:
        return stage("skip", f"torch_tpu does not import here: {type(exc).__name__}: {first_line(exc)}")
    try:
        op = jax_op(op_name(km, params), functools.partial(km.kernel, **params))
    except Exception as exc:
        hint = ""
        if "Invalid signature" in str(exc) or "annotation" in str(exc).lower():
            hint = " (annotate every array argument of kernel() as jax.Array and give the return type"
            if "'jax.Array'" in str(exc):
                hint += (
                    "; the annotations are strings: with `from __future__ import annotations` a "
                    "jax.jit-wrapped "
                    "kernel hides them from jax_op, so drop that import from the kernel module"
                )
            hint += ")"
        return stage("fail", f"torch.tpu.pallas.jax_op rejects the kernel: {first_line(exc)}{hint}")
    details: list[str] = []
    failure = None
    for shape, dtype in cases:
        label = "(" + ", ".join(f"{k}={v}" for k, v in shape.items()) + f") {dtype}"
        try:
            outcome = _fake_call(km, params, op, shape, dtype, generation)
        except Exception as exc:
            failure = (
                failure or f"{label}: the op fails on fake tensors: {type(exc).__name__}: {first_line(exc)}"
            )
            continue
        if outcome:
            failure = failure or f"{label}: {outcome}"
        else:
            details.append(f"{label}: fake-tensor output shapes and dtypes match the kernel's out_shape")
    if failure:
        return stage("fail", failure, details)
    return stage(
        "pass",
        f"wraps as a PyTorch op; output shapes from fake tensors match the kernel's at {len(cases)} "
        "shape/dtype combinations "
        "(running it needs a TPU)",
        details,
    )


def _fake_call(
    km: KernelModule, params: dict[str, Any], op: Any, shape: dict[str, int], dtype: str, generation: str
) -> str:
    """'' when the op's fake outputs match the kernel's own output shapes and dtypes, else what differs."""
    import jax
    import numpy as np
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from tpu_runtime.kernels.lowering import input_avals
    from tpu_runtime.kernels.topology import tpu_default_device

    avals = input_avals(km, shape, dtype)
    with tpu_default_device(generation):
        expected = jax.tree.leaves(jax.eval_shape(functools.partial(km.kernel, **params), *avals))
    with FakeTensorMode(), tpu_default_device(generation):
        args = [
            torch.empty(
                tuple(a.shape), dtype=getattr(torch, _TORCH_DTYPES.get(np.dtype(a.dtype).name, "float32"))
            )
            for a in avals
        ]
        result = op(*args)
    got = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(got) != len(expected):
        return f"the op returns {len(got)} tensor(s), the kernel {len(expected)}"
    for tensor, aval in zip(got, expected, strict=True):
        want_dtype = _TORCH_DTYPES.get(np.dtype(aval.dtype).name, "")
        if tuple(tensor.shape) != tuple(aval.shape) or str(tensor.dtype).replace("torch.", "") != want_dtype:
            return (
                f"fake output {tuple(tensor.shape)} {str(tensor.dtype).replace('torch.', '')}, kernel "
                f"{tuple(aval.shape)} {np.dtype(aval.dtype).name}"
            )
    return ""


def torch_stage_entry(payload: dict[str, Any]) -> dict[str, Any]:
    """Child entry point: stage 5 alone, for a `kernel check` that runs it beside stages 1-4."""
    from pathlib import Path

    from tpu_runtime.kernels.child import CheckOptions, prepare_child, watch_parent
    from tpu_runtime.kernels.convention import load_kernel_module

    watch_parent()
    prepare_child()
    options = CheckOptions.model_validate(payload)
    km = load_kernel_module(Path(options.file))
    cases = [(shape, dtype) for shape in options.shapes or km.shapes for dtype in km.dtypes]
    stage = torch_stage(km, km.params(options.params), cases, options.generations[0])
    return stage.model_dump(mode="json")
