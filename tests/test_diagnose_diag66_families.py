"""Families of wording that round diag66 added to the rules: Tunix's RL set-up and Flax NNX's sharding checks.

Tunix (https://github.com/google/tunix) refuses a rollout mesh whose device count a parallelism size does not
divide (`tunix_mesh_devices_vs_parallel_size`), a role that both owns a mesh and shares one through
`same_mesh_as` (`tunix_mesh_owner_same_mesh_as`) and GRPO with one completion per prompt
(`tunix_grpo_num_generations`). Flax (https://github.com/google/flax) refuses `nnx.reseed` on an array of
keys under the scalar policy (`flax_nnx_reseed_non_scalar_key`), nnx.Optimizer used as before 0.11
(`flax_nnx_optimizer_wrt_grads`) and Variable metadata changed inside `nnx.jit`
(`flax_nnx_variable_metadata_in_jit`).

Each case is another wording of its family (other values, another size or role, under a traceback), and each
family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

_TUNIX_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/tunix/cli/grpo_main.py", line 180, in main\n'
    "    pipeline.run_grpo_trainer()\n"
)


def test_a_tensor_parallel_size_that_does_not_divide_the_mesh() -> None:
    crash = assert_fixed_by(
        _TUNIX_TRACE + "ValueError: Total mesh devices (4) must be divisible by tensor_parallel_size (3).",
        "runtime_init_failure",
        "tunix_mesh_devices_vs_parallel_size",
        "divisor",
    )
    assert "tensor_parallel_size=3" in (crash.fix or "")


def test_a_batch_size_divisibility_check_is_not_the_mesh_check() -> None:
    assert_not_claimed(
        "ValueError: Total batch size (12) must be divisible by the number of devices (8).",
        "tunix_mesh_devices_vs_parallel_size",
    )


def test_the_actor_told_to_share_a_mesh() -> None:
    assert_fixed_by(
        _TUNIX_TRACE + "ValueError: Actor must own its mesh.",
        "runtime_init_failure",
        "tunix_mesh_owner_same_mesh_as",
        "same_mesh_as",
    )


def test_a_reference_model_with_its_own_mesh_and_same_mesh_as() -> None:
    crash = assert_fixed_by(
        "ValueError: reference_model_config.mesh is specified, so it must own a separate mesh and cannot "
        "also use same_mesh_as.",
        "runtime_init_failure",
        "tunix_mesh_owner_same_mesh_as",
        "same_mesh_as",
    )
    assert "reference_model_config.mesh" in (crash.fix or "")


def test_a_cycle_of_same_mesh_as_is_not_the_ownership_check() -> None:
    assert_not_claimed("ValueError: same_mesh_as contains a cycle.", "tunix_mesh_owner_same_mesh_as")


def test_grpo_with_one_generation_in_the_agentic_learner() -> None:
    assert_fixed_by(
        _TUNIX_TRACE + "ValueError: num_generations must be greater than 1 for GRPO.",
        "runtime_init_failure",
        "tunix_grpo_num_generations",
        "num_generations",
    )


def test_a_num_iterations_check_is_not_the_generations_check() -> None:
    assert_not_claimed(
        "ValueError: num_iterations must be greater than 0. Received: 0", "tunix_grpo_num_generations"
    )


def test_reseeding_keys_split_per_layer() -> None:
    assert_fixed_by(
        "ValueError: Cannot reseed stream at path ('layers', 'rngs', 'params') becuase it has a non-scalar "
        "key, found key with shape (4, 2). If all your multi-dimensional keys have unique values on all "
        'dimensions, set policy="match_shape", else provide a custom reseed policy.',
        "shape_dtype_error",
        "flax_nnx_reseed_non_scalar_key",
        'policy="match_shape"',
    )


def test_an_unknown_reseed_policy_is_not_the_non_scalar_check() -> None:
    assert_not_claimed(
        'ValueError: policy must be "scalars_only", "match_shape" or a callable, got \'shape\'',
        "flax_nnx_reseed_non_scalar_key",
    )


def test_optimizer_update_without_grads() -> None:
    assert_fixed_by(
        "TypeError: Missing required argument `grads`. As of Flax 0.11.0 update requires both (model, grads) "
        "arguments to be passed. If you want to keep the previous use nnx.ModelAndOptimizer instead of "
        "nnx.Optimizer.",
        "version_mismatch",
        "flax_nnx_optimizer_wrt_grads",
        "wrt=nnx.Param",
    )


def test_a_config_missing_a_learning_rate_is_not_the_optimizer_api() -> None:
    assert_not_claimed(
        "ValueError: Missing required argument 'learning_rate' for optimizer 'adamw' and no schedule defined "
        "in config at rl_training_config -> actor_optimizer_config.",
        "flax_nnx_optimizer_wrt_grads",
    )


def test_metadata_changed_at_a_nested_path() -> None:
    assert_fixed_by(
        "ValueError: Variable metadata changed inside jit at path [1]['blocks'][0]['attn']['qkv']['kernel']. "
        "Changing Variable metadata inside jit is not supported.",
        "unsupported_op",
        "flax_nnx_variable_metadata_in_jit",
        "outside",
    )


def test_eager_sharding_metadata_is_not_the_jit_check() -> None:
    assert_not_claimed(
        "ValueError: Cannot change `eager_sharding` metadata, expected True, got False",
        "flax_nnx_variable_metadata_in_jit",
    )
