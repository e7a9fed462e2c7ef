"""Similar known errors: the closest collected error to a log no crash rule explains, and how it was fixed.

The crash rules match the wording of the errors they were written for; a log in a wording nobody collected
matches none and stays `unknown`. Its error lines are often still close to a known error's (the same check
in a newer release, the same runtime failure with other numbers, paths or shapes). This module compares
the log's decisive lines (known_errors.decisive_lines) with those of the known errors
(`tpu_runtime/data/known_errors.jsonl`, the corpus's dev half) by the cosine of TF-IDF word vectors of the
normalised lines taken together (tfidf: weights scikit-learn fitted when the data file was written), and
takes the nearest entry. At or above `THRESHOLD` an
`unknown` log gets the neighbour's category, and it or a log fixed only by its category's paragraph gets a
fix that names the neighbour's source and remedy (sub-rule `<category>/similar_known_error`); below it the
log stays as the rules left it, `unknown` never a guess.

The shipped index applies its shipped weights in plain Python, so no `diagnose` run imports scikit-learn
(tests/test_cli_startup.py); only an index of other entries (the benchmark's `--known-from`) fits its own.
The threshold was tuned on the dev half alone, leave-one-round-out and
leave-one-fold-out (`benchmarks/diagnose_corpus.py --known-from`).

Words of the log that no known error has are outside the fitted vocabulary and weigh nothing, so a log
that shares only generic wording with a known error can pass ("learning rate must be positive" against
"hicache_ratio must be positive"). A neighbour met on the exception's class and status code alone is always
refused (`meets_beyond_the_exception`); `SimilarErrors(guard=True)` refuses such a neighbour; it is off by
default, as it lost right placements on dev fold B (docs/diagnose-accuracy.md, "A precision guard for the
similar known errors").
"""

from __future__ import annotations

import copy
import functools
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tpu_runtime.diagnose import tfidf
from tpu_runtime.diagnose.crash_sheet_facts import GENERIC, STATUS_CODES
from tpu_runtime.diagnose.known_errors import (
    KnownError,
    decisive_lines,
    load_known_errors,
    load_known_weights,
    normalise_line,
)
from tpu_runtime.diagnose.report import Category, Citation, CrashDiagnosis
from tpu_runtime.knowledge.lexical import identifiers

if TYPE_CHECKING:
    from tpu_runtime.diagnose.crash_specs import CrashRule

__all__ = [
    "SUB_RULE",
    "THRESHOLD",
    "SimilarError",
    "SimilarErrors",
    "default_index",
    "similar_diagnosis",
    "similar_remedy",
]

SUB_RULE = "similar_known_error"
THRESHOLD = 0.5
MAX_CONFIDENCE = 0.6
MAX_EVIDENCE = 8
PLACEHOLDERS = frozenset({"path", "url", "hex"})
"""What normalise_line writes for a path, URL or hex value: a shared placeholder is no shared identifier."""
EXCEPTION_CLASS = re.compile(r"(?<![\w.])(?:[a-z_][a-z0-9_]*\.)*[a-z_][a-z0-9_]*(?:error|exception)\b")
"""An exception's class in a normalised line, with its dotted module (`jaxlib.xla_extension.xlaruntimeerror`):
it says which library raised, not which failure it was, so a neighbour met on it alone is no neighbour."""


@dataclass(frozen=True)
class SimilarError:
    """The closest known error to a log: the entry, the cosine similarity and the two lines that met. The
    threshold is compared with the cosine itself, so a neighbour at 0.4997 does not pass a threshold of 0.5
    by the rounding the report shows (diag111)."""

    known: KnownError
    cosine: float
    line: str
    known_line: str

    @property
    def similarity(self) -> float:
        """The cosine as reports show it (three decimals)."""
        return round(self.cosine, 3)

    def reaches(self, threshold: float) -> bool:
        """Whether the unrounded similarity reaches the threshold."""
        return self.cosine >= threshold


