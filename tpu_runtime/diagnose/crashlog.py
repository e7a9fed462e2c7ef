"""Crash-log triage: which failure a log shows, the facts it holds, and what to change.

The rules are data: `tpu_runtime/data/crash_rules/<category>.yaml`, one file per category. Each rule
lists regex `patterns` (any match votes for the category, with a `weight` saying how specific it is),
`facts` extractors (regexes with named groups; sizes are normalised to bytes), `summary` templates, and
the `cause`, `fix` and `citations` shown to the user; a citation's `kb` names the fact of the team's
knowledge base it stands on (a `tpu-err:*` section of knowledge/errors.md), whose sentence on what the
error means is read from that file when a log is diagnosed, so the wording is written once, in the
knowledge base. This module only runs the rules: the category with the
strongest match wins (ties: the rule's `priority`, then the match nearest the end of the log, where
the fatal error usually is). A log no rule matches is `unknown`, never a guess; it still gets the
generic facts every log gets here: the exception, XLA error code and status, TPU generation, and the
user's source line (the innermost traceback frame outside site-packages).
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, field_validator

from tpu_runtime.diagnose.report import CATEGORIES, Category, Citation, CrashDiagnosis
from tpu_runtime.diagnose.units import parse_size

__all__ = [
    "RULES_DIR",
    "CrashRule",
    "KbFact",
    "diagnose_log",
    "load_error_glossary",
    "load_rules",
    "user_frame",
    "with_kb_text",
]

RULES_DIR = Path(__file__).resolve().parents[1] / "data" / "crash_rules"
ERRORS_SHEET = "errors.md"
MAX_EVIDENCE = 8
MAX_LINE = 400

UNKNOWN_CAUSE = (
    "None of the known TPU failure signatures matched this log. The facts below are what could be read "
    "from it; the category is left 'unknown' rather than guessed."
)
UNKNOWN_FIX = (
    "Look at the exception and the source line below. If the log was cut short, capture the whole "
    "output (stdout and stderr, e.g. `python train.py 2>&1 | tee run.log`) and run diagnose again."
)

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------ the rules


class PatternSpec(BaseModel):
    """One regex that votes for a category when it matches a line."""

    regex: str
    weight: float = Field(default=0.9, gt=0.0, le=1.0, description="how specific a match is")
    min_count: int = Field(default=1, ge=1, description="matching lines needed (e.g. a recompile storm)")
    ignore_case: bool = False

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, re.IGNORECASE if self.ignore_case else 0)


class FactSpec(BaseModel):
    """A regex whose named groups become facts.

    kind: `first`/`last` take the groups of the first/last matching line; `all` collects a list under
    `name`; `count` counts matching lines into `name`; `count_by` counts per value of the group `key`
    into `name`; `records` starts a record (a dict) at each match and fills it from the `fields`
    regexes on the lines that follow, up to the next start, into a list under `name`.
    Groups listed in `bytes` are sizes and become `<group>_bytes` integers; those in `ints` integers.
    A group named `shape` holding an HLO shape (`f32[8,128]{1,0}`) also yields `dtype` and `dims`.
    """

    kind: Literal["first", "last", "all", "count", "count_by", "records"] = "first"
    regex: str
    name: str | None = None
    fields: list[str] = []
    bytes: list[str] = []
    ints: list[str] = []
    limit: int = Field(default=10, ge=1)
    ignore_case: bool = False

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, re.IGNORECASE if self.ignore_case else 0)

    @functools.cached_property
    def compiled_fields(self) -> list[re.Pattern[str]]:
        return [re.compile(f, re.IGNORECASE if self.ignore_case else 0) for f in self.fields]


class CrashRule(BaseModel):
    category: Category
    title: str
    priority: int = Field(default=0, description="breaks ties between equally strong matches")
    patterns: list[PatternSpec]
    facts: list[FactSpec] = []
    summary: list[str] = Field(default=[], description="templates over facts; the first complete one is used")
    cause: str
    fix: str
    citations: list[Citation]

    @field_validator("citations")
    @classmethod
    def _needs_a_source(cls, value: list[Citation]) -> list[Citation]:
        if not value or not all(c.url.startswith("https://") for c in value):
            raise ValueError("each rule needs at least one https citation")
        return value


@functools.cache
def load_rules(folder: Path = RULES_DIR) -> tuple[CrashRule, ...]:
    """Every `<category>.yaml` in the rules folder, validated; the file name must be the category."""
    rules: list[CrashRule] = []
    for path in sorted(folder.glob("*.yaml")):
        rule = CrashRule.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
        if rule.category != path.stem or rule.category == "unknown":
            raise ValueError(f"{path}: category {rule.category!r} does not match the file name")
        rules.append(rule)
    missing = set(CATEGORIES) - {"unknown"} - {r.category for r in rules}
    if missing:
        raise ValueError(f"{folder}: no rule file for {', '.join(sorted(missing))}")
    return tuple(rules)


# ----------------------------------------------------------------------------------------- matching


@dataclass
class _Vote:
    rule: CrashRule
    score: float
    last_line: int
    evidence: list[str]


def diagnose_log(text: str, source: str, rules: Sequence[CrashRule] | None = None) -> CrashDiagnosis:
    """Classify one log's text and pull out its facts."""
    rules = load_rules() if rules is None else rules
    lines = text.splitlines()
    votes = [v for v in (_vote(rule, lines) for rule in rules) if v is not None]
    facts = generic_facts(lines)
    if not votes:
        return CrashDiagnosis(
            source=source,
            category="unknown",
            title="No known failure signature",
            summary=_unknown_summary(facts),
            facts=facts,
            cause=UNKNOWN_CAUSE,
            fix=UNKNOWN_FIX,
            citations=[],
            evidence=_error_lines(lines),
            confidence=0.0,
            lines=len(lines),
        )
    votes.sort(key=lambda v: (v.score, v.rule.priority, v.last_line), reverse=True)
    best = votes[0]
    rule_facts = extract_facts(best.rule.facts, lines)
    merged = {**facts, **rule_facts}
    return CrashDiagnosis(
        source=source,
        category=best.rule.category,
        title=best.rule.title,
        summary=render_summary(best.rule.summary, merged),
        facts=merged,
        cause=best.rule.cause.strip(),
        fix=best.rule.fix.strip(),
        citations=with_kb_text(best.rule.citations),
        evidence=best.evidence,
        confidence=round(best.score, 2),
        other_matches=[v.rule.category for v in votes[1:]],
        lines=len(lines),
    )


