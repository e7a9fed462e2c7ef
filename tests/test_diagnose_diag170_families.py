"""Round diag170's crash-rule fix, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a mesh axis given to vmap as spmd_axis_name and named again by a sharding constraint or a
shard_map spec inside the mapped function (`crash_rules/shape_dtype_error.yaml`; docs/diagnose-accuracy.md,
"Round diag170")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed, jax_trace

VMAP_CALL = "jax.vmap(block, spmd_axis_name='batch')(xs)"


def test_a_sharding_constraint_naming_the_spmd_axis_names_axis_spec_and_per_example_dims() -> None:
    text = jax_trace(
        "ValueError: vmap spmd_axis_name ('batch',) cannot appear in with_sharding_constraint spec, but got"
        " spec P('batch', None, 'tensor')",
        call=VMAP_CALL,
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "vmap_spmd_axis_named_inside", "spmd_axis_name")
    assert "('batch',)" in crash.fix and "P('batch', None, 'tensor')" in crash.fix, crash.fix
    assert "with_sharding_constraint spec may not name it" in crash.fix, crash.fix


def test_the_shard_map_wording_without_axis_or_spec_is_claimed_too() -> None:
    text = jax_trace(
        "ValueError: vmap spmd_axis_name cannot appear in shard_map in_specs",
        call="jax.vmap(sharded_block, spmd_axis_name='batch')(xs)",
    )
    crash = assert_fixed_by(text, "shape_dtype_error", "vmap_spmd_axis_named_inside", "spmd_axis_name")
    assert "shard_map in_specs may not name it" in crash.fix, crash.fix


def test_an_explicit_axis_vmapped_away_is_not_claimed() -> None:
    # A sibling check of shard_map's batching rule: an Explicit mesh axis vmapped away, not spmd_axis_name.
    text = jax_trace(
        "ValueError: vmapped away explicit mesh axis cannot appear in shard_map in_specs",
        call="jax.vmap(sharded_block)(xs)",
    )
    assert_not_claimed(text, "vmap_spmd_axis_named_inside")


def test_a_spec_naming_an_axis_the_mesh_lacks_is_not_claimed() -> None:
    text = jax_trace(
        "ValueError: Resource axis: batch of P('batch',) is not found in mesh: ('data', 'model').",
        call="jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P('batch')))",
    )
    assert_not_claimed(text, "vmap_spmd_axis_named_inside")
