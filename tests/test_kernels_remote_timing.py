"""Kernel timing on a TPU target: the plan, the approval gate, `kernel check` stage 6 and tune's ranking.

There is no TPU here. The timer refuses to run without one; where it must time something, the request
carries its one test hook, `TPU_AGENT_TEST_DEVICE=cpu`, which runs the kernel in TPU interpret mode on the
CPU and labels every time "cpu (test, interpret mode)". These tests check that label wherever a time
appears, so a test run can never pass for a TPU measurement. The remote side is real: an sshd on loopback
(tests/remote_support/sshd.py) logs in a non-root user who runs the timer with the system Python and this
environment's site-packages.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.remote_support import person
from tests.remote_support.engine import engine_at
from tests.remote_support.sshd import SYSTEM_PYTHON, SshdFarm, python_farm_or_skip
from tpu_runtime.cli.app import app
from tpu_runtime.kernels.job import KernelCheckRequest, run_kernel_check
from tpu_runtime.kernels.remote_timing import (
    TEST_DEVICE_ENV,
    TIMER_NAME,
    TIMER_SOURCE,
    TimingOptions,
    measure_candidates,
    read_timing,
    timing_stage,
    timing_work,
)
from tpu_runtime.kernels.report import STAGE_TITLES, TIMING_NOT_RUN, KernelCheckReport, StageResult
from tpu_runtime.kernels.runlog import RunFolder
from tpu_runtime.kernels.tune import KernelTuneRequest, run_kernel_tune
from tpu_runtime.remote.approvals import Approval, RunRequest
from tpu_runtime.remote.engine import RemoteEngine

KERNEL = Path(__file__).resolve().parent / "data" / "kernels" / "axpy.py"
SMALL = {"rows": 64, "cols": 128}  # interpret mode runs on the CPU: keep the timed shape small
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBn2c7b0GJ0lzgaFfR9Ti6kC4iyHBnzvYvX2m5n5k2rx"


def _test_env() -> dict[str, str]:
    return {
        TEST_DEVICE_ENV: "cpu",
        "PYTHONPATH": sysconfig.get_paths()["purelib"],
        "TPU_SKIP_MDS_QUERY": "1",
        "JAX_PLATFORMS": "cpu",
    }


def _engine(home: Path, monkeypatch: pytest.MonkeyPatch | None = None) -> RemoteEngine:
    """The engine of tpu-agent home `home`; with `monkeypatch`, $TPU_AGENT_HOME sends the code under test
    (the CLI, the tuner) to that home too."""
    if monkeypatch is not None:
        monkeypatch.setenv("TPU_AGENT_HOME", str(home))
    return engine_at(home)


def _checked(verdict: str = "pass") -> KernelCheckReport:
    """A check report as stages 1-5 leave it (timing not run), for the file under test."""
    stages = [
        StageResult(stage="correctness", title=STAGE_TITLES["correctness"], verdict=verdict, message="x"),  # type: ignore[arg-type]
        StageResult(stage="timing", title=STAGE_TITLES["timing"], verdict="not_run", message=TIMING_NOT_RUN),
    ]
    return KernelCheckReport(
        file=str(KERNEL),
        kernel="axpy",
        params={"block_rows": 8},
        shapes=[SMALL],
        dtypes=["float32"],
        target_shape=SMALL,
        generations=[],
        stages=stages,
        verdict=verdict,  # type: ignore[arg-type]
        seconds=0.0,
    )


def _tuned_run(folder: Path) -> RunFolder:
    """A tuning run whose CPU attempts are done: two candidates pass, one fails (it must never be timed)."""
    run = RunFolder(folder)
    candidates = [{"block_rows": 8}, {"block_rows": 64}, {"block_rows": 16}]
    run.create(
        {
            "schema": 1,
            "file": str(KERNEL),
            "file_sha256": hashlib.sha256(KERNEL.read_bytes()).hexdigest(),
            "generation": "v6e",
            "budget": 3,
            "space": {"block_rows": [8, 16, 64]},
            "defaults": candidates[0],
            "target_shape": SMALL,
            "candidates": candidates,
        }
    )
    outcomes = [("pass", 1e-6), ("pass", 2e-6), ("fail", 5e-7)]  # the estimate prefers block_rows=8
    for n, (params, (verdict, estimate)) in enumerate(zip(candidates, outcomes, strict=True), start=1):
        run.append({"event": "start", "n": n, "params": params})
        record = {"n": n, "params": params, "verdict": verdict, "estimate_seconds": estimate}
        run.append(
            {"event": "finish", **record, "message": "" if verdict == "pass" else "correctness: wrong"}
        )
    return run


# --- the plan and the timer ---------------------------------------------------------------------------


def test_one_run_or_one_loop_with_the_exact_commands(tmp_path: Path) -> None:
    options = TimingOptions(target="lab", repeats=7, warmup=2)
    single = timing_work(KERNEL, [{"block_rows": 8}], options, tmp_path, shape=SMALL, dtype="float32")
    assert single.loop is None and single.downloads == ("timing",) and single.env == {}
    assert single.command == (
        "python3",
        TIMER_NAME,
        "--kernel",
        "axpy.py",
        "--params",
        '{"block_rows": 8}',
        "--shape",
        '{"rows": 64, "cols": 128}',
        "--dtype",
        "float32",
        "--repeats",
        "7",
        "--warmup",
        "2",
        "--out",
        "timing",
    )
    assert [dest for _, dest in single.uploads] == [TIMER_NAME, "axpy.py"]
    assert Path(single.uploads[0][0]).read_text() == TIMER_SOURCE
    loop = timing_work(KERNEL, [{"block_rows": 8}, {"block_rows": 32}], options, tmp_path, loop_name="t")
    assert loop.loop is not None and loop.loop.max_attempts == 2
    assert [json.loads(a[a.index("--params") + 1]) for a in loop.loop.attempts] == [
        {"block_rows": 8},
        {"block_rows": 32},
    ]
    assert loop.loop.max_seconds >= 2 * options.time_limit_s
    with pytest.raises(ValueError, match="loop"):
        timing_work(KERNEL, [{"block_rows": 8}, {"block_rows": 32}], options, tmp_path)
    clash = tmp_path / TIMER_NAME
    clash.write_text("")
    with pytest.raises(ValueError, match="may not be named"):
        timing_work(clash, [{}], options, tmp_path)


@pytest.mark.slow
def test_the_timer_refuses_to_run_without_a_tpu(tmp_path: Path) -> None:
    (tmp_path / TIMER_NAME).write_text(TIMER_SOURCE)
    (tmp_path / "axpy.py").write_text(KERNEL.read_text())
    env = {k: v for k, v in os.environ.items() if k != TEST_DEVICE_ENV} | {"JAX_PLATFORMS": "cpu"}
    argv = [sys.executable, TIMER_NAME, "--kernel", "axpy.py", "--params", "{}"]
    done = subprocess.run(
        [*argv, "--repeats", "3", "--warmup", "1", "--out", "timing"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    timing = read_timing(tmp_path / "timing")
    assert timing.device == "tpu" and timing.median_s is None and timing.times_s == []
    assert timing.error is not None and "no TPU here" in timing.error and "nothing was timed" in timing.error
    assert timing.stage == "setup"  # not the kernel's fault: stage 6 says "not run", never "fail"


# --- the approval gate, without running anything -------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    target = {
        "kind": "hosts",
        "user": "alice",
        "hosts": [{"name": "w0", "host": "10.0.0.2", "host_key": KEY}],
    }
    (folder / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lab": target}}))
    return folder


def test_stage_six_without_target_or_approval_is_not_run_with_the_reason(home: Path) -> None:
    engine = _engine(home)
    assert timing_stage(_checked(), KERNEL, TimingOptions(), engine=engine).message == TIMING_NOT_RUN
    failing = timing_stage(_checked("fail"), KERNEL, TimingOptions(target="lab"), engine=engine)
    assert failing.verdict == "not_run" and "fails a CPU stage" in failing.message
    assert engine.list_requests() == []  # a kernel that fails on the CPU is never sent to the TPU
    waiting = timing_stage(_checked(), KERNEL, TimingOptions(target="lab"), engine=engine)
    (pending,) = engine.list_requests(("pending",))
    assert waiting.verdict == "not_run"
    assert waiting.message.startswith(
        "not run: timing needs a real TPU; waiting for approval: "
        f"request {pending.id} (approve with `tpu-agent approvals approve {pending.id}`)"
    )
    assert pending.spec.loop is None and pending.requested_by == "kernel check"

    def person_says_no(eng: RemoteEngine, request: RunRequest) -> Approval | None:
        eng.deny(request.id, "tester@tty", "no")
        return None

    denied = timing_stage(_checked(), KERNEL, TimingOptions(target="lab"), person_says_no, engine=engine)
    assert denied.verdict == "not_run"
    assert (
        denied.message
        == f"not run: timing needs a real TPU; denied: request {pending.id} was denied by tester@tty"
    )
    unknown = timing_stage(_checked(), KERNEL, TimingOptions(target="nope"), engine=engine)
    assert unknown.verdict == "not_run" and "target nope" in unknown.message


def test_tune_files_one_loop_for_the_passing_candidates_and_ranks_by_estimate_until_it_runs(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(home, monkeypatch)
    run = _tuned_run(tmp_path / "run")
    args = ["kernel", "tune", str(KERNEL), "--budget", "3", "--run-dir", str(run.path), "--target", "lab"]
    result = CliRunner().invoke(app, [*args, "--json"])  # no terminal here: nobody is asked
    assert result.exit_code == 0, result.output
    (pending,) = engine.list_requests(("pending",))
    assert pending.requested_by == "kernel tune" and engine.approval_for(pending.id) is None
    loop = pending.spec.loop
    assert loop is not None and loop.max_attempts == 2  # the failing candidate is not in the plan
    assert [json.loads(a[a.index("--params") + 1]) for a in loop.attempts] == [
        {"block_rows": 8},
        {"block_rows": 64},
    ]
    report = json.loads(result.stdout)
    assert report["best"]["params"] == {"block_rows": 8}  # by estimate, until the loop has run
    assert report["ranking"].startswith("roofline estimate")
    assert f"timing on lab: waiting for approval: request {pending.id}" in report["ranking"]
    assert all(a["measured_seconds"] is None for a in report["attempts"])
    same = measure_candidates(run, TimingOptions(target="lab"), engine=engine)
    assert (
        same.status == "waiting" and same.request_id == pending.id
    )  # the same plan: reused, not filed twice
    other = measure_candidates(run, TimingOptions(target="lab", repeats=5), engine=engine)
    assert other.request_id != pending.id  # another command (other repeats): a new request


# --- approved and run against a real sshd --------------------------------------------------------------


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    yield from python_farm_or_skip(1, tmp_path_factory.mktemp("farm"), "the timer", "jax")


@pytest.fixture
def lo_home(farm: SshdFarm, tmp_path: Path) -> Path:
    folder = tmp_path / "lo-home"
    folder.mkdir()
    (folder / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    person.share_key(person.farm_key_dir(farm.session), folder)
    return folder


def _options(**over: Any) -> TimingOptions:
    return TimingOptions(target="lo", python=str(SYSTEM_PYTHON), env=_test_env(), time_limit_s=120, **over)


class _Person:
    """Stands in for the person at the terminal: says yes, and remembers what it was shown."""

    def __init__(self) -> None:
        self.shown: list[RunRequest] = []

    def __call__(self, engine: RemoteEngine, request: RunRequest) -> Approval | None:
        self.shown.append(request)
        return person.approve(engine, request.id, via="test")


@pytest.mark.slow
def test_kernel_check_with_a_target_times_the_kernel_after_approval(
    lo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flow of a client that cannot ask: the check files the request and says it waits; the person
    approves it in their own terminal; the same check run again picks the approved request up and runs it."""
    engine = _engine(lo_home, monkeypatch)
    options = _options(repeats=4, warmup=1)
    waiting = timing_stage(_checked(), KERNEL, options, engine=engine)
    (pending,) = engine.list_requests(("pending",))
    assert waiting.verdict == "not_run" and f"waiting for approval: request {pending.id}" in waiting.message
    person.approve(engine, pending.id, via="approvals-cli")  # `tpu-agent approvals approve`
    request = KernelCheckRequest(file=KERNEL, stages=["lowering"], target_shape=SMALL, timing=options)
    report = run_kernel_check(request, approver=lambda e, r: pytest.fail("asked again"))
    timing = report.stage("timing")
    assert timing is not None, report.stages
    rid = pending.id
    assert len(engine.list_requests()) == 1 and engine.get_request(rid).state == "finished"
    assert timing.verdict == "pass", timing.message
    assert (
        timing.message.startswith("median ")
        and "over 4 runs at (rows=64, cols=128) float32" in timing.message
    )
    assert (
        "ran on target lo (workers 0:w0) after approval at " in timing.message
        and f"request {rid}" in timing.message
    )
    assert (
        "device: cpu (test, interpret mode)" in timing.message and "not a TPU measurement" in timing.message
    )
    fetched = read_timing(lo_home / "downloads" / rid / "w0" / "timing", 0)
    assert len(fetched.times_s) == 4 and fetched.median_s is not None and fetched.median_s > 0
    assert fetched.params == {"block_rows": 8} and fetched.shape == SMALL
    assert report.verdict == "pass"