def _vote(rule: CrashRule, lines: Sequence[str]) -> _Vote | None:
    score = 0.0
    hits = 0
    last = -1
    evidence: dict[str, None] = {}
    for pattern in rule.patterns:
        matched = [i for i, line in enumerate(lines) if pattern.compiled.search(line)]
        if len(matched) < pattern.min_count:
            continue
        hits += 1
        score = max(score, pattern.weight)
        last = max(last, matched[-1])
        for i in matched[:3] + matched[-1:]:
            evidence.setdefault(_clip(lines[i].strip()), None)
    if hits == 0:
        return None
    # Each further pattern that agrees adds a little certainty, never past 0.99.
    score = min(0.99, score + 0.03 * (hits - 1))
    return _Vote(rule, score, last, list(evidence)[:MAX_EVIDENCE])


# ------------------------------------------------------------------------- knowledge-base citations

_KB_HEADING = re.compile(r"^## (?P<id>tpu-err:[a-z0-9-]+)\b")
_KB_FACT = re.compile(
    r"^- (?:(?P<kind>[A-Z][A-Za-z ()]*?): )?(?P<text>.+?)\s*"
    r"\(\[source\]\((?P<url>https://[^)\s]+)\)[^()]*\)\s*$"
)
KB_PREFERRED = ("Meaning", "Symptom")
"""Which fact of a section a citation carries: what the error means, else its symptom, else the first."""


@dataclass(frozen=True)
class KbFact:
    """The sentence of one `tpu-err:*` section that a crash citation quotes, and the URL it restates."""

    kb: str
    text: str
    source: str


