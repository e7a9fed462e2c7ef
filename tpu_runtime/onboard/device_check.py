"""Onboarding's numerics comparison on a real TPU: the plan, its approval-gated request, and its rows.

On the CPU, `tpu_runtime.onboard.numerics` can only emulate TPU matmul precision. This module plans the
same comparison on the user's TPU VM: a runner script (`RUNNER_SOURCE`) is uploaded together with the
user's model file and a copy of the onboarding loader (`loader.py`, so the model is found by exactly the
same conventions), and on each worker it

1. loads the model and its example inputs,
2. runs it once in float64 on the VM's CPU (the reference),
3. runs it once per precision mode on `torch.device("tpu")`, f32 modes under TorchTPU's own precision
   context (`torch.tpu.precision(torch.tpu.Precision.DEFAULT | HIGH | HIGHEST)`, the StableHLO
   `dot_general` precision config; torch_tpu 0.2.0, torch_tpu/_internal/precision/precision.py,
   https://pypi.org/project/torch-tpu/ and https://openxla.org/stablehlo/spec#dot_general), "bf16" with
   the model and inputs cast to bfloat16,
4. compares every module's first output (forward hooks) with the reference, and writes one `LayerError`
   row per (module, mode) as JSON into the output folder, which comes back with the run.

Nothing runs until the person approves the request (`tpu_runtime.remote.gated`). The runner's device is
always `tpu`; the only way to run it elsewhere is the test hook `TPU_AGENT_TEST_DEVICE=cpu` in the
request's environment (visible in what the person approves), used by tpu-agent's own tests to exercise
the plumbing without a TPU: the rows are then labelled "device: cpu (test)" and never reported as a TPU
result.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from tpu_runtime.errors import BadInput
from tpu_runtime.onboard.report import LayerError, NumericsReport, PrecisionMode
from tpu_runtime.remote.gated import RemoteWork, doubled_names, staged_script, worker_command_inputs

if TYPE_CHECKING:
    from tpu_runtime.onboard.request import OnboardRequest
    from tpu_runtime.remote.engine import RemoteEngine
    from tpu_runtime.remote.gated import Approver, GatedRun, GateOutcome

__all__ = [
    "RUNNER_NAME",
    "RUNNER_SOURCE",
    "TEST_DEVICE_ENV",
    "DeviceCheck",
    "DevicePlan",
    "DeviceRun",
    "DeviceRunError",
    "device_numerics_check",
    "device_numerics_plan",
    "merge_worker_rows",
    "read_device_rows",
    "read_device_run",
]

RUNNER_NAME = "tpu_agent_device_numerics.py"
LOADER_NAME = "tpu_agent_model_loader.py"
ROWS_FILE = "rows-w{worker}.json"
"""One file per worker (its `TPU_AGENT_WORKER` index), so workers that share a file system keep theirs."""
DEFAULT_OUT_DIR = "device_numerics"
DEFAULT_TIME_LIMIT_S = 1800.0
TEST_DEVICE_ENV = "TPU_AGENT_TEST_DEVICE"
"""Test-only: `cpu` makes the runner use the CPU instead of the TPU; its rows say 'cpu (test)'."""
EXIT_NO_MODEL = 2  # the runner could not load the model (its rows file still says why)

PRECISION_CALLS: dict[str, str] = {
    "default": "float32 under torch.tpu.precision(torch.tpu.Precision.DEFAULT)",
    "high": "float32 under torch.tpu.precision(torch.tpu.Precision.HIGH)",
    "highest": "float32 under torch.tpu.precision(torch.tpu.Precision.HIGHEST)",
    "bf16": "model and inputs cast to torch.bfloat16",
}

# The runner runs on the TPU VM's Python with only the standard library, torch and torch_tpu (and what
# the user's model imports). It mirrors tpu_runtime.onboard.numerics: first call of each module, outputs
# cloned to float64 on the CPU, rel = max|err| / max|ref|, cosine over all of a module's float outputs.
RUNNER_SOURCE = f'''\
"""tpu-agent device numerics (runner v1): per-layer error of a model on this machine's TPU.

Usage: python3 {RUNNER_NAME} --model FILE [--entry MODULE:CALLABLE] --modes default,high,highest,bf16
       --tolerances default=0.03,... --out DIR

