"""Crash-log triage: which failure a log shows, the facts it holds, and a fix that fits those facts.

The rules are data: `tpu_runtime/data/crash_rules/<category>.yaml`, one file per category. Each rule
lists regex `patterns` (any match votes for the category, with a `weight` saying how specific it is),
`facts` extractors (regexes with named groups; sizes are normalised to bytes), `summary` templates, the
category's `cause`, `fix` and `citations`, and `fixes`: cause-specific sub-rules. A sub-rule applies
when its `when` conditions hold on the facts (present, at least / at most a number, matching a regex)
or on a log line; its `fix` is a template that names the evidence (`{top_shape}`, `{holder_pid}`,
`{missing_tasks}`), so the advice fits this log rather than the category. The first sub-rule whose
conditions hold and whose template can be filled wins; it keeps the remedy the error message states itself
when that names something the sub-rule's fix does not, and the one-sentence `addendum` of a fallback whose
named facts (a padded shape, a size to round up to) it does not quote. When none does, the remedy the error
message states itself is used (crash_suggestion, `<category>/message_suggestion`), then the `from_facts_*`
sub-rules (the category's main remedy named with this log's facts, among them the settings the log names
itself: crash_setting_facts), then the values a refusal lists as accepted (`<category>/message_choices`),
then a condition the check states without advice words (two settings it compared, what it expected, what
one setting must be: `<category>/message_suggestion` too), and the category's paragraph last. What one
setting must be also comes before the library catch-all (`from_facts_library_check`), whose advice to
upgrade the library fits a probe of the environment, not a refused value of the library's own setting; for a
start-up failure the catch-all also gives way to the condition of the raising check where that check is a
mined raise site (crash_raise_guard, `runtime_init_failure/raise_guard`).
A citation's `kb` names the fact of the team's knowledge base it stands on (a `tpu-err:*`
section of knowledge/errors.md), read from that file when a log is diagnosed.

This module only runs the rules: the category with the strongest match wins (ties: the rule's
`priority`, then the match nearest the end of the log, where the fatal error usually is), except that a
matching pattern's `overrides` first drops the categories whose wrapper wording it explains. Lines are
matched without the prefixes launchers add (logtext.strip_prefix), after ANSI codes and carriage
returns are gone. A log no rule matches goes to the weak-evidence tier (crash_cues): generic cues may
still decide its category, at a confidence of at most 0.6 and saying so in the cause, and where no cue
decides, the module that raised the message may (crash_locations: a raise site mined from the installed
libraries whose template the line matches); otherwise it is `unknown`, with the error lines found, the
frameworks and versions seen, and the next diagnostic step (crash_next_steps), unless a similar known error
is close enough to lend its category and remedy (similar_errors, sub-rule `<category>/similar_known_error`).
That also names the remedy of a classified log no sub-rule, suggestion or fallback fixed (only the
category's paragraph applied), when its closest known error has the same category. Where neither does, a fact
of the team's sheets that the log's error lines strongly support leads the fix (crash_sheet_facts,
`<category>/sheet_fact`; an `unknown` log keeps its next steps after it).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tpu_runtime.diagnose.crash_cues import WeakVote, vetoed, weak_vote
from tpu_runtime.diagnose.crash_error_codes import XlaCodeHit, find_xla_error_code
from tpu_runtime.diagnose.crash_facts import (
    clip,
    derive_facts,
    extract_facts,
    generic_facts,
    render_summary,
    render_template,
    user_frame,
)
from tpu_runtime.diagnose.crash_fix_packs import PACKS_DIR, merge_fix_packs
from tpu_runtime.diagnose.crash_locations import location_vote
from tpu_runtime.diagnose.crash_specs import (
    FALLBACK_PREFIX,
    CrashRule,
    FixCondition,
    PatternSpec,
    SubRule,
)
from tpu_runtime.diagnose.crash_suggestion import (
    SETTING_KINDS,
    Suggestion,
    choices_fix,
    find_suggestions,
    stated_addendum,
    suggestion_addendum,
    suggestion_fix,
)
from tpu_runtime.diagnose.logtext import focus, normalise, strip_prefix
from tpu_runtime.diagnose.report import CATEGORIES, Category, Citation, CrashDiagnosis, CrashEvidence
from tpu_runtime.yaml_data import safe_load

if TYPE_CHECKING:
    from tpu_runtime.diagnose.category_model import CategoryModel
    from tpu_runtime.diagnose.crash_sheet_facts import SheetFacts
    from tpu_runtime.diagnose.similar_errors import SimilarErrors

__all__ = [
    "RULES_DIR",
    "CrashRule",
    "KbFact",
    "SubRule",
    "diagnose_log",
    "load_error_glossary",
    "load_rules",
    "signature",
    "user_frame",
    "with_kb_text",
]

RULES_DIR = Path(__file__).resolve().parents[1] / "data" / "crash_rules"
ERRORS_SHEET = "errors.md"
MAX_EVIDENCE = 8
CODE_WEIGHT = 0.85
"""The vote an XLA error code (crash_error_codes) gives its category: above the generic patterns (0.6-0.7),
below the signatures of known wordings (0.9 and up), which may place a code's log more finely."""

