"""The weak-evidence tier: a category from generic cues when no error signature matched.

The crash rules (crash_rules/*.yaml) match the exact wording of known errors. A log in a wording nobody
collected (a newer release, a wrapper's own exception) matches none of them, yet usually still says what
kind of failure it is: out-of-memory words next to HBM or host-RAM words, a Mosaic/Pallas frame, a
deadline or heartbeat, "incompatible ... version", shape or dtype words in the exception. The cues
(`tpu_runtime/data/crash_cues.yaml`, plus the message families in `tpu_runtime/data/crash_cues/*.yaml`, whose
cues join the same categories) read only the log's error lines (plus the line after each, and for
`scope: any` cues every line, e.g. traceback frames), so progress output does not vote.

A category is given only when its cues clearly beat every other category's (`threshold`, `margin`), and
never when the log shows the process was only stopped by another one or the chip halted (the `veto`
patterns: those stay `unknown`, whose next steps fit them). A category's `suppresses` drops broader
categories whose cues its own explain; a cue's `overrides` does the same for one wording that states the
cause (e.g. "JAX only supports TPU VMs" over the missing-attribute error printed before it), and is applied
first, so the cause wins even over a category that would otherwise suppress it. A `last_resort` cue (a
wording a whole failure family shares, such as a request to set a launch flag, too broad to compete with a
specific cue) votes only when no ordinary cue of any category fired. The report says the category came from
weak evidence: a confidence of at most `max_confidence`, the cue labels in the cause.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.report import Category
from tpu_runtime.yaml_data import safe_load

__all__ = [
    "CUES_DIR",
    "CUES_FILE",
    "CueConfig",
    "WeakVote",
    "is_error_line",
    "load_cues",
    "merge_cue_files",
    "vetoed",
    "weak_vote",
]

CUES_FILE = Path(__file__).resolve().parents[1] / "data" / "crash_cues.yaml"
CUES_DIR = CUES_FILE.with_suffix("")
MAX_EVIDENCE = 6
_ERRORISH = re.compile(
    r"\b(?:error|fatal|failed|failure|exception|abort(?:ed)?|killed|panic|unable|cannot|could not|"
    r"couldn't|not supported|does not support|doesn't support|unsupported|not implemented|unimplemented|"
    r"invalid|incompatible|exceeded|"
    r"exhausted|timed out|timeout|mismatch|out of memory|crashed|already in use|too frequent)\b|"
    r"\*\*\* SIG[A-Z]+|(?-i:\b[A-Z][A-Z_]{3,}: )|Check failed|RET_CHECK|Traceback \(most recent|"
    r"\w+(?:Error|Exception|Exhausted)\b|terminate called|must be called (?:before|after)|"
    # jax/lax operand checks without an exception name: "dot_general requires ... to have the same shape"
    r"\brequires? .{0,120}\bto (?:have|be) the same\b|"
    # "no TPU found", "libtpu is not installed", "falling back to cpu": start-up failures worded as notices
    r"\bno (?:\S+ ){0,3}(?:found|available|detected)\b|\bnot (?:found|available|installed)\b|"
    r"fall(?:ing|s)? ?back to (?:the )?cpu|"
    # glog/absl severity E (error) and F (fatal) lines, with or without the date prefix of TF's logger
    r"(?-i:^\s*[EF]\d{4} \d\d:\d\d|\d: [EF] \S+\.(?:cc|h|inc):\d+\])",
    re.IGNORECASE,
)
# Source-file paths in an error line ("tensorflow/compiler/xla/xla_client/mesh_service.cc:294") name where the
# message was raised, not what failed, so error-scope cues read the line with them blanked out.
_SOURCE_PATH = re.compile(r"(?:[\w.+-]*/)+[\w.+-]+\.(?:cc|cpp|c|h|hpp|inc|py|pyx|so)\b(?::\d+)?")
# Two scores this close count as a tie (floating-point sums such as 0.5 - 0.4 are not exactly 0.1).
_EPSILON = 1e-9


class Cue(BaseModel):
    """A generic wording that leans towards a category; `label` says what it is, for the report."""

    label: str
    regex: str
    weight: float = Field(gt=0.0, le=0.6)
    line_also: str | None = Field(default=None, description="a regex the same line must also match")
    context: str | None = Field(default=None, description="a regex some line of the log must match")
    min_repeats: int = Field(
        default=1,
        ge=1,
        description="the least number of hit lines sharing the regex's `key` group (one function again)",
    )
    scope: Literal["error", "any"] = Field(default="error", description="error lines only, or every line")
    ignore_case: bool = True
    overrides: list[Category] = Field(
        default=[],
        description="categories this cue's wording explains when it fires (a stated cause over its symptoms)",
    )
    last_resort: bool = Field(
        default=False,
        description="counts only when no ordinary cue of any category fired (a family's broad wording)",
    )
    final: bool = Field(
        default=False,
        description="counts only when nothing else placed the log, not even a similar known error",
    )
    cause: str | None = Field(
        default=None,
        description="what the wording means, said instead of the category's paragraph if no sub-rule applied",
    )
    fix: str | None = Field(
        default=None, description="the fix said instead of the category's paragraph when no sub-rule applied"
    )
    title: str | None = Field(
        default=None, description="the crash's title when this cue decided, in place of the category's"
    )

    @functools.cached_property
    def compiled(self) -> tuple[re.Pattern[str], re.Pattern[str] | None, re.Pattern[str] | None]:
        flags = re.IGNORECASE if self.ignore_case else 0
        also = re.compile(self.line_also, flags) if self.line_also else None
        context = re.compile(self.context, flags) if self.context else None
        return re.compile(self.regex, flags), also, context


class CategoryCues(BaseModel):
    category: Category
    cues: list[Cue]
    suppresses: list[Category] = Field(
        default=[], description="broader categories whose cues this one's explain (VMEM words beat OOM words)"
    )


class CueConfig(BaseModel):
    threshold: float = Field(default=0.45, description="the least score that decides a category")
    margin: float = Field(default=0.1, description="how far the best must be ahead of the second")
    max_confidence: float = Field(default=0.6, le=0.6)
    per_extra_cue: float = Field(default=0.05, description="what each further agreeing cue adds")
    veto: list[str] = Field(default=[], description="lines that keep a log `unknown` (regexes)")
    categories: list[CategoryCues]

    @functools.cached_property
    def compiled_veto(self) -> list[re.Pattern[str]]:
        return [re.compile(v) for v in self.veto]


@dataclass(frozen=True)
class WeakVote:
    """The category the cues point to, how strongly, the lines behind it and the cues' labels."""

    category: Category
    score: float
    last_line: int
    evidence: list[str]
    labels: list[str]
    runner_up: Category | None
    by_location: bool = False  # from where the error was raised (crash_locations), not from words
    explained_by: Cue | None = None  # the first firing cue with its own cause, fix or title


