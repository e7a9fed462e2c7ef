"""`kernel tune`: attempts recorded durably, the budget never exceeded (a killed tuner included), failing
candidates never win, hanging ones stopped, and the best reported against the default."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tpu_runtime.kernels.report import Attempt
from tpu_runtime.kernels.runlog import RunFolder, RunFolderError
from tpu_runtime.kernels.tune import build_report, candidate_order, next_candidate, params_key

KERNELS = Path(__file__).resolve().parent / "data" / "kernels"
REPO = Path(__file__).resolve().parents[1]


def _config(budget: int, candidates: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "file": "k.py",
        "generation": "v6e",
        "budget": budget,
        "space": {"b": [1, 2, 3]},
        "candidates": candidates,
        "target_shape": {},
    }


def test_candidate_order_starts_with_the_defaults_and_repeats_nothing() -> None:
    space = {"a": [1, 2, 3], "b": [10, 20]}
    order = candidate_order({"a": 2, "b": 20, "c": "x"}, space, budget=5, seed=7)
    assert order[0] == {"a": 2, "b": 20, "c": "x"}
    assert len(order) == 5 and len({params_key(c) for c in order}) == 5
    assert all(c["c"] == "x" for c in order)  # parameters outside the space keep their default
    assert order == candidate_order({"a": 2, "b": 20, "c": "x"}, space, budget=5, seed=7)
    assert len(candidate_order({"a": 1, "b": 10}, space, budget=50, seed=1)) == 6


def test_next_candidate_counts_every_start_against_the_budget() -> None:
    candidates = [{"b": 1}, {"b": 2}, {"b": 3}]
    config = _config(3, candidates)
    records: list[dict[str, Any]] = []
    assert next_candidate(records, config) == (1, {"b": 1})
    records += [{"event": "start", "n": 1, "params": {"b": 1}}]  # started, never finished: interrupted
    assert next_candidate(records, config) == (2, {"b": 1})  # an interrupted candidate is retried once
    records += [{"event": "finish", "n": 1, "params": {"b": 1}, "verdict": "interrupted"}]
    records += [
        {"event": "start", "n": 2, "params": {"b": 1}},
        {"event": "finish", "n": 2, "verdict": "pass"},
    ]
    assert next_candidate(records, config) == (3, {"b": 2})
    records += [{"event": "start", "n": 3, "params": {"b": 2}}]
    assert next_candidate(records, config) is None  # three starts: the budget is spent


def test_run_log_survives_a_torn_line_and_refuses_a_second_tuner(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.create(_config(2, [{"b": 1}]))
    run.append({"event": "start", "n": 1, "params": {"b": 1}})
    with run.log_path.open("a") as handle:
        handle.write('{"event": "finish", "n": 1, "verd')  # a crash in the middle of a write
    assert [r["event"] for r in run.records()] == ["start"]
    run.append({"event": "finish", "n": 1, "params": {"b": 1}, "verdict": "interrupted"})
    assert [r["event"] for r in run.records()] == ["start", "finish"]
    with run.locked(), pytest.raises(RunFolderError, match="another `tpu-agent kernel tune`"), run.locked():
        pass


def test_a_failing_candidate_never_wins_even_with_the_best_estimate(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.create(_config(3, [{"b": 1}, {"b": 2}, {"b": 3}]))
    attempts = [
        Attempt(n=1, params={"b": 1}, verdict="pass", estimate_seconds=4e-3),
        Attempt(n=2, params={"b": 2}, verdict="fail", estimate_seconds=1e-3, message="correctness: wrong"),
        Attempt(n=3, params={"b": 3}, verdict="pass", estimate_seconds=2e-3),
    ]
    for a in attempts:
        run.append({"event": "start", "n": a.n, "params": a.params})
        run.append({"event": "finish", **a.model_dump(mode="json")})
    report = build_report(run, resumed=False)
    assert report.best is not None and report.best.params == {"b": 3}
    assert report.default is not None and report.default.params == {"b": 1}
    assert report.speedup_over_default == pytest.approx(2.0)
    assert "2.00x the default" in report.message


def _tune_cmd(run_dir: Path, budget: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tpu_runtime.cli.app",
        "kernel",
        "tune",
        str(KERNELS / "tune_toy.py"),
        "--budget",
        str(budget),
        "--run-dir",
        str(run_dir),
        "--attempt-timeout",
        "6",
        "--json",
    ]


def _records(run_dir: Path) -> list[dict[str, Any]]:
    return RunFolder(run_dir).records()


@pytest.mark.slow
def _kill_during_second_attempt(run_dir: Path, budget: int, env: dict[str, str]) -> None:
    """Start the tuner and SIGKILL its process group once attempt 2 is durable and running."""
    tuner = subprocess.Popen(
        _tune_cmd(run_dir, budget),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=env,
        cwd=REPO,
    )
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            records = _records(run_dir) if run_dir.exists() else []
            starts = [r for r in records if r["event"] == "start"]
            finishes = [r for r in records if r["event"] == "finish"]
            if len(starts) == 2 and len(finishes) == 1:  # attempt 2 is durable and running: kill now
                break
            time.sleep(0.02)
        else:
            pytest.fail("the tuner never finished its first attempt")
    finally:
        os.killpg(tuner.pid, signal.SIGKILL)  # the tuner and anything left in its process group
        tuner.wait()
    worker = RunFolder(run_dir).worker_pid()
    assert worker is not None
    for _ in range(50):  # the worker notices its parent died and exits on its own
        if not psutil.pid_exists(worker) or psutil.Process(worker).status() == psutil.STATUS_ZOMBIE:
            return
        time.sleep(0.1)
    pytest.fail("the worker outlived the killed tuner")


def test_killed_tuner_resumes_without_exceeding_the_budget(tmp_path: Path) -> None:
    budget = 5
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # a fast candidate can finish between the poll and the kill on a loaded machine; try again then, so
    # the run resumed below always holds an attempt that was in flight when the tuner died
    for tries in range(3):
        run_dir = tmp_path / f"run{tries}"
        _kill_during_second_attempt(run_dir, budget, env)
        if RunFolder(run_dir).unfinished():
            break
    unfinished = RunFolder(run_dir).unfinished()
    assert len(unfinished) == 1  # the attempt in flight when the tuner died

    resumed = subprocess.run(_tune_cmd(run_dir, budget), capture_output=True, text=True, env=env, cwd=REPO)
    assert resumed.returncode == 0, resumed.stderr
    report = json.loads(resumed.stdout)
    records = _records(run_dir)
    starts = [r for r in records if r["event"] == "start"]
    assert len(starts) == budget == report["attempts_used"]
    assert {int(r["n"]) for r in records if r["event"] == "finish"} == {int(r["n"]) for r in starts}
    assert report["resumed"] is True
    by_rows = {}
    for attempt in report["attempts"]:
        by_rows.setdefault(attempt["params"]["block_rows"], []).append(attempt)
    assert any(a["verdict"] == "interrupted" for a in report["attempts"])
    # the attempt in flight when the tuner died may be any candidate: judge the finished ones
    finished = {rows: [a for a in runs if a["verdict"] != "interrupted"] for rows, runs in by_rows.items()}
    assert all(a["verdict"] == "fail" and "timed out" in a["message"] for a in finished[16])
    assert all(a["verdict"] == "fail" for a in finished[64])  # the wrong one, with the largest blocks
    assert report["best"]["params"] == {"block_rows": 32}
    assert report["default"]["params"] == {"block_rows": 8}
    # HBM-bound: every block size moves the same bytes, so the roofline ties and fewer grid steps win
    assert report["speedup_over_default"] == 1.0
    assert "estimate" in report["ranking"] and "not configured" in report["ranking"]

    again = subprocess.run(_tune_cmd(run_dir, budget + 1), capture_output=True, text=True, env=env, cwd=REPO)
    assert again.returncode == 2 and "started with budget 5" in again.stderr
