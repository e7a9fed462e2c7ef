"""Stage 2: the kernel must earn its pass. Four ways a kernel can look right without being a kernel:

1. It calls the reference. Caught twice: the module's `reference` is counted while the kernel runs
   (stage 1 and here), and the source is searched for the name outside `reference` itself.
2. It does the work in plain jax.numpy. The kernel's jaxpr must contain a pallas_call, and the work outside
   pallas_calls (matmul FLOPs, elementwise math, reductions) must stay under a quarter of the reference's.
3. It swallows errors: an `except`/`except Exception`/`except BaseException` that does not re-raise, or
   `contextlib.suppress(Exception)`, anywhere in the file.
4. It special-cases the test shapes: a branch (`if`/`while`, not a guard that only raises) on a comparison
   of `.shape` with a literal equal to a declared dimension, or a pass on every declared shape but a fail on
   a held-out one (each dimension of the smallest declared shape doubled).
"""

from __future__ import annotations

import ast
import functools
import math
import time
from dataclasses import dataclass
from typing import Any

from tpu_runtime.kernels.convention import KernelModule
from tpu_runtime.kernels.report import StageResult, stage_result

OUTSIDE_WORK_LIMIT = 0.25
_BROAD = {"Exception", "BaseException"}


@dataclass
class Finding:
    verdict: str  # "fail" or "warn"
    message: str


def static_findings(km: KernelModule) -> list[Finding]:
    """Source-level checks (1, 3, 4) on the kernel file."""
    source = km.path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(km.path))
    findings: list[Finding] = []
    name = km.path.name
    dims = {v for shape in [*km.shapes, km.target_shape] for v in shape.values() if v > 1}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name not in ("reference",):
            for inner in ast.walk(node):
                if _names_reference(inner):
                    findings.append(
                        Finding(
                            "fail",
                            f"{node.name}() uses `reference` ({name}:{_line(inner, node)}): "
                            "the kernel must compute the result itself, not call the reference",
                        )
                    )
                    break
        if isinstance(node, ast.Try):
            for handler in node.handlers:
                if _broad(handler.type) and not _reraises(handler):
                    findings.append(
                        Finding(
                            "fail",
                            f"`except{'' if handler.type is None else ' ' + ast.unparse(handler.type)}` at "
                            f"{name}:{handler.lineno} swallows errors: re-raise, or catch only the specific "
                            "exception you expect",
                        )
                    )
        if isinstance(node, ast.With):
            for item in node.items:
                call = item.context_expr
                if (
                    isinstance(call, ast.Call)
                    and ast.unparse(call.func).endswith("suppress")
                    and any(_broad(arg) for arg in call.args)
                ):
                    findings.append(
                        Finding("fail", f"`{ast.unparse(call)}` at {name}:{node.lineno} swallows errors")
                    )
        if isinstance(node, (ast.If, ast.IfExp, ast.While)) and not _only_raises(node):
            for compare in ast.walk(node.test):
                if isinstance(compare, ast.Compare) and _shape_literal_compare(compare, dims):
                    findings.append(
                        Finding(
                            "fail",
                            f"`{ast.unparse(compare)}` at {name}:{compare.lineno} branches on a declared "
                            "test dimension: the kernel must not special-case the shapes it is checked with",
                        )
                    )
    return findings


def _line(node: ast.AST, fallback: ast.stmt) -> int:
    return int(getattr(node, "lineno", fallback.lineno))


def _only_raises(node: ast.If | ast.IfExp | ast.While) -> bool:
    """An `if shape != ...: raise` guard states a constraint; it does not special-case anything."""
    if not isinstance(node, ast.If):
        return False
    return all(isinstance(stmt, ast.Raise) for stmt in node.body) and not node.orelse


def _names_reference(node: ast.AST) -> bool:
    if isinstance(node, ast.Name) and node.id == "reference" and isinstance(node.ctx, ast.Load):
        return True
    return isinstance(node, ast.Attribute) and node.attr == "reference"


def _broad(node: ast.expr | None) -> bool:
    if node is None:
        return True
    if isinstance(node, ast.Tuple):
        return any(_broad(e) for e in node.elts)
    return ast.unparse(node).split(".")[-1] in _BROAD


def _reraises(handler: ast.ExceptHandler) -> bool:
    return any(isinstance(n, ast.Raise) for n in ast.walk(handler))


def _mentions_shape(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "shape" for n in ast.walk(node))


def _literal_ints(node: ast.expr) -> set[int]:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        found: set[int] = set()
        for element in node.elts:
            found |= _literal_ints(element)
        return found
    return set()


def _shape_literal_compare(node: ast.Compare, dims: set[int]) -> bool:
    sides = [node.left, *node.comparators]
    if not any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
        return False
    if not any(_mentions_shape(side) for side in sides):
        return False
    literals: set[int] = set()
    for side in sides:
        if not _mentions_shape(side):
            literals |= _literal_ints(side)
    return bool(literals & dims)


def held_out_shape(km: KernelModule) -> dict[str, int]:
    """The module's smallest declared shape with every dimension doubled: a shape the kernel was not
    written against, still small enough for interpret mode."""
    smallest = min(km.shapes, key=lambda shape: math.prod(shape.values()))
    return {k: 2 * v for k, v in smallest.items()}


