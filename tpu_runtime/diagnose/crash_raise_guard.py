"""A remedy read from the check that raised the message: what the condition of the `if` around it reads.

A library's check raises when a condition on its settings or arguments holds (`if ici_expert_parallelism > 1
and dcn_expert_parallelism > 1: raise ValueError(...)`). The message often names neither the setting nor the
value, but the condition does, and it does for logs nobody wrote a rule for. benchmarks/build_raise_sites.py
reads each condition once (`guard_facts`: the settings it names, `guard_names`, and the `name=value` settings
that get past it, `guard_ways_out`) and keeps only those (`RaiseSite.tests`, `RaiseSite.passes`), not the
condition's code. When a log's error line matches such a mined site (crash_locations), and no sub-rule,
advice, fallback or stated condition chose the fix, the fix names what the check tests (sub-rule
`<category>/raise_guard`), with the site's source first among the citations when it was mined from a
repository snapshot, so the reader can open the condition there. It comes after the similar known errors and
the facts of the sheets, which say how the failure was fixed, not only what the check tested. Where the
condition compares a setting with a constant, or tests a flag, the fix also says which value gets past the
check (`not self.x` -> `x=True`, `steps > 1` -> `steps=1`, `not (shards >= 1)` -> `shards=1`), in the
`name=value` form overrides take; such a condition is this log's own evidence and comes before the similar
known errors and the sheets' facts. A start-up log whose fix is the library catch-all
(`runtime_init_failure/from_facts_library_check`, advice for a probe of the chips) gets the tested names too,
with or without a passing value. A condition testing a parallelism degree under the check's own name
(`tp_size`, `dp`) also says where the user sets that degree (the engine's launch flag, MaxText's mesh
setting: degree_hint), since the name it tests is no flag.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
from collections.abc import Sequence

from tpu_runtime.diagnose.crash_locations import Location, find_location
from tpu_runtime.diagnose.crash_suggestion import RERUN
from tpu_runtime.diagnose.guard_aliases import alias_notes, load_aliases, renamed_ways, site_key
from tpu_runtime.diagnose.report import Citation, CrashDiagnosis

__all__ = [
    "SUB_RULE",
    "degree_hint",
    "guard_facts",
    "guard_fix",
    "guard_names",
    "guard_remedy",
    "guard_ways_out",
]

SUB_RULE = "raise_guard"
MAX_NAMES = 6
# what a condition calls or compares with is no setting: Python's own names and the receiver of a method
_NOT_SETTINGS = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"self", "cls"}


def guard_names(guard: str) -> tuple[str, ...]:
    """The settings and arguments a check's condition tests, in the order it names them: names, attributes
    (`config.use_ocdbt` -> `use_ocdbt`) and string keys (`raw_keys['ici_expert_parallelism']`), not the
    functions it calls, Python's own names nor private members (`self._options`: the check's own state, no
    setting a user changes); () when the condition does not parse."""
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
        if name.isidentifier() and len(name) >= 3 and name not in _NOT_SETTINGS and not name.startswith("_"):
            found.setdefault(name, None)
    return tuple(found)[:MAX_NAMES]


MAX_WAYS = 3


def _setting(node: ast.expr) -> str | None:
    """The setting an operand of a condition reads (`x`, `self.x`, `cfg['x']`), or None."""
    name = ""
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name | ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        name = node.slice.value if isinstance(node.slice.value, str) else ""
    return name if name.isidentifier() and len(name) >= 3 and name not in _NOT_SETTINGS else None


def _literal(node: ast.expr) -> object:
    """A constant (or a tuple, list or set of them) a condition compares with; `...` for anything else."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ...


def _shown(value: object) -> str:
    """A value as one writes it in a `name=value` override (strings unquoted)."""
    return value if isinstance(value, str) else repr(value)


# a comparison read from its other side (`1 < n` as `n > 1`)
_FLIP = {
    ast.Lt: ast.Gt,
    ast.LtE: ast.GtE,
    ast.Gt: ast.Lt,
    ast.GtE: ast.LtE,
    ast.Eq: ast.Eq,
    ast.NotEq: ast.NotEq,
}


