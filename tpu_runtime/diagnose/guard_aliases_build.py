"""Reading, from a library's source, what the locals of a raising check were assigned from (build time only).

`benchmarks/build_guard_aliases.py` calls `aliases_in_source` for each mined raise site of a repository
snapshot and writes the result to `tpu_runtime/data/guard_aliases.json`; `guard_aliases` reads that file when
a log is diagnosed, so the parsing of library source stays out of a diagnose run.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

__all__ = ["MAX_EXPR", "aliases_in_source"]

MAX_EXPR = 100
"""The longest assignment kept: a longer right-hand side is a computation, not a name for a setting."""


def _enclosing_function(tree: ast.AST, line: int) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The innermost function whose body holds `line`."""
    best: ast.FunctionDef | ast.AsyncFunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            end = node.end_lineno or node.lineno
            if node.lineno <= line <= end and (best is None or node.lineno >= best.lineno):
                best = node
    return best


def _own_statements(func: ast.AST) -> list[ast.stmt]:
    """The statements of `func`, nested blocks included, but not those of functions or classes inside it."""
    found: list[ast.stmt] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.stmt):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def aliases_in_source(source: str, line: int, names: Sequence[str]) -> dict[str, str]:
    """For each of `names` the function holding `line` assigned plainly (`name = expr`, one target) before
    that line, the last such expression as the source writes it; names it never assigned (its parameters,
    loop variables, globals) are left out, and so is an expression longer than MAX_EXPR characters."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return {}
    func = _enclosing_function(tree, line)
    if func is None:
        return {}
    last: dict[str, tuple[int, str]] = {}
    for stmt in _own_statements(func):
        if stmt.lineno >= line:
            continue
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        if not isinstance(target, ast.Name) or target.id not in names:
            continue
        expr = ast.unparse(value)
        if len(expr) <= MAX_EXPR and stmt.lineno >= last.get(target.id, (0, ""))[0]:
            last[target.id] = (stmt.lineno, expr)
    return {name: last[name][1] for name in names if name in last}
