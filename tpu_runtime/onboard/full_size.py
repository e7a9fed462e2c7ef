"""The user's model at its real size without allocating it: fake tensors carry shapes and dtypes only.

A Llama-3-8B-shaped model needs 32 GB as float32 weights; built under `FakeTensorMode` it costs nothing,
yet its parameter count, dtypes, the ATen ops of a forward and backward (the same overloads a CPU run
dispatches), activation bytes and FLOPs all come out right. Only ops whose output shape depends on data
(`nonzero`, `.item()`) cannot run on fake tensors; the caller then falls back to a small real copy.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._pytree import tree_flatten

from tpu_runtime.onboard.loader import LoadedModel


def fake_mode() -> FakeTensorMode:
    return FakeTensorMode(allow_non_fake_inputs=True)


@dataclass
class FakeBuildFailure:
    """Why the model could not be built on fake tensors, and the user's line that needed real data."""

    error: str
    where: str  # 'file.py:LINE' in the user's code, or '' when no user frame was on the stack

    def describe(self) -> str:
        at = f" at {self.where}" if self.where else ""
        return f"building the model on fake tensors failed{at} ({self.error})"


def user_frame(exc: BaseException, user_dirs: list[Path]) -> str:
    """The innermost traceback frame inside the user's folders, as 'name.py:LINE'."""
    roots = [str(d.resolve()) + os.sep for d in user_dirs]
    found = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(frame.filename)
        if any(path.startswith(r) for r in roots) and "site-packages" not in path:
            found = f"{Path(path).name}:{frame.lineno}"
    return found


def one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:200]}"


@contextmanager
def forget_user_modules(user_dirs: list[Path]) -> Iterator[None]:
    """Modules imported from the user's folders while fake tensors were on hold fake module-level tensors:
    drop them afterwards so the real build imports them afresh."""
    before = set(sys.modules)
    roots = [str(d.resolve()) + os.sep for d in user_dirs]
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            file = getattr(sys.modules.get(name), "__file__", None) or ""
            if name.startswith("tpu_agent_user_") or any(os.path.abspath(file).startswith(r) for r in roots):
                sys.modules.pop(name, None)


def build_fake(
    build: Callable[[], LoadedModel], user_dirs: list[Path]
) -> tuple[LoadedModel | None, FakeBuildFailure | None]:
    """Run `build` (the loader) with every tensor it creates fake; None and the reason when it cannot."""
    with forget_user_modules(user_dirs), fake_mode():
        try:
            return build(), None
        except Exception as exc:  # user code touched tensor data at build time: the caller builds it for real
            return None, FakeBuildFailure(one_line(exc), user_frame(exc, user_dirs))


def tensor_bytes(obj: Any) -> int:
    """Bytes of the distinct tensors inside a structure of tensors."""
    seen: set[int] = set()
    total = 0
    for leaf in tree_flatten(obj)[0]:
        if isinstance(leaf, torch.Tensor) and id(leaf) not in seen:
            seen.add(id(leaf))
            total += leaf.numel() * leaf.element_size()
    return total


def shapes(obj: Any) -> list[str]:
    """'(1, 128) int64' for each tensor in a structure, for the report."""
    return [
        f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}"
        for t in tree_flatten(obj)[0]
        if isinstance(t, torch.Tensor)
    ]


def parameter_stats(model: torch.nn.Module) -> tuple[int, int, int, str]:
    """(parameters, parameter bytes, buffer bytes, dtype of the first parameter); tied weights once."""
    params = {id(p): p for p in model.parameters()}.values()
    count = sum(p.numel() for p in params)
    pbytes = sum(p.numel() * p.element_size() for p in params)
    bbytes = sum(b.numel() * b.element_size() for b in model.buffers())
    dtype = str(next(iter(params)).dtype if params else torch.float32).replace("torch.", "")
    return count, pbytes, bbytes, dtype


def forward_flops(model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> int | None:
    """FLOPs of one inference forward, counted on the tensors given (fake ones cost nothing to run)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad(), counter:
            model(*args, **kwargs)
    except Exception:  # a forward that needs real values: no count, the caller says so
        return None
    finally:
        model.train(was_training)
    return int(counter.get_total_flops())


def block_boundaries(
    model: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[int, int]:
    """(blocks, bytes entering each block) of the largest stack of repeated blocks, for the activation
    memory of training with rematerialisation (only block inputs are kept; each block recomputes)."""
    from tpu_runtime.onboard.shrink import repeated_stacks

    stacks = repeated_stacks(model, min_len=2)
    if not stacks:
        return 0, 0
    _, stack = max(stacks, key=lambda item: len(item[1]))
    sizes: list[int] = []

    def pre(_module: torch.nn.Module, margs: Any, mkwargs: Any) -> None:
        # the hidden state is the largest floating-point argument; masks and positions are shared by all
        floats = [
            t.numel() * t.element_size()
            for t in tree_flatten((margs, mkwargs))[0]
            if isinstance(t, torch.Tensor) and t.is_floating_point()
        ]
        if floats and len(sizes) < len(stack):
            sizes.append(max(floats))

    handles = [block.register_forward_pre_hook(pre, with_kwargs=True) for block in stack]
    try:
        with torch.no_grad():
            model(*args, **kwargs)
    except Exception:
        return 0, 0
    finally:
        for handle in handles:
            handle.remove()
    return len(stack), max(sizes, default=0)
