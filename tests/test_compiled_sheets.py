"""The precompiled parts of the YAML sheets (`tpu_runtime.yaml_data.compiled`): current, the same as what
the sheet itself gives, and never used for a sheet whose text has changed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tpu_runtime import compiled_sheets, workflow
from tpu_runtime.chips import CHIPS_FILE, chip_key, get_chip, known_chips, load_chips
from tpu_runtime.resources import knowledge_dir, workflows_dir
from tpu_runtime.yaml_data import COMPILED, compiled


def test_the_precompiled_file_is_current() -> None:
    """Made from the sheets as they are now; after editing one, `python -m tpu_runtime.compiled_sheets`."""
    assert COMPILED.read_text(encoding="utf-8") == compiled_sheets.render()


@pytest.mark.parametrize("name", sorted(p.stem for p in workflows_dir().glob("*.yaml")))
def test_a_precompiled_workflow_is_the_validated_one(name: str) -> None:
    sheet = workflows_dir() / f"{name}.yaml"
    assert compiled(sheet, workflow.COMPILED_AS) is not None  # the fast path is the one taken
    workflow.load_workflow.cache_clear()
    loaded = workflow.load_workflow(name)
    validated = workflow.parse_workflow(sheet.read_text())
    assert loaded == validated
    assert repr(loaded) == repr(validated)


def test_every_name_of_a_generation_resolves_to_it() -> None:
    assert compiled(knowledge_dir() / CHIPS_FILE, "alias_index") is not None
    for key, spec in load_chips(knowledge_dir() / CHIPS_FILE).items():
        for name in {key, spec.display_name, *spec.aliases, *spec.device_kinds.values}:
            assert chip_key(name) == key
            assert get_chip(name).name == key
    assert chip_key("TPU v99") is None
    assert known_chips()


def test_a_changed_sheet_is_read_itself(tmp_path: Path) -> None:
    """A copy of a sheet under the same folder name gets the precompiled value only while its text is
    the same; one changed byte and the reader goes back to the sheet."""
    folder = tmp_path / "workflows"
    folder.mkdir()
    copy = folder / "diagnose.yaml"
    shutil.copyfile(workflows_dir() / "diagnose.yaml", copy)
    assert compiled(copy, workflow.COMPILED_AS) == compiled(workflows_dir() / "diagnose.yaml", "workflow")
    copy.write_text(copy.read_text().replace("title: Rank the findings", "title: Rank what was found"))
    assert compiled(copy, workflow.COMPILED_AS) is None
    assert compiled(copy, "no_such_value") is None
    assert workflow.parse_workflow(copy.read_text()).step("findings").title == "Rank what was found"