@pytest.mark.slow
def test_tune_with_a_target_times_passing_candidates_in_one_approved_loop(
    lo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(lo_home, monkeypatch)
    run = _tuned_run(tmp_path / "run")
    asker = _Person()
    timing = _options(repeats=3, warmup=1)
    report = run_kernel_tune(
        KernelTuneRequest(file=KERNEL, budget=3, run_dir=run.path, timing=timing), None, asker
    )
    assert len(asker.shown) == 1  # one approval for the whole loop: its plan and its budget
    loop = asker.shown[0].spec.loop
    assert loop is not None and len(loop.attempts) == 2 and loop.max_attempts == 2
    measures = [r for r in run.records() if r["event"] == "measure"]
    assert [r["params"] for r in measures] == [{"block_rows": 8}, {"block_rows": 64}]
    assert all(r["device"] == "cpu (test, interpret mode)" and r["median_s"] > 0 for r in measures)
    assert all(r["request"] == asker.shown[0].id for r in measures)
    measured = {a.params["block_rows"]: a.measured_seconds for a in report.attempts}
    assert measured[16] is None  # the failing candidate was never timed, and never wins
    assert measured[8] == measures[0]["median_s"] and measured[64] == measures[1]["median_s"]
    assert report.best is not None and report.best.measured_seconds == min(measured[8], measured[64])
    assert (
        report.ranking.startswith("measured on target lo") and "cpu (test, interpret mode)" in report.ranking
    )
    assert "measured on lo" in report.message
    assert report.speedup_over_default == pytest.approx(measured[8] / report.best.measured_seconds)
    # Running the tune again asks nobody and files nothing: every passing candidate has its timing.
    again = measure_candidates(run, timing, asker, engine=engine)
    assert again.status == "nothing_to_measure" and len(asker.shown) == 1 and len(engine.list_requests()) == 1


@pytest.mark.slow
def test_a_worker_without_a_tpu_times_nothing_and_stage_six_says_not_run(lo_home: Path) -> None:
    engine = _engine(lo_home)
    env = {k: v for k, v in _test_env().items() if k != TEST_DEVICE_ENV}  # a real request: no test hook
    options = TimingOptions(target="lo", python=str(SYSTEM_PYTHON), env=env, repeats=2, time_limit_s=120)
    stage = timing_stage(_checked(), KERNEL, options, _Person(), engine=engine)
    assert stage.verdict == "not_run", stage.message
    assert (
        stage.message.startswith("not run on target lo after approval at ") and "no TPU here" in stage.message
    )
    assert "median" not in stage.message
