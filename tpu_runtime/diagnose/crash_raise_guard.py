"""A remedy read from the check that raised the message: the condition of the `if` around its raise.

A library's check raises when a condition on its settings or arguments holds (`if ici_expert_parallelism > 1
and dcn_expert_parallelism > 1: raise ValueError(...)`). The message often names neither the setting nor the
value, but the condition does, and it does for logs nobody wrote a rule for. When a log's error line matches a
mined raise site (crash_locations) whose test was kept (`RaiseSite.guard`, written by
benchmarks/build_raise_sites.py), and no sub-rule, advice, fallback or stated condition chose the fix, the fix
quotes the condition and names what it tests (sub-rule `<category>/raise_guard`), with the site's source
first among the citations when it was mined from a repository snapshot. It comes after the similar known
errors and the facts of the sheets, which say how the failure was fixed, not only what the check tested.
"""

from __future__ import annotations

import ast
import builtins
import keyword
from collections.abc import Sequence

from tpu_runtime.diagnose.crash_locations import Location, find_location
from tpu_runtime.diagnose.report import Citation, CrashDiagnosis

__all__ = ["SUB_RULE", "guard_fix", "guard_names", "guard_remedy"]

SUB_RULE = "raise_guard"
MAX_NAMES = 6
# what a condition calls or compares with is no setting: Python's own names and the receiver of a method
_NOT_SETTINGS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"self", "cls"}


def guard_names(guard: str) -> tuple[str, ...]:
    """The settings and arguments a check's condition tests, in the order it names them: names, attributes
    (`config.use_ocdbt` -> `use_ocdbt`) and string keys (`raw_keys['ici_expert_parallelism']`), not the
    functions it calls nor Python's own names; () when the condition does not parse."""
    try:
        tree = ast.parse(guard, mode="eval")
    except SyntaxError:
        return ()
    # a function a condition calls names what it does; the object an attribute or a key is read from
    # (`self`, `config`, `raw_keys`) holds the setting, the attribute or key names it
    skipped = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    skipped |= {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute | ast.Subscript)}
    found: dict[str, None] = {}
    nodes = sorted(
        (n for n in ast.walk(tree) if isinstance(n, ast.expr)), key=lambda n: (n.lineno, n.col_offset)
    )
    for node in nodes:
        if id(node) in skipped:
            continue
        name = ""
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            name = node.slice.value if isinstance(node.slice.value, str) else ""
        if name.isidentifier() and len(name) >= 3 and name not in _NOT_SETTINGS:
            found.setdefault(name, None)
    return tuple(found)[:MAX_NAMES]


def guard_fix(lines: Sequence[str]) -> tuple[str, Location] | None:
    """The fix that names what the raising check tested, and the raise site; None when no mined site with a
    kept condition matches the log's error lines, or the condition names nothing to change."""
    found = find_location(lines)
    if found is None or not found.site.guard:
        return None
    names = guard_names(found.site.guard)
    if not names:
        return None
    site = found.site
    tested = ", ".join(f"`{n}`" for n in names)
    fix = (
        f"The check that raised this message ({site.module}, {site.function}) raises it when "
        f"`{site.guard}`: change what that condition tests ({tested}: the setting, argument or value it "
        "names) so it no longer holds, then rerun; if the same error comes back, the facts below and the "
        "category's general advice apply."
    )
    return fix, found


def guard_remedy(crash: CrashDiagnosis, lines: Sequence[str]) -> CrashDiagnosis:
    """A crash whose fix is only its category's paragraph, with the raising check's condition leading the fix
    (the paragraph after it); the crash unchanged when no mined site with a condition matches."""
    found = guard_fix(lines)
    if found is None:
        return crash
    fix, location = found
    citations = list(crash.citations)
    if location.site.source_url:
        citations.insert(0, Citation(label=location.label, url=location.site.source_url))
    evidence = crash.evidence.model_copy(
        update={
            "fix_rule": f"{crash.category}/{SUB_RULE}",
            "fix_reason": (
                f"no sub-rule applied; line {location.line + 1} was raised by a check whose condition names "
                "what to change"
            ),
        }
    )
    facts = {**crash.facts, "raise_guard": {"site": location.label, "condition": location.site.guard}}
    return crash.model_copy(
        update={
            "fix": f"{fix} The {crash.category} category's general advice: {crash.fix}",
            "citations": citations,
            "evidence": evidence,
            "facts": facts,
        }
    )
