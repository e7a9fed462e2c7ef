"""Round diag79's general mechanisms, each with wordings written here (not the corpus files) and a nearby
wording it must not claim: a layout that names tensor and mesh dimensions refusing how a tensor dimension maps
onto the mesh (a shape cue and the fallback from_facts_named_dimension_layout), and two list settings whose
lengths must agree (a shape cue and a comparison naming both lists) (docs/diagnose-accuracy.md, "Round
diag79")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions

LAYOUT_RULE = "shape_dtype_error/from_facts_named_dimension_layout"
LIST_CUE = "the lengths of two named list settings that must agree"


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.named) for s in find_suggestions(text.splitlines())]


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_tensor_dimension_the_named_layout_cannot_map_is_a_layout_shape_error() -> None:
    wordings = (
        "ValueError: a tensor dimension (heads) maps to more than one mesh dimension in this layout",
        "RuntimeError: the kernel's dimension 'vocab' is not declared as splittable",
        "ValueError: mesh dimension rows (4) does not divide tensor dimension heads (6)",
    )
    for text in wordings:
        assert _cue(text) == "shape_dtype_error", text
        category, rule, fix = ablated_verdict(text + "\n")
        assert (category, rule) == ("shape_dtype_error", LAYOUT_RULE), text
        assert "splittable_dims" in fix and "multiple of its mesh dimension" in fix


def test_mesh_words_without_a_refused_mapping_are_no_layout_error() -> None:
    # a progress line that reports the mapping refuses nothing
    assert _cue("INFO layout: tensor dimension batch maps to mesh dimension data") is None
    # a mesh size refused at start-up names no tensor dimension
    sized = "ValueError: mesh dimension data must be positive, got 0"
    assert ablated_verdict(sized + "\n")[1] != LAYOUT_RULE
    # an op declaring its splittable dimensions is no refusal
    assert _cue("ValueError: dimension heads is declared as splittable twice") != "shape_dtype_error"


def test_two_list_settings_of_unequal_length_are_compared_by_name() -> None:
    text = (
        "ValueError: number of entries of layer_widths (12) does not match the number of entries of "
        "dropout_rates (10)."
    )
    assert _kinds(text) == [("comparison", ("layer_widths", "dropout_rates"))]
    assert _cue(text) == "shape_dtype_error"
    category, rule, fix = ablated_verdict(text + "\n")
    assert (category, rule) == ("shape_dtype_error", "shape_dtype_error/message_suggestion")
    assert "`layer_widths`" in fix and "`dropout_rates`" in fix
    colon = "ValueError: length of `bucket_sizes`: 3 is not equal to the length of `bucket_batch_limit`: 4"
    assert _kinds(colon) == [("comparison", ("bucket_sizes", "bucket_batch_limit"))]


def test_lengths_that_agree_or_name_no_setting_are_no_list_comparison() -> None:
    equal = "ValueError: length of layer_widths: 4 is not equal to the length of dropout_rates: 4"
    assert all(kind != "comparison" for kind, _ in _kinds(equal))
    plain = "ValueError: length of the input is not equal to the length of the mask"
    assert all(kind != "comparison" for kind, _ in _kinds(plain))
    vote = weak_vote(plain.splitlines())
    assert vote is None or LIST_CUE not in vote.labels  # plain words name no list setting
    same = "ValueError: length of layer_widths is not equal to the length of layer_widths"
    assert all(kind != "comparison" for kind, _ in _kinds(same))
