"""A cause-specific remedy from the team's fact sheets (knowledge/*.md) where no sub-rule fits.

A classified log whose fix is only its category's paragraph still names things: the API that raised, the
setting it refused, the exception class. The fact sheets hold thousands of sourced facts saying what those
things do and how to get past them. The log's decisive error lines are looked up among the sheets' facts
(one fact per line, in the knowledge base's identifier-aware tokens and BM25: knowledge.lexical), and a fact
is used only when it is strongly supported: it shares a rare identifier of the error lines (a flag, an API,
an exception class that few facts name) or several rare words, not merely the words every error shares
('ValueError', 'failed', 'device'). The fact then leads the fix in the sheet's words, with its source URL
first among the citations, and the sub-rule is `<category>/sheet_fact`.

The lookup reads the curated sheets only (no `kb build`, no vectors), once per process.
"""

from __future__ import annotations

import builtins
import functools
import heapq
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tpu_runtime.diagnose.known_errors import decisive_lines
from tpu_runtime.diagnose.report import Citation, CrashDiagnosis
from tpu_runtime.knowledge.curated import discover_curated
from tpu_runtime.knowledge.lexical import identifiers, query_tokens, tokenize

__all__ = ["SUB_RULE", "SheetFact", "SheetFacts", "SheetMatch", "default_sheet_facts", "sheet_remedy"]

SUB_RULE = "sheet_fact"
MAX_QUERY_LINES = 3
"""The decisive lines a query reads: the rule's evidence, then the last error lines (fold A: six lines
added one pick, a fact about another error, and no remedy)."""
CANDIDATES = 10
"""The best BM25 matches that are checked for strong support."""
K1, B = 1.2, 0.75
"""BM25's parameters, as knowledge.lexical sets them."""
RARE_SHARE = 0.002
"""A token is rare when at most this share of the facts holds it (10 of the 5,000 facts; set on fold A)."""
MIN_RARE_WORDS = 2
"""Rare plain words a fact must share with the error lines when it shares no rare identifier."""

_STATUS_CODES = (
    "cancelled unknown invalid_argument deadline_exceeded not_found already_exists permission_denied "
    "resource_exhausted failed_precondition aborted out_of_range unimplemented internal unavailable "
    "data_loss unauthenticated"
)
STATUS_CODES = frozenset(_STATUS_CODES.split())
"""The status codes every XLA and absl error carries (`INTERNAL`, `NOT_FOUND`), lower-cased."""
GENERIC = frozenset(
    {
        token
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
        for token in tokenize(name)
    }
    | STATUS_CODES
)
"""Tokens that name no particular failure however rarely the sheets use them: Python's built-in exception
classes (and their parts: 'RuntimeError' is 'runtimeerror', 'runtime', 'error') and the status codes every
XLA and absl error carries (fold A: they alone picked facts about other errors)."""

_NUMBER = re.compile(r"[\d.]+")
WORDING = "Log text"
ADVICE = "What to try:"
"""Two kinds of glossary bullet (knowledge/errors.md): one quotes an error's wording, one says what to do."""
_MD_FACT = re.compile(r"^- (?P<text>.+?)\s*\(\[source\]\((?P<url>https?://[^)\s]+)\)[^()]*\)\s*$")


@dataclass(frozen=True)
class SheetFact:
    """One sourced fact of a sheet: its sentence (our words), the URL it restates, the sheet and section."""

    text: str
    url: str
    title: str
    matched: str = ""
    """The text the error lines are matched against, when it is not `text`: a glossary's `Log text:` bullet
    quotes an error's wording, and the fix shows its section's `What to try:` bullet instead."""

    @property
    def indexed(self) -> str:
        return self.matched or self.text


@dataclass(frozen=True)
class SheetMatch:
    """A fact strongly supported by a log's error lines, with the rare tokens they share."""

    fact: SheetFact
    score: float
    shared: tuple[str, ...]
    line: str


def _facts(folder: Path | None) -> list[SheetFact]:
    """Every sourced fact of the Markdown sheets curated.discover_curated lists, read line by line: a fact
    is one bullet, titled by its sheet and section. The YAML sheets (chip and model tables) are left out:
    composing them took 0.36 s of a 0.5 s read, and their rows are specifications, not remedies."""
    facts: dict[str, SheetFact] = {}
    for spec in discover_curated(folder):
        path = Path(spec.location)
        if path.suffix != ".md":
            continue
        sections: dict[str, list[SheetFact]] = {}
        section = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#"):
                section = line.lstrip("#").strip()
            found = _MD_FACT.match(line.strip())
            if found is not None:
                title = f"{spec.label} › {section}" if section else spec.label
                sections.setdefault(title, []).append(SheetFact(found["text"], found["url"], title))
        for title, listed in sections.items():
            advice = next((f for f in listed if f.text.startswith(ADVICE)), None)
            for fact in listed:
                if advice is not None and fact.text.startswith(WORDING):
                    shown = advice.text.removeprefix(ADVICE).strip()
                    fact = SheetFact(shown[:1].upper() + shown[1:], advice.url, title, matched=fact.text)
                facts.setdefault(fact.indexed, fact)
    return list(facts.values())


