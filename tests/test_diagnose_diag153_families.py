"""Round diag153's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: lax.while_loop's cond_fun returning no boolean scalar, a shard_map spec entry longer than
its value's rank, torch's in-place index ops given a source of another dtype, and jax 0.10.2's wording of the
sharding-in-types check on batch dimensions (`crash_rules/shape_dtype_error.yaml`; docs/diagnose-accuracy.md,
"Round diag153")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed, diagnose_rules_alone


def jax_trace(message: str, call: str = "jax.lax.while_loop(keep_going, step, state)") -> str:
    """A jitted step failing while jax traces it (invented script; jax's filtered traceback)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/decode.py", line 44, in <module>\n'
        "    out = run(params, batch)\n"
        '  File "/srv/job/decode.py", line 31, in run\n'
        f"    return {call}\n"
        f"{message}\n"
        "--------------------\n"
        "For simplicity, JAX has removed its internal frames from the traceback of the following"
        " exception. Set JAX_TRACEBACK_FILTERING=off to include these.\n"
    )


def test_a_cond_fun_returning_a_boolean_array_names_it_and_the_reduction() -> None:
    text = jax_trace(
        "TypeError: cond_fun must return a boolean scalar, but got output type(s) [ShapedArray(bool[4,1])]."
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "while_loop_cond_not_boolean_scalar", "jnp.any")
    assert "ShapedArray(bool[4,1])" in crash.fix, crash.fix


def test_a_cond_fun_returning_a_pytree_gets_the_same_fix_without_a_type() -> None:
    text = jax_trace("TypeError: cond_fun must return a boolean scalar, but got pytree PyTreeDef((*, *)).")
    crash = assert_fixed_by(text, "shape_dtype_error", "while_loop_cond_not_boolean_scalar", "jnp.all")
    assert "it returned" not in crash.fix, crash.fix


def test_the_body_carry_check_of_the_same_loop_is_not_claimed() -> None:
    # The loop's other type check: the carry changed, not the predicate.
    text = jax_trace(
        "TypeError: body_fun output and input must have identical types, got\n"
        "('ShapedArray(int32[])', 'ShapedArray(float32[16])')\n"
        "and\n"
        "('ShapedArray(int32[])', 'ShapedArray(float32[17])')."
    )
    assert_not_claimed(text, "while_loop_cond_not_boolean_scalar")


def shard_map_trace(message: str) -> str:
    """shard_map refusing its specs when the call is traced (invented function and shapes)."""
    return jax_trace(message, call="jax.shard_map(block, mesh=mesh, in_specs=specs, out_specs=P())(x, w)")


def test_an_in_specs_entry_longer_than_its_argument_names_the_spec_and_the_rank() -> None:
    text = shard_map_trace(
        "ValueError: shard_map applied to the function 'block' was given an in_specs entry which is too"
        " long to be compatible with the corresponding input value from the function:\n\n"
        "in_specs[1] is P('fsdp', 'model', None) which has length 3, but args[1], where args[1] is bound to"
        " block's parameter 'w', has shape bfloat16[1024,4096], which has rank 2 (and 2 < 3)\n\n"
        "Entries in in_specs must be of length no greater than the number of axes in the corresponding input"
        " value.\n\n"
        "Either revise the spec to be shorter, or modify 'block' so that its inputs have sufficient rank."
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "shard_map_spec_longer_than_rank", "in_specs entry")
    assert "P('fsdp', 'model', None)" in crash.fix and "rank 2" in crash.fix, crash.fix


def test_shard_map_divisibility_is_not_claimed_by_the_rank_fix() -> None:
    # shard_map's other spec check: the spec fits the rank, the sizes do not divide.
    text = shard_map_trace(
        "ValueError: shard_map applied to the function 'block' was given argument arrays with axis sizes that"
        " are not evenly divisible by the corresponding mesh axis sizes:\n\n"
        "The mesh given has shape (4,) with corresponding axis names ('data',).\n\n"
        "* args[0] of shape float32[6], where args[0] is bound to block's parameter 'x', corresponds to"
        " in_specs[0] of value P('data',), which maps array axis 0 (of size 6) to mesh axis 'data'"
        " (of size 4)."
    )
    assert_not_claimed(text, "shard_map_spec_longer_than_rank")


def torch_trace(message: str) -> str:
    """An in-place torch op failing in a model's forward (invented script)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/moe.py", line 88, in forward\n'
        "    out.index_reduce_(0, token_idx, expert_out, 'amax')\n"
        f"RuntimeError: {message}\n"
    )


def test_an_in_place_index_op_names_both_dtypes_and_the_cast_to_self() -> None:
    text = torch_trace("index_reduce_(): self (Half) and source (Float) must have the same scalar type")
    crash = assert_fixed_by(text, "shape_dtype_error", "inplace_index_op_source_dtype", ".to(out.dtype)")
    assert "index_reduce_" in crash.fix and "self is Half while the source is Float" in crash.fix, crash.fix


def test_scatter_src_dtype_check_is_not_claimed_by_the_index_op_fix() -> None:
    # scatter's check has no op prefix with both dtypes: the index-op fix cannot name them.
    assert_not_claimed(
        torch_trace("scatter(): Expected self.dtype to be equal to src.dtype"),
        "inplace_index_op_source_dtype",
    )


def test_the_consistent_sharding_wording_of_batch_dimensions_reads_as_a_sharding_mismatch() -> None:
    text = jax_trace(
        "jax._src.core.ShardingTypeError: dot_general requires lhs batch dimensions and rhs batch"
        " dimensions to have the consistent sharding, got (None,) and ('data',).",
        call="jnp.einsum('bsd,btd->bst', q, k)",
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "operands_sharded_differently", "jax.reshard")
    assert "(None,) and ('data',)" in crash.fix, crash.fix


def test_batch_dimensions_of_different_sizes_keep_the_shape_fix() -> None:
    # The same dimensions with different sizes: a shape fault, not a sharding one.
    text = jax_trace(
        "TypeError: dot_general requires lhs batch dimensions and rhs batch dimensions to have the"
        " same shape, got (4, 8) and (2, 8).",
        call="jnp.einsum('bhsd,bhtd->bhst', q, k)",
    )
    assert diagnose_rules_alone(text).category == "shape_dtype_error"
    assert_not_claimed(text, "operands_sharded_differently")
