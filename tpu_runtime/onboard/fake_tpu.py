"""The forward ops as TorchTPU itself routes them, without a TPU.

With torch_tpu installed, its device can be initialised on any host and fake tensors placed on it:
the dispatcher then takes the TPU path (e.g. `aten.linear` stays whole, attention goes to TorchTPU's
own kernel) while nothing executes. Backward on fake TPU tensors is not supported, so this is forward only.
Fake tensors hold no values, so a forward with data-dependent shapes or control flow cannot be traced
whole; then each submodule is traced on its own with the input shapes it saw in a real CPU run.
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import version
from typing import Any

import torch
from torch.utils._pytree import tree_map

from tpu_runtime.onboard.op_capture import Capture, SourceLocator, _ModuleTracker, _OpRecorder


def torch_tpu_available() -> bool:
    return importlib.util.find_spec("torch_tpu") is not None


def _first_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:160]}"


class _FakeTracer:
    def __init__(self, root: torch.nn.Module, locator: SourceLocator) -> None:
        from torch._subclasses.fake_tensor import FakeTensorMode

        self.root = root
        self.locator = locator
        self.fake = FakeTensorMode(allow_non_fake_inputs=True)
        self.capture = Capture()

    def trace(self, module: torch.nn.Module, args: Any, kwargs: Any) -> str | None:
        """Trace one module's forward; merge its ops on success, return the error otherwise."""
        attempt = Capture()
        try:
            with self.fake:
                state = {
                    n: torch.empty_like(t, device="tpu")
                    for n, t in [*module.named_parameters(), *module.named_buffers()]
                }
                fargs, fkwargs = tree_map(_to_fake_tpu, args), tree_map(_to_fake_tpu, kwargs)
                with (
                    _ModuleTracker(self.root) as tracker,
                    torch.no_grad(),
                    _OpRecorder(attempt, tracker, self.locator),
                ):
                    torch.func.functional_call(module, state, fargs, fkwargs)
        except Exception as exc:  # data-dependent ops cannot run on fake tensors: the caller goes finer
            return _first_line(exc)
        for key, acc in attempt.ops.items():
            mine = self.capture.ops.get(key)
            if mine is None:
                self.capture.ops[key] = acc
            else:
                mine.count += acc.count
        return None


def _to_fake_tpu(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.empty(x.shape, dtype=x.dtype, device="tpu")
    return x


def _to_meta(x: Any) -> Any:
    return torch.empty(x.shape, dtype=x.dtype, device="meta") if isinstance(x, torch.Tensor) else x


def _module_inputs(model: torch.nn.Module, args: Any, kwargs: Any) -> dict[str, tuple[Any, Any]]:
    """Shapes and dtypes (as meta tensors) of each submodule's first call in a real CPU forward."""
    names = {id(m): n for n, m in model.named_modules()}
    seen: dict[str, tuple[Any, Any]] = {}

    def pre(module: torch.nn.Module, margs: Any, mkwargs: Any) -> None:
        name = names.get(id(module))
        if name is not None and name not in seen:
            seen[name] = (tree_map(_to_meta, margs), tree_map(_to_meta, mkwargs))

    handles = [m.register_forward_pre_hook(pre, with_kwargs=True) for m in model.modules()]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def trace_on_fake_tpu(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], locator: SourceLocator
) -> tuple[Capture, str]:
    """Returns the capture and a note saying how much of the forward was traced."""
    import torch_tpu

    torch_tpu._loader._init_device("tpu")
    where = f"on a fake TPU device with torch_tpu {version('torch_tpu')} (nothing ran on a TPU)"
    was_training = model.training
    model.eval()
    tracer = _FakeTracer(model, locator)
    try:
        error = tracer.trace(model, args, kwargs)
        if error is None:
            return tracer.capture, f"forward traced {where}"
        inputs = _module_inputs(model, args, kwargs)
        traced: list[str] = []
        untraced: list[str] = []

        def visit(prefix: str, module: torch.nn.Module) -> None:
            for child_name, child in module.named_children():
                name = f"{prefix}.{child_name}" if prefix else child_name
                if name not in inputs:  # containers such as ModuleList are never called themselves
                    visit(name, child)
                    continue
                child_error = tracer.trace(child, *inputs[name])
                if child_error is None:
                    traced.append(name)
                elif any(True for _ in child.children()):
                    visit(name, child)
                else:
                    untraced.append(name)

        visit("", model)
        note = (
            f"the whole forward could not run on fake tensors ({error}), so {len(traced)} submodules were "
            f"traced one by one {where}"
        )
        if untraced:
            note += f"; not traceable: {', '.join(untraced[:5])}"
        return tracer.capture, note
    finally:
        model.train(was_training)
