"""The final tier of the weak cues, told apart once more by what the exception names (gm56): an uncaught check
exception that refuses a kind of input (a type, a quantization scheme, a model architecture) and names no
setting is an input the code has no path for (`unsupported_op`), not a refused configuration
(`tpu_runtime/data/crash_cues/configuration_checks.yaml`). Wordings written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())
LABEL = "refuses a type, scheme or architecture"


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: Sprocket 3 is a torch.Tensor; tensors cannot be hashed into the gizmo table.",
        "RuntimeError: Invalid argument: Type of the widget operand must be a dense tensor: got a list.",
        "AssertionError: The gizmo kernel only handles dense inputs, got a value of type <class 'tuple'>.",
        "ValueError: Scheme W2A16Int is refused here: only per-channel quantization is handled.",
        "ValueError: Widget pooling only handles Llama and Gemma architectures for now.",
        "ValueError: Expected a tf.RaggedTensor for the sprocket buffer, received a generator.",
    ],
)
def test_a_check_refusing_an_input_kind_is_an_unsupported_input(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "unsupported_op"
    assert vote.runner_up is None  # the start-up reading is overridden, not outvoted
    assert any(LABEL in label for label in vote.labels)
    crash = diagnose_log(f"Traceback (most recent call last):\n{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "unsupported_op"
    assert crash.facts["evidence_tier"] == "weak"
    assert crash.title == "An input kind the code does not handle"


def test_the_cue_says_its_own_cause_and_fix_where_no_sub_rule_applies() -> None:
    line = "AssertionError: The gizmo kernel only handles dense inputs, got a value of type <class 'tuple'>."
    crash = diagnose_log(f"{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "unsupported_op"
    assert "refused the kind of thing it was given" in crash.cause
    assert "Give the call an input of a kind the message says it handles" in crash.fix


@pytest.mark.parametrize(
    "line",
    [
        # a setting named in any of the forms a configuration check uses keeps the start-up reading
        "ValueError: widget_pool_size must be an int type, got 2.5.",
        "ValueError: GIZMO_SCHEME names an unknown quantization scheme.",
        "AssertionError: --sprocket-kind accepts no type but dense here.",
        "ValueError: `gizmo` of type <class 'str'> cannot be parsed.",
        "ValueError: mode=fast refuses the sprocket architecture.",
        "RuntimeError: The gizmo config has no architecture entry for this model.",
        "ValueError: This optimizer only handles parameter groups of type dict.",
        # a machine's or accelerator's type is a setting of the job, not a kind of input
        "ValueError: Invalid accelerator type v9-gizmo-16 for this zone.",
        "RuntimeError: The node type refused the widget pool.",
        # a refusal that names no kind of input at all stays what it was
        "ValueError: Sprocket pooling with more than one shard is refused.",
    ],
)
def test_a_check_naming_a_setting_or_no_kind_stays_a_refused_configuration(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "runtime_init_failure"


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # memory words and a bug report are other families, as for the other check exceptions
        ("ValueError: host memory of type pinned is refused for the gizmo buffer.\n", "unknown"),
        ("RuntimeError: widget type check reached an unhandled state. This is a gizmolib bug.\n", "unknown"),
        # classes the final tier does not read are left alone
        ("TypeError: gizmo() got a value of type <class 'list'>\n", "unknown"),
        # a NotImplementedError keeps its own reading (a missing code path)
        ("NotImplementedError: widgets of type <class 'tuple'>\n", "unsupported_op"),
        # a numeric dtype named as the type found is a dtype check, read before the final tier (diag74)
        (
            "RuntimeError: Invalid argument: Type of the widget operand must be integer: got f16[4,4].\n",
            "shape_dtype_error",
        ),
        # jax's array types keep the shape reading; naming a type as well leaves a tie
        ("ValueError: A jax.Array of this kind is refused by the gizmo.\n", "shape_dtype_error"),
        ("ValueError: Only jax.Array and plain types are taken by the gizmo.\n", "unknown"),
    ],
)
def test_nearby_exceptions_are_not_claimed(text: str, category: str) -> None:
    assert diagnose_log(text, "-", similar=NO_NEIGHBOURS).category == category


def test_an_ordinary_cue_still_decides_first() -> None:
    # the final tier speaks only when nothing else placed the log; a shape line naming a type is a shape error
    text = "ValueError: shapes (3, 4) and (5, 6) must match for the widget of type dense.\n"
    crash = diagnose_log(text, "-", similar=NO_NEIGHBOURS)
    assert crash.category == "shape_dtype_error"
    assert not any(LABEL in label for label in crash.facts.get("weak_cues", []))
