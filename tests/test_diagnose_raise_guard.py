"""A remedy read from the condition of the check that raised the message (crash_raise_guard): what the `if`
test around each mined raise site reads (raise_sites_build keeps the names and passing values, not the test),
and the fix that names what it tests. Sources, sites and log lines are written for these tests, each with a
nearby case the mechanism must not claim."""

from __future__ import annotations

import dataclasses

import pytest

from tests.crash_helpers import guarded
from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import (
    LocationTable,
    RaiseSite,
    find_location,
    load_raise_sites,
    location_vote,
)
from tpu_runtime.diagnose.crash_raise_guard import guard_fix, guard_names
from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.raise_sites_build import raise_sites_of
from tpu_runtime.diagnose.similar_errors import SimilarErrors

SOURCE = """
def configure(cfg, hosts):
    if cfg.use_widget_cache and hosts > 1:
        raise ValueError(f"the widget cache cannot be shared by {hosts} hosts at once")
    if hosts:
        pass
    else:
        raise ValueError("the widget pool needs at least one host before it can start")
    raise RuntimeError("the widget pool stopped for a reason nobody tested for")

def outer(flag):
    if flag:
        def inner():
            raise ValueError("a nested widget helper failed while it was starting up")
        return inner
"""


def test_mining_keeps_what_the_test_of_the_if_around_each_raise_reads() -> None:
    sites = {str(s["anchor"]): s for s in raise_sites_of(SOURCE, "pkg.widgets")}
    tests = {anchor: (site.get("tests"), site.get("passes")) for anchor, site in sites.items()}
    # `cfg.use_widget_cache and hosts > 1`: either one false gets past it
    assert tests[next(a for a in tests if "cannot be shared" in a)] == (
        ["use_widget_cache", "hosts"],
        ["use_widget_cache=False", "hosts=1"],
    )
    assert tests[next(a for a in tests if "at least one host" in a)] == (
        ["hosts"],
        ["hosts=True"],
    )  # else branch
    # no `if` around it, and an `if` of the enclosing function does not reach into a nested one
    assert tests[next(a for a in tests if "nobody tested" in a)] == (None, None)
    assert tests[next(a for a in tests if "nested widget" in a)] == (None, None)
    assert not any("guard" in site for site in sites.values())  # the condition's code is not kept


def test_the_names_a_condition_tests_are_its_settings_not_its_calls_or_containers() -> None:
    assert guard_names("int(raw_keys['ici_widget_parallelism']) > 1 and raw_keys['hardware'] == 'tpu'") == (
        "ici_widget_parallelism",
        "hardware",
    )
    assert guard_names("not self.replicate_widgets and all(s is None for s in spec)") == (
        "replicate_widgets",
        "spec",
    )
    assert guard_names("WIDGET_AXIS not in transform_options") == ("WIDGET_AXIS", "transform_options")
    # nearby: only Python's own names, a called function, a short loop variable, or no expression at all
    assert guard_names("isinstance(x, int) and len(x) > 2") == ()
    assert guard_names("not jax.devices()") == ()
    assert guard_names("if x:") == ()


GUARDED = guarded(
    RaiseSite(
        module="jax._src.lax.lax",
        function="broadcast_widgets",
        exception="ValueError",
        pattern=r"widget\ stack\ .+?\ cannot\ hold\ the\ stacked\ widgets",
        anchor="cannot hold the stacked widgets",
    ),
    "self.widget_replicas > len(devices) and not allow_widget_overlap",
)
UNGUARDED = dataclasses.replace(GUARDED, tests=(), passes=())
LOG = "\n".join(
    [
        "Traceback (most recent call last):",
        '  File "train.py", line 7, in <module>',
        "ValueError: widget stack (4, 2) cannot hold the stacked widgets",
    ]
)


def _diagnose(monkeypatch: pytest.MonkeyPatch, site: RaiseSite) -> tuple[str, str, list[str]]:
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (site,))
    crash = diagnose_log(LOG, "-", similar=SimilarErrors(()), sheets=SheetFacts(()))
    return crash.evidence.fix_rule, crash.fix, [c.url for c in crash.citations]


def test_a_guarded_check_tells_what_it_tested(monkeypatch: pytest.MonkeyPatch) -> None:
    fix_rule, fix, _ = _diagnose(monkeypatch, GUARDED)
    assert fix_rule == "shape_dtype_error/raise_guard"
    assert "`widget_replicas`" in fix and "`allow_widget_overlap`" in fix
    assert "jax._src.lax.lax, broadcast_widgets" in fix
    # the category's paragraph still follows, after the condition
    assert fix.index("widget_replicas") < fix.index("general advice")


def test_a_site_without_a_kept_condition_leaves_the_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    fix_rule, fix, _ = _diagnose(monkeypatch, UNGUARDED)
    assert fix_rule == "shape_dtype_error"
    assert "widget_replicas" not in fix
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (GUARDED,))
    # a line no site matches gives no condition either
    assert guard_fix(["ValueError: widget stack (4, 2) is fine but the widgets are not"]) is None


def test_a_snapshot_site_cites_its_source_first(monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = dataclasses.replace(GUARDED, repo="owner/widgets", path="w.py", line=12, commit="c0")
    _, _, urls = _diagnose(monkeypatch, snapshot)
    assert urls[0] == "https://github.com/owner/widgets/blob/c0/w.py#L12"


def test_the_shipped_sites_keep_the_names_their_conditions_test() -> None:
    guarded = [s for s in load_raise_sites() if s.tests]
    assert guarded, "rebuild data/raise_sites.json with benchmarks/build_raise_sites.py"
    assert all(not s.native for s in guarded)  # only Python sites: a C++ check's condition is not read
    assert all(name.isidentifier() for s in guarded for name in s.tests)  # names, not code
    assert sum(1 for s in guarded if s.passes) > len(guarded) // 4


def test_a_site_of_an_unmapped_module_still_gives_its_condition_but_no_category() -> None:
    """A module mined whole for its checks (`all_modules`) names no category, yet its condition names what to
    change; the category vote still needs a mapped module."""
    site = guarded(
        RaiseSite(
            module="gizmolib.engine.scheduler",
            function="admit",
            exception="ValueError",
            pattern=r"gizmo\ queue\ depth\ .+?\ exceeds\ the\ admission\ window",
            anchor="exceeds the admission window",
        ),
        "self.queue_depth > self.admission_window",
    )
    table = LocationTable(weight=0.45, categories=[])
    lines = ["ValueError: gizmo queue depth 12 exceeds the admission window"]
    assert find_location(lines, table, [site]) is None
    found = find_location(lines, table, [site], any_module=True)
    assert found is not None and found.category == "unknown" and found.site is site
    assert location_vote(lines, table, [site]) is None
