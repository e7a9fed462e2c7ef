"""Runs a playbook from `workflows/`: each step names the runtime function that carries it out.

The same YAML is what agents read, so the order, the gates and what each step proves are stated once.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

from tpu_runtime.progress import ProgressFn
from tpu_runtime.resources import workflows_dir
from tpu_runtime.yaml_data import safe_load


class Step(BaseModel):
    id: str
    title: str
    run: str
    proves: str = ""
    gate: Literal["none", "approval"] = "none"


class Workflow(BaseModel):
    name: str
    title: str
    agent: str
    inputs: dict[str, str] = {}
    steps: list[Step]


@cache
def load_workflow(name: str) -> Workflow:
    path = workflows_dir() / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in workflows_dir().glob("*.yaml"))
        raise ValueError(f"no workflow named {name!r}; known: {', '.join(known)}")
    return Workflow.model_validate(safe_load(path.read_text()))


def _resolve(target: str) -> Callable[..., None]:
    module, _, func = target.partition(":")
    fn: Callable[..., None] = getattr(importlib.import_module(module), func)
    return fn


def run_workflow(name: str, context: Any, progress: ProgressFn | None = None) -> Any:
    """Call each step with (context, step, progress); record each step's wall time on the context."""
    workflow = load_workflow(name)
    notify = progress or (lambda step, message, fraction: None)
    timings: dict[str, float] = getattr(context, "timings", {})
    for step in workflow.steps:
        notify(step.id, step.title, 0.0)
        start = time.perf_counter()
        _resolve(step.run)(context, step, notify)
        timings[step.id] = round(time.perf_counter() - start, 3)
        notify(step.id, step.title, 1.0)
    return context
