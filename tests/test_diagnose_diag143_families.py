"""Round diag143's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a jax.random function given a batch of keys, two pytrees whose subtrees differ in type
at one key path, and scaled_dot_product_attention refusing the dtype of its mask
(`crash_rules/shape_dtype_error.yaml`; docs/diagnose-accuracy.md, "Round diag143")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def jax_trace(call: str, message: str) -> str:
    """A jax call failing in a training script (invented script and values)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 40, in <module>\n'
        f"    {call}\n"
        f"{message}\n"
        "--------------------\n"
        "For simplicity, JAX has removed its internal frames from the traceback of the following exception."
        " Set JAX_TRACEBACK_FILTERING=off to include these.\n"
    )


def test_a_batch_of_keys_given_to_fold_in_names_the_function_and_vmap() -> None:
    text = jax_trace(
        "rngs = jax.random.fold_in(keys, step)",
        "ValueError: fold_in accepts a single key, but was given a key array of shape (4,) != ()."
        " Use jax.vmap for batching.",
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "prng_function_given_key_batch", "jax.vmap")
    assert "jax.random.fold_in" in crash.fix and "(4,)" in crash.fix, crash.fix


def test_a_key_refused_for_its_dtype_is_not_claimed() -> None:
    # The same function's name and key, but no batch shape: not a batch of keys.
    assert_not_claimed(
        jax_trace(
            "k1, k2 = jax.random.split(key)",
            "TypeError: split accepts a single key, but the key has dtype float32",
        ),
        "prng_function_given_key_batch",
    )


def pytree_error(first_line: str, label: str) -> str:
    """jax's prefix-match error, as tree_util prints it over several lines (invented trees)."""
    return jax_trace(
        "out = jax.vmap(step, in_axes=axes)(state, batch)",
        f"ValueError: pytree structure error: {first_line}\n"
        f"    {label}[0]\n"
        f"At that key path, the prefix pytree {label} has a subtree of type\n"
        "    <class 'list'>\n"
        "but at the same key path the full pytree has a subtree of different type\n"
        "    <class 'dict'>.",
    )


def test_subtrees_of_different_types_name_the_first_tree_and_the_structure_check() -> None:
    text = pytree_error("different types at key path", "vmap in_axes")
    crash = assert_fixed_by(text, "shape_dtype_error", "pytree_subtree_type_differs", "jax.tree.structure")
    assert "(vmap in_axes)" in crash.fix, crash.fix


def test_a_flatten_up_to_mismatch_keeps_the_general_pytree_fix() -> None:
    text = jax_trace(
        "updates = jax.tree.map(lambda g, m: g * m, grads, masks)",
        "ValueError: Custom node type mismatch; expected type: <class 'dict'>; value: [1.0, 2.0].",
    )
    assert_not_claimed(text, "pytree_subtree_type_differs")
    assert_fixed_by(text, "shape_dtype_error", "pytree_structure_mismatch", "tree_structure")


def torch_trace(message: str) -> str:
    """A PyTorch attention layer failing in its forward (invented paths)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/model.py", line 88, in forward\n'
        "    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
        f"RuntimeError: {message}\n"
    )


def test_an_integer_attention_mask_names_both_dtypes_and_the_bool_conversion() -> None:
    text = torch_trace(
        "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype:"
        " int and  query.dtype: c10::BFloat16 instead."
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "sdpa_attn_mask_dtype", ".bool()")
    assert "c10::BFloat16" in crash.fix, crash.fix


def test_query_and_key_of_different_dtypes_are_not_claimed() -> None:
    assert_not_claimed(
        torch_trace(
            "Expected query, key, and value to have the same dtype, but got query.dtype: float key.dtype:"
            " c10::BFloat16 and value.dtype: c10::BFloat16 instead."
        ),
        "sdpa_attn_mask_dtype",
    )
