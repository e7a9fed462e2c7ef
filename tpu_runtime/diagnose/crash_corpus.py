"""The corpus of real crash logs (tests/data/crash_logs/real/) and its fixed dev / held-back split.

Each log is machine-written output copied from a public issue thread or documentation page; `index.yaml`
beside the logs names, per file, the source URL, the category a maintainer would give it, the remedy the
thread settled on (in our words) and `remedy_keys`: the named things (a flag, an environment variable, an
API, a layout change) a fix must mention to count as that remedy. Files of one multi-host job share a
`group`, so they fall on the same side of the split, and a file whose text repeats a dev file's (the same
message printed in two threads) names it as `twin_of` and is dev too: its twin was read.

The split is decided by a hash of the file's group (or its name) alone, so it was fixed before any rule
was written and cannot drift with the rules: rules are written against the `dev` half; the `held_back`
half is only scored, by `benchmarks/diagnose_corpus.py`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tpu_runtime.diagnose import category_model
from tpu_runtime.diagnose.report import Category, CrashDiagnosis
from tpu_runtime.yaml_data import safe_load

__all__ = [
    "CORPUS_DIR",
    "CorpusEntry",
    "Fold",
    "HeldOutBy",
    "Origin",
    "Scored",
    "Split",
    "entry_fold",
    "entry_origin",
    "entry_split",
    "fits_the_log",
    "fold_of",
    "held_out_units",
    "load_corpus",
    "per_category",
    "remedy_matches",
    "remedy_text",
    "score_file",
    "split_of",
    "without_own_entry",
]

Split = Literal["dev", "held_back"]
Fold = Literal["A", "B"]
Origin = Literal["thread or page", "source file"]
HeldOutBy = Literal["other-rounds", "other-fold"]


def split_of(key: str) -> Split:
    """`dev` or `held_back` for a corpus file's group (or file name, without folders), by SHA-256."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return "held_back" if digest[0] & 1 else "dev"


def fold_of(key: str) -> Fold:
    """`A` or `B`, a file's fold within its half (the second byte of the same hash). General mechanisms are
    built by reading failures on fold A only and kept when fold B, unread, gains: the gain on B estimates
    what they do for logs nobody read."""
    return "B" if hashlib.sha256(key.encode("utf-8")).digest()[1] & 1 else "A"


# ------------------------------------------------------------------------------------------ scoring

CORPUS_DIR = Path(__file__).resolve().parents[2] / "tests" / "data" / "crash_logs" / "real"


class CorpusEntry(BaseModel):
    """One real log: where it came from, what it is, and the remedy its thread settled on."""

    source: str = Field(pattern=r"^https://")
    category: Category
    remedy: str = Field(min_length=10, description="the remedy, in our words")
    remedy_keys: list[str] = Field(min_length=1, description="named things a fix must mention (any one)")
    form: str | None = Field(default=None, description="crlf, ansi: how the file keeps its bytes")
    group: str | None = Field(default=None, description="files of one multi-host job share a group")
    added: str | None = Field(default=None, description="the round that added the file (None: the first)")
    twin_of: str | None = Field(default=None, description="a dev file whose text this one repeats")


@dataclass(frozen=True)
class Scored:
    """The verdict on one corpus file."""

    name: str
    split: Split
    expected: str
    got: str
    remedy_ok: bool
    fix_rule: str

    @property
    def category_ok(self) -> bool:
        return self.expected == self.got

    @property
    def paragraph_only(self) -> bool:
        """Category right, yet the fix is only the category's paragraph (no sub-rule chose it; a category the
        text classifier gave adds only the next diagnostic steps) and names no remedy: the held-back half's
        largest loss of remedies, counted apart so a fallback for it can be measured (issue 12)."""
        by_paragraph = "/" not in self.fix_rule or self.fix_rule.endswith(f"/{category_model.SUB_RULE}")
        return self.category_ok and not self.remedy_ok and by_paragraph


def load_corpus(folder: Path = CORPUS_DIR) -> dict[str, CorpusEntry]:
    """index.yaml, validated: file name -> entry. Every entry's file exists."""
    raw = safe_load((folder / "index.yaml").read_text(encoding="utf-8"))
    entries = {name: CorpusEntry.model_validate(value) for name, value in raw.items()}
    missing = [name for name in entries if not (folder / name).is_file()]
    if missing:
        raise ValueError(f"{folder}: index.yaml names missing files: {', '.join(missing)}")
    for name, entry in entries.items():
        twin = entries.get(entry.twin_of) if entry.twin_of else None
        if entry.twin_of and (twin is None or twin.twin_of or twin.group or entry.group):
            raise ValueError(f"{folder}: {name}: twin_of must name an ungrouped file that is no twin itself")
    return entries


def _split_key(name: str, entry: CorpusEntry) -> str:
    return entry.twin_of or entry.group or name


def entry_split(name: str, entry: CorpusEntry) -> Split:
    return split_of(_split_key(name, entry))


def entry_fold(name: str, entry: CorpusEntry) -> Fold:
    return fold_of(_split_key(name, entry))