Loads the model with the uploaded copy of tpu-agent's onboarding loader, runs it in float64 on the CPU
(the reference) and once per mode on torch.device("tpu") (f32 modes under torch.tpu.precision, bf16 cast
to bfloat16), compares each module's first output and writes DIR/rows-w<worker>.json (the worker index
from TPU_AGENT_WORKER, 0 without it).
{TEST_DEVICE_ENV}=cpu (tpu-agent's own tests only) runs the modes on the CPU; the file then says
"device": "cpu (test)" and claims no TPU result.
"""
import argparse
import contextlib
import copy
import json
import math
import os
import pathlib
import socket
import sys
import time
import traceback

ROOT_NAME = "(model)"
TEST_DEVICE_ENV = "{TEST_DEVICE_ENV}"
EXIT_NO_MODEL = {EXIT_NO_MODEL}
TINY = 1e-30


def float_tensors(torch, obj, out):
    if isinstance(obj, torch.Tensor):
        if obj.is_complex():
            out.append(torch.view_as_real(obj))
        elif obj.is_floating_point():
            out.append(obj)
    elif isinstance(obj, dict):
        for value in obj.values():
            float_tensors(torch, value, out)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            float_tensors(torch, value, out)
    return out


def place(torch, obj, device, dtype):
    """Floating tensors cast to dtype, every tensor moved to device; token ids stay integers."""
    if isinstance(obj, torch.Tensor):
        obj = obj.detach()
        if obj.is_floating_point():
            obj = obj.to(dtype)
        return obj.to(device)
    if isinstance(obj, dict):
        return {{k: place(torch, v, device, dtype) for k, v in obj.items()}}
    if isinstance(obj, tuple):
        return tuple(place(torch, v, device, dtype) for v in obj)
    if isinstance(obj, list):
        return [place(torch, v, device, dtype) for v in obj]
    return obj


def compare(torch, outs, refs):
    """(max_abs, rel, cosine, finite) of one module's outputs against its float64 reference."""
    if len(outs) != len(refs) or any(o.shape != r.shape for o, r in zip(outs, refs)):
        return math.inf, math.inf, math.nan, False
    max_abs = ref_max = dot = out_sq = ref_sq = 0.0
    finite = True
    for o, r in zip(outs, refs):
        if r.numel() == 0:
            continue
        finite = finite and bool(torch.isfinite(o).all()) and bool(torch.isfinite(r).all())
        max_abs = max(max_abs, float((o - r).abs().max()))
        ref_max = max(ref_max, float(r.abs().max()))
        dot += float((o * r).sum())
        out_sq += float((o * o).sum())
        ref_sq += float((r * r).sum())
    if not finite:
        return (max_abs if math.isfinite(max_abs) else math.inf), math.nan, math.nan, False
    if out_sq == 0.0 and ref_sq == 0.0:
        cosine = 1.0
    elif out_sq == 0.0 or ref_sq == 0.0:
        cosine = 0.0
    else:
        cosine = max(-1.0, min(1.0, dot / math.sqrt(out_sq * ref_sq)))
    return max_abs, max_abs / max(ref_max, TINY), cosine, True


def run_once(torch, model, args, kwargs, device, dtype, precision, on_output):
    """Run a copy of the model on device in dtype; on_output(name, float64 CPU tensors) per module."""
    work = copy.deepcopy(model).to(dtype=dtype).to(device).eval()
    seen = set()
    handles = []

    def make_hook(name):
        def hook(module, inputs, output):
            if name not in seen:
                seen.add(name)
                on_output(name, [t.detach().to("cpu").to(torch.float64).clone()
                                 for t in float_tensors(torch, output, [])])
        return hook

    try:
        for name, module in work.named_modules():
            handles.append(module.register_forward_hook(make_hook(name or ROOT_NAME)))
        with torch.no_grad(), torch.random.fork_rng(devices=[]), precision:
            torch.manual_seed(0)
            work(*place(torch, args, device, dtype), **place(torch, kwargs, device, dtype))
    finally:
        for handle in handles:
            handle.remove()
        del work


def parse_tolerances(text):
    bounds = {{}}
    for part in text.split(","):
        mode, _, value = part.partition("=")
        bounds[mode.strip()] = float(value)
    return bounds


def main():
    parser = argparse.ArgumentParser(prog="{RUNNER_NAME}")
    parser.add_argument("--model", required=True)
    parser.add_argument("--entry", default=None)
    parser.add_argument("--modes", required=True)
    parser.add_argument("--tolerances", required=True)
    parser.add_argument("--out", required=True)
    opts = parser.parse_args()
    modes = [m for m in opts.modes.split(",") if m]
    bounds = parse_tolerances(opts.tolerances)
    os.makedirs(opts.out, exist_ok=True)
    test_device = os.environ.get(TEST_DEVICE_ENV, "")
    result = {{
        "runner": 1,
        "device": "cpu (test)" if test_device == "cpu" else "tpu",
        "device_name": "",
        "host": socket.gethostname(),
        "worker": os.environ.get("TPU_AGENT_WORKER", ""),
        "modes": modes,
        "rows": [],
        "errors": [],
        "seconds": {{}},
    }}
    code = 0

    def write():
        path = os.path.join(opts.out, "rows-w%s.json" % (result["worker"] or "0"))
        # written beside, then renamed in: a worker fetching a shared folder never sees a partial file
        partial = ".%s.tmp" % os.path.basename(path)
        with open(partial, "w") as handle:
            json.dump(result, handle, allow_nan=True)
        os.replace(partial, path)
        print("tpu-agent device numerics: wrote %s (%d rows, device %s)"
              % (path, len(result["rows"]), result["device"]), flush=True)

    stage = "device setup"
    try:
        if test_device not in ("", "cpu"):
            raise SystemExit("%s=%r: the only test device is cpu" % (TEST_DEVICE_ENV, test_device))
        import torch

        result["torch"] = torch.__version__
        if test_device == "cpu":
            device = torch.device("cpu")
            torch.set_num_threads(1)  # as compare_layers runs: same summation order, same rows


            def precision_for(mode):
                return contextlib.nullcontext()
        else:
            import importlib.metadata

            import torch_tpu  # noqa: F401  (registers the tpu device and torch.tpu)

            result["torch_tpu"] = importlib.metadata.version("torch_tpu")
            device = torch.device("tpu")
            levels = {{"default": torch.tpu.Precision.DEFAULT, "high": torch.tpu.Precision.HIGH,
                      "highest": torch.tpu.Precision.HIGHEST, "bf16": torch.tpu.Precision.DEFAULT}}

            def precision_for(mode):
                return torch.tpu.precision(levels[mode])

            try:
                result["device_name"] = str(torch.tpu.get_device_name())
            except Exception as exc:  # the name is a label only; the run itself decides success
                result["device_name"] = "unknown (%s)" % exc
        stage = "model load"
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import {LOADER_NAME[:-3]} as loader

        started = time.monotonic()
        loaded = loader.load_model(pathlib.Path(opts.model), opts.entry)
        result["convention"] = loaded.convention
        result["seconds"]["load"] = round(time.monotonic() - started, 3)
    except BaseException as exc:
        result["errors"].append("%s failed: %s: %s" % (stage, type(exc).__name__, exc))
        traceback.print_exc()
        write()
        sys.exit(EXIT_NO_MODEL)

    reference, order = {{}}, []

    def keep(name, tensors):
        if tensors:
            order.append(name)
            reference[name] = tensors

    started = time.monotonic()
    try:
        run_once(torch, loaded.model, loaded.args, loaded.kwargs, torch.device("cpu"), torch.float64,
                 contextlib.nullcontext(), keep)
    except Exception as exc:
        result["errors"].append("float64 reference run failed: %s: %s" % (type(exc).__name__, exc))
        traceback.print_exc()
        write()
        sys.exit(1)
    result["seconds"]["reference"] = round(time.monotonic() - started, 3)
    stats = {{}}
    for mode in modes:
        found = {{}}

        def measure(name, tensors, found=found):
            if name in reference:
                found[name] = compare(torch, tensors, reference[name])

        dtype = torch.bfloat16 if mode == "bf16" else torch.float32
        started = time.monotonic()
        try:
            run_once(torch, loaded.model, loaded.args, loaded.kwargs, device, dtype, precision_for(mode),
                     measure)
        except Exception as exc:
            result["errors"].append("%s run failed: %s: %s" % (mode, type(exc).__name__, exc))
            traceback.print_exc()
            code = 1
        result["seconds"][mode] = round(time.monotonic() - started, 3)
        stats[mode] = found
    for name in order:
        for mode in modes:
            max_abs, rel, cosine, finite = stats[mode].get(name, (math.inf, math.inf, math.nan, False))
            ok = finite and not math.isnan(cosine) and rel <= bounds[mode]
            result["rows"].append({{"layer": name, "mode": mode, "max_abs": max_abs, "rel": rel,
                                   "cosine": cosine, "tolerance": bounds[mode], "ok": ok}})
    write()
    sys.exit(code)


if __name__ == "__main__":
    main()
'''


class DeviceRunError(BadInput, ValueError):
    """A plan that cannot be made, or a result folder that cannot be read; one line."""


class DevicePlan(BaseModel):
    """Everything the device comparison will do on the TPU VM, shown to the person before approval."""

    model_config = ConfigDict(frozen=True)

    model_file: str = Field(description="the user's model file, local absolute path")
    entry: str | None = None
    modes: tuple[PrecisionMode, ...]
    tolerances: dict[str, float] = Field(description="bound on `rel` per mode, as on the CPU")
    precision: dict[str, str] = Field(description="how each mode runs on the device")
    device: str = Field(description="'tpu', or 'cpu (test)' only when the test hook is set")
    out_dir: str = Field(description="folder on each worker holding its rows file, fetched back")
    shell: str = Field(description="the command as one shell line")
    work: RemoteWork
    runner_sha256: str


class DeviceRun(BaseModel):
    """One worker's rows file."""

    device: str
    device_name: str = ""
    host: str = ""
    worker: str = ""
    torch: str = ""
    torch_tpu: str = ""
    convention: str = ""
    modes: list[str] = []
    rows: list[LayerError] = []
    errors: list[str] = []
    seconds: dict[str, float] = {}


class DeviceCheck(BaseModel):
    """What the device step came to: the report's `device_check` line and the merged device rows."""

    status: Literal["not_run", "waiting", "denied", "busy", "ran", "failed"]
    message: str
    rows: list[LayerError] = []
    request_id: str | None = None


def _runner_file(staging_dir: Path) -> Path:
    return staged_script(staging_dir, "tpu_agent_device_numerics", RUNNER_SOURCE)


def _loader_file() -> Path:
    """The onboarding loader as installed (uploaded as is, so the VM finds the model the same way)."""
    return Path(__file__).resolve().with_name("loader.py")


def _default_tolerances() -> dict[str, float]:
    from tpu_runtime.onboard.numerics import TOLERANCES  # imports torch: only when the caller gave none

    return {str(k): float(v) for k, v in TOLERANCES.items()}


def device_numerics_plan(
    model_file: Path,
    entry: str | None,
    modes: Sequence[PrecisionMode],
    out_dir: str = DEFAULT_OUT_DIR,
    *,
    tolerances: dict[str, float] | None = None,
    extra_uploads: Sequence[Path] = (),
    python: str = "python3",
    env: dict[str, str] | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    staging_dir: Path | None = None,
) -> DevicePlan:
    """The exact command, uploads and download of the device comparison. Raises DeviceRunError.

    `tolerances` are the CPU report's bounds per mode (default: `numerics.TOLERANCES`); `env` goes to
    the command and is shown for approval (`TPU_AGENT_TEST_DEVICE=cpu` there is the test hook).
    """
    path = model_file.expanduser()
    if not path.is_file():
        raise DeviceRunError(f"no such model file: {model_file}")
    if not modes:
        raise DeviceRunError("no precision modes to compare")
    unknown = [m for m in modes if m not in PRECISION_CALLS]
    if unknown:
        raise DeviceRunError(f"unknown precision mode(s): {', '.join(unknown)}")
    out = worker_command_inputs(out_dir, python, "output folder", DeviceRunError)
    bounds = dict(tolerances) if tolerances else _default_tolerances()
    missing = [m for m in modes if m not in bounds]
    if missing:
        raise DeviceRunError(f"no tolerance for mode(s): {', '.join(missing)}")
    files = [(path.resolve(), path.name)] + [(p.expanduser().resolve(), p.name) for p in extra_uploads]
    for item, _ in files[1:]:
        if not item.exists():
            raise DeviceRunError(f"no such file to upload: {item}")
    names = [RUNNER_NAME, LOADER_NAME, *(dest for _, dest in files), out.split("/")[0]]
    doubled = doubled_names(names)
    if doubled:
        raise DeviceRunError(f"two things would take the same name in the run folder: {', '.join(doubled)}")
    if staging_dir is None:
        from tpu_runtime.remote.locations import state_dir

        staging_dir = state_dir() / "device_numerics"
    runner = _runner_file(staging_dir)
    command: tuple[str, ...] = (
        python,
        RUNNER_NAME,
        "--model",
        path.name,
        *(("--entry", entry) if entry else ()),
        "--modes",
        ",".join(modes),
        "--tolerances",
        ",".join(f"{m}={bounds[m]:.10g}" for m in modes),
        "--out",
        out,
    )
    environment = dict(env or {})
    work = RemoteWork(
        command=command,
        uploads=(
            (str(runner), RUNNER_NAME),
            (str(_loader_file()), LOADER_NAME),
            *((str(source), dest) for source, dest in files),
        ),
        downloads=(out,),
        env=environment,
        time_limit_s=time_limit_s,
    )
    return DevicePlan(
        model_file=str(path.resolve()),
        entry=entry,
        modes=tuple(modes),
        tolerances={m: bounds[m] for m in modes},
        precision={m: PRECISION_CALLS[m] for m in modes},
        device="cpu (test)" if environment.get(TEST_DEVICE_ENV) == "cpu" else "tpu",
        out_dir=out,
        shell=shlex.join(command),
        work=work,
        runner_sha256=hashlib.sha256(RUNNER_SOURCE.encode()).hexdigest(),
    )


def read_device_run(folder: Path, worker: int | None = None) -> DeviceRun:
    """A fetched output folder -> one worker's rows and metadata. Raises DeviceRunError.

    `worker` picks that worker's file; without it the folder must hold exactly one rows file.
    """
    if worker is not None:
        path = folder / ROWS_FILE.format(worker=worker)
    else:
        found = sorted(folder.glob(ROWS_FILE.format(worker="*")))
        if len(found) != 1:
            raise DeviceRunError(f"{folder} holds {len(found)} rows files; name the worker to read")
        path = found[0]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return DeviceRun.model_validate(data)
    except (OSError, ValueError) as exc:
        raise DeviceRunError(f"cannot read {path}: {str(exc).splitlines()[0]}") from None


def read_device_rows(folder: Path, worker: int | None = None) -> list[LayerError]:
    """The per-layer rows one worker wrote (the same `LayerError` rows as the CPU comparison)."""
    return read_device_run(folder, worker).rows


def merge_worker_rows(runs: dict[int, DeviceRun]) -> list[LayerError]:
    """One row per (layer, mode) over all workers: the worst one (failing before passing, then larger rel).

    Row order is the first worker's (execution order), then rows only other workers produced.
    """
    merged: dict[tuple[str, str], LayerError] = {}
    for index in sorted(runs):
        for row in runs[index].rows:
            key = (row.layer, row.mode)
            held = merged.get(key)
            if held is None or _worse(row, held):
                merged[key] = row
    return list(merged.values())


def _worse(row: LayerError, than: LayerError) -> bool:
    if row.ok != than.ok:
        return not row.ok
    return not row.rel <= than.rel  # NaN rel counts as worse


def _device_label(runs: dict[int, DeviceRun]) -> str:
    labels = sorted({f"{r.device} {r.device_name}".strip() for r in runs.values()})
    return "; ".join(labels) or "unknown"


def _outcome_check(outcome: GateOutcome, target: str, state_path: Path) -> DeviceCheck:
    """Turn a gate outcome into the report's line and rows; never claims more than the files say."""
    from tpu_runtime.remote.gated import approval_time, read_fetched, worker_names

    request = outcome.request
    rid = request.id
    if outcome.state == "waiting":
        return DeviceCheck(
            status="waiting",
            request_id=rid,
            message=f"waiting for approval: request {rid} ({outcome.approve_hint}); "
            "then run the same onboard command again to run it and merge the device rows",
        )
    if outcome.state == "denied":
        return DeviceCheck(status="denied", request_id=rid, message=outcome.denied_text)
    if outcome.state == "busy":
        return DeviceCheck(
            status="busy",
            request_id=rid,
            message=f"not run yet: request {rid} is running elsewhere; run onboard again when it has ended",
        )
    runs, unreadable = read_fetched(state_path, request, read_device_run, DeviceRunError)
    rows = merge_worker_rows(runs)
    problems = [f"worker {i}: {e}" for i, r in sorted(runs.items()) for e in r.errors] + unreadable
    problems += outcome.worker_failures
    if outcome.note:
        problems.append(outcome.note)
    when = approval_time(request)
    if runs:
        failing = [r for r in rows if not r.ok]
        first = next((r.layer for r in failing if r.mode == "default"), None)
        text = (
            f"ran on target {target} (workers {worker_names(request, sorted(runs))}) after approval at "
            f"{when}; device: {_device_label(runs)}; request {rid}; {len(failing)} of {len(rows)} rows "
            f"over tolerance (worst of {len(runs)} worker(s))"
        )
        if first:
            text += f"; first divergent layer in DEFAULT: {first}"
        if any(r.device != "tpu" for r in runs.values()):
            text += "; a test run, not a TPU result"
        if problems:
            text += "; problems: " + " | ".join(problems)
        return DeviceCheck(
            status="ran" if outcome.state == "ran" and not problems else "failed",
            request_id=rid,
            message=text,
            rows=rows,
        )
    why = " | ".join(problems) or "no worker brought rows back"
    return DeviceCheck(
        status="failed",
        request_id=rid,
        message=f"failed on target {target} after approval at {when} (request {rid}): {why}",
    )


def device_numerics_check(
    request: OnboardRequest,
    numerics: NumericsReport,
    approver: Approver | None = None,
    progress: Callable[[str], None] | None = None,
    *,
    engine: RemoteEngine | None = None,
) -> DeviceCheck:
    """The device step of onboarding for `request.target`: plan, reuse or file, ask, run, merge.

    Runs nothing without the person's approval. Every outcome, including one that never reached the
    TPU, is a `DeviceCheck` whose message says exactly what happened.
    """
    from tpu_runtime.remote.gated import settle_now

    def run(done: Callable[[DeviceCheck], None]) -> GatedRun | None:
        return device_numerics_run(request, numerics, done, progress, engine=engine)

    return settle_now(run, approver)


def device_numerics_run(
    request: OnboardRequest,
    numerics: NumericsReport,
    done: Callable[[DeviceCheck], None],
    progress: Callable[[str], None] | None = None,
    *,
    engine: RemoteEngine | None = None,
) -> GatedRun | None:
    """The device comparison as work for the approval gate; `done` gets the `DeviceCheck`, now (None
    returned: nothing to run) or once the gate has settled the run."""
    from tpu_runtime.onboard.report import DEVICE_CHECK_NOT_RUN
    from tpu_runtime.remote.gated import ApprovalPending, GatedRun

    target = request.target
    if not target:
        done(DeviceCheck(status="not_run", message=DEVICE_CHECK_NOT_RUN))
        return None
    if not numerics.rows:
        why = numerics.error or "the CPU comparison produced no rows"
        message = f"not run: the CPU comparison failed, so would this: {why}"
        done(DeviceCheck(status="not_run", message=message))
        return None
    tolerances: dict[str, float] = {row.mode: row.tolerance for row in numerics.rows}
    if engine is None:
        from tpu_runtime.remote.engine import RemoteEngine

        engine = RemoteEngine()
    if request.model_file is None:
        done(DeviceCheck(status="not_run", message="not run: the device check runs a model file"))
        return None
    try:
        plan = device_numerics_plan(
            request.model_file,
            request.entry,
            [m for m in numerics.modes if m in tolerances],
            tolerances=tolerances,
            python=request.device_python,
            env=request.device_env,
            time_limit_s=request.device_time_limit_s,
            staging_dir=engine.state_path / "device_numerics",
        )
    except DeviceRunError as exc:
        done(DeviceCheck(status="not_run", message=f"not run: target {target}: {exc}"))
        return None
    state_path = engine.state_path

    def refused(exc: Exception) -> None:
        if isinstance(exc, ApprovalPending):
            done(_outcome_check(exc.outcome, target, state_path))
        else:
            done(DeviceCheck(status="not_run", message=f"not run: target {target}: {exc}"))

    return GatedRun(
        engine=engine,
        target=target,
        work=plan.work,
        finish=lambda outcome: done(_outcome_check(outcome, target, state_path)),
        refused=refused,
        workers=request.device_workers,
        requested_by="onboard",
        on_line=(lambda line: progress(line.prefixed())) if progress else None,
    )
