"""Onboarding's device numerics: the plan, the runner it uploads, the approval gate, and a real run.

There is no TPU here. Where the runner must compute, it runs with its one test hook,
`TPU_AGENT_TEST_DEVICE=cpu`, which puts the "device" runs on the CPU and labels every row "cpu (test)";
these tests check that label wherever a result appears, so a test run can never pass for a TPU result.
The remote side is real: sshd processes on loopback (tests/remote_support/sshd.py) log in a non-root
user, who runs the runner with the system Python and this environment's site-packages.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.remote_support import person
from tests.remote_support.engine import engine_at
from tests.remote_support.sshd import SYSTEM_PYTHON, SshdFarm, python_farm_or_skip
from tpu_runtime.onboard.device_check import (
    LOADER_NAME,
    RUNNER_NAME,
    RUNNER_SOURCE,
    TEST_DEVICE_ENV,
    DeviceRun,
    DeviceRunError,
    device_numerics_check,
    device_numerics_plan,
    merge_worker_rows,
    read_device_rows,
    read_device_run,
)
from tpu_runtime.onboard.job import OnboardRequest, run_onboard
from tpu_runtime.onboard.report import DEVICE_CHECK_NOT_RUN, LayerError, NumericsReport
from tpu_runtime.remote.approvals import Approval, RunRequest
from tpu_runtime.remote.engine import RemoteEngine
from tpu_runtime.remote.gated import file_request

SITE_PACKAGES = sysconfig.get_paths()["purelib"]
LOADER = Path(__file__).resolve().parents[1] / "tpu_runtime" / "onboard" / "loader.py"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBn2c7b0GJ0lzgaFfR9Ti6kC4iyHBnzvYvX2m5n5k2rx"
MODES = ("default", "high", "highest", "bf16")
BOUNDS = {"default": 0.03125, "high": 1e-3, "highest": 1e-4, "bf16": 0.125}

MODEL = """
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(48, 96)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(96, 24)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def get_model():
    torch.manual_seed(0)
    return Net()


def get_inputs():
    torch.manual_seed(1)
    return (3.0 * torch.randn(6, 48),)
