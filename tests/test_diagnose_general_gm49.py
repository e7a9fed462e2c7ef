"""Checks written as `assert test, message` mined as raise sites (raise_sites_build), whose test negated is
the condition the raise guard reads (crash_raise_guard): the names it tests and the value that makes the test
hold. Sources, sites and log lines are written for these tests, each with a nearby case the mechanism must not
claim."""

from __future__ import annotations

import re

import pytest

from tests.crash_helpers import guarded
from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_raise_guard import guard_ways_out
from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.raise_sites_build import SiteValue, raise_sites_of, template
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


def _sites() -> dict[str, dict[str, SiteValue]]:
    return {str(s["anchor"]): s for s in raise_sites_of(SOURCE, "gizmo.mesh")}


def test_an_assert_with_a_message_is_a_raise_site_whose_condition_is_its_test_negated() -> None:
    sites = _sites()
    shards = next(s for a, s in sites.items() if "at least one" in a)
    assert shards["exception"] == "AssertionError"
    # the condition is read, not kept: the name it tests and the value that makes the assertion hold
    assert shards["tests"] == ["widget_shards"] and shards["passes"] == ["widget_shards=1"]
    assert "guard" not in shards
    assert shards["function"] == "build_widget_mesh" and shards["line"] == 4
    # a message built from an f-string whose words come from a local value is still mined: its literal part
    # names the site, the local's words are a wildcard
    axes = next(s for a, s in sites.items() if "does not match the sum" in a)
    assert re.search(
        str(axes["pattern"]),
        "AssertionError: Number of widgets per rack 8 does not match the sum of the widget axes 16",
    )
    assert axes["tests"] == ["widget_axes", "target"] and axes["passes"] == []
    # nearby: an assert without a message, and one whose message is too short to name a site
    assert len(sites) == 3


def test_a_template_keeps_spaces_literal_and_escapes_the_rest() -> None:
    made = template(["the widget (rack ", None, ") costs more than $5 + tax at once"])
    assert made is not None
    regex, _ = made
    assert "\\ " not in regex and "\\(" in regex and "\\$" in regex
    assert re.search(regex, "the widget (rack 7) costs more than $5 + tax at once")
    assert not re.search(regex, "the widget (rack 7) costs more than 95 + tax at once")


ASSERTED = guarded(
    RaiseSite(
        module="gizmo.mesh",
        function="build_widget_mesh",
        exception="AssertionError",
        pattern=r"widget shards must be at least one, got .+?",
        anchor="widget shards must be at least one, got",
    ),
    "not (cfg.widget_shards >= 1)",
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
    # the value that makes the asserted test hold, not a negation to undo; the condition's code is not quoted
    assert "`widget_shards`" in fix and "it passes with widget_shards=1" in fix
    assert "cfg.widget_shards >= 1" not in fix


def test_the_same_words_under_another_exception_class_are_not_that_assertion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fix_rule, fix = _fix(monkeypatch, "ValueError: widget shards must be at least one, got 0")
    assert not fix_rule.endswith("/raise_guard")
    assert "widget_shards" not in fix


@pytest.mark.parametrize(
    ("guard", "ways"),
    [
        ("not (widget_shards >= 2)", ("widget_shards=2",)),  # an assertion's bound: the least it allows
        ("not (self.widget_hosts < 8)", ("widget_hosts=7",)),
        ("not (widget_mode == 'ring')", ("widget_mode=ring",)),
        ("not (widget_mode in ('ring', 'tree'))", ("widget_mode one of ('ring', 'tree')",)),
        ("not (cfg.widget_cache is None)", ("widget_cache=None",)),
    ],
)
def test_a_negated_comparison_passes_with_the_value_that_makes_it_hold(
    guard: str, ways: tuple[str, ...]
) -> None:
    assert guard_ways_out(guard) == ways


# nearby: a computed operand, a comparison of two settings, and a test of several comparisons at once
@pytest.mark.parametrize(
    "guard",
    ["not (np.prod(widget_axes) == target_count)", "not (widget_hosts == widget_racks)", "not (0 < n < 4)"],
)
def test_a_negated_comparison_on_no_single_setting_names_no_value(guard: str) -> None:
    assert guard_ways_out(guard) == ()