logger = logging.getLogger(__name__)

# ------------------------------------------------------------------------------------------ the rules


@functools.cache
def load_rules(folder: Path = RULES_DIR, packs: Path | None = PACKS_DIR) -> tuple[CrashRule, ...]:
    """Every `<category>.yaml` in the rules folder, validated; the file name must be the category. The fix
    packs in `packs` (crash_fix_packs; None for none) add their `from_facts_*` fallbacks."""
    rules: list[CrashRule] = []
    for path in sorted(folder.glob("*.yaml")):
        rule = CrashRule.model_validate(safe_load(path.read_text(encoding="utf-8")))
        if rule.category != path.stem or rule.category == "unknown":
            raise ValueError(f"{path}: category {rule.category!r} does not match the file name")
        ids = [sub.id for sub in rule.fixes]
        if len(ids) != len(set(ids)):
            raise ValueError(f"{path}: sub-rule ids repeat")
        rules.append(rule)
    missing = set(CATEGORIES) - {"unknown"} - {r.category for r in rules}
    if missing:
        raise ValueError(f"{folder}: no rule file for {', '.join(sorted(missing))}")
    return merge_fix_packs(rules, packs) if packs is not None else tuple(rules)


def fallback_rules(rules: tuple[CrashRule, ...] | None = None) -> list[CrashRule]:
    """The rules with only their `from_facts_*` fallbacks as fixes: what the general mechanisms choose for
    a log no cause-specific sub-rule was written for (the corpus ablation and the fallback tests)."""
    return [
        r.model_copy(update={"fixes": [f for f in r.fixes if f.id.startswith(FALLBACK_PREFIX)]})
        for r in (load_rules() if rules is None else rules)
    ]


def without_signatures(rules: list[CrashRule] | tuple[CrashRule, ...]) -> list[CrashRule]:
    """The rules without their signature patterns and fact votes, so the weak cues alone place a log:
    with `fallback_rules()` first, nothing written for a known log is left (the corpus ablations)."""
    return [r.model_copy(update={"patterns": [], "fact_votes": []}) for r in rules]


# ----------------------------------------------------------------------------------------- matching


@dataclass
class _Vote:
    rule: CrashRule
    score: float
    last_line: int
    evidence: list[str]
    overrides: frozenset[str] = frozenset()  # categories its patterns explain (PatternSpec.overrides)


def log_lines(text: str) -> tuple[list[str], list[str]]:
    """The lines the rules read (prefixes removed) and notes on what was skipped in a huge log."""
    raw, note = focus(normalise(text).splitlines())
    return [strip_prefix(line) for line in raw], [note] if note else []


def signature(text: str, rules: Sequence[CrashRule] | None = None) -> tuple[Category, str] | None:
    """The category a text's strongest rule match names, with its first evidence line; None if none."""
    lines, _ = log_lines(text)
    rules = load_rules() if rules is None else rules
    code = find_xla_error_code(lines)
    votes = _without_overridden(
        _with_code_vote([v for v in (_vote(rule, lines) for rule in rules) if v], rules, lines, code)
    )
    if not votes:
        return None
    best = max(votes, key=lambda v: (v.score, v.rule.priority, v.last_line))
    return best.rule.category, best.evidence[0] if best.evidence else ""


