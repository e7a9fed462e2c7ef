"""Capturing an XProf profile on the user's TPU VM: the plan, and its approval-gated run request.

`capture_plan` says exactly what will run: a small wrapper script (`WRAPPER_SOURCE`, uploaded beside
the user's script) runs the script as `__main__` inside the framework's profiler and stops recording
when the script ends or the capture window closes, whichever comes first. `request_capture` files that
plan through the remote engine's `request_run`; nothing runs until the person approves the request
(policy never auto-approves it: it runs user code), and the engine then uploads the two files, runs the
command on every chosen worker and downloads the profile folder into
`<state>/downloads/<request id>/w<worker>/<out_dir>`, which `tpu-agent diagnose` reads as it is.

Profiler APIs (restated from the installed packages, not copied):

- TorchTPU: `torch_tpu._internal.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.TPU],
  on_trace_ready=xprof_trace_handler(dir))` is a context manager that starts TorchTPU's profiler with
  device tracing and, on exit, writes `dir/plugins/profile/<timestamp>/<hostname>.xplane.pb`
  (torch_tpu 0.2.0, torch_tpu/_internal/profiler/_api.py and _impl.py; https://pypi.org/project/torch-tpu/).
  `torch.tpu.profiler.TpuProfilerConfig` is the options object for `torch.profiler.profile`, but it
  leaves the output layout to Kineto, so the wrapper uses the context manager whose layout is defined.
- JAX: the context manager `jax.profiler.trace(dir)` records host and TPU activity into the same layout
  (https://docs.jax.dev/en/latest/_autosummary/jax.profiler.trace.html).

The capture window counts from the script's start, so imports and the first compilations are inside
it; a longer window or a script that stops on its own after the steps of interest captures those steps.
"""

from __future__ import annotations

import hashlib
import posixpath
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from tpu_runtime.errors import BadInput
from tpu_runtime.remote.gated import doubled_names, staged_script, worker_command_inputs

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import RunRequest
    from tpu_runtime.remote.engine import RemoteEngine

__all__ = [
    "FRAMEWORKS",
    "WRAPPER_NAME",
    "WRAPPER_SOURCE",
    "CaptureError",
    "CapturePlan",
    "PlannedUpload",
    "capture_plan",
    "fetched_profiles",
    "request_capture",
]

Framework = Literal["torchtpu", "jax"]
FRAMEWORKS: tuple[Framework, ...] = ("torchtpu", "jax")
WRAPPER_NAME = "tpu_agent_capture.py"
DEFAULT_OUT_DIR = "profile"
DEFAULT_DURATION_S = 60.0
MAX_DURATION_S = 24 * 3600.0
#: Seconds the remote run may take beyond the capture window: writing the profile, process exit.
WRITE_MARGIN_S = 300.0
EXIT_NO_PROFILE = 3  # what the wrapper exits with when the profiler wrote no *.xplane.pb

PROFILER_CALLS: dict[Framework, str] = {
    "torchtpu": "torch_tpu._internal.profiler.profile(activities=[ProfilerActivity.CPU, "
    "ProfilerActivity.TPU], on_trace_ready=xprof_trace_handler(OUT))",
    "jax": "jax.profiler.trace(OUT)",
}

