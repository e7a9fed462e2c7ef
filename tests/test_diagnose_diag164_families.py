"""Round diag164's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: jax's block-scaled matmul lowered for a platform without its rule
(`crash_rules/unsupported_op.yaml`; docs/diagnose-accuracy.md, "Round diag164")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def lowering_trace(primitive: str, platform: str) -> str:
    """The last frames and the message jax prints when no lowering rule is registered (invented script)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/quant_step.py", line 30, in <module>\n'
        "    lowered = jax.jit(step).trace(x, w, xs, ws).lower()\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/interpreters/mlir.py", line 2508, in'
        " lower_per_platform\n"
        "    raise NotImplementedError(\n"
        f"NotImplementedError: MLIR translation rule for primitive '{primitive}' not found for platform"
        f" {platform}\n"
    )


def test_block_scaled_matmul_on_tpu_is_told_to_dequantize() -> None:
    crash = assert_fixed_by(
        lowering_trace("scaled_matmul", "tpu"),
        "unsupported_op",
        "scaled_matmul_without_tpu_lowering",
        "dequantize",
    )
    assert "lax.dot_general" in crash.fix, crash.fix


def test_other_primitives_without_a_tpu_rule_keep_the_general_fix() -> None:
    # eig has no TPU lowering either, but it is not a block-scaled matmul.
    assert_not_claimed(lowering_trace("eig", "tpu"), "scaled_matmul_without_tpu_lowering")
    assert_fixed_by(lowering_trace("eig", "tpu"), "unsupported_op", "jax_primitive", "eig")


def test_a_gpu_platform_that_has_the_rule_is_not_claimed() -> None:
    # A cuda build missing the rule is a broken install, not a TPU gap: the TPU advice does not fit it.
    assert_not_claimed(lowering_trace("scaled_matmul", "cuda"), "scaled_matmul_without_tpu_lowering")
