"""Profile capture on a TPU VM: the plan, the wrapper it uploads, the CLI, and a real approved run.

There is no TPU here, so wherever the wrapper must profile something it imports a stand-in `jax`
package that these tests write next to it (its `jax.profiler.trace` copies a small host-only XSpace
into the profile folder, the layout the real profilers use). The product code is the real wrapper and
the real remote engine; only the profiler behind them is a test double.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tests.remote_support import person
from tests.remote_support.engine import collect, write_lab_target
from tests.remote_support.sshd import SYSTEM_PYTHON, SshdFarm, farm_or_skip
from tests.test_diagnose_detect import xspace_bytes
from tpu_runtime.cli.app import app
from tpu_runtime.diagnose.job import run_diagnose
from tpu_runtime.diagnose.profile_capture import (
    EXIT_NO_PROFILE,
    WRAPPER_NAME,
    WRAPPER_SOURCE,
    CaptureError,
    capture_plan,
    fetched_profiles,
    request_capture,
)
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.spec import file_sha256
from tpu_runtime.remote.store import Store

STAND_IN_PROFILER = '''
"""Test double for jax.profiler: on exit, copy fixture.xplane.pb into DIR/plugins/profile/<run>/."""
import contextlib, os, shutil, socket

@contextlib.contextmanager
def trace(log_dir):
    try:
        yield
    finally:
        if os.environ.get("STAND_IN_WRITES", "1") == "1":
            run = os.path.join(log_dir, "plugins", "profile", "2026_01_01_00_00_00")
            os.makedirs(run, exist_ok=True)
            here = os.path.dirname(os.path.abspath(__file__))
            shutil.copy(os.path.join(here, "fixture.xplane.pb"), os.path.join(run, "worker.xplane.pb"))
'''

SCRIPT = """
import sys, time
print("script args", sys.argv[1:], flush=True)
if "--sleep" in sys.argv:
    try:
        time.sleep(60)
    except Exception:
        print("the script swallowed it")
if "--exit" in sys.argv:
    sys.exit(int(sys.argv[-1]))
print("script done", flush=True)
"""


def _stand_in_jax(folder: Path) -> Path:
    """A `jax` package whose profiler is the test double above, with a host-only XSpace to copy."""
    package = folder / "jax"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "profiler.py").write_text(STAND_IN_PROFILER)
    (package / "fixture.xplane.pb").write_bytes(xspace_bytes("/host:CPU"))
    return package


@pytest.fixture
def script(write_model: Callable[[str, str], Path]) -> Path:
    return write_model(SCRIPT, "src/train.py")


# --- the plan -----------------------------------------------------------------------------------------


def test_plan_is_the_exact_command_uploads_and_download(tmp_path: Path, script: Path) -> None:
    staging = tmp_path / "staging"
    plan = capture_plan("jax", script, 30, "profile", script_args=["--steps", "5"], staging_dir=staging)
    assert plan.command == (
        "python3",
        WRAPPER_NAME,
        "--framework",
        "jax",
        "--out",
        "profile",
        "--duration",
        "30",
        "--",
        "train.py",
        "--steps",
        "5",
    )
    assert plan.shell.startswith(f"python3 {WRAPPER_NAME} --framework jax --out profile --duration 30 -- ")
    assert [u.dest for u in plan.uploads] == [WRAPPER_NAME, "train.py"]
    wrapper = Path(plan.uploads[0].source)
    assert wrapper.parent == staging and wrapper.read_text() == WRAPPER_SOURCE
    assert file_sha256(wrapper) == plan.wrapper_sha256
    assert plan.uploads[1].source == str(script.resolve())
    assert plan.download == "profile" and plan.time_limit_s > 30
    assert plan.profiler == "jax.profiler.trace(OUT)"
    before = wrapper.stat().st_mtime_ns
    again = capture_plan("torchtpu", script, 2.5, "out/prof", staging_dir=staging)
    assert Path(again.uploads[0].source) == wrapper and wrapper.stat().st_mtime_ns == before
    assert again.command[2:8] == ("--framework", "torchtpu", "--out", "out/prof", "--duration", "2.5")
    assert "xprof_trace_handler" in again.profiler and "ProfilerActivity.TPU" in again.profiler


def test_bad_plans_are_one_line_errors(tmp_path: Path, script: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    cases = [
        ({"framework": "tensorflow"}, "framework must be one of torchtpu, jax"),
        ({"script": tmp_path / "missing.py"}, "no such script"),
        ({"script": notes}, "not a Python script"),
        ({"duration_s": 0}, "duration must be more than 0"),
        ({"out_dir": "../up"}, "leaves the run's folder"),
        ({"out_dir": "/abs/profile"}, "must be relative"),
        ({"out_dir": "train.py/x"}, "same name"),
        ({"out_dir": WRAPPER_NAME}, "same name"),
    ]
    for change, message in cases:
        args = {"framework": "jax", "script": script, "duration_s": 10.0, "out_dir": "profile", **change}
        with pytest.raises(CaptureError, match=message) as info:
            capture_plan(**args, staging_dir=tmp_path / "s")  # type: ignore[arg-type]
        assert "\n" not in str(info.value)
    with pytest.raises(CaptureError, match="no such file to upload"):
        capture_plan("jax", script, 5, extra_uploads=[tmp_path / "nope"], staging_dir=tmp_path / "s")
    with pytest.raises(CaptureError, match="one interpreter"):
        capture_plan("jax", script, 5, python="python3 -S", staging_dir=tmp_path / "s")


def _module_ast(package: str, relative: str) -> ast.Module:
    """A module's syntax tree, found without importing it (importing torch_tpu loads torch: seconds)."""
    spec = importlib.util.find_spec(package)  # a top-level name: finding it imports nothing
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    return ast.parse((Path(next(iter(spec.submodule_search_locations))) / relative).read_text())