def _operands(node: ast.Compare) -> tuple[str, object, ast.cmpop, ast.expr] | None:
    """A one-operator comparison of a setting with a constant, read with the setting on the left (`1 < n`
    as `n > 1`): the setting, the constant, the operator and the constant's expression; None otherwise."""
    if len(node.ops) != 1:
        return None
    op, left, right = node.ops[0], node.left, node.comparators[0]
    name, value = _setting(left), _literal(right)
    if name is None and type(op) in _FLIP:
        name, value, op = _setting(right), _literal(left), _FLIP[type(op)]()
    if name is None or value is ...:
        return None
    return name, value, op, right


def _compare_ways(node: ast.Compare) -> list[str]:
    """The setting's value that makes `setting <op> constant` false: a bound for integers, the other boolean,
    None or set, the value a `!=` wants; a membership test named as such."""
    read = _operands(node)
    if read is None:
        return []
    name, value, op, right = read
    if isinstance(op, ast.Is | ast.IsNot) and value is None:
        return [f"{name} set"] if isinstance(op, ast.Is) else [f"{name}=None"]
    if isinstance(value, bool) and isinstance(op, ast.Eq | ast.NotEq):
        return [f"{name}={not value if isinstance(op, ast.Eq) else value}"]
    if isinstance(value, int) and not isinstance(value, bool):
        bound = {ast.Gt: value, ast.GtE: value - 1, ast.Lt: value, ast.LtE: value + 1, ast.NotEq: value}
        if type(op) in bound:
            return [f"{name}={bound[type(op)]}"]
    if isinstance(op, ast.NotEq):
        return [f"{name}={_shown(value)}"]
    if isinstance(op, ast.In) and isinstance(value, tuple | list | set | frozenset):
        return [f"{name} outside {ast.unparse(right)}"]
    if isinstance(op, ast.NotIn) and isinstance(value, tuple | list) and value:
        return [f"{name} one of {ast.unparse(right)}"]
    return []


def _held_ways(node: ast.Compare) -> list[str]:
    """The setting's value that makes `setting <op> constant` true (a check raising unless it holds): the
    least or most integer it allows, the constant an `==` wants, None or set; a membership test named."""
    read = _operands(node)
    if read is None:
        return []
    name, value, op, right = read
    if isinstance(op, ast.Is | ast.IsNot) and value is None:
        return [f"{name}=None"] if isinstance(op, ast.Is) else [f"{name} set"]
    if isinstance(value, int) and not isinstance(value, bool):
        bound = {ast.Gt: value + 1, ast.GtE: value, ast.Lt: value - 1, ast.LtE: value, ast.Eq: value}
        if type(op) in bound:
            return [f"{name}={bound[type(op)]}"]
    if isinstance(op, ast.Eq):
        return [f"{name}={_shown(value)}"]
    if isinstance(op, ast.In) and isinstance(value, tuple | list) and value:
        return [f"{name} one of {ast.unparse(right)}"]
    if isinstance(op, ast.NotIn) and isinstance(value, tuple | list | set | frozenset):
        return [f"{name} outside {ast.unparse(right)}"]
    return []


def _ways(node: ast.expr) -> list[str]:
    """Settings that make a condition false: any one for an `and`, all of them together for an `or`."""
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
        return [way for value in node.values for way in _ways(value)]
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        parts = [_ways(value) for value in node.values]
        return [" with ".join(p[0] for p in parts)] if all(parts) else []
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        if isinstance(node.operand, ast.Compare):  # the test an assertion or an `else:` requires
            return _held_ways(node.operand)
        name = _setting(node.operand)
        return [f"{name}=True"] if name else []
    if isinstance(node, ast.Compare):
        return _compare_ways(node)
    name = _setting(node)
    return [f"{name}=False"] if name else []


def guard_ways_out(guard: str) -> tuple[str, ...]:
    """Settings a check's condition names, with the value that makes it false (`not self.x` -> `x=True`,
    `n > 1` -> `n=1`, `a and b > 1` -> `a=False` or `b=1`): the way past the check; () when none is read."""
    try:
        tree = ast.parse(guard, mode="eval")
    except SyntaxError:
        return ()
    return tuple(dict.fromkeys(_ways(tree.body)))[:MAX_WAYS]


def guard_facts(guard: str) -> dict[str, list[str]]:
    """What a mined site keeps of its condition (build time): the settings it names and the values that get
    past it, as `tests` and `passes`; {} when it names nothing a user could change."""
    names = guard_names(guard)
    return {"tests": list(names), "passes": list(guard_ways_out(guard))} if names else {}