"""


def _test_env() -> dict[str, str]:
    """The environment of a test run: the test hook, plus what the non-root user needs to import torch."""
    return {
        TEST_DEVICE_ENV: "cpu",
        "PYTHONPATH": SITE_PACKAGES,
        "TPU_SKIP_MDS_QUERY": "1",
        "JAX_PLATFORMS": "cpu",
        "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
    }


@pytest.fixture
def model_file(write_model: Callable[[str, str], Path]) -> Path:
    return write_model(MODEL, "src/net.py")


def _engine(home: Path) -> RemoteEngine:
    return engine_at(home)


def _numerics(rows: list[LayerError]) -> NumericsReport:
    return NumericsReport(
        modes=list(MODES),
        rows=rows,
        first_divergent_layer=None,
        device_check=DEVICE_CHECK_NOT_RUN,
    )


def _cpu_rows() -> list[LayerError]:
    """Rows as the CPU comparison reports them, with bounds twice the defaults (they must travel as is)."""
    return [
        LayerError.model_validate(
            {"layer": layer, "mode": mode, "max_abs": 1e-3, "rel": 1e-3, "cosine": 1.0, "ok": True}
            | {"tolerance": 2 * BOUNDS[mode]}
        )
        for layer in ("fc1", "(model)")
        for mode in MODES
    ]


# --- the plan -----------------------------------------------------------------------------------------


def test_plan_is_the_exact_command_uploads_and_download(tmp_path: Path, model_file: Path) -> None:
    plan = device_numerics_plan(
        model_file, "net:build", MODES, tolerances=BOUNDS, staging_dir=tmp_path / "staging"
    )
    assert plan.device == "tpu" and plan.work.env == {}
    assert plan.work.command == (
        "python3",
        RUNNER_NAME,
        "--model",
        "net.py",
        "--entry",
        "net:build",
        "--modes",
        "default,high,highest,bf16",
        "--tolerances",
        "default=0.03125,high=0.001,highest=0.0001,bf16=0.125",
        "--out",
        "device_numerics",
    )
    assert plan.shell.startswith(f"python3 {RUNNER_NAME} --model net.py ")
    dests = [dest for _, dest in plan.work.uploads]
    assert dests == [RUNNER_NAME, LOADER_NAME, "net.py"]
    sources = {dest: Path(source) for source, dest in plan.work.uploads}
    assert sources[RUNNER_NAME].read_text() == RUNNER_SOURCE  # the staged runner is byte for byte the source
    assert sources[LOADER_NAME].read_bytes() == LOADER.read_bytes()  # the same loader as onboarding's
    assert plan.work.downloads == ("device_numerics",)
    assert "torch.tpu.Precision.HIGH" in plan.precision["high"] and "bfloat16" in plan.precision["bf16"]
    tested = device_numerics_plan(
        model_file, None, ("default",), tolerances=BOUNDS, env=_test_env(), staging_dir=tmp_path / "s"
    )
    assert tested.device == "cpu (test)" and tested.work.env[TEST_DEVICE_ENV] == "cpu"
    assert "--entry" not in tested.work.command and tested.work.command[-5] == "default"


def test_bad_plans_are_one_line_errors(tmp_path: Path, model_file: Path) -> None:
    staging = tmp_path / "s"
    cases: list[tuple[dict[str, Any], str]] = [
        ({"model_file": tmp_path / "missing.py"}, "no such model file"),
        ({"out_dir": "../up"}, "output folder"),
        ({"python": "python3 -S"}, "one interpreter"),
        ({"modes": ("default", "fp8")}, "unknown precision mode"),
        ({"modes": ()}, "no precision modes"),
        ({"tolerances": {"default": 0.1}}, "no tolerance for mode(s): high"),
    ]
    for override, message in cases:
        args: dict[str, Any] = {
            "model_file": model_file,
            "entry": None,
            "modes": MODES,
            "tolerances": BOUNDS,
            "staging_dir": staging,
            **override,
        }
        with pytest.raises(DeviceRunError, match=message.replace("(", r"\(").replace(")", r"\)")) as info:
            device_numerics_plan(**args)
        assert "\n" not in str(info.value)
    clash = model_file.with_name(RUNNER_NAME)
    clash.write_text(MODEL)
    with pytest.raises(DeviceRunError, match="same name"):
        device_numerics_plan(clash, None, MODES, tolerances=BOUNDS, staging_dir=staging)


def test_the_runner_uses_the_precision_api_torch_tpu_defines() -> None:
    spec = importlib.util.find_spec("torch_tpu")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch_tpu is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    device_module = (root / "_internal" / "device" / "_device_module.py").read_text()
    precision = (root / "_internal" / "precision" / "precision.py").read_text()
    assert "precision = _precision_module.precision" in device_module  # torch.tpu.precision
    assert '"Precision"' in device_module  # torch.tpu.Precision
    for level in ("DEFAULT", "HIGH", "HIGHEST"):
        assert f"Precision.{level}" in precision
        assert f"torch.tpu.Precision.{level}" in RUNNER_SOURCE
    assert 'torch.device("tpu")' in RUNNER_SOURCE


# --- the runner, run here ------------------------------------------------------------------------------


def _stage_runner(folder: Path, model_file: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RUNNER_NAME).write_text(RUNNER_SOURCE)
    (folder / LOADER_NAME).write_bytes(LOADER.read_bytes())
    (folder / model_file.name).write_text(model_file.read_text())


def _run_runner(folder: Path, env: dict[str, str], *modes: str) -> subprocess.CompletedProcess[str]:
    bounds = ",".join(f"{m}={BOUNDS[m]}" for m in modes)
    argv = [sys.executable, RUNNER_NAME, "--model", "net.py", "--modes", ",".join(modes)]
    clean = {k: v for k, v in os.environ.items() if k != TEST_DEVICE_ENV}
    return subprocess.run(
        [*argv, "--tolerances", bounds, "--out", "out"],
        cwd=folder,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_runner_rows_match_the_cpu_comparison_in_test_mode(tmp_path: Path, model_file: Path) -> None:
    from tpu_runtime.onboard.loader import load_model
    from tpu_runtime.onboard.numerics import compare_layers

    folder = tmp_path / "vm"
    _stage_runner(folder, model_file)
    done = _run_runner(folder, {TEST_DEVICE_ENV: "cpu"}, *MODES)
    assert done.returncode == 0, done.stderr
    run = read_device_run(folder / "out")
    assert run.device == "cpu (test)" and run.errors == [] and run.convention.startswith("get_model")
    rows = read_device_rows(folder / "out")
    loaded = load_model(model_file)
    local = compare_layers(loaded.model, loaded.args, MODES)
    assert [(r.layer, r.mode) for r in rows] == [(r.layer, r.mode) for r in local.rows]
    by_key = {(r.layer, r.mode): r for r in local.rows}
    for row in rows:
        if row.mode in ("highest", "bf16"):  # the same arithmetic on the same CPU: the same error
            assert row.rel == pytest.approx(by_key[(row.layer, row.mode)].rel, rel=1e-6, abs=1e-12)
    # On the test CPU nothing rounds f32 matmul operands to bf16: DEFAULT is plain f32, far below the
    # emulated TPU DEFAULT. The runner reports what ran; it never emulates a TPU result.
    fc1 = {r.mode: r for r in rows if r.layer == "fc1"}
    assert fc1["default"].rel == pytest.approx(fc1["highest"].rel)
    assert fc1["default"].rel < by_key[("fc1", "default")].rel / 100


@pytest.mark.slow
def test_runner_without_a_tpu_fails_and_claims_nothing(tmp_path: Path, model_file: Path) -> None:
    folder = tmp_path / "vm"
    _stage_runner(folder, model_file)
    done = _run_runner(folder, {"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, "default")
    assert done.returncode == 2
    run = read_device_run(folder / "out")
    assert run.device == "tpu" and run.rows == []
    assert run.errors and run.errors[0].startswith("device setup failed")
    wrong = _run_runner(folder, {TEST_DEVICE_ENV: "gpu"}, "default")
    assert wrong.returncode == 2 and "only test device is cpu" in read_device_run(folder / "out").errors[0]


def test_merge_keeps_the_worst_row_of_every_worker() -> None:
    def row(layer: str, rel: float, ok: bool = True) -> LayerError:
        return LayerError(
            layer=layer, mode="default", max_abs=rel, rel=rel, cosine=1.0, tolerance=0.03, ok=ok
        )

    a = DeviceRun(device="tpu", rows=[row("fc1", 0.01), row("fc2", 0.02)])
    b = DeviceRun(device="tpu", rows=[row("fc1", 0.02), row("fc2", 0.01, ok=False), row("extra", 0.0)])
    merged = merge_worker_rows({1: b, 0: a})
    assert [(r.layer, r.rel, r.ok) for r in merged] == [
        ("fc1", 0.02, True),
        ("fc2", 0.01, False),
        ("extra", 0.0, True),
    ]


# --- the approval gate, without running anything -------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    target = {
        "kind": "hosts",
        "user": "alice",
        "hosts": [{"name": "w0", "host": "10.0.0.2", "host_key": KEY}],
    }
    (tmp_path / "home" / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lab": target}}))
    return tmp_path / "home"


def _request(model_file: Path, **over: Any) -> OnboardRequest:
    return OnboardRequest(model_file=model_file, xla="none", fake_tpu=False, **over)


def test_no_target_says_so(home: Path, model_file: Path) -> None:
    check = device_numerics_check(_request(model_file), _numerics(_cpu_rows()), engine=_engine(home))
    assert check.status == "not_run" and check.message.startswith("not run: no TPU target is configured")
    assert _engine(home).list_requests() == []


def test_without_an_approver_the_request_waits_and_is_not_filed_twice(home: Path, model_file: Path) -> None:
    engine = _engine(home)
    first = device_numerics_check(_request(model_file, target="lab"), _numerics(_cpu_rows()), engine=engine)
    (pending,) = engine.list_requests(("pending",))
    assert first.status == "waiting" and first.request_id == pending.id and first.rows == []
    hint = f"(approve with `tpu-agent approvals approve {pending.id}`)"
    assert first.message.startswith(f"waiting for approval: request {pending.id} {hint}")
    assert pending.requested_by == "onboard" and engine.approval_for(pending.id) is None
    assert [u.dest for u in pending.spec.uploads] == [RUNNER_NAME, LOADER_NAME, "net.py"]
    assert pending.spec.command[pending.spec.command.index("--tolerances") + 1].startswith(
        "default=0.0625,high=0.002,"
    )
    again = device_numerics_check(_request(model_file, target="lab"), _numerics(_cpu_rows()), engine=engine)
    assert again.request_id == pending.id and len(engine.list_requests()) == 1
    model_file.write_text(MODEL + "\n# edited\n")  # other bytes: a new request, never the old approval
    edited = device_numerics_check(_request(model_file, target="lab"), _numerics(_cpu_rows()), engine=engine)
    assert edited.request_id != pending.id and len(engine.list_requests(("pending",))) == 2


def test_a_denied_request_is_reported_denied(home: Path, model_file: Path) -> None:
    engine = _engine(home)
    seen: list[RunRequest] = []

    def person_says_no(eng: RemoteEngine, request: RunRequest) -> Approval | None:
        seen.append(request)
        eng.deny(request.id, "tester@tty", "not today")
        return None

    check = device_numerics_check(
        _request(model_file, target="lab"), _numerics(_cpu_rows()), person_says_no, engine=engine
    )
    assert (
        check.status == "denied" and check.message == f"denied: request {seen[0].id} was denied by tester@tty"
    )
    assert engine.get_request(seen[0].id).state == "denied"


def test_a_bad_target_is_a_not_run_line(home: Path, model_file: Path) -> None:
    check = device_numerics_check(
        _request(model_file, target="nope"), _numerics(_cpu_rows()), engine=_engine(home)
    )
    assert check.status == "not_run" and check.message.startswith("not run: target nope: ")
    assert "nope" in check.message and "\n" not in check.message


@pytest.mark.slow
def test_cli_onboard_target_files_the_request_and_reports_it(home: Path, model_file: Path) -> None:
    from tpu_runtime.cli.app import app

    result = CliRunner().invoke(
        app, ["onboard", str(model_file), "--json", "--xla", "none", "--target", "lab"]
    )
    assert result.exit_code == 0, result.output
    numerics = json.loads(result.stdout)["numerics"]
    (pending,) = _engine(home).list_requests(("pending",))
    assert numerics["device_check"].startswith(f"waiting for approval: request {pending.id}")
    assert numerics["device_rows"] == [] and pending.spec.target == "lab"


def test_the_terminal_prompt_approves_or_denies(
    home: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tpu_runtime.cli import approval_prompt

    engine = _engine(home)
    person.make_key(engine.approver_path)
    # the person types the passphrase at the prompt (read from /dev/tty in real life)
    monkeypatch.setattr(approval_prompt, "read_passphrase", lambda prompt: person.PASSPHRASE)
    monkeypatch.setattr(approval_prompt, "on_terminal", lambda: False)
    assert approval_prompt.tty_approver() is None  # no terminal, no prompt: the request waits
    monkeypatch.setattr(approval_prompt, "on_terminal", lambda: True)
    plan = device_numerics_plan(model_file, None, MODES, tolerances=BOUNDS, staging_dir=home / "s")
    for answer, approved in (("yes", True), ("no", False)):
        monkeypatch.setattr(approval_prompt.typer, "prompt", lambda *a, answer=answer, **k: answer)
        request = file_request(engine, "lab", plan.work, requested_by="onboard")
        ask = approval_prompt.tty_approver()
        assert ask is not None
        approval = ask(engine, request)
        state = engine.get_request(request.id).state
        assert (approval is not None, state) == (approved, "approved" if approved else "denied")


# --- approved and run against real sshd workers ----------------------------------------------------------


@pytest.fixture(scope="module")
def farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdFarm]:
    yield from python_farm_or_skip(4, tmp_path_factory.mktemp("farm"), "the runner", "torch")


@pytest.mark.slow
def test_approved_device_check_runs_on_four_workers_and_merges(
    farm: SshdFarm, tmp_path: Path, model_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("TPU_AGENT_HOME", str(home))
    (home / "targets.yaml").write_text(yaml.safe_dump({"targets": {"lo": farm.hosts_target()}}))
    person.share_key(person.farm_key_dir(farm.session), home)
    asked: list[str] = []

    def person_says_yes(engine: RemoteEngine, request: RunRequest) -> Approval | None:
        asked.append(request.id)
        assert engine.approval_for(request.id) is None  # nothing ran or was approved before the person
        return person.approve(engine, request.id, via="test")

    request = _request(
        model_file,
        target="lo",
        device_python=str(SYSTEM_PYTHON),
        device_env=_test_env(),
        device_time_limit_s=300,
    )
    report = run_onboard(request, approver=person_says_yes)
    numerics = report.numerics
    assert numerics is not None and len(asked) == 1
    check = numerics.device_check
    assert check.startswith("ran on target lo (workers 0:w0, 1:w1, 2:w2, 3:w3) after approval at "), check
    assert (
        "device: cpu (test)" in check
        and "a test run, not a TPU result" in check
        and f"request {asked[0]}" in check
        and "problems" not in check
    )
    assert [(r.layer, r.mode) for r in numerics.device_rows] == [(r.layer, r.mode) for r in numerics.rows]
    cpu = {(r.layer, r.mode): r for r in numerics.rows}
    fc1 = {r.mode: r for r in numerics.device_rows if r.layer == "fc1"}
    assert fc1["default"].rel < cpu[("fc1", "default")].rel / 100  # measured there, not copied from here
    engine = _engine(home)
    state = engine.state_path / "downloads" / asked[0]
    for worker in range(4):
        run = read_device_run(state / f"w{worker}" / "device_numerics", worker)
        assert (
            run.device == "cpu (test)" and run.worker == str(worker) and len(run.rows) == len(numerics.rows)
        )
    # Running onboard again reuses the finished request: no new request, nobody asked again.
    again = device_numerics_check(request, numerics, lambda e, r: pytest.fail("asked again"), engine=engine)
    assert again.status == "ran" and again.request_id == asked[0] and again.rows == numerics.device_rows
    assert len(engine.list_requests()) == 1
    kinds = [row.kind for row in _audit(engine, asked[0])]
    assert kinds[:3] == ["request", "approved", "start"] and "result" in kinds


def _audit(engine: RemoteEngine, request_id: str) -> list[Any]:
    from tpu_runtime.remote import audit

    with engine.store.read() as conn:
        rows = audit.rows(conn, None, 1000)
    return [r for r in rows if r.subject == request_id or r.payload.get("request") == request_id]
