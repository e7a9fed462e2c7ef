"""The chip fact sheet: every fact sourced and dated, aliases resolve, unknown names explain themselves."""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from tpu_runtime.chips import GIB, UnknownChipError, get_chip, known_chips, load_chips
from tpu_runtime.onboard.report import GENERATIONS
from tpu_runtime.resources import agents_dir, examples_dir, knowledge_dir, workflows_dir

CHECKED = date(2026, 11, 30)
F32_CHECKED = date(2026, 12, 2)  # the derived float32 peaks were added later
FACT_KEYS = {"value", "values", "gib", "topology"}


def _raw_sheet() -> dict[str, Any]:
    data = yaml.safe_load((knowledge_dir() / "chips.yaml").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _facts(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every mapping in the sheet that states a value, with where it sits."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if FACT_KEYS & node.keys():
            found.append((path, node))
        for key, child in node.items():
            found += _facts(child, f"{path}.{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _facts(child, f"{path}[{i}]")
    return found


def test_resource_dirs_point_at_the_checkout() -> None:
    root = Path(__file__).resolve().parents[1]
    assert knowledge_dir() == root / "knowledge"
    assert workflows_dir() == root / "workflows"
    assert agents_dir() == root / "agents"
    assert examples_dir() == root / "examples"


def test_resource_dirs_fall_back_to_the_bundled_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tpu_runtime.resources as resources

    site = tmp_path / "site-packages"
    package = site / "tpu_runtime"
    (package / "_bundled" / "knowledge").mkdir(parents=True)
    (site / "knowledge").mkdir()  # some other distribution's folder: must not be picked up
    monkeypatch.setattr(resources, "_PACKAGE_DIR", package)
    monkeypatch.setattr(resources, "_CHECKOUT_ROOT", site)
    assert resources.knowledge_dir() == package / "_bundled" / "knowledge"
    with pytest.raises(FileNotFoundError, match="workflows"):
        resources.workflows_dir()


def test_every_fact_has_an_https_source_and_the_check_date() -> None:
    facts = _facts(_raw_sheet()["generations"])
    # 5 generations x (device kinds, hbm, bandwidth, bf16, TensorCores, chips/host, slices...) at least
    assert len(facts) > 80
    for where, fact in facts:
        assert str(fact.get("source", "")).startswith("https://"), f"{where} has no https source"
        expected = F32_CHECKED if ".peak_f32" in where else CHECKED
        assert fact.get("checked") == expected, f"{where} checked={fact.get('checked')!r}"


def test_required_facts_present_for_every_report_generation() -> None:
    chips = load_chips()
    assert set(GENERATIONS) <= set(chips)
    assert "v4" in chips
    for name in GENERATIONS:
        spec = chips[name]
        assert spec.hbm.bytes == round(spec.hbm.gib * GIB)
        assert spec.hbm_bandwidth.value > 0
        assert spec.peak_bf16.value > 0
        assert spec.tensorcores_per_chip.value in (1, 2)
        assert spec.chips_per_host.value in (4, 8)
        assert spec.slices, name


def test_known_values_from_the_sources() -> None:
    assert get_chip("v5e").hbm.gib == 16
    assert get_chip("v5p").hbm.gib == 95
    assert get_chip("v6e").hbm.gib == 32
    assert get_chip("tpu7x").hbm.gib == 192
    assert get_chip("v6e").peak_bf16.value == 918
    fp8 = get_chip("tpu7x").peak_fp8
    assert fp8 is not None and fp8.value == 4614
    assert get_chip("tpu7x").tensorcores_per_chip.value == 2
    assert get_chip("v5e").tensorcores_per_chip.value == 1
    # Disagreeing sources are kept, not dropped: v5e's HBM bandwidth has more than one printed value.
    assert {alt.value for alt in get_chip("v5e").hbm_bandwidth.alternatives} >= {800}


def test_slices_chip_counts_match_topology_and_ascend() -> None:
    for spec in load_chips().values():
        counts = [s.chips for s in spec.slices]
        assert counts == sorted(counts), spec.name
        for shape in spec.slices:
            assert math.prod(int(d) for d in shape.topology.split("x")) == shape.chips
    assert [s.topology for s in get_chip("v5e").slices] == [
        "1x1",
        "2x2",
        "2x4",
        "4x4",
        "4x8",
        "8x8",
        "8x16",
        "16x16",
    ]
    assert get_chip("v5p").slices[0].topology == "2x2x1"


def test_smallest_slice_picks_the_first_listed_shape_that_is_big_enough() -> None:
    v6e = get_chip("v6e")
    shape = v6e.smallest_slice(5)
    assert shape is not None and shape.topology == "2x4" and shape.chips == 8
    one = v6e.smallest_slice(1)
    assert one is not None and one.topology == "1x1"
    assert v6e.smallest_slice(v6e.max_slice_chips + 1) is None


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("v6e", "v6e"),
        ("TPU v6 Lite", "v6e"),
        ("v6 lite", "v6e"),
        ("Trillium", "v6e"),
        ("ironwood", "tpu7x"),
        ("tpu7x", "tpu7x"),
        ("TPU7x", "tpu7x"),
        ("v5litepod", "v5e"),
        ("v5litepod-16", "v5e"),
        ("v5 lite", "v5e"),
        ("TPU v5 lite", "v5e"),
        ("TPU v5", "v5p"),
        ("v5p-8", "v5p"),
        ("v6e:2x2", "v6e"),
        ("tpu v4", "v4"),
    ],
)
def test_aliases(alias: str, canonical: str) -> None:
    assert get_chip(alias).name == canonical


def test_unknown_chip_lists_known_names() -> None:
    with pytest.raises(UnknownChipError) as excinfo:
        get_chip("h100")
    message = str(excinfo.value)
    assert "'h100'" in message
    for name in known_chips():
        assert name in message
    assert "trillium" in message and "ironwood" in message
    assert isinstance(excinfo.value, ValueError)


def test_get_chip_is_cached() -> None:
    assert get_chip("v6e") is get_chip("trillium")


def test_loader_rejects_a_fact_without_https_source(tmp_path: Path) -> None:
    sheet = _raw_sheet()
    sheet["generations"]["v6e"]["peak_bf16"]["source"] = "somewhere"
    bad = tmp_path / "chips.yaml"
    bad.write_text(yaml.safe_dump(sheet), encoding="utf-8")
    with pytest.raises(ValueError, match="https"):
        load_chips(bad)


def test_loader_rejects_a_topology_whose_chip_count_is_wrong(tmp_path: Path) -> None:
    sheet = _raw_sheet()
    sheet["generations"]["v5e"]["slices"][2]["chips"] = 9
    bad = tmp_path / "chips.yaml"
    bad.write_text(yaml.safe_dump(sheet), encoding="utf-8")
    with pytest.raises(ValueError, match="2x4"):
        load_chips(bad)
