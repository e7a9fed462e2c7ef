"""Ray targets against a real local Ray cluster: the approved job submission is what Ray receives.

The module starts one Ray head node (`ray start --head --block`) bound to 127.0.0.1 on free ports, with a
fake `TPU` resource (8 chips) and a fake slice head resource `TPU-v6e-16-head`, shared by every test here
(starting Ray costs seconds), and stops exactly the processes it started (its own process group) at the
end. Skips, with the reason, where Ray is not installed.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.remote_support import person
from tests.remote_support.engine import collect
from tpu_runtime.remote import audit
from tpu_runtime.remote.approvals import Approval, ApprovalError
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.ray_jobs import INSTALL_HINT, RayError, build_job, job_client_class
from tpu_runtime.remote.report import OutputLine, RunResult
from tpu_runtime.remote.store import Store
from tpu_runtime.remote.targets import RayTarget

# Ray's own job client passes ssl=None to aiohttp when following logs (ray/dashboard/modules/job/sdk.py)
# a real Ray cluster per module: slow as a whole
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning"),
]
RAY_START = [sys.executable, "-m", "ray.scripts.scripts", "start"]  # Ray's own `ray` command, this Python
HEAD_RESOURCES = {"TPU": 8, "TPU-v6e-16-head": 1}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A one-node Ray cluster on loopback; yields its job-submission address."""
    pytest.importorskip("ray.job_submission", reason="Ray is not installed (pip install 'tpu-agent[ray]')")
    temp = Path(tempfile.mkdtemp(prefix="tr", dir="/tmp"))  # short: Ray's socket paths live below it
    dashboard = _free_port()
    args = [
        *RAY_START, "--head", "--block", "--node-ip-address", "127.0.0.1",
        "--port", str(_free_port()), "--dashboard-host", "127.0.0.1", "--dashboard-port", str(dashboard),
        "--ray-client-server-port", str(_free_port()),
        "--dashboard-agent-listen-port", str(_free_port()),
        "--num-cpus", "2", "--resources", json.dumps(HEAD_RESOURCES), "--temp-dir", str(temp),
        "--include-dashboard", "true", "--disable-usage-stats",
    ]  # fmt: skip
    # A token left in ~/.ray/auth_token by any earlier local Ray run turns token auth on for a new cluster,
    # and the dashboard then answers 401 to everything: this cluster and its clients run with auth off,
    # whatever the machine holds.
    auth_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0")
    log = (temp / "ray-start.log").open("wb")
    proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    address = f"http://127.0.0.1:{dashboard}"
    try:
        deadline = time.monotonic() + 120
        while not _up(address):
            if proc.poll() is not None or time.monotonic() > deadline:
                text = (temp / "ray-start.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"ray start did not come up:\n{text}")
            time.sleep(0.5)
        yield address
    finally:
        if auth_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth_mode
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever of its own group is left
        proc.wait()
        log.close()
        shutil.rmtree(temp, ignore_errors=True)


def _engine(tmp_path: Path, targets: dict[str, Any], environ: dict[str, str] | None = None) -> RemoteEngine:
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump({"targets": targets}))
    return RemoteEngine(
        store=Store(tmp_path / "state.db"),
        targets_path=tmp_path / "targets.yaml",
        policy_path=tmp_path / "policy.yaml",
        state_path=tmp_path / "state",
        approver_path=tmp_path / "approver",
        environ=environ if environ is not None else {},
    )


def _ray(address: str, **over: Any) -> dict[str, Any]:
    return {"kind": "ray", "address": address, "tpu_chips_per_host": 4, **over}


def _client(address: str) -> Any:
    return job_client_class()(address)


def _job_ids(address: str) -> set[str]:
    return {job.submission_id for job in _client(address).list_jobs()}


def _audit(engine: RemoteEngine) -> list[audit.AuditRow]:
    with engine.store.read() as conn:
        return audit.rows(conn, None, 1000)


# ---- without a cluster -----------------------------------------------------------------------------------


