"""The known errors: decisive, machine-written error lines of the corpus's dev half, each with its fix.

A log in a wording no crash rule was written for is often close to one that was collected: the same check
raised by a newer release, the same runtime failure with other numbers. `similar_errors` compares a log's
error lines with these. Each entry is one dev file of tests/data/crash_logs/real/: a few of its error lines
(the lines the rules decided on, then its last error lines), normalised so that numbers, hex addresses,
paths and shapes do not count, with the category, the remedy in our words, `remedy_keys` and the source URL
of index.yaml. Only machine-written output is kept, with its source URL; no people's prose.

The shipped file (`tpu_runtime/data/known_errors.jsonl`), and beside it the TF-IDF weights fitted on its
entries (`known_errors_tfidf.json`, see tfidf), are written by `benchmarks/build_known_errors.py`
from the dev half only: held-back files stay unread, so the held-back score measures logs nobody matched.
`known_errors_build.build_known_errors` refuses a held-back file.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.crash_cues import is_error_line
from tpu_runtime.diagnose.report import Category
from tpu_runtime.diagnose.tfidf import TfidfWeights, fit

__all__ = [
    "KNOWN_ERRORS_FILE",
    "KNOWN_WEIGHTS_FILE",
    "MAX_LINES",
    "KnownError",
    "decisive_lines",
    "load_known_errors",
    "load_known_weights",
    "normalise_line",
    "write_known_errors",
]

KNOWN_ERRORS_FILE = Path(__file__).resolve().parents[1] / "data" / "known_errors.jsonl"
KNOWN_WEIGHTS_FILE = KNOWN_ERRORS_FILE.with_name("known_errors_tfidf.json")
MAX_LINES = 6
MIN_CHARS = 12


class KnownError(BaseModel):
    """One known error: its decisive lines (normalised), what it is and how it was fixed."""

    file: str = Field(description="the corpus file (tests/data/crash_logs/real/) the lines come from")
    group: str | None = Field(default=None, description="the multi-host job the file belongs to")
    round: str = Field(description="the round of additions that collected the file ('first' for none)")
    category: Category
    lines: list[str] = Field(min_length=1, description="decisive error lines, normalised (normalise_line)")
    remedy: str = Field(description="the remedy the source settled on, in our words")
    remedy_keys: list[str]
    source: str = Field(pattern=r"^https://")

    @property
    def document(self) -> str:
        """The entry's lines as one text: what its TF-IDF vector is made of."""
        return " \n ".join(self.lines)


# ------------------------------------------------------------------------------------ normalisation

# glog/absl prefix "E1103 09:12:44.118203  20417 train.py:88] " and Python logging "2024-01-02 03:04:05,678"
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d(?:\.\d+)?\s+\d+\s+[\w.+-]+:\d+\]\s*")
_STAMP = re.compile(r"\b\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?")
_HEX = re.compile(r"\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b")
_URL = re.compile(r"\bhttps?://\S+")
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:~|\.{1,2})?(?:/[\w.+@-]+){2,}/?|\b[\w.+-]+(?:/[\w.+@-]+){2,}")
_NUMBER = re.compile(r"(?<![A-Za-z_\d])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_NUMBER_RUN = re.compile(r"N(?:\s*[,x×]\s*N)+")
_SPACE = re.compile(r"\s+")
# "File "...", line 12, in f" frames and bare "^^^^" markers say where, not what failed; the lines every
# Python or native crash prints (the traceback header, chained-exception notes, the signal banner) say
# nothing about which failure it is.
_FRAME = re.compile(r"^\s*(?:File \"|at |\^+\s*$|~+\s*$|-+\s*$|=+\s*$)")
_BOILERPLATE = re.compile(
    r"traceback \(most recent call last\)|the above exception was the direct cause|"
    r"during handling of the above exception|core dumped|^\*\*\* sig\w+ received by pid|"
    r"^fatal python error: (?:aborted|segmentation fault)|^(?:error|failed|failure|exception):?$|"
    # jax's notes around a filtered traceback (jax/_src/traceback_util.py): every jax error carries them
    r"^for simplicity, jax has removed its internal frames|"
    r"^the preceding stack trace is the source of the jax",
    re.IGNORECASE,
)


def normalise_line(line: str) -> str:
    """A line with what varies between runs collapsed: log prefixes and time stamps dropped, hex addresses
    and hashes to HEX, URLs to URL, paths to PATH, numbers to N (a shape `[8,128]` to `[N]`), lower case."""
    s = _GLOG.sub("", line.strip())
    s = _STAMP.sub(" ", s)
    s = _URL.sub(" URL ", s)
    s = _HEX.sub("HEX", s)
    s = _PATH.sub(" PATH ", s)
    s = _NUMBER.sub("N", s)
    s = _NUMBER_RUN.sub("N", s)
    return _SPACE.sub(" ", s).strip().lower()


def decisive_lines(
    lines: Sequence[str], first: Iterable[str] = (), limit: int = MAX_LINES
) -> list[tuple[str, str]]:
    """(raw line, normalised line) for up to `limit` decisive lines: `first` (e.g. the lines a rule decided
    on), then the log's error lines, last first (the fatal error is usually at the end). Traceback frames,
    markers and lines too short to tell errors apart are skipped; a normalised line is kept once."""
    picked: dict[str, str] = {}
    errors = (line for line in reversed(lines) if is_error_line(line))
    for raw in [*first, *errors]:
        if len(picked) >= limit:
            break
        if _FRAME.match(raw) or _BOILERPLATE.search(raw.strip()):
            continue
        norm = normalise_line(raw)
        if len(norm) >= MIN_CHARS and norm not in picked:
            picked[norm] = raw.strip()
    return [(raw, norm) for norm, raw in picked.items()]


# ------------------------------------------------------------------------------------ the data file


@functools.cache
def load_known_errors(path: Path = KNOWN_ERRORS_FILE) -> tuple[KnownError, ...]:
    """The known errors of a JSON-lines file, validated; none when the file is absent."""
    if not path.is_file():
        return ()
    return tuple(
        KnownError.model_validate_json(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip()
    )


@functools.cache
def load_known_weights(path: Path = KNOWN_WEIGHTS_FILE) -> TfidfWeights | None:
    """The TF-IDF weights shipped with the known errors; None when absent (the index then fits its own)."""
    return TfidfWeights.load(path) if path.is_file() else None


def write_known_errors(
    entries: Sequence[KnownError],
    path: Path = KNOWN_ERRORS_FILE,
    weights_path: Path = KNOWN_WEIGHTS_FILE,
) -> None:
    """One JSON object a line, sorted by file, so a rebuild's diff shows only what changed; and the TF-IDF
    weights fitted on these entries (scikit-learn) beside them."""
    ordered = sorted(entries, key=lambda e: e.file)
    text = "".join(json.dumps(e.model_dump(), ensure_ascii=False, sort_keys=True) + "\n" for e in ordered)
    path.write_text(text, encoding="utf-8")
    weights_path.write_text(fit([e.document for e in ordered]).to_json(), encoding="utf-8")
