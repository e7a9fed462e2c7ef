"""Checks written as `assert test, message` mined as raise sites (raise_sites_build), and the value an
assertion's test asks for read as the way past it (crash_raise_guard.guard_ways_out). Sources, sites and log
lines are written for these tests, each with a nearby case the mechanism must not claim."""

from __future__ import annotations

import re

import pytest

from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_raise_guard import guard_ways_out
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


NEGATED = [
    ("not (self.widget_shards >= 1)", ("widget_shards=1",)),
    ("not (widget_count > 0)", ("widget_count=1",)),
    ("not (cfg.widget_mode in ('ring', 'tree'))", ("widget_mode one of ('ring', 'tree')",)),
    ("not (cfg.widget_mode == 'ring')", ("widget_mode=ring",)),
    ("not (self.use_widget_cache)", ("use_widget_cache=True",)),
    ("not (widget_pool is not None)", ("widget_pool set",)),
    (
        "not (cfg.widget_replicas == 1 and cfg.widget_offload == False)",
        ("widget_replicas=1 with widget_offload=False",),
    ),
    (
        "not (cfg.widget_replicas == 1 or not cfg.widget_offload)",
        ("widget_replicas=1", "widget_offload=False"),
    ),
]
# nearby: an assertion on computed values, a type check, an `!=` that names no single value, and an `and`
# with a part no setting satisfies
NO_WAY = [
    "not (np.prod(widget_axes) == target_count)",
    "not (isinstance(widget_count, int))",
    "not (widget_mode != 'ring')",
    "not (cfg.widget_replicas == 1 and len(devices) > 8)",
]


@pytest.mark.parametrize(("guard", "ways"), NEGATED)
def test_an_assertions_test_names_the_value_it_asks_for(guard: str, ways: tuple[str, ...]) -> None:
    assert guard_ways_out(guard) == ways


@pytest.mark.parametrize("guard", NO_WAY)
def test_an_assertion_on_computed_values_names_no_value(guard: str) -> None:
    assert guard_ways_out(guard) == ()


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


def test_a_failed_assertion_gets_the_value_its_test_asks_for(monkeypatch: pytest.MonkeyPatch) -> None:
    fix_rule, fix = _fix(monkeypatch, "AssertionError: widget shards must be at least one, got 0")
    assert fix_rule.endswith("/raise_guard")
    assert "it passes with widget_shards=1" in fix


def test_the_same_words_under_another_exception_class_are_not_that_assertion(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fix_rule, fix = _fix(monkeypatch, "ValueError: widget shards must be at least one, got 0")
    assert not fix_rule.endswith("/raise_guard")
    assert "widget_shards=1" not in fix
