"""`kernel tune`: a bounded autotune whose every attempt is recorded, resumable, and never over budget.

Parent (the tuner, `run_kernel_tune`): reads the module's declarations in a child, fixes the run's
configuration (the candidate order: DEFAULTS first, then the space in a seeded shuffle) in a run folder
(`tpu_runtime.kernels.runlog`), and starts a worker child that evaluates candidates one after another. A
watchdog kills the worker when one attempt runs past its time limit; the attempt is recorded as failed and a
new worker continues with the rest. Only the parent holds the folder's lock.

Worker (`tune_worker.tune_worker`, in the child): before each attempt it counts the durable "start"
records, stops at the budget, appends a start record, runs stages 1-4 for the tuning generation, and
appends the result. A
killed tuner leaves at most one attempt unfinished; the next run records it as interrupted (it counts against
the budget) and may retry that candidate once.

Offline, passing candidates are ranked by the roofline estimate from the compile stage. With a TPU target
(`KernelTuneRequest.timing.target`), the candidates that passed every CPU check are then timed on it as one
bounded loop that the person approves once (`tpu_runtime.kernels.remote_timing.measure_candidates`); each
timing is a 'measure' record in the run folder, and the ranking uses the measured medians. Until the loop
is approved and has run, the ranking stays the estimate and says why.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import os
import random
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from tpu_runtime.kernels.remote_timing import TimingOptions
from tpu_runtime.kernels.report import Attempt, StageName, TuneReport
from tpu_runtime.kernels.runlog import RunFolder, RunFolderError, params_key
from tpu_runtime.kernels.sandbox_run import (
    KernelToolError,
    canonical_generations,
    describe_kernel,
    require_timing_target,
    run_in_child,
)
from tpu_runtime.progress import ProgressFn
from tpu_runtime.user_data import data_dir

if TYPE_CHECKING:
    from tpu_runtime.remote.gated import Approver

TUNE_STAGES: list[StageName] = ["correctness", "honesty", "lowering", "compile"]
MAX_ENUMERATED = 100_000
STARTUP_ALLOWANCE_S = 180.0
RANKING_ESTIMATE = (
    "roofline estimate on one {generation} device (compile-time cost analysis, pipeline traffic model, "
    "chip peaks, and an assumed 0.35 µs per grid step)"
)
RANKING_OFFLINE = RANKING_ESTIMATE + "; measured timing needs an approved TPU target, which is not configured"
RANKING_MEASURED = (
    "measured on target {target}: median of the timed runs per candidate, each call up to "
    "jax.block_until_ready; device: {device}; candidates without a timing are not ranked"
)


class KernelTuneRequest(BaseModel):
    file: Path
    budget: int = Field(ge=1)
    space: dict[str, list[Any]] | None = None
    generation: str = "v6e"
    run_dir: Path | None = None
    attempt_timeout_s: float = Field(default=600.0, gt=0)
    memory_gb: float = Field(default=0.0, ge=0)
    timing: TimingOptions = Field(default_factory=TimingOptions)


def default_run_dir(file: Path, generation: str, space: dict[str, list[Any]]) -> Path:
    digest = hashlib.sha256(f"{file}|{generation}|{json.dumps(space, sort_keys=True)}".encode()).hexdigest()[
        :10
    ]
    return data_dir() / "kernel-tune" / f"{file.stem}-{generation}-{digest}"


def candidate_order(
    defaults: dict[str, Any], space: dict[str, list[Any]], budget: int, seed: int
) -> list[dict[str, Any]]:
    """DEFAULTS first, then up to budget-1 distinct points of the space in a seeded random order."""
    first = dict(defaults)
    names = sorted(space)
    total = 1
    for name in names:
        total *= len(space[name])
    rng = random.Random(seed)
    seen = {params_key(first)}
    order = [first]
    if total <= MAX_ENUMERATED:
        points = [
            dict(zip(names, values, strict=True)) for values in itertools.product(*(space[n] for n in names))
        ]
        rng.shuffle(points)
    else:
        points = [{n: rng.choice(space[n]) for n in names} for _ in range(budget * 20)]
    for point in points:
        candidate = {**defaults, **point}
        key = params_key(candidate)
        if key not in seen:
            seen.add(key)
            order.append(candidate)
        if len(order) >= budget:
            break
    return order


def next_candidate(
    records: list[dict[str, Any]], config: dict[str, Any]
) -> tuple[int, dict[str, Any]] | None:
    """The next attempt number and parameters, or None when the budget is spent or nothing is left.

    A candidate is tried once; one whose every attempt was interrupted (the tuner died) is retried once.
    """
    starts = [r for r in records if r["event"] == "start"]
    if len(starts) >= int(config["budget"]):
        return None
    finished = {int(r["n"]): r for r in records if r["event"] == "finish"}
    for candidate in config["candidates"]:
        key = params_key(candidate)
        mine = [r for r in starts if params_key(r["params"]) == key]
        verdicts = [finished.get(int(r["n"]), {}).get("verdict", "interrupted") for r in mine]
        if not mine or (len(mine) < 2 and all(v == "interrupted" for v in verdicts)):
            return len(starts) + 1, candidate
    return None


# --------------------------------------------------------------------------------------------- worker side


def _attempt_from_report(n: int, params: dict[str, Any], report: Any, generation: str) -> Attempt:
    verdicts = {s.stage: s.verdict for s in report.stages if s.stage != "timing"}
    compile_stage = report.stage("compile")
    result = (
        next((g for g in compile_stage.generations if g.generation == generation), None)
        if compile_stage
        else None
    )
    failing = [s for s in report.stages if s.verdict == "fail"]
    passed = not failing and result is not None and result.estimate_seconds is not None
    if passed:
        message = result.message if result else ""
    elif failing:
        message = f"{failing[0].stage}: {failing[0].message}"
    else:
        message = (
            f"no estimate for {generation}: {result.message if result else 'the compile stage did not run'}"
        )
    log = "\n".join(report.notes[2:])[-4000:] if failing else ""
    return Attempt(
        n=n,
        params=params,
        verdict="pass" if passed else "fail",
        stage_verdicts=verdicts,
        message=message,
        vmem_bytes=result.vmem_bytes if result else None,
        estimate_seconds=result.estimate_seconds if result else None,
        bound=result.bound if result else None,
        grid_steps=result.grid_steps if result else None,
        seconds=report.seconds,
        log=log,
    )


# --------------------------------------------------------------------------------------------- parent side


class _Watchdog:
    """Kills the worker when one attempt runs longer than its limit."""

    def __init__(self, run: RunFolder, limit_s: float, on_attempt: Callable[[int, str], None]) -> None:
        self.run = run
        self.limit_s = limit_s
        self.on_attempt = on_attempt
        self.current: int | None = None
        self.started = time.monotonic()
        self.killed: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="tune-watchdog", daemon=True)

    def __enter__(self) -> _Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def progress(self, stage: str, fraction: float) -> None:
        match = re.match(r"attempt:(\d+):(.*)", stage)
        if not match:
            return
        n = int(match.group(1))
        if match.group(2) == "done":
            self.current = None
        elif n != self.current:
            self.current, self.started = n, time.monotonic()
            self.on_attempt(n, match.group(2))

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            if self.current is None or time.monotonic() - self.started <= self.limit_s:
                continue
            pid = self.run.worker_pid()
            if pid and _is_my_child(pid):
                self.killed = self.current
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
            return


def _is_my_child(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).ppid() == os.getpid()
    except psutil.Error:
        return False


def _close_unfinished(run: RunFolder, verdict: str, message: str) -> None:
    for record in run.unfinished():
        run.append(
            {
                "event": "finish",
                "n": int(record["n"]),
                "params": record["params"],
                "verdict": verdict,
                "message": message,
            }
        )


def _check_resumable(
    run: RunFolder, request: KernelTuneRequest, file: Path, space: dict[str, Any] | None
) -> None:
    """The existing run must be for this file's current content, generation, budget and space."""
    config = run.config()
    generation = canonical_generations([request.generation])[0]
    if config.get("file") != str(file) or config.get("generation") != generation:
        raise KernelToolError(
            f"{run.path} holds a run for {config.get('file')} on {config.get('generation')}"
        )
    if config.get("file_sha256") != hashlib.sha256(file.read_bytes()).hexdigest():
        raise KernelToolError(
            f"{file.name} changed since the run in {run.path} began; "
            "its attempts no longer describe this code "
            "(pass --run-dir to start a new run)"
        )
    if int(config.get("budget", -1)) != request.budget:
        raise KernelToolError(
            f"the run in {run.path} was started with budget {config.get('budget')}; resume it with "
            f"--budget {config.get('budget')} or pass --run-dir to start a new run"
        )
    if space is not None and config.get("space") != space:
        raise KernelToolError(f"the run in {run.path} was started with another --space; pass --run-dir")


