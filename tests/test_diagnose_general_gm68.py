"""A cloud or a cluster that will not give the job its resources or start its pod (gm68,
`crash_cues/capacity_admission.yaml`): a quota or a zone's capacity, a Kueue queue that will not admit the
workload, a pod's waiting reason or event that says the program never ran. These lines hold no error word and
are often fields of a structured status, so the cues read every line. Wordings written for these tests, each
with nearby wordings the family must not claim."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())

CAPACITY = "a cloud quota or a zone's capacity"
ADMISSION = "a Kueue queue that will not admit"
POD = "a Kubernetes pod that never started its program"
CLOUD_TPU_REFUSAL = "the Cloud TPU API refusing a create request"


def _labels(lines: list[str]) -> list[str]:
    vote = weak_vote(lines)
    return [] if vote is None else vote.labels


@pytest.mark.parametrize(
    ("lines", "label"),
    [
        (["Insufficient quota to satisfy the widget request"], CAPACITY),
        (["Quota 'WIDGETS_PER_REGION' exceeded. Limit: 4.0 in region us-east9."], CAPACITY),
        (["code: ZONE_RESOURCE_POOL_EXHAUSTED", "The zone does not have enough resources left."], CAPACITY),
        (["The zone 'z9' does not have enough resources available to fulfill the request."], CAPACITY),
        (["status:", "  conditions:", "  - reason: Inadmissible", '    status: "False"'], ADMISSION),
        (["    message: 'Can''t admit new workloads: GizmoMissing'"], ADMISSION),
        (["  Message:   ClusterQueue widget-queue doesn't exist"], ADMISSION),
        (['  Warning  FailedMount  12s  kubelet  MountVolume.SetUp failed for volume "widgets"'], POD),
        (["    state:", "      waiting:", "        reason: ImagePullBackOff"], POD),
        (["  Reason:  CreateContainerConfigError"], POD),
        (
            ['Error 400: Cloud TPU received an invalid argument. The field "Gadget" cannot be "x".'],
            CLOUD_TPU_REFUSAL,
        ),
        (
            ["Cloud TPU received a bad request. the accelerator v9-16 was not found in zone xx-east9-z"],
            CLOUD_TPU_REFUSAL,
        ),
    ],
)
def test_a_job_the_cloud_or_queue_will_not_place_is_a_start_up_failure(lines: list[str], label: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert any(label in got for got in vote.labels)
    crash = diagnose_log("\n".join(lines) + "\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "runtime_init_failure"


@pytest.mark.parametrize(
    "line",
    [
        # device memory exhausted is no zone's pool; a reason that admits the job is no refusal
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.00G.",
        "The widget quota is 4 per region.",
        "  - reason: Admitted",
        "ClusterQueue widget-queue is active",
        # a container that ran and exited is left to its own log's lines
        "        reason: CrashLoopBackOff",
        "  Warning  BackOff  12s  kubelet  Back-off restarting failed container widget",
        # a bad request to another service is no Cloud TPU refusal
        "googleapi: Error 400: Invalid value for field 'resource.name': 'Widget_1', badRequest",
    ],
)
def test_nearby_capacity_and_queue_wordings_are_not_claimed(line: str) -> None:
    assert not any(
        label in got for label in (CAPACITY, ADMISSION, POD, CLOUD_TPU_REFUSAL) for got in _labels([line])
    )
