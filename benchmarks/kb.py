"""Knowledge base: full-corpus build time and memory, cold and warm query latency.

Run by hand: `python benchmarks/kb.py [--index DIR] [--skip-build] [--queries N]`.

- build: a fresh index of the whole shipped corpus (fact sheets + installed packages) in a temporary
  folder (or DIR), in a child process so its peak RSS is its own; lexical and embedding times reported.
- cold query: a new Python process that imports the engine, opens the index and answers one question
  (what `tpu-agent ask` costs end to end, minus the CLI's own start-up).
- warm query: `answer()` repeated in one process on the evaluation questions (what an MCP server pays).
Prints a Markdown table for the README.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_env import QUIET_ENV, use_quiet_env

use_quiet_env()

REPO = Path(__file__).resolve().parents[1]

BUILD_CHILD = """
import json, resource, sys, time
from pathlib import Path
from tpu_runtime.knowledge.build import BuildRequest, run_kb_build
start = time.perf_counter()
report = run_kb_build(BuildRequest(folder=Path(sys.argv[1])))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": time.perf_counter() - start, "chunks": report.chunks,
                  "cpu_s": usage.ru_utime + usage.ru_stime,
                  "dense_ready": report.dense_ready, "timings": report.timings_s,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# The anchor: the same fixed workload (every 10th passage of the corpus, about 200) embedded by the old
# path (sentence-transformers, float32 on CPUs without bf16) and by the build's ONNX Runtime path, in
# this run, so the build time can be read against it on a shared, loaded machine.
ANCHOR_CHILD = """
import json, os, sys, tempfile, time
from pathlib import Path
from tpu_runtime.knowledge.build import BuildRequest, discover_all
from tpu_runtime.knowledge.embedder import BulkEncoder, load_embedder
from tpu_runtime.knowledge.onnx_encoder import OnnxEncoder
from tpu_runtime.knowledge.store import Manifest
specs, _ = discover_all(BuildRequest(), Manifest())
texts = [c.index_text() for s in specs for c in s.load().chunks][::10]
emb = load_embedder()
out = {"passages": len(texts)}
t = time.perf_counter(); st = BulkEncoder(emb.files); out["st_load_s"] = time.perf_counter() - t
st.encode(texts[:8])
t = time.perf_counter(); ref = st.encode(texts); out["st_s"] = time.perf_counter() - t
out["st_dtype"] = st.dtype
t = time.perf_counter(); enc = OnnxEncoder(emb.weights, emb.tokenizer)
out["onnx_open_s"] = time.perf_counter() - t
enc.encode(texts[:8])
t = time.perf_counter(); vec = enc.encode(texts); out["onnx_s"] = time.perf_counter() - t
cos = (vec * ref).sum(1)
out["cos_mean"], out["cos_min"] = float(cos.mean()), float(cos.min())
print(json.dumps(out))
"""

COLD_CHILD = """
import json, resource, sys, time
start = time.perf_counter()
from tpu_runtime.knowledge.api import answer
imported = time.perf_counter()
reply = answer(sys.argv[2], 5, folder=__import__("pathlib").Path(sys.argv[1]))
done = time.perf_counter()
print(json.dumps({"import_s": imported - start, "answer_s": done - imported, "mode": reply.mode,
                  "covered": reply.covered,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **QUIET_ENV},
    )
    if done.returncode != 0:
        raise SystemExit(f"child failed: {done.stderr.strip().splitlines()[-1:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, default=None, help="index folder (default: a temporary one)")
    parser.add_argument("--skip-build", action="store_true", help="time queries on an existing --index")
    parser.add_argument("--queries", type=int, default=3, help="passes over the evaluation questions (warm)")
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    folder = args.index or Path(tmp.name) / "kb"
    rows: list[tuple[str, str]] = []
    if not args.skip_build:
        rows.append(("load average at start (1/5/15 min)", " / ".join(f"{x:.2f}" for x in os.getloadavg())))
        anchor = _child(ANCHOR_CHILD)
        st_s, onnx_s = float(anchor["st_s"]), float(anchor["onnx_s"])  # type: ignore[arg-type]
        rows += [
            (
                f"anchor: {anchor['passages']} passages, sentence-transformers {anchor['st_dtype']}",
                f"{st_s:.1f} s (+ {float(anchor['st_load_s']):.1f} s loading)",  # type: ignore[arg-type]
            ),
            (
                f"same {anchor['passages']} passages, ONNX Runtime (build path)",
                f"{onnx_s:.1f} s = {onnx_s / st_s:.2f}x the anchor (+ "
                f"{float(anchor['onnx_open_s']):.1f} s building the graph + session); cosine to it mean "  # type: ignore[arg-type]
                f"{float(anchor['cos_mean']):.6f}, min {float(anchor['cos_min']):.6f}",  # type: ignore[arg-type]
            ),
        ]
        build = _child(BUILD_CHILD, str(folder))
        timings = build["timings"]
        assert isinstance(timings, dict)
        rows += [
            ("full build (fresh)", f"{float(build['seconds']):.1f} s for {build['chunks']} passages"),
            # on a shared machine wall time depends on the other load; CPU time does not
            ("  CPU time of the build (user + system)", f"{float(build['cpu_s']):.1f} s"),
            ("  of which lexical + chunking", f"{timings.get('chunk', 0) + timings.get('lexical', 0):.1f} s"),
            ("  of which embedding + vector store", f"{timings.get('embed', 0):.1f} s"),
            ("build peak RSS", f"{float(build['peak_mib']):.0f} MiB"),
            ("  build time / anchor time", f"{float(build['seconds']) / st_s:.2f}"),
            ("load average after the build", " / ".join(f"{x:.2f}" for x in os.getloadavg())),
        ]
        start = time.perf_counter()
        _child(BUILD_CHILD, str(folder))
        rows.append(
            ("rebuild, nothing changed", f"{time.perf_counter() - start:.1f} s (incl. process start)")
        )
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    rows.append(("index size on disk", f"{size / 2**20:.1f} MiB (vector cache included)"))

    colds = [_child(COLD_CHILD, str(folder), q) for q in ("How do I select the eager mode in TorchTPU?",) * 3]
    cold_total = statistics.median(float(c["import_s"]) + float(c["answer_s"]) for c in colds)
    cold_answer = statistics.median(float(c["answer_s"]) for c in colds)
    rows.append(
        ("cold query (new process: import + open + answer)", f"{cold_total * 1000:.0f} ms median of 3")
    )
    rows.append(("  of which open index + answer", f"{cold_answer * 1000:.0f} ms"))
    rows.append(("cold query peak RSS", f"{float(colds[0]['peak_mib']):.0f} MiB ({colds[0]['mode']})"))

    from tpu_runtime.knowledge.api import answer, open_index
    from tpu_runtime.knowledge.evaluate import load_cases

    questions = [c.q for c in load_cases(REPO / "tests" / "data" / "kb_eval.yaml")]
    open_index(folder, build=False)
    answer(questions[0], 5, folder=folder)
    latencies = []
    for _ in range(args.queries):
        for q in questions:
            start = time.perf_counter()
            answer(q, 5, folder=folder)
            latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    p95 = latencies[int(0.95 * (len(latencies) - 1))]
    rows.append(
        (
            "warm query (same process, answer())",
            f"{statistics.median(latencies):.1f} ms median, {p95:.1f} ms p95 over {len(latencies)}",
        )
    )
    print("| knowledge base | measured |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    tmp.cleanup()


if __name__ == "__main__":
    main()
