"""Reading, from a library's source, what the locals of a raising check were assigned from (build time only).

`benchmarks/build_guard_aliases.py` calls `aliases_in_source` for each mined raise site of a repository
snapshot, turns each assignment into names (`alias_record`) and writes those to
`tpu_runtime/data/guard_aliases.json`; `guard_aliases` reads that file when a log is diagnosed, so the parsing
of library source stays out of a diagnose run and no library code is shipped.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

__all__ = ["MAX_EXPR", "alias_record", "aliases_in_source", "setting_read"]

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


def alias_record(expr: str) -> dict[str, str]:
    """What an assignment's right-hand side says in names: {"setting": name} for a plain read of a setting
    (setting_read), {"product_of": name} for the product of a list (a mesh's device count); {} for any other
    computation, whose words would name the library's internals, not what to change."""
    setting = setting_read(expr)
    if setting:
        return {"setting": setting}
    product = _PRODUCT.match(expr.replace(" ", ""))
    return {"product_of": product["of"]} if product is not None else {}