def test_the_target_checks_its_fields_and_the_job_holds_names_not_secrets() -> None:
    target = RayTarget.model_validate(
        _ray(
            "http://10.0.0.2:8265/",
            tpu_hosts=4,
            tpu_pod_type="v6e-16",
            auth_token_env="RAY_JOB_TOKEN",
            runtime_env={"pip": ["jax"], "env_vars": {"JAX_PLATFORMS": "tpu"}},
        )
    )
    job = build_job(target, "r-1a2b", ("python", "train.py", "--steps", "10"), {"STEP": "2"}, ())
    assert job.address == "http://10.0.0.2:8265" and job.submission_id == "tpu-agent-r-1a2b"
    assert job.entrypoint_resources == {"TPU-v6e-16-head": 1.0}  # the job starts on the slice's worker 0
    assert job.entrypoint.startswith("python tpu_agent_ray_launch.py --hosts 4 --chips 4 -- python train.py")
    assert job.runtime_env["env_vars"] == {"JAX_PLATFORMS": "tpu", "STEP": "2"}
    assert job.headers_env == {"Authorization": "RAY_JOB_TOKEN"}  # the variable's name, not its value
    single = build_job(RayTarget.model_validate(_ray("http://h:8265")), "r-2", ("python", "t.py"), {}, ())
    assert single.entrypoint == "python t.py" and single.entrypoint_resources == {"TPU": 4.0}
    for bad, word in (
        ({"runtime_env": {"working_dir": "."}}, "working_dir"),
        ({"runtime_env": {"py_modules": ["./mylib"]}}, "local path"),
        ({"runtime_env": {"env_vars": {"HF_TOKEN": "x"}}}, "credential"),
        ({"tpu_hosts": 2}, "tpu_pod_type"),
        ({"address": "10.0.0.2:8265"}, "http"),
    ):
        with pytest.raises(ValueError, match=word):
            RayTarget.model_validate({**_ray("http://h:8265"), **bad})


def test_without_ray_the_kind_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tpu_runtime.remote.spec import SpecError

    monkeypatch.setitem(sys.modules, "ray.job_submission", None)  # import fails as if Ray were absent
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(RayError) as caught:
        job_client_class()
    assert str(caught.value) == INSTALL_HINT and "\n" not in INSTALL_HINT
    engine = _engine(tmp_path, {"r": _ray("http://127.0.0.1:9")})
    with pytest.raises(SpecError) as refused:  # before anyone is asked to approve what cannot run
        engine.request_run("r", ["python", "train.py"])
    assert str(refused.value) == INSTALL_HINT and engine.list_requests() == []


def test_secrets_and_worker_choice_are_refused_for_ray(tmp_path: Path) -> None:
    from tpu_runtime.remote.spec import SpecError

    engine = _engine(tmp_path, {"r": _ray("http://127.0.0.1:9")}, environ={"HF_TOKEN": "x"})
    with pytest.raises(SpecError, match="secret"):
        engine.request_run("r", ["true"], secret_env=["HF_TOKEN"])
    with pytest.raises(SpecError, match="--worker"):
        engine.request_run("r", ["true"], workers="0")
    assert engine.list_requests() == []


def test_a_dead_cluster_gives_one_clear_line(tmp_path: Path) -> None:
    pytest.importorskip("ray.job_submission", reason="Ray is not installed")
    address = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    engine = _engine(tmp_path, {"gone": _ray(address)})
    request = engine.request_run("gone", ["python", "-c", "print(1)"])
    result, _ = asyncio.run(collect(engine, person.approve(engine, request.id)))
    (worker,) = result.workers
    assert result.state == "failed" and worker.error_kind == "unreachable"
    assert worker.error is not None and "\n" not in worker.error
    assert worker.error.startswith(f"Ray cluster at {address} is not reachable")


# ---- against the local cluster -------------------------------------------------------------------------