# The wrapper runs on the TPU VM's Python (3.8 or newer), with only the standard library and the
# framework the user already runs. SIGALRM closes the capture window by raising in the main thread, so
# the profiler's own context manager stops and writes the trace; SIGTERM (tpu-agent's cancel) does the
# same, so a cancelled capture keeps what it recorded.
WRAPPER_SOURCE = f'''\
"""tpu-agent profile capture (wrapper v1): record an XProf profile around one Python script.

Usage: python3 {WRAPPER_NAME} --framework torchtpu|jax --out DIR --duration SECONDS -- SCRIPT [ARGS...]

SCRIPT runs as __main__ inside the framework profiler until it ends or SECONDS pass, whichever comes
first; the profile is written under DIR/plugins/profile/<run>/<host>.xplane.pb. Exit status: the
script's own, or {EXIT_NO_PROFILE} when no profile file was written.
"""
import argparse
import os
import runpy
import signal
import sys
import time
import traceback

EXIT_NO_PROFILE = {EXIT_NO_PROFILE}


class StopCapture(BaseException):
    """Raised in the main thread to end the capture (a BaseException: `except Exception` keeps out)."""


def _stop(signum, frame):
    raise StopCapture(signum)


def _profiler(framework, out):
    if framework == "jax":
        import jax.profiler

        return jax.profiler.trace(out)
    from torch_tpu._internal import profiler

    return profiler.profile(
        activities=[profiler.ProfilerActivity.CPU, profiler.ProfilerActivity.TPU],
        on_trace_ready=profiler.xprof_trace_handler(out),
    )


def _profiles(out):
    found = []
    for folder, _, names in os.walk(out):
        for name in names:
            if name.endswith(".xplane.pb"):
                path = os.path.join(folder, name)
                found.append((path, os.path.getsize(path)))
    return sorted(found)


def main():
    parser = argparse.ArgumentParser(
        prog="{WRAPPER_NAME}",
        usage="%(prog)s --framework torchtpu|jax --out DIR --duration SECONDS -- SCRIPT [ARGS...]",
    )
    parser.add_argument("--framework", choices=("torchtpu", "jax"), required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--duration", type=float, required=True)
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        parser.error("put the script to profile after --")
    cut = argv.index("--")
    opts = parser.parse_args(argv[:cut])
    script, args = argv[cut + 1], argv[cut + 2 :]
    out = os.path.abspath(opts.out)
    os.makedirs(out, exist_ok=True)
    sys.argv = [script] + args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    print(
        "tpu-agent capture: profiling %s with %s for up to %g s into %s"
        % (script, opts.framework, opts.duration, out),
        flush=True,
    )
    signal.signal(signal.SIGALRM, _stop)
    signal.signal(signal.SIGTERM, _stop)
    started = time.monotonic()
    stopped_by = None
    code = 0
    try:
        with _profiler(opts.framework, out):
            try:
                try:
                    signal.setitimer(signal.ITIMER_REAL, opts.duration)
                    runpy.run_path(script, run_name="__main__")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except StopCapture as stop:
                stopped_by = stop.args[0] if stop.args else signal.SIGALRM
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    elapsed = time.monotonic() - started
    if stopped_by == signal.SIGALRM:
        print("tpu-agent capture: the %g s window ended; the script was stopped there" % opts.duration)
    elif stopped_by is not None:
        print("tpu-agent capture: stopped by signal %d after %.1f s" % (stopped_by, elapsed))
    found = _profiles(out)
    for path, size in found:
        print("tpu-agent capture: wrote %s (%d bytes)" % (os.path.relpath(path), size))
    if not found:
        print("tpu-agent capture: no *.xplane.pb was written under %s" % out, file=sys.stderr)
        code = code or EXIT_NO_PROFILE
    sys.stdout.flush()
    sys.stderr.flush()
    if stopped_by is not None:
        os._exit(code)  # the stopped script may hold non-daemon threads that would keep us alive
    sys.exit(code)


if __name__ == "__main__":
    main()
'''


class CaptureError(BadInput, ValueError):
    """A capture that cannot be planned as asked; the message is one line."""


class PlannedUpload(BaseModel):
    model_config = ConfigDict(frozen=True)

    source: str = Field(description="local path (a file, or a folder sent with its layout)")
    dest: str = Field(description="path in the run's files folder on each worker")


class CapturePlan(BaseModel):
    """Everything a capture will do on the TPU VM, shown to the person before they approve it."""

    model_config = ConfigDict(frozen=True)

    framework: Framework
    profiler: str = Field(description="the profiler call the wrapper makes, OUT being `out_dir`")
    script: str = Field(description="the user's script, local absolute path")
    script_args: tuple[str, ...] = ()
    duration_s: float = Field(gt=0, description="the capture window, from the script's start")
    out_dir: str = Field(description="folder on each worker, relative to the run's files folder")
    command: tuple[str, ...] = Field(description="argv run in the run's files folder on each worker")
    shell: str = Field(description="the command as one shell line")
    uploads: tuple[PlannedUpload, ...]
    download: str = Field(description="the folder fetched back from each worker after the run")
    time_limit_s: float = Field(description="the window plus time to write the profile")
    wrapper_sha256: str


