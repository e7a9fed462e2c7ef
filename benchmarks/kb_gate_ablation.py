"""What each check of the `tpu-agent ask` gate earns on the dev folds: the answers and refusals it moves.

Run by hand: `python benchmarks/kb_gate_ablation.py [--index DIR] [--cache FILE] [--check NAME ...]
[--every]`.
Each dev question of the three labelled sets (`tests/data/kb_eval.yaml`, `kb_paraphrase_eval.yaml`,
`kb_refusal_eval.yaml`) is searched once; `answer.compose` then judges the cached passages with every
check on, printing the six fold lines as `benchmarks/kb_eval.py --half dev --fold A|B` does (so the tool is
seen to reproduce them), and again with each check turned off in turn (patched to find no fault). One
Markdown row per check gives the change in questions answered and refused on each fold line. Why: gate
checks were each kept on a question or two of fold A, and this shows which of them cost fold B more
answers than they gain it refusals. Only the dev half is scored: the held-back half is refused.

A check is turned off where the gate calls it (`answer_gate`'s and `answer`'s own names); the ranking of
lines in `quote_choice` keeps its own references, so quote choice is unchanged. The checks inside
`answer_gate.span_faults` have no functions of their own and are turned off by dropping their reasons. A
check is re-judged only on the questions where it fired with every check on: elsewhere, turning it off
changes nothing (`--every` re-judges them all, to confirm it).
"""

from __future__ import annotations

import argparse
import importlib
import pickle
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from bench_env import use_quiet_env

use_quiet_env()

from kb_eval import TABLE_HEADER, report_row  # noqa: E402

from tpu_runtime.knowledge import answer_gate, evaluate  # noqa: E402
from tpu_runtime.knowledge.answer import compose  # noqa: E402
from tpu_runtime.knowledge.evaluate import CaseResult, EvalCase, load_cases, score, search_depth  # noqa: E402
from tpu_runtime.knowledge.models import Answer  # noqa: E402
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult  # noqa: E402
from tpu_runtime.knowledge.store import index_dir  # noqa: E402

# the module, not the `answer` function the package exports under the same name
answer = importlib.import_module("tpu_runtime.knowledge.answer")
DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
SETS = {"main": "kb_eval.yaml", "paraphrase": "kb_paraphrase_eval.yaml", "refusal": "kb_refusal_eval.yaml"}
LINES = [(name, fold) for name in SETS for fold in ("A", "B")]

# the checks of the whole retrieval that `answer.read_gate` names, by their functions in `answer`
NAMED = ("cosine", "support", "unknown", "asked", "action", "elsewhere", "stack", "capability")
# the checks `answer_gate.quote_faults` and `gate_faults` call as functions, and what each returns for
# "no fault"; a few are inline conditions, turned off through the reading they test
QUOTE_FUNCTIONS: dict[str, Any] = {
    "_missing_specific": [],
    "product_fault": None,
    "swap_fault": None,
    "format_fault": None,
    "misplaced_terms": [],
    "rare_names": [],
    "asks_generation": False,
    "letter_names": set(),
    "bound_fault": None,
    "flag_passage_fault": None,
    "lower_bound_fault": None,
    "amount_fault": None,
    "subject_fault": None,
    "per_fault": None,
    "tool_fault": None,
    "how_much_fault": None,
    "jax_torch_fault": None,
    "single_scope_fault": None,
}
# the conditions inside `answer_gate.span_faults`, by the reasons they give (first match wins)
SPAN_REASONS: list[tuple[str, str]] = [
    ("span:number", r"asks for a number and the quoted line gives none$"),
    ("span:number_near", r"asks for a number and the quoted line gives none beside"),
    ("span:weak_count", r"only 'one' counts something else"),
    ("span:time", r"asks how long and the quoted line gives no time$"),
    ("span:time_near", r"asks how long and the quoted line gives no time beside"),
    ("span:default", r"does not say what is used by default"),
    ("span:default_near", r"asks for a default and the quoted line gives one only for"),
    ("span:command", r"asks what to run"),
    ("span:when", r"asks when or in which release"),
    ("span:date", r"asks for a date"),
    ("span:release_owner", r"asks for a release of"),
    ("span:model_family", r" models and the quoted line is about "),
    ("span:platform", r"^the question asks about .* and the quoted line is about "),
    ("span:superlative", r"asks which is \S+ and the quoted line compares none"),
    ("span:name_kind", r"^the question asks which .* and the quoted line names none"),
    ("span:action", r"^the quoted line neither says how to"),
    ("span:focus_or_attribute", r"^the quoted line does not say anything about"),
]


