"""Write tpu_runtime/data/known_errors.jsonl (the decisive error lines of every dev file of the real corpus),
known_errors_tfidf.json beside it (the TF-IDF weights fitted on them with scikit-learn) and
category_model.json (the text classifier for logs the rules leave unknown, fitted on every dev file).

Run by hand after the corpus or the crash rules change: `python benchmarks/build_known_errors.py`. Only the
dev half is read (crash_corpus.entry_split); the builder refuses a held-back file, and this script checks
the written file once more, so held-back logs stay unmatched by construction (`similar_errors`).
"""

from __future__ import annotations

import sys

from bench_env import use_quiet_env

use_quiet_env()

from tpu_runtime.diagnose.category_model import MODEL_FILE, load_category_model  # noqa: E402
from tpu_runtime.diagnose.crash_corpus import entry_split, load_corpus  # noqa: E402
from tpu_runtime.diagnose.known_errors import (  # noqa: E402
    KNOWN_ERRORS_FILE,
    KNOWN_WEIGHTS_FILE,
    load_known_errors,
    load_known_weights,
    write_known_errors,
)
from tpu_runtime.diagnose.known_errors_build import build_category_model, build_known_errors  # noqa: E402


def main() -> int:
    corpus = load_corpus()
    dev = [name for name, entry in corpus.items() if entry_split(name, entry) == "dev"]
    entries = build_known_errors(dev)
    write_known_errors(entries)
    load_known_errors.cache_clear()
    load_known_weights.cache_clear()
    written = load_known_errors()
    weights = load_known_weights()
    assert weights is not None, f"{KNOWN_WEIGHTS_FILE} was not written"
    held_back = [e.file for e in written if entry_split(e.file, corpus[e.file]) != "dev"]
    assert not held_back, f"held-back files in {KNOWN_ERRORS_FILE}: {held_back}"
    lines = sum(len(e.lines) for e in written)
    print(f"{KNOWN_ERRORS_FILE}: {len(written)} known errors ({lines} lines) from {len(dev)} dev files")
    print(f"{KNOWN_WEIGHTS_FILE}: {len(weights.idf)} words")
    MODEL_FILE.write_text(build_category_model(dev).to_json(), encoding="utf-8")
    load_category_model.cache_clear()
    model = load_category_model()
    size = MODEL_FILE.stat().st_size
    print(f"{MODEL_FILE}: {len(model.features)} features, {len(model.classes)} classes, {size // 1024} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
