"""The workflow runner: step selection, titles from the YAML, and the `gate: approval` it enforces.

The gate tests file real requests in a real state file (a hosts target whose address is never dialled:
nothing runs without an approval, so nothing connects).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.remote_support.engine import engine_at, write_lab_target
from tpu_runtime import workflow
from tpu_runtime.kernels.report import ALL_STAGES, STAGE_TITLES
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.gated import ApprovalPending, GatedRun, RemoteWork
from tpu_runtime.workflow import Step, WorkflowError, load_workflow, run_workflow


def _engine(home: Path) -> RemoteEngine:
    return engine_at(write_lab_target(home))


class Ctx:
    def __init__(self, engine: RemoteEngine | None = None) -> None:
        self.engine = engine
        self.approver = None
        self.seen: list[str] = []
        self.finished: list[Any] = []
        self.refused: list[Exception] = []
        self.timings: dict[str, float] = {}
        self.handle_refusal = False


def _remote(ctx: Ctx, step: Step, progress: Any) -> GatedRun:
    ctx.seen.append(step.id)
    assert ctx.engine is not None
    return GatedRun(
        engine=ctx.engine,
        target="lab",
        work=RemoteWork(command=("echo", "hi"), uploads=(), time_limit_s=30.0),
        finish=ctx.finished.append,
        refused=ctx.refused.append if ctx.handle_refusal else None,
    )


def _local(ctx: Ctx, step: Step, progress: Any) -> None:
    ctx.seen.append(step.id)
    progress(step.id, "half way", 0.5)


@pytest.fixture
def playbook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A playbook folder with one test workflow whose steps live in a module registered for the test."""
    module = types.ModuleType("wf_test_steps")
    module.remote = _remote  # type: ignore[attr-defined]
    module.local = _local  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "wf_test_steps", module)
    folder = tmp_path / "workflows"
    folder.mkdir()
    monkeypatch.setattr(workflow, "workflows_dir", lambda: folder)
    workflow.load_workflow.cache_clear()
    yield folder
    workflow.load_workflow.cache_clear()


def _write(folder: Path, gate: str) -> None:
    steps = [
        {"id": "first", "title": "First", "run": "wf_test_steps:local"},
        {"id": "device", "title": "On the TPU", "run": "wf_test_steps:remote", "gate": gate},
        {"id": "last", "title": "Last", "run": "wf_test_steps:local"},
    ]
    text = yaml.safe_dump({"name": "t", "title": "T", "agent": "a", "inputs": {"x": "y"}, "steps": steps})
    (folder / "t.yaml").write_text(text)


def test_steps_run_in_order_with_progress_and_timings(playbook: Path) -> None:
    _write(playbook, "approval")
    events: list[tuple[str, str, float]] = []
    ctx = run_workflow("t", Ctx(), lambda *e: events.append(e), only=["last", "first"])
    assert ctx.seen == ["first", "last"] and set(ctx.timings) == {"first", "last"}
    assert events == [
        ("first", "First", 0.0),
        ("first", "half way", 0.5),
        ("first", "First", 1.0),
        ("last", "Last", 0.0),
        ("last", "half way", 0.5),
        ("last", "Last", 1.0),
    ]
    quiet: list[tuple[str, str, float]] = []
    run_workflow("t", Ctx(), lambda *e: quiet.append(e), only=["first"], announce=False)
    assert quiet == [("first", "half way", 0.5)]
    with pytest.raises(WorkflowError, match="no step 'nope'"):
        run_workflow("t", Ctx(), only=["nope"])


def test_an_approval_gated_step_does_not_run_without_approval(playbook: Path, tmp_path: Path) -> None:
    _write(playbook, "approval")
    engine = _engine(tmp_path)
    ctx = Ctx(engine)
    with pytest.raises(ApprovalPending, match="waiting for approval: request") as raised:
        run_workflow("t", ctx)
    (pending,) = engine.list_requests(("pending",))
    assert raised.value.outcome.request.id == pending.id and raised.value.outcome.state == "waiting"
    assert ctx.seen == ["first", "device"] and ctx.finished == []  # refused there: 'last' never ran
    again = Ctx(engine)
    again.handle_refusal = True  # a step that reports the refusal itself lets the playbook go on
    run_workflow("t", again)
    assert again.seen == ["first", "device", "last"] and again.finished == []
    assert [type(e) for e in again.refused] == [ApprovalPending]
    assert engine.list_requests(("pending",)) == [pending]  # the same work reuses its request


def test_a_step_without_the_approval_gate_may_not_ask_for_a_tpu(playbook: Path, tmp_path: Path) -> None:
    _write(playbook, "none")
    engine = _engine(tmp_path)
    with pytest.raises(WorkflowError, match="asks to run on a TPU but its gate is 'none'"):
        run_workflow("t", Ctx(engine))
    assert engine.list_requests() == []  # refused before any request was filed


def test_kernel_stage_titles_come_from_the_playbook() -> None:
    steps = load_workflow("kernel").titles()
    assert list(STAGE_TITLES) == list(ALL_STAGES)
    for n, stage in enumerate(ALL_STAGES, start=1):
        assert STAGE_TITLES[stage] == f"{n}. {steps[stage]}"
    assert STAGE_TITLES["torch"] == "5. PyTorch integration (torch.tpu.pallas.jax_op)"
    gated = [s.id for s in load_workflow("kernel").steps if s.gate == "approval"]
    assert gated == ["timing"]