def diagnose_log(
    text: str,
    source: str,
    rules: Sequence[CrashRule] | None = None,
    similar: SimilarErrors | None = None,
    sheets: SheetFacts | None = None,
    classifier: CategoryModel | bool = False,
) -> CrashDiagnosis:
    """Classify one log's text, pull out its facts and choose the fix that fits them.

    A log neither the rules nor the weak cues place, or one whose fix is only its category's paragraph, goes
    to the similar known errors (similar_errors; `similar` is the shipped set when None, `SimilarErrors(())`
    for none), which are loaded only then; one still unknown goes to the text classifier (category_model;
    `classifier` True for the shipped model, loaded only then, or a model; False, the default, asks none: the
    product's diagnose step asks it for the crash logs a user gives), which gives a category but not a remedy;
    one still left with the paragraph, or unknown, goes to the facts of the team's sheets (crash_sheet_facts;
    `sheets` is the shipped sheets when None, `SheetFacts(())` for none)."""
    from tpu_runtime.diagnose.crash_next_steps import unknown_diagnosis

    rules = load_rules() if rules is None else rules
    lines, notes = log_lines(text)
    code = find_xla_error_code(lines)  # read once: it votes, and may give or cite the fix
    votes = _without_overridden(
        _with_code_vote([v for v in (_vote(rule, lines) for rule in rules) if v], rules, lines, code)
    )
    facts = generic_facts(lines)
    if notes:
        facts["read_note"] = notes[0]
    weak: WeakVote | None = None
    if not votes:
        weak = weak_vote(lines) or (None if vetoed(lines) else location_vote(lines))
        by_category = {rule.category: rule for rule in rules}
        if weak is None or weak.category not in by_category:
            from tpu_runtime.diagnose.crash_sheet_facts import sheet_remedy
            from tpu_runtime.diagnose.similar_errors import similar_diagnosis

            crash = similar_diagnosis(unknown_diagnosis(source, lines, facts), lines, by_category, similar)
            if crash.category != "unknown":
                return crash
            weak = weak_vote(lines, final=True)  # the last word: what an uncaught check's exception means
            if weak is None or weak.category not in by_category:
                if classifier is not False:
                    from tpu_runtime.diagnose.category_model import classified_diagnosis

                    model = None if classifier is True else classifier
                    placed = classified_diagnosis(crash, text, by_category, model)
                    if placed.category != "unknown":
                        return placed
                return sheet_remedy(crash, lines, sheets)
        votes = [_Vote(by_category[weak.category], weak.score, weak.last_line, weak.evidence)]
    votes.sort(key=lambda v: (v.score, v.rule.priority, v.last_line), reverse=True)
    best = votes[0]
    merged = {**facts, **extract_facts(best.rule.facts, lines)}
    merged.update({k: v for k, v in derive_facts(merged, lines).items() if k not in merged})
    cause, fix, citations, fix_rule, reason = choose_fix(best.rule, merged, lines, code)
    own = weak.explained_by if weak is not None else None
    generic = (best.rule.category, f"{best.rule.category}/{LIBRARY_CHECK}")
    if own is not None and own.cause is not None and fix_rule in generic:
        # the cue's own meaning over the category's paragraph or the library catch-all (a probe's advice)
        cause, fix, fix_rule = own.cause.strip(), (own.fix or fix).strip(), best.rule.category
        reason = "no sub-rule applied; the cause and fix are the generic cue's own"
    if weak is not None:
        merged["evidence_tier"] = "weak"
        merged["weak_cues"] = weak.labels
        said = "generic cues" if not weak.by_location else "where the error was raised"
        if weak.by_location:
            merged["raise_location"] = weak.labels
        cause = (
            f"Weak evidence: no known error signature matched; {said} ({'; '.join(weak.labels)}) "
            f"point to {best.rule.title.lower()}, so treat this category as a lead to confirm. {cause}"
        )
        reason = f"category from {said} only (confidence {weak.score}); {reason}"
    crash = CrashDiagnosis(
        source=source,
        category=best.rule.category,
        title=own.title if own is not None and own.title else best.rule.title,
        summary=render_summary(best.rule.summary, merged),
        facts=merged,
        cause=cause,
        fix=fix,
        citations=with_kb_text(citations),
        evidence=CrashEvidence(lines=best.evidence, fix_rule=fix_rule, fix_reason=reason),
        confidence=round(best.score, 2),
        other_matches=[v.rule.category for v in votes[1:]],
        lines=len(lines),
    )
    if fix_rule == PROBE_CATCH_ALL:
        from tpu_runtime.diagnose.crash_raise_guard import guard_remedy

        # the start-up catch-all's advice (ask the runtime for the chips, upgrade the library) fits a
        # library's probe of the environment; where the check that raised is mined, its condition says what
        # it tested (a setting of the library's own, most often) and leads the fix, before the paragraph
        paragraph = crash.model_copy(
            update={
                "fix": best.rule.fix.strip(),
                "evidence": crash.evidence.model_copy(update={"fix_rule": best.rule.category}),
            }
        )
        guarded = guard_remedy(paragraph, lines)
        return guarded if "raise_guard" in guarded.facts else crash
    if "/" in fix_rule:
        return crash
    # only the category's paragraph applied: the condition of the check that raised the message when it says
    # which value gets past it; else a similar known error of the same category may name the remedy, else a
    # fact of the team's sheets that the error lines strongly support, else that condition alone
    from tpu_runtime.diagnose.crash_raise_guard import guard_remedy
    from tpu_runtime.diagnose.crash_sheet_facts import sheet_remedy
    from tpu_runtime.diagnose.similar_errors import similar_remedy

    # a raising check whose condition says which value gets past it is this log's own evidence, chosen before
    # a neighbour's remedy or a fact of the sheets, which are matched on wording alone
    guarded = guard_remedy(crash, lines)
    if guarded.facts.get("raise_guard", {}).get("passes"):
        return guarded
    crash = similar_remedy(crash, lines, similar)
    if "/" not in crash.evidence.fix_rule:
        crash = sheet_remedy(crash, lines, sheets)
    return crash if "/" in crash.evidence.fix_rule else guarded


