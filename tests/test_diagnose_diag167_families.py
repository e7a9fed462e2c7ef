"""Round diag167's crash-rule fixes and cue, with wordings written here (not the corpus files) and nearby
wordings they must not claim: Kueue's flavor assignment and Ray's TPU chip-count check for TPU jobs that never
start on a cluster (`crash_rules/runtime_init_failure.yaml`, `crash_cues/capacity_admission.yaml`;
docs/diagnose-accuracy.md, "Round diag167")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed, diagnose_rules_alone


def workload_status(message: str) -> str:
    """A Kueue Workload's QuotaReserved condition as `kubectl describe workload` prints it (names ours)."""
    return (
        "Status:\n"
        "  Conditions:\n"
        "    Last Transition Time:  2026-03-02T08:00:00Z\n"
        f"    Message:               {message}\n"
        "    Reason:                Pending\n"
        "    Status:                False\n"
        "    Type:                  QuotaReserved\n"
    )


def test_a_resource_no_resource_group_covers_is_named_with_the_covered_resources_fix() -> None:
    text = workload_status(
        "couldn't assign flavors to pod set trainer: resource google.com/tpu unavailable in ClusterQueue"
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "kueue_resource_not_covered", "coveredResources")
    assert "covers google.com/tpu" in crash.fix, crash.fix


def test_a_missing_cluster_queue_keeps_its_own_fix() -> None:
    text = workload_status("ClusterQueue research-tpu doesn't exist")
    assert_not_claimed(text, "kueue_resource_not_covered")
    assert_fixed_by(text, "runtime_init_failure", "kueue_cluster_queue_missing", "research-tpu")


def test_a_flavor_whose_labels_contradict_the_selectors_is_named() -> None:
    text = workload_status(
        "couldn't assign flavors to pod set workers: flavor v6e-4x4 doesn't match node affinity"
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "kueue_flavor_node_affinity", "nodeLabels")
    assert "ResourceFlavor v6e-4x4" in crash.fix, crash.fix


def test_the_scheduler_finding_no_node_for_the_selectors_keeps_its_own_fix() -> None:
    text = (
        "  Warning  FailedScheduling  30s  default-scheduler  0/3 nodes are available: 3 node(s) didn't match"
        " Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for"
        " scheduling.\n"
    )
    assert_not_claimed(text, "kueue_flavor_node_affinity")
    assert_fixed_by(text, "runtime_init_failure", "gke_node_selector_unmatched", "gke-tpu-topology")


def test_a_ray_tpu_request_of_an_unsupported_chip_count_is_told_the_chips_per_host() -> None:
    text = (
        "ValueError: The number of requested 'TPU' was set to 6 which is not a supported chip configuration."
        " Supported configs: (1, 2, 4, 8)\n"
    )
    crash = assert_fixed_by(text, "runtime_init_failure", "ray_tpu_chip_count_unsupported", "per host")
    assert "(1, 2, 4, 8), and 6 is not one" in crash.fix, crash.fix


def test_another_ray_option_check_is_not_claimed() -> None:
    text = "ValueError: The keyword 'num_cpus' only accepts None, 0 or a positive number\n"
    assert_not_claimed(text, "ray_tpu_chip_count_unsupported")


def test_the_cue_places_any_flavor_assignment_refusal_with_the_rules_ablated() -> None:
    text = workload_status(
        "couldn't assign flavors to pod set launcher: insufficient unused quota for cpu in flavor spot,"
        " 3 more needed"
    )
    assert ablated_verdict(text)[0] == "runtime_init_failure"


def test_the_cue_does_not_read_flavors_of_another_subject() -> None:
    text = "WARNING: could not assign flavors to the recipe: unknown ingredient vanilla\n"
    assert ablated_verdict(text)[0] != "runtime_init_failure"
    assert diagnose_rules_alone(text).evidence.fix_rule != "runtime_init_failure/kueue_flavor_node_affinity"
