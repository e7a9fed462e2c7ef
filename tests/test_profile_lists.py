"""The reader's two kinds of arithmetic agree bit for bit: Python lists for small profiles (no numpy to
load) and numpy arrays for large ones, op by op on random events and summary by summary on profiles."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.profiles_synth import (
    add_steps_line,
    delay_module_runs,
    edit_device_stats,
    load_space,
    synthesize,
    write_space,
)
from tests.test_profile import GPU, MODULE, V6E, need, random_tree, reference_self_times
from tpu_runtime.diagnose import profile_lists, profile_planes
from tpu_runtime.diagnose.profile import analyze_profile
from tpu_runtime.diagnose.profile_intervals import NumpyOps
from tpu_runtime.diagnose.profile_lists import ListOps, pairwise_sum
from tpu_runtime.diagnose.xspace import TruncatedProfileError, count_events, read_planes

LISTS, ARRAYS = ListOps(), NumpyOps()


def arrays(*columns: list[int]) -> list[np.ndarray]:
    return [np.array(c, dtype=np.int64) for c in columns]


def as_lists(value: Any) -> Any:
    """Arrays (also inside tuples and lists) as lists, to compare with the list arithmetic's results."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (tuple, list)):
        return type(value)(as_lists(v) for v in value)
    return value


def test_pairwise_sum_is_numpys_sum_mean_and_std() -> None:
    """Same float64 rounding as numpy's reduction, at every size around its unrolled blocks."""
    rng = random.Random(11)
    sizes = [0, 1, 7, 8, 9, 15, 16, 127, 128, 129, 255, 256, 257, 1000, 4097]
    sizes += [rng.randint(1, 3000) for _ in range(40)]
    for n in sizes:
        values = [rng.uniform(0, 1e12) * rng.choice((1.0, 1e-7, 3.3)) for _ in range(n)]
        array = np.array(values, dtype=np.float64)
        assert pairwise_sum(values) == float(array.sum())
        if n:
            stats = LISTS.window_stats([[int(v) for v in values]], [[int(v / 3) for v in values]])
            ints = np.array([int(v) for v in values], dtype=np.float64)
            assert stats is not None
            assert stats[1] == float(ints.mean()) and stats[4] == float(ints.std())


def test_self_times_match_a_stack_and_numpy_on_random_events() -> None:
    rng = random.Random(7)
    for _ in range(200):
        spans: list[tuple[int, int]] = []
        random_tree(rng, 0, 10_000, 4, spans)
        rng.shuffle(spans)
        start, end = [s for s, _ in spans], [e for _, e in spans]
        expected = reference_self_times(start, end)
        assert profile_lists.self_times(start, end) == expected
        assert ARRAYS.self_times(*arrays(start, end)).tolist() == expected
    for _ in range(100):  # overlapping without nesting, instants, identical spans, and file order kept
        count = rng.randint(0, 90)
        start = sorted(rng.randint(0, 1000) for _ in range(count))
        if rng.random() < 0.5:
            rng.shuffle(start)
        end = [s + rng.choice((0, rng.randint(0, 300))) for s in start]
        expected = reference_self_times(start, end)
        assert profile_lists.self_times(start, end) == expected
        assert ARRAYS.self_times(*arrays(start, end)).tolist() == expected


