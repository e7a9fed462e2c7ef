"""The child side of `kernel tune`: evaluate candidates from the run folder until the budget is spent.

Started by `tune.run_kernel_tune` in a sandboxed child (it imports the user's kernel file); each attempt is
`check.run_check` on the tuning stages, recorded durably in the run folder.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from tpu_runtime.kernels.report import Attempt
from tpu_runtime.kernels.runlog import RunFolder, params_key
from tpu_runtime.kernels.tune import TUNE_STAGES, _attempt_from_report, next_candidate


def tune_worker(payload: dict[str, Any]) -> dict[str, Any]:
    """Child entry point: evaluate candidates until the budget is spent or none is left."""
    from tpu_runtime.kernels.check import run_check
    from tpu_runtime.kernels.child import CheckOptions, child_progress, prepare_child, watch_parent
    from tpu_runtime.kernels.convention import KernelModuleError, load_kernel_module
    from tpu_runtime.kernels.mesh import prepare_host_devices

    watch_parent()
    run = RunFolder(Path(payload["run_dir"]))
    config = run.config()
    prepare_host_devices(Path(config["file"]))  # before JAX starts: a collective kernel's host devices
    prepare_child()
    report_progress = child_progress()
    run.write_worker_pid(os.getpid())
    km = load_kernel_module(Path(config["file"]))
    generation = config["generation"]
    evaluated = 0
    while True:
        step = next_candidate(run.records(), config)
        if step is None:
            break
        n, params = step
        run.append({"event": "start", "n": n, "params": params})
        report_progress(f"attempt:{n}:{params_key(params)}", 0.0)
        start = time.perf_counter()
        try:
            options = CheckOptions(
                file=config["file"], params=params, generations=[generation], stages=TUNE_STAGES
            )
            report = run_check(km, options)
            attempt = _attempt_from_report(n, params, report, generation)
        except KernelModuleError as exc:
            attempt = Attempt(n=n, params=params, verdict="fail", message=exc.one_line)
        except Exception as exc:  # an attempt's failure is its verdict; the worker goes on
            attempt = Attempt(
                n=n, params=params, verdict="fail", message=f"{type(exc).__name__}: {exc}"[:500]
            )
        attempt.seconds = round(time.perf_counter() - start, 3)
        attempts_dir = run.path / "attempts"
        attempts_dir.mkdir(exist_ok=True)
        (attempts_dir / f"{n}.json").write_text(attempt.model_dump_json(indent=2))
        run.append({"event": "finish", **attempt.model_dump(mode="json")})
        evaluated += 1
        report_progress(f"attempt:{n}:done", 1.0)
    return {"evaluated": evaluated}
