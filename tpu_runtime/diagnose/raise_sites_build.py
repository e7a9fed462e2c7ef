"""Mine the message templates of installed libraries' raise sites (crash_locations' `raise_sites.json`).

Every `.py` file of the packages in `PACKAGES` whose module the location table maps to a category
(crash_locations.LocationTable.category_of_module) is parsed with `ast`; each `raise X("...")` (a string, an
f-string, `"..." % args`, `"...".format(...)`, or a name assigned one of those earlier in the function)
and each `assert test, "..."` (an AssertionError whose condition is the test's negation) becomes a regex of
its message's first line, its literal text escaped and each placeholder a lazy wildcard, kept when enough of
it is literal to name the site. Run by `benchmarks/build_raise_sites.py`.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from tpu_runtime.diagnose.crash_locations import LocationTable
from tpu_runtime.diagnose.crash_raise_guard import guard_facts

__all__ = ["PACKAGES", "SiteValue", "mine", "raise_sites_of", "template", "write_raise_sites"]

SiteValue = str | int | list[str]
"""A mined site's field: text, a line number, or the names and settings its condition reads."""
MAX_GUARD = 200
"""The longest `if` test read for a site (longer ones are whole expressions, not a setting's check)."""
PACKAGES = ("jax", "jaxlib", "torch", "torch_tpu", "transformers", "flax", "tensorflow", "torch_xla")
WILD = ".+?"
MIN_LITERAL = 24  # literal characters a template needs in all
MIN_ANCHOR = 14  # and in its longest literal run (the substring tested before the regex)
_PERCENT = re.compile(r"%(?:\(\w+\))?[-#0 +]*(?:\d+|\*)?(?:\.\d+)?[sdrifgexXoc]")
_BRACES = re.compile(r"\{[^{}]*\}")


def _parts(node: ast.expr, names: dict[str, ast.expr], depth: int = 0) -> list[str | None] | None:
    """The message as literal strings and None for each placeholder; None when it is not a string."""
    if depth > 4:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        out: list[str | None] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                out.append(value.value)
            else:
                out.append(None)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _parts(node.left, names, depth + 1), _parts(node.right, names, depth + 1)
        if left is None and right is None:
            return None
        return [*(left or [None]), *(right or [None])]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
            return _split(node.left.value.replace("%%", "\0"), _PERCENT, "%")
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        base = node.func.value
        if isinstance(base, ast.Constant) and isinstance(base.value, str):
            text = base.value.replace("{{", "\0").replace("}}", "\1")
            return [p.replace("\0", "{").replace("\1", "}") if p else p for p in _split(text, _BRACES, "")]
        return None
    if isinstance(node, ast.Name) and node.id in names:
        return _parts(names[node.id], names, depth + 1)
    return None


def _split(text: str, placeholder: re.Pattern[str], escaped: str) -> list[str | None]:
    out: list[str | None] = []
    last = 0
    for m in placeholder.finditer(text):
        out.extend([text[last : m.start()].replace("\0", escaped or "\0"), None])
        last = m.end()
    out.append(text[last:].replace("\0", escaped or "\0"))
    return out


def _escape(text: str) -> str:
    """`re.escape` without escaping spaces (a space is literal in a pattern compiled without VERBOSE): the
    patterns stay readable and the site file small."""
    return " ".join(re.escape(word) for word in text.split(" "))


def template(parts: list[str | None]) -> tuple[str, str] | None:
    """(regex, anchor) of the message's first line, or None when too little of it is literal."""
    pieces: list[str | None] = []
    for part in parts:
        if part is None:
            pieces.append(None)
            continue
        if "\n" in part:
            pieces.append(part.split("\n", 1)[0])
            break
        pieces.append(part)
    literals = [p.strip() for p in pieces if p]
    if sum(len(p) for p in literals) < MIN_LITERAL or not literals:
        return None
    anchor = max((p for p in pieces if p), key=len)
    if len(anchor.strip()) < MIN_ANCHOR:
        return None
    regex = ""
    for piece in pieces:
        if piece is None:
            if not regex.endswith(re.escape(WILD)) and not regex.endswith(WILD):
                regex += WILD
        else:
            regex += _escape(piece)
    regex = regex.removesuffix(WILD)
    return regex, anchor.strip()


