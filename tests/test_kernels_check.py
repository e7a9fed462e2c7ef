"""`kernel check` on planted bugs: each gets the right stage verdict and a message that names the problem.

These call the stage runner in this process (the child process path is covered in
test_kernels_bad_input.py and test_kernels_cli.py), with only the stages each case is about.
"""

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
    return check_file(KERNELS / f"{name}.py", stages, **options)


def line_of(name: str, text: str) -> int:
    lines = (KERNELS / f"{name}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, start=1) if text in line)


@pytest.mark.slow
def test_a_correct_kernel_passes_every_cpu_stage() -> None:
    report = check("axpy", ["correctness", "honesty", "lowering", "compile"], generations=["v6e"])
    assert verdicts(report) == all_pass("correctness", "honesty", "lowering", "compile")
    assert report.verdict == "pass"
    timing = report.stage("timing")
    assert timing is not None and "needs a real TPU" in timing.message


@pytest.mark.slow
def test_off_by_one_past_a_scalar_prefetch_array() -> None:
    report = check("oob_prefetch", ["correctness"])
    stage = stage_with(report, "correctness", "fail")
    message = stage.message
    assert "out-of-bounds read" in message
    assert (
        "`starts_ref` (scalar-prefetch parameter 0" in message
        and "index [4]" in message
        and "last valid index is [3]" in message
    )
    assert f"oob_prefetch.py:{line_of('oob_prefetch', 'starts_ref[i + 1]')}" in message


@pytest.mark.slow
def test_a_block_left_unwritten() -> None:
    report = check("unwritten_block", ["correctness"])
    stage = stage_with(report, "correctness", "fail")
    # the last of four 8-row blocks of a (32, 128) output
    assert "1024 of 4096 elements were never written" in stage.message
    assert "24..31 x 0..127" in stage.message


@pytest.mark.slow
def test_a_data_race() -> None:
    report = check("race", ["correctness"])
    stage = stage_with(report, "correctness", "fail")
    assert "data race on a VMEM buffer" in stage.message
    assert f"race.py:{line_of('race', 'copy.start()')}" in stage.message
    assert f"race.py:{line_of('race', 'buf[...] + 1.0')}" in stage.message


def test_a_kernel_that_calls_the_reference() -> None:
    report = check("calls_reference", ["correctness", "honesty"], held_out=False)
    assert verdicts(report)["correctness"] == "pass"  # the numbers are right: that is the point
    honesty = stage_with(report, "honesty", "fail")
    assert "called the module's reference()" in honesty.message
    assert any("uses `reference`" in d for d in honesty.details)


def test_an_illegal_block_shape_passes_interpret_mode_but_not_lowering() -> None:
    report = check("bad_block_shape", ["correctness", "lowering", "compile"], generations=["v6e"])
    assert verdicts(report) == {
        "correctness": "pass",
        "lowering": "fail",
        "compile": "skip",
        "timing": "not_run",
    }
    lowering = report.stage("lowering")
    assert lowering is not None
    assert "illegal block shape (12, 128)" in lowering.message
    assert "multiples of 8" in lowering.message and "use 8" in lowering.message


def test_too_big_for_vmem_on_one_generation_but_not_another() -> None:
    report = check("vmem_hog", ["compile"], generations=["v5e", "v5p"])
    stage = stage_with(report, "compile", "fail")
    by_generation = {g.generation: g for g in stage.generations}
    assert by_generation["v5e"].verdict == "pass"
    assert by_generation["v5p"].verdict == "fail"
    assert "too big for VMEM on v5p" in by_generation["v5p"].message
    assert "64.0 MiB" in by_generation["v5p"].message
    assert "compiles for v5e" in stage.message


def test_swallowed_errors_and_plain_jnp_fallbacks_fail_honesty() -> None:
    swallows = stage_with(check("swallows", ["honesty"], held_out=False), "honesty", "fail")
    assert f"swallows.py:{line_of('swallows', 'except Exception')}" in swallows.message
    fallback = stage_with(check("jnp_fallback", ["honesty"], held_out=False), "honesty", "fail")
    assert "falls back to jnp" in fallback.message


def test_wrong_output_shape_and_a_kernel_that_raises() -> None:
    wrong = stage_with(check("wrong_shape", ["correctness"]), "correctness", "fail")
    assert "has shape (8, 128); the reference returns (8, 256)" in wrong.message
    raised = stage_with(check("raises", ["correctness"]), "correctness", "fail")
    assert "raised ValueError: row-major layouts are not supported yet" in raised.message
    assert f"raises.py:{line_of('raises', 'raise ValueError')}" in raised.message


@pytest.mark.slow
def test_special_cased_test_shapes_fail_honesty() -> None:
    report = check("special_case", ["correctness", "honesty"])
    assert verdicts(report)["correctness"] == "pass"
    honesty = stage_with(report, "honesty", "fail")
    found = [honesty.message, *honesty.details]
    assert any("x.shape[1] == 128" in f and "branches on a declared test dimension" in f for f in found)
    assert any("fails the held-out shape (rows=64, cols=256)" in f and "never written" in f for f in found)


def test_the_pytorch_stage_is_started_ahead_only_when_it_will_run() -> None:
    """Without the torch stage nothing is started (and the stage runs in line when the early process
    is not available: test_kernels_cli checks the stage started ahead end to end)."""
    from tpu_runtime.kernels.check import CheckOptions, start_torch_stage

    path = Path(__file__).resolve().parent / "data" / "kernels" / "reshaped_ref.py"
    assert start_torch_stage(CheckOptions(file=str(path), stages=["correctness", "lowering"])) is None