class SheetFacts:
    """The sheets' facts, each one's tokens (knowledge.lexical.tokenize) and an inverted index over them.

    The ranking is the knowledge base's BM25 (knowledge.lexical: k1 1.2, b 0.75, Lucene's idf, a query's
    whole identifiers counted three times) computed in plain Python over the postings of the query's tokens:
    the bm25s index brings numpy and SciPy into `diagnose` of a crash log, which reads no profile and stays
    without them (tests/test_cli_startup.py)."""

    def __init__(self, facts: Sequence[SheetFact]) -> None:
        self.facts = tuple(facts)
        counts = [Counter(tokenize(f.indexed)) for f in self.facts]
        self._tokens = [frozenset(c) for c in counts]
        self._df = Counter(t for tokens in self._tokens for t in tokens)
        self._rare = max(1, math.floor(RARE_SHARE * len(self.facts)))
        average = sum(sum(c.values()) for c in counts) / max(1, len(counts))
        self._postings: dict[str, list[tuple[int, float]]] = {}
        for i, c in enumerate(counts):
            norm = K1 * (1 - B + B * sum(c.values()) / average)
            for token, tf in c.items():
                self._postings.setdefault(token, []).append((i, tf / (tf + norm)))

    @classmethod
    def from_folder(cls, folder: Path | None = None) -> SheetFacts:
        """Every sourced fact of the fact sheets in `folder` (the shipped knowledge folder when None)."""
        return cls(_facts(folder))

    def rare(self, token: str) -> bool:
        """A token few facts hold that names something: a bare number ("0.02", "02") is a value a check
        printed, which a sheet's default or example shares by chance (diag74: a dtype check's scale matched a
        MaxText default), so it is never support."""
        return (
            token not in GENERIC and not _NUMBER.fullmatch(token) and 0 < self._df.get(token, 0) <= self._rare
        )

    def top(self, query: str, k: int = CANDIDATES) -> list[tuple[int, float]]:
        """(fact index, BM25 score) of the k best facts with a positive score, best first."""
        scores: dict[int, float] = {}
        for token in query_tokens(query):
            df = self._df.get(token, 0)
            if not df:
                continue
            idf = math.log(1 + (len(self.facts) - df + 0.5) / (df + 0.5))
            for i, weight in self._postings[token]:
                scores[i] = scores.get(i, 0.0) + idf * weight
        return heapq.nlargest(k, scores.items(), key=lambda pair: (pair[1], -pair[0]))

    def match(self, lines: Sequence[str], first: Sequence[str] = ()) -> SheetMatch | None:
        """The best strongly supported fact for a log's decisive lines (`first`: the rule's evidence), or
        None. Among the BM25 candidates, one sharing more rare identifiers wins, then more rare tokens,
        then the higher score (fold A: two rare common words outranked the API a line named)."""
        picked = [raw for raw, _ in decisive_lines(lines, first, MAX_QUERY_LINES)]
        if not picked:
            return None
        query = "\n".join(picked)
        words = set(tokenize(query))
        named = identifiers(query)
        best: tuple[tuple[int, int, float], SheetMatch] | None = None
        for i, score in self.top(query):
            shared = sorted(t for t in words & self._tokens[i] if self.rare(t))
            if not any(t in named for t in shared) and len(shared) < MIN_RARE_WORDS:
                continue
            rank = (sum(t in named for t in shared), len(shared), score)
            if best is None or rank > best[0]:
                best = (
                    rank,
                    SheetMatch(self.facts[i], round(score, 2), tuple(shared), _line_of(picked, shared)),
                )
        return best[1] if best is not None else None


def _line_of(lines: Sequence[str], shared: Sequence[str]) -> str:
    """The decisive line holding most of the shared tokens (the one the fact was found for)."""
    return max(lines, key=lambda line: len(set(tokenize(line)) & set(shared)))


@functools.cache
def default_sheet_facts() -> SheetFacts:
    """The shipped sheets' facts, read and indexed once per process."""
    return SheetFacts.from_folder()


def sheet_remedy(
    crash: CrashDiagnosis, lines: Sequence[str], sheets: SheetFacts | None = None
) -> CrashDiagnosis:
    """A crash whose fix is only its category's paragraph, with the strongly supported fact of the sheets
    leading the fix and its URL first among the citations; the crash unchanged when no fact is."""
    sheets = default_sheet_facts() if sheets is None else sheets
    found = sheets.match(lines, crash.evidence.lines)
    if found is None:
        return crash
    fact = found.fact
    steps = crash.evidence.fix_rule.removeprefix("unknown/")
    why = "no rule matched" if crash.category == "unknown" else "no sub-rule applied"
    facts = {
        **crash.facts,
        SUB_RULE: {"text": fact.text, "source": fact.url, "sheet": fact.title, "shared": list(found.shared)},
    }
    said = f"The docs say: {fact.text} ({fact.url})"
    if crash.category == "unknown":  # the next diagnostic steps were chosen for this log: they stay its rule
        fix, fix_rule = f"{said} Next diagnostic steps: {crash.fix}", f"unknown/{SUB_RULE}+{steps}"
    else:
        fix = f"{said} The {crash.category} category's general advice: {crash.fix}"
        fix_rule = f"{crash.category}/{SUB_RULE}"
    citation = Citation(label=f"fact sheet ({fact.title})", url=fact.url)
    return crash.with_fallback_fix(
        facts=facts,
        fix=fix,
        citation=citation,
        fix_rule=fix_rule,
        fix_reason=(
            f"{why}; the line {found.line!r} shares the rare terms "
            f"{', '.join(found.shared)} with a fact of {fact.title}"
        ),
    )
