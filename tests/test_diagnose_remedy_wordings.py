"""Remedies a message words in ways the suggestion reader used to miss, and a sharding fallback that reads
what a sharding message says instead of assuming divisibility. The wordings are written for these tests (no
corpus file's wording); each family has a nearby wording it must not claim."""

from __future__ import annotations

import pytest

from tests.crash_helpers import ablated_verdict
from tpu_runtime.diagnose.crash_suggestion import find_suggestions, suggestion_fix

# ------------------------------------------------------------------------------------- a stated cause

CAUSES = [
    (
        "TypeError: cannot trace the argument `cfg`.\n"
        "This usually means that a frozen_config object reached the traced step instead of its fields.",
        "frozen_config",
    ),
    (
        "ValueError: the scan body returned nothing.\n"
        "This can happen if the body_fn never writes to carry_state or returns None.",
        "carry_state",
    ),
    (
        "RuntimeError: the queue is empty. A common cause is a prefetch_depth of zero in the loader.",
        "prefetch_depth",
    ),
]

NOT_CAUSES = [
    # a cause that names nothing to change
    "RuntimeError: the queue is empty.\nThis usually means something went wrong earlier.",
    # "this" as the subject of an ordinary statement, not a cause
    "ValueError: this function takes 2 positional arguments but 3 were given",
    # a cause sentence that only points elsewhere
    "RuntimeError: step failed.\nThis usually means you should file a bug with the stack trace.",
]


@pytest.mark.parametrize(("log", "named"), CAUSES)
def test_a_stated_cause_is_quoted_with_what_it_names(log: str, named: str) -> None:
    found = [s for s in find_suggestions(log.splitlines()) if s.kind == "cause"]
    assert len(found) == 1
    assert named in found[0].named
    fix = suggestion_fix(found)
    assert fix.startswith("The message names the likely cause:")
    assert f"`{named}`" in fix


@pytest.mark.parametrize("log", NOT_CAUSES)
def test_nearby_wordings_state_no_cause(log: str) -> None:
    assert [s for s in find_suggestions(log.splitlines()) if s.kind == "cause"] == []


def test_advice_on_the_line_wins_over_a_stated_cause() -> None:
    line = "ValueError: no batch. This usually means shuffle_size is 0. Set shuffle_size to at least 1."
    found = find_suggestions([line])
    assert [s.kind for s in found] == ["advice"]


def test_a_stated_cause_comes_after_the_fallbacks_and_before_the_paragraph() -> None:
    log = (
        "Traceback (most recent call last):\n"
        "ValueError: Pallas lowering failed: the kernel body is empty.\n"
        "This can happen if the kernel body never writes an output_ref.\n"
    )
    category, fix_rule, fix = ablated_verdict(log)
    assert category == "mosaic_compile_error"
    assert fix_rule == "mosaic_compile_error/message_suggestion"
    assert "likely cause" in fix and "`output_ref`" in fix
    # a fallback that names the log's own facts (here the message Mosaic refused with) comes first
    log = log.replace(
        "Pallas lowering failed: the kernel body is empty.", "Mosaic failed to compile TPU kernel: x."
    )
    _, fix_rule, _ = ablated_verdict(log)
    assert fix_rule == "mosaic_compile_error/from_facts_mosaic_message"


# --------------------------------------------------------------- a message wrapped at a fixed width


def _wrapped(text: str, width: int) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


WRAPPED_MESSAGE = (
    "RuntimeError: Reading values that live on other hosts from this process is not allowed here. "
    "To fix this error, run the reduction inside a jitted function under with_global_view(True) first."
)


def test_a_hard_wrapped_message_is_read_as_one_line() -> None:
    lines = _wrapped(WRAPPED_MESSAGE, 50)
    assert len(lines) >= 4 and not lines[1].startswith(" ")
    found = find_suggestions(lines)
    assert found and "with_global_view(True)" in found[0].text