class _Visitor(ast.NodeVisitor):
    def __init__(self, module: str) -> None:
        self.module = module
        self.function = "<module>"
        self.names: dict[str, ast.expr] = {}
        self.guards: list[str] = []  # the tests of the `if` statements around the node, innermost last
        self.sites: list[dict[str, SiteValue]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer, names, guards = self.function, self.names, self.guards
        self.function, self.names, self.guards = node.name, {}, []
        self.generic_visit(node)
        self.function, self.names, self.guards = outer, names, guards

    def visit_If(self, node: ast.If) -> None:
        """The test of the `if` around a raise is the condition the check raises on (its `else:` the test's
        negation): it names the setting or argument that made it fire."""
        self.visit(node.test)
        test = ast.unparse(node.test)
        for body, guard in ((node.body, test), (node.orelse, f"not ({test})")):
            self.guards.append(guard)
            for child in body:
                self.visit(child)
            self.guards.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            self.names[node.targets[0].id] = node.value
        self.generic_visit(node)

    def _add(self, name: str, message: ast.expr, line: int, guard: str | None) -> None:
        parts = _parts(message, self.names)
        made = template(parts) if parts else None
        if name and made is not None:
            regex, anchor = made
            self.sites.append(
                {
                    "module": self.module,
                    "function": self.function,
                    "exception": name,
                    "pattern": regex,
                    "anchor": anchor,
                    "line": line,
                }
            )
            if guard is not None and len(guard) <= MAX_GUARD:
                self.sites[-1].update(guard_facts(guard))

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            func = exc.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            self._add(name, exc.args[0], node.lineno, self.guards[-1] if self.guards else None)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        """`assert test, message` raises AssertionError when its test fails: a check like any `if ...: raise`,
        whose condition is the test's negation."""
        if node.msg is not None:
            self._add("AssertionError", node.msg, node.lineno, f"not ({ast.unparse(node.test)})")
        self.generic_visit(node)


def mine(
    table: LocationTable, packages: tuple[str, ...] = PACKAGES
) -> tuple[dict[str, str], list[dict[str, SiteValue]]]:
    """The versions of the packages found and the raise sites of their mapped modules."""
    versions: dict[str, str] = {}
    sites: dict[str, dict[str, SiteValue]] = {}
    for package in packages:
        spec = importlib.util.find_spec(package) if package.isidentifier() else None
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        try:
            versions[package] = importlib.metadata.version(package.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            versions[package] = "unknown"
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root.parent).with_suffix("")
            module = ".".join(rel.parts).removesuffix(".__init__")
            if "tests" in rel.parts or not table.may_map(module):
                continue
            try:
                found = raise_sites_of(path.read_text(encoding="utf-8"), module)
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            for found_site in found:
                if table.category_of_module(module, str(found_site["function"])) is not None:
                    # an installed package's line has no source to open: not kept
                    site: dict[str, SiteValue] = {
                        k: v if isinstance(v, list) else str(v) for k, v in found_site.items() if k != "line"
                    }
                    sites.setdefault(str(site["pattern"]), site)
    return versions, sorted(
        sites.values(), key=lambda s: (str(s["module"]), str(s["function"]), str(s["pattern"]))
    )


def raise_sites_of(source: str, module: str) -> list[dict[str, SiteValue]]:
    """The raise sites of one module's source whose message is literal enough to name them (`line` is the
    raise statement's)."""
    visitor = _Visitor(module)
    visitor.visit(ast.parse(source))
    return visitor.sites


def write_raise_sites(
    path: Path,
    versions: dict[str, str],
    sites: Sequence[Mapping[str, SiteValue]],
    snapshots: Mapping[str, str] | None = None,
) -> None:
    """The mined sites as JSON, one site a line (a diff shows which sites a new release changed);
    `snapshots` maps each repository a site was mined from to its commit."""
    rows = ",\n".join(json.dumps(site, sort_keys=True, separators=(",", ":")) for site in sites)
    head = f'{{"packages": {json.dumps(versions, sort_keys=True)},\n'
    if snapshots:
        head += f'"snapshots": {json.dumps(dict(snapshots), sort_keys=True)},\n'
    path.write_text(f'{head}"sites": [\n{rows}\n]}}\n', encoding="utf-8")


def mapped_first(sites: Sequence[dict[str, SiteValue]], table: LocationTable) -> list[dict[str, SiteValue]]:
    """One site per message pattern: the first, unless a later one's module maps and the first's does not.

    Two libraries often raise the same words; the site whose module `raise_locations.yaml` maps is the one
    whose category the location vote can use."""
    chosen: dict[str, dict[str, SiteValue]] = {}
    for site in sites:
        pattern = str(site["pattern"])
        earlier = chosen.get(pattern)
        if earlier is None or (
            table.category_of_module(str(earlier["module"]), str(earlier["function"])) is None
            and table.category_of_module(str(site["module"]), str(site["function"])) is not None
        ):
            chosen[pattern] = site
    return list(chosen.values())
