"""Which setting a raising check's local names were read from, so the fix names what a user changes.

A check often tests a local its function copied or computed from the configuration a few lines above the
raise (`ici_context_parallel_size = self.ici_context_parallelism`, `required_devices =
int(np.prod(axis_shapes))`); the condition alone (crash_raise_guard) then names the local, which no user sets.
`benchmarks/build_guard_aliases.py` reads, for each mined raise site of a repository snapshot whose condition
names such a local, the last plain assignment to it in the same function before the raise, and keeps only what
that assignment says in names (`guard_aliases_build.alias_record`: the setting a plain read names, or the list
whose product it is), not the library's code, in `tpu_runtime/data/guard_aliases.json`, by the site's
repository, path and line. `alias_notes` turns them into the words of the raise guard's fix.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

ALIASES_FILE = Path(__file__).resolve().parents[1] / "data" / "guard_aliases.json"
MAX_NOTES = 3


def site_key(repo: str, path: str, line: int) -> str:
    """The key of a snapshot site in the aliases file."""
    return f"{repo}:{path}:{line}"


Alias = dict[str, str]
"""What a local was assigned from, in names: {"setting": name} for a plain read of a setting, {"product_of":
name} for the product of a list (a mesh's device count)."""


@functools.cache
def load_aliases(path: Path = ALIASES_FILE) -> dict[str, dict[str, Alias]]:
    """The shipped aliases, by site key; {} when the file is absent."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {
        str(k): {str(n): {str(f): str(x) for f, x in a.items()} for n, a in v.items()}
        for k, v in data.get("aliases", {}).items()
    }


def alias_notes(aliases: Mapping[str, Mapping[str, str]]) -> tuple[str, dict[str, str]]:
    """The words the raise guard's fix adds for the locals its condition tests ("" when none), and the
    renaming of each local that is a plain read of a setting to that setting (for the value that passes)."""
    notes: list[str] = []
    renamed: dict[str, str] = {}
    for name, alias in list(aliases.items())[:MAX_NOTES]:
        setting, product = alias.get("setting", ""), alias.get("product_of", "")
        if setting and setting != name:
            notes.append(f"`{name}` is the setting `{setting}`")
            renamed[name] = setting
        elif product:
            notes.append(f"`{name}` is the product of `{product}`")
    if not notes:
        return "", renamed
    return "; in that function " + "; ".join(notes), renamed


def renamed_ways(ways: Sequence[str], renamed: Mapping[str, str]) -> tuple[str, ...]:
    """The values that get past a check (`n=1`) with each local that reads a setting named as that setting."""
    out: list[str] = []
    for way in ways:
        for name, setting in renamed.items():
            way = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w])", setting, way)
        out.append(way)
    return tuple(out)
