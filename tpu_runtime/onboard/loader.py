"""Find the model and its example inputs in a user's file, by the conventions people already use.

Runs inside the child process (`tpu_runtime.sandbox`): importing the user's file executes their code.
It is also uploaded on its own to the TPU VM for the device numerics check (`device_check.py`), where
tpu_runtime is not installed: this module imports nothing of tpu_runtime.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import torch

#: How the example inputs are shaped; the same literal as `tpu_runtime.onboard.report.InputStyle`.
InputStyle = Literal["positional", "keyword", "single"]

CONVENTIONS = (
    "get_model() + get_inputs()",
    "model + example_inputs",
    "class Model + get_inputs() + get_init_inputs()",
    "--entry module:callable returning (model, inputs)",
)


class ModelLoadError(Exception):
    """The file does not follow any convention, or its code failed; the message is one line."""


@dataclass
class LoadedModel:
    model: torch.nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    convention: str = ""
    make_inputs: Any = None  # a zero-argument callable that builds fresh inputs, when the file has one
    input_style: InputStyle = (
        "positional"  # "positional" (tuple/list), "keyword" (dict) or "single" (one tensor)
    )


def import_user_file(path: Path) -> Any:
    """Import a .py file as a module named after it, with its folder importable (for sibling imports)."""
    if not path.is_file():
        raise ModelLoadError(f"no such file: {path}")
    folder = str(path.parent.resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)
    name = f"tpu_agent_user_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ModelLoadError(f"cannot import {path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def split_inputs(inputs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Tuples and lists are positional arguments, a dict holds keyword arguments, anything else is one."""
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, list | tuple):
        return tuple(inputs), {}
    return (inputs,), {}


def _resolve_entry(entry: str, user_module: Any) -> Any:
    module_name, sep, attr = entry.partition(":")
    if not sep or not attr:
        raise ModelLoadError(f"--entry must look like module:callable, got {entry!r}")
    if module_name in ("", user_module.__name__, Path(user_module.__file__).stem):
        target = user_module
    else:
        try:
            target = importlib.import_module(module_name)
        except ImportError as exc:
            raise ModelLoadError(f"--entry: cannot import {module_name!r}: {exc}") from exc
    obj = target
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ModelLoadError(f"--entry: {module_name or 'the model file'} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def load_model(
    path: Path, entry: str | None = None, patch: Callable[[ModuleType], None] | None = None
) -> LoadedModel:
    """Try the conventions in order (`CONVENTIONS`); `entry` overrides them.

    `patch` may change the imported module (e.g. scale its size constants) before anything is built.
    """
    module = import_user_file(path)
    if patch is not None:
        patch(module)
    if entry:
        fn = _resolve_entry(entry, module)
        result = fn()
        if not (isinstance(result, tuple) and len(result) == 2):
            raise ModelLoadError(f"--entry {entry} must return (model, inputs), got {type(result).__name__}")
        model, inputs = result
        return _finish(model, inputs, "--entry " + entry, None)
    if callable(getattr(module, "get_model", None)) and callable(getattr(module, "get_inputs", None)):
        return _finish(module.get_model(), module.get_inputs(), CONVENTIONS[0], module.get_inputs)
    if hasattr(module, "model") and hasattr(module, "example_inputs"):
        return _finish(module.model, module.example_inputs, CONVENTIONS[1], None)
    model_cls = getattr(module, "Model", None)
    if inspect.isclass(model_cls) and callable(getattr(module, "get_inputs", None)):
        init = module.get_init_inputs() if callable(getattr(module, "get_init_inputs", None)) else []
        init_args, init_kwargs = split_inputs(init)
        return _finish(
            model_cls(*init_args, **init_kwargs), module.get_inputs(), CONVENTIONS[2], module.get_inputs
        )
    raise ModelLoadError(
        f"{path.name} follows none of the conventions: define "
        + "; or ".join(CONVENTIONS[:3])
        + "; or pass --entry module:callable"
    )


def _finish(model: Any, inputs: Any, convention: str, make_inputs: Any) -> LoadedModel:
    if not isinstance(model, torch.nn.Module):
        raise ModelLoadError(f"the model ({convention}) is a {type(model).__name__}, not a torch.nn.Module")
    args, kwargs = split_inputs(inputs)
    style: InputStyle = (
        "keyword"
        if isinstance(inputs, dict)
        else "positional"
        if isinstance(inputs, list | tuple)
        else "single"
    )
    return LoadedModel(
        model=model,
        args=args,
        kwargs=kwargs,
        convention=convention,
        make_inputs=make_inputs,
        input_style=style,
    )
