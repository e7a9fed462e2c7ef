"""`tpu-agent onboard` end to end, as a user runs it: real child process, real op table, real output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.subprocess_support import run_text

EXAMPLE = REPO / "examples" / "tiny_gpt.py"


def _cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return run_text(
        [sys.executable, "-m", "tpu_runtime.cli.app", *args],
        cwd=cwd,
        timeout=300,
    )


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("report")
    done = _cli(
        "onboard",
        str(EXAMPLE),
        "--json",
        "--batch",
        "8",
        "--seq",
        "64",
        "--md",
        str(out / "r.md"),
        "--html",
        str(out / "r.html"),
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), out


@pytest.mark.slow
def test_json_schema(example_report: tuple[dict[str, Any], Path]) -> None:
    report, _ = example_report
    assert "no network" in report["isolation"] and "could read and write the files" in report["isolation"]
    assert report["schema_version"] == 1
    for op in report["ops"]:
        assert set(op) >= {"op", "phase", "count", "status", "module", "source"}
        assert op["phase"] in ("forward", "backward")
        assert op["status"] in ("supported", "composite", "cpu_variant", "missing")
        assert "verified" not in op["detail"]
    assert report["missing"] == sorted(
        {o["op"] for o in report["ops"] + report["tpu_ops"] if o["status"] == "missing"}
    )
    assert set(report["preflight"]["generations"]) == {"v5e", "v5p", "v6e", "tpu7x"}
    assert report["serving"]["path"] == "torch-compile"
    assert report["numerics"]["first_divergent_layer"] is None
    assert report["numerics"]["device_check"].startswith("not run")


@pytest.mark.slow
def test_example_findings_point_at_the_source(example_report: tuple[dict[str, Any], Path]) -> None:
    report, _ = example_report
    risks = {(r["kind"], r["op"]): r for r in report["risks"]}
    assert risks[("dynamic_shape", "aten::nonzero")]["source"] == "tiny_gpt.py:56"
    assert ("host_sync", "aten::_local_scalar_dense") in risks or (
        "python_control_flow",
        "aten::_local_scalar_dense",
    ) in risks
    ops = {(o["op"], o["phase"]): o for o in report["ops"]}
    sdpa = ops[("aten::_scaled_dot_product_flash_attention_for_cpu", "forward")]
    assert sdpa["status"] == "cpu_variant" and sdpa["tpu_op"] and sdpa["source"] == "tiny_gpt.py:27"
    assert ops[("aten::embedding_dense_backward", "backward")]["source"] == "tiny_gpt.py:59"
    # with torch_tpu installed the forward is also traced as TorchTPU routes it
    tpu_ops = {o["op"] for o in report["tpu_ops"]}
    assert "aten::linear" in tpu_ops


@pytest.mark.slow
def test_preflight_scales_with_batch(example_report: tuple[dict[str, Any], Path]) -> None:
    report, _ = example_report
    breakdown = report["preflight"]["breakdown"]
    assert breakdown["batch"] == 8 and breakdown["seq"] == 64
    # recognised as a decoder LM by behaviour: KV cache sized, position limit read, no warning at 64
    assert report["model"]["is_decoder_lm"] and "causal" in report["model"]["decoder_lm_evidence"]
    assert report["model"]["position_limit"] == 64
    assert breakdown["kv_cache"] == 2 * 4 * 128 * 8 * 64 * 4
    assert not any("position limit" in n for n in report["notes"])
    assert breakdown["weights"] == report["model"]["parameter_bytes"]
    assert breakdown["optimizer_state"] == 8 * report["model"]["parameters"]


@pytest.mark.slow
def test_seq_past_the_position_limit_is_a_warning() -> None:
    done = _cli("onboard", str(EXAMPLE), "--json", "--seq", "256", "--no-numerics", "--xla", "none")
    assert done.returncode == 0, done.stderr
    notes = json.loads(done.stdout)["notes"]
    assert any("--seq 256 exceeds the model's position limit of 64" in n for n in notes)


@pytest.mark.slow
def test_markdown_and_html_written(example_report: tuple[dict[str, Any], Path]) -> None:
    _, out = example_report
    md = (out / "r.md").read_text()
    assert "aten::nonzero" in md and "v6e" in md
    html = (out / "r.html").read_text()
    assert html.count("<svg") == 3


@pytest.mark.slow
def test_model_with_missing_op(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        class Robust(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(8, 8)
            def forward(self, x):
                h = self.fc(x)
                return h - torch.nansum(h, dim=-1, keepdim=True)
        def get_model(): return Robust()
        def get_inputs(): return (torch.randn(4, 8),)
        """
    )
    done = _cli("onboard", str(path), "--json", "--no-numerics")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "aten::nansum" in report["missing"]
    use = next(o for o in report["ops"] if o["op"] == "aten::nansum")
    assert use["source"] == "model.py:9" and use["module"] == "(model)"
    kinds = {r["kind"] for r in report["remedies"] if r["op"] == "aten::nansum"}
    assert {"rewrite", "cpu_fallback"} <= kinds
    assert report["numerics"] is None and any("numerics not run" in n for n in report["notes"])


