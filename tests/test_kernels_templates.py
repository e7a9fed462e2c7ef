"""Every kernel template passes `kernel check` as shipped, and `kernel new` writes a usable module."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tpu_runtime.kernels.scaffold import TEMPLATES_DIR, template_names

ISSUE_TEMPLATES = {
    "matmul",
    "matmul_bf16",
    "int8_matmul",
    "rmsnorm",
    "softmax",
    "flash_attention",
    "grouped_matmul",
}


@pytest.fixture(scope="module", autouse=True)
def _child_environment() -> None:
    from tpu_runtime.kernels.check import prepare_child

    prepare_child()


def test_templates_cover_the_issue_list() -> None:
    assert set(template_names()) >= ISSUE_TEMPLATES


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ISSUE_TEMPLATES))
def test_template_passes_the_cpu_checks(name: str) -> None:
    from tpu_runtime.kernels.check import CheckOptions, run_check
    from tpu_runtime.kernels.convention import load_kernel_module

    path = TEMPLATES_DIR / f"{name}.py"
    km = load_kernel_module(path)
    report = run_check(km, CheckOptions(file=str(path), stages=["correctness", "honesty", "lowering"]))
    problems = [(s.stage, s.message) for s in report.stages if s.verdict not in ("pass", "not_run")]
    assert report.verdict == "pass", problems
    correctness = report.stage("correctness")
    assert correctness is not None
    assert len(correctness.cases) == len(km.shapes) * len(km.dtypes)
    assert all(c.max_scaled_error is not None and c.max_scaled_error <= 1.0 for c in correctness.cases)
    honesty = report.stage("honesty")
    assert honesty is not None and any("held-out shape" in d and "passes" in d for d in honesty.details)


@pytest.mark.parametrize("name", sorted(ISSUE_TEMPLATES))
def test_template_inputs_are_random_and_fresh(name: str) -> None:
    from tpu_runtime.kernels.convention import load_kernel_module
    from tpu_runtime.kernels.correctness import make_case_inputs, rng_for

    km = load_kernel_module(TEMPLATES_DIR / f"{name}.py")
    shape, dtype = km.shapes[0], km.dtypes[0]
    first = make_case_inputs(km, rng_for(1, 0), shape, dtype)
    second = make_case_inputs(km, rng_for(2, 0), shape, dtype)
    for a, b in zip(first, second, strict=True):
        values = np.asarray(a).astype(np.float64)
        assert values.size > 1 and np.unique(values).size > 1, "an input is constant"
        if values.size > 16:
            assert not np.array_equal(np.asarray(a), np.asarray(b)), "two seeds gave the same input"


@pytest.mark.slow
def test_template_compiles_with_a_roofline_estimate() -> None:
    from tpu_runtime.kernels.check import CheckOptions, run_check
    from tpu_runtime.kernels.convention import load_kernel_module

    path = TEMPLATES_DIR / "matmul_bf16.py"
    km = load_kernel_module(path)
    options = CheckOptions(file=str(path), stages=["compile"], generations=["v6e"])
    report = run_check(km, options)
    stage = report.stage("compile")
    assert stage is not None and stage.verdict == "pass", stage.message if stage else report
    (v6e,) = stage.generations
    m, k, n = (km.target_shape[d] for d in ("m", "k", "n"))
    assert v6e.flops == 2 * m * k * n  # XLA's cost analysis of the kernel's pl.CostEstimate
    minimum_traffic = 2 * (m * k + k * n + m * n)  # bf16: every operand moved at least once
    assert v6e.hbm_traffic_bytes is not None and v6e.hbm_traffic_bytes > minimum_traffic
    bm, bn, bk = (km.defaults[p] for p in ("block_m", "block_n", "block_k"))
    # double-buffered bf16 input and output blocks plus the float32 accumulator
    assert v6e.vmem_bytes == 2 * 2 * (bm * bk + bk * bn + bm * bn) + 4 * bm * bn
    assert v6e.estimate_seconds is not None and v6e.estimate_seconds > 0
    assert v6e.bound in ("compute", "memory", "overhead")
    assert v6e.estimate_seconds >= max(v6e.flops / v6e.peak_flops, v6e.hbm_traffic_bytes / v6e.hbm_bandwidth)
    assert math.isclose(v6e.peak_flops or 0, 918e12)


def test_kernel_new_writes_a_module_that_follows_the_convention(tmp_path: Path) -> None:
    from tpu_runtime.cli.app import app
    from tpu_runtime.kernels.convention import load_kernel_module

    runner = CliRunner()
    result = runner.invoke(app, ["kernel", "new", "my_norm", "--template", "rmsnorm", "--dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    written = tmp_path / "my_norm.py"
    assert written.read_text().endswith((TEMPLATES_DIR / "rmsnorm.py").read_text())
    for part in (
        "kernel(",
        "reference(",
        "make_inputs(",
        "SHAPES",
        "SPACE",
        "DEFAULTS",
        "tpu-agent kernel check",
    ):
        assert part in result.output
    km = load_kernel_module(written)
    assert km.space and km.defaults and km.shapes

    again = runner.invoke(app, ["kernel", "new", "my_norm", "--template", "rmsnorm", "--dir", str(tmp_path)])
    assert again.exit_code == 2 and "already exists" in again.output
    unknown = runner.invoke(app, ["kernel", "new", "x", "--template", "nope", "--dir", str(tmp_path)])
    assert unknown.exit_code == 2 and "matmul_bf16" in unknown.output
    listing = runner.invoke(app, ["kernel", "new", "--list", "--json"])
    assert listing.exit_code == 0 and "grouped_matmul" in listing.output