FixChoice = tuple[str, str, list[Citation], str, str]
# the last-resort fallback of crash_fix_packs/library_checks.yaml: a library's own check raised the error
LIBRARY_CHECK = "from_facts_library_check"
# the start-up category's catch-all, whose advice fits a library's probe of the chips (diagnose_log tries this
# log's own evidence first, as for the category's paragraph)
PROBE_CATCH_ALL = f"runtime_init_failure/{LIBRARY_CHECK}"


def choose_fix(
    rule: CrashRule, facts: Mapping[str, Any], lines: Sequence[str], code: XlaCodeHit | None = None
) -> FixChoice:
    """(cause, fix, citations, sub-rule id, why): the first cause-specific sub-rule that applies; else the
    remedy the error message states itself; else a `from_facts_*` fallback naming this log's facts; else the
    fix of the XLA error code the log names (crash_error_codes); else the values the message lists as
    accepted; else the category's paragraph. A code the log names (`code`, crash_error_codes) is cited
    whichever fix is chosen."""
    cause, fix, citations, sub_id, why = _choose_fix(rule, facts, lines, code)
    cited = code is not None and any(c.url == code.entry.url for c in citations)
    if code is not None and code.entry.category in (None, rule.category) and not cited:
        citations = [Citation(label=f"XLA error {code.entry_code}", url=code.entry.url), *citations]
    return cause, fix, citations, sub_id, why


def _choose_fix(
    rule: CrashRule, facts: Mapping[str, Any], lines: Sequence[str], code: XlaCodeHit | None
) -> FixChoice:
    specific = [sub for sub in rule.fixes if not sub.id.startswith(FALLBACK_PREFIX)]
    fallbacks = [sub for sub in rule.fixes if sub.id.startswith(FALLBACK_PREFIX)]
    found = _first_sub_rule(rule, specific, facts, lines)
    suggestions = find_suggestions(lines)
    if found is not None:
        cause, fix, citations, sub_id, why = found
        fix += suggestion_addendum(fix, suggestions)
        return cause, fix + named_fact_addendum(fallbacks, facts, lines, fix), citations, sub_id, why
    # advice comes before the fallbacks; a condition the check states (two settings compared, what it
    # expected) comes after them and after the values it accepts: a fallback names this log's facts with the
    # category's remedy, and an accepted-values list names the values to use
    advice = [s for s in suggestions if s.kind == "advice"]
    if advice:
        return _suggestion_choice(rule, facts, advice)
    found = _first_sub_rule(rule, fallbacks, facts, lines) or _code_fix(rule, code)
    # the library catch-all ("upgrade the library whose check raised") is for a probe of the environment; a
    # check that states what one of the library's own settings must be, or refuses two of them together, names
    # the setting to change instead
    constrained = [s for s in suggestions if s.kind in SETTING_KINDS]
    if found is not None and constrained and found[3].endswith(f"/{LIBRARY_CHECK}"):
        return _suggestion_choice(rule, facts, constrained)
    if found is not None and found[3].split("/", 1)[-1].startswith(FALLBACK_PREFIX):
        cause, fix, citations, sub_id, why = found
        return cause, fix + stated_addendum(fix, suggestions), citations, sub_id, why
    if found is not None:
        return found
    accepted = facts.get("accepted_values")
    if isinstance(accepted, str) and accepted:
        return (
            rule.cause.strip(),
            choices_fix(accepted),
            list(rule.citations),
            f"{rule.category}/message_choices",
            "no sub-rule applied; the error message lists the values it accepts",
        )
    if suggestions:
        return _suggestion_choice(rule, facts, suggestions)
    return rule.cause.strip(), rule.fix.strip(), list(rule.citations), rule.category, "no sub-rule applied"