@pytest.mark.slow
def test_failing_model_one_line_and_debug(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        def get_model():
            raise ImportError("my_private_package is not installed")
        def get_inputs(): return ()
        """
    )
    done = _cli("onboard", str(path))
    assert done.returncode == 1
    assert "my_private_package is not installed" in done.stderr
    assert "Traceback" not in done.stderr
    debug = _cli("onboard", str(path), "--debug")
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = _cli("onboard", str(tmp_path / "nope.py"))
    assert done.returncode == 2 and "no such file" in done.stderr


def test_front_end_does_not_import_torch() -> None:
    """The CLI process stays light: torch (and torch_tpu's autoload) only run in the sandboxed child."""
    code = (
        "import sys, tpu_runtime.cli.app, tpu_runtime.onboard.steps, tpu_runtime.onboard.coverage, "
        "tpu_runtime.onboard.remedies, tpu_runtime.onboard.risks, tpu_runtime.onboard.preflight, "
        "tpu_runtime.onboard.serving, tpu_runtime.cli.render.onboard.terminal; "
        "print('torch' in sys.modules)"
    )
    done = run_text([sys.executable, "-c", code], check=True)
    assert done.stdout.strip() == "False"


def test_ops_show() -> None:
    done = _cli("ops", "show", "aten::nansum", "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["status"] == "missing" and payload["remedies"]
    supported = json.loads(_cli("ops", "show", "addmm", "--json").stdout)
    assert supported["status"] == "supported" and "registered in torch_tpu" in supported["detail"]


@pytest.mark.slow
@pytest.mark.needs_torch_tpu
def test_xla_memory_beside_the_estimate(write_model: Callable[..., Path]) -> None:
    pytest.importorskip("torch_tpu", reason="needs torch_tpu and libtpu (the 'tpu' extra)")
    path = write_model(
        """
        import torch
        from torch import nn
        def get_model():
            return nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64), nn.LayerNorm(64))
        def get_inputs():
            return (torch.randn(4, 64),)
        """
    )
    done = _cli("onboard", str(path), "--json", "--no-numerics", "--batch", "512")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    fits = report["preflight"]["generations"]
    weights = report["preflight"]["breakdown"]["weights"]
    for generation in ("v5e", "v5p", "v6e", "tpu7x"):
        assert fits[generation]["xla_bytes"] >= weights + 512 * 64 * 4  # weights and the batch-512 input
    assert "compile-only topology" in report["preflight"]["xla_note"]


def _cli_home(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with a fresh tpu-agent home (an empty targets file)."""
    env = {**os.environ, "TPU_AGENT_HOME": str(tmp_path / "home"), "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
    return run_text(
        [sys.executable, "-m", "tpu_runtime.cli.app", *args],
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize(
    "args",
    [
        ("onboard", str(EXAMPLE), "--target", "nope"),
        ("kernel", "check", str(REPO / "tests" / "data" / "kernels" / "axpy.py"), "--target", "nope"),
        (
            "kernel",
            "tune",
            str(REPO / "tests" / "data" / "kernels" / "axpy.py"),
            "--budget",
            "2",
            "--target",
            "nope",
        ),
        ("run", "--target", "nope", "--", "true"),
        ("targets", "check", "nope"),
        ("capture-profile", "--target", "nope", str(EXAMPLE)),
    ],
    ids=["onboard", "kernel-check", "kernel-tune", "run", "targets-check", "capture-profile"],
)
def test_an_unknown_target_is_one_line_and_exit_2_everywhere(tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _cli_home(tmp_path, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no target named 'nope'" in lines[0], done.stderr
    assert done.stdout == ""  # nothing ran: no report, no partial output


@pytest.mark.slow
def test_a_folder_is_explained(tmp_path: Path) -> None:
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("{}")
    done = _cli_home(tmp_path, "onboard", str(checkpoint))
    assert done.returncode == 2
    assert "is a folder" in done.stderr and f"--hf-config {checkpoint}" in done.stderr
    plain = _cli_home(tmp_path, "onboard", str(tmp_path / "home").rsplit("/", 1)[0])
    assert plain.returncode == 2 and "give the model's .py file" in plain.stderr


def test_piped_output_is_not_folded_at_80_columns(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = run_text(
        [sys.executable, "-m", "tpu_runtime.cli.app", "ops", "show", "aten::nonzero"],
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    longest = max(len(line) for line in done.stdout.splitlines())
    assert longest > 100  # a sentence stays on its line instead of folding at 80 columns
