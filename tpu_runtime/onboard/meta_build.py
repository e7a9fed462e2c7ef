"""Build a Hugging Face model with its parameters on the meta device, then give real storage to part of it.

The shrunk copy of a large model (`shrink.py`) keeps two blocks of each repeated stack; building the full
model for real first costs the allocation and random initialisation of every block (5-16 s for GPT-2 small
on two cores). Here the user's file runs as usual, except that every parameter it registers lives on the
meta device (no storage, initialisation free); buffers stay real, since they hold computed values (causal
masks, rotary tables). The caller cuts the stacks, and `materialise` allocates only the parameters left and
runs the model's own initialisation on them: Hugging Face's `initialize_weights`, which reads the full
model's config (GPT-2 scales its residual projections by the full depth), and torch's `reset_parameters`
for any it leaves unset (in the full build those kept their constructor's values).

Only a replay of the initialisation is possible, so the build is refused (the caller builds for real)
when it cannot be faithful: a model that is not a Hugging Face `PreTrainedModel`, an op that moves real
data into a parameter (weights loaded from a checkpoint), a parameter set to real storage directly, and,
after materialising, any parameter the initialisation left unset (it starts as NaN).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten


@dataclass
class MetaWatch:
    """What happened to meta parameters during the build: the first op that wrote real data into one."""

    data_op: str | None = None
    _moved: weakref.WeakKeyDictionary[torch.Tensor, torch.nn.Parameter] = field(
        default_factory=weakref.WeakKeyDictionary
    )


class _Watcher(TorchDispatchMode):
    """Notes any op that mixes meta tensors with real ones holding data (a checkpoint's `copy_`)."""

    def __init__(self, watch: MetaWatch) -> None:
        super().__init__()
        self.watch = watch

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        if self.watch.data_op is None:
            leaves = [t for t in tree_flatten((args, kwargs or {}))[0] if isinstance(t, torch.Tensor)]
            if any(t.is_meta for t in leaves) and any(not t.is_meta and t.numel() > 1 for t in leaves):
                self.watch.data_op = str(func)
        return func(*args, **(kwargs or {}))


@contextmanager
def parameters_on_meta() -> Iterator[MetaWatch]:
    """While active, each parameter registered on a module is replaced by a meta one of the same shape."""
    watch = MetaWatch()
    original = torch.nn.Module.register_parameter

    def register(module: torch.nn.Module, name: str, param: torch.nn.Parameter | None) -> None:
        if param is not None and not param.is_meta:
            moved = watch._moved.get(param)
            if moved is None:  # the same parameter registered twice (tied weights) stays one parameter
                moved = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
                watch._moved[param] = moved
            param = moved
        original(module, name, param)

    torch.nn.Module.register_parameter = register  # type: ignore[method-assign, assignment]
    try:
        with _Watcher(watch):
            yield watch
    finally:
        torch.nn.Module.register_parameter = original  # type: ignore[method-assign]


def refusal(model: torch.nn.Module, watch: MetaWatch) -> str | None:
    """Why a replayed initialisation would not give the model the user's file built; None when it would."""
    if not callable(getattr(model, "initialize_weights", None)):
        return "not a Hugging Face model (its initialisation cannot be replayed)"
    if watch.data_op is not None:
        return f"the build wrote data into a parameter ({watch.data_op})"
    real = next((name for name, p in model.named_parameters() if not p.is_meta), None)
    if real is not None:
        return f"parameter {real} was given real storage by the build"
    return None


def materialise(model: torch.nn.Module) -> str | None:
    """Allocate the meta parameters still in `model` and initialise them as its constructor did.

    Returns None when done, else why the copy is not faithful (a parameter left unset, a non-float one).
    """
    made: dict[int, torch.nn.Parameter] = {}
    for module in model.modules():
        for name, param in list(module._parameters.items()):
            if param is None or not param.is_meta:
                continue
            if not param.is_floating_point():
                return f"parameter {name} is {param.dtype}: only floating-point ones can be initialised"
            real = made.get(id(param))
            if real is None:
                real = torch.nn.Parameter(
                    torch.full(param.shape, float("nan"), dtype=param.dtype),
                    requires_grad=param.requires_grad,
                )
                made[id(param)] = real
            module._parameters[name] = real
    with torch.no_grad():
        for module in model.modules():  # set by the build's own (meta) initialisation: run it again
            module.__dict__.pop("_is_hf_initialized", None)
        model.initialize_weights()  # type: ignore[operator]
        for module in model.modules():
            _reset_unset(module)
    for name, param in model.named_parameters():
        if _unset(param):
            return f"parameter {name} was not set by the model's initialisation"
    return None


def _unset(param: torch.Tensor) -> bool:
    """Still holding NaN: one pass over the data (NaN propagates through the sum)."""
    return bool(torch.isnan(param.sum()))


def _reset_unset(module: torch.nn.Module) -> None:
    """Parameters Hugging Face's initialisation did not write kept their constructor's values, which for
    torch's own layers come from `reset_parameters`; the ones it did write keep its values."""
    reset = getattr(module, "reset_parameters", None)
    own = [p for p in module._parameters.values() if p is not None]
    if not callable(reset) or not any(_unset(p) for p in own):
        return
    written = [(p, p.clone()) for p in own if not _unset(p)]
    reset()
    for param, value in written:
        param.copy_(value)
