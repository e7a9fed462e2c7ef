"""The import graph of `tpu_runtime`: no cycles, and every module imports on its own.

A cycle kept alive by an import inside a function still ties two modules together (each needs the other
loaded to work) and breaks as soon as someone moves that import to the top, so every import counts here:
module level, inside functions, and under `TYPE_CHECKING`. Shared types belong in a leaf module both
sides import. The graph is read from the source with `ast`; nothing is imported to build it.
"""

from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.subprocess_support import run_text

PACKAGE = REPO / "tpu_runtime"
#: Kernel files shipped as text for `kernel new`; never imported as part of the package.
NOT_MODULES = ("tpu_runtime/kernels/templates/",)
#: Cycles that other branches are rewriting the modules of; each must disappear, never grow.
KNOWN_CYCLES: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(NOT_MODULES):
            continue
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The tpu_runtime modules `name` imports anywhere in its source (a package import counts)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    wanted: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            wanted.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                wanted.add(full if full in modules else base)
    found: set[str] = set()
    for target in wanted:
        while target and target not in modules:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[frozenset[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(frozenset(group))
    return groups


def test_the_cycle_finder_finds_a_cycle_through_a_late_import(tmp_path: Path) -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []
    probe = tmp_path / "x.py"
    probe.write_text("def f():\n    from tpu_runtime.workflow import run_workflow\n")
    modules = {"tpu_runtime.x": probe, "tpu_runtime.workflow": tmp_path / "workflow.py"}
    assert _imports("tpu_runtime.x", probe, modules) == {"tpu_runtime.workflow"}


def test_no_import_cycles_among_tpu_runtime_modules() -> None:
    graph = import_graph()
    assert "tpu_runtime.onboard.steps" in graph and len(graph) > 100  # the walk saw the package
    found = set(cycles(graph))
    new = [sorted(group) for group in found - KNOWN_CYCLES]
    assert not new, f"import cycles (put the shared piece in a leaf module both import): {new}"
    gone = [sorted(group) for group in KNOWN_CYCLES - found]
    assert not gone, f"these cycles are gone: remove them from KNOWN_CYCLES: {gone}"


ISOLATED = """
import importlib, json, sys
failed = {}
for name in json.loads(sys.argv[1]):
    for loaded in [m for m in sys.modules if m == "tpu_runtime" or m.startswith("tpu_runtime.")]:
        del sys.modules[loaded]
    try:
        importlib.import_module(name)
    except BaseException as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""


@pytest.mark.slow  # one interpreter that imports torch, jax and the rest once: tens of seconds
def test_every_module_imports_on_its_own_in_a_fresh_interpreter() -> None:
    """Each module is imported with no other tpu_runtime module loaded (third-party ones stay cached)."""
    names = sorted(_modules())
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "JAX_PLATFORMS": "cpu"}
    done = run_text([sys.executable, "-c", ISOLATED, json.dumps(names)], env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    failed = json.loads(done.stdout.strip().splitlines()[-1])
    assert failed == {}, failed