def _suggestion_choice(
    rule: CrashRule, facts: Mapping[str, Any], suggestions: Sequence[Suggestion]
) -> FixChoice:
    """The fix that quotes the message's own remedy (its advice, or the condition its check states)."""
    fix = suggestion_fix(suggestions)
    versions = facts.get("versions")
    if isinstance(versions, dict) and versions:
        seen = ", ".join(f"{name} {version}" for name, version in versions.items())
        fix += f" Versions this log shows: {seen}."
    lines_named = ", ".join(str(s.line + 1) for s in suggestions)
    return (
        rule.cause.strip(),
        fix,
        list(rule.citations),
        f"{rule.category}/message_suggestion",
        f"no cause-specific sub-rule applied; the error message states a remedy (line {lines_named})",
    )


_PLACEHOLDER_NAME = re.compile(r"\{([a-z_]+)\}")


def named_fact_addendum(
    fallbacks: Sequence[SubRule], facts: Mapping[str, Any], lines: Sequence[str], fix: str
) -> str:
    """The first applicable fallback's `addendum` sentence ("" when none), for a cause-specific `fix`.

    A cause-specific sub-rule is written for the logs it was collected from; a fact that names its own fix
    (the padded shape, the size to round up to) is this log's. The sentence is added only when the fix
    does not already name every fact value the sentence quotes (a sentence that quotes none: the sentence
    itself), so it never repeats the fix."""
    lowered = fix.lower()
    for sub in fallbacks:
        if sub.addendum is None or not sub.when.holds(facts, lines):
            continue
        text = render_template(" ".join(sub.addendum.split()), dict(facts))
        if text is None:
            continue
        names = _PLACEHOLDER_NAME.findall(sub.addendum)
        values = [str(facts[name]).lower() for name in names if name in facts] or [text.lower()]
        if all(re.search(rf"(?<![\w.]){re.escape(v)}(?![\w.])", lowered) for v in values):
            continue
        return f" {text}"
    return ""


def _first_sub_rule(
    rule: CrashRule, subs: Sequence[SubRule], facts: Mapping[str, Any], lines: Sequence[str]
) -> FixChoice | None:
    for sub in subs:
        if not sub.when.holds(facts, lines):
            continue
        fix = render_template(" ".join(sub.fix.split()), dict(facts))
        if fix is None:
            continue
        cause = render_template(" ".join(sub.cause.split()), dict(facts)) if sub.cause else None
        citations = [
            *sub.citations,
            *(c for c in rule.citations if c.url not in {s.url for s in sub.citations}),
        ]
        return (cause or rule.cause.strip(), fix, citations, f"{rule.category}/{sub.id}", sub.when.describe())
    return None


def _code_fix(rule: CrashRule, hit: XlaCodeHit | None) -> FixChoice | None:
    """The fix of the XLA error code the log names, when the code's category is this rule's (or the code
    has none, as a core halt): XLA's own page for the error, restated in data/xla_error_codes.yaml."""
    if hit is None or hit.entry.category not in (None, rule.category):
        return None
    fix = f"{' '.join(hit.entry.fix.split())} (XLA error {hit.code}: {hit.entry.url})"
    citations = [
        Citation(label=f"XLA error {hit.entry_code}", url=hit.entry.url),
        *(c for c in rule.citations if c.url != hit.entry.url),
    ]
    why = f"the log names XLA error {hit.code} (line {hit.line + 1}); its page's fix"
    return rule.cause.strip(), fix, citations, f"{rule.category}/xla_error_code", why