@pytest.mark.slow
def test_submit_after_approval_streams_logs_and_records_the_job(cluster: str, tmp_path: Path) -> None:
    wd = tmp_path / "wd"
    (wd / "pkg").mkdir(parents=True)
    (wd / "train.py").write_text(
        "import os, pkg.helper\nfor i in range(3):\n    print('step', i, os.environ['STEP'], flush=True)\n"
        "print(pkg.helper.WORD)\n"
    )
    (wd / "pkg" / "__init__.py").write_text("")
    (wd / "pkg" / "helper.py").write_text("WORD = 'helper imported'\n")
    (wd / ".gitignore").write_text("*.py\n")  # Ray's own packer would leave every .py out; ours does not
    engine = _engine(tmp_path, {"my-ray": _ray(cluster, auth_token_env="RAY_TEST_TOKEN")},
                     environ={"RAY_TEST_TOKEN": "tok-never-stored-3141"})  # fmt: skip
    request = engine.request_run(
        "my-ray",
        ["python", "train.py"],
        env={"STEP": "x7"},
        uploads=[(wd, ".")],  # `--upload wd:.`: the folder's files at the top of the working_dir
    )
    job = request.spec.ray
    assert job is not None and request.spec.target_kind == "ray" and request.state == "pending"
    dests = sorted(u.dest for u in request.spec.uploads)
    assert dests == [".gitignore", "pkg/__init__.py", "pkg/helper.py", "train.py"]
    result, lines = asyncio.run(collect(engine, person.approve(engine, request.id)))
    # the workers' errors too: a failure with no log line (seen once in a full run) says why only there
    why = [(w.status, w.error_kind, w.error) for w in result.workers]
    assert result.state == "succeeded", ([line.text for line in lines], why)
    texts = [line.text for line in lines]
    assert [t for t in texts if t.startswith("step")] == ["step 0 x7", "step 1 x7", "step 2 x7"]
    assert "helper imported" in texts
    info = _client(cluster).get_job_info(job.submission_id)
    assert info.entrypoint == job.entrypoint == "python train.py"
    assert info.runtime_env["env_vars"] == {"STEP": "x7"}
    assert re.fullmatch(r"gcs://_ray_pkg_[0-9a-f]{64}\.zip", info.runtime_env["working_dir"])  # ours
    assert info.metadata["tpu_agent_request"] == request.id
    rows = _audit(engine)
    submitted = [r for r in rows if r.kind == "ray_job"]
    assert [r.payload["ray_job"] for r in submitted] == [job.submission_id]
    assert submitted[0].subject == result.run_id
    assert b"tok-never-stored-3141" not in (tmp_path / "state.db").read_bytes()
    assert engine.verify_audit().ok


@pytest.mark.slow
def test_no_job_without_approval_and_no_replay(cluster: str, tmp_path: Path) -> None:
    engine = _engine(tmp_path, {"my-ray": _ray(cluster)})
    request = engine.request_run("my-ray", ["python", "-c", "print('ran')"])
    assert request.spec.ray is not None
    forged = Approval(
        id="a-forged", request_id=request.id, digest=request.digest, approver="agent", via="cli",
        created_at=time.time(), expires_at=time.time() + 600,
    )  # fmt: skip
    with pytest.raises(ApprovalError) as caught:
        asyncio.run(collect(engine, forged))
    assert caught.value.reason == "unknown"
    assert request.spec.ray.submission_id not in _job_ids(cluster)
    approval = person.approve(engine, request.id)
    result, _ = asyncio.run(collect(engine, approval))
    assert result.state == "succeeded"
    with pytest.raises(ApprovalError) as again:
        asyncio.run(collect(engine, approval))
    assert again.value.reason == "used"
    jobs = [j for j in _client(cluster).list_jobs() if j.submission_id == request.spec.ray.submission_id]
    assert len(jobs) == 1