def span_reason(reason: str) -> str:
    """The span check that gave a reason of `answer_gate.span_faults`."""
    for name, pattern in SPAN_REASONS:
        if re.search(pattern, reason):
            return name
    raise ValueError(f"unknown span_faults reason: {reason!r}")


def check_names() -> list[str]:
    """Every check, in the order the rows are printed."""
    first = [f"first:{check.__name__}" for check in answer_gate.FIRST_QUOTE_CHECKS]
    return [
        *(f"named:{n}" for n in NAMED),
        *first,
        *(f"quote:{n}" for n in QUOTE_FUNCTIONS),
        *(n for n, _ in SPAN_REASONS),
    ]


@contextmanager
def patched(changes: list[tuple[ModuleType, str, Any]]) -> Iterator[None]:
    """Set module attributes for the duration, restoring them after."""
    saved = [(module, name, getattr(module, name)) for module, name, _ in changes]
    try:
        for module, name, value in changes:
            setattr(module, name, value)
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def _fired_when(name: str, fn: Callable[..., Any], empty: Any, fired: set[str]) -> Callable[..., Any]:
    def spy(*args: Any, **kwargs: Any) -> Any:
        value = fn(*args, **kwargs)
        if value != empty:
            fired.add(name)
        return value

    return spy


def spies(fired: set[str]) -> list[tuple[ModuleType, str, Any]]:
    """Wrappers that record in `fired` every check that finds a fault (or, for an inline condition, whose
    reading differs from its "no fault" value), leaving each result as it was."""
    changes: list[tuple[ModuleType, str, Any]] = []
    for n in NAMED:
        fn = getattr(answer, f"{n}_fault")
        changes.append((answer, f"{n}_fault", _fired_when(f"named:{n}", fn, None, fired)))
    first = tuple(
        _fired_when(f"first:{check.__name__}", check, None, fired) for check in answer_gate.FIRST_QUOTE_CHECKS
    )
    changes.append((answer_gate, "FIRST_QUOTE_CHECKS", first))
    for n, empty in QUOTE_FUNCTIONS.items():
        changes.append((answer_gate, n, _fired_when(f"quote:{n}", getattr(answer_gate, n), empty, fired)))
    span_faults = answer_gate.span_faults

    def span_spy(*args: Any, **kwargs: Any) -> list[str]:
        reasons = span_faults(*args, **kwargs)
        fired.update(span_reason(r) for r in reasons)
        return reasons

    changes.append((answer_gate, "span_faults", span_spy))
    return changes


def turned_off(checks: list[str]) -> list[tuple[ModuleType, str, Any]]:
    """The patches that turn these checks off together."""
    changes: list[tuple[ModuleType, str, Any]] = []
    for check in checks:
        kind, name = check.split(":", 1)
        if kind == "named":
            changes.append((answer, f"{name}_fault", lambda *a, **k: None))
        elif kind == "quote":
            changes.append((answer_gate, name, lambda *a, _e=QUOTE_FUNCTIONS[name], **k: type(_e)()))
    first = {check.split(":", 1)[1] for check in checks if check.startswith("first:")}
    if first:
        kept = tuple(
            c if c.__name__ not in first else (lambda *a, **k: None) for c in answer_gate.FIRST_QUOTE_CHECKS
        )
        changes.append((answer_gate, "FIRST_QUOTE_CHECKS", kept))
    span = {check for check in checks if check.startswith("span:")}
    if span:
        span_faults = answer_gate.span_faults

        def without(*args: Any, **kwargs: Any) -> list[str]:
            return [r for r in span_faults(*args, **kwargs) if span_reason(r) not in span]

        changes.append((answer_gate, "span_faults", without))
    return changes


