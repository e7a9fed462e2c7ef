"""Families of wording that round diag71 added to the rules: real error outputs from TPU issue threads.

Cloud TPU refusing a queued resource of several slices (Multislice) of a v2 or v3 accelerator type
(`queued_resource_multislice_before_v4`), a draccus config dataclass refusing keys it does not define
(`draccus_unknown_config_fields`), Kubernetes refusing a name longer than a DNS label (a JobSet's generated
pod names, `kubernetes_name_over_63_characters`), JAX APIs with a known first or last release
(`jax_random_keyarray_removed`, `jax_tree_namespace_too_old`) and torch_xla printing an XLAShardedTensor
whose global tensor was not materialized yet (`torch_xla_sharded_tensor_repr`).

Each case is another wording of its family (other values, flag order, another caller's traceback), and each
family has a nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_a_v3_multislice_queued_resource_with_flags_in_another_order() -> None:
    crash = assert_fixed_by(
        "$ gcloud compute tpus queued-resources create qr-7 --node-count=4 --zone=us-central1-a "
        "--accelerator-type=v3-32 --runtime-version=tpu-vm-base\n"
        "ERROR: (gcloud.compute.tpus.queued-resources.create) INVALID_ARGUMENT: Cloud TPU was unable to "
        "complete the operation. [EID: 0x1f2e3d4c5b6a7980]",
        "runtime_init_failure",
        "queued_resource_multislice_before_v4",
        "--node-count",
    )
    assert "not on v3-32" in (crash.fix or "")


def test_a_v4_multislice_or_a_single_v2_slice_is_not_that_refusal() -> None:
    error = (
        "ERROR: (gcloud.alpha.compute.tpus.queued-resources.create) INVALID_ARGUMENT: Cloud TPU was "
        "unable to complete the operation."
    )
    create = "$ gcloud alpha compute tpus queued-resources create q"
    assert_not_claimed(
        f"{create} --accelerator-type v4-8 --node-count 2\n{error}", "queued_resource_multislice_before_v4"
    )
    assert_not_claimed(
        f"{create} --accelerator-type v2-8 --node-count 1\n{error}", "queued_resource_multislice_before_v4"
    )


def test_draccus_refusing_a_nested_configs_keys() -> None:
    crash = assert_fixed_by(
        'File "/opt/venv/lib/python3.10/site-packages/draccus/parsers/decoding.py", line 149, in '
        "decode_dataclass\n"
        "draccus.utils.DecodingError: `trainer`: The fields `num_tpus`, `tpu_zone` are not valid for "
        "TrainerConfig",
        "runtime_init_failure",
        "draccus_unknown_config_fields",
        "remove the key",
    )
    assert "`num_tpus`, `tpu_zone`" in (crash.fix or "")


def test_a_draccus_class_that_cannot_be_built_is_not_an_unknown_key() -> None:
    assert_not_claimed(
        "draccus.utils.ParsingError: Couldn't instantiate class RecordConfig using the given arguments.",
        "draccus_unknown_config_fields",
    )


def test_a_replicated_job_name_over_the_label_limit() -> None:
    assert_fixed_by(
        'Error from server (Forbidden): error when creating "jobset.yaml": admission webhook '
        '"vjobset.kb.io" denied the request: spec.replicatedJobs[0].name: Invalid value: '
        '"slice-job-for-the-llama3-70b-v5p-256-pretraining-run": must be no more than 63 characters',
        "runtime_init_failure",
        "kubernetes_name_over_63_characters",
        "shorten",
    )


def test_another_jobset_validation_is_not_the_name_length() -> None:
    assert_not_claimed(
        'Error from server (Forbidden): error when creating "jobset.yaml": admission webhook '
        '"vjobset.kb.io" denied the request: spec.replicatedJobs[0].replicas: Invalid value: -1: must be '
        "greater than or equal to 0",
        "kubernetes_name_over_63_characters",
    )


def test_key_array_named_by_a_library_on_a_newer_jax() -> None:
    assert_fixed_by(
        'File "/usr/local/lib/python3.10/dist-packages/diffusers/models/modeling_flax_utils.py", '
        "line 195, in FlaxModelMixin\n"
        "    def init_weights(self, rng: jax.random.KeyArray) -> Dict:\n"
        "AttributeError: jax.random.KeyArray was removed in JAX v0.4.24; use jax.Array instead.",
        "version_mismatch",
        "jax_random_keyarray_removed",
        "0.4.23",
    )


def test_another_missing_jax_random_name_is_not_key_array() -> None:
    assert_not_claimed(
        "AttributeError: module 'jax.random' has no attribute 'key_data'", "jax_random_keyarray_removed"
    )


def test_jax_tree_called_by_another_library_on_an_old_jax() -> None:
    assert_fixed_by(
        'File "/home/user/.local/lib/python3.8/site-packages/optax/_src/utils.py", line 41, in <module>\n'
        "    return jax.tree.map(lambda x: x, params)\n"
        "AttributeError: module 'jax' has no attribute 'tree'",
        "version_mismatch",
        "jax_tree_namespace_too_old",
        "0.4.25",
    )


def test_a_missing_tree_map_is_not_the_tree_namespace() -> None:
    assert_not_claimed(
        "AttributeError: module 'jax' has no attribute 'tree_map'", "jax_tree_namespace_too_old"
    )


def test_printing_a_sharded_tensor_under_the_newer_module_path() -> None:
    assert_fixed_by(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "    print(xt)\n"
        '  File "/usr/local/lib/python3.10/site-packages/torch_xla/distributed/spmd/xla_sharded_tensor.py", '
        "line 150, in __repr__\n"
        "AttributeError: 'XLAShardedTensor' object has no attribute 'global_tensor'",
        "version_mismatch",
        "torch_xla_sharded_tensor_repr",
        "upgrade torch_xla",
    )


def test_mark_sharding_of_a_sharded_tensor_is_not_the_repr_bug() -> None:
    assert_not_claimed(
        '  File "/usr/local/lib/python3.10/site-packages/torch_xla/distributed/spmd/xla_sharding.py", '
        "line 664, in unwrap_sharded_tensor\n"
        "    return t.global_tensor\n"
        "AttributeError: 'XLAShardedTensor' object has no attribute 'global_tensor'",
        "torch_xla_sharded_tensor_repr",
    )
