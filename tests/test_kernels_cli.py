"""`tpu-agent kernel check` end to end: a child process, exit codes, JSON, and stage 5 (PyTorch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tpu_runtime.kernels.scaffold import TEMPLATES_DIR
from tpu_runtime.platform_env import on_tpu_vm

KERNELS = Path(__file__).resolve().parent / "data" / "kernels"
REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "240"}  # wide enough that no message wraps
    return subprocess.run(
        [sys.executable, "-m", "tpu_runtime.cli.app", "kernel", *args],
        capture_output=True,
        text=True,
        env=env,
    )


@pytest.mark.slow
def test_check_json_with_the_pytorch_stage() -> None:
    template = TEMPLATES_DIR / "matmul.py"  # a jax.jit-wrapped kernel, as the templates are
    result = _cli("check", str(template), "--stages", "torch", "--json", "--seed", "7")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    stages = {s["stage"]: s for s in report["stages"]}
    assert set(stages) == {"torch", "timing"}
    torch_stage = stages["torch"]
    assert torch_stage["verdict"] == "pass", torch_stage["message"]
    assert "fake tensors" in torch_stage["message"] and "needs a TPU" in torch_stage["message"]
    assert "torch.tpu.pallas.jax_op" in torch_stage["snippet"] and "block_m=128" in torch_stage["snippet"]
    assert stages["timing"]["verdict"] == "not_run"
    assert "--seed 7" in report["notes"][0]
    # off a TPU VM the stage runs in a process of its own, started before the others, and says so
    ahead = [n for n in report["notes"] if "process of its own" in n]
    assert len(ahead) == (0 if on_tpu_vm() else 1), report["notes"]


@pytest.mark.slow
def test_check_exits_3_when_interpret_mode_cannot_run_the_kernel() -> None:
    result = _cli("check", str(KERNELS / "reshaped_ref.py"), "--stages", "correctness,lowering", "-g", "v6e")
    assert result.returncode == 3, result.stdout + result.stderr
    text = " ".join(result.stdout.split())
    assert "CANNOT CHECK IN INTERPRET MODE" in text and "cannot be checked in interpret mode" in text
    assert "FAIL" not in text


@pytest.mark.slow
def test_check_exits_1_on_a_failing_stage_and_2_on_bad_input() -> None:
    failing = _cli("check", str(KERNELS / "oob_prefetch.py"), "--stages", "correctness")
    assert failing.returncode == 1
    text = " ".join(failing.stdout.split())  # the table wraps long messages
    assert "out-of-bounds read" in text and "FAIL" in text
    assert "starts_ref[i + 1]" in text  # user text is shown literally, not read as console markup
    runner = CliRunner()
    from tpu_runtime.cli.app import app

    missing = runner.invoke(app, ["kernel", "check", "nowhere.py"])
    assert missing.exit_code == 2 and "no such kernel file" in missing.output
    stages = runner.invoke(app, ["kernel", "check", str(KERNELS / "axpy.py"), "--stages", "speed"])
    assert stages.exit_code == 2 and "--stages" in stages.output
    space = runner.invoke(
        app, ["kernel", "tune", str(KERNELS / "axpy.py"), "--budget", "2", "--space", "{bad"]
    )
    assert space.exit_code == 2 and "not valid JSON" in space.output


@pytest.mark.slow
def test_no_torch_leaves_stage_5_out_and_says_so() -> None:
    template = TEMPLATES_DIR / "matmul.py"
    result = _cli("check", str(template), "--stages", "lowering,torch", "--no-torch", "--json", "-g", "v6e")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    stages = {s["stage"]: s for s in report["stages"]}
    assert [s["stage"] for s in report["stages"]] == ["lowering", "torch", "timing"]
    assert stages["lowering"]["verdict"] == "pass", stages["lowering"]["message"]
    assert stages["torch"]["verdict"] == "skip"
    assert "--no-torch" in stages["torch"]["message"]
    assert not any("process of its own" in note for note in report["notes"])  # no PyTorch process ran
