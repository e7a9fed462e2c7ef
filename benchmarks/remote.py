"""Fan-out overhead of `tpu-agent run` on 4, 16 and 64 workers, each a real sshd on a loopback port.

The command is `true`, so the figures are pure overhead: building the request (workers, pinned keys,
digest, SQLite + audit row), approving it, and running it everywhere with output collected:
- cold: a fresh engine, so every worker needs an SSH handshake;
- warm: the same engine again, reusing its pooled connections;
- one down: cold, with one worker's sshd stopped (connection refused), the others must still finish.

Run by hand as root (or as a user who may run sshd), from the repository root:
    python benchmarks/remote.py [--workers 4 16 64] [--repeat 3]
Needs `openssh-server`; starts and stops its own sshd processes and removes what it wrote.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the sshd helpers live with the tests

from tests.remote_support import person
from tests.remote_support.sshd import SshdFarm, start_farm
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.store import Store


def _engine(farm: SshdFarm, folder: Path, count: int) -> RemoteEngine:
    target = farm.hosts_target()
    target["hosts"] = target["hosts"][:count]
    target["max_concurrency"] = 64
    (folder / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": target}}))
    return RemoteEngine(
        store=Store(folder / "state.db"),
        targets_path=folder / "targets.yaml",
        policy_path=folder / "policy.yaml",
        state_path=folder,
        approver_path=person.farm_key_dir(farm.session),
    )


async def _once(engine: RemoteEngine) -> tuple[float, float, int]:
    """(seconds to build + approve the request, seconds to run it everywhere, workers ok)."""
    start = time.perf_counter()
    request = engine.request_run("lo", ["true"], time_limit_s=60)
    approval = person.approve(engine, request.id, approver_name="bench")  # signed: one Ed25519 signature
    built = time.perf_counter()
    run_id = await engine.start(approval)
    result = await engine.wait(run_id)
    done = time.perf_counter()
    return built - start, done - built, sum(w.status == "ok" for w in result.workers)


async def measure(farm: SshdFarm, folder: Path, count: int, repeat: int) -> dict[str, float]:
    cold, warm, build = [], [], []
    for i in range(repeat):
        sub = folder / f"n{count}-{i}"
        sub.mkdir()
        engine = _engine(farm, sub, count)
        try:
            b, c, ok = await _once(engine)
            assert ok == count, f"only {ok}/{count} workers succeeded"
            _, w, ok = await _once(engine)
            assert ok == count
        finally:
            await engine.aclose()
        cold.append(c)
        warm.append(w)
        build.append(b)
    farm.stop(count - 1)
    try:
        sub = folder / f"n{count}-down"
        sub.mkdir()
        engine = _engine(farm, sub, count)
        try:
            _, down, ok = await _once(engine)
            assert ok == count - 1
        finally:
            await engine.aclose()
    finally:
        farm.start(count - 1)
    return {
        "build": statistics.median(build),
        "cold": statistics.median(cold),
        "warm": statistics.median(warm),
        "down": down,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        farm = start_farm(max(args.workers), folder / "farm")
        try:
            rows = [(n, asyncio.run(measure(farm, folder, n, args.repeat))) for n in args.workers]
        finally:
            farm.close()
    print(
        "| workers | request + approve | run, cold (new connections) | run, warm (pooled) | one worker down |"
    )
    print("|---:|---:|---:|---:|---:|")
    for n, r in rows:
        print(f"| {n} | {r['build']:.3f} s | {r['cold']:.3f} s | {r['warm']:.3f} s | {r['down']:.3f} s |")


if __name__ == "__main__":
    main()
