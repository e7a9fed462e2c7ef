"""Round diag107's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: an exported function called with other shapes or dtypes, a host callback in a function
being serialized, a Shardy sharding rule whose operand or result count is not the op's, and code written for
the other JAX partitioner (`crash_fix_packs/compiler_checks.yaml`, `crash_cues/compiler_checks.yaml`;
docs/diagnose-accuracy.md, "Round diag107")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed


def jax_trace(message: str) -> str:
    """A traceback from a jitted step whose last frames are jax's own (an invented model and path)."""
    frames = [
        "Traceback (most recent call last):",
        '  File "/srv/job/step.py", line 57, in <module>',
        "    out = jax.jit(step)(state, batch)",
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/pjit.py", line 410, in cache_miss',
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/interpreters/mlir.py", line 2210, in lower',
        message,
    ]
    return "\n".join(frames) + "\n"


EXPORTED_CALLS = (
    jax_trace(
        "ValueError: Shape mismatch for args[0].shape[2] (expected same constant): expected (4, 16, 1024)"
        " and called with (4, 16, 2048)"
    ),
    jax_trace("ValueError: Dtype mismatch for kwargs['mask']: expected bool and called with int32"),
    jax_trace("ValueError: Rank mismatch for args[2]: expected (8, 128) and called with (8, 128, 1)"),
)


def test_an_exported_function_called_with_other_avals_is_told_to_match_or_reexport() -> None:
    for text in EXPORTED_CALLS:
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "shape_dtype_error",
            "shape_dtype_error/from_facts_exported_call_avals",
        ), text
        assert "symbolic_shape" in fix and "astype" in fix


def test_other_shape_mismatches_are_not_claimed_by_the_export_fallback() -> None:
    for text in (
        # a checkpoint restore, not an exported call
        jax_trace("ValueError: Shape mismatch for params/dense/kernel: expected (512, 512), got (512, 1024)"),
        # a plain operand dtype disagreement inside an op
        jax_trace("TypeError: dot_general requires operands of the same dtype, got float32 and bfloat16"),
    ):
        assert_not_claimed(text, "from_facts_exported_call_avals")


def test_a_host_callback_in_a_serialized_function_is_told_to_leave_it() -> None:
    for text in (
        jax_trace("NotImplementedError: serialization of host_callbacks is not implemented"),
        jax_trace("ValueError: host callbacks cannot be serialized when exporting the step"),
    ):
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "unsupported_op",
            "unsupported_op/from_facts_host_callback_not_serializable",
        )
        assert "jax.debug.print" in fix and "io_callback" in fix


def test_callbacks_that_are_not_refused_for_serialization_are_not_claimed() -> None:
    for text in (
        # a callback that failed at run time, with nothing serialized
        jax_trace("RuntimeError: host callback raised an exception: ZeroDivisionError"),
        # serialization refused for another reason
        jax_trace("ValueError: cannot serialize a PyTreeDef containing an unregistered type `MyState`"),
    ):
        assert_not_claimed(text, "from_facts_host_callback_not_serializable")


def test_a_sharding_rule_with_the_wrong_count_is_told_one_mapping_per_array() -> None:
    for text in (
        jax_trace("ValueError: Sharding rule has 1 operands, but the operation has 2 operands"),
        jax_trace("ValueError: sharding_rule gives 3 results while the function has 2 results"),
    ):
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "shape_dtype_error",
            "shape_dtype_error/from_facts_sharding_rule_arity",
        )
        assert "sharding_rule" in fix and "def_partition" in fix


def test_counts_that_are_not_a_sharding_rule_are_not_claimed() -> None:
    for text in (
        jax_trace("TypeError: The function has 3 operands but 2 in_specs were given"),
        jax_trace("ValueError: sharding rule factor k is used in 2 operands with different sizes 64 and 128"),
    ):
        assert_not_claimed(text, "from_facts_sharding_rule_arity")


def test_code_written_for_the_other_partitioner_is_a_compile_error_with_the_flag() -> None:
    for text in (
        jax_trace("NotImplementedError: Shardy is used, but this op only has GSPMD callbacks"),
        jax_trace("ValueError: this artifact was saved with Shardy enabled; the loader runs with it off"),
        jax_trace("RuntimeError: please migrate to Shardy before using the new partitioning API"),
    ):
        category, fix_rule, fix = ablated_verdict(text)
        assert (category, fix_rule) == (
            "xla_compile_error",
            "xla_compile_error/from_facts_partitioner_mismatch",
        )
        assert "jax_use_shardy_partitioner" in fix and "sharding_rule" in fix
        assert_fixed_by(
            text, "xla_compile_error", "from_facts_partitioner_mismatch", "jax_use_shardy_partitioner"
        )


def test_shardy_words_without_a_partitioner_mismatch_are_not_claimed() -> None:
    for text in (
        # the flag's name alone (no standalone "Shardy" word)
        "INFO: jax_use_shardy_partitioner=True; compiling train_step\n",
        # a Shardy verifier error, which is about an annotation, not the partitioner in use
        jax_trace("ValueError: Shardy: sharding doesn't match tensor rank: 2 != 3"),
    ):
        assert_not_claimed(text, "from_facts_partitioner_mismatch")
