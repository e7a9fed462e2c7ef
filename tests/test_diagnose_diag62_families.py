"""Families of wording that round diag62 added to the rules: Orbax's checks of a checkpoint save or restore.

Orbax (https://github.com/google/orbax), the checkpointing library of JAX trainers on TPU, refuses a save or
restore call whose arguments or directory cannot work: a step the manager already holds
(`orbax_step_already_exists`), an existing destination without force (`orbax_destination_exists`), a step
directory whose save was never finalized (`orbax_incomplete_checkpoint`), a CheckpointArgs object passed where
the legacy item argument sits (`orbax_args_keyword`), several named items without ocp.args.Composite
(`orbax_composite_args`), create=True beside active_processes (`orbax_create_with_active_processes`),
per-process directories beside a primary host (`orbax_per_process_dirs_primary_host`), a jax.Array restored
with no sharding (`orbax_restore_without_sharding`), a strict restore refusing another shape
(`orbax_restore_shape_strict`) and StandardSave given one array (`orbax_standard_save_single_array`).

Each case is another wording of its family (other values, another handler or API version, under a traceback),
and each family has a nearby wording it must not claim, so a rule matching only a collected log's text would
fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.11/site-packages/orbax/checkpoint/checkpoint_manager.py", '
    "line 1402, in save\n"
)


def test_step_already_saved_in_the_v1_api() -> None:
    crash = assert_fixed_by(
        _TRACE + "orbax.checkpoint.experimental.v1.errors.StepAlreadyExistsError: Step 1200 already exists.",
        "runtime_init_failure",
        "orbax_step_already_exists",
        "latest_step()",
    )
    assert "step 1200" in (crash.fix or "")


def test_another_librarys_existing_checkpoint_is_not_orbaxs_step() -> None:
    assert_not_claimed(
        "FileExistsError: [Errno 17] File exists: 'runs/r1/checkpoint-500'",
        "orbax_step_already_exists",
    )


def test_async_checkpointer_destination_exists() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: Destination gs://bucket/exports/params_v2 already exists.",
        "runtime_init_failure",
        "orbax_destination_exists",
        "force=True",
    )
    assert "gs://bucket/exports/params_v2" in (crash.fix or "")


def test_shutils_destination_path_is_not_orbaxs() -> None:
    assert_not_claimed(
        "shutil.Error: Destination path '/data/out/ckpt' already exists",
        "orbax_destination_exists",
    )


def test_incomplete_step_of_the_v1_layout() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: Found incomplete checkpoint at /mnt/ckpt/run7/400.",
        "runtime_init_failure",
        "orbax_incomplete_checkpoint",
        "wait_until_finished()",
    )
    assert "/mnt/ckpt/run7/400 was" in (crash.fix or "")


def test_a_missing_checkpoint_is_not_an_incomplete_one() -> None:
    assert_not_claimed(
        "FileNotFoundError: Checkpoint at /mnt/ckpt/run7/400 not found.",
        "orbax_incomplete_checkpoint",
    )


def test_pytree_save_args_passed_positionally() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: Make sure to specify kwarg name `args=` when providing `PyTreeSaveArgs`.",
        "runtime_init_failure",
        "orbax_args_keyword",
        "args=",
    )


def test_args_of_the_wrong_type_are_not_a_keyword_slip() -> None:
    assert_not_claimed(
        "ValueError: Expected args of type `CheckpointArgs`; found <class 'dict'>.",
        "orbax_args_keyword",
    )


def test_composite_needed_without_backquotes() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: Must provide args of type Composite when dealing with multiple checkpointable "
        "objects.",
        "runtime_init_failure",
        "orbax_composite_args",
        "ocp.args.Composite(",
    )


def test_composite_refused_for_a_single_item_is_not_claimed() -> None:
    assert_not_claimed(
        "ValueError: Cannot provide `args` of type `Composite` when dealing with a single, unnamed (default) "
        "checkpointable object.",
        "orbax_composite_args",
    )


def test_create_with_active_processes_under_a_traceback() -> None:
    assert_fixed_by(
        _TRACE + "NotImplementedError: Option create=True with active_processes set is not supported. Please "
        "create the root directory yourself.",
        "runtime_init_failure",
        "orbax_create_with_active_processes",
        "create=False",
    )


def test_another_create_option_refusal_is_not_claimed() -> None:
    assert_not_claimed(
        "NotImplementedError: Option `create=True` with a read-only file system is not supported.",
        "orbax_create_with_active_processes",
    )


def test_per_process_directories_with_backquoted_primary_host() -> None:
    assert_fixed_by(
        "ValueError: enable_per_process_directory_creation can only be used when `primary_host` is None.",
        "runtime_init_failure",
        "orbax_per_process_dirs_primary_host",
        "primary_host=None",
    )


def test_legacy_api_primary_host_refusal_is_not_claimed() -> None:
    assert_not_claimed(
        "ValueError: `primary_host`=0 is not supported in legacy API.",
        "orbax_per_process_dirs_primary_host",
    )


def test_restore_without_any_restore_args() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: Must provide ArrayRestoreArgs to restore as jax.Array.",
        "shape_dtype_error",
        "orbax_restore_without_sharding",
        "ArrayRestoreArgs(sharding=",
    )


def test_a_sharding_of_the_wrong_type_is_not_a_missing_one() -> None:
    assert_not_claimed(
        "ValueError: `sharding` must be of type `jax.sharding.NamedSharding`.",
        "orbax_restore_without_sharding",
    )


def test_strict_restore_of_a_padded_vocabulary() -> None:
    crash = assert_fixed_by(
        "ValueError: Requested shape: (128256, 2048) is not compatible with the stored shape: "
        "(128000, 2048). Truncating/padding is disabled.",
        "shape_dtype_error",
        "orbax_restore_shape_strict",
        "strict=False",
    )
    assert "(128256, 2048)" in (crash.fix or "")
    assert "(128000, 2048)" in (crash.fix or "")


def test_a_broadcast_shape_error_is_not_a_strict_restore() -> None:
    assert_not_claimed(
        "ValueError: could not broadcast input array from shape (128000,2048) into shape (128256,2048)",
        "orbax_restore_shape_strict",
    )


def test_standard_save_of_a_scalar_under_a_traceback() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: StandardCheckpointHandler / StandardSave does not support single arrays or "
        "scalars. Use ArrayCheckpointHandler / ArraySave",
        "unsupported_op",
        "orbax_standard_save_single_array",
        "ocp.args.ArraySave",
    )


def test_standard_save_of_an_unsupported_leaf_type_is_not_claimed() -> None:
    assert_not_claimed(
        "ValueError: Unsupported type: <class 'str'> for key: ('config', 'name').",
        "orbax_standard_save_single_array",
    )
