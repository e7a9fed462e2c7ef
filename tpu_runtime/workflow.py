"""Runs a playbook from `workflows/`: each step names the runtime function that carries it out.

The same YAML is what agents read, so the order, the gates, the titles and what each step proves are
stated once. A step whose gate is `approval` reaches a TPU only through the runner: it returns the work it
wants run (`tpu_runtime.remote.gated.GatedRun`), and the runner passes it through the approval path of
`tpu_runtime.remote.gated` (run only with the person's approval, else `ApprovalPending`). A step whose gate
is `none` that asks for such a run is refused.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Collection
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from tpu_runtime import model_base

if TYPE_CHECKING or not model_base.PLAIN:
    from pydantic import BaseModel, ConfigDict
else:  # the plain terminal report of a profile (tpu_runtime.model_base): the playbook comes precompiled
    from tpu_runtime.model_base import PlainModel as BaseModel
    from tpu_runtime.model_base import plain_config as ConfigDict

from tpu_runtime.errors import TpuAgentError
from tpu_runtime.progress import ProgressFn
from tpu_runtime.resources import workflows_dir
from tpu_runtime.yaml_data import compiled, safe_load

#: The precompiled form of a playbook (`tpu_runtime.yaml_data.compiled`): its validated model as JSON.
COMPILED_AS = "workflow"


class WorkflowError(TpuAgentError):
    """A playbook that cannot be run as written (unknown name, unknown step, a gate broken); one line."""


class Step(BaseModel):
    # validators built on first use: a playbook read precompiled is constructed, not validated
    model_config = ConfigDict(defer_build=True)

    id: str
    title: str
    run: str
    proves: str = ""
    gate: Literal["none", "approval"] = "none"


class Workflow(BaseModel):
    model_config = ConfigDict(defer_build=True)

    name: str
    title: str
    agent: str
    inputs: dict[str, str] = {}  # noqa: RUF012 (a model field: pydantic, or model_base's stand-in, copies it)
    steps: list[Step]

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise WorkflowError(f"workflow {self.name!r} has no step {step_id!r}")

    def titles(self) -> dict[str, str]:
        """Step id -> title, in order: what reports show as each stage's heading."""
        return {step.id: step.title for step in self.steps}


@cache
def load_workflow(name: str) -> Workflow:
    path = workflows_dir() / f"{name}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in workflows_dir().glob("*.yaml"))
        raise ValueError(f"no workflow named {name!r}; known: {', '.join(known)}")
    shipped = compiled(path, COMPILED_AS)
    if shipped is not None:  # validated when it was compiled, from this very text
        steps = [Step.model_construct(**step) for step in shipped["steps"]]
        return Workflow.model_construct(**{**shipped, "steps": steps})
    return parse_workflow(path.read_text())


def parse_workflow(text: str) -> Workflow:
    """A playbook's YAML text, validated."""
    return Workflow.model_validate(safe_load(text))


_T = TypeVar("_T")


def produced(value: _T | None, by: str) -> _T:
    """What an earlier step put on a playbook's context; a bug in the playbook if that step has not run."""
    if value is None:
        raise RuntimeError(f"{by} has not run")
    return value


def resolve_step(target: str) -> Callable[..., Any]:
    """The function a step's `run` names (`package.module:function`)."""
    module, _, func = target.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(module), func)
    return fn


def _gate(step: Step, context: Any, wanted: object) -> None:
    """Pass the work a step asked for through the approval path, or refuse it when its gate is none."""
    if wanted is None:
        return
    from tpu_runtime.remote.gated import GatedRun, pass_gate

    if not isinstance(wanted, GatedRun):
        raise WorkflowError(f"step {step.id!r} returned {type(wanted).__name__}; steps return nothing")
    if step.gate != "approval":
        raise WorkflowError(
            f"step {step.id!r} asks to run on a TPU but its gate is {step.gate!r}; only a step with "
            "`gate: approval` may"
        )
    pass_gate(wanted, getattr(context, "approver", None))


def run_workflow(
    name: str,
    context: Any,
    progress: ProgressFn | None = None,
    *,
    only: Collection[str] | None = None,
    announce: bool = True,
) -> Any:
    """Call each step with (context, step, progress); record each step's wall time on the context.

    `only`: run just these step ids (in the playbook's order), e.g. the stages a job does in one process.
    `announce`: report (step, title, 0.0) before and 1.0 after each step; off for jobs whose steps report
    their own progress in a format their listeners already know.
    """
    workflow = load_workflow(name)
    if only is not None:
        for step_id in only:
            workflow.step(step_id)  # an unknown id is a mistake, not an empty run
    notify = progress or (lambda step, message, fraction: None)
    timings: dict[str, float] = getattr(context, "timings", {})
    for step in workflow.steps:
        if only is not None and step.id not in only:
            continue
        if announce:
            notify(step.id, step.title, 0.0)
        start = time.perf_counter()
        _gate(step, context, resolve_step(step.run)(context, step, notify))
        timings[step.id] = round(time.perf_counter() - start, 3)
        if announce:
            notify(step.id, step.title, 1.0)
    return context
