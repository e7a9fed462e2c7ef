"""Families of wording that round diag70 added to the rules: AXLearn's mesh, input and launch checks.

AXLearn (https://github.com/apple/axlearn), a JAX trainer built for TPU, refuses a mesh, an input pipeline or
a GKE launch that cannot work and says what must hold: a mesh_shape whose -1 axis the devices cannot fill
(`axlearn_mesh_infer_minus_one`), a plain mesh_shape on several slices with no axis to split over them
(`axlearn_mesh_first_axis_slices`), a HybridMeshShape whose two shapes differ in length
(`axlearn_hybrid_mesh_lengths`), an input dispatcher whose feeds do not divide the global batch
(`axlearn_input_dispatch_feeds`), a trainer option the release dropped (`axlearn_dropped_trainer_option`), a
job name too long or malformed for Kubernetes (`k8s_job_name_too_long`, `k8s_job_name_invalid_characters`), a
flag that another flag requires (`required_flag_with_other_flag`), gradient accumulation steps that do not
divide the batch (`axlearn_grad_accum_batch_steps`) and an input no partition rule covers
(`axlearn_input_partition_no_rule`).

Each case is another wording of its family (other values, a sibling check, under a traceback), and each
family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def _trace(path: str, function: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/opt/venv/lib/python3.10/site-packages/axlearn/{path}", line 120, in {function}\n'
        "    raise ValueError(\n"
    )


def test_a_twelve_way_model_axis_on_thirty_two_devices() -> None:
    crash = assert_fixed_by(
        _trace("common/utils.py", "infer_mesh_shape")
        + "ValueError: Unable to infer -1 in mesh shape (1, 1, -1, 1, 1, 12) as num_devices 32 is not a "
        "multiple of the product 12 of mesh axes.",
        "runtime_init_failure",
        "axlearn_mesh_infer_minus_one",
        "mesh_rules",
    )
    assert "(12 against 32 devices in (1, 1, -1, 1, 1, 12))" in (crash.fix or "")


def test_two_minus_one_axes_is_not_the_device_count_check() -> None:
    assert_not_claimed(
        "ValueError: Only one axis can be -1 in mesh_shape=(1, -1, 1, -1, 1, 1).",
        "axlearn_mesh_infer_minus_one",
    )


def test_no_mesh_axis_divisible_by_the_slices() -> None:
    crash = assert_fixed_by(
        _trace("common/utils.py", "create_device_mesh")
        + "ValueError: At least one axis of mesh_shape=(1, 1, 1, 1, 1, 1) must be divisible by "
        "num_granules=2.",
        "runtime_init_failure",
        "axlearn_mesh_first_axis_slices",
        "HybridMeshShape",
    )
    assert "(2 slices)" in (crash.fix or "")


def test_the_granule_assert_is_not_the_mesh_axis_check() -> None:
    assert_not_claimed(
        "AssertionError: Number of devices must be divisible by number of granules.",
        "axlearn_mesh_first_axis_slices",
    )


def test_a_two_axis_ici_shape_beside_a_three_axis_dcn_shape() -> None:
    crash = assert_fixed_by(
        "ValueError: self.ici_mesh_shape=(1, 8) should have the same length as (2, 1, 1).",
        "runtime_init_failure",
        "axlearn_hybrid_mesh_lengths",
        "mesh_axis_names",
    )
    assert "(ici_mesh_shape (1, 8) against dcn_mesh_shape (2, 1, 1))" in (crash.fix or "")


def test_a_mesh_shape_against_its_axis_names_is_not_the_hybrid_check() -> None:
    assert_not_claimed(
        "ValueError: mesh_shape (1, 8) should have the same length as mesh_axis_names "
        "('data', 'fsdp', 'model')",
        "axlearn_hybrid_mesh_lengths",
    )


def test_the_physical_batch_over_the_physical_feeds() -> None:
    assert_fixed_by(
        _trace("common/input_dispatch.py", "__init__")
        + "ValueError: cfg.global_physical_batch_size=30 must be divisible by cfg.num_physical_feeds=4",
        "runtime_init_failure",
        "axlearn_input_dispatch_feeds",
        "global_physical_batch_size a multiple of 4",
    )


def test_a_feed_batch_below_its_logical_size_is_not_the_divisibility_check() -> None:
    assert_not_claimed(
        "ValueError: self.feed_physical_batch_size=2 must be >= self.feed_logical_batch_size=4",
        "axlearn_input_dispatch_feeds",
    )


def test_another_dropped_option_set_to_true() -> None:
    assert_fixed_by(
        _trace("common/trainer.py", "__init__")
        + "ValueError: Setting save_input_iterator to True is no longer supported.\n"
        "The config option will be removed in a future AXLearn version.",
        "runtime_init_failure",
        "axlearn_dropped_trainer_option",
        "save_input_iterator override (save_input_iterator=True)",
    )


def test_an_environment_variable_no_longer_supported_is_not_a_dropped_option() -> None:
    assert_not_claimed(
        "ValueError: Setting JAX_TRACEBACK_FILTERING to off is no longer supported.",
        "axlearn_dropped_trainer_option",
    )


def test_another_job_name_eleven_characters_over() -> None:
    crash = assert_fixed_by(
        _trace("cloud/gcp/utils.py", "validate_jobset_name")
        + "ValueError: Job name bob-llama3-70b-sft-ultrachat-lr1e-5-seed7-job-2-64-abcde-xyzw "
        "exceeds max (63) by 11 chars.",
        "runtime_init_failure",
        "k8s_job_name_too_long",
        "--name",
    )
    assert "at least 11 characters shorter" in (crash.fix or "")


def test_a_job_name_with_capitals_and_underscores() -> None:
    assert_fixed_by(
        "ValueError: Job name Bob_Run-job-1-4-abcde contains invalid characters. It should only contain "
        "lowercase alphanumerics, hyphens and periods, and must start and end with alphanumerics.",
        "runtime_init_failure",
        "k8s_job_name_invalid_characters",
        "--name",
    )


def test_a_resource_name_check_is_not_the_job_name_length() -> None:
    text = (
        "ValueError: gke-tpu-abc is not a valid resource name. Please see "
        "https://cloud.google.com/compute/docs/naming-resources#resource-name-format."
    )
    assert_not_claimed(text, "k8s_job_name_too_long")
    assert_not_claimed(text, "k8s_job_name_invalid_characters")


def test_another_flag_required_by_another() -> None:
    crash = assert_fixed_by(
        _trace("cloud/gcp/jobs/launch.py", "from_flags")
        + "ValueError: --bundler_spec is required when --bundler_type is set.",
        "runtime_init_failure",
        "required_flag_with_other_flag",
        "pass --bundler_spec",
    )
    assert "drop --bundler_type" in (crash.fix or "")


def test_a_replica_range_is_not_a_required_flag() -> None:
    assert_not_claimed(
        "ValueError: --max_replicas (2) must be >= --min_replicas (4).", "required_flag_with_other_flag"
    )


def test_the_minibatch_wording_of_gradient_accumulation() -> None:
    assert_fixed_by(
        _trace("common/gradient_accumulation.py", "reshape_for_scan")
        + "ValueError: minibatch_size 6 does not evenly divide global batch size of 32",
        "shape_dtype_error",
        "axlearn_grad_accum_batch_steps",
        "grad_acc_steps",
    )


def test_non_positive_accumulation_steps_is_not_the_batch_check() -> None:
    assert_not_claimed(
        "ValueError: Accumulation steps need to be a positive integer.", "axlearn_grad_accum_batch_steps"
    )


def test_a_nested_input_no_partition_rule_covers() -> None:
    crash = assert_fixed_by(
        _trace("common/input_base.py", "maybe_constrain")
        + "ValueError: No rules matched input_batch['target_labels/segment_ids']. If you intended to leave "
        "the input unconstrained, specify `PartitionSpec.UNCONSTRAINED` explicitly.",
        "shape_dtype_error",
        "axlearn_input_partition_no_rule",
        "partition_by_path_ndim",
    )
    assert "input_batch['target_labels/segment_ids']" in (crash.fix or "")


def test_a_spec_tree_mismatch_is_not_the_missing_rule() -> None:
    assert_not_claimed(
        "ValueError: specification must be a tree prefix of the corresponding value, got specification "
        "PartitionSpec('data',) for value tree PyTreeDef({'input_ids': *, 'image': *}).",
        "axlearn_input_partition_no_rule",
    )