def test_each_op_gives_the_same_on_lists_and_arrays() -> None:
    rng = random.Random(3)
    for _ in range(60):
        count = rng.randint(1, 300)
        ids = [rng.randint(1, 6) for _ in range(count)]
        start = [rng.randint(0, 5000) for _ in range(count)]
        end = [s + rng.randint(0, 400) for s in start]
        own = profile_lists.self_times(start, end)
        a_ids, a_start, a_end, a_own = arrays(ids, start, end, own)

        got, want = LISTS.groups(ids, own, start, end), ARRAYS.groups(a_ids, a_own, a_start, a_end)
        assert as_lists(got) == as_lists(want)
        wanted = [rng.random() < 0.6 for _ in got[0]]
        assert LISTS.keep(start, got[4], wanted) == ARRAYS.keep(a_start, want[4], wanted).tolist()

        seg = LISTS.merge(start, end)
        assert as_lists(seg) == as_lists(ARRAYS.merge(a_start, a_end))
        a_seg = arrays(*seg)
        for own_events in (True, False):
            for metadata_id in LISTS.distinct(ids):
                runs = LISTS.where_id(ids, metadata_id, start, end)
                a_runs = ARRAYS.where_id(a_ids, metadata_id, a_start, a_end)
                assert as_lists(runs) == as_lists(a_runs)
                listed = LISTS.windows(*runs, *seg, own_events)
                assert as_lists(listed) == as_lists(ARRAYS.windows(*a_runs, *a_seg, own_events))
        halves = [start[: count // 2], start[count // 2 :]], [end[: count // 2], end[count // 2 :]]
        a_halves = [arrays(*h) for h in halves]
        assert LISTS.union_length(*halves) == ARRAYS.union_length(*a_halves)
        assert LISTS.window_stats(*halves) == ARRAYS.window_stats(*a_halves)
        assert (LISTS.lowest(start), LISTS.highest(end)) == (ARRAYS.lowest(a_start), ARRAYS.highest(a_end))
    assert LISTS.window_stats([[]], [[]]) is None and ARRAYS.window_stats(*[arrays([])] * 2) is None


def test_rows_are_the_columns_as_lists_on_both_fixtures() -> None:
    for path in (need(V6E), need(GPU)):
        for plane in read_planes(path):
            stat_ids = list(plane.stat_names)
            for line in plane.lines():
                rows, cols = line.rows(stat_ids), line.columns(stat_ids)
                assert (rows.metadata_id, rows.offset_ps, rows.duration_ps) == (
                    cols.metadata_id.tolist(),
                    cols.offset_ps.tolist(),
                    cols.duration_ps.tolist(),
                )
                assert {k: as_lists(v) for k, v in rows.stats.items()} == {
                    k: as_lists(v) for k, v in cols.stats.items()
                }


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fixtures and altered copies: idle inserted, a Steps line, no peak stats, two jittered repeats
    on 8 chips."""
    folder = tmp_path_factory.mktemp("variants")
    made = {"v6e": need(V6E), "gpu": need(GPU)}
    space = load_space(V6E)
    delay_module_runs(space, MODULE, gap_ps=1_000_000_000_000)
    made["host_bound"] = write_space(space, folder / "host_bound.xplane.pb")
    space = load_space(V6E)
    add_steps_line(space, MODULE)
    made["steps"] = write_space(space, folder / "steps.xplane.pb")
    space = load_space(V6E)
    edit_device_stats(space, drop=["peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second"])
    made["no_peaks"] = write_space(space, folder / "no_peaks.xplane.pb")
    made["wide"] = write_space(synthesize(load_space(V6E), devices=8, repeats=2), folder / "wide.xplane.pb")
    return made


@pytest.mark.parametrize("name", ["v6e", "gpu", "host_bound", "steps", "no_peaks", "wide"])
def test_summaries_are_the_same_on_lists_and_arrays(
    name: str, variants: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every figure of the report, bit for bit (JSON and repr), whichever arithmetic folded it."""
    monkeypatch.setattr(profile_planes, "LIST_PROFILE_BYTES", 1 << 62)
    monkeypatch.setattr(profile_planes, "LIST_EVENTS", 1 << 62)
    assert isinstance(profile_planes.ops_for(variants[name]), ListOps)
    listed = analyze_profile(variants[name], top=15)
    monkeypatch.setattr(profile_planes, "LIST_EVENTS", -1)
    assert isinstance(profile_planes.ops_for(variants[name]), NumpyOps)
    folded = analyze_profile(variants[name], top=15)
    assert listed.model_dump(mode="json") == folded.model_dump(mode="json")
    assert repr(listed) == repr(folded)
    assert (listed.top_ops and listed.steps is not None) or (name == "gpu" and listed.host is not None)


def test_the_event_count_picks_the_arithmetic(tmp_path: Path, variants: dict[str, Path]) -> None:
    """Lists for the v6e fixture (26,700 events); numpy for twice its events in fewer bytes than the
    size limit, and for a file above that limit whatever it holds; a file that cannot be read is left
    to the fold, which names what is wrong."""
    assert count_events(variants["v6e"], 1 << 40) == 26_723
    assert isinstance(profile_planes.ops_for(variants["v6e"]), ListOps)
    wide = variants["wide"]
    assert wide.stat().st_size > profile_planes.LIST_PROFILE_BYTES
    assert isinstance(profile_planes.ops_for(wide), NumpyOps)
    doubled = write_space(synthesize(load_space(V6E), devices=4, repeats=2), tmp_path / "doubled.xplane.pb")
    assert doubled.stat().st_size <= profile_planes.LIST_PROFILE_BYTES
    assert count_events(doubled, profile_planes.LIST_EVENTS) > profile_planes.LIST_EVENTS
    assert isinstance(profile_planes.ops_for(doubled), NumpyOps)
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(V6E.read_bytes()[:400_000])
    assert isinstance(profile_planes.ops_for(cut), ListOps)
    with pytest.raises(TruncatedProfileError):
        analyze_profile(cut)
