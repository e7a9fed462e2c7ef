"""Stage 6 of `kernel check` and the measured ranking of `kernel tune`: timing on the user's TPU VM.

Timing needs a real TPU, so it runs only through the approval path (`tpu_runtime.remote.gated`): a small
timer script (`TIMER_SOURCE`) is uploaded with the kernel file; on each worker it builds inputs with the
module's `make_inputs` at the target shape, compiles `kernel(*inputs, **params)` under `jax.jit`, runs it
`warmup` times, then `repeats` times, each call timed up to `jax.block_until_ready` (JAX dispatches
asynchronously, so a timer that does not wait for the result measures only the dispatch:
https://docs.jax.dev/en/latest/async_dispatch.html), and writes the median, the minimum and every time
as JSON into the output folder that comes back with the run.

`kernel check --target T` files one run; `kernel tune --target T` files one bounded loop (the remote
engine's `LoopPlan`: one attempt per candidate that passed every CPU check, budget = that many attempts
and their time), so one approval covers the whole plan and budget. The timer refuses to run when JAX's
backend is not a TPU; `TPU_AGENT_TEST_DEVICE=cpu` in the request's environment (visible in what the person
approves) is the test hook tpu-agent's own tests use instead: the kernel then runs in TPU interpret mode
on the CPU and every time is labelled "cpu (test, interpret mode)", never reported as a TPU time.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from tpu_runtime.kernels.report import TIMING_NOT_RUN, StageResult, stage_result
from tpu_runtime.remote.gated import RemoteWork, staged_script

if TYPE_CHECKING:
    from tpu_runtime.kernels.report import KernelCheckReport
    from tpu_runtime.kernels.runlog import RunFolder
    from tpu_runtime.remote.approvals import RunRequest
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.gated import Approver, GatedRun, GateOutcome

__all__ = [
    "TEST_DEVICE_ENV",
    "TIMER_NAME",
    "TIMER_SOURCE",
    "KernelTiming",
    "MeasureSummary",
    "TimingOptions",
    "measure_candidates",
    "read_timing",
    "timing_argv",
    "timing_run",
    "timing_stage",
    "timing_work",
]

TIMER_NAME = "tpu_agent_kernel_timer.py"
OUT_DIR = "timing"
RESULT_FILE = "timing-w{worker}.json"
"""One file per worker (its `TPU_AGENT_WORKER` index), so workers that share a file system keep theirs."""
TEST_DEVICE_ENV = "TPU_AGENT_TEST_DEVICE"
"""Test-only: `cpu` lets the timer run the kernel in interpret mode on the CPU, labelled as a test."""
TEST_DEVICE_LABEL = "cpu (test, interpret mode)"
LOOP_SLACK_S = 60.0

TIMER_SOURCE = f'''\
"""tpu-agent kernel timer (v1): median time of one Pallas kernel call on this machine's TPU.

Usage: python3 {TIMER_NAME} --kernel FILE --params JSON [--shape JSON] [--dtype NAME]
       --repeats N --warmup W --out DIR

