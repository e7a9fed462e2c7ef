"""Round diag141's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: MLIR's check that a lowered function returns the types its signature declares, and
PyTorch/XLA's check that a built computation takes as many parameters as the device data gathered for it
(`crash_rules/xla_compile_error.yaml`; docs/diagnose-accuracy.md, "Round diag141")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def jax_lowering_error(message: str) -> str:
    """A jitted call whose lowered module the MLIR verifier rejects (invented script and types)."""
    return (
        "WARNING:absl:No GPU/TPU found, falling back to CPU."
        " (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun for more info.)\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/job/probe.py", line 14, in <module>\n'
        "    out = step(batch)\n"
        f"RuntimeError: UNKNOWN: <unknown>:0: error: {message}\n"
        '<unknown>:0: note: see current operation: "func.return"(%3) : (tensor<4x8xi64>) -> ()\n'
    )


def test_a_return_type_that_differs_from_the_signature_names_both_types() -> None:
    text = jax_lowering_error(
        "type of return operand 0 ('tensor<4x8xi64>') doesn't match function result type ('tensor<4x8xi32>')"
        " in function @main"
    )
    crash = assert_fixed_by(text, "xla_compile_error", "mlir_return_type_mismatch", "astype")
    assert "tensor<4x8xi64>" in crash.fix, crash.fix
    assert "tensor<4x8xi32>" in crash.fix, crash.fix


def test_a_return_operand_count_mismatch_is_not_claimed() -> None:
    # The same verifier's count check names no types, so it is not a dtype that escaped canonicalization.
    assert_not_claimed(
        jax_lowering_error("'func.return' op has 2 operands, but enclosing function (@main) returns 1"),
        "mlir_return_type_mismatch",
    )


def torch_xla_check(message: str) -> str:
    """A PyTorch/XLA training step failing in its graph compile (invented paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 61, in train_loop\n'
        "    xm.optimizer_step(optimizer)\n"
        '  File "/opt/venv/lib/python3.10/site-packages/torch_xla/core/xla_model.py", line 1042,'
        " in mark_step\n"
        "    torch_xla._XLAC._xla_step_marker(\n"
        f"RuntimeError: torch_xla/csrc/xla_graph_executor.cpp:1210 : {message}\n"
    )


def test_a_parameter_count_mismatch_names_both_counts_and_the_step_cut() -> None:
    text = torch_xla_check(
        "Check failed: program_shape.parameters_size() == po_data->parameters_data.size() (88 vs. 87)"
    )
    crash = assert_fixed_by(text, "xla_compile_error", "torch_xla_parameter_count_mismatch", "mark_step")
    assert "88" in crash.fix and "87" in crash.fix, crash.fix


def test_other_graph_compile_checks_are_not_claimed() -> None:
    assert_not_claimed(
        torch_xla_check(
            "Check failed: program_shape.result().tuple_shapes_size() == tensors.size() (3 vs. 4)"
        ),
        "torch_xla_parameter_count_mismatch",
    )
