"""What a raising check's local names were assigned from, so its condition names the setting a user changes.

A check often tests a local its function copied or computed from the configuration a few lines above the
raise (`ici_context_parallel_size = self.ici_context_parallelism`, `required_devices =
int(np.prod(axis_shapes))`); the condition alone (crash_raise_guard) then names the local, which no user sets.
`benchmarks/build_guard_aliases.py` reads, for each mined raise site of a repository snapshot whose condition
names such a local, the last plain assignment to it in the same function before the raise
(`guard_aliases_build.aliases_in_source`), and writes them to `tpu_runtime/data/guard_aliases.json` (the
expressions are the libraries' code as written, a few words each, kept with the site's repository, path and
line).
`alias_notes` turns them into the words of the raise guard's fix.
"""

from __future__ import annotations

import ast
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


@functools.cache
def load_aliases(path: Path = ALIASES_FILE) -> dict[str, dict[str, str]]:
    """The shipped aliases, by site key; {} when the file is absent."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {str(k): {str(n): str(e) for n, e in v.items()} for k, v in data.get("aliases", {}).items()}


def setting_read(expr: str) -> str:
    """The setting a plain read names (`self.ici_context_parallelism`, `config["x"]`, `getattr(cfg, "x",
    1)`, `int(args.x)`): the attribute or key; "" for any other expression or a private member."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return ""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 1:
        called, given = node.func.id, node.args
        if called in ("int", "float", "bool", "str") and len(given) == 1:
            node = given[0]
        elif called == "getattr" and len(given) >= 2 and isinstance(given[1], ast.Constant):
            key = given[1].value
            return key if isinstance(key, str) and not key.startswith("_") else ""
    name = ""
    if isinstance(node, ast.Attribute) and _holder(node.value):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and _holder(node.value):
        name = node.slice.value if isinstance(node.slice.value, str) else ""
    return name if name.isidentifier() and not name.startswith("_") else ""


_NOT_HOLDERS = frozenset({"np", "numpy", "jnp", "jax", "lax", "torch", "tf", "math", "sys", "dtypes"})


def _holder(node: ast.expr) -> bool:
    """Whether an attribute or key is read from an object that holds settings (`self`, `config`,
    `self.config`, `os.environ`): names and attributes only, not an element or a call's result
    (`devices[0].platform` is a device's property) nor a module of constants (`np.float32`)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id not in _NOT_HOLDERS


_PRODUCT = re.compile(r"^(?:int\()?(?:np|numpy|math|jnp)\.prod\((?P<of>[A-Za-z_][\w.]*)\)\)?$")


def alias_notes(aliases: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The words the raise guard's fix adds for the locals its condition tests ("" when none), and the
    renaming of each local that is a plain read of a setting to that setting (for the value that passes).
    Only a read of a setting and a product of a list (a mesh's device count) are said: any other computation
    quoted would name the library's internals, not what to change."""
    notes: list[str] = []
    renamed: dict[str, str] = {}
    for name, expr in list(aliases.items())[:MAX_NOTES]:
        setting = setting_read(expr)
        product = _PRODUCT.match(expr.replace(" ", ""))
        if setting and setting != name:
            notes.append(f"`{name}` is the setting `{setting}` (`{name} = {expr}`)")
            renamed[name] = setting
        elif product is not None:
            notes.append(f"`{name}` is the product of `{product['of']}` (`{name} = {expr}`)")
        else:
            notes.append(f"`{name} = {expr}`")
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