def _wrapper_file(staging_dir: Path) -> Path:
    return staged_script(staging_dir, "tpu_agent_capture", WRAPPER_SOURCE)


def capture_plan(
    framework: str,
    script: Path,
    duration_s: float = DEFAULT_DURATION_S,
    out_dir: str = DEFAULT_OUT_DIR,
    *,
    script_args: Sequence[str] = (),
    extra_uploads: Sequence[Path] = (),
    python: str = "python3",
    staging_dir: Path | None = None,
) -> CapturePlan:
    """The exact command, uploads and download of a profile capture of `script` on a TPU VM.

    `extra_uploads` (files or folders the script imports or reads) go beside the script; `staging_dir`
    holds the local copy of the wrapper (default: tpu-agent's state folder). Raises CaptureError.
    """
    if framework not in FRAMEWORKS:
        raise CaptureError(f"framework must be one of {', '.join(FRAMEWORKS)}; got {framework!r}")
    chosen: Framework = "jax" if framework == "jax" else "torchtpu"
    path = script.expanduser()
    if not path.is_file():
        raise CaptureError(f"no such script: {script}")
    if path.suffix != ".py":
        raise CaptureError(f"{script} is not a Python script (.py)")
    if not 0 < duration_s <= MAX_DURATION_S:
        raise CaptureError(
            f"duration must be more than 0 and at most {MAX_DURATION_S:g} s; got {duration_s:g}"
        )
    out = worker_command_inputs(out_dir, python, "profile folder", CaptureError)
    uploads = [PlannedUpload(source=str(path.resolve()), dest=path.name)]
    for extra in extra_uploads:
        item = extra.expanduser()
        if not item.exists():
            raise CaptureError(f"no such file to upload: {extra}")
        uploads.append(PlannedUpload(source=str(item.resolve()), dest=item.resolve().name))
    names = [WRAPPER_NAME, *(u.dest for u in uploads), out.split("/")[0]]  # the profile folder last
    doubled = doubled_names(names)
    if doubled:
        raise CaptureError(
            f"two things would take the same name in the run folder: {', '.join(doubled)} "
            "(rename the file, or choose another --out-dir)"
        )
    if staging_dir is None:
        from tpu_runtime.remote.locations import state_dir

        staging_dir = state_dir() / "capture"
    wrapper = _wrapper_file(staging_dir)
    window = f"{duration_s:g}"
    command = (
        python,
        WRAPPER_NAME,
        "--framework",
        chosen,
        "--out",
        out,
        "--duration",
        window,
        "--",
        path.name,
        *script_args,
    )
    return CapturePlan(
        framework=chosen,
        profiler=PROFILER_CALLS[chosen],
        script=str(path.resolve()),
        script_args=tuple(script_args),
        duration_s=duration_s,
        out_dir=out,
        command=command,
        shell=shlex.join(command),
        uploads=(PlannedUpload(source=str(wrapper), dest=WRAPPER_NAME), *uploads),
        download=out,
        time_limit_s=duration_s + WRITE_MARGIN_S,
        wrapper_sha256=hashlib.sha256(WRAPPER_SOURCE.encode()).hexdigest(),
    )


def request_capture(
    engine: RemoteEngine,
    target: str,
    plan: CapturePlan,
    *,
    workers: str = "all",
    requested_by: str = "cli",
) -> RunRequest:
    """File the capture as a run request, pending the person's approval (policy never approves it).

    Raises the engine's TargetError or SpecError (one line) when the request cannot be built.
    """
    return engine.request_run(
        target,
        list(plan.command),
        workers=workers,
        uploads=[(Path(u.source), u.dest) for u in plan.uploads],
        downloads=[plan.download],
        time_limit_s=plan.time_limit_s,
        requested_by=requested_by,
        use_policy=False,
    )


def fetched_profiles(state_path: Path, request: RunRequest) -> list[Path]:
    """The profile folders a finished capture brought back, one per worker that returned one."""
    root = state_path / "downloads" / request.id
    names = [posixpath.basename(d.remote.rstrip("/")) for d in request.spec.downloads]
    return sorted(p for name in names for p in root.glob(f"w*/{name}") if p.is_dir())
