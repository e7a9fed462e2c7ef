"""Families of wording that round diag73 added to the rules: real error outputs from TPU issue threads.

jax.config's define_*_state helpers, removed in jax 0.4.25 and still called by an older library
(`jax_config_define_state_removed`), MaxText's checkpoint converter whose parameter map lacks keys of the
checkpoint (`maxtext_param_map_subset`) and Text Generation Inference's warmup running out of memory
(`tgi_warmup_not_enough_memory`).

Each case is another wording of its family (another helper, another caller's traceback, another batch), and
each family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_flax_calling_a_removed_define_state_helper_on_the_config_object() -> None:
    assert_fixed_by(
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/flax/configurations.py", line 93, in <module>\n'
        "    flax_filter_frames = define_bool_state(\n"
        '  File "/opt/venv/lib/python3.11/site-packages/flax/configurations.py", line 42, in '
        "define_bool_state\n"
        "    return jax_config.define_bool_state('flax_' + name, default, help)\n"
        "AttributeError: 'Config' object has no attribute 'define_enum_state'",
        "version_mismatch",
        "jax_config_define_state_removed",
        "0.4.24",
    )


def test_another_missing_config_attribute_is_not_the_removed_helper() -> None:
    assert_not_claimed(
        "AttributeError: 'Config' object has no attribute 'jax_enable_memories'",
        "jax_config_define_state_removed",
    )


def test_maxtext_converter_param_map_with_the_article_under_to_maxtext() -> None:
    assert_fixed_by(
        'File "/home/user/maxtext/src/maxtext/checkpoint_conversion/to_maxtext.py", line 412, in main\n'
        "    raise ValueError(\n"
        "ValueError: maxtext_state_dict must be a subset of the flattened param_map",
        "version_mismatch",
        "maxtext_param_map_subset",
        "scan_layers=false",
    )


def test_a_converter_shape_mismatch_is_not_the_param_map() -> None:
    assert_not_claimed(
        "ValueError: Shape mismatch for model.layers.0.mlp.up_proj.weight: "
        "Expect [4864, 896], got [896, 4864]",
        "maxtext_param_map_subset",
    )


def test_tgi_warmup_of_another_batch_running_out_of_memory() -> None:
    assert_fixed_by(
        "2026-01-12T10:02:11.004512Z  INFO shard-manager: text_generation_launcher: "
        "Shard ready in 41.2s rank=0\n"
        "2026-01-12T10:02:11.902237Z  INFO text_generation_launcher: Warming up model\n"
        "Error: Backend(NotEnoughMemory(32))",
        "hbm_oom",
        "tgi_warmup_not_enough_memory",
        "MAX_BATCH_SIZE",
    )


def test_sglang_memory_profile_is_not_tgi_warmup() -> None:
    assert_not_claimed(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        "tgi_warmup_not_enough_memory",
    )
