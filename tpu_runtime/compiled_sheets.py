"""Writes `tpu_runtime/data/compiled_sheets.json`: the parts of the shipped YAML sheets that commands
which start often read precompiled (see `tpu_runtime.yaml_data.compiled`).

Each value is made the way a reader makes it from the sheet itself (validated by the same models), so a
precompiled value and the sheet never say different things: tests/test_compiled_sheets.py rebuilds them
and compares. After editing a sheet, run `python -m tpu_runtime.compiled_sheets`; until then readers
find the digest changed and read the sheet, which is slower, never wrong.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tpu_runtime import chips, workflow
from tpu_runtime.resources import knowledge_dir, workflows_dir
from tpu_runtime.yaml_data import COMPILED, sheet_digest, sheet_key


def _workflow(sheet: Path) -> Any:
    return workflow.parse_workflow(sheet.read_text()).model_dump(mode="json")


def _alias_index(sheet: Path) -> Any:
    return chips.alias_index_of(chips.load_chips(sheet))


def sheets() -> dict[Path, tuple[str, Callable[[Path], Any]]]:
    """Each precompiled sheet, with the name its value goes by and how it is made from the sheet."""
    found: dict[Path, tuple[str, Callable[[Path], Any]]] = {
        sheet: (workflow.COMPILED_AS, _workflow) for sheet in sorted(workflows_dir().glob("*.yaml"))
    }
    found[knowledge_dir() / chips.CHIPS_FILE] = (chips.COMPILED_AS, _alias_index)
    return found


def build() -> dict[str, Any]:
    """The precompiled values, made from the sheets as they are now."""
    return {
        sheet_key(sheet): {"sha256": sheet_digest(sheet), what: make(sheet)}
        for sheet, (what, make) in sheets().items()
    }


def render() -> str:
    """The file's text (each sheet's order kept: a mapping's keys come out as the sheet lists them)."""
    return json.dumps(build(), indent=1) + "\n"


def main() -> None:
    COMPILED.write_text(render(), encoding="utf-8")
    print(f"wrote {COMPILED}")


if __name__ == "__main__":
    main()
