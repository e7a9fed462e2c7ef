"""What a raising check's locals were assigned from (docs/diagnose-accuracy.md, "General mechanisms", gm62): a
check often tests a local its function copied or computed from the configuration above the raise, so the
condition alone names something no user sets. The raise guard's fix now says what the function assigned it
from, names a plain read of a setting as that setting (also in the value that gets past the check) and a
product as what it multiplies. Sources, sites and wordings written for these tests, each with a nearby
case."""

from __future__ import annotations

import pytest

from tests.crash_helpers import ablated_verdict, guarded, library_trace
from tpu_runtime.diagnose import crash_locations, crash_raise_guard
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.guard_aliases import alias_notes, load_aliases, renamed_ways, site_key
from tpu_runtime.diagnose.guard_aliases_build import alias_record, aliases_in_source, setting_read

SOURCE = """
class Config:
    def validate(self, shards):
        window = self.window_groups
        if window <= 0:
            raise ValueError("Window groups must be positive for the striped cache")
        total = int(np.prod(self.stripe_shape))
        def helper():
            shards = 99
        if total > shards:
            raise ValueError("Striped cache needs more shards than the host offers")
        late = self.never_seen
"""


def test_the_last_plain_assignment_before_the_raise_is_read() -> None:
    assert aliases_in_source(SOURCE, 6, ("window",)) == {"window": "self.window_groups"}
    found = aliases_in_source(SOURCE, 11, ("total", "shards"))
    # `shards` is a parameter: the nested function's assignment is not the check's
    assert found == {"total": "int(np.prod(self.stripe_shape))"}


def test_an_assignment_after_the_raise_or_outside_the_function_is_not_read() -> None:
    assert aliases_in_source(SOURCE, 6, ("late", "total")) == {}
    assert aliases_in_source(SOURCE, 1, ("window",)) == {}
    assert aliases_in_source("def f(:\n", 1, ("x",)) == {}


@pytest.mark.parametrize(
    ("expr", "setting"),
    [
        ("self.ring_degree", "ring_degree"),
        ("cfg['stripe_count']", "stripe_count"),
        ('getattr(args, "stripe_count", 1)', "stripe_count"),
        ("int(config.stripe_count)", "stripe_count"),
        ("os.environ['STRIPE_COUNT']", "STRIPE_COUNT"),
        ("self._stripe_cache", ""),
        ("devices[0].platform", ""),
        ("np.float32", ""),
        ("make_config().stripe_count", ""),
        ("len(devices)", ""),
        ("a.b + 1", ""),
    ],
)
def test_a_plain_read_names_its_setting(expr: str, setting: str) -> None:
    assert setting_read(expr) == setting


def test_an_assignment_is_kept_as_names_only() -> None:
    assert alias_record("self.ring_degree") == {"setting": "ring_degree"}
    assert alias_record("int(np.prod(mesh_axes))") == {"product_of": "mesh_axes"}
    # nearby: any other computation is not kept (its words would be the library's code)
    assert alias_record("len(devices) - reserved") == {}
    assert alias_record("np.float32") == {}


def test_a_read_of_a_setting_renames_the_value_that_passes_and_a_product_is_said() -> None:
    notes, renamed = alias_notes({"ring": {"setting": "ring_degree"}, "need": {"product_of": "mesh_axes"}})
    assert "`ring` is the setting `ring_degree`" in notes
    assert "`need` is the product of `mesh_axes`" in notes
    assert renamed == {"ring": "ring_degree"}
    assert renamed_ways(("ring=1 with ring_size=2",), renamed) == ("ring_degree=1 with ring_size=2",)


def test_a_local_read_under_its_own_name_adds_no_note() -> None:
    assert alias_notes({"ring": {"setting": "ring"}}) == ("", {})
    assert alias_notes({}) == ("", {})


MESSAGE = "ValueError: Striped cache needs 4 stripes but the ring offers 0"


def _site() -> RaiseSite:
    return guarded(
        RaiseSite(
            module="invented_trainer.cache",
            function="validate",
            exception="ValueError",
            pattern=r"Striped cache needs .+? stripes but the ring offers .+?",
            anchor="stripes but the ring offers",
            repo="invented/trainer",
            path="invented_trainer/cache.py",
            line=40,
            commit="0" * 40,
        ),
        "ring <= 0",
    )


def _guard_fix(
    monkeypatch: pytest.MonkeyPatch, aliases: dict[str, dict[str, dict[str, str]]]
) -> tuple[str, str]:
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (_site(),))
    monkeypatch.setattr(crash_raise_guard, "load_aliases", lambda: aliases)
    _, rule, fix = ablated_verdict(library_trace(MESSAGE, package="invented_trainer"))
    return rule, fix


def test_the_raise_guard_names_the_setting_a_local_was_read_from(monkeypatch: pytest.MonkeyPatch) -> None:
    key = site_key("invented/trainer", "invented_trainer/cache.py", 40)
    rule, fix = _guard_fix(monkeypatch, {key: {"ring": {"setting": "ring_degree"}}})
    assert rule.endswith("/raise_guard")
    assert "`ring` is the setting `ring_degree`" in fix
    assert "it passes with ring_degree=1" in fix


def test_a_site_without_aliases_keeps_the_local(monkeypatch: pytest.MonkeyPatch) -> None:
    other = site_key("invented/trainer", "invented_trainer/cache.py", 41)  # another line's check
    rule, fix = _guard_fix(monkeypatch, {other: {"ring": {"setting": "ring_degree"}}})
    assert rule.endswith("/raise_guard")
    assert "ring_degree" not in fix and "it passes with ring=1" in fix


def test_the_shipped_aliases_are_keyed_by_mined_snapshot_sites() -> None:
    shipped = load_aliases()
    assert shipped, "tpu_runtime/data/guard_aliases.json is missing or empty"
    sites = {
        site_key(s.repo, s.path, s.line): s for s in crash_locations.load_raise_sites() if s.repo and s.tests
    }
    for key, found in shipped.items():
        assert key in sites
        assert set(found) <= set(sites[key].tests)
        # names only: a setting or the (dotted) name a product multiplies, never an expression
        for alias in found.values():
            assert set(alias) <= {"setting", "product_of"}
            assert all(part.isidentifier() for v in alias.values() for part in v.split("."))
