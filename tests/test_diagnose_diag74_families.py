"""Round diag74's general mechanisms, each with wordings written here (not the corpus files) and a nearby
wording it must not claim: a check that needs one of several settings, a setting it lets be set once only,
a flag it allows under one mode only, two quantities it compared in words, the `expr=value` lines it lists
below a mismatch, a setting printed as `name=value` after "but got", a bound it refuses in words, the dtype
it expected, the condition a check states kept beside a `from_facts_*` fallback, and the sheet facts no
longer supported by a bare number (docs/diagnose-accuracy.md, "Round diag74")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, diagnose_fallbacks_alone

from tpu_runtime.diagnose.crash_sheet_facts import SheetFact, SheetFacts
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.named) for s in find_suggestions(text.splitlines())]


def test_a_check_that_needs_one_of_several_settings_names_them() -> None:
    text = "ValueError: At least one of `mesh_shape` or `num_slices` must be specified.\n"
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/message_suggestion")
    assert "`mesh_shape` or `num_slices`" in fix
    assert ("one_of", ("mesh_shape", "num_slices")) in _kinds(text)
    # no setting named: nothing to set
    assert not any(
        kind == "one_of" for kind, _ in _kinds("ValueError: At least one of the inputs must be set.")
    )


def test_a_setting_that_may_not_change_after_start_up_is_set_once() -> None:
    text = (
        "RuntimeError: The value of jax.config.jax_enable_x64 cannot be changed after the backend started.\n"
    )
    category, rule, fix = ablated_verdict(text)
    assert rule == f"{category}/message_suggestion"
    assert "`jax.config.jax_enable_x64` once, before the program initializes" in fix
    # a plain word is no setting, and an INFO line is no refusal
    assert not any(
        kind == "frozen" for kind, _ in _kinds("ValueError: The mesh cannot be changed after init.")
    )
    assert not any(
        kind == "frozen" for kind, _ in _kinds("INFO: learning_rate cannot be changed after step 100 (note)")
    )


def test_flags_a_check_allows_under_one_mode_only_name_that_mode() -> None:
    text = "ValueError: --export_dir and --export_step only supported with --mode=export.\n"
    _, rule, fix = ablated_verdict(text)
    assert rule.endswith("/message_suggestion")
    assert "`--mode=export`" in fix
    # a release, not a setting value: no mode to switch to
    named = [
        n for _, names in _kinds("ValueError: --fast_path only supported with newer releases.") for n in names
    ]
    assert not any("=" in n for n in named)


def test_two_quantities_compared_in_words_are_named() -> None:
    text = "ValueError: Global batch size (96) must be divisible by number of data replicas (64).\n"
    assert ("comparison", ("Global batch size", "number of data replicas")) in _kinds(text)
    _, rule, fix = ablated_verdict(text)
    assert "Global batch size" in fix and rule.split("/", 1)[1].startswith(
        ("message_suggestion", "from_facts")
    )
    # no error word: a note, not a refused check
    assert _kinds("note: batch size (96) is divisible by replicas (32)") == []


def test_values_listed_below_a_mismatch_line_are_the_settings_to_change() -> None:
    listed = "cfg.prefill_slices=('v5e=2x2',)\ncfg.decode_slices=('v5e=2x4',)\n"
    text = "AssertionError: Slice chips do not match the devices of this host (8 found):\n" + listed
    kinds = _kinds(text)
    assert ("comparison", ("cfg.prefill_slices", "cfg.decode_slices")) in kinds
    assert "`cfg.decode_slices`" in ablated_verdict(text)[2]
    # without a mismatch the lines are only the config printed
    assert not any("cfg.prefill_slices" in names for _, names in _kinds("ValueError: bad config:\n" + listed))


def test_a_setting_printed_after_but_got_is_the_one_refused() -> None:
    text = "ValueError: A positive window must be given for sliding attention, but got window_size=-1\n"
    assert ("constraint", ("window_size",)) in _kinds(text)
    assert "`window_size`" in ablated_verdict(text)[2]
    assert not any(
        kind == "constraint" for kind, _ in _kinds("ValueError: window must be positive, but got -1")
    )


def test_a_bound_refused_in_words_names_the_quantity() -> None:
    text = "NotImplementedError: Number of microbatches > 1 not supported with interleaved stages.\n"
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("unsupported_op", "unsupported_op/message_suggestion")
    assert "`Number of microbatches`" in fix
    assert _kinds("ValueError: step > 1000 reached before the first eval") == []


def test_the_dtype_a_check_expected_places_the_log_and_names_the_dtype() -> None:
    text = "ValueError: attention_logits is expected to be float32, but got float16\n"
    category, _, fix = ablated_verdict(text)
    assert category == "shape_dtype_error"
    assert "float32" in fix
    assert ("expectation", ("attention_logits", "float32")) in _kinds(text)
    # worded as a required value, a dtype check still is one
    required = (
        "ValueError: An offset must be provided when packing an unsigned variable (of type uint8), "
        "but got offset=1.5\n"
    )
    assert ablated_verdict(required)[0] == "shape_dtype_error"
    # a dtype offered as a setting's value is a refused setting, not a dtype check
    refused = "ValueError: Quantization mode is not supported when use_int_kernels is enabled: int4\n"
    assert ablated_verdict(refused)[0] != "shape_dtype_error"


def test_a_fallback_keeps_the_condition_the_check_states() -> None:
    text = "ValueError: Batch size (40) must be divisible by entire data mesh size (16).\n"
    crash = diagnose_fallbacks_alone(text)
    assert crash.evidence.fix_rule.split("/", 1)[1].startswith("from_facts"), crash.evidence.fix_rule
    assert 'The check itself states: "Batch size (40)' in crash.fix
    # a fallback that already names what the check names gets nothing added
    same = "ValueError: Batch size (32) must be divisible by entire data mesh size (32).\n"
    assert "The check itself states" not in diagnose_fallbacks_alone(same).fix


def test_a_bare_number_is_no_support_for_a_sheet_fact() -> None:
    facts = SheetFacts(
        [
            SheetFact(
                "`ring_tolerance` defaults to 0.02 in the trainer config.", "https://example.org/a", "a"
            ),
            SheetFact("`flush_every` sets how often the writer flushes.", "https://example.org/b", "b"),
            SheetFact("Another fact about compile caches.", "https://example.org/c", "c"),
        ]
    )
    assert facts.match(["ValueError: A scale must be an integer, but got scale=0.02"]) is None
    found = facts.match(["ValueError: ring_tolerance must not be negative, got -1"])
    assert found is not None and found.fact.url == "https://example.org/a"