def test_the_wrapper_calls_apis_the_installed_packages_define() -> None:
    """The names the wrapper uses exist in torch_tpu 0.2.0's profiler and in jax.profiler."""
    api = _module_ast("torch_tpu", "_internal/profiler/_api.py")
    functions = {n.name for n in ast.walk(api) if isinstance(n, ast.FunctionDef)}
    assert {"profile", "xprof_trace_handler"} <= functions
    activity = next(n for n in ast.walk(api) if isinstance(n, ast.ClassDef) and n.name == "ProfilerActivity")
    members = {
        t.id for n in activity.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)
    }
    assert {"CPU", "TPU"} <= members
    jax_profiler = _module_ast("jax", "profiler.py")
    exported = {
        a.asname or a.name for n in ast.walk(jax_profiler) if isinstance(n, ast.ImportFrom) for a in n.names
    }
    assert "trace" in exported
    wrapper = ast.parse(WRAPPER_SOURCE)  # valid Python, and the calls named in the plan are in it
    calls = {ast.unparse(n.func) for n in ast.walk(wrapper) if isinstance(n, ast.Call)}
    assert {"jax.profiler.trace", "profiler.profile", "profiler.xprof_trace_handler"} <= calls


# --- the wrapper, run locally -------------------------------------------------------------------------


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A run's files folder as the engine lays it out: the wrapper, the script, the stand-in jax."""
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / WRAPPER_NAME).write_text(WRAPPER_SOURCE)
    (folder / "train.py").write_text(SCRIPT)
    _stand_in_jax(folder)
    return folder


def _wrapper(
    folder: Path, out: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, WRAPPER_NAME, "--framework", "jax", "--out", out, *args]
    return subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})}
    )


def test_wrapper_runs_the_script_inside_the_profiler(run_folder: Path) -> None:
    done = _wrapper(run_folder, "p1", "--duration", "30", "--", "train.py", "a", "--b")
    assert done.returncode == 0, done.stderr
    assert "script args ['a', '--b']" in done.stdout and "script done" in done.stdout
    written = list((run_folder / "p1").glob("plugins/profile/*/*.xplane.pb"))
    assert len(written) == 1 and f"wrote {written[0].relative_to(run_folder)}" in done.stdout

    failed = _wrapper(run_folder, "p2", "--duration", "30", "--", "train.py", "--exit", "4")
    assert failed.returncode == 4  # the script's own status, and the profile is still written
    assert "wrote p2/plugins/profile/" in failed.stdout

    nothing = _wrapper(run_folder, "p3", "--duration", "30", "--", "train.py", env={"STAND_IN_WRITES": "0"})
    assert nothing.returncode == EXIT_NO_PROFILE and "no *.xplane.pb was written" in nothing.stderr

    usage = _wrapper(run_folder, "p4", "--duration", "30")
    assert usage.returncode == 2 and "put the script to profile after --" in usage.stderr


def test_wrapper_stops_a_long_script_when_the_window_ends(run_folder: Path) -> None:
    begun = time.monotonic()
    done = _wrapper(run_folder, "profile", "--duration", "0.5", "--", "train.py", "--sleep")
    assert time.monotonic() - begun < 20  # the script would sleep 60 s
    assert done.returncode == 0, done.stderr
    assert "the 0.5 s window ended" in done.stdout and "swallowed" not in done.stdout
    assert list((run_folder / "profile").glob("plugins/profile/*/worker.xplane.pb"))