def groups() -> dict[str, list[str]]:
    """Rows turning several checks off at once: a question two checks refuse moves in neither one's row."""
    names = check_names()
    kinds = {"named": "the whole-retrieval checks", "first": "the first-quote checks"}
    kinds |= {"quote": "the quote checks called as functions", "span": "the span_faults conditions"}
    rows = {f"all {label}": [n for n in names if n.startswith(f"{kind}:")] for kind, label in kinds.items()}
    rows["all quote-time checks (first, quote, span)"] = [n for n in names if not n.startswith("named:")]
    return rows


@dataclass(eq=False)
class Item:
    """One dev question, its cached search, its result with every check on and the checks that fired."""

    line: tuple[str, str]
    case: EvalCase
    found: SearchResult
    result: CaseResult
    fired: frozenset[str]


def judged(
    index: KnowledgeIndex, line: tuple[str, str], cases: list[EvalCase], searches: dict[str, SearchResult]
) -> tuple[str, list[Item]]:
    """The fold line as `kb_eval.py` prints it, scored on the cached searches with every check on, and
    each question with the checks that fired for it (recorded around each `compose` the scoring makes)."""
    fired: set[str] = set()
    by_question: dict[str, frozenset[str]] = {}

    def recording(question: str, *args: Any, **kwargs: Any) -> Answer:
        fired.clear()
        reply = compose(question, *args, **kwargs)
        by_question[question] = frozenset(fired)
        return reply

    with patched([*spies(fired), (evaluate, "compose", recording)]):
        report = score(index, cases, searches)
    by_id = {c.id: c for c in cases}
    items = [Item(line, by_id[r.id], searches[r.id], r, by_question[by_id[r.id].q]) for r in report.results]
    return report_row(f"dev {line[1]} {line[0]}", report), items


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None, help="index folder (default: the user's)")
    parser.add_argument(
        "--cache", type=Path, default=None, help="pickle of the dev searches, reused when present"
    )
    parser.add_argument(
        "--every", action="store_true", help="re-judge every question, not only where a check fired (slow)"
    )
    parser.add_argument("--check", action="append", default=None, help="only these checks (default: all)")
    parser.add_argument(
        "--half", choices=["dev"], default="dev", help="the dev half only: held-back is never scored"
    )
    args = parser.parse_args()
    index = KnowledgeIndex.open(args.index or index_dir())
    if not index.chunks:
        print("no index; build it with benchmarks/kb_eval.py --build", file=sys.stderr)
        return 2
    cases = {
        line: [c for c in load_cases(DATA / SETS[line[0]]) if c.half == "dev" and c.fold == line[1]]
        for line in LINES
    }
    if any(c.half != "dev" for items in cases.values() for c in items):
        raise SystemExit("refusing to score a held-back question")
    cached: dict[str, SearchResult] = {}
    if args.cache and args.cache.exists():
        cached = pickle.loads(args.cache.read_bytes())
    print(TABLE_HEADER)
    items: list[Item] = []
    for line, line_cases in cases.items():
        searches = {}
        for case in line_cases:
            key = f"{line[0]}/{case.id}"
            if key not in cached:
                cached[key] = index.search(case.q, search_depth())
            searches[case.id] = cached[key]
        row, judged_items = judged(index, line, line_cases, searches)
        items += judged_items
        print(row, flush=True)
    if args.cache and not args.cache.exists():
        args.cache.write_bytes(pickle.dumps(cached))
    print()
    head = " | ".join(f"{name} {fold} ans / ref" for name, fold in LINES)
    print(f"| check off | fired | {head} |")
    print("|---|---:|" + "---:|" * len(LINES))
    rows = {check: [check] for check in args.check or check_names()}
    if not args.check:
        rows |= groups()
    for label, checks in rows.items():
        hit = items if args.every else [i for i in items if i.fired & set(checks)]
        moved = {line: [0, 0] for line in LINES}
        with patched(turned_off(checks)):
            for item in hit:
                reply = compose(item.case.q, index, item.found)
                before = item.result
                moved[item.line][0] += item.case.answered_by(reply) - before.answered
                moved[item.line][1] += item.case.refused_by(reply) - (
                    not before.covered and not before.predicted_covered
                )
        cells = " | ".join(f"{a:+d} / {r:+d}" for a, r in moved.values())
        print(f"| {label} | {len(hit)} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