def test_lines_of_one_width_broken_between_words_are_not_joined() -> None:
    # a table: every row the same width, but no row ends inside a word
    rows = ["| step 0001 | loss 2.31 | lr 3e-4 |", "| step 0002 | loss 2.29 | lr 3e-4 |"] * 2
    lines = [*rows, "RuntimeError: shard_count too low. Set shard_count to 8."]
    found = find_suggestions(lines)
    assert [s.text for s in found] == ["Set shard_count to 8."]
    assert find_suggestions(rows) == []


# ---------------------------------------------------------------------- a pointer to documentation


def test_a_pointer_to_the_docs_is_no_remedy() -> None:
    assert (
        find_suggestions(["RuntimeError: bad layout. Please read https://example.org/guide/layouts.html."])
        == []
    )
    assert find_suggestions(["ValueError: unknown mode. See the docs for the modes_list."]) == []
    # advice that cites the docs after naming its action is still advice
    found = find_suggestions(["ValueError: unknown mode. Set run_mode=fast (see https://example.org/modes)."])
    assert found and "run_mode=fast" in found[0].named


# ------------------------------------------------------------------------------- a hedge is no advice


def test_a_guess_at_what_happened_is_no_advice() -> None:
    line = "InvalidArgumentError: no session 42. Perhaps the server was restarted, or the lease_id expired?"
    assert find_suggestions([line]) == []


def test_a_hedged_suggestion_is_still_advice() -> None:
    found = find_suggestions(["ValueError: unknown flag --fastt. Perhaps you meant --fast_mode?"])
    assert found and "--fast_mode" in found[0].named


# ------------------------------------------------------------- a feature allowed under one setting


@pytest.mark.parametrize(
    ("line", "setting"),
    [
        (
            "ValueError: Invalid loader `prefetch` value. STREAMED mode only works on use_remote=True",
            "use_remote=True",
        ),
        (
            "ValueError: fused rotary embedding is only supported with attn_backend=flash.",
            "attn_backend=flash",
        ),
    ],
)
def test_a_feature_allowed_under_one_setting_names_it(line: str, setting: str) -> None:
    found = find_suggestions([line])
    assert found and found[0].named[0] == setting


def test_only_works_without_a_setting_names_nothing() -> None:
    assert find_suggestions(["ValueError: STREAMED mode only works on weekdays."]) == []


# ----------------------------------------------------------------------- shardings that disagree


@pytest.mark.parametrize(
    "log",
    [
        "ValueError: Received incompatible devices for jitted computation. Got argument x of step with "
        "device ids [0, 1, 2, 3] on platform TPU and explicit output sharding with device ids [0]\n",
        "jax._src.core.ShardingTypeError: add requires lhs batch dimensions and rhs batch dimensions to "
        "have the same sharding, got ('data',) and (None,).\n",
    ],
)
def test_shardings_that_disagree_get_one_mesh_and_a_reshard(log: str) -> None:
    category, fix_rule, fix = ablated_verdict(log)
    assert category == "shape_dtype_error"
    assert fix_rule == "shape_dtype_error/from_facts_sharding_disagrees"
    assert "same mesh" in fix and "reshard" in fix


def test_a_size_off_its_mesh_axis_keeps_the_divisibility_fix() -> None:
    log = (
        "ValueError: One of pjit inputs with sharding NamedSharding(mesh=Mesh('data': 4)) implies that the "
        "global size of its dimension 0 should be divisible by 4, but it is equal to 10\n"
    )
    _, fix_rule, _ = ablated_verdict(log)
    assert fix_rule != "shape_dtype_error/from_facts_sharding_disagrees"


def test_batch_shapes_that_differ_keep_the_broadcast_fix() -> None:
    log = (
        "TypeError: dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
        "shape, got (4,) and (1,).\n"
    )
    _, fix_rule, _ = ablated_verdict(log)
    assert fix_rule == "shape_dtype_error/from_facts_batch_dims_differ"
