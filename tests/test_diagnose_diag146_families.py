"""Round diag146's crash-rule fixes, with wordings written here (not the corpus files) and nearby wordings
they must not claim: Pallas's checks of a pallas_call's block ranks, index maps and grid, and
pltpu.bitcast's refusal of a 1-D value (`crash_rules/mosaic_compile_error.yaml`;
docs/diagnose-accuracy.md, "Round diag146")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed


def pallas_trace(message: str) -> str:
    """A jitted step whose pallas_call is refused while it is traced (an invented script and kernel)."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 88, in <module>\n'
        "    loss = step(params, batch)\n"
        '  File "/srv/job/kernels/norm.py", line 31, in rms_norm\n'
        "    return pl.pallas_call(norm_kernel, out_shape=out_shape, grid=grid, in_specs=specs)(x, w)\n"
        f"{message}\n"
    )


def test_a_block_rank_check_names_the_operand_and_asks_one_entry_per_dimension() -> None:
    text = pallas_trace(
        "ValueError: Block shape for args[1] (= (Blocked(block_size=8), Blocked(block_size=512))) must"
        " have the same number of dimensions as the array shape (4, 1024, 512)."
    )
    crash = assert_fixed_by(text, "mosaic_compile_error", "block_rank_against_array", "pl.Squeezed")
    assert "of args[1]" in crash.fix, crash.fix
    assert "(4, 1024, 512)" in crash.fix, crash.fix


def test_an_index_map_returning_a_float_is_sent_to_integer_arithmetic() -> None:
    text = pallas_trace(
        "ValueError: Index map function <lambda> at /srv/job/kernels/norm.py:27 for args[0] must return"
        " integer scalars. Output[1] has type float32[]."
    )
    crash = assert_fixed_by(text, "mosaic_compile_error", "index_map_non_integer", "astype(jnp.int32)")
    assert "output 1 has type float32[]" in crash.fix, crash.fix


def test_a_float_grid_is_sent_to_cdiv() -> None:
    text = pallas_trace("ValueError: Grid must be a tuple of integers or jax.Array, got (16, 2.5)")
    crash = assert_fixed_by(text, "mosaic_compile_error", "grid_not_integers", "pl.cdiv")
    assert "(16, 2.5)" in crash.fix, crash.fix


def test_a_1d_bitcast_is_sent_to_a_2d_reshape() -> None:
    text = pallas_trace(
        '  File "/srv/job/kernels/norm.py", line 12, in norm_kernel\n'
        "    bits = pltpu.bitcast(x_ref[...], jnp.uint16)\n"
        "ValueError: Not implemented: bitcast 1D"
    )
    assert_fixed_by(text, "mosaic_compile_error", "bitcast_rank_below_2d", "bitcast_convert_type")


def test_other_block_index_map_grid_and_bitcast_checks_are_not_claimed() -> None:
    # The index_map's count of outputs, a captured constant, a grid axis out of range and bitcast's
    # packing check are other faults.
    for message, sub_rule in (
        (
            "ValueError: Index map function <lambda> at /srv/job/kernels/norm.py:27 for args[0] must return"
            " 3 values to match block_shape=(Blocked(block_size=8), Blocked(block_size=128))."
            " Currently returning 2 values:",
            "block_rank_against_array",
        ),
        (
            "ValueError: Index map function <lambda> at /srv/job/kernels/norm.py:27 for args[0] must not"
            " capture constants: [Array([0, 1], dtype=int32)]",
            "index_map_non_integer",
        ),
        ("ValueError: Axis 2 is out of bounds for grid (4, 8)", "grid_not_integers"),
        (
            "ValueError: Not implemented: the 2nd minor dim can not be perfectly packed or unpacked",
            "bitcast_rank_below_2d",
        ),
    ):
        assert_not_claimed(pallas_trace(message), sub_rule)