@functools.cache
def load_error_glossary(path: Path | None = None) -> dict[str, KbFact]:
    """Each `## tpu-err:*` section of knowledge/errors.md -> its sentence on what the error means.

    Reads the team's fact sheet itself (no index, no network): the sheet is small and its format is fixed
    (one bullet per fact, ending in `([source](URL), checked DATE)`; see knowledge/README.md).
    """
    from tpu_runtime.resources import knowledge_dir

    sheet = path if path is not None else knowledge_dir() / ERRORS_SHEET
    sections: dict[str, list[tuple[str, str, str]]] = {}
    current: str | None = None
    for line in sheet.read_text(encoding="utf-8").splitlines():
        heading = _KB_HEADING.match(line)
        if heading is not None:
            current = heading["id"]
            sections[current] = []
        elif line.startswith("#"):
            current = None
        elif current is not None:
            fact = _KB_FACT.match(line)
            if fact is not None:
                kind, text = fact["kind"] or "", fact["text"].strip()
                if kind:  # "Meaning: the program ..." -> "The program ..."
                    text = text[:1].upper() + text[1:]
                sections[current].append((kind, text, fact["url"]))
    glossary: dict[str, KbFact] = {}
    for kb, facts in sections.items():
        preferred = [f for kind in KB_PREFERRED for f in facts if f[0] == kind]
        if facts:
            _, text, url = (preferred or facts)[0]
            glossary[kb] = KbFact(kb=kb, text=text, source=url)
    return glossary


def with_kb_text(
    citations: Sequence[Citation], glossary: Mapping[str, KbFact] | None = None
) -> list[Citation]:
    """The citations with each `kb` id's sentence and its source filled in from the error glossary.

    A glossary that cannot be read, or an id it lacks, leaves the citation as the rule wrote it (label,
    URL and id) and logs why: the diagnosis itself never fails over a citation.
    """
    if not any(c.kb for c in citations):
        return list(citations)
    if glossary is None:
        try:
            glossary = load_error_glossary()
        except OSError as exc:
            logger.warning("cannot read the error glossary (%s); crash citations keep their ids only", exc)
            return list(citations)
    resolved: list[Citation] = []
    for citation in citations:
        fact = glossary.get(citation.kb) if citation.kb else None
        if fact is None:
            if citation.kb:
                logger.warning("knowledge/%s has no section %s", ERRORS_SHEET, citation.kb)
            resolved.append(citation)
            continue
        resolved.append(citation.model_copy(update={"kb_text": fact.text, "kb_source": fact.source}))
    return resolved


# -------------------------------------------------------------------------------------------- facts


