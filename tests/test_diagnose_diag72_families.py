"""Families of wording that round diag72 added to the rules: Levanter's and MaxDiffusion's config checks.

Levanter (https://github.com/stanford-crfm/levanter) and MaxDiffusion
(https://github.com/AI-Hypercomputer/maxdiffusion), two JAX trainers built for TPU, refuse a configuration
that cannot run and say what must hold: a checkpointer keep list out of order
(`levanter_checkpoint_keep_order`), two options that exclude each other given together ("Cannot specify both
X and Y", read by the general `exclusive_options_together`), a command-line override of a key the YAML does
not define (`cli_override_key_not_in_config`), a Qwix quantization type MaxDiffusion does not take
(`maxdiffusion_qwix_quantization_type`), and the Ulysses shard count of ulysses_ring attention left unset or
not dividing the context shards (`maxdiffusion_ulysses_shards_unset`,
`maxdiffusion_ulysses_shards_divide_context`).

Each case is another wording of its family (a sibling check, other values, under a traceback), and each
family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def _trace(path: str, function: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/opt/venv/lib/python3.11/site-packages/{path}", line 104, in {function}\n'
        "    raise ValueError(\n"
    )


def test_the_checkpointer_step_policies_out_of_order() -> None:
    assert_fixed_by(
        _trace("levanter/checkpoint.py", "__init__")
        + "ValueError: Step policies must be sorted by 'until' value",
        "runtime_init_failure",
        "levanter_checkpoint_keep_order",
        "sort the keep entries by until",
    )


def test_an_open_interval_before_the_last_one() -> None:
    assert_fixed_by(
        "AssertionError: Only the last checkpoint interval can be None",
        "runtime_init_failure",
        "levanter_checkpoint_keep_order",
        "only the last may leave until unset",
    )


def test_a_non_positive_checkpoint_interval_is_not_the_order_check() -> None:
    assert_not_claimed(
        "ValueError: Checkpoint interval must be positive, got every=0", "levanter_checkpoint_keep_order"
    )


def test_two_launcher_flags_refused_together() -> None:
    crash = assert_fixed_by(
        _trace("levanter/main/sft.py", "train")
        + "ValueError: Cannot use both --initialize_from_hf and --initialize_from",
        "runtime_init_failure",
        "exclusive_options_together",
        "Keep only one of",
    )
    assert "--initialize_from_hf and --initialize_from" in (crash.fix or "")


def test_prose_refused_together_is_not_an_option_pair() -> None:
    assert_not_claimed(
        "ValueError: Cannot use both dropout and bias in splash attention", "exclusive_options_together"
    )


def test_another_command_line_key_the_yaml_lacks() -> None:
    crash = assert_fixed_by(
        _trace("maxdiffusion/pyconfig.py", "_load_kwargs")
        + "ValueError: Key per_device_batch was passed at the command line but isn't in config.",
        "runtime_init_failure",
        "cli_override_key_not_in_config",
        "spelling",
    )
    assert "per_device_batch is not one" in (crash.fix or "")


def test_an_unparsable_command_line_value_is_not_an_unknown_key() -> None:
    assert_not_claimed(
        "ValueError: Couldn't parse value from command line 'ten' for key 'max_train_steps'",
        "cli_override_key_not_in_config",
    )


def test_qwix_quantization_enabled_without_a_type() -> None:
    assert_fixed_by(
        "ValueError: Quantization type is not set when use_qwix_quantization is enabled.",
        "runtime_init_failure",
        "maxdiffusion_qwix_quantization_type",
        "use_qwix_quantization=False",
    )


def test_another_refused_qwix_type_is_named() -> None:
    crash = assert_fixed_by(
        _trace("maxdiffusion/pyconfig.py", "wan_init")
        + "ValueError: Quantization type is not supported when use_qwix_quantization is enabled: nf4",
        "runtime_init_failure",
        "maxdiffusion_qwix_quantization_type",
        "int8, fp8 or fp8_full",
    )
    assert "(nf4 was given)" in (crash.fix or "")


def test_the_qwix_switch_itself_unset_is_not_the_type_check() -> None:
    assert_not_claimed("ValueError: use_qwix_quantization is not set.", "maxdiffusion_qwix_quantization_type")


def test_more_ulysses_shards_than_context_shards() -> None:
    crash = assert_fixed_by(
        _trace("maxdiffusion/models/attention_flax.py", "_ulysses_ring_attention")
        + "ValueError: Ulysses ring attention requires the requested Ulysses shard count to divide the "
        "context shard count, got context_shards=4 and ulysses_shards=8.",
        "runtime_init_failure",
        "maxdiffusion_ulysses_shards_divide_context",
        "ulysses_shards must divide 4 (not 8)",
    )
    assert "a divisor of 4" in (crash.fix or "")


def test_heads_against_the_ulysses_shards_is_not_the_context_check() -> None:
    assert_not_claimed(
        "ValueError: Ulysses ring attention requires the number of heads to be divisible by the requested "
        "Ulysses shard count, got heads=24 and ulysses_shards=16.",
        "maxdiffusion_ulysses_shards_divide_context",
    )


def test_the_kernel_asks_for_ulysses_shards_too() -> None:
    assert_fixed_by(
        _trace("maxdiffusion/models/attention_flax.py", "_ulysses_ring_attention")
        + "ValueError: Ulysses ring attention requires ulysses_shards to be set from config or command line.",
        "runtime_init_failure",
        "maxdiffusion_ulysses_shards_unset",
        "set ulysses_shards to a positive divisor",
    )


def test_a_missing_context_mesh_axis_is_not_the_unset_shards() -> None:
    assert_not_claimed(
        "ValueError: Ulysses ring attention requires mesh axis 'context', "
        "got mesh axes {'data': 2, 'fsdp': 4}.",
        "maxdiffusion_ulysses_shards_unset",
    )