def test_wrapper_keeps_the_profile_when_cancelled(run_folder: Path) -> None:
    options = ("--framework", "jax", "--out", "profile", "--duration", "50")
    proc = subprocess.Popen(
        [sys.executable, WRAPPER_NAME, *options, "--", "train.py", "--sleep"],
        cwd=run_folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("script args"):
                break
        os.kill(proc.pid, signal.SIGTERM)  # what tpu-agent's cancel sends to the process group
        out, _ = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0
    assert f"stopped by signal {int(signal.SIGTERM)}" in out and "wrote profile/plugins/profile/" in out


# --- the CLI ------------------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path))
    return write_lab_target(tmp_path)


def test_cli_files_the_capture_and_waits_for_approval(home: Path, script: Path) -> None:
    args = ["capture-profile", "-t", "lab", "--framework", "jax", "--duration", "20", "--json", str(script)]
    result = CliRunner().invoke(app, [*args, "--", "--steps", "3"])
    assert result.exit_code == 3, result.output
    planned, pending = (json.loads(line) for line in result.stdout.splitlines()[:2])
    assert planned["type"] == "capture_plan" and pending["type"] == "pending"
    request = pending["request"]
    assert request["id"] == planned["request_id"] and request["state"] == "pending"
    spec = request["spec"]
    assert spec["command"][-3:] == ["train.py", "--steps", "3"]
    assert [u["dest"] for u in spec["uploads"]] == [WRAPPER_NAME, "train.py"]
    assert (
        spec["downloads"] == [{"remote": "profile"}]
        and spec["time_limit_s"] == planned["plan"]["time_limit_s"]
    )
    assert Path(spec["uploads"][0]["source"]).parent == home / "capture"
    assert "tpu-agent approvals approve" in result.stderr


def test_cli_errors_exit_2_with_one_line(home: Path, script: Path) -> None:
    runner = CliRunner()
    for args, message in (
        (["capture-profile", str(script)], "--target is required"),
        (["capture-profile", "-t", "nope", str(script)], "no target named 'nope'"),
        (["capture-profile", "-t", "lab", str(script.parent / "missing.py")], "no such script"),
        (["capture-profile", "-t", "lab", "--out-dir", "../x", str(script)], "leaves the run's folder"),
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
    bad = runner.invoke(app, ["capture-profile", "-t", "lab", "--framework", "tf", str(script)])
    assert bad.exit_code == 2 and "tf" in bad.stderr


# --- approved and run against a real sshd -------------------------------------------------------------


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    if not SYSTEM_PYTHON.exists():
        pytest.skip(f"{SYSTEM_PYTHON} is absent: the sshd test user has no Python to run the wrapper")
    yield from farm_or_skip(1, tmp_path_factory.mktemp("farm"))


def test_approved_capture_runs_the_wrapper_and_fetches_the_profile(
    farm: SshdFarm, tmp_path: Path, script: Path
) -> None:
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    engine = RemoteEngine(
        store=Store(tmp_path / "state.db"),
        targets_path=tmp_path / "targets.yaml",
        policy_path=tmp_path / "policy.yaml",
        state_path=tmp_path / "state",
        approver_path=person.share_key(person.farm_key_dir(farm.session), tmp_path),
    )
    stand_in = _stand_in_jax(tmp_path / "deps")
    plan = capture_plan(
        "jax",
        script,
        30,
        script_args=["--steps", "2"],
        extra_uploads=[stand_in],
        python=str(SYSTEM_PYTHON),
        staging_dir=tmp_path / "staging",
    )
    request = request_capture(engine, "lo", plan)
    assert request.state == "pending" and engine.approval_for(request.id) is None  # only a person approves
    assert {u.dest for u in request.spec.uploads} >= {WRAPPER_NAME, "train.py", "jax/profiler.py"}
    result, output = asyncio.run(collect(engine, person.approve(engine, request.id)))
    lines = [line.text for line in output]
    assert result.state == "succeeded", lines
    assert "script args ['--steps', '2']" in lines and any(
        "wrote profile/plugins/profile/" in x for x in lines
    )
    fetched = fetched_profiles(engine.state_path, engine.get_request(request.id))
    assert fetched == [engine.state_path / "downloads" / request.id / "w0" / "profile"]
    assert [str(p) for p in fetched] == result.workers[0].downloads
    copied = list(fetched[0].glob("plugins/profile/*/worker.xplane.pb"))
    assert len(copied) == 1 and copied[0].read_bytes() == xspace_bytes("/host:CPU")
    report = run_diagnose([str(fetched[0])])  # the fetched folder is what `tpu-agent diagnose` reads
    assert report.inputs[0].kind == "xspace" and report.profile is not None
    assert report.profile.is_tpu is False  # the stand-in wrote a host-only profile, never TPU numbers
