"""Score `tpu-agent ask` on the team's labelled questions, each half of the set on its own row.

Run by hand: `python benchmarks/kb_eval.py [--index DIR] [--build] [--lexical] [--show dev|held-back|all]
[--half dev] [--fold A|B]`.
Uses the index under the user's data folder (or DIR); `--build` brings it up to date first (full corpus,
with vectors unless `--lexical`). "answered" is the share of covered questions answered with a citation
whose quote contains the answer's key terms (an answer quotes close runner-up lines too: "first quote
alone" counts the first citation only, "quotes per answer" is the mean count), "refused" the share of
uncovered questions refused; the last column counts the covered questions missed, refused by the gate
or answered with quotes that lack the answer, and the next where their answer was: in a passage retrieved
for the question (lost by the gate or the quote choice), elsewhere in the index, or in no passage. The dev
half is what retrieval and the gate are tuned on; the held-back half is only reported. `--show` lists the
failures of one half only (tuning looks at dev). Prints a Markdown table for the README and exits 1 when
the held-back half misses the aims (answered >= 0.90, refused >= 0.95). `--half dev` scores and prints
the dev half alone, so tuning runs never see the held-back figures; `--fold A` or `--fold B` keeps one
of the two folds of each half (`evaluate.fold`): failures are read on fold A, and a change is kept only
when fold B, unread, does not drop.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.knowledge.build import BuildRequest, run_kb_build  # noqa: E402
from tpu_runtime.knowledge.evaluate import EvalReport, load_cases, score  # noqa: E402
from tpu_runtime.knowledge.retrieve import KnowledgeIndex  # noqa: E402
from tpu_runtime.knowledge.store import index_dir  # noqa: E402

EVAL_SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "kb_eval.yaml"


TABLE_HEADER = (
    "| half | mode | covered | not covered | answered with the answer quoted | uncovered refused "
    "| recall@5 | MRR | mean ms | first quote alone | quotes per answer "
    "| covered: refused / wrong quote | missed answer: retrieved / indexed / absent |\n"
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
)


def report_row(label: str, report: EvalReport) -> str:
    """One row of `TABLE_HEADER`, for the README (also printed by benchmarks/kb_gate_ablation.py)."""
    return (
        f"| {label} | {report.mode} | {report.covered_cases} | {report.uncovered_cases} "
        f"| {report.answered:.3f} | {report.refused:.3f} | {report.recall_at_5:.3f} | {report.mrr:.3f} "
        f"| {report.mean_ms:.1f} "
        f"| {report.answered_first:.3f} | {report.citations_per_answer:.2f} "
        f"| {len(report.covered_refused)} / {len(report.wrong_quote)} "
        f"| {report.reach['retrieved']} / {report.reach['indexed']} / {report.reach['absent']} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None, help="index folder (default: the user's)")
    parser.add_argument("--cases", type=Path, default=EVAL_SET)
    parser.add_argument("--build", action="store_true", help="update the index before scoring")
    parser.add_argument("--lexical", action="store_true", help="with --build: no vectors (BM25 only)")
    parser.add_argument(
        "--show", choices=["dev", "held-back", "all"], default=None, help="list one half's failures"
    )
    parser.add_argument(
        "--half", choices=["dev", "held-back"], default=None, help="score this half only (default: both)"
    )
    parser.add_argument(
        "--fold", choices=["A", "B"], default=None, help="score this fold of each half only (default: both)"
    )
    args = parser.parse_args()
    folder = args.index or index_dir()
    if args.build:
        run_kb_build(BuildRequest(folder=folder, dense=not args.lexical))
    index = KnowledgeIndex.open(folder)
    if not index.chunks:
        print(f"no index at {folder}; run with --build", file=sys.stderr)
        return 2
    cases = load_cases(args.cases)
    names = (args.half,) if args.half else ("dev", "held-back")
    halves = {name: [c for c in cases if c.half == name and args.fold in (None, c.fold)] for name in names}
    reports: dict[str, EvalReport] = {name: score(index, items) for name, items in halves.items()}
    if args.show:
        for name, report in reports.items():
            if args.show not in (name, "all"):
                continue
            for r in report.results:
                ok = r.answered if r.covered else not r.predicted_covered
                if not ok:
                    verdict = "covered" if r.predicted_covered else "NOT covered"
                    print(f"[{name}] {r.id} rank={r.rank} {verdict}: {r.q[:70]!r} | {r.reason[:100]}")
                    if r.quote:
                        print(f"    quote: {r.quote[:150]!r}")
    print(TABLE_HEADER)
    for name, report in reports.items():
        print(report_row(f"{name} {args.fold}" if args.fold else name, report))
    held = reports.get("held-back")
    if held is None:
        return 0
    return 0 if held.answered >= 0.90 and held.refused >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