def _resume_named_run(request: KernelTuneRequest, file: Path) -> tuple[RunFolder | None, bool]:
    """An explicit --run-dir that already holds a run resumes without reading the module again."""
    if request.run_dir is None:
        return None, False
    run = RunFolder(request.run_dir.expanduser().resolve())
    if not run.exists():
        return None, False
    _check_resumable(run, request, file, request.space)
    return run, True


def _open_run(request: KernelTuneRequest, file: Path, description: dict[str, Any]) -> tuple[RunFolder, bool]:
    space = request.space if request.space is not None else description["space"]
    if not space:
        raise KernelToolError(
            f"{file.name} declares no SPACE and --space was not given: nothing to tune (add SPACE = {{...}})"
        )
    known = set(description["parameters"])
    for name, values in space.items():
        if name not in known:
            raise KernelToolError(
                f"--space names {name!r}, which kernel() does not accept; "
                f"its parameters: {', '.join(sorted(known))}"
            )
        if not isinstance(values, list) or not values:
            raise KernelToolError(f"--space[{name!r}] must be a non-empty list of values")
    generation = canonical_generations([request.generation])[0]
    run_dir = (request.run_dir or default_run_dir(file, generation, space)).expanduser().resolve()
    run = RunFolder(run_dir)
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    if run.exists():
        _check_resumable(run, request, file, space)
        return run, True
    seed = int(hashlib.sha256(f"{file}|{sha}|{generation}".encode()).hexdigest()[:8], 16)
    run.create(
        {
            "schema": 1,
            "file": str(file),
            "file_sha256": sha,
            "generation": generation,
            "budget": request.budget,
            "space": space,
            "defaults": description["defaults"],
            "target_shape": description["target_shape"],
            "candidates": candidate_order(description["defaults"], space, request.budget, seed),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    return run, False


def run_kernel_tune(
    request: KernelTuneRequest, progress: ProgressFn | None = None, approver: Approver | None = None
) -> TuneReport:
    """Tune within the budget; resumes the run folder if it exists. Raises KernelToolError for bad input.

    With `request.timing.target`, passing candidates are then timed there once the person approves the
    loop (`approver`: a front end's prompt; without one the loop waits for `tpu-agent approvals approve`).
    """
    file = request.file.expanduser().resolve()
    if not file.is_file():
        raise KernelToolError(f"no such kernel file: {request.file}")
    if request.timing.target:
        require_timing_target(request.timing.target)
    notify = progress or (lambda step, message, fraction: None)
    named, existed = _resume_named_run(request, file)
    if named is None:
        notify("describe", "reading the kernel module", 0.0)
        named, existed = _open_run(request, file, describe_kernel(file))
    run = named
    try:
        with run.locked():
            config = run.config()
            resumed = existed and bool(run.records())
            _close_unfinished(
                run, "interrupted", "the tuner stopped during this attempt; it counts against the budget"
            )
            _drive_workers(run, config, request, notify)
            target = request.timing.target
            note = None
            if target:
                from tpu_runtime.kernels.remote_timing import measure_candidates

                notify("timing", f"timing passing candidates on {target}", 0.0)
                summary = measure_candidates(
                    run, request.timing, approver, lambda line: notify("timing", line, 0.5)
                )
                note = summary.message
                notify("timing", "done", 1.0)
            return build_report(run, resumed, target=target, timing_note=note)
    except RunFolderError as exc:
        raise KernelToolError(str(exc)) from None


def _drive_workers(
    run: RunFolder, config: dict[str, Any], request: KernelTuneRequest, notify: ProgressFn
) -> None:
    budget = int(config["budget"])
    while next_candidate(run.records(), config) is not None:
        before = len(run.started())
        remaining = budget - before

        def on_attempt(n: int, params: str) -> None:
            notify("tune", f"attempt {n} of {budget}: {params}", (n - 1) / budget)

        watchdog = _Watchdog(run, request.attempt_timeout_s, on_attempt)
        failure: KernelToolError | None = None
        with watchdog:
            try:
                run_in_child(
                    "tpu_runtime.kernels.tune_worker:tune_worker",
                    {"run_dir": str(run.path)},
                    STARTUP_ALLOWANCE_S + request.attempt_timeout_s * remaining,
                    request.memory_gb,
                    watchdog.progress,
                )
            except KernelToolError as exc:
                failure = exc
        if failure is not None:
            if watchdog.killed is not None:
                message = f"timed out: the attempt ran past {request.attempt_timeout_s:.0f} s and was stopped"
            else:
                message = f"the attempt's process failed: {failure.message}"
            if not run.unfinished() and len(run.started()) == before:
                raise KernelToolError(f"the tuning worker could not start: {failure.message}", failure.detail)
            _close_unfinished(run, "fail", message)
        elif len(run.started()) == before:
            break  # the worker found nothing to do; never loop without progress
    notify("tune", "done", 1.0)


def build_report(
    run: RunFolder, resumed: bool, target: str | None = None, timing_note: str | None = None
) -> TuneReport:
    """Rank the recorded attempts; the default's attempt is the baseline.

    With `target`, attempts carry their measured median on it, and when any passing attempt has one the
    ranking is by measured time (a candidate without a timing is then not ranked); otherwise by estimate.
    """
    config = run.config()
    finished = run.finished()
    attempts: list[Attempt] = []
    for record in run.started():
        n = int(record["n"])
        done = finished.get(n)
        if done is None:
            attempts.append(
                Attempt(n=n, params=record["params"], verdict="interrupted", message="still unfinished")
            )
            continue
        fields = {k: v for k, v in done.items() if k in Attempt.model_fields}
        attempts.append(Attempt.model_validate({**fields, "n": n, "params": record["params"]}))
    generation = config["generation"]
    notes = [f"target shape {config.get('target_shape')}; the record is {run.log_path}"]
    measures = _attach_measures(run, attempts, target) if target else {}
    measured = [a for a in attempts if a.verdict == "pass" and a.measured_seconds is not None]

    def seconds_of(a: Attempt | None) -> float | None:
        if a is None:
            return None
        return a.measured_seconds if measured else a.estimate_seconds

    passing = measured or [a for a in attempts if a.verdict == "pass" and a.estimate_seconds is not None]
    # equal estimates (HBM-bound kernels moving the same bytes) go to fewer grid steps: every step has a
    # fixed pipeline cost the roofline does not model
    best = min(passing, key=lambda a: (seconds_of(a) or 0.0, a.grid_steps or 0, a.n)) if passing else None
    default_key = params_key(config["candidates"][0])
    default = next(
        (a for a in attempts if params_key(a.params) == default_key and a.verdict != "interrupted"), None
    )
    speedup = None
    best_s, default_s = seconds_of(best), seconds_of(default)
    if best and default and default.verdict == "pass" and default_s and best_s:
        speedup = default_s / best_s
    if measured:
        devices = sorted({str(measures[params_key(a.params)].get("device", "?")) for a in measured})
        ranking = RANKING_MEASURED.format(target=target, device=", ".join(devices))
    elif target:
        ranking = RANKING_ESTIMATE.format(generation=generation) + f"; timing on {target}: {timing_note}"
    else:
        ranking = RANKING_OFFLINE.format(generation=generation)
    if timing_note and measured:
        notes.append(f"timing on {target}: {timing_note}")
    notes += [
        f"no timing on {target} for {_params_text(r['params'])}: {r['error']}"
        for r in measures.values()
        if r.get("median_s") is None and r.get("error")
    ]
    where = f"measured on {target}" if measured else f"estimated on {generation}"
    message = _summary(best, default, speedup, attempts, where, seconds_of)
    return TuneReport(
        file=config["file"],
        run_dir=str(run.path),
        generation=generation,
        budget=int(config["budget"]),
        attempts_used=len(attempts),
        candidates_total=_space_size(config["space"]),
        ranking=ranking,
        resumed=resumed,
        attempts=attempts,
        best=best,
        default=default,
        speedup_over_default=speedup,
        message=message,
        notes=notes,
    )


def _attach_measures(run: RunFolder, attempts: list[Attempt], target: str) -> dict[str, dict[str, Any]]:
    """Set each attempt's measured median on `target` from the run's 'measure' records."""
    from tpu_runtime.kernels.remote_timing import measured_on

    measures = measured_on(run, target)
    for attempt in attempts:
        record = measures.get(params_key(attempt.params))
        if record is not None and record.get("median_s") is not None:
            attempt.measured_seconds = float(record["median_s"])
    return measures


def _space_size(space: dict[str, list[Any]]) -> int:
    size = 1
    for values in space.values():
        size *= len(values)
    return size


def _params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items())


def _summary(
    best: Attempt | None,
    default: Attempt | None,
    speedup: float | None,
    attempts: list[Attempt],
    where: str,
    seconds_of: Callable[[Attempt | None], float | None],
) -> str:
    passed = sum(1 for a in attempts if a.verdict == "pass")
    tally = f"{passed} of {len(attempts)} attempts passed every check"
    if best is None:
        return f"no candidate passed every check ({tally}); see each attempt's message"
    text = f"best: {_params_text(best.params)} ({_seconds(seconds_of(best))} {where})"
    if default is None:
        text += "; the default was not evaluated"
    elif default.verdict != "pass":
        text += f"; the default fails a check ({default.message})"
    elif speedup is not None and best.n == default.n:
        text += "; the default is the best candidate found"
    elif speedup is not None:
        text += f"; {speedup:.2f}x the default's time ({_seconds(seconds_of(default))})"
    elif seconds_of(default) is None:
        text += "; the default has no time to compare with"
    return f"{text}; {tally}"


def _seconds(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value * 1e3:.3g} ms" if value >= 1e-3 else f"{value * 1e6:.3g} µs"