def outside_work_findings(
    km: KernelModule, params: dict[str, Any], seed: int, cases: list[tuple[dict[str, int], str]]
) -> tuple[list[Finding], list[str]]:
    """Check 2 on each declared case: a pallas_call exists and does most of the work."""
    import jax

    from tpu_runtime.kernels.correctness import make_case_inputs, rng_for
    from tpu_runtime.kernels.introspect import kernel_work, pallas_call_eqns, work
    from tpu_runtime.kernels.mesh import cpu_mesh, current_mesh

    findings: list[Finding] = []
    notes: list[str] = []
    fn = functools.partial(km.kernel, **params)
    for n, (shape, dtype) in enumerate(cases):
        label = ", ".join(f"{k}={v}" for k, v in shape.items()) + f" {dtype}"
        try:
            inputs = make_case_inputs(km, rng_for(seed, 1000 + n), shape, dtype)
            with current_mesh(cpu_mesh(km.mesh) if km.mesh else None):  # collectives trace with their mesh
                kernel_jaxpr = jax.make_jaxpr(fn)(*inputs)
        except Exception as exc:
            notes.append(f"({label}) could not trace the kernel: {type(exc).__name__}: {exc}".splitlines()[0])
            continue
        try:
            whole_source = "the reference's"
            whole = work(jax.make_jaxpr(km.reference)(*inputs))
        except Exception:  # a reference that loops over concrete sizes cannot be traced: use the kernel's own
            whole_source = "the kernel's own (its reference cannot be traced)"
            whole = work(kernel_jaxpr) + kernel_work(kernel_jaxpr).total
        calls = pallas_call_eqns(kernel_jaxpr)
        if not calls:
            findings.append(
                Finding(
                    "fail",
                    f"({label}) the kernel contains no pallas_call: it does its work in plain jax.numpy",
                )
            )
            continue
        outside = work(kernel_jaxpr)
        if whole > 0 and outside > OUTSIDE_WORK_LIMIT * whole and outside > 4096:
            findings.append(
                Finding(
                    "fail",
                    f"({label}) {outside / whole:.0%} of {whole_source} work runs in plain jax.numpy "
                    "outside "
                    f"the pallas_call ({outside:.3g} of {whole:.3g} ops): the kernel falls back to jnp",
                )
            )
        else:
            notes.append(
                f"({label}) {len(calls)} pallas_call(s); work outside them: {outside:.3g} ops "
                f"({(outside / whole if whole else 0):.1%} of {whole_source})"
            )
    return findings, notes


def honesty_stage(
    km: KernelModule,
    params: dict[str, Any],
    seed: int,
    reference_calls: int,
    declared_pass: bool,
    check_held_out: bool = True,
    shapes: list[dict[str, int]] | None = None,
) -> tuple[StageResult, list[str]]:
    """All four checks; `reference_calls` and `declared_pass` come from stage 1, `shapes` (default: the
    module's SHAPES) are the shapes stage 1 ran. The held-out shape always derives from the module's own."""
    from tpu_runtime.kernels.correctness import check_case, rng_for

    start = time.perf_counter()
    findings: list[Finding] = []
    details: list[str] = []
    tracebacks: list[str] = []
    try:
        findings += static_findings(km)
    except SyntaxError as exc:  # cannot happen after a successful import, but keep the stage honest
        findings.append(Finding("warn", f"could not parse {km.path.name}: {exc}"))
    cases = [(shape, dtype) for shape in (shapes or km.shapes) for dtype in km.dtypes]
    work_findings, notes = outside_work_findings(km, params, seed, cases)
    findings += work_findings
    details += notes
    calls = reference_calls
    if check_held_out:
        shape = held_out_shape(km)
        outcome = check_case(km, params, shape, km.dtypes[0], rng_for(seed, 2000))
        calls += outcome.reference_calls
        label = ", ".join(f"{k}={v}" for k, v in shape.items())
        if outcome.result.verdict == "skip":
            details.append(f"held-out shape ({label}): not checked, {outcome.result.message}")
        elif outcome.result.verdict == "pass":
            details.append(f"held-out shape ({label}) {km.dtypes[0]}: passes")
        elif outcome.result.verdict == "warn":
            details.append(f"held-out shape ({label}) {km.dtypes[0]}: passes, with a warning as in stage 1")
        elif declared_pass:
            findings.append(
                Finding(
                    "fail",
                    f"passes every declared shape but fails the held-out shape ({label}): "
                    f"{outcome.result.message}. A kernel must not special-case its test shapes",
                )
            )
            tracebacks.append(outcome.detail)
        else:
            details.append(f"held-out shape ({label}): {outcome.result.message}")
    else:
        details.append("held-out shape: not run (not asked for, or interpret mode cannot run this kernel)")
    if calls:
        findings.insert(
            0,
            Finding("fail", f"the kernel called the module's reference() {calls} time(s) while it ran"),
        )
    failures = [f for f in findings if f.verdict == "fail"]
    warnings = [f for f in findings if f.verdict == "warn"]
    headline = failures[0] if failures else (warnings[0] if warnings else None)
    if headline is None:
        verdict = "pass"
        message = (
            "no reference calls, the work happens in pallas_call, no swallowed errors, "
            "no special-cased shapes"
        )
    else:
        verdict, message = headline.verdict, headline.message
    stage = stage_result(
        "honesty",
        verdict,  # type: ignore[arg-type]
        message,
        started=start,
        details=[f.message for f in findings if f is not headline] + details,
    )
    return stage, tracebacks
