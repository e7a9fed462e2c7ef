"""How long the commands a person waits on at the prompt take to start, each beside its anchors.

Each command runs in a fresh process, interleaved with its anchors so that all of them see the same
load: `python -c pass` (the interpreter alone) and `import typer, typer.rich_utils` (the floor of any
typer CLI that renders its help with rich). The figure is the median of `--repeat` rounds; the ratio
is the command's median over the anchor's, which a loaded machine inflates far less than seconds. Beside
the wall time, each command's CPU time (user + system, from `wait4`) changes little with the load.

Bytecode is written and used as after a `pip install` (which compiles it): an untimed first round warms
the `__pycache__` folders even where the shell sets `PYTHONDONTWRITEBYTECODE`, which would otherwise
make every timed start compile the project's modules from source. The commands run through the console
script's entry point (`tpu_runtime.cli.launcher`) with a cache folder of the run's own, so that first
round also keeps the top-level help as a person's first `tpu-agent --help` does; the row "first run"
gives each `--help` an empty cache folder, so typer renders it every time.

With the shared v6e profile beside the checkout and xprof installed, `diagnose` on that 0.86 MB profile
runs beside xprof's overview page of the same file, both from a fresh process (imports included).

Run by hand: `python benchmarks/startup.py [--repeat 9] [--only diagnose]`; the table and the load
average go into the README. `--only TEXT` times only the rows whose name holds TEXT, beside the anchors
(the ratios need them).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_env import QUIET_ENV

REPO = Path(__file__).resolve().parents[1]
CRASH_LOG = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"
#: A log no rule places: it goes on to the similar known errors (their shipped TF-IDF weights).
UNKNOWN_LOG = REPO / "tests" / "data" / "crash_logs" / "unknown" / "keyerror_in_collate.log"
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, **QUIET_ENV}
CLI = [sys.executable, "-c", "import sys; from tpu_runtime.cli.launcher import main; sys.exit(main())"]
#: Where the commands keep their help (`TPU_AGENT_HOME`), set for the run; FRESH: an empty one each time.
HOME = "TPU_AGENT_HOME"
FRESH = "first run"
#: The real v6e profile (0.86 MB) in the shared fixtures beside the checkout, when present.
V6E = REPO.parent / "shared" / "fixtures" / "profiles" / "tpu_v6e_inference.xplane.pb"
V6E_ROW = "tpu-agent diagnose v6e.xplane.pb (0.86 MB)"
V6E_JSON_ROW = "tpu-agent diagnose v6e.xplane.pb --json"
XPROF_ROW = "xprof overview_page, same file (anchor)"
#: xprof's overview page from a fresh process, on a fresh copy (xprof caches results beside its input).
XPROF_OVERVIEW = """
import shutil, sys, tempfile
from pathlib import Path
with tempfile.TemporaryDirectory() as tmp:
    copy = Path(tmp) / "p.xplane.pb"
    shutil.copyfile(sys.argv[1], copy)
    from xprof.convert.raw_to_tool_data import xspace_to_tool_data
    xspace_to_tool_data([str(copy)], "overview_page", {"use_saved_result": False})
"""

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import typer": [sys.executable, "-c", "import typer"],
    "import typer, typer.rich_utils": [sys.executable, "-c", "import typer, typer.rich_utils"],
    "tpu-agent --help": [*CLI, "--help"],
    f"tpu-agent --help, {FRESH} (typer renders it)": [*CLI, "--help"],
    "tpu-agent version": [*CLI, "version"],
    "tpu-agent ops show aten::nansum": [*CLI, "ops", "show", "aten::nansum"],
    "tpu-agent route 'my run is out of HBM'": [*CLI, "route", "my run is out of HBM"],
    "tpu-agent diagnose CRASH.log": [*CLI, "diagnose", str(CRASH_LOG)],
    "tpu-agent diagnose UNKNOWN.log (similar known errors)": [*CLI, "diagnose", str(UNKNOWN_LOG)],
}


def commands() -> dict[str, list[str]]:
    """The table's commands; with the shared v6e profile and xprof, `diagnose` on it beside xprof."""
    found = dict(COMMANDS)
    if V6E.is_file() and importlib.util.find_spec("xprof") is not None:
        found[V6E_ROW] = [*CLI, "diagnose", str(V6E)]
        found[V6E_JSON_ROW] = [*CLI, "diagnose", str(V6E), "--json"]
        found[XPROF_ROW] = [sys.executable, "-c", XPROF_OVERVIEW, str(V6E)]
    return found


def run_once(name: str, argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one fresh process; its output is discarded."""
    with tempfile.TemporaryDirectory() as empty:
        env = {**ENV, HOME: empty} if FRESH in name else ENV
        return _timed(argv, env)


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert child.stderr is not None
    stderr = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[-2:])} exited {child.returncode}: {stderr.decode()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime


#: Rows every run keeps, whatever `--only` says: the ratios are taken against them.
ANCHORS = ("python -c pass", "import typer, typer.rich_utils", XPROF_ROW)


def measure(repeat: int, only: str = "") -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds per command, one round after another, each round running every command
    once; an untimed round first writes the bytecode caches. `only`: keep the rows naming it."""
    table = {name: argv for name, argv in commands().items() if only in name or name in ANCHORS}
    wall: dict[str, list[float]] = {name: [] for name in table}
    cpu: dict[str, list[float]] = {name: [] for name in table}
    for name, argv in table.items():
        run_once(name, argv)
    for _ in range(repeat):
        for name, argv in table.items():
            seconds, cpu_seconds = run_once(name, argv)
            wall[name].append(seconds)
            cpu[name].append(cpu_seconds)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--only", default="", help="time only the rows naming this (and the anchors)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        ENV[HOME] = home
        report(args.repeat, args.only)


def report(repeat: int, only: str = "") -> None:
    """Measure, then print the table, the load and the ratio of `diagnose` to xprof."""
    load_before = os.getloadavg()[0]
    samples, cpu_samples = measure(repeat, only)
    load_after = os.getloadavg()[0]
    median = {name: statistics.median(v) for name, v in samples.items()}
    cpu = {name: statistics.median(v) for name, v in cpu_samples.items()}
    python = median["python -c pass"]
    floor = median["import typer, typer.rich_utils"]
    print(f"load average (1 min) {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} cores")
    print(f"median of {repeat} fresh processes per command\n")
    print("| command | median | x `python -c pass` | x typer + rich help floor | CPU |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds in median.items():
        ratios = f"{seconds / python:.1f} | {seconds / floor:.2f}"
        print(f"| `{name}` | {seconds:.3f} s | {ratios} | {cpu[name]:.3f} s |")
    xprof = median.get(XPROF_ROW)
    if xprof:
        print()
        for row in (V6E_ROW, V6E_JSON_ROW):
            if row in median:
                print(
                    f"`{row.removeprefix('tpu-agent ')}` / xprof's overview page, same run: "
                    f"{median[row] / xprof:.2f} wall, {cpu[row] / cpu[XPROF_ROW]:.2f} CPU"
                )
    else:
        print(f"\n(no `diagnose` of a profile: {V6E} or xprof is missing)")


if __name__ == "__main__":
    main()
