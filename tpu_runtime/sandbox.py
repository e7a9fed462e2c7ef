"""Run untrusted user code (their model file) in a child process with a time and memory limit.

A model that raises, hangs, exhausts memory or kills its interpreter must end with one clear line and
leave the CLI or MCP server that asked alive. The child gets a clean environment: only what Python needs
plus the variables that keep libtpu and the Hugging Face hub offline.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import psutil

from tpu_runtime.errors import TpuAgentError
from tpu_runtime.platform_env import on_tpu_vm, safe_defaults

FailureKind = Literal["raised", "timeout", "memory", "crashed", "bad_output", "bad_input"]
PASSTHROUGH_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TMPDIR",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "TPU_AGENT_DATA_DIR",
    "XLA_FLAGS",  # the user's own XLA flags; a collective kernel's check adds the host device count
)


class ChildFailure(TpuAgentError):
    """The child did not produce a result; `message` is one line, `detail` the traceback or log tail."""

    def __init__(self, kind: FailureKind, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail


#: Seconds between two samples of the child tree's memory. Each sample walks every process on the machine
#: (psutil's children(recursive=True): 4-7 ms of CPU with ~140 processes), so sampling every 50 ms cost a
#: tenth of a core for the whole run; the child's exit is still seen at once (`Popen.wait`).
MEMORY_SAMPLE_S = 0.2


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 600.0
    memory_bytes: int = 0  # 0: three quarters of this machine's memory
    #: False for a child inside a process tree whose own parent already samples the tree's memory
    watch_memory: bool = True

    def memory_limit(self) -> int:
        return self.memory_bytes or int(psutil.virtual_memory().total * 0.75)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """A minimal environment: no credentials or tokens of the parent leak into user code."""
    env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
    env.update(safe_defaults(on_tpu_vm()))
    env.setdefault("TPU_SKIP_MDS_QUERY", os.environ.get("TPU_SKIP_MDS_QUERY", "1"))
    env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # torch_tpu is imported explicitly where it is needed
    env["PYTHONWARNINGS"] = "ignore"
    env["PYTHONUNBUFFERED"] = "1"
    # Deliberately the cores this process may use (not OpenMP's guess); numerics drops to one thread.
    env["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS") or str(_usable_cores())
    # Idle OpenMP threads sleep instead of spinning: on cores other work also uses, spinning threads
    # starve each other (a 6-layer LSTM forward and backward: 63-76 s spinning, 2.6-3.4 s passive,
    # 2 threads on 2 cores at load average 7).
    env["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY") or "PASSIVE"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    if extra:
        env.update(extra)
    return env


def _usable_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def describe_isolation(limits: Limits, network: str) -> str:
    """What the child could and could not do, in words a person can check; no claim beyond these."""
    kept = ", ".join(k for k in PASSTHROUGH_ENV if k in os.environ)
    return (
        f"your code ran as you in a child process of its own: stopped after {limits.timeout_s:.0f} s or "
        f"{limits.memory_limit() / 2**30:.1f} GiB of memory; a clean environment (only {kept} and "
        f"tpu-agent's own switches: no tokens or credentials); {network or 'network not cut'}. It could "
        "read and write the files your user can."
    )


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            total += p.memory_info().rss
        except psutil.Error:
            continue
    return total


def run_child(
    target: str,
    payload: dict[str, Any],
    limits: Limits,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    on_progress: Callable[[str, float], None] | None = None,
) -> dict[str, Any]:
    """Call `target` ("package.module:function") with `payload` in a child; return its JSON result."""
    with tempfile.TemporaryDirectory(prefix="tpu-agent-child-") as tmp:
        work = Path(tmp)
        request, result, log = work / "request.json", work / "result.json", work / "child.log"
        request.write_text(json.dumps(payload))
        read_fd, write_fd = os.pipe()
        cmd = [
            sys.executable,
            "-m",
            "tpu_runtime.child_entry",
            target,
            str(request),
            str(result),
            str(write_fd),
        ]
        with log.open("wb") as log_file:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env or child_env(),
                pass_fds=(write_fd,),
                start_new_session=True,
            )
        os.close(write_fd)
        reader = threading.Thread(target=_read_progress, args=(read_fd, on_progress), daemon=True)
        reader.start()
        limit = limits.memory_limit()
        watched = psutil.Process(proc.pid)
        deadline = time.monotonic() + limits.timeout_s
        peak = 0
        killed: FailureKind | None = None
        while True:
            if limits.watch_memory:
                with contextlib.suppress(psutil.Error):
                    peak = max(peak, _tree_rss(watched))
            if peak > limit:
                killed = "memory"
            elif time.monotonic() > deadline:
                killed = "timeout"
            if killed:
                _kill_group(proc)
                break
            try:
                proc.wait(timeout=min(MEMORY_SAMPLE_S, max(deadline - time.monotonic(), 0.01)))
                break
            except subprocess.TimeoutExpired:
                continue
        proc.wait()
        reader.join(timeout=2)
        tail = _tail(log)
        if killed == "memory":
            raise ChildFailure(
                "memory",
                f"the model used more than {limit / 2**30:.1f} GiB of host memory and was stopped "
                "(raise the limit with --memory-gb, or shrink the example inputs)",
                tail,
            )
        if killed == "timeout":
            raise ChildFailure(
                "timeout",
                f"the model did not finish within {limits.timeout_s:.0f} s and was stopped "
                "(raise the limit with --timeout, or use smaller example inputs)",
                tail,
            )
        if not result.exists():
            how = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
            raise ChildFailure("crashed", f"the model's process died ({how}) before it reported", tail)
        answer = json.loads(result.read_text())
        if not answer.get("ok"):
            raise ChildFailure(
                answer.get("kind", "raised"), answer["message"], answer.get("detail", "") or tail
            )
        out: dict[str, Any] = answer["result"]
        out.setdefault("_child", {}).update(peak_rss_bytes=peak, network=answer.get("network", ""))
        return out


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _tail(log: Path, lines: int = 40) -> str:
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def _read_progress(fd: int, on_progress: Callable[[str, float], None] | None) -> None:
    with os.fdopen(fd, "r") as stream:
        for line in stream:
            if on_progress is None:
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            on_progress(str(event.get("stage", "")), float(event.get("fraction", 0.0)))
