"""Round diag78's general mechanisms, each with wordings written here (not the corpus files) and a nearby
wording it must not claim: a library's report that it failed to import a name from a package; a value refused
for its format with the expected form stated (and the value rewritten in that form); a setting refused for one
case (docs/diagnose-accuracy.md, "Round diag78")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_setting_facts import failed_import_facts
from tpu_runtime.diagnose.crash_suggestion import find_suggestions, reformatted_value


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.named) for s in find_suggestions(text.splitlines())]


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_name_a_library_failed_to_import_from_a_package_is_version_skew() -> None:
    text = "RuntimeError: The evaluator failed to import PagedAttention from jax_kernels.ops.\n"
    assert failed_import_facts(text.splitlines()) == {
        "failed_import": "PagedAttention",
        "failed_import_package": "jax_kernels",
    }
    assert _cue(text) == "version_mismatch"
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("version_mismatch", "version_mismatch/from_facts_failed_import")
    assert "pip show jax_kernels" in fix
    # data read from a place is no package, and an import that worked is no failure
    bucket = "ERROR: failed to import records from the staging bucket.\n"
    assert failed_import_facts(bucket.splitlines()) == {}
    assert _cue(bucket) != "version_mismatch"
    assert failed_import_facts(["INFO: imported PagedAttention from jax_kernels."]) == {}


def test_a_value_refused_for_its_format_is_rewritten_in_the_form_expected() -> None:
    text = "ValueError: Invalid slice spec format: 4*4. Expected format: <x>x<y> (e.g. 2x4)\n"
    assert _kinds(text) == [("format", ("<x>x<y>", "4x4"))]
    assert _cue(text) == "runtime_init_failure"  # a placeholder is no shape
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/message_suggestion")
    assert "`4x4`" in fix and "(e.g. 2x4)" in fix
    # a form with no placeholders is quoted but nothing is rewritten
    assert _kinds("ValueError: Invalid export format: parquet. Expected format: jsonl")[0][1] == ("jsonl",)
    # no expected form stated: no format refusal; a size check stays a shape error
    assert _kinds("ValueError: Invalid tensor format: NHWC") == []
    assert _cue("ValueError: invalid size for dimension 1: expected 4, got 3") == "shape_dtype_error"


def test_a_value_is_rewritten_only_when_its_parts_line_up_with_the_form() -> None:
    assert reformatted_value("v5p_128", "<type>-<size>") == "v5p-128"
    assert reformatted_value("2.2.1", "{x}x{y}x{z}") == "2x2x1"
    assert reformatted_value("v5p", "<type>-<size>") == ""  # one part for two placeholders
    assert reformatted_value("v5p-128", "<type>-<size>") == ""  # already in the form
    assert reformatted_value("v5p_128", "TYPE-SIZE") == ""  # no placeholders to line up


def test_a_setting_refused_for_one_case_is_left_out_there() -> None:
    text = "ValueError: Cannot set disk tier (got 'ultra') for TPU pods.\n"
    (kind, named), *_ = _kinds(text)
    assert kind == "refused_for" and named == ("disk tier", "disk_tier", "TPU pods")
    fix = ablated_verdict(text)[2]
    assert "`disk_tier`" in fix and "when using TPU pods" in fix
    passive = "ValueError: `--num-gpus` cannot be set when using a TPU slice.\n"
    assert _kinds(passive)[0] == ("refused_for", ("--num-gpus", "a TPU slice"))
    # two settings refused together stay an exclusion, a pronoun names no setting, an INFO line refuses none
    both = "ValueError: Cannot specify both init_from and init_from_hf for this run."
    assert [k for k, _ in _kinds(both)] == ["exclusion"]
    assert [k for k, _ in _kinds("ValueError: Cannot set it for this run.")] != ["refused_for"]
    assert _kinds("INFO cannot set disk tier for TPU pods, using the default") == []