Inputs come from the module's make_inputs at --shape (default TARGET_SHAPE) and --dtype (default the
first of DTYPES). kernel(*inputs, **params) is compiled with jax.jit, run W times, then timed N times, each
call up to jax.block_until_ready. Writes DIR/timing-w<worker>.json (TPU_AGENT_WORKER, 0 without it).
Refuses to run unless JAX's backend is a TPU;
{TEST_DEVICE_ENV}=cpu (tpu-agent's own tests only) runs it in interpret mode on the CPU instead and
labels every time "{TEST_DEVICE_LABEL}".
"""
import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
import time
import traceback

TEST_DEVICE_ENV = "{TEST_DEVICE_ENV}"


def load(path):
    spec = importlib.util.spec_from_file_location("tpu_agent_timed_kernel", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(prog="{TIMER_NAME}")
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--params", required=True)
    parser.add_argument("--shape", default=None)
    parser.add_argument("--dtype", default=None)
    parser.add_argument("--repeats", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    parser.add_argument("--out", required=True)
    opts = parser.parse_args()
    os.makedirs(opts.out, exist_ok=True)
    test_device = os.environ.get(TEST_DEVICE_ENV, "")
    params = json.loads(opts.params)
    result = {{"timer": 1, "device": "{TEST_DEVICE_LABEL}" if test_device == "cpu" else "tpu",
               "params": params, "repeats": opts.repeats, "warmup": opts.warmup,
               "worker": os.environ.get("TPU_AGENT_WORKER", ""), "times_s": []}}
    code = 0
    result["stage"] = "setup"  # where an error happened: setup (no TPU, no JAX) or the kernel itself
    try:
        if test_device not in ("", "cpu"):
            raise RuntimeError("%s=%r: the only test device is cpu" % (TEST_DEVICE_ENV, test_device))
        import jax
        import jax.numpy as jnp
        import numpy as np

        result["jax"] = jax.__version__
        backend = jax.default_backend()
        result["platform"] = backend
        if not test_device and backend != "tpu":
            raise RuntimeError("no TPU here: JAX's default backend is %r; nothing was timed" % backend)
        result["device_kind"] = jax.devices()[0].device_kind
        result["stage"] = "kernel"
        module = load(opts.kernel)
        shape = json.loads(opts.shape) if opts.shape else dict(
            getattr(module, "TARGET_SHAPE", None) or module.SHAPES[-1])
        dtype = opts.dtype or list(getattr(module, "DTYPES", ["float32"]))[0]
        result["shape"], result["dtype"] = shape, dtype
        made = module.make_inputs(np.random.default_rng(0), dict(shape), dtype)
        inputs = tuple(jax.device_put(jnp.asarray(x)) for x in (made if isinstance(made, (tuple, list))
                                                               else (made,)))
        fn = jax.jit(lambda *args: module.kernel(*args, **params))
        mode = contextlib.nullcontext()
        if test_device == "cpu":
            from jax.experimental.pallas import tpu as pltpu

            mode = pltpu.force_tpu_interpret_mode(pltpu.InterpretParams())
        with mode:
            started = time.perf_counter()
            jax.block_until_ready(fn(*inputs))
            result["first_call_s"] = time.perf_counter() - started
            for _ in range(opts.warmup - 1):
                jax.block_until_ready(fn(*inputs))
            for _ in range(opts.repeats):
                started = time.perf_counter()
                jax.block_until_ready(fn(*inputs))
                result["times_s"].append(time.perf_counter() - started)
        result["median_s"] = statistics.median(result["times_s"])
        result["min_s"] = min(result["times_s"])
    except Exception as exc:
        traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0]
        result["error"] = "%s: %s" % (type(exc).__name__, first)
        code = 1
    path = os.path.join(opts.out, "timing-w%s.json" % (result["worker"] or "0"))
    # written beside, then renamed in: a worker fetching a shared folder never sees a partial file
    partial = ".%s.tmp" % os.path.basename(path)
    with open(partial, "w") as handle:
        json.dump(result, handle)
    os.replace(partial, path)
    if "median_s" in result:
        print("tpu-agent kernel timer: median %.6g s over %d runs on %s %s"
              % (result["median_s"], opts.repeats, result["device"], result.get("device_kind", "")),
              flush=True)
    sys.exit(code)


if __name__ == "__main__":
    main()
'''


class TimingOptions(BaseModel):
    """Where and how to time a kernel; without a target nothing is timed."""

    target: str | None = Field(default=None, description="target name from the targets file")
    workers: str = "all"
    repeats: int = Field(default=50, ge=1, le=100_000)
    warmup: int = Field(default=3, ge=1, le=1000)
    python: str = Field(default="python3", description="the interpreter on the TPU VM")
    env: dict[str, str] = Field(default_factory=dict, description="environment shown for approval")
    time_limit_s: float = Field(default=600.0, gt=0, description="per timing run (per candidate)")


class KernelTiming(BaseModel):
    """One worker's timing file."""

    device: str
    device_kind: str = ""
    platform: str = ""
    jax: str = ""
    worker: str = ""
    params: dict[str, Any] = {}
    shape: dict[str, int] = {}
    dtype: str = ""
    repeats: int = 0
    warmup: int = 0
    times_s: list[float] = []
    first_call_s: float | None = None
    median_s: float | None = None
    min_s: float | None = None
    error: str | None = None
    stage: str = Field(default="setup", description="where `error` happened: setup or kernel")

    @property
    def label(self) -> str:
        return f"{self.device} {self.device_kind}".strip() if self.device == "tpu" else self.device


class MeasureSummary(BaseModel):
    """What measuring a tuning run's candidates came to (its records are in the run folder)."""

    status: Literal["measured", "waiting", "denied", "busy", "failed", "not_run", "nothing_to_measure"]
    message: str
    request_id: str | None = None


def _timer_file(staging_dir: Path) -> Path:
    return staged_script(staging_dir, "tpu_agent_kernel_timer", TIMER_SOURCE)


def timing_argv(
    kernel_name: str,
    params: dict[str, Any],
    options: TimingOptions,
    shape: dict[str, int] | None = None,
    dtype: str | None = None,
) -> tuple[str, ...]:
    """The timer's command line for one parameter set."""
    argv = [
        options.python,
        TIMER_NAME,
        "--kernel",
        kernel_name,
        "--params",
        json.dumps(params, sort_keys=True),
    ]
    if shape:
        argv += ["--shape", json.dumps(shape)]  # in the module's order, as reports show shapes
    if dtype:
        argv += ["--dtype", dtype]
    argv += ["--repeats", str(options.repeats), "--warmup", str(options.warmup), "--out", OUT_DIR]
    return tuple(argv)


def timing_work(
    file: Path,
    runs: Sequence[dict[str, Any]],
    options: TimingOptions,
    staging_dir: Path,
    *,
    shape: dict[str, int] | None = None,
    dtype: str | None = None,
    loop_name: str = "",
) -> RemoteWork:
    """One timing run (no `loop_name`, one parameter set) or a bounded loop, one attempt per set."""
    from tpu_runtime.remote.spec import LoopPlan

    if not runs:
        raise ValueError("nothing to time")
    if file.name == TIMER_NAME:
        raise ValueError(f"the kernel file may not be named {TIMER_NAME}")
    attempts = tuple(timing_argv(file.name, params, options, shape, dtype) for params in runs)
    if not loop_name and len(attempts) > 1:
        raise ValueError("several parameter sets are timed as a loop: give it a name")
    loop = None
    if loop_name:
        loop = LoopPlan(
            name=loop_name,
            attempts=attempts,
            max_attempts=len(attempts),
            max_seconds=options.time_limit_s * len(attempts) + LOOP_SLACK_S,
        )
    return RemoteWork(
        command=attempts[0],
        uploads=((str(_timer_file(staging_dir)), TIMER_NAME), (str(file.resolve()), file.name)),
        downloads=(OUT_DIR,),
        env=dict(options.env),
        time_limit_s=options.time_limit_s,
        loop=loop,
    )


def read_timing(folder: Path, worker: int = 0) -> KernelTiming:
    """One worker's timing from a fetched folder. Raises ValueError (one line) when it cannot be read."""
    path = folder / RESULT_FILE.format(worker=worker)
    try:
        return KernelTiming.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None


def _seconds(value: float) -> str:
    return f"{value * 1e3:.4g} ms" if value >= 1e-3 else f"{value * 1e6:.4g} µs"


def _collect(
    state_path: Path, request: RunRequest, attempt: int = 0
) -> tuple[dict[int, KernelTiming], list[str]]:
    from tpu_runtime.remote.gated import read_fetched

    return read_fetched(state_path, request, read_timing, ValueError, attempt)


def _headline(timings: dict[int, KernelTiming]) -> KernelTiming | None:
    """The lowest-index worker's timing that has a median: the figure reported and ranked."""
    return next((timings[i] for i in sorted(timings) if timings[i].median_s is not None), None)


def _not_run(message: str) -> StageResult:
    return stage_result("timing", "not_run", message)


def _waiting_text(outcome: GateOutcome, rerun: str) -> str:
    rid = outcome.request.id
    if outcome.state == "waiting":
        return f"waiting for approval: request {rid} ({outcome.approve_hint}); then run {rerun} again"
    if outcome.state == "denied":
        return outcome.denied_text
    return f"request {rid} is running elsewhere; run {rerun} again when it has ended"


def _engine(engine: RemoteEngine | None) -> RemoteEngine:
    if engine is not None:
        return engine
    from tpu_runtime.remote.engine import RemoteEngine

    return RemoteEngine()


def timing_stage(
    report: KernelCheckReport,
    file: Path,
    options: TimingOptions,
    approver: Approver | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    engine: RemoteEngine | None = None,
) -> StageResult:
    """Stage 6: time a checked kernel on `options.target` once the person approves; else say why not."""
    from tpu_runtime.remote.gated import settle_now

    def run(done: Callable[[StageResult], None]) -> GatedRun | None:
        return timing_run(report, file, options, done, progress, engine=engine)

    return settle_now(run, approver)


def timing_run(
    report: KernelCheckReport,
    file: Path,
    options: TimingOptions,
    done: Callable[[StageResult], None],
    progress: Callable[[str], None] | None = None,
    *,
    engine: RemoteEngine | None = None,
) -> GatedRun | None:
    """Stage 6 as the work to pass through the approval gate; `done` gets the stage, now (None returned:
    nothing to run) or once the gate has settled the run."""
    from tpu_runtime.remote.gated import ApprovalPending, GatedRun

    if not options.target:
        done(_not_run(TIMING_NOT_RUN))
        return None
    if report.verdict != "pass":
        done(
            _not_run(
                "not run: timing needs a real TPU, and the kernel fails a CPU stage; "
                "it is timed only once it passes"
            )
        )
        return None
    target = options.target
    remote = _engine(engine)
    try:
        work = timing_work(
            file,
            [report.params],
            options,
            remote.state_path / "kernel_timing",
            shape=report.target_shape,
            dtype=report.dtypes[0] if report.dtypes else None,
        )
    except ValueError as exc:
        done(_not_run(f"not run: timing needs a real TPU; target {target}: {exc}"))
        return None

    def refused(exc: Exception) -> None:
        if isinstance(exc, ApprovalPending):
            done(_not_run("not run: timing needs a real TPU; " + _waiting_text(exc.outcome, "this check")))
        else:
            done(_not_run(f"not run: timing needs a real TPU; target {target}: {exc}"))

    return GatedRun(
        engine=remote,
        target=target,
        work=work,
        finish=lambda outcome: done(_timed(outcome, remote, target)),
        refused=refused,
        workers=options.workers,
        requested_by="kernel check",
        on_line=(lambda line: progress(line.prefixed())) if progress else None,
    )


def _timed(outcome: GateOutcome, remote: RemoteEngine, target: str) -> StageResult:
    """Stage 6 from a run that the person approved (ran now or earlier)."""
    from tpu_runtime.remote.gated import approval_time, worker_names

    request = outcome.request
    timings, problems = _collect(remote.state_path, request)
    problems += outcome.worker_failures
    problems += [f"worker {i}: {t.error}" for i, t in sorted(timings.items()) if t.error]
    if outcome.note:
        problems.append(outcome.note)
    head = _headline(timings)
    when = approval_time(request)
    if head is None or head.median_s is None or head.min_s is None:
        why = " | ".join(problems) or "no worker brought a timing back"
        kernel_failed = any(t.error and t.stage == "kernel" for t in timings.values())
        # the kernel itself failing on the TPU is a finding; no TPU, no JAX or no connection is not
        return stage_result(
            "timing",
            "fail" if kernel_failed else "not_run",
            f"{'failed' if kernel_failed else 'not run'} on target {target} after approval "
            f"at {when} (request {request.id}): {why}",
        )
    shape = ", ".join(f"{k}={v}" for k, v in head.shape.items())
    names = worker_names(request, sorted(timings))
    message = (
        f"median {_seconds(head.median_s)} (min {_seconds(head.min_s)}) over {head.repeats} runs "
        f"at ({shape}) {head.dtype}; ran on target {target} (workers {names}) "
        f"after approval at {when}; device: {head.label}; request {request.id}"
    )
    if head.device != "tpu":
        message += "; a test run, not a TPU measurement"
    details = [
        f"worker {i}: median {_seconds(t.median_s)}, min {_seconds(t.min_s or t.median_s)}, "
        f"first call (compile) {_seconds(t.first_call_s or 0.0)}, device {t.label}"
        for i, t in sorted(timings.items())
        if t.median_s is not None
    ] + problems
    return stage_result(
        "timing",
        "warn" if problems else "pass",
        message + (f"; problems: {' | '.join(problems)}" if problems else ""),
        details=details,
    )


def measured_on(run: RunFolder, target: str) -> dict[str, dict[str, Any]]:
    """params key -> the latest 'measure' record on `target` (a timing or the reason there is none)."""
    from tpu_runtime.kernels.runlog import params_key

    found: dict[str, dict[str, Any]] = {}
    for record in run.records():
        if record["event"] == "measure" and record.get("target") == target:
            found[params_key(record["params"])] = record
    return found


def measure_candidates(
    run: RunFolder,
    options: TimingOptions,
    approver: Approver | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    engine: RemoteEngine | None = None,
) -> MeasureSummary:
    """Time every candidate of a tuning run that passed every CPU check and has no timing on the target yet.

    One loop request covers them all (one approval for the whole plan and budget). Each timed candidate
    gets a durable 'measure' record in the run folder; call this while holding the run's lock.
    """
    from tpu_runtime.kernels.runlog import params_key
    from tpu_runtime.remote.gated import GateError, settle

    target = options.target
    if not target:
        return MeasureSummary(status="not_run", message=TIMING_NOT_RUN)
    config = run.config()
    done = measured_on(run, target)
    todo: list[tuple[int, dict[str, Any]]] = []
    for n, record in sorted(run.finished().items()):
        key = params_key(record.get("params", {}))
        if (
            record.get("verdict") == "pass"
            and key not in done
            and key not in {params_key(p) for _, p in todo}
        ):
            todo.append((n, record["params"]))
    if not todo:
        return MeasureSummary(
            status="nothing_to_measure",
            message=f"every passing candidate already has a timing on {target}"
            if done
            else "no candidate passed every CPU check, so none is timed",
        )
    remote = _engine(engine)
    file = Path(config["file"])
    try:
        work = timing_work(
            file,
            [params for _, params in todo],
            options,
            remote.state_path / "kernel_timing",
            shape=config.get("target_shape") or None,
            loop_name=f"kernel tune timing: {file.name}, {len(todo)} candidate(s)",
        )
        outcome = settle(
            remote,
            target,
            work,
            approver=approver,
            workers=options.workers,
            requested_by="kernel tune",
            on_line=(lambda line: progress(line.prefixed())) if progress else None,
            resume_loops=True,
        )
    except (GateError, ValueError) as exc:
        return MeasureSummary(status="not_run", message=f"not run: target {target}: {exc}")
    if outcome.state in ("waiting", "denied", "busy"):
        status: Literal["waiting", "denied", "busy"] = outcome.state
        return MeasureSummary(
            status=status, message=_waiting_text(outcome, "this tune"), request_id=outcome.request.id
        )
    recorded = _record_measurements(run, remote, outcome, todo, target)
    failed = len(todo) - recorded
    text = f"timed {recorded} of {len(todo)} candidate(s) on {target} (request {outcome.request.id})"
    if failed:
        text += f"; {failed} without a timing (see each attempt's measure record)"
    return MeasureSummary(
        status="measured" if recorded else "failed", message=text, request_id=outcome.request.id
    )


def _record_measurements(
    run: RunFolder,
    remote: RemoteEngine,
    outcome: GateOutcome,
    todo: list[tuple[int, dict[str, Any]]],
    target: str,
) -> int:
    """Append one 'measure' record per planned candidate that the run reached; returns how many timed."""
    from tpu_runtime.remote import loops
    from tpu_runtime.remote.gated import approval_time

    request = outcome.request
    # plan index -> attempt number (the latest attempt that ran it); a single run is attempt 0
    if request.spec.loop is None:
        attempt_of = {0: 0}
    else:
        progress = loops.progress(remote.store, request.id, request.spec.loop)
        # only attempts that ran to an end: an interrupted one says nothing about the kernel, so its
        # candidate stays unmeasured and is planned again by the next tune
        attempt_of = {
            a.plan_index: a.n for a in (progress.attempts if progress else []) if a.state in ("ok", "failed")
        }
    when = approval_time(request)
    timed = 0
    for index, (n, params) in enumerate(todo):
        if index not in attempt_of:
            continue  # never ran to an end (budget or time spent, interrupted): measured by a later tune
        timings, problems = _collect(remote.state_path, request, attempt_of[index])
        head = _headline(timings)
        record: dict[str, Any] = {
            "event": "measure",
            "n": n,
            "params": params,
            "target": target,
            "request": request.id,
            "approved_at": when,
            "workers": {str(i): t.median_s for i, t in sorted(timings.items())},
        }
        if head is not None and head.median_s is not None:
            record.update(
                median_s=head.median_s,
                min_s=head.min_s,
                repeats=head.repeats,
                device=head.label,
                spread_s=_spread(timings),
            )
            timed += 1
        else:
            errors = [t.error for t in timings.values() if t.error] + problems
            record["error"] = " | ".join(e for e in errors if e) or "no timing came back from any worker"
        run.append(record)
    return timed


def _spread(timings: dict[int, KernelTiming]) -> float | None:
    medians = [t.median_s for t in timings.values() if t.median_s is not None]
    return max(medians) - min(medians) if len(medians) > 1 else None
