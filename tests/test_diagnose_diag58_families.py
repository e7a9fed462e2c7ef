"""Families of wording that round diag58 added to the rules: the Cloud TPU API refusing an accelerator type.

The Cloud TPU API refuses to create an accelerator type that the zone does not offer with the capacity flags
the create command gave ("Accelerator type T as preemptible (false) and reserved (false) is not available in
zone Z", or without the flags: `accelerator_type_not_in_zone`, the type and zone named, the --preemptible,
--spot and --reserved flags to change or another type or zone).

Each case is another wording of its family (another type, zone and command than the corpus file), and the
family has a nearby wording it must not claim, so a rule matching only the collected log's text would fail
here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed


def test_a_spot_request_for_a_type_the_zone_lacks() -> None:
    crash = assert_fixed_by(
        "ERROR: (gcloud.compute.tpus.tpu-vm.create) generic::invalid_argument: Accelerator type v4-64 as "
        "preemptible (true) and reserved (false) is not available in zone us-central2-b, please contact "
        "support.",
        "runtime_init_failure",
        "accelerator_type_not_in_zone",
        "--reserved",
    )
    assert "v4-64" in crash.fix
    assert "us-central2-b" in crash.fix


def test_the_refusal_without_the_capacity_flags() -> None:
    crash = assert_fixed_by(
        "ERROR: (gcloud.compute.tpus.tpu-vm.create) INVALID_ARGUMENT: Accelerator type v5litepod-16 is not "
        "available in zone europe-west4-b.",
        "runtime_init_failure",
        "accelerator_type_not_in_zone",
        "--spot",
    )
    assert "europe-west4-b" in crash.fix


def test_a_gpu_type_missing_from_compute_engine_is_not_this_refusal() -> None:
    assert_not_claimed(
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - The resource 'projects/my-project/zones/us-central1-a/acceleratorTypes/nvidia-tesla-v100' was "
        "not found",
        "accelerator_type_not_in_zone",
    )
