"""Build the known-error entries from the real corpus's dev half (the data file `known_errors` loads).

Apart from `known_errors` because building runs the crash rules over corpus files, while the rules'
fallback (similar_errors) loads the entries: one module for both would be an import cycle.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tpu_runtime.diagnose import category_model
from tpu_runtime.diagnose.category_model import CategoryModel
from tpu_runtime.diagnose.crash_corpus import CORPUS_DIR, entry_split, load_corpus
from tpu_runtime.diagnose.crashlog import diagnose_log, log_lines
from tpu_runtime.diagnose.known_errors import KnownError, decisive_lines
from tpu_runtime.diagnose.similar_errors import SimilarErrors

__all__ = ["build_category_model", "build_known_errors"]


def build_known_errors(names: Iterable[str], folder: Path | None = None) -> list[KnownError]:
    """One entry per named corpus file, all of them from the dev half (a held-back name raises ValueError):
    the lines the crash rules decided on when they name the file's category, then its last error lines."""
    folder = CORPUS_DIR if folder is None else folder
    corpus = load_corpus(folder)
    entries: list[KnownError] = []
    for name in sorted(set(names)):
        entry = corpus[name]
        if entry_split(name, entry) != "dev":
            raise ValueError(f"{name} is in the held-back half: known errors come from the dev half only")
        text = (folder / name).read_bytes().decode("utf-8", "replace")
        lines, _ = log_lines(text)
        crash = diagnose_log(text, name, similar=SimilarErrors(()), classifier=category_model.EMPTY)
        first = crash.evidence.lines if crash.category == entry.category else []
        picked = decisive_lines(lines, first=[x for x in first if not x.startswith("(facts:")])
        if not picked:
            continue
        entries.append(
            KnownError(
                file=name,
                group=entry.group,
                round=entry.added or "first",
                category=entry.category,
                lines=[norm for _, norm in picked],
                remedy=" ".join(entry.remedy.split()),
                remedy_keys=entry.remedy_keys,
                source=entry.source,
            )
        )
    return entries


def build_category_model(
    names: Iterable[str], folder: Path | None = None, kept: int = category_model.KEPT_FEATURES
) -> CategoryModel:
    """The text classifier (category_model) fitted on the named corpus files, all of them from the dev half
    (a held-back name raises ValueError), each labelled with its category in index.yaml."""
    folder = CORPUS_DIR if folder is None else folder
    corpus = load_corpus(folder)
    texts: list[str] = []
    labels: list[str] = []
    for name in sorted(set(names)):
        if entry_split(name, corpus[name]) != "dev":
            raise ValueError(
                f"{name} is in the held-back half: the classifier is fitted on the dev half only"
            )
        texts.append((folder / name).read_bytes().decode("utf-8", "replace"))
        labels.append(corpus[name].category)
    return category_model.fit(texts, labels, kept)