@functools.cache
def load_cues(path: Path = CUES_FILE, families: Path | None = CUES_DIR) -> CueConfig:
    """The cue config of `path`, with the cues of each `families/*.yaml` file joined to their categories."""
    config = CueConfig.model_validate(safe_load(path.read_text(encoding="utf-8")))
    return merge_cue_files(config, families) if families is not None else config


def merge_cue_files(config: CueConfig, folder: Path) -> CueConfig:
    """The config with every file's cues (and suppressions) added to their categories.

    Why separate files: cues for new wording families grow without editing crash_cues.yaml; each file has
    its schema (`categories: [{category, cues, suppresses}]`). Raises ValueError for a label a category
    already has, so two files cannot silently shadow each other's cue."""
    groups = {g.category: g for g in config.categories}
    order = [g.category for g in config.categories]
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        raw = safe_load(path.read_text(encoding="utf-8")) or {}
        for entry in raw.get("categories", []):
            group = CategoryCues.model_validate(entry)
            old = groups.get(group.category)
            if old is None:
                groups[group.category] = group
                order.append(group.category)
                continue
            labels = {c.label for c in old.cues}
            clash = [c.label for c in group.cues if c.label in labels]
            if clash:
                raise ValueError(f"{path}: cue labels already used for {group.category}: {', '.join(clash)}")
            suppresses = list(dict.fromkeys([*old.suppresses, *group.suppresses]))
            groups[group.category] = old.model_copy(
                update={"cues": [*old.cues, *group.cues], "suppresses": suppresses}
            )
    return config.model_copy(update={"categories": [groups[c] for c in order]})


def is_error_line(line: str) -> bool:
    """Whether a line reads as an error (the cues' wide net: exceptions, failures, refusals, glog E/F)."""
    return _ERRORISH.search(line) is not None


def _error_indexes(lines: Sequence[str]) -> set[int]:
    """The error lines and the line after each (an exception's message often continues there)."""
    found: set[int] = set()
    for i, line in enumerate(lines):
        if _ERRORISH.search(line):
            found.add(i)
            if i + 1 < len(lines):
                found.add(i + 1)
    return found


def vetoed(lines: Sequence[str], config: CueConfig | None = None) -> bool:
    """Whether a `veto` line keeps the log `unknown` (stopped by another process, a halted chip)."""
    config = load_cues() if config is None else config
    return any(v.search(line) for v in config.compiled_veto for line in lines)


