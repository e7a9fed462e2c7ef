"""BM25 over identifier-aware tokens (bm25s), so a flag, env var or API name typed by the user matches.

Tokens: every identifier-like run is kept whole (lower-cased, leading dashes dropped:
`--xla_tpu_enable_latency_hiding_scheduler`, `xla_flags`, `torch.tpu.pallas.jax_op`) and also split into
its parts (`xla`, `tpu`, `pallas`, `jax_op`, `jax`, `op`, camelCase pieces), so the exact name scores
highest through its rare whole token while prose questions still match the parts.
"""

from __future__ import annotations

import importlib
import re
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from tpu_runtime.knowledge.words import stem

if TYPE_CHECKING:  # numpy is imported where scores are computed: crash-log triage tokenizes without it
    import numpy as np

_WORD_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/:]*[A-Za-z0-9_]|[A-Za-z0-9]")
_PART_RE = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+")
# compiled once: tokenize runs these on every word of the corpus, and re's own lookup of a pattern given
# as a string was a third of the BM25 build's time
_COMPOUND_RE = re.compile(r"[._\-/:]|[a-z][A-Z]")
_CAMEL_RE = re.compile(r"[a-z][A-Z]")
_SEPARATORS_RE = re.compile(r"[.\-/:]+")
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from has have how i if in into is it its me my "  # noqa: SIM905
    "not of on or so such than that the their them then there these they this to was we were what "
    "when where which while who why will with would you your ".split()
)
_import_lock = threading.Lock()


IDENTIFIER_RE = re.compile(r"[._/]|--|[a-z][A-Z]|^[A-Z0-9]+(_[A-Z0-9]+)+$")


def is_identifier(word: str) -> bool:
    """A flag, env var, dotted API name or CamelCase symbol, as opposed to an English word."""
    return len(word) > 3 and bool(IDENTIFIER_RE.search(word))


def query_tokens(text: str, boost: int = 3) -> list[str]:
    """Tokens for a query: as `tokenize`, with each whole identifier repeated `boost` times, so that
    the exact name outweighs documents that merely use its common parts ('libtpu', 'init', 'args')."""
    tokens = tokenize(text)
    wholes = identifiers(text)
    return tokens + [t for t in tokens if t in wholes] * (boost - 1)


def identifiers(text: str) -> set[str]:
    """The whole identifiers of a text as `tokenize` writes them (lower-cased, leading dashes dropped)."""
    return {m.group(0).strip(".-/:").lower() for m in _WORD_RE.finditer(text) if is_identifier(m.group(0))}


def tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    for match in _WORD_RE.finditer(text):
        word = match.group(0).strip(".-/:")
        if not word:
            continue
        lower = word.lower()
        if lower in STOPWORDS:
            continue
        tokens.append(lower)
        if len(word) > 2 and _COMPOUND_RE.search(word):
            for sep_part in _SEPARATORS_RE.split(word):
                for part in [sep_part, *sep_part.split("_")] if "_" in sep_part else [sep_part]:
                    for piece in [part, *_PART_RE.findall(part)] if _CAMEL_RE.search(part) else [part]:
                        low = piece.lower()
                        if low and low != lower and low not in STOPWORDS:
                            tokens.append(low)
    return tokens


def _bm25s() -> ModuleType:
    """Import bm25s without letting it import jax (it probes jax.lax for top-k; that costs ~2 s and
    can wake libtpu). We block the probe only when jax is not already loaded, and only during the import."""
    with _import_lock:
        if "bm25s" in sys.modules:
            return sys.modules["bm25s"]
        blocked = "jax" not in sys.modules
        if blocked:
            sys.modules["jax"] = None  # type: ignore[assignment]  # makes `import jax.lax` raise ImportError
        try:
            return importlib.import_module("bm25s")
        finally:
            if blocked and sys.modules.get("jax", 0) is None:
                del sys.modules["jax"]


class LexicalIndex:
    """A bm25s index whose document i is chunk i of the store's chunk list."""

    def __init__(self, retriever: Any, size: int) -> None:
        self._retriever = retriever
        self.size = size

    @classmethod
    def build(cls, texts: list[str]) -> LexicalIndex:
        bm25s = _bm25s()
        retriever = bm25s.BM25(k1=1.2, b=0.75)
        corpus = [tokenize(t) or ["\u2205"] for t in texts]
        retriever.index(corpus, show_progress=False)
        return cls(retriever, len(texts))

    def save(self, folder: Path) -> None:
        self._retriever.save(str(folder), show_progress=False)

    @classmethod
    def load(cls, folder: Path, size: int) -> LexicalIndex:
        bm25s = _bm25s()
        retriever = bm25s.BM25.load(str(folder), load_corpus=False, mmap=False)
        return cls(retriever, size)

    def scores(self, query: str) -> np.ndarray:
        import numpy as np

        ids = self._retriever.get_tokens_ids(query_tokens(query))
        if not ids:
            return np.zeros(self.size, dtype=np.float32)
        result: np.ndarray = self._retriever.get_scores_from_ids(ids)
        return result

    def top(self, query: str, k: int) -> list[tuple[int, float]]:
        """(chunk index, BM25 score) of the k best chunks with a positive score, best first."""
        import numpy as np

        scores = self.scores(query)
        if not len(scores):
            return []
        k = min(k, len(scores))
        best = np.argpartition(-scores, k - 1)[:k]
        ranked = sorted(((int(i), float(scores[i])) for i in best), key=lambda p: -p[1])
        return [(i, s) for i, s in ranked if s > 0]