def test_a_working_dir_changed_after_approval_is_refused(cluster: str, tmp_path: Path) -> None:
    wd = tmp_path / "proj"
    wd.mkdir()
    (wd / "train.py").write_text("print('approved version')\n")
    engine = _engine(tmp_path, {"my-ray": _ray(cluster)})
    request = engine.request_run("my-ray", ["python", "proj/train.py"], uploads=[(wd, None)])
    approval = person.approve(engine, request.id)
    (wd / "train.py").write_text("print('swapped in after approval')\n")
    with pytest.raises(ApprovalError) as caught:
        asyncio.run(collect(engine, approval))
    assert caught.value.reason == "changed" and "changed after it was approved" in str(caught.value)
    assert request.spec.ray is not None and request.spec.ray.submission_id not in _job_ids(cluster)
    refused = [r for r in _audit(engine) if r.kind == "refused"]
    assert refused and refused[-1].payload["why"] == "upload_changed"


@pytest.mark.slow
def test_cancel_stops_the_job(cluster: str, tmp_path: Path) -> None:
    engine = _engine(tmp_path, {"my-ray": _ray(cluster)})
    request = engine.request_run(
        "my-ray", ["python", "-c", "import time; print('started', flush=True); time.sleep(600)"]
    )
    approval = person.approve(engine, request.id)

    async def go() -> RunResult:
        run_id = await engine.start(approval)
        try:
            async for event in engine.stream(run_id):
                if isinstance(event, OutputLine) and event.text == "started":
                    assert engine.cancel(run_id)
            return await engine.wait(run_id)
        finally:
            await engine.aclose()

    result = asyncio.run(asyncio.wait_for(go(), 120))
    assert result.state == "cancelled" and result.workers[0].error_kind == "cancelled"
    assert request.spec.ray is not None
    assert str(_client(cluster).get_job_status(request.spec.ray.submission_id)) == "STOPPED"


