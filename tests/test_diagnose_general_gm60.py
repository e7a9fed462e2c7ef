"""A request of the job that an authority refused before it ran (gm60): a permission denied, a 403 Forbidden,
gRPC's PERMISSION_DENIED or an admission webhook's or policy's denial, in a log nothing else placed, is a
start-up failure with the refusal's own cause and fix (`tpu_runtime/data/crash_cues/access_refusals.yaml`, a
cue of the final tier). Wordings written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import load_cues, weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log, load_rules, without_signatures
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())
LABEL = "refused by an authority"
TITLE = "A request of the job was refused before it ran"


def _ablated(text: str):  # type: ignore[no-untyped-def]
    return diagnose_log(text, "-", without_signatures(load_rules()), NO_NEIGHBOURS)


@pytest.mark.parametrize(
    "text",
    [
        'Error from server (Forbidden): jobs.batch "sprocket-train" is forbidden: User "dana" cannot create '
        'resource "jobs" in API group "batch" in the namespace "research"\n',
        "team-labels: 'validation error: [FORBIDDEN] every workload must carry the label cost-centre. The "
        "workload stays suspended until it does.'\n",
        "rpc error: code = PermissionDenied desc = caller widget-runner@proj-7.iam.gserviceaccount.com does "
        "not have tpu.nodes.create access\n",
        "mkdir: cannot create directory '/mnt/sprocket/ckpt': Permission denied\n",
        "2026-01-04 10:02:11 gizmo-agent: PERMISSION_DENIED: the queued resource request was refused for "
        "project proj-7\n",
    ],
)
def test_a_refused_request_that_nothing_else_placed_is_a_start_up_failure(text: str) -> None:
    assert weak_vote(text.splitlines()) is None  # no ordinary cue speaks: only the final tier does
    vote = weak_vote(text.splitlines(), final=True)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert any(LABEL in label for label in vote.labels)
    crash = _ablated(text)
    assert crash.category == "runtime_init_failure"
    assert crash.title == TITLE
    assert crash.facts["evidence_tier"] == "weak"
    assert "grant that permission" in crash.fix


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # a refused write beside a failure the ordinary cues read stays that failure
        (
            "W0104 profiler.py:88] could not write trace: Permission denied\n"
            "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
            "allocate 2.00G on TPU HBM.\n",
            "hbm_oom",
        ),
        # "forbidden" as a plain word of the program's story, and permissions granted, refuse nothing
        ("note: token 7 is forbidden by the sampler's bad-words list\n", "unknown"),
        ("checked permissions for gs://sprocket-data: all granted\n", "unknown"),
    ],
)
def test_nearby_wordings_keep_their_reading(text: str, category: str) -> None:
    crash = _ablated(text)
    assert crash.category == category
    assert crash.title != TITLE


def test_the_access_cue_is_in_the_final_tier_only() -> None:
    cues = [c for g in load_cues().categories for c in g.cues if LABEL in c.label]
    assert len(cues) == 1 and cues[0].final and cues[0].scope == "any"