# "Quick question: ...", "I was wondering: ...": a short lead-in before a colon that frames the question
_PREAMBLE_RE = re.compile(r"^\s*([A-Za-z' ]{1,40}):\s+(?=\S)")


def strip_preamble(question: str) -> str:
    """The question without a lead-in of at most five plain words before a colon ('Quick question:',
    'I was wondering:'); its words are not what is asked about, and a source need not repeat them. A
    lead-in naming something ('JAX:', 'Pallas on TPU:') is kept: a capitalised word after its first
    word, or an all-capital word, may be a name."""
    match = _PREAMBLE_RE.match(question)
    if not match:
        return question
    words = match.group(1).split()
    if len(words) > 5 or any(w.isupper() and len(w) > 1 for w in words):
        return question
    if any(w[:1].isupper() and w != "I" for w in words[1:]):
        return question
    if words and len(words[0]) > 1 and sum(1 for c in words[0] if c.isupper()) > 1:  # 'XProf:', 'GKE:'
        return question
    return question[match.end() :]


# "What is X?", "what are X used for?", "what does X do?": a question asking what a named thing is
_DEFINE_RE = re.compile(
    r"^\s*what\s+(?:is|are)\s+(?:an?\s+|the\s+)?(?P<x>[^?]+?)(?:\s+(?:used\s+)?for)?\s*\??\s*$"
    r"|^\s*what\s+does\s+(?:an?\s+|the\s+)?(?P<y>[^?]+?)\s+do\s*\??\s*$",
    re.I,
)
# words that make the phrase a question about an attribute or a situation, not a name ('the peak of X')
_NOT_A_NAME = frozenset("of in on per for when if between to with from by and or".split())  # noqa: SIM905
_PLACE_RE = re.compile(r"\s+(?:on|in|for|with|under)\s+(?:an?\s+|the\s+)?\S+(?:\s+\S+)?\s*$", re.I)
_SUBJECT_WORD_RE = re.compile(r"[A-Za-z0-9_][\w.\-/]*[A-Za-z0-9_]|[A-Za-z0-9]")
# a line opening with its subject says what it is, unless a modal or negation follows ('X does not ...')
_NOT_DEFINING = frozenset(
    "does do did can cannot must should may might will would could not only also".split()  # noqa: SIM905
)
_ARTICLES = frozenset(("a", "an", "the"))
_PARENTHESES_RE = re.compile(r"\([^()]*\)")
_COPULAS = frozenset(("is", "are", "was", "were", "means", "refers", "stands"))
_PLACES = frozenset(("on", "in"))
PLACE_WORDS = 4  # words a place phrase after the name may take before its verb ('on a TPU chip')


def definition_subject(question: str) -> tuple[str, ...] | None:
    """The lower-cased words of X in 'what is X / what does X do', when X is a short name (1-4 words)."""
    match = _DEFINE_RE.match(question)
    if not match:
        return None
    # a closing 'on TPU', 'in JAX' places the name rather than qualifies it ('what is Multislice on TPU')
    phrase = _PLACE_RE.sub("", match.group("x") or match.group("y") or "")
    words = _SUBJECT_WORD_RE.findall(phrase)
    lowered = tuple(w.lower() for w in words)
    if not 1 <= len(lowered) <= 4 or _NOT_A_NAME & set(lowered):
        return None
    return lowered


def defines(subject: tuple[str, ...], text: str) -> bool:
    """Whether `text` opens with the subject (after list markers and an article) as the subject of
    its verb: 'TPU Multislice joins two or more slices' defines 'TPU Multislice'; 'Multislice does
    not support v3' does not. Words are compared by their stems: a plural question meets a singular line."""
    # an expansion right after the name is part of it: 'ICI (inter-chip interconnect) links chips'
    words = _SUBJECT_WORD_RE.findall(_PARENTHESES_RE.sub(" ", text[:200]))
    while words and words[0].lower() in _ARTICLES:
        words = words[1:]
    head = [w.lower() for w in words[: len(subject)]]
    if len(head) < len(subject) or [stem(w) for w in head] != [stem(w) for w in subject]:
        return False
    following = words[len(subject)] if len(words) > len(subject) else ""
    if following.lower() in _PLACES:
        # a place after the name is part of the subject: 'The SparseCores on a TPU chip are for ...'
        rest = [w.lower() for w in words[len(subject) + 1 : len(subject) + 1 + PLACE_WORDS]]
        return any(w in _COPULAS for w in rest)
    # the verb: a copula or a third-person form ('joins', 'lets'); a capitalised or bare word continues
    # the name instead ('TPU Multislice JobSet', 'TPU Multislice workload')
    return following in _COPULAS or (
        following.islower()
        and following.endswith("s")
        and not following.endswith("ss")
        and following not in _NOT_DEFINING
    )
