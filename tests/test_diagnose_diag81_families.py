"""Round diag81's general mechanism, with wordings written here (not the corpus files) and nearby wordings it
must not claim: a Kubernetes admission webhook refusing an object at creation is a start-up failure, its
reason quoted by a fallback, and a Ray TPU worker group refused by its webhook is told which fields must agree
(docs/diagnose-accuracy.md, "Round diag81")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, diagnose_rules_alone

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_an_admission_webhook_denial_is_a_start_up_failure_quoting_its_reason() -> None:
    text = (
        'Error from server (Forbidden): error when creating "train.yaml": admission webhook '
        '"vworkload.kueue.example.io" denied the request: spec.podSets[0].count: Invalid value: 0: '
        "count of a pod set has to be positive\n"
    )
    assert _cue(text) == "runtime_init_failure"
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/from_facts_admission_denial")
    assert "count of a pod set has to be positive" in fix and "numOfHosts" not in fix
    full = diagnose_rules_alone(text)
    assert full.category == "runtime_init_failure"
    # a webhook that let the object in refuses nothing
    allowed = 'I1204 09:00:00.000000 1 server.go:88] admission webhook "v.example.io" allowed the request\n'
    assert _cue(allowed) is None
    assert ablated_verdict(allowed)[0] == "unknown"


def test_a_denial_that_refuses_a_feature_as_unsupported_is_left_to_the_unsupported_op_cues() -> None:
    text = (
        'Error from server (Forbidden): error when creating "np.yaml": admission webhook '
        '"v.nodepools.example.io" denied the request: spec.placement is not supported on TPU node pools\n'
    )
    assert _cue(text) == "unsupported_op"
    assert ablated_verdict(text)[0] == "unsupported_op"


def test_a_ray_tpu_worker_group_refused_at_admission_is_told_which_fields_must_agree() -> None:
    text = (
        'Error from server (Forbidden): error when creating "serve.yaml": admission webhook '
        '"rayclusters.tpu-admission.example.svc" denied the request: worker group tpu-pool lists 2 hosts '
        "where its slice holds 4\n"
    )
    category, rule, fix = ablated_verdict(text)
    assert category == "runtime_init_failure"
    assert rule == "runtime_init_failure/from_facts_ray_tpu_webhook_denial"
    assert "numOfHosts" in fix and "google.com/tpu" in fix and "gke-tpu-topology" in fix
    assert "lists 2 hosts where its slice holds 4" in fix
    # "array" holds "ray" but names no Ray worker group: the general denial fallback answers
    other = (
        'admission webhook "v.arrays.example.io" denied the request: spec.array.size: Invalid value: 3: must '
        "be even\n"
    )
    assert ablated_verdict(other)[1] == "runtime_init_failure/from_facts_admission_denial"