# A check's parallelism degree under a local or argument name (`tp_size`, `dp`, `attn_tp_size`) or its config
# name (`tensor_parallel_size`), and where a user sets it: vLLM's engine arguments, which tpu-inference takes
# (https://docs.vllm.ai/en/v0.8.5/serving/engine_args.html), SGLang's server arguments
# (https://docs.sglang.io/advanced_features/server_arguments.html) and MaxText's mesh settings
# (https://github.com/AI-Hypercomputer/maxtext/blob/main/src/maxtext/configs/base.yml). The check tests the
# degree it was handed; the user changes the launch's.
_DEGREE_NAME = re.compile(
    r"(?:attn_|moe_)?(?P<short>tp|pp|dp|ep)(?:_size|_degree|_world_size)?|"
    r"(?P<long>tensor|pipeline|data|expert)_parallel(?:_size|_degree|ism)?"
)
_SHORT = {"tp": "tensor", "pp": "pipeline", "dp": "data", "ep": "expert"}
_DEGREE_SETTINGS = {
    "tensor": (
        "`--tensor-parallel-size` for vLLM or tpu-inference (`tensor_parallel_size` in Python), "
        "`--tp-size` for SGLang, `ici_tensor_parallelism` in MaxText"
    ),
    "pipeline": (
        "`--pipeline-parallel-size` for vLLM or tpu-inference, `--pp-size` for SGLang, "
        "`ici_pipeline_parallelism` in MaxText"
    ),
    "data": (
        "`--data-parallel-size` for vLLM or tpu-inference, `--dp-size` for SGLang, "
        "`ici_data_parallelism` in MaxText"
    ),
    "expert": (
        "`--enable-expert-parallel` for vLLM or tpu-inference (its degree follows the tensor and data "
        "parallel sizes), `--ep-size` for SGLang, `ici_expert_parallelism` in MaxText"
    ),
}


def degree_hint(names: Sequence[str]) -> str:
    """Where a condition tests a parallelism degree under the check's own name for it (`tp_size %
    num_kv_heads`), the launch setting that degree comes from, per engine: the check names its argument, the
    user sets the engine's flag or the trainer's mesh setting; "" when it tests none."""
    said: dict[str, str] = {}
    for name in names:
        m = _DEGREE_NAME.fullmatch(name)
        if m is not None:
            said.setdefault(_SHORT.get(m["short"] or "", m["long"] or ""), name)
    if not said:
        return ""
    parts = [
        f"`{name}` is the {kind}-parallel degree the job was launched with: {_DEGREE_SETTINGS[kind]}"
        for kind, name in said.items()
    ]
    return f" ({'; '.join(parts)})"


def guard_fix(lines: Sequence[str]) -> tuple[str, Location, tuple[str, ...]] | None:
    """The fix that names what the raising check tested, the raise site and the values that get past it
    (`RaiseSite.passes`); None when no mined site whose condition names something matches the log's error
    lines."""
    found = find_location(lines, any_module=True)
    if found is None or not found.site.tests:
        return None
    site = found.site
    names = site.tests
    tested = ", ".join(f"`{n}`" for n in names)
    assigned = load_aliases().get(site_key(site.repo, site.path, site.line), {}) if site.repo else {}
    aliased, renamed = alias_notes({n: assigned[n] for n in names if n in assigned})
    ways = renamed_ways(site.passes, renamed)
    passes = f" (it passes with {', or with '.join(ways)})" if ways else ""
    fix = (
        f"The check that raised this message ({site.module}, {site.function}) raises it on a condition over "
        f"{tested} (the setting, argument or value it names{aliased}): change what it tests so the check "
        f"passes{passes}{degree_hint(names)}, {RERUN}"
    )
    return fix, found, ways


def guard_remedy(crash: CrashDiagnosis, lines: Sequence[str]) -> CrashDiagnosis:
    """A crash whose fix is only its category's paragraph, with what the raising check tests leading the fix
    (the paragraph after it) and `facts.raise_guard` holding the site, the names its condition tests and the
    values that get past it (`passes`); the crash unchanged when no mined site with such a condition
    matches."""
    found = guard_fix(lines)
    if found is None:
        return crash
    fix, location, ways = found
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
    facts = {
        **crash.facts,
        "raise_guard": {"site": location.label, "tests": list(location.site.tests), "passes": list(ways)},
    }
    return crash.model_copy(
        update={
            "fix": f"{fix} The {crash.category} category's general advice: {crash.fix}",
            "citations": citations,
            "evidence": evidence,
            "facts": facts,
        }
    )
