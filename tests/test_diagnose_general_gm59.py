"""A parallelism degree a raising check tests under its own name (docs/diagnose-accuracy.md, "General
mechanisms", gm59): a serving engine's or trainer's check compares `tp_size`, `dp` or
`pipeline_parallel_size`, the degree it was handed, while the user sets the engine's launch flag or the
trainer's mesh setting. The raise guard's fix names where each degree it tests is set. Sites, conditions and
wordings written for these tests, each with a nearby case that must get no such hint."""

from __future__ import annotations

import pytest

from tests.crash_helpers import ablated_verdict, guarded, library_trace
from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_locations import RaiseSite
from tpu_runtime.diagnose.crash_raise_guard import degree_hint

MESSAGE = "ValueError: Sliding window cache of 6 groups cannot be split over the requested shards"


def _site(guard: str) -> RaiseSite:
    """A mined check of a module no location table maps (an engine mined whole)."""
    return guarded(
        RaiseSite(
            module="invented_engine.layers.window",
            function="split_cache",
            exception="ValueError",
            pattern=r"Sliding window cache of .+? groups cannot be split over the requested shards",
            anchor="groups cannot be split over the requested shards",
        ),
        guard,
    )


def _guard_fix(monkeypatch: pytest.MonkeyPatch, guard: str) -> tuple[str, str]:
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (_site(guard),))
    _, rule, fix = ablated_verdict(library_trace(MESSAGE, package="invented_engine"))
    return rule, fix


def test_a_tensor_parallel_size_under_the_checks_own_name_gets_the_engines_flags(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rule, fix = _guard_fix(monkeypatch, "tp_size % window_groups != 0")
    assert rule.endswith("/raise_guard")
    assert "`tp_size` is the tensor-parallel degree" in fix
    assert "--tensor-parallel-size" in fix and "--tp-size" in fix and "ici_tensor_parallelism" in fix


def test_a_condition_on_two_degrees_names_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _, fix = _guard_fix(monkeypatch, "attn_dp_size * pipeline_parallel_size > num_hosts")
    assert "`attn_dp_size` is the data-parallel degree" in fix and "--dp-size" in fix
    assert "`pipeline_parallel_size` is the pipeline-parallel degree" in fix and "--pp-size" in fix


def test_a_condition_on_no_degree_gets_no_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    rule, fix = _guard_fix(monkeypatch, "window_groups % num_shards != 0")
    assert rule.endswith("/raise_guard") and "`num_shards`" in fix
    assert "parallel degree" not in fix and "--tensor-parallel-size" not in fix


@pytest.mark.parametrize(
    "names",
    [
        ("stp_size",),  # a name that only ends like one
        ("tpu_size",),
        ("step",),
        ("dp_rank_offset",),  # a rank or offset within the degree, not the degree
        ("data_parallel_rank",),
    ],
)
def test_names_that_only_look_like_a_degree_get_no_hint(names: tuple[str, ...]) -> None:
    assert degree_hint(names) == ""


def test_each_degree_is_named_once() -> None:
    hint = degree_hint(("tp", "tensor_parallel_size", "ep_size"))
    assert hint.count("tensor-parallel degree") == 1 and "`tp` is the tensor-parallel degree" in hint
    assert "`ep_size` is the expert-parallel degree" in hint and "--enable-expert-parallel" in hint
