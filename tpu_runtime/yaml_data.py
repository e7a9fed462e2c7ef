"""Reading the YAML data files the package ships (rules, remedies, workflows, chip specs) quickly.

PyYAML's `safe_load` parses in pure Python; its C loader (libyaml, present in the PyPI wheels) builds the
same safe objects about ten times faster, which is most of the time `ops show` or `diagnose` on a small
log spent after start-up. The pure-Python loader stays the fallback where libyaml is not built.

A command that starts often and needs only a small part of a sheet (`diagnose` of a profile: the step list
of its workflow, the chip generation a device kind names) reads that part precompiled as JSON
(`compiled`), which spares it importing PyYAML and validating the whole sheet. Each precompiled value is
kept with the SHA-256 of the sheet's text it came from and is used only for that very text; any edit to
the sheet sends the reader back to the sheet itself. `python -m tpu_runtime.compiled_sheets` writes them,
and a test checks that they are current.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any

#: The precompiled values: {"<folder>/<sheet>.yaml": {"sha256": ..., "<what>": value, ...}}.
COMPILED = Path(__file__).resolve().parent / "data" / "compiled_sheets.json"


def safe_load(text: str) -> Any:
    """`yaml.safe_load`, with the C loader when PyYAML has one."""
    import yaml

    loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def sheet_key(sheet: Path) -> str:
    """How the precompiled file names a sheet: its folder and file name (`workflows/diagnose.yaml`), the
    same in a checkout and in an installed wheel's bundled copy."""
    return f"{sheet.parent.name}/{sheet.name}"


def sheet_digest(sheet: Path) -> str:
    return hashlib.sha256(sheet.read_bytes()).hexdigest()


def compiled(sheet: Path, what: str) -> Any | None:
    """The value named `what` precompiled from exactly the current text of `sheet`; None when the sheet
    changed since it was compiled, or nothing of that name was compiled from it."""
    entry = _compiled_file().get(sheet_key(sheet))
    if not isinstance(entry, dict) or what not in entry or entry.get("sha256") != sheet_digest(sheet):
        return None
    return entry[what]


@cache
def _compiled_file() -> dict[str, Any]:
    try:
        data = json.loads(COMPILED.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return data if isinstance(data, dict) else {}