def _with_code_vote(
    votes: list[_Vote], rules: Sequence[CrashRule], lines: Sequence[str], hit: XlaCodeHit | None
) -> list[_Vote]:
    """The votes with the one the log's XLA error code (`hit`) gives its category (CODE_WEIGHT): a category
    that already has a vote gains as from one more agreeing pattern; otherwise the code's category joins."""
    if hit is None or hit.entry.category is None:
        return votes
    line = clip(lines[hit.line].strip())
    for vote in votes:
        if vote.rule.category == hit.entry.category:
            vote.score = min(0.99, max(vote.score + 0.03, CODE_WEIGHT))
            vote.last_line = max(vote.last_line, hit.line)
            if line not in vote.evidence:
                vote.evidence = [*vote.evidence, line][:MAX_EVIDENCE]
            return votes
    rule = next((r for r in rules if r.category == hit.entry.category), None)
    if rule is None:
        return votes
    return [*votes, _Vote(rule, CODE_WEIGHT, hit.line, [line])]


def _without_overridden(votes: list[_Vote]) -> list[_Vote]:
    """The votes less those of a category another vote's matching pattern explains (`overrides`): a cause
    stated inside a broader wrapper, such as an operation a chip generation lacks inside Mosaic's compile
    failure, whose own patterns reach the same capped score and would win the tie on priority (diag96)."""
    dropped = {c for v in votes for c in v.overrides if c != v.rule.category}
    kept = [v for v in votes if v.rule.category not in dropped]
    return kept or votes


def _vote(rule: CrashRule, lines: Sequence[str]) -> _Vote | None:
    score = 0.0
    hits = 0
    last = -1
    evidence: dict[str, None] = {}
    overrides: set[str] = set()
    for pattern in rule.patterns:
        matched = _matching_lines(pattern, lines)
        if len(matched) < pattern.min_count:
            continue
        hits += 1
        overrides.update(pattern.overrides)
        score = max(score, pattern.weight)
        last = max(last, matched[-1])
        for i in matched[:3] + matched[-1:]:
            evidence.setdefault(clip(lines[i].strip()), None)
    if rule.fact_votes:
        facts = extract_facts(rule.facts, lines)
        facts.update(derive_facts(facts, lines))
        for vote in rule.fact_votes:
            if vote.when.holds(facts, lines):
                hits += 1
                score = max(score, vote.weight)
                last = max(last, len(lines) - 1)
                quoted = _fact_lines(rule, vote.when, lines) or _derived_fact_lines(facts, vote.when)
                for line in quoted or [f"(facts: {vote.when.describe()})"]:
                    evidence.setdefault(line, None)
    if hits == 0:
        return None
    # Each further pattern that agrees adds a little certainty, never past 0.99.
    score = min(0.99, score + 0.03 * (hits - 1))
    return _Vote(rule, score, last, list(evidence)[:MAX_EVIDENCE], frozenset(overrides))


def _derived_fact_lines(facts: dict[str, Any], when: FixCondition) -> list[str]:
    """The log lines a derived fact was computed from, where its extractor kept them (`<name>_lines`)."""
    found: list[str] = []
    for name in when.facts:
        kept = facts.get(f"{name}_lines")
        if isinstance(kept, list):
            found.extend(clip(str(line)) for line in kept)
    return found[:3]


def _fact_lines(rule: CrashRule, when: FixCondition, lines: Sequence[str]) -> list[str]:
    """The log lines behind a fact vote: those the facts it tests were read from (`<name>_max` comes from
    the records named `<name>`), so the evidence quotes the log rather than the condition."""
    names = {n.removesuffix("_max") for n in [*when.facts, *when.min, *when.max, *when.fact_match]}
    specs = [f for f in rule.facts if f.name in names or names & set(f.compiled.groupindex)]
    found: list[str] = []
    for i, line in enumerate(lines):
        if any(spec.compiled.search(line) for spec in specs):
            found.append(clip(lines[i].strip()))
            if len(found) >= 3:
                break
    return found


def _matching_lines(pattern: PatternSpec, lines: Sequence[str]) -> list[int]:
    """Indexes of the lines the pattern matches; with a `key` group, those of its most frequent key."""
    if "key" not in pattern.compiled.groupindex:
        return [i for i, line in enumerate(lines) if pattern.compiled.search(line)]
    by_key: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        found = pattern.compiled.search(line)
        if found is not None:
            by_key.setdefault(found.group("key") or "", []).append(i)
    return max(by_key.values(), key=len, default=[])


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
