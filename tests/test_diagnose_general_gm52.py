"""Version skew read from the class an AttributeError names (gm52): an object whose class is qualified by a
module of a TPU-stack library lacks an attribute that another release of that library has
(`tpu_runtime/data/crash_cues/library_attributes.yaml`). Wordings written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, without_signatures
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())
LABEL = "an object of a named TPU-stack library lacks an attribute ('jax.X' object has no attribute)"


def _ablated(text: str) -> str:
    """The category with the rules written for known logs removed: what the cue decides on a new log."""
    rules = without_signatures(fallback_rules())
    return diagnose_log(text, "-", rules, NO_NEIGHBOURS).category


@pytest.mark.parametrize(
    "line",
    [
        "AttributeError: 'jaxlib.xla_extension.GizmoBuffer' object has no attribute 'sprocket_handle'",
        "AttributeError: type object 'flax.nnx.Widget' has no attribute 'from_gizmo'",
        "AttributeError: 'torch_xla.core.Sprocket' object has no attribute 'widget_rank'",
        "  AttributeError: 'orbax.checkpoint.GizmoHandler' object has no attribute 'restore_widgets'",
    ],
)
def test_a_stack_library_object_lacking_an_attribute_is_version_skew(line: str) -> None:
    vote = weak_vote([line])
    assert vote is not None and vote.category == "version_mismatch"
    assert LABEL in vote.labels
    text = f'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n{line}\n'
    assert _ablated(text) == "version_mismatch"


@pytest.mark.parametrize(
    "line",
    [
        # the user's own classes, qualified or not, and None name no library release: usually a bug
        "AttributeError: '__main__.GizmoModel' object has no attribute 'widget'",
        "AttributeError: 'gizmo_trainer.models.Sprocket' object has no attribute 'encoder'",
        "AttributeError: 'NoneType' object has no attribute 'sprocket'",
        "AttributeError: 'GizmoModel' object has no attribute 'widget'",
        # a package whose name only starts like one of the stack's
        "AttributeError: 'jaxtyping_gizmo.Widget' object has no attribute 'shape'",
    ],
)
def test_other_objects_lacking_an_attribute_are_not_read_as_skew(line: str) -> None:
    vote = weak_vote([line])
    assert vote is None or LABEL not in vote.labels
    assert _ablated(f"{line}\n") != "version_mismatch"