def weak_vote(lines: Sequence[str], config: CueConfig | None = None, final: bool = False) -> WeakVote | None:
    """The category generic cues clearly point to, or None (no cue, a tie, or a veto line).

    The ordinary cues vote first; the `last_resort` cues (words a failure family shares whatever the
    library, too broad to compete with a specific cue) vote only when no ordinary cue fired at all. With
    `final`, only the `final` cues vote: the caller asks them once nothing else, not even a similar known
    error, placed the log (crashlog.diagnose_log)."""
    config = load_cues() if config is None else config
    if vetoed(lines, config):
        return None
    errors = _error_indexes(lines)
    masked = {i: _SOURCE_PATH.sub(" ", lines[i]) for i in errors}
    fired, overridden = _scores(config, lines, masked, tier="ordinary")
    if not fired:
        fired, overridden = _scores(config, lines, masked, tier="last_resort")
    if final:  # only for a log no cue spoke about: a tie between cues is evidence, not silence
        if fired:
            return None
        fired, overridden = _scores(config, lines, masked, tier="final")
    scored = [s for s in fired if s[2] not in overridden]
    present = {s[2] for s in scored}
    dropped = {c for g in config.categories if g.category in present for c in g.suppresses}
    scored = [s for s in scored if s[2] not in dropped]
    if not scored:
        return None
    scored.sort(key=lambda s: (s[0], s[1]), reverse=True)
    best = scored[0]
    second = scored[1] if len(scored) > 1 else None
    if best[0] < config.threshold - _EPSILON or (
        second is not None and best[0] - second[0] < config.margin - _EPSILON
    ):
        return None
    return WeakVote(
        category=best[2],
        score=round(best[0], 2),
        last_line=best[1],
        evidence=best[4],
        labels=best[3],
        runner_up=second[2] if second is not None else None,
        explained_by=best[5],
    )


def _repeated(hits: list[int], lines: Sequence[str], regex: re.Pattern[str], least: int) -> list[int]:
    """The hit lines whose `key` group is shared by at least `least` hits: a log that compiles many
    functions once each (every program's start-up) is no function compiled again and again."""
    by_key: dict[str, list[int]] = {}
    for i in hits:
        found = regex.search(lines[i])
        key = found.groupdict().get("key") if found else None
        if key:
            by_key.setdefault(key, []).append(i)
    return sorted(i for group in by_key.values() if len(group) >= least for i in group)


# (score, last line, category, labels, evidence lines, the first firing cue with its own cause or title)
_Scored = tuple[float, int, Category, list[str], list[str], Cue | None]


Tier = Literal["ordinary", "last_resort", "final"]


def _tier(cue: Cue) -> Tier:
    return "final" if cue.final else "last_resort" if cue.last_resort else "ordinary"


def _scores(
    config: CueConfig, lines: Sequence[str], masked: dict[int, str], tier: Tier
) -> tuple[list[_Scored], set[Category]]:
    """Each category's score from its cues of one tier (ordinary, `last_resort` or `final`), and the
    categories that tier's firing cues override (each score is a `_Scored`).

    Two categories whose firing cues override each other (a setting named as the remedy of a refusal that
    also reads as a missing feature) are settled by the heavier of the two overriding cues; at equal weight
    both are dropped, as before (gm58)."""
    scored: list[_Scored] = []
    overrides: dict[tuple[Category, Category], float] = {}  # (by, over) -> heaviest overriding cue's weight
    for group in config.categories:
        weights: list[float] = []
        labels: list[str] = []
        evidence: dict[str, None] = {}
        explained: Cue | None = None
        last = -1
        for cue in group.cues:
            if _tier(cue) != tier:
                continue
            regex, also, context = cue.compiled
            if context is not None and not any(context.search(line) for line in lines):
                continue
            candidates = list(enumerate(lines)) if cue.scope == "any" else sorted(masked.items())
            hits = [i for i, line in candidates if regex.search(line) and (also is None or also.search(line))]
            if cue.min_repeats > 1:
                hits = _repeated(hits, lines, regex, cue.min_repeats)
            if not hits:
                continue
            weights.append(cue.weight)
            labels.append(cue.label)
            if explained is None and (cue.cause is not None or cue.title is not None):
                explained = cue
            for over in cue.overrides:
                key = (group.category, over)
                overrides[key] = max(overrides.get(key, 0.0), cue.weight)
            last = max(last, hits[-1])
            for i in hits[-2:]:
                text = lines[i].strip()
                evidence.setdefault(text if len(text) <= 400 else text[:399] + "…", None)
        if weights:
            score = max(weights) + config.per_extra_cue * (len(weights) - 1)
            score = min(config.max_confidence, score)
            scored.append((score, last, group.category, labels, list(evidence)[:MAX_EVIDENCE], explained))
    overridden = {
        over
        for (by, over), weight in overrides.items()
        if overrides.get((over, by), 0.0) <= weight + _EPSILON
    }
    return scored, overridden