def extract_facts(specs: Iterable[FactSpec], lines: Sequence[str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    for spec in specs:
        if spec.kind == "records":
            records = _records(spec, lines)
            if records:
                facts[spec.name or "records"] = records
            continue
        matches = [m for m in (spec.compiled.search(line) for line in lines) if m is not None]
        if not matches:
            continue
        if spec.kind in ("first", "last"):
            # An earlier extractor's value wins: rules list the most specific regex first.
            for key, value in _groups(spec, matches[0 if spec.kind == "first" else -1]).items():
                facts.setdefault(key, value)
        elif spec.kind == "all":
            values = [_groups(spec, m) for m in matches[: spec.limit]]
            facts[spec.name or "matches"] = [v for v in values if v]
        elif spec.kind == "count":
            facts[spec.name or "count"] = len(matches)
        elif spec.kind == "count_by":
            counts = Counter(m["key"] for m in matches if m["key"])
            facts[spec.name or "counts"] = dict(counts.most_common(spec.limit))
    return facts


def _records(spec: FactSpec, lines: Sequence[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in lines:
        start = spec.compiled.search(line)
        if start is not None:
            if len(records) >= spec.limit:
                break
            current = _groups(spec, start)
            records.append(current)
            continue
        if current is None:
            continue
        for field in spec.compiled_fields:
            m = field.search(line)
            if m is not None:
                for key, value in _groups(spec, m).items():
                    current.setdefault(key, value)
    return records


def _groups(spec: FactSpec, m: re.Match[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in m.groupdict().items():
        if value is None or key == "key":
            continue
        value = value.strip()
        if key in spec.bytes:
            size = parse_size(value)
            if size is not None:
                out[key if key.endswith("_bytes") else f"{key}_bytes"] = size
            continue
        if key in spec.ints:
            try:
                out[key] = int(value)
            except ValueError:
                continue
            continue
        if key.endswith("shape") and "block_size=" in value:
            value = "(" + ", ".join(_BLOCK_SIZE.findall(value)) + ")"  # Pallas' Blocked(block_size=8)
        out[key] = _clip(value, 300)
        if key == "shape":
            out.update(split_hlo_shape(value))
    return out


_BLOCK_SIZE = re.compile(r"block_size=(\d+)")


_HLO_SHAPE = re.compile(r"^(?P<dtype>[a-z]+\d*(?:e\d+m\d+\w*)?)\[(?P<dims>[\d,\s]*)\]")


def split_hlo_shape(shape: str) -> dict[str, Any]:
    """`f32[32,4096,4096]{1,2,0:T(8,128)}` -> dtype 'f32', dims [32, 4096, 4096]."""
    m = _HLO_SHAPE.match(shape.strip())
    if m is None:
        return {}
    dims = [int(d) for d in m["dims"].replace(" ", "").split(",") if d]
    return {"dtype": m["dtype"], "dims": dims}


def render_summary(templates: Sequence[str], facts: dict[str, Any]) -> str:
    """The first template whose placeholders all have facts; sizes print in binary units."""
    shown = {k: _show(k, v) for k, v in facts.items() if isinstance(v, str | int | float)}
    for template in templates:
        names = re.findall(r"{(\w+)}", template)
        if all(n in shown for n in names):
            return _clip(template.format(**shown), 240)
    return ""


def _show(key: str, value: str | int | float) -> str:
    if key.endswith("_bytes") and isinstance(value, int):
        return fmt_size(value)
    return str(value)


def fmt_size(n: int) -> str:
    for unit, scale in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


# ----------------------------------------------------------------------------- facts every log gets

_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+)(?:,? in (?P<func>.+?))?\s*$')
_TRACEBACK = re.compile(r"Traceback \(most recent call last\):")
_STACK_FIRST = re.compile(r"\(most recent call first\):")
_FATAL = re.compile(
    r"Fatal Python error: (?P<fatal>.+)"
    r"|^\s*(?P<signal>Segmentation fault|Bus error|Aborted|Illegal instruction)(?: \(core dumped\))?\s*$"
)
_EXCEPTION = re.compile(
    r"^(?:.*?\]\s+|.*?:\s+)?(?P<type>(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt|"
    r"Unsupported|Failure|Hit))(?::\s*(?P<message>.*))?$"
)
_STATUS = re.compile(
    r"\b(?P<status>RESOURCE_EXHAUSTED|INTERNAL|INVALID_ARGUMENT|FAILED_PRECONDITION|UNIMPLEMENTED|"
    r"DEADLINE_EXCEEDED|UNAVAILABLE|ABORTED|NOT_FOUND|UNKNOWN|PERMISSION_DENIED|CANCELLED|OUT_OF_RANGE|"
    r"DATA_LOSS|ALREADY_EXISTS):"
)
_ERROR_CODE = re.compile(r"\b(?P<code>E\d{4}): (?P<name>[A-Z]\w+)")
_XLA_SOURCE = re.compile(r'source_file="(?P<file>[^"]+)" source_line=(?P<line>\d+)')
_MLIR_LOC = re.compile(r'\("(?P<file>[^"]+\.py)":(?P<line>\d+):\d+\)')
_GENERATION = re.compile(
    r"\b(?:TPU ?v\d[a-z]*(?: ?lite)?|TPU7x|tpu7x|v\d(?:e|p|litepod)(?:-\d+)?|v\d-\d+|Trillium|Ironwood|"
    r"tpu-v\d[a-z]*(?:-lite)?-(?:podslice|slice))\b",
    re.I,
)
_FRAMEWORKS = (
    ("torch_tpu", re.compile(r"torch_tpu|TorchTPU|torch\.tpu")),
    ("torch_xla", re.compile(r"torch_xla|PJRT_DEVICE|XLA_USE_BF16")),
    ("vllm", re.compile(r"\bvllm\b|VllmWorker|EngineCore", re.I)),
    ("jax", re.compile(r"\bjax(?:lib)?\b|XlaRuntimeError|JaxRuntimeError|pallas")),
    ("torch", re.compile(r"\btorch\b")),
)
_NOT_USER = ("site-packages", "dist-packages", "/lib/python3", "<frozen", "/usr/lib/python")


def user_frame(path: str) -> bool:
    """A traceback frame in the user's code: not in an installed package or the standard library."""
    return not any(marker in path for marker in _NOT_USER)


def generic_facts(lines: Sequence[str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    facts.update(_source_facts(lines))
    for line in reversed(lines):
        m = _EXCEPTION.match(line.strip())
        if m is not None and not line.lstrip().startswith("File "):
            facts["exception"] = m["type"]
            if m["message"]:
                facts["message"] = _clip(m["message"].strip(), 300)
            break
    for pattern, key in ((_STATUS, "status"), (_ERROR_CODE, "xla_error_code")):
        for line in reversed(lines):
            m = pattern.search(line)
            if m is not None:
                facts[key] = m[1] if key == "status" else f"{m['code']} {m['name']}"
                break
    for line in lines:
        m = _FATAL.search(line)
        if m is not None:
            facts["fatal_error"] = (m["fatal"] or m["signal"]).strip()
            break
    generation = _generation(lines)
    if generation:
        facts["tpu_generation"] = generation
    frameworks = [name for name, pattern in _FRAMEWORKS if any(pattern.search(line) for line in lines)]
    if frameworks:
        facts["frameworks"] = frameworks
    return facts


def _source_facts(lines: Sequence[str]) -> dict[str, Any]:
    """The innermost user frame of the last traceback that has one; else XLA/MLIR source metadata.

    Python tracebacks list the innermost frame last; faulthandler dumps ("most recent call first") list
    it first.
    """
    blocks: list[tuple[bool, list[tuple[int, re.Match[str]]]]] = [(False, [])]
    for i, line in enumerate(lines):
        if _TRACEBACK.search(line):
            blocks.append((False, []))
            continue
        if _STACK_FIRST.search(line):
            blocks.append((True, []))
            continue
        m = _FRAME.search(line)
        if m is not None:
            blocks[-1][1].append((i, m))
    facts: dict[str, Any] = {}
    last_frame = max((frames[-1][0] for _, frames in blocks if frames), default=None)
    if last_frame is not None and not _has_exception_after(lines, last_frame):
        facts["log_cut_short"] = True
    for innermost_first, frames in reversed(blocks):
        users = [(i, m) for i, m in frames if user_frame(m["file"])]
        if not users:
            continue
        i, m = users[0] if innermost_first else users[-1]
        facts.update(source_file=m["file"], source_line=int(m["line"]))
        if m["func"]:
            facts["source_function"] = m["func"].strip()
        code = _code_after(lines, i, m.start())
        if code:
            facts["source_code"] = code
        return facts
    for pattern in (_XLA_SOURCE, _MLIR_LOC):
        for line in lines:
            for found in pattern.finditer(line):
                if user_frame(found["file"]):
                    facts.update(source_file=found["file"], source_line=int(found["line"]))
                    return facts
    return facts


def _has_exception_after(lines: Sequence[str], index: int) -> bool:
    for line in lines[index + 1 : index + 40]:
        stripped = line.strip()
        if _FRAME.search(stripped):
            return True  # another frame follows (a chained traceback): not the end
        if _EXCEPTION.match(stripped) or _STATUS.search(stripped):
            return True
    return False


def _code_after(lines: Sequence[str], index: int, column: int) -> str:
    """The source line Python prints under a frame, with the log prefix of the frame line removed."""
    if index + 1 >= len(lines):
        return ""
    prefix = lines[index][:column].rstrip()
    nxt = lines[index + 1]
    if prefix and nxt.startswith(prefix):
        nxt = nxt[len(prefix) :]
    code = nxt.strip()
    if not code or _FRAME.search(code) or set(code) <= set("^~ "):
        return ""
    return _clip(code, 200)


def _generation(lines: Sequence[str]) -> str | None:
    from tpu_runtime.chips import UnknownChipError, get_chip

    for line in lines:
        for m in _GENERATION.finditer(line):
            try:
                return get_chip(m.group(0)).name
            except UnknownChipError:
                continue
    return None


def _error_lines(lines: Sequence[str]) -> list[str]:
    """For an unknown failure: the lines that look like errors, last ones first."""
    picked: dict[str, None] = {}
    for line in reversed(lines):
        s = line.strip()
        if s and (
            _EXCEPTION.match(s) or _STATUS.search(s) or re.search(r"\b(?:error|fatal|failed)\b", s, re.I)
        ):
            picked.setdefault(_clip(s), None)
        if len(picked) >= MAX_EVIDENCE:
            break
    return list(picked)


def _unknown_summary(facts: dict[str, Any]) -> str:
    parts = []
    if "exception" in facts:
        parts.append(f"{facts['exception']}: {facts.get('message', '')}".rstrip(": "))
    elif "fatal_error" in facts:
        parts.append(str(facts["fatal_error"]))
    if "source_file" in facts:
        parts.append(f"at {facts['source_file']}:{facts['source_line']}")
    return " ".join(parts)


def _clip(s: str, limit: int = MAX_LINE) -> str:
    return s if len(s) <= limit else s[: limit - 1] + "…"
