"""Profile parsing: `analyze_profile` against xprof's converter on the same 1-100 MB profiles, one run.

The profiles are derived from the real v6e profile fixture (kept beside the repository, not in it) by
`tests/profiles_synth.py`: 8 TPU planes, the timeline repeated with jittered durations until the file
reaches the size asked for. Each measurement runs in a child process of its own:

- tpu-agent: `analyze_profile(path, top=10)`, the whole summary (reader, op table, duty cycle, steps);
- xprof: `xspace_to_tool_data([copy], tool, ...)` for each tool, on a copy of the file in a fresh
  folder (xprof caches results beside its input and would otherwise reuse them).

Time is the call alone (imports reported separately), the fastest of `--repeat` fresh child
processes (a shared machine is noisy; the minimum is the least disturbed run). Peak memory is the
child's VmHWM from /proc/self/status at exit: its peak resident set since its exec. `getrusage`'s
ru_maxrss is not used because Linux carries the parent's peak into a child across fork and exec.

Run by hand: `python benchmarks/diagnose.py [--sizes 1,10,37,100] [--tools overview_page,hlo_stats]`;
the table goes into the README. Needs xprof (`pip install 'xprof==2.24.*'`) for its columns.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.profiles_synth import synthesize_to_size  # noqa: E402
from tests.profiles_xprof import run_quiet_python  # noqa: E402
from tpu_runtime.diagnose.xspace import read_planes  # noqa: E402

BASE = REPO.parent / "shared" / "fixtures" / "profiles" / "tpu_v6e_inference.xplane.pb"

_PEAK = """
def _status(key):
    for row in open("/proc/self/status"):
        if row.startswith(key + ":"):
            return int(row.split()[1]) * 1024
"""


def _measured(imports: str, call: str, result: str) -> str:
    """A child script that times `imports`, then `call`, and prints both times, the RSS after the imports,
    the peak RSS and `result` (one more `"key": value` of the output) as one JSON line."""
    return (
        _PEAK
        + f"""
import json, sys, time
t0 = time.perf_counter()
{imports}
imported = time.perf_counter() - t0
rss_after_import = _status("VmRSS")
t = time.perf_counter()
{call}
seconds = time.perf_counter() - t
print(json.dumps({{"import_s": imported, "seconds": seconds, "peak": _status("VmHWM"),
                  "import_rss": rss_after_import, {result}}}))
"""
    )


OURS = _measured(
    # numpy too: the call folds a profile of more than `profile_planes.LIST_EVENTS` events with it
    "from pathlib import Path\nfrom tpu_runtime.diagnose.profile import analyze_profile\n"
    "import tpu_runtime.diagnose.profile_intervals",
    "summary = analyze_profile(Path(sys.argv[1]), top=10)",
    '"top_op": summary.top_ops[0].name',
)

XPROF = _measured(
    "from xprof.convert.raw_to_tool_data import xspace_to_tool_data",
    'data, _ = xspace_to_tool_data([sys.argv[1]], sys.argv[2], {"use_saved_result": False})',
    '"bytes_out": len(data or b"")',
)


def child(script: str, *args: str, timeout: float = 900) -> dict[str, Any]:
    proc = run_quiet_python(script, *args, timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}): {proc.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def run_xprof(path: Path, tool: str) -> dict[str, Any]:
    """One xprof conversion on a copy of the profile in a fresh folder (no cache from earlier runs)."""
    with tempfile.TemporaryDirectory(prefix="xprof-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        return child(XPROF, str(copy), tool)


def fastest(repeat: int, measure: Callable[..., dict[str, Any]], *args: Any) -> dict[str, Any]:
    """The run of `measure(*args)` with the shortest time, out of `repeat`."""
    return min((measure(*args) for _ in range(max(1, repeat))), key=lambda r: float(r["seconds"]))


def count_events(path: Path) -> int:
    return sum(len(line) for plane in read_planes(path) for line in plane.lines())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,10,37,100", help="profile sizes in MB (1e6 bytes)")
    parser.add_argument("--tools", default="overview_page,hlo_stats", help="xprof tools to time")
    parser.add_argument("--workdir", type=Path, help="keep the generated profiles here")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the fastest counts")
    args = parser.parse_args()
    if not BASE.exists():
        raise SystemExit(f"the base profile {BASE} is missing (the shared/ folder beside the checkout)")
    sizes = [float(s) for s in args.sizes.split(",")]
    tools = [t for t in args.tools.split(",") if t]
    have_xprof = importlib.util.find_spec("xprof") is not None
    if not have_xprof:
        print("xprof is not installed: its columns are left empty (pip install 'xprof==2.24.*')\n")
        tools = []

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="diagnose-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    ours_import: dict[str, Any] = {}
    xprof_import: dict[str, Any] = {}
    for size in sizes:
        path = workdir / f"v6e_{size:g}MB.xplane.pb"
        if not path.exists():
            started = time.perf_counter()
            synthesize_to_size(BASE, int(size * 1e6), path)
            took = time.perf_counter() - started
            print(f"generated {path.name} ({path.stat().st_size / 1e6:.1f} MB) in {took:.1f} s")
        ours = fastest(args.repeat, child, OURS, str(path))
        ours_import = ours
        theirs = {}
        for tool in tools:
            theirs[tool] = fastest(args.repeat, run_xprof, path, tool)
            xprof_import = theirs[tool]
        rows.append((path, count_events(path), ours, theirs))

    mb = 1 << 20
    head = ["profile", "MB", "events", "tpu-agent s", "tpu-agent peak MiB"]
    for tool in tools:
        head += [f"xprof {tool} s", f"xprof {tool} peak MiB"]
    if tools:
        head.append(f"speed-up vs {tools[0]}")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for path, events, ours, theirs in rows:
        cells = [path.name, f"{path.stat().st_size / 1e6:.1f}", f"{events:,}"]
        cells += [f"{ours['seconds']:.2f}", f"{ours['peak'] / mb:.0f}"]
        for tool in tools:
            cells += [f"{theirs[tool]['seconds']:.2f}", f"{theirs[tool]['peak'] / mb:.0f}"]
        if tools:
            cells.append(f"{theirs[tools[0]]['seconds'] / ours['seconds']:.1f}x")
        print("| " + " | ".join(cells) + " |")
    print()
    print(
        f"Imports (not in the times above): tpu-agent {ours_import['import_s']:.2f} s, "
        f"{ours_import['import_rss'] / mb:.0f} MiB resident after import"
        + (
            f"; xprof {xprof_import['import_s']:.2f} s, {xprof_import['import_rss'] / mb:.0f} MiB"
            if xprof_import
            else ""
        )
        + f". Machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}."
    )
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