class SimilarErrors:
    """A TF-IDF index over the known errors; `nearest` finds the closest entry to a log's decisive lines.

    Each entry is one document (its lines together), words weighted by TF-IDF over the known errors, so
    the words every error shares (`error`, `failed`, `jaxlib`) count for little and the rare ones that
    name the failure count most. Word unigrams on whole entries placed a held-out round's dev files
    better than character n-grams or single line pairs (see the README's figures)."""

    def __init__(
        self,
        known: Sequence[KnownError],
        threshold: float = THRESHOLD,
        weights: tfidf.TfidfWeights | None = None,
        guard: bool = False,
    ) -> None:
        """`weights` fitted on these entries (the shipped ones for the shipped set); fitted here when None.
        With `guard`, a neighbour is refused when only generic wording meets (`supported`)."""
        self.known = tuple(known)
        self.threshold = threshold
        self.guard = guard
        self.exclude: frozenset[str] = frozenset()
        self._weights = tfidf.fit([e.document for e in self.known]) if weights is None else weights
        self._vectors = [self._weights.vector(e.document) for e in self.known]
        self._stop: frozenset[str] | None = None

    def excluding(self, names: Collection[str]) -> SimilarErrors:
        """The same index with the entries of these corpus files (or groups) left out, so that a corpus
        file scored against the shipped set is not its own neighbour; the fitted matrix is shared."""
        view = copy.copy(self)
        view.exclude = frozenset(names)
        return view

    def nearest(self, lines: Sequence[str]) -> SimilarError | None:
        """The most similar known error, or None (no error line, no known errors, no shared word, only the
        exception's class and status code shared (`meets_beyond_the_exception`), or, with the guard, a
        neighbour that `supported` refuses)."""
        if not self.known:
            return None
        picked = decisive_lines(lines)
        if not picked:
            return None
        text = " \n ".join(norm for _, norm in picked)
        query = self._weights.vector(text)
        sims = [tfidf.cosine(query, vector) for vector in self._vectors]
        kept = [i for i, entry in enumerate(self.known) if not self._excluded(entry)]
        if not kept:
            return None
        best = max(kept, key=lambda i: (sims[i], -i))  # a tie goes to the first entry (by file name)
        if sims[best] <= 0.0:
            return None
        entry = self.known[best]
        if not meets_beyond_the_exception(text, query, self._vectors[best]):
            return None
        if self.guard and not self.supported([raw for raw, _ in picked], entry):
            return None
        # the pair of lines that met: the log's line and the entry's line with the highest similarity
        log_vectors = [self._weights.vector(norm) for _, norm in picked]
        known_vectors = [self._weights.vector(line) for line in entry.lines]
        _, row, col = max(
            (
                (tfidf.cosine(log_vector, known_vector), row, col)
                for row, log_vector in enumerate(log_vectors)
                for col, known_vector in enumerate(known_vectors)
            ),
            key=lambda pair: (pair[0], -pair[1], -pair[2]),  # the first pair of the highest, row by row
        )
        return SimilarError(
            known=entry,
            cosine=sims[best],
            line=picked[row][0],
            known_line=entry.lines[col],
        )

    def supported(self, raw_lines: Sequence[str], entry: KnownError) -> bool:
        """Whether the log's decisive lines meet the entry on more than generic wording: their cosine still
        reaches the threshold when the log's words that no known error has count in its length (at the IDF
        of a word no entry holds), or the two share a whole identifier (a flag, a CamelCase class, a
        snake_case setting or a dotted API: knowledge.lexical.identifiers) other than an exception's class
        (Python's built-in ones and any `...Error` or `...Exception`, dotted or not) and the status codes
        (crash_sheet_facts.GENERIC). Without it, "learning rate must be
        positive" met "hicache_ratio must be positive" at 0.54 on `valueerror` and `positive` alone."""
        stop = self._stop_words()
        unseen = math.log(1.0 + len(self.known)) + 1.0  # scikit-learn's smoothed IDF of a word no entry has
        query = self._weights.vector(
            " \n ".join(normalise_line(line) for line in raw_lines), unseen=unseen, ignore=stop
        )
        if tfidf.cosine(query, self._weights.vector(entry.document)) >= self.threshold:
            return True
        known_words = tfidf.words(entry.document)
        for line in raw_lines:
            for name in identifiers(line):
                parts = tfidf.words(normalise_line(name)) - PLACEHOLDERS
                exception = name in GENERIC or EXCEPTION_CLASS.fullmatch(name) is not None
                if not exception and parts and parts <= known_words:
                    return True
        return False

    def _stop_words(self) -> frozenset[str]:
        """The words of the known errors that the vectorizer dropped: its stop words, read off the entries
        so that no stop-word list is copied here (one no entry uses counts as unseen)."""
        if self._stop is None:
            seen = frozenset().union(*(tfidf.words(e.document) for e in self.known))
            self._stop = frozenset(w for w in seen if w not in self._weights.idf)
        return self._stop

    def _excluded(self, entry: KnownError) -> bool:
        return entry.file in self.exclude or entry.group in self.exclude


