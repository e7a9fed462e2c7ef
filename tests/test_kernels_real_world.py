"""`kernel check` on kernels written the way users write them, not the way our templates are: each test
covers one way the checker used to blame the kernel (or the wrong line) for something outside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kernel_support import KERNELS, all_pass, check_file, stage_with, verdicts
from tpu_runtime.kernels.report import KernelCheckReport


@pytest.fixture(scope="module", autouse=True)
def _child_environment() -> None:
    from tpu_runtime.kernels.check import prepare_child

    prepare_child()


def check(name: str, stages: list[str], **options: object) -> KernelCheckReport:
    options.setdefault("seed", 7)
    return check_file(KERNELS / f"{name}.py", stages, **options)


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), start=1) if text in line)


@pytest.mark.slow
def test_lowering_runs_with_a_tpu_as_the_default_device() -> None:
    """A kernel whose lowering asks for the TPU generation lowers and compiles (it used to fail lowering with
    'Unsupported TPU device kind: cpu', and every later stage was skipped)."""
    report = check("sign_kernel", ["correctness", "lowering", "compile", "torch"], generations=["v5e"])
    assert verdicts(report) == all_pass("correctness", "lowering", "compile", "torch"), [
        s.message for s in report.stages
    ]
    lowering = report.stage("lowering")
    assert lowering is not None and "v5e as the default device" in lowering.message


def test_an_interpreter_limit_is_not_a_kernel_failure() -> None:
    report = check("reshaped_ref", ["correctness", "honesty", "lowering"])
    correctness = stage_with(report, "correctness", "skip")
    assert "cannot be checked in interpret mode" in correctness.message
    assert "AttributeError" in correctness.message and "interpreter" in correctness.message
    assert "the kernel raised" not in correctness.message
    assert "lowering, compile, PyTorch" in correctness.message
    assert verdicts(report)["lowering"] == "pass"
    assert report.verdict == "unchecked"
    honesty = report.stage("honesty")
    assert honesty is not None and any("held-out shape: not run" in d for d in honesty.details)


@pytest.mark.slow
def test_a_reference_that_cannot_be_traced_runs_eagerly() -> None:
    report = check("ragged_reference", ["correctness", "honesty", "compile", "torch"], generations=["v6e"])
    assert verdicts(report) == all_pass("correctness", "honesty", "compile", "torch"), [
        s.message for s in report.stages
    ]
    honesty = report.stage("honesty")
    assert honesty is not None and any("its reference cannot be traced" in d for d in honesty.details)


def test_a_reference_that_raises_is_named_as_the_reference(tmp_path: Path) -> None:
    source = (KERNELS / "ragged_reference.py").read_text()
    broken = source.replace("* g)", "* g[None])")  # indexing an int: the reference itself is broken
    path = tmp_path / "broken_reference.py"
    path.write_text(broken)
    from tpu_runtime.kernels.check import CheckOptions, run_check
    from tpu_runtime.kernels.convention import load_kernel_module

    report = run_check(load_kernel_module(path), CheckOptions(file=str(path), stages=["correctness"], seed=1))
    stage = stage_with(report, "correctness", "fail")
    assert "the reference (not the kernel) raised TypeError" in stage.message
    assert f"broken_reference.py:{line_of(path, '* g[None])')}" in stage.message


def test_an_out_of_bounds_read_in_a_helper_module_is_located_there() -> None:
    report = check("oob_in_helper", ["correctness"])
    stage = stage_with(report, "correctness", "fail")
    helper = KERNELS / "segment_helpers.py"
    assert f"segment_helpers.py:{line_of(helper, 'width = bounds_ref')}" in stage.message
    assert "`bounds_ref` (scalar-prefetch parameter 0" in stage.message
    assert "oob_in_helper.py" not in stage.message


def test_two_prefetch_operands_of_equal_shape_are_told_apart() -> None:
    report = check("oob_twin_prefetch", ["correctness"])
    stage = stage_with(report, "correctness", "fail")
    assert "`ends_ref` (scalar-prefetch parameter 1" in stage.message
    assert "starts_ref" not in stage.message
    line = line_of(KERNELS / "oob_twin_prefetch.py", "end = ends_ref")
    assert f"oob_twin_prefetch.py:{line}" in stage.message and "index [4]" in stage.message


def test_a_mismatch_reports_its_statistics() -> None:
    report = check("wrong_values", ["correctness"])
    stage = stage_with(report, "correctness", "fail")
    message = stage.message
    # the last of four 8-row blocks misses its bias: 1024 of 4096 elements
    assert "1024 of 4096 elements (25.0%)" in message
    assert "mean |error|" in message and "max |error|" in message
    assert "worst at (" in message and "24..31 x 0..127" in message
    assert "race detector found no race" in message
    (case,) = stage.cases
    assert case.max_abs_error is not None and case.max_abs_error > 1.0


def test_an_integer_reference_is_exact() -> None:
    report = check("int_add", ["correctness"])
    stage = stage_with(report, "correctness", "pass")
    (case,) = stage.cases
    assert "exact integer reference" in case.message and "float64" not in case.message
    assert case.tolerance == "exact"


def test_roofline_counts_the_kernels_own_work_at_its_dtype_peak() -> None:
    import math

    from tpu_runtime.chips import get_chip
    from tpu_runtime.kernels.convention import load_kernel_module

    report = check("block_diagonal", ["compile"], generations=["v6e"])
    stage = stage_with(report, "compile", "pass")
    (v6e,) = stage.generations
    target = load_kernel_module(KERNELS / "block_diagonal.py").target_shape
    n, size = target["blocks"] * target["size"], target["size"]
    assert v6e.flops == 2 * n * n * size  # the diagonal blocks only; the dense reference does 2 n^3
    chip = get_chip("v6e")  # f32 operands run at the sheet's f32 peak, not its bf16 one
    assert chip.peak_f32 is not None and chip.peak_f32.value < chip.peak_bf16.value
    f32_peak = float(chip.peak_f32.value) * 1e12
    assert v6e.peak_flops_kind == "f32" and math.isclose(v6e.peak_flops or 0, f32_peak)
    assert v6e.bound in ("compute", "memory")
    # no per-grid-step cost is added to the roofline: the slower of compute and HBM traffic, nothing more
    expected = max(v6e.flops / f32_peak, (v6e.hbm_traffic_bytes or 0) / (v6e.hbm_bandwidth or 1))
    assert v6e.estimate_seconds is not None and math.isclose(v6e.estimate_seconds, expected)
    assert any(e.startswith("FLOPs") for e in v6e.estimates)
    assert any("HBM traffic" in e for e in v6e.estimates)
    assert "at the f32 peak" in v6e.message


def test_a_grid_sized_at_run_time_is_not_zero_steps() -> None:
    report = check("dynamic_grid", ["correctness", "compile"], generations=["v6e"])
    assert verdicts(report)["correctness"] == "pass", [s.message for s in report.stages]
    stage = stage_with(report, "compile", "pass")
    (v6e,) = stage.generations
    assert v6e.grid_steps is None
    assert "grid size known only at run time" in v6e.message and "0 grid steps" not in v6e.message
    assert any("grid size known only at run time" in d for d in stage.details)
    assert not any("0 grid steps" in d for d in stage.details)


def test_flops_are_summed_per_pallas_call_not_taken_from_xla() -> None:
    """One call declares a pl.CostEstimate and one does not: XLA's cost analysis of the program counts the
    first call and the jnp epilogue only; the kernel's FLOPs are the declared figure plus the counted one."""
    from tpu_runtime.kernels.convention import load_kernel_module

    report = check("two_calls", ["compile"], generations=["v6e"])
    stage = stage_with(report, "compile", "pass")
    (v6e,) = stage.generations
    target = load_kernel_module(KERNELS / "two_calls.py").target_shape
    m, k, n = target["m"], target["k"], target["n"]
    assert v6e.flops == 2 * m * k * k + 2 * m * k * n
    assert "pl.CostEstimate (1 of 2 pallas_calls)" in v6e.flops_source
    assert "grid steps it runs (1 of 2 pallas_calls)" in v6e.flops_source
    assert "upper bound" not in v6e.flops_source
    assert any(e.startswith("FLOPs (") and "pl.CostEstimate" in e for e in v6e.estimates)


def test_flops_are_an_upper_bound_only_when_a_branch_skips_matmuls() -> None:
    """jax's matmul puts pl.when around its accumulator's init and store only: the count is exact. Splash
    attention's matmuls sit inside pl.when (it skips masked blocks): the count is an upper bound."""
    import functools

    import jax

    from tpu_runtime.kernels.convention import load_kernel_module
    from tpu_runtime.kernels.introspect import kernel_work
    from tpu_runtime.kernels.lowering import input_avals

    found = {}
    for name in ("matmul", "splash_attention"):
        km = load_kernel_module(KERNELS / "upstream" / f"{name}.py")
        fn = functools.partial(km.kernel, **km.params({}))
        avals = input_avals(km, km.shapes[0], km.dtypes[0])
        work = kernel_work(jax.make_jaxpr(fn)(*avals))
        assert work.total > 0 and work.counted_calls == 1 and work.estimated_calls == 0
        found[name] = work.upper_bound
    assert found == {"matmul": False, "splash_attention": True}
