"""Score `tpu-agent ask` on the team's labelled questions: recall@5, MRR, "not covered" precision/recall.

Run by hand: `python benchmarks/kb_eval.py [--index DIR] [--build] [--lexical] [--show]`. Uses the index
under the user's data folder (or DIR); `--build` brings it up to date first (full corpus, with vectors
unless `--lexical`). Prints a Markdown table for the README and exits 1 when the aims are missed
(recall@5 >= 0.95, no covered question refused, no uncovered question answered).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

for key, value in {
    "TPU_SKIP_MDS_QUERY": "1",
    "JAX_PLATFORMS": "cpu",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}.items():
    os.environ.setdefault(key, value)

from tpu_runtime.knowledge.build import BuildRequest, run_kb_build  # noqa: E402
from tpu_runtime.knowledge.evaluate import load_cases, score  # noqa: E402
from tpu_runtime.knowledge.retrieve import KnowledgeIndex  # noqa: E402
from tpu_runtime.knowledge.store import index_dir  # noqa: E402

EVAL_SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "kb_eval.yaml"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None, help="index folder (default: the user's)")
    parser.add_argument("--cases", type=Path, default=EVAL_SET)
    parser.add_argument("--build", action="store_true", help="update the index before scoring")
    parser.add_argument("--lexical", action="store_true", help="with --build: no vectors (BM25 only)")
    parser.add_argument("--show", action="store_true", help="print every question's rank and verdict")
    args = parser.parse_args()
    folder = args.index or index_dir()
    if args.build:
        run_kb_build(BuildRequest(folder=folder, dense=not args.lexical))
    index = KnowledgeIndex.open(folder)
    if not index.chunks:
        print(f"no index at {folder}; run with --build", file=sys.stderr)
        return 2
    report = score(index, load_cases(args.cases))
    if args.show:
        for r in report.results:
            verdict = "covered" if r.predicted_covered else "NOT covered"
            mark = "ok" if r.predicted_covered == r.covered else "WRONG"
            print(f"[{mark}] rank={r.rank} {verdict:11} {r.q[:70]!r} | {r.reason[:90]} | {r.top[:1]}")
    print("| mode | cases | recall@5 | MRR | not-covered precision | not-covered recall | mean ms |")
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {report.mode} | {report.cases} ({report.uncovered_cases} not covered) | {report.recall_at_5:.3f} "
        f"| {report.mrr:.3f} | {report.not_covered_precision:.3f} | {report.not_covered_recall:.3f} "
        f"| {report.mean_ms:.1f} |"
    )
    for label, items in (
        ("missed (expected source not in top 5)", report.missed),
        ("covered but refused", report.covered_refused),
        ("not covered but answered", report.uncovered_answered),
    ):
        for q in items:
            print(f"- {label}: {q}")
    ok = report.recall_at_5 >= 0.95 and not report.covered_refused and not report.uncovered_answered
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