def held_out_units(dev: dict[str, CorpusEntry], by: HeldOutBy) -> dict[str, list[str]]:
    """Dev files grouped by the round that added them or by fold: each unit is measured against
    known errors (or a model) built from the others, as a new round's logs would meet them."""
    units: dict[str, list[str]] = {}
    for name, entry in sorted(dev.items()):
        unit = (entry.added or "first") if by == "other-rounds" else entry_fold(name, entry)
        units.setdefault(unit, []).append(name)
    return units


SOURCE_FILE = re.compile(r"^https://github\.com/[^/]+/[^/]+/blob/")
DOC_FILE = re.compile(r"\.(md|mdx|rst|ipynb|txt|html?)(#.*)?$", re.IGNORECASE)


def entry_origin(entry: CorpusEntry) -> Origin:
    """Where a file's lines come from: a thread or documentation page that printed them, or a library's
    source file (a raise site or a test's expected message, whose placeholders the collector filled in).
    The two kinds are reported apart because the second is half written by us. A documentation file in a
    repository (Markdown, reStructuredText, a notebook, or a notebook's rendered HTML export with its cell
    outputs) is a page: it printed the output beside its fix."""
    source = entry.source
    return "source file" if SOURCE_FILE.match(source) and not DOC_FILE.search(source) else "thread or page"


def remedy_matches(fix: str, keys: list[str]) -> bool:
    """Whether a fix names the remedy: any one of the entry's keys, case-insensitive."""
    lowered = fix.lower()
    return any(key.lower() in lowered for key in keys)


def fits_the_log(fix_rule: str) -> bool:
    """Whether a fix was chosen for this log (a sub-rule, `category/id`), not the category's paragraph.

    The category paragraph prints for every log of its category and lists most remedies of the family, so
    it names almost any entry's key; crediting it would make the remedy check a tautology.
    """
    return "/" in fix_rule


def remedy_text(crash: CrashDiagnosis) -> str:
    """The part of a crash's fix that claims the remedy: the whole fix, except for a similar known error
    (`<category>/similar_known_error`), whose claim is the neighbour's remedy alone, and a fact of the sheets
    (`<category>/sheet_fact`), whose claim is the fact alone (the category's paragraph follows it), and a
    category the text classifier gave (`<category>/category_model`), whose claim is the unknown log's next
    steps alone (the category's paragraph comes before them).

    The neighbour was chosen for this log by the similarity of its error lines, so its remedy counts when it
    names the entry's keys; the text after it in the fix (the next diagnostic steps of an unknown log, or
    the category's paragraph) was not chosen that way and earns nothing.
    """
    near = crash.facts.get("similar_known_error")
    if crash.evidence.fix_rule.endswith("/similar_known_error") and isinstance(near, dict):
        return str(near.get("remedy", ""))
    sheet = crash.facts.get("sheet_fact")
    if crash.evidence.fix_rule.endswith("/sheet_fact") and isinstance(sheet, dict):
        return str(sheet.get("text", ""))
    if crash.evidence.fix_rule.endswith("/category_model"):
        return crash.fix.partition(category_model.STEPS)[2]
    return crash.fix


def without_own_entry(name: str, entry: CorpusEntry, crash: CrashDiagnosis) -> CrashDiagnosis:
    """A dev file's diagnosis as if it had not been collected: the shipped known errors hold every dev file
    (known_errors), so a verdict from a similar known error is made again with the file (and its job's
    group) left out; the shipped text classifier was fitted on every dev file, its label among them, so a
    category it gave is taken back (the file is diagnosed without it: its honest share is measured across
    folds, `diagnose_corpus.py --known-from other-fold`). Other verdicts are returned as they are."""
    from_classifier = crash.evidence.fix_rule.endswith(f"/{category_model.SUB_RULE}")
    if not crash.evidence.fix_rule.endswith("/similar_known_error") and not from_classifier:
        return crash
    from tpu_runtime.diagnose.crashlog import diagnose_log
    from tpu_runtime.diagnose.similar_errors import default_index

    text = (CORPUS_DIR / name).read_bytes().decode("utf-8", "replace")
    similar = default_index().excluding({name, entry.group or name})
    return diagnose_log(text, name, similar=similar, classifier=category_model.EMPTY)


def score_file(name: str, entry: CorpusEntry, crash: CrashDiagnosis | None) -> Scored:
    """A file's verdict: right category, and a fix chosen for this log that names the settled remedy."""
    got = crash.category if crash is not None else "none"
    fix = remedy_text(crash) if crash is not None else ""
    fix_rule = crash.evidence.fix_rule if crash is not None else ""
    return Scored(
        name=name,
        split=entry_split(name, entry),
        expected=entry.category,
        got=got,
        remedy_ok=got == entry.category and fits_the_log(fix_rule) and remedy_matches(fix, entry.remedy_keys),
        fix_rule=fix_rule,
    )


def per_category(scored: list[Scored]) -> dict[str, tuple[int, int, int]]:
    """category -> (true positives, predicted, actual) over `scored`."""
    table: dict[str, tuple[int, int, int]] = {}
    for category in sorted({s.expected for s in scored} | {s.got for s in scored}):
        tp = sum(1 for s in scored if s.expected == category and s.got == category)
        predicted = sum(1 for s in scored if s.got == category)
        actual = sum(1 for s in scored if s.expected == category)
        table[category] = (tp, predicted, actual)
    return table
