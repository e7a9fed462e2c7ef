"""Round diag166's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a custom_jvp rule whose tangent output has another pytree structure than its primal
output, and a jax.random float sampler asked for a non-float dtype (`crash_rules/shape_dtype_error.yaml`;
docs/diagnose-accuracy.md, "Round diag166")."""

from __future__ import annotations

from crash_helpers import (
    ablated_verdict,
    assert_fixed_by,
    assert_not_claimed,
    diagnose_rules_alone,
    jax_trace,
)

JVP_CALL = "jax.jvp(layer, (x,), (t,))"


def test_a_custom_jvp_tangent_of_another_structure_names_both_trees_and_zeros_like() -> None:
    text = jax_trace(
        "TypeError: Custom JVP rule norm_jvp for function norm must produce primal and tangent outputs with"
        " equal container (pytree) structures, but got PyTreeDef({'out': *, 'scale': *}) and"
        " PyTreeDef({'out': *}) respectively.",
        call=JVP_CALL,
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "custom_jvp_tangent_structure", "jnp.zeros_like")
    assert "PyTreeDef({'out': *, 'scale': *})" in crash.fix, crash.fix
    assert "the tangent PyTreeDef({'out': *})" in crash.fix, crash.fix


def test_the_custom_jvp_shape_and_dtype_check_is_categorised_but_not_claimed() -> None:
    # The rule's other output check: same structure, another tangent dtype.
    text = jax_trace(
        "TypeError: Custom JVP rule must produce primal and tangent outputs with corresponding shapes and"
        " dtypes. Expected bfloat16[8,16] (tangent type of bfloat16[8,16]) but got float32[8,16].",
        call=JVP_CALL,
    )
    assert diagnose_rules_alone(text).category == "shape_dtype_error"
    assert_not_claimed(text, "custom_jvp_tangent_structure")


def test_a_float_sampler_given_an_integer_dtype_names_it_and_randint() -> None:
    text = jax_trace(
        "ValueError: dtype argument to `truncated_normal` must be a float dtype, got uint8",
        call="jax.random.truncated_normal(key, -2.0, 2.0, shape, dtype=jnp.uint8)",
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "random_sampler_needs_float_dtype", "randint")
    assert "jax.random.truncated_normal" in crash.fix and "dtype=uint8" in crash.fix, crash.fix


def test_an_integer_sampler_given_a_float_dtype_is_not_claimed() -> None:
    # The opposite check: an integer sampler asked for floats needs no float dtype.
    text = jax_trace(
        "ValueError: dtype argument to `geometric` must be an int dtype, got float32",
        call="jax.random.geometric(key, 0.3, shape, dtype=jnp.float32)",
    )
    assert_not_claimed(text, "random_sampler_needs_float_dtype")


def test_the_general_mechanisms_alone_place_a_custom_jvp_check_by_its_cue() -> None:
    text = jax_trace(
        "TypeError: Custom JVP rule gate_jvp for function gate must produce primal and tangent outputs with"
        " equal container (pytree) structures, but got PyTreeDef([*, *]) and PyTreeDef(*) respectively.",
        call=JVP_CALL,
    )
    assert ablated_verdict(text)[0] == "shape_dtype_error"


def test_the_cue_leaves_a_custom_jvp_definition_error_unplaced_as_shape() -> None:
    # A rule defined twice is a usage error of the API, not a shape or dtype disagreement.
    text = jax_trace(
        "AttributeError: No JVP defined for custom_jvp function gate using defjvp.",
        call=JVP_CALL,
    )
    assert ablated_verdict(text)[0] != "shape_dtype_error"
