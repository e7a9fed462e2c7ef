"""Round diag129's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a conditional whose branches return different shapes, and torch.compile's XLA
backend whose graph partitions form a dependency cycle (`crash_rules/xla_compile_error.yaml`;
docs/diagnose-accuracy.md, "Round diag129")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def tf_status(message: str) -> str:
    """A TensorFlow step's error as the eager runtime prints it (an invented function and node)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/fit.py", line 88, in <module>\n'
        "    model.fit(ds, epochs=3)\n"
        f"tensorflow.python.framework.errors_impl.InvalidArgumentError: {message}\n"
        "\t [[{{node decoder/cond_2}}]] [Op:__inference_train_function_9100]\n"
    )


def test_a_conditional_with_branches_of_different_shapes_names_both_shapes() -> None:
    text = tf_status(
        "Output shapes of then and else branches do not match:"
        " (bf16[8,128], s32[8]) vs. (bf16[8,128], s32[0])"
    )
    crash = assert_fixed_by(text, "xla_compile_error", "cond_branch_shapes_differ", "zeros_like")
    assert "bf16[8,128], s32[0]" in crash.fix, crash.fix
    assert "bf16[8,128], s32[8]" in crash.fix, crash.fix


def test_other_branch_mismatches_are_not_claimed() -> None:
    # Python-side branch checks of tf.cond (no shapes printed) are tracing errors, not this compile check.
    for message in (
        "ValueError: Lengths of branch outputs of cond must match.",
        "TypeError: true_fn and false_fn arguments to tf.cond must have the same number, type, and overall"
        " structure of return values.",
    ):
        assert_not_claimed(message + "\n", "cond_branch_shapes_differ")


def dynamo_trace(message: str) -> str:
    """torch.compile's XLA backend failing in the bridge that splits the captured graph (invented paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/serve.py", line 31, in <module>\n'
        "    out = compiled(input_ids)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/_dynamo/backends/torchxla.py", line 49,'
        " in fwd\n"
        "    compiled_graph = bridge.extract_compiled_graph(model, args)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch_xla/core/dynamo_bridge.py", line 530, in'
        " extract_compiled_graph\n"
        "    partitioned_graph = partitioner.fuse_partitions(partitions)\n"
        f"{message}\n"
    )


def test_a_partition_cycle_in_the_xla_bridge_is_told_to_use_the_openxla_backend() -> None:
    text = dynamo_trace("AssertionError: Invalid partition, found dependency cycles")
    crash = assert_fixed_by(text, "xla_compile_error", "dynamo_partition_cycle", 'backend="openxla"')
    assert "torch_xla/core/dynamo_bridge.py" in crash.fix, crash.fix


def test_other_partitioner_assertions_are_not_claimed() -> None:
    assert_not_claimed(
        dynamo_trace("AssertionError: partition must contain at least one node"), "dynamo_partition_cycle"
    )
