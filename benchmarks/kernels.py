"""Wall time of `kernel check` on a 512x512x512 tiled matmul through every CPU stage, and of `kernel tune`
over 16 candidates offline, both through the real path (sandboxed child processes, compile-only TPUs).

`--upstream` instead checks every adapter of jax's shipped kernels (`tests/data/kernels/upstream/`)
through every CPU stage and prints each one's verdict and seconds per stage, with its corpus half.

Run by hand: `python benchmarks/kernels.py [--budget 16] [--repeat N] [--json]` or
`python benchmarks/kernels.py --upstream [NAME ...] [-g v6e]`; the figures go into the README. The
machine's load average is printed with them, since the interpreter and the compiler share its cores.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tpu_runtime.diagnose.crash_corpus import split_of
from tpu_runtime.kernels.job import KernelCheckRequest, KernelToolError, run_kernel_check
from tpu_runtime.kernels.scaffold import TEMPLATES_DIR
from tpu_runtime.kernels.tune import KernelTuneRequest, run_kernel_tune

SHAPE = {"m": 512, "k": 512, "n": 512}
UPSTREAM = Path(__file__).resolve().parents[1] / "tests" / "data" / "kernels" / "upstream"


def _cpu_seconds() -> float:
    """CPU seconds of this process and every finished child it waited for (the check's child and the
    PyTorch stage's process under it): on a shared machine a steadier figure than wall time."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bench_checks(template: Path, repeat: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """The check with and without stage 5, `repeat` times each, alternately (so both see the same load):
    each one's first run, with the median wall and CPU seconds of all its runs and every run's pair."""
    runs: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for _ in range(repeat):
        for no_torch in (False, True):
            runs[no_torch].append(bench_check(template, no_torch=no_torch))
    out = []
    for no_torch in (False, True):
        first = dict(runs[no_torch][0])
        if repeat > 1:
            first["wall_seconds"] = round(statistics.median(r["wall_seconds"] for r in runs[no_torch]), 2)
            first["cpu_seconds"] = round(statistics.median(r["cpu_seconds"] for r in runs[no_torch]), 2)
            first["runs"] = [[r["wall_seconds"], r["cpu_seconds"]] for r in runs[no_torch]]
        out.append(first)
    return out[0], out[1]


def bench_check(template: Path, no_torch: bool = False) -> dict[str, Any]:
    start, cpu = time.perf_counter(), _cpu_seconds()
    report = run_kernel_check(
        KernelCheckRequest(
            file=template,
            shapes=[SHAPE],
            target_shape=SHAPE,
            generations=["v5e", "v5p", "v6e", "tpu7x"],
            stages=["correctness", "honesty", "lowering", "compile", "torch"],
            no_torch=no_torch,
        )
    )
    wall = time.perf_counter() - start
    return {
        "wall_seconds": round(wall, 2),
        "cpu_seconds": round(_cpu_seconds() - cpu, 2),
        "verdict": report.verdict,
        "child_seconds": report.seconds,
        "stages": {s.stage: {"verdict": s.verdict, "seconds": s.seconds} for s in report.stages},
    }


#: The anchor: a fresh process importing what stages 1-5 need (jax, torch, torch_tpu) and nothing else.
IMPORTS = "import jax, torch, torch_tpu  # noqa: F401"


def bench_imports() -> float:
    """Seconds for the anchor, in the environment the check's child gets."""
    env = {**os.environ, "TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "PYTHONWARNINGS": "ignore"}
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", IMPORTS], env=env, capture_output=True, check=True)
    return round(time.perf_counter() - start, 2)


def bench_tune(template: Path, budget: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tpu-agent-bench-") as tmp:
        start = time.perf_counter()
        report = run_kernel_tune(
            KernelTuneRequest(file=template, budget=budget, generation="v6e", run_dir=Path(tmp) / "run")
        )
        wall = time.perf_counter() - start
    seconds = [a.seconds for a in report.attempts if a.seconds]
    return {
        "wall_seconds": round(wall, 2),
        "attempts": report.attempts_used,
        "passed": sum(1 for a in report.attempts if a.verdict == "pass"),
        "median_attempt_seconds": round(statistics.median(seconds), 2) if seconds else None,
        "best": report.best.params if report.best else None,
        "speedup_over_default": round(report.speedup_over_default, 2)
        if report.speedup_over_default
        else None,
        "message": report.message,
    }


def bench_upstream(names: list[str], generations: list[str]) -> list[dict[str, Any]]:
    """Each adapter through stages 1-5 in its own sandboxed child, as `kernel check` runs it."""
    rows = []
    for name in names:
        path = UPSTREAM / f"{name}.py"
        start = time.perf_counter()
        try:
            report = run_kernel_check(
                KernelCheckRequest(file=path, generations=generations, seed=3, timeout_s=1800.0)
            )
        except KernelToolError as exc:
            rows.append({"kernel": name, "half": split_of(path.name), "error": exc.message})
            print(f"{name} [{rows[-1]['half']}]: could not be checked: {exc.message}", flush=True)
            continue
        rows.append(
            {
                "kernel": name,
                "half": split_of(path.name),
                "verdict": report.verdict,
                "wall_seconds": round(time.perf_counter() - start, 1),
                "stages": {
                    s.stage: {"verdict": s.verdict, "seconds": round(s.seconds, 1), "message": s.message}
                    for s in report.stages
                    if s.stage != "timing"
                },
                "roofline": [
                    {
                        "generation": g.generation,
                        "flops": g.flops,
                        "flops_source": g.flops_source,
                        "peak": g.peak_flops_kind,
                        "grid_steps": g.grid_steps,
                        "estimate_seconds": g.estimate_seconds,
                        "bound": g.bound,
                    }
                    for s in report.stages
                    for g in s.generations
                ],
            }
        )
        row = rows[-1]
        cells = " ".join(f"{k}={v['verdict']}/{v['seconds']}s" for k, v in row["stages"].items())
        print(f"{name} [{row['half']}]: {row['verdict']} in {row['wall_seconds']} s; {cells}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--budget", type=int, default=16, help="candidates to tune (default 16; 0: no tune)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--repeat", type=int, default=1, help="run each check N times, alternately; report medians"
    )
    parser.add_argument("--upstream", nargs="*", metavar="NAME", help="check jax's shipped kernels instead")
    parser.add_argument("-g", "--generations", default="v6e", help="for --upstream (default v6e)")
    args = parser.parse_args()
    template = TEMPLATES_DIR / "matmul.py"
    load_before = os.getloadavg()
    if args.upstream is not None:
        names = args.upstream or sorted(p.stem for p in UPSTREAM.glob("[!_]*.py"))
        rows = bench_upstream(names, args.generations.split(","))
        load = {
            "cpus": os.cpu_count(),
            "load_average_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        }
        if args.json:
            print(json.dumps({"machine": load, "upstream": rows}, indent=2))
        else:
            print(f"machine: {load}")
        return
    figures: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_average_1m_before": round(load_before[0], 2)},
        "anchor_import_jax_torch_torch_tpu": bench_imports(),
    }
    checks = bench_checks(template, max(1, args.repeat))
    figures["check_512_matmul_all_cpu_stages"], figures["check_512_matmul_no_torch"] = checks
    # the anchor again after the check: the check is set against the mean of the two runs
    figures["anchor_import_jax_torch_torch_tpu"] = round(
        (figures["anchor_import_jax_torch_torch_tpu"] + bench_imports()) / 2, 2
    )
    if args.budget:
        figures[f"tune_{args.budget}_candidates_offline"] = bench_tune(template, args.budget)
    figures["machine"]["load_average_1m_after"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    check = figures["check_512_matmul_all_cpu_stages"]
    anchor = figures["anchor_import_jax_torch_torch_tpu"]
    print(f"machine: {figures['machine']}")
    print(f"anchor: a fresh process importing jax, torch and torch_tpu: {anchor} s (before and after)")
    print(
        "kernel check, 512x512x512 f32 tiled matmul, stages 1-5, 4 generations: "
        f"{check['wall_seconds']} s ({check['verdict']}), {check['wall_seconds'] / anchor:.2f}x the anchor; "
        f"{check['cpu_seconds']} s of CPU in all its processes"
    )
    for stage, row in check["stages"].items():
        print(f"  {stage:12s} {row['verdict']:8s} {row['seconds']:.2f} s")
    bare = figures["check_512_matmul_no_torch"]
    print(
        f"the same with --no-torch (stage 5 not run): {bare['wall_seconds']} s ({bare['verdict']}), "
        f"{bare['wall_seconds'] / anchor:.2f}x the anchor; {bare['cpu_seconds']} s of CPU"
    )
    if "runs" in check:
        print(f"medians of {len(check['runs'])} runs each; [wall s, CPU s] of every run, in order:")
        print(f"  default      {check['runs']}")
        print(f"  --no-torch   {bare['runs']}")
    if not args.budget:
        return
    tune = figures[f"tune_{args.budget}_candidates_offline"]
    print(
        f"kernel tune, {tune['attempts']} candidates on v6e: {tune['wall_seconds']} s, median attempt "
        f"{tune['median_attempt_seconds']} s, {tune['passed']} passed; {tune['message']}"
    )


if __name__ == "__main__":
    main()
