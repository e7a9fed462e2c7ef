"""Checks written as `assert test, message` mined as raise sites (raise_sites_build), whose test negated is
the condition the raise guard quotes (crash_raise_guard). Sources, sites and log lines are written for these
tests, each with a nearby case the mechanism must not claim."""

from __future__ import annotations

import re

import pytest

from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_raise_guard import required_test
from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.raise_sites_build import raise_sites_of, template
from tpu_runtime.diagnose.similar_errors import SimilarErrors

SOURCE = """
def build_widget_mesh(cfg, widget_axes, target):
    kind = "racks" if cfg.across_racks else "widgets per rack"
    assert cfg.widget_shards >= 1, f"widget shards must be at least one, got {cfg.widget_shards}"
    assert sum(widget_axes) == target, (
        f"Number of {kind} {target} does not match the sum of the widget axes {sum(widget_axes)}"
    )
    assert cfg.widget_mode in ("ring", "tree"), "the widget mode must be ring or tree, not " + cfg.widget_mode
    assert widget_axes
    assert target, "no"
"""


def _sites() -> dict[str, dict[str, str | int]]:
    return {str(s["anchor"]): s for s in raise_sites_of(SOURCE, "gizmo.mesh")}


def test_an_assert_with_a_message_is_a_raise_site_whose_condition_is_its_test_negated() -> None:
    sites = _sites()
    shards = next(s for a, s in sites.items() if "at least one" in a)
    assert shards["exception"] == "AssertionError"
    assert shards["guard"] == "not (cfg.widget_shards >= 1)"
    assert shards["function"] == "build_widget_mesh" and shards["line"] == 4
    # a message built from an f-string whose words come from a local value is still mined: its literal part
    # names the site, the local's words are a wildcard
    axes = next(s for a, s in sites.items() if "does not match the sum" in a)
    assert re.search(
        str(axes["pattern"]),
        "AssertionError: Number of widgets per rack 8 does not match the sum of the widget axes 16",
    )
    assert axes["guard"] == "not (sum(widget_axes) == target)"
    # nearby: an assert without a message, and one whose message is too short to name a site
    assert len(sites) == 3


def test_a_template_keeps_spaces_literal_and_escapes_the_rest() -> None:
    made = template(["the widget (rack ", None, ") costs more than $5 + tax at once"])
    assert made is not None
    regex, _ = made
    assert "\\ " not in regex and "\\(" in regex and "\\$" in regex
    assert re.search(regex, "the widget (rack 7) costs more than $5 + tax at once")
    assert not re.search(regex, "the widget (rack 7) costs more than 95 + tax at once")


ASSERTED = RaiseSite(
    module="gizmo.mesh",
    function="build_widget_mesh",
    exception="AssertionError",
    pattern=r"widget shards must be at least one, got .+?",
    anchor="widget shards must be at least one, got",
    guard="not (cfg.widget_shards >= 1)",
)


def _fix(monkeypatch: pytest.MonkeyPatch, last_line: str) -> tuple[str, str]:
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (ASSERTED,))
    log = "\n".join(
        ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>', last_line]
    )
    crash = diagnose_log(log, "-", similar=SimilarErrors(()), sheets=SheetFacts(()))
    return crash.evidence.fix_rule, crash.fix


def test_a_failed_assertion_names_what_its_test_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    fix_rule, fix = _fix(monkeypatch, "AssertionError: widget shards must be at least one, got 0")
    assert fix_rule.endswith("/raise_guard")
    # said as the test that must hold, not as a negation to undo
    assert "raises it unless `cfg.widget_shards >= 1` holds" in fix and "`widget_shards`" in fix
    assert "so it holds" in fix and "no longer holds" not in fix


def test_the_same_words_under_another_exception_class_are_not_that_assertion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fix_rule, fix = _fix(monkeypatch, "ValueError: widget shards must be at least one, got 0")
    assert not fix_rule.endswith("/raise_guard")
    assert "widget_shards" not in fix


@pytest.mark.parametrize(
    ("guard", "test"),
    [
        ("not (np.prod(widget_axes) == target_count)", "np.prod(widget_axes) == target_count"),
        ("not (widget_hosts)", "widget_hosts"),  # the `if` of an `else:` branch
        ("not (cfg.widget_cache and cfg.widget_hosts > 1)", "cfg.widget_cache and cfg.widget_hosts > 1"),
    ],
)
def test_a_whole_negation_is_said_as_the_test_that_must_hold(guard: str, test: str) -> None:
    assert required_test(guard) == test


# nearby: a negated flag the source wrote bare, a negation that is one part of an `and`, and no negation
@pytest.mark.parametrize("guard", ["not self.widget_cache", "not (widget_hosts) and widget_cache", "n > 1"])
def test_a_condition_that_is_no_whole_negation_is_quoted_as_it_is(guard: str) -> None:
    assert required_test(guard) == ""
