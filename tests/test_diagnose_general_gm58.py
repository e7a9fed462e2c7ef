"""A refusal whose own remedy is a setting of the job (gm58): a message that refuses a feature and then says
to set, unset, export or remove an environment variable or a launch flag is a start-up configuration
(`runtime_init_failure`), over the unsupported-op and version-skew readings of its refusal words
(`tpu_runtime/data/crash_cues/setting_remedies.yaml`); two cues that override each other are settled by the
heavier one (`crash_cues._scores`); and the final tier's start-up reading takes a bare RuntimeError only when
it names a setting (`configuration_checks.yaml`). Wordings written for these tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tpu_runtime.diagnose.crash_cues import CueConfig, load_cues, weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log, load_rules, without_signatures
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())
LABEL = "own remedy is to set, unset or remove"
REFUSAL = "NotImplementedError: Sprocket streaming is not supported on TPU."


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: Sprocket streaming is not supported on TPU yet. Set GIZMO_STREAM_MODE=2 for "
        "the buffered path.",
        "ValueError: WIDGET_FAST_PATH is no longer supported and does nothing. Unset it; the fast path is "
        "WIDGET_PATH=fast.",
        "RuntimeError: Gizmo pooling does not support the old scheduler on TPU; pass --gizmo-scheduler=v2 "
        "instead.",
        "NotImplementedError: The sprocket kernel is not implemented for this backend, so please export "
        "SPROCKET_IMPL=ref.",
        "NotImplementedError: Widget caching on TPU requires the shared pool; remove GIZMO_SHARED_POOL=0.",
    ],
)
def test_a_refusal_that_names_a_setting_as_its_remedy_is_a_start_up_configuration(line: str) -> None:
    vote = weak_vote([line])
    assert vote is not None and vote.category == "runtime_init_failure"
    assert any(LABEL in label for label in vote.labels)
    crash = diagnose_log(f"{line}\n", "-", without_signatures(load_rules()), NO_NEIGHBOURS)
    assert crash.category == "runtime_init_failure"
    assert crash.facts["evidence_tier"] == "weak"


@pytest.mark.parametrize(
    ("line", "category"),
    [
        # the same refusals without a setting to change keep their readings
        ("NotImplementedError: Sprocket streaming is not supported on TPU yet.", "unsupported_op"),
        ("ValueError: WIDGET_FAST_PATH has been removed in release 3 of gizmo.", "version_mismatch"),
        # a setting mentioned in the story, not asked of the reader
        (
            "NotImplementedError: Sprocket streaming is not supported on TPU, which the launcher chose when "
            "it set GIZMO_STREAM_MODE=2.",
            "unsupported_op",
        ),
        # a switch that only adds diagnostics is no remedy
        (f"{REFUSAL} Set TORCH_LOGS=+gizmo for details.", "unsupported_op"),
        (f"{REFUSAL} Set GIZMO_DEBUG_DUMP=1 to see why.", "unsupported_op"),
    ],
)
def test_nearby_wordings_keep_their_reading(line: str, category: str) -> None:
    vote = weak_vote([line])
    assert vote is not None and vote.category == category
    assert not any(LABEL in label for label in vote.labels)


def test_jax_traceback_note_is_not_the_remedy_of_the_error_it_precedes() -> None:
    lines = [
        "jax.errors.SimplifiedTraceback: For simplicity, JAX has removed its internal frames from the "
        "traceback of the following exception. Set JAX_TRACEBACK_FILTERING=off to include these.",
        "NotImplementedError: Sprocket streaming is not supported on TPU yet.",
    ]
    vote = weak_vote(lines)
    assert vote is not None and vote.category == "unsupported_op"


def _mutual(tmp_path: Path, first: float, second: float) -> CueConfig:
    """Two categories whose cues override each other, with the weights given."""
    path = tmp_path / f"mutual_{first}_{second}.yaml"  # load_cues caches by path
    path.write_text(
        "categories:\n"
        "  - category: runtime_init_failure\n    cues:\n"
        f"      - label: 'remedy'\n        regex: 'Set GIZMO_MODE'\n        weight: {first}\n"
        "        overrides: [unsupported_op]\n"
        "  - category: unsupported_op\n    cues:\n"
        f"      - label: 'refusal'\n        regex: 'not supported'\n        weight: {second}\n"
        "        overrides: [runtime_init_failure]\n",
        encoding="utf-8",
    )
    return load_cues(path, families=None)


def test_two_cues_overriding_each_other_are_settled_by_weight(tmp_path: Path) -> None:
    lines = ["RuntimeError: gizmo streaming is not supported here. Set GIZMO_MODE=2."]
    heavier_remedy = weak_vote(lines, _mutual(tmp_path, 0.55, 0.5))
    assert heavier_remedy is not None and heavier_remedy.category == "runtime_init_failure"
    heavier_refusal = weak_vote(lines, _mutual(tmp_path, 0.5, 0.55))
    assert heavier_refusal is not None and heavier_refusal.category == "unsupported_op"
    # at equal weight both readings are dropped, as before: no category
    assert weak_vote(lines, _mutual(tmp_path, 0.5, 0.5)) is None


# The final tier's start-up reading and a bare RuntimeError (gm58, second step): Python raises RuntimeError
# for an error that fits no other class
# (https://docs.python.org/3/library/exceptions.html#RuntimeError), so one that names no setting is no
# evidence of a refused configuration and leaves the log `unknown`.
FINAL_LABEL = "an uncaught check exception (ValueError"


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Aborted: Gizmo session 4f2a91 is not found.",
        "RuntimeError: Check failed: it != sprockets.end()",
        "RuntimeError: The sprocket stream ended before its last frame.",
    ],
)
def test_a_bare_runtime_error_naming_no_setting_is_left_unknown(line: str) -> None:
    assert weak_vote([line]) is None  # no ordinary cue speaks about these wordings
    assert weak_vote([line], final=True) is None
    crash = diagnose_log(f"{line}\n", "-", without_signatures(load_rules()), NO_NEIGHBOURS)
    assert crash.category == "unknown"


@pytest.mark.parametrize(
    "line",
    [
        # a setting named in the forms a configuration check uses keeps the start-up reading
        "RuntimeError: sprocket_pool_size is larger than the gizmo allows.",
        "RuntimeError: GIZMO_POOL names no sprocket pool.",
        "RuntimeError: The gizmo config has no entry for sprockets.",
        # the other check exceptions keep it with or without a setting
        "ValueError: Aborted: Gizmo session 4f2a91 is not found.",
        "AssertionError: The sprocket stream ended before its last frame.",
    ],
)
def test_a_runtime_error_naming_a_setting_and_other_check_exceptions_keep_the_reading(
    line: str,
) -> None:
    assert weak_vote([line]) is None
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert any(FINAL_LABEL in label for label in vote.labels)
