"""Two general remedies (docs/diagnose-accuracy.md, "General mechanisms"): two named settings a check
refuses together ("Cannot specify both a and b", "--x and --y are mutually exclusive") name the one to keep,
before the library catch-all's advice to upgrade the library that raised it; and the condition of a raising
check says which value gets past it (`not self.x` -> `x=True`), which then comes before a neighbour's remedy
or a sheet's fact. Wordings, conditions and sites written for these tests, each with a nearby case it must
not claim."""

from __future__ import annotations

import pytest

from tests.crash_helpers import ablated_verdict, guarded, library_trace
from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_next_steps import unknown_diagnosis
from tpu_runtime.diagnose.crash_raise_guard import guard_ways_out
from tpu_runtime.diagnose.crash_sheet_facts import SheetFact, SheetFacts
from tpu_runtime.diagnose.crash_suggestion import find_suggestions, suggestion_fix
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

# a refusal and the two settings it must name
EXCLUDED = [
    (
        "ValueError: Cannot specify both resume_from_run and warm_start_path",
        ("resume_from_run", "warm_start_path"),
    ),
    ("error: --eval_every and --eval_at_end are mutually exclusive", ("--eval_every", "--eval_at_end")),
    (
        "RuntimeError: offload_optimizer cannot be combined with zero_stage_two.",
        ("offload_optimizer", "zero_stage_two"),
    ),
    ("ValueError: `rope_scaling` is incompatible with `alibi_bias`", ("rope_scaling", "alibi_bias")),
    ("AssertionError: SPOOL_DIR and SPOOL_BUCKET cannot be set together", ("SPOOL_DIR", "SPOOL_BUCKET")),
    (
        "ValueError: use_packed_rows may not be used with dynamic_padding",
        ("use_packed_rows", "dynamic_padding"),
    ),
]

# nearby wordings: plain words on either side, one name twice, an informational line, no refusal
NOT_EXCLUDED = [
    "ValueError: cannot both read and write the same buffer in one kernel",
    "ValueError: Cannot specify both inputs and outputs as donated",
    "ValueError: Cannot specify both shard_axis and shard_axis",
    "INFO: resume_from_run and warm_start_path are mutually exclusive; using resume_from_run",
    "ValueError: resume_from_run and warm_start_path were both read from the config",
]


@pytest.mark.parametrize(("line", "named"), EXCLUDED)
def test_two_settings_refused_together_are_read(line: str, named: tuple[str, str]) -> None:
    found = find_suggestions([line])
    assert found and found[0].kind == "exclusion", found
    assert found[0].named == named
    fix = suggestion_fix(found)
    assert f"Keep only one of `{named[0]}` or `{named[1]}`" in fix


@pytest.mark.parametrize("line", NOT_EXCLUDED)
def test_a_line_naming_no_two_settings_refused_together_is_not_read(line: str) -> None:
    assert all(s.kind != "exclusion" for s in find_suggestions([line]))


def _library_trace(message: str) -> str:
    return library_trace(message, "train.py", "invented_trainer")


def test_settings_refused_together_are_named_before_the_library_catch_all() -> None:
    category, rule, fix = ablated_verdict(
        _library_trace("ValueError: Cannot specify both resume_from_run and warm_start_path")
    )
    assert category == "runtime_init_failure"
    assert rule == "runtime_init_failure/message_suggestion"
    assert "`resume_from_run`" in fix and "`warm_start_path`" in fix and "pip install -U" not in fix


def test_a_refusal_of_plain_words_keeps_the_library_catch_all() -> None:
    category, rule, fix = ablated_verdict(
        _library_trace("ValueError: Cannot specify both inputs and outputs as donated")
    )
    assert category == "runtime_init_failure"
    assert rule == "runtime_init_failure/from_facts_library_check"
    assert "pip install -U invented-trainer" in fix


def test_a_log_left_unknown_leads_with_keeping_one_of_the_settings() -> None:
    lines = ["fatal: --eval_every and --eval_at_end are mutually exclusive"]
    fix = unknown_diagnosis("invented.log", lines, {}).fix
    assert fix.startswith("The error message names settings it refuses together:"), fix
    assert "--eval_every and --eval_at_end are mutually exclusive" in fix
    # a refusal that names no two settings keeps the plain next steps
    plain = unknown_diagnosis("invented.log", ["fatal: inputs and outputs are mutually exclusive"], {}).fix
    assert "refuses together" not in plain


