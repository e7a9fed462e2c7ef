"""How long the commands a person waits on at the prompt take to start, each beside its anchors.

Each command runs in a fresh process, interleaved with its anchors so that all of them see the same
load: `python -c pass` (the interpreter alone) and `import typer, typer.rich_utils` (the floor of any
typer CLI that renders its help with rich). The figure is the median of `--repeat` rounds; the ratio
is the command's median over the anchor's, which a loaded machine inflates far less than seconds.

Run by hand: `python benchmarks/startup.py [--repeat 9]`; the table and the load average go into the
README.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CRASH_LOG = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"
ENV = {
    **os.environ,
    "TPU_SKIP_MDS_QUERY": "1",
    "JAX_PLATFORMS": "cpu",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}
CLI = [sys.executable, "-c", "import sys; from tpu_runtime.cli.app import main; sys.exit(main())"]

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "import typer, typer.rich_utils": [sys.executable, "-c", "import typer, typer.rich_utils"],
    "tpu-agent --help": [*CLI, "--help"],
    "tpu-agent version": [*CLI, "version"],
    "tpu-agent ops show aten::nansum": [*CLI, "ops", "show", "aten::nansum"],
    "tpu-agent route 'my run is out of HBM'": [*CLI, "route", "my run is out of HBM"],
    "tpu-agent diagnose CRASH.log": [*CLI, "diagnose", str(CRASH_LOG)],
}


def measure(repeat: int) -> dict[str, list[float]]:
    """Seconds per command, one round after another, each round running every command once."""
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(repeat):
        for name, argv in COMMANDS.items():
            start = time.perf_counter()
            done = subprocess.run(argv, env=ENV, cwd=REPO, capture_output=True, check=False)
            samples[name].append(time.perf_counter() - start)
            if done.returncode not in (0, 1):
                raise SystemExit(f"{name} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    samples = measure(args.repeat)
    load_after = os.getloadavg()[0]
    median = {name: statistics.median(v) for name, v in samples.items()}
    python = median["python -c pass"]
    floor = median["import typer, typer.rich_utils"]
    print(f"load average (1 min) {load_before:.2f} before, {load_after:.2f} after; {os.cpu_count()} cores")
    print(f"median of {args.repeat} fresh processes per command\n")
    print("| command | median | x `python -c pass` | x typer + rich help floor |")
    print("|---|---:|---:|---:|")
    for name, seconds in median.items():
        print(f"| `{name}` | {seconds:.3f} s | {seconds / python:.1f} | {seconds / floor:.2f} |")


if __name__ == "__main__":
    main()
