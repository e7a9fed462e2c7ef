"""`tpu-agent doctor` names the environment hazards of this machine and the switches that remove them."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tpu_runtime.doctor import run_doctor

HAS_LIBTPU = importlib.util.find_spec("libtpu") is not None
HAS_TORCH_TPU = importlib.util.find_spec("torch_tpu") is not None
SAFE = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def _by_name(environ: dict[str, str], tpu_vm: bool) -> dict[str, str]:
    return {c.name: c.status for c in run_doctor(environ, tpu_vm=tpu_vm).checks}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TPU_AGENT_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.skipif(not HAS_LIBTPU, reason="libtpu is not installed (the 'tpu' extra)")
def test_off_a_tpu_vm_the_metadata_query_is_a_problem_with_its_switch() -> None:
    report = run_doctor({}, tpu_vm=False)
    assert [c.name for c in report.problems] == ["metadata server"]
    assert "export TPU_SKIP_MDS_QUERY=1" in report.exports and "export JAX_PLATFORMS=cpu" in report.exports
    assert not run_doctor(SAFE, tpu_vm=False).problems
    assert run_doctor(SAFE, tpu_vm=False).exports == []


@pytest.mark.skipif(not HAS_LIBTPU, reason="libtpu is not installed (the 'tpu' extra)")
def test_on_a_tpu_vm_skipping_the_metadata_server_is_the_mistake() -> None:
    assert _by_name({"TPU_SKIP_MDS_QUERY": "1"}, tpu_vm=True)["metadata server"] == "warn"
    assert _by_name({}, tpu_vm=True)["metadata server"] == "ok"
    assert "JAX platform" not in _by_name({}, tpu_vm=True)  # JAX should find the TPU there


@pytest.mark.skipif(not HAS_TORCH_TPU, reason="torch_tpu is not installed (the 'tpu' extra)")
def test_torch_tpu_autoload_is_flagged_until_switched_off() -> None:
    assert _by_name({}, tpu_vm=False)["torch_tpu autoload"] == "warn"
    assert _by_name({"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}, tpu_vm=False)["torch_tpu autoload"] == "ok"


def test_a_state_folder_others_can_read_is_a_problem(home: Path) -> None:
    home.chmod(0o755)
    assert _by_name(SAFE, tpu_vm=False)["state folder"] == "problem"
    home.chmod(0o700)
    assert _by_name(SAFE, tpu_vm=False)["state folder"] == "ok"


def _doctor(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tpu_runtime.cli.app", "doctor", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )


@pytest.mark.slow
@pytest.mark.skipif(not HAS_LIBTPU, reason="libtpu is not installed (the 'tpu' extra)")
def test_the_cli_judges_the_persons_environment_not_the_defaults_it_applies_itself() -> None:
    bare = {k: v for k, v in os.environ.items() if k not in SAFE}
    found = _doctor(bare)
    assert found.returncode == 1, found.stderr
    checks = {c["name"]: c for c in json.loads(found.stdout)["checks"]}
    assert checks["metadata server"]["status"] == "problem"
    assert checks["metadata server"]["set_env"] == {"TPU_SKIP_MDS_QUERY": "1"}
    fine = _doctor({**bare, **SAFE})
    assert fine.returncode == 0, fine.stdout