def meets_beyond_the_exception(text: str, query: tfidf.Vector, known: tfidf.Vector) -> bool:
    """Whether a log's normalised decisive lines (`text`, weighed as `query`) share a weighed word with a
    known error's vector other than the words of their exception classes and the status codes. A log whose
    other words no known error has meets every entry of the same exception on those alone: a made-up
    `jaxlib.xla_extension.XlaRuntimeError: INTERNAL: ...` met a start-up entry at 0.50 on its class."""
    generic = STATUS_CODES.union(*(tfidf.words(m.group(0)) for m in EXCEPTION_CLASS.finditer(text)))
    return any(word in known and word not in generic for word in query)


@functools.cache
def default_index() -> SimilarErrors:
    """The index of the shipped known errors with their shipped weights, built once per process (a few
    hundred entries: milliseconds)."""
    return SimilarErrors(load_known_errors(), weights=load_known_weights())


def similar_diagnosis(
    unknown: CrashDiagnosis,
    lines: Sequence[str],
    rules: Mapping[Category, CrashRule],
    index: SimilarErrors | None = None,
) -> CrashDiagnosis:
    """The `unknown` diagnosis given the closest known error's category and fix when it is similar enough
    (the index's threshold); otherwise, or when the neighbour is itself `unknown`, the diagnosis unchanged.
    The next diagnostic steps of the unknown diagnosis follow the neighbour's remedy in the fix."""
    index = default_index() if index is None else index
    found = index.nearest(lines)
    if found is None or not found.reaches(index.threshold) or found.known.category not in rules:
        return unknown
    rule = rules[found.known.category]
    cause = (
        f"No known error signature matched this wording, but its error line is close (similarity "
        f"{found.similarity:.2f}) to a known {rule.title.lower()} ({found.known.source}); treat the category "
        f"as a lead to confirm. {rule.cause.strip()}"
    )
    crash = unknown.model_copy(
        update={
            "category": rule.category,
            "title": rule.title,
            "cause": cause,
            "citations": list(rule.citations),
            "confidence": round(min(MAX_CONFIDENCE, found.similarity * MAX_CONFIDENCE), 2),
        }
    )
    return _with_neighbour(crash, found, index.threshold, "no rule matched", "If that does not fit this log")


def similar_remedy(
    crash: CrashDiagnosis, lines: Sequence[str], index: SimilarErrors | None = None
) -> CrashDiagnosis:
    """A classified log whose fix is only its category's paragraph (no sub-rule applied): the closest known
    error of the same category, when similar enough, names its remedy first; otherwise the crash unchanged."""
    index = default_index() if index is None else index
    found = index.nearest(lines)
    if found is None or not found.reaches(index.threshold) or found.known.category != crash.category:
        return crash
    return _with_neighbour(
        crash,
        found,
        index.threshold,
        "no sub-rule applied",
        f"The {crash.category} category's general advice",
    )


def _with_neighbour(
    crash: CrashDiagnosis, found: SimilarError, threshold: float, why: str, rest: str
) -> CrashDiagnosis:
    """The crash with the neighbour's remedy as its fix (the former fix after `rest`), its source first among
    the citations, the sub-rule and the two lines that met as evidence, and the neighbour in the facts."""
    known = found.known
    facts = {
        **crash.facts,
        "similar_known_error": {
            "file": known.file,
            "source": known.source,
            "similarity": found.similarity,
            "line": found.known_line,
            "remedy": known.remedy,
        },
    }
    fix = (
        f"The closest known error (similarity {found.similarity:.2f}) is {known.source}; it was fixed by: "
        f"{known.remedy} {rest}: {crash.fix}"
    )
    citation = Citation(label=f"closest known error ({known.file})", url=known.source)
    return crash.with_fallback_fix(
        facts=facts,
        fix=fix,
        citation=citation,
        fix_rule=f"{crash.category}/{SUB_RULE}",
        fix_reason=(
            f"{why}; the line {found.line!r} is closest to the known line {found.known_line!r} of "
            f"{known.file} (cosine similarity {found.similarity:.2f}, threshold {threshold:.2f})"
        ),
        lines=[found.line, *(x for x in crash.evidence.lines if x != found.line)][:MAX_EVIDENCE],
    )