# ------------------------------------------------- the way past a raising check's condition

WAYS_OUT = [
    ("not self.pack_sequences", ("pack_sequences=True",)),
    ("cfg.offload_kv", ("offload_kv=False",)),
    ("self.microbatches > 1 and self.pipeline_stages > 1", ("microbatches=1", "pipeline_stages=1")),
    ("warmup_steps >= 10", ("warmup_steps=9",)),
    ("4 < replica_count", ("replica_count=4",)),
    ("raw_keys['shard_mode'] != 'auto'", ("shard_mode=auto",)),
    ("attn_impl in ('flash', 'ring')", ("attn_impl outside ('flash', 'ring')",)),
    ("self.use_remat == True", ("use_remat=False",)),
    ("tp_degree <= 0 or dp_degree <= 0", ("tp_degree=1 with dp_degree=1",)),
]
# nearby: values the check computed from each other, a call, a name the check compares with a call, an
# `or` with a part nothing can falsify, a condition that does not parse
NO_WAY_OUT = [
    "required_chips > available_chips",
    "not is_initialized()",
    "self.replicas > len(devices)",
    "self.replicas > 1 or len(devices) > 8",
    "if x:",
]


@pytest.mark.parametrize(("guard", "ways"), WAYS_OUT)
def test_a_condition_names_the_setting_values_that_pass_it(guard: str, ways: tuple[str, ...]) -> None:
    assert guard_ways_out(guard) == ways


@pytest.mark.parametrize("guard", NO_WAY_OUT)
def test_a_condition_on_computed_values_names_no_way_past_it(guard: str) -> None:
    assert guard_ways_out(guard) == ()


def test_the_raise_guard_fix_says_how_the_check_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    site = guarded(
        RaiseSite(
            module="jax._src.lax.lax",  # a module the location table maps (a shape check)
            function="validate_packing",
            exception="ValueError",
            pattern=r"sequence\ packing\ is\ required\ for\ the\ chosen\ loss",
            anchor="sequence packing is required for the chosen loss",
        ),
        "self.loss_kind == 'packed_ce' and not self.pack_sequences",
    )
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (site,))
    text = (
        "Traceback (most recent call last):\nValueError: sequence packing is required for the chosen loss\n"
    )
    crash = diagnose_log(text, "-", similar=SimilarErrors(()), sheets=SheetFacts(()))
    assert crash.evidence.fix_rule.endswith("/raise_guard"), crash.evidence.fix_rule
    assert "it passes with pack_sequences=True" in crash.fix


POOL_LOG = (
    "Traceback (most recent call last):\nValueError: widget_pool_size is too small for the packed widgets\n"
)
POOL_SHEETS = SheetFacts(
    [
        SheetFact(
            "Set `widget_pool_size` from the sheet's table.", "https://example.org/pools", "widgets › pools"
        ),
        SheetFact("Widgets pack in rows of eight.", "https://example.org/rows", "widgets › rows"),
        SheetFact("A gadget needs a frame.", "https://example.org/frames", "gadgets › frames"),
    ]
)


def _pool_site(guard: str) -> RaiseSite:
    return guarded(
        RaiseSite(
            module="jax._src.lax.lax",
            function="pack_widgets",
            exception="ValueError",
            pattern=r"widget_pool_size\ is\ too\ small\ for\ the\ packed\ widgets",
            anchor="is too small for the packed widgets",
        ),
        guard,
    )


def test_a_condition_that_names_a_passing_value_comes_before_a_sheet_fact(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        crash_locations, "load_raise_sites", lambda: (_pool_site("self.widget_pool_size < 4"),)
    )
    crash = diagnose_log(POOL_LOG, "-", similar=SimilarErrors(()), sheets=POOL_SHEETS)
    assert crash.evidence.fix_rule.endswith("/raise_guard"), crash.evidence.fix_rule
    assert "it passes with widget_pool_size=4" in crash.fix
    assert crash.facts["raise_guard"]["passes"] == ["widget_pool_size=4"]


def test_a_condition_without_a_passing_value_leaves_the_sheet_fact_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = _pool_site("self.widget_pool_size < len(widgets)")
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (site,))
    crash = diagnose_log(POOL_LOG, "-", similar=SimilarErrors(()), sheets=POOL_SHEETS)
    assert crash.evidence.fix_rule.endswith("/sheet_fact"), crash.evidence.fix_rule