@pytest.mark.slow
def test_multi_host_runs_one_task_per_host_and_brings_files_back(cluster: str, tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text(
        "import os\nhost = os.environ['TPU_AGENT_WORKER']\nos.makedirs('out', exist_ok=True)\n"
        "open(os.path.join('out', 'host%s.txt' % host), 'w').write(host)\nprint('hello from host', host)\n"
    )
    engine = _engine(tmp_path, {"slice": _ray(cluster, tpu_hosts=2, tpu_pod_type="v6e-16")})
    request = engine.request_run("slice", ["python", "work.py"], uploads=[(script, None)], downloads=["out"])
    dests = sorted(u.dest for u in request.spec.uploads)
    assert dests == ["tpu_agent_ray_launch.py", "work.py"]  # the launcher is approved by hash like any file
    result, lines = asyncio.run(collect(engine, person.approve(engine, request.id)))
    assert result.state == "succeeded", [line.text for line in lines]
    hellos = sorted((line.worker, line.text) for line in lines if line.text.startswith("hello"))
    assert hellos == [(0, "hello from host 0"), (1, "hello from host 1")]
    assert [(w.worker, w.status, w.exit_status) for w in result.workers] == [(0, "ok", 0), (1, "ok", 0)]
    # The test cluster is one node, so both "hosts" share the job's working_dir (a real slice gives each
    # host its own): each writes a file of its own name, which its own download must hold.
    for w in result.workers:
        (folder,) = w.downloads
        assert Path(folder, f"host{w.worker}.txt").read_text() == str(w.worker)


@pytest.mark.slow
def test_mcp_lists_files_and_runs_a_ray_request(cluster: str, tmp_path: Path) -> None:
    from mcp import Client

    from mcp_servers.remote_runs import build_server

    engine = _engine(tmp_path, {"my-ray": _ray(cluster)})

    async def go() -> tuple[Any, Any, Any]:
        async with Client(build_server(engine)) as client:
            targets = (await client.call_tool("list_targets", {})).structured_content
            filed = (
                await client.call_tool(
                    "request_run", {"target": "my-ray", "argv": ["python", "-c", "print('via mcp')"]}
                )
            ).structured_content
            person.approve(engine, filed["request_id"])
            ran = (await client.call_tool("run", {"request_id": filed["request_id"]})).structured_content
            return targets, filed, ran

    targets, filed, ran = asyncio.run(go())
    assert [(t["name"], t["kind"]) for t in targets["targets"]] == [("my-ray", "ray")]
    assert (
        filed["target_kind"] == "ray"
        and filed["ray_job"]["entrypoint"] == "python -c 'print('\"'\"'via mcp'\"'\"')'"
    )
    assert ran["status"] == "succeeded", ran
    assert any(line["text"] == "via mcp" for line in ran["output"])


@pytest.mark.slow
def test_kernel_tune_times_each_candidate_as_one_ray_job_per_attempt(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`kernel tune --target` on a Ray target: one approval for the loop, each attempt its own Ray job,
    timings brought back through the job log. The timer runs in interpret mode (its test hook) and says so."""
    from tests.test_kernels_remote_timing import KERNEL, _Person, _test_env, _tuned_run
    from tpu_runtime.kernels.remote_timing import TimingOptions
    from tpu_runtime.kernels.tune import KernelTuneRequest, run_kernel_tune

    home = tmp_path / "home"
    home.mkdir()
    (home / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": _ray(cluster)}}))
    monkeypatch.setenv("TPU_AGENT_HOME", str(home))
    run = _tuned_run(tmp_path / "run")
    asker = _Person()
    timing = TimingOptions(
        target="lo", python=sys.executable, env=_test_env(), time_limit_s=240, repeats=3, warmup=1
    )
    report = run_kernel_tune(
        KernelTuneRequest(file=KERNEL, budget=3, run_dir=run.path, timing=timing), None, asker
    )
    (shown,) = asker.shown
    assert shown.spec.target_kind == "ray" and shown.spec.loop is not None
    measures = [r for r in run.records() if r["event"] == "measure"]
    assert [r["params"] for r in measures] == [{"block_rows": 8}, {"block_rows": 64}], report.message
    assert all(r["device"] == "cpu (test, interpret mode)" and r["median_s"] > 0 for r in measures)
    assert report.best is not None and "measured on target lo" in report.ranking
    engine = RemoteEngine(store=Store(home / "state.db"), state_path=home)
    jobs = [r.payload["ray_job"] for r in _audit(engine) if r.kind == "ray_job"]
    assert shown.spec.ray is not None
    assert jobs == [f"{shown.spec.ray.submission_id}-a1", f"{shown.spec.ray.submission_id}-a2"]


@pytest.mark.slow
def test_capture_profile_on_ray_brings_the_profile_folder_back(cluster: str, tmp_path: Path) -> None:
    """`capture-profile -t` on a Ray target: the wrapper, the script and a stand-in `jax.profiler` are the
    working_dir; the profile folder comes back where `tpu-agent diagnose` reads it."""
    from tests.test_diagnose_capture import SCRIPT, _stand_in_jax
    from tpu_runtime.diagnose.profile_capture import capture_plan, fetched_profiles, request_capture

    script = tmp_path / "src" / "train.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    engine = _engine(tmp_path, {"my-ray": _ray(cluster)})
    plan = capture_plan(
        "jax",
        script,
        30,
        script_args=["--steps", "2"],
        extra_uploads=[_stand_in_jax(tmp_path / "deps")],
        python="python",
        staging_dir=tmp_path / "staging",
    )
    request = request_capture(engine, "my-ray", plan)
    result, lines = asyncio.run(collect(engine, person.approve(engine, request.id)))
    assert result.state == "succeeded", [line.text for line in lines]
    assert "script args ['--steps', '2']" in [line.text for line in lines]
    (profile,) = fetched_profiles(engine.state_path, engine.get_request(request.id))
    assert profile == engine.state_path / "downloads" / request.id / "w0" / "profile"
    assert len(list(profile.glob("plugins/profile/*/worker.xplane.pb"))) == 1


@pytest.mark.slow
def test_onboard_device_check_on_a_two_host_ray_slice(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`onboard --target` on a multi-host Ray target: one task per host, each host's rows fetched back.
    The runner's test hook compares on the CPU and every line it writes says so."""
    from tests.test_onboard_device_check import MODEL, _request, _test_env
    from tpu_runtime.onboard.job import run_onboard

    model = tmp_path / "src" / "net.py"
    model.parent.mkdir()
    model.write_text(MODEL)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TPU_AGENT_HOME", str(home))
    target = _ray(cluster, tpu_hosts=2, tpu_pod_type="v6e-16")
    (home / "targets.yaml").write_text(yaml.safe_dump({"targets": {"slice": target}}))
    asked: list[str] = []

    def person_says_yes(engine: RemoteEngine, request: Any) -> Approval | None:
        asked.append(request.id)
        return person.approve(engine, request.id, via="test")

    request = _request(model, target="slice", device_python="python", device_env=_test_env(),
                       device_time_limit_s=300)  # fmt: skip
    report = run_onboard(request, approver=person_says_yes)
    assert report.numerics is not None and len(asked) == 1
    check = report.numerics.device_check
    assert check.startswith("ran on target slice (workers 0:tpu-agent-"), check
    assert "/w1) after approval at " in check and "device: cpu (test)" in check and "problems" not in check
    assert [(r.layer, r.mode) for r in report.numerics.device_rows] == [
        (r.layer, r.mode) for r in report.numerics.rows
    ]


def test_cli_files_a_ray_request_shows_the_submission_and_checks_the_cluster(
    cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from tpu_runtime.cli.app import app

    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path))
    dead = f"http://127.0.0.1:{_free_port()}"
    targets = {"my-ray": _ray(cluster), "gone": _ray(dead)}
    (tmp_path / "targets.yaml").write_text(yaml.safe_dump({"targets": targets}))
    (tmp_path / "train.py").write_text("print('hi')\n")

    def invoke(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    code, out, _ = invoke("targets", "list", "--json")
    assert code == 0 and json.loads(out)["my-ray"]["kind"] == "ray"
    code, out, _ = invoke("targets", "check", "my-ray")
    assert code == 0 and out.strip().startswith("Ray 2.") and out.strip().endswith(f"{cluster}: ok")
    code, _, err = invoke("targets", "check", "gone")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "is not reachable" in err
    code, _, err = invoke(
        "run", "-t", "my-ray", "--upload", str(tmp_path / "train.py"), "--", "python", "train.py"
    )
    assert code == 3  # no terminal: the request waits for the person
    flat = " ".join(err.split())
    assert "(ray)" in flat and "entrypoint: python train.py" in flat and '{"TPU": 4.0}' in flat
    assert "working_dir: the 1 upload(s) above, by hash" in flat and "Ray job tpu-agent-r-" in flat
    (pending,) = RemoteEngine(store=Store(tmp_path / "state.db")).list_requests(("pending",))
    assert pending.spec.ray is not None and pending.spec.ray.submission_id not in _job_ids(cluster)


def _running(token: str) -> list[str]:
    found = subprocess.run(["ps", "-ewwo", "pid,args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in found if token in line and "ps -ewwo" not in line]


@pytest.mark.slow
def test_cancel_stops_every_host_of_a_slice(cluster: str, tmp_path: Path) -> None:
    token = f"tpu-agent-test-{os.getpid()}-{time.time_ns()}"  # marks the command's processes
    engine = _engine(tmp_path, {"slice": _ray(cluster, tpu_hosts=2, tpu_pod_type="v6e-16")})
    code = "import sys, time; print('up', flush=True); time.sleep(600)"
    request = engine.request_run("slice", ["python", "-c", code, token])
    approval = person.approve(engine, request.id)

    async def go() -> RunResult:
        run_id = await engine.start(approval)
        up: set[int] = set()
        try:
            async for event in engine.stream(run_id):
                if isinstance(event, OutputLine) and event.text == "up":
                    up.add(event.worker)
                    if up == {0, 1}:
                        commands = [p for p in _running(token) if "tpu_agent_ray_launch" not in p]
                        assert len(commands) == 2  # one per host (beside the launcher and its shell)
                        assert engine.cancel(run_id)
            return await engine.wait(run_id)
        finally:
            await engine.aclose()

    result = asyncio.run(asyncio.wait_for(go(), 180))
    assert result.state == "cancelled"
    deadline = time.monotonic() + 30
    while _running(token) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _running(token) == []  # no host's command outlived the stopped job (Ray ends a task's children)


def test_the_job_log_is_split_into_hosts_exit_statuses_and_checked_archives(tmp_path: Path) -> None:
    """A job log as the launcher and Ray write it, read back: Ray's coloured task prefixes, exit markers,
    a damaged archive refused, a good one unpacked inside the downloads folder only."""
    import base64
    import hashlib
    import io
    import tarfile

    from tpu_runtime.remote.ray_jobs import _Collector, unpack

    def archive(name: str, text: str) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
            data = text.encode()
            info = tarfile.TarInfo(f"{name}/rows.json")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        return buffer.getvalue()

    events: list[Any] = []
    collector = _Collector("run-1", "tpu-agent-r-1", events.append)
    good = archive("out", "[1, 2]")
    digest = hashlib.sha256(good).hexdigest()
    b64 = base64.b64encode(good).decode()
    log = (
        "Running entrypoint for job tpu-agent-r-1\n"
        "\x1b[36m(run_host pid=16157)\x1b[0m [tpu-agent w0] hello from host 0\n"
        "\x1b[36m(run_host pid=16158, ip=10.0.0.3)\x1b[0m [tpu-agent w1] hello from host 1\n"
        f"@@tpu-agent-dl begin w0 {digest} {len(good)} out\n@@tpu-agent-dl data w0 {b64}\n"
        "@@tpu-agent-dl end w0\n"
        f"@@tpu-agent-dl begin w1 {digest} {len(good)} out\n@@tpu-agent-dl data w1 {b64[:-8]}AAAAAAAA\n"
        "@@tpu-agent-dl end w1\n@@tpu-agent-exit w0 0\n@@tpu-agent-exit w1 3\n"
    )
    for at in range(0, len(log), 7):  # arrives in arbitrary chunks
        collector.feed(log[at : at + 7])
    collector.flush()
    assert [(e.worker, e.text) for e in events] == [
        (0, "Running entrypoint for job tpu-agent-r-1"),
        (0, "hello from host 0"),
        (1, "hello from host 1"),
    ]
    assert collector.exits == {0: 0, 1: 3}
    assert list(collector.archives) == [0] and "damaged" in collector.download_errors[1][0]
    (folder,) = unpack(collector.archives[0][0][3], tmp_path / "w0")
    assert Path(folder, "rows.json").read_text() == "[1, 2]"
    with pytest.raises(RayError, match="not a plain file in place"):
        unpack(archive("../escape", "x"), tmp_path / "w9")
    assert not (tmp_path / "escape").exists()


@pytest.mark.slow
def test_the_package_is_built_from_the_checked_copies_and_is_the_same_for_the_same_files(
    tmp_path: Path,
) -> None:
    import zipfile

    from tpu_runtime.remote.ray_jobs import package
    from tpu_runtime.remote.snapshot import take
    from tpu_runtime.remote.spec import plan_uploads

    (tmp_path / "wd" / "pkg").mkdir(parents=True)
    (tmp_path / "wd" / "train.py").write_text("print(1)\n")
    (tmp_path / "wd" / "pkg" / "m.py").write_text("X = 2\n")
    uploads = plan_uploads([(tmp_path / "wd", ".")])
    first = take(uploads, tmp_path / "scratch")
    uri, data = package(uploads, first)
    assert package(uploads, take(uploads, tmp_path / "scratch")) == (uri, data)  # byte for byte
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == {
            "pkg/m.py": b"X = 2\n",
            "train.py": b"print(1)\n",
        }
    forged = (uploads[0].model_copy(update={"sha256": "0" * 64}), *uploads[1:])  # not what the copy holds
    with pytest.raises(RayError, match="changed while it was packed"):
        package(forged, first)
    first.close()
