"""The start-up catch-all steps aside for the raising check's own condition (docs/diagnose-accuracy.md,
"General mechanisms", gm54): a library's own check that a start-up log ends in gets the catch-all
`runtime_init_failure/from_facts_library_check`, whose advice (ask the runtime for the chips, upgrade the
library) fits a probe of the environment; where that check is a mined raise site, its condition says what it
tested and leads the fix instead (`runtime_init_failure/raise_guard`). Wordings, sites and conditions written
for these tests, each with a nearby case that keeps the catch-all."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.crash_helpers import ablated_verdict, diagnose_rules_alone, guarded, library_trace
from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_raise_guard import guard_names

# a library's refusal that names one setting and a thing in plain words: no suggestion reader takes it, so
# today the catch-all answers
MESSAGE = "ValueError: Cannot specify both warm_restarts and a streaming loader"


def _site(guard: str, module: str = "invented_trainer.config") -> RaiseSite:
    """A mined check of a module no location table maps (a library mined whole)."""
    return guarded(
        RaiseSite(
            module=module,
            function="check",
            exception="ValueError",
            pattern=r"Cannot specify both warm_restarts and a streaming loader",
            anchor="Cannot specify both warm_restarts and a streaming loader",
        ),
        guard,
    )


def _with_sites(monkeypatch: pytest.MonkeyPatch, *sites: RaiseSite) -> None:
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: sites)


def test_without_a_mined_site_the_catch_all_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    _with_sites(monkeypatch)
    category, rule, fix = ablated_verdict(library_trace(MESSAGE))
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/from_facts_library_check")
    assert "pip install -U invented-trainer" in fix


def _full(text: str) -> tuple[str, str, str]:
    """Category, fix sub-rule and fix with every shipped rule."""
    crash = diagnose_rules_alone(text)
    return crash.category, crash.evidence.fix_rule, crash.fix


@pytest.mark.parametrize("verdict", [ablated_verdict, _full], ids=["fallbacks alone", "every rule"])
def test_the_checks_condition_with_its_passing_value_replaces_the_catch_all(
    monkeypatch: pytest.MonkeyPatch, verdict: Callable[[str], tuple[str, str, str]]
) -> None:
    _with_sites(monkeypatch, _site("self.warm_restarts and self.loader_kind == 'streaming'"))
    category, rule, fix = verdict(library_trace(MESSAGE))
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/raise_guard")
    assert "it passes with warm_restarts=False" in fix and "(invented_trainer.config, check)" in fix
    assert "pip install -U invented-trainer" not in fix


def test_a_condition_that_names_settings_but_no_value_replaces_it_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _with_sites(monkeypatch, _site("self.warm_restarts > self.saved_steps"))
    _, rule, fix = ablated_verdict(library_trace(MESSAGE))
    assert rule == "runtime_init_failure/raise_guard"
    assert "`warm_restarts`, `saved_steps`" in fix and "pip install -U invented-trainer" not in fix
    # the category's paragraph follows the condition, as when the condition replaces that paragraph
    assert "The runtime_init_failure category's general advice:" in fix


def test_a_condition_that_names_no_setting_keeps_the_catch_all(monkeypatch: pytest.MonkeyPatch) -> None:
    # a probe of the environment: the condition calls a function and names nothing to change
    _with_sites(monkeypatch, _site("not _chips_visible()"))
    _, rule, fix = ablated_verdict(library_trace(MESSAGE))
    assert rule == "runtime_init_failure/from_facts_library_check"
    assert "pip install -U invented-trainer" in fix


def test_a_site_of_another_message_keeps_the_catch_all(monkeypatch: pytest.MonkeyPatch) -> None:
    other = guarded(
        RaiseSite(
            module="invented_trainer.config",
            function="check",
            exception="ValueError",
            pattern=r"Cannot specify both warm_restarts and a batch loader",
            anchor="Cannot specify both warm_restarts and a batch loader",
        ),
        "self.warm_restarts and self.batch_loader",
    )
    _with_sites(monkeypatch, other)
    _, rule, _fix = ablated_verdict(library_trace(MESSAGE))
    assert rule == "runtime_init_failure/from_facts_library_check"


def test_a_conditions_private_members_are_not_named_as_settings() -> None:
    # a check's own private state is no setting a user changes; the argument it tests is
    guard = "not paths.is_complete(run_dir, marker_cls=self._marker_class, opts=self._commit_options)"
    assert guard_names(guard) == ("run_dir",)
    assert guard_names("self.commit_options is None") == ("commit_options",)
