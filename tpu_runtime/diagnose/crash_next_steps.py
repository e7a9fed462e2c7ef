"""An `unknown` crash still helps: the error lines found, frameworks and versions seen, the next step.

No rule matched, so no cause is claimed. What the log does show (exception, error lines, native stack,
framework and package versions) goes into the facts, and the fix is the next diagnostic step that fits
it: which debug variable or dump flag to set for the framework in use, or where the real error is when
this process was only stopped by another. The steps are data (`tpu_runtime/data/crash_next_steps.yaml`).
When the error message states its own remedy (crash_suggestion), that comes first: the check's authors
wrote it for this failure, whatever family it belongs to.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.crash_facts import clip, render_template
from tpu_runtime.diagnose.crash_specs import FixCondition
from tpu_runtime.diagnose.crash_suggestion import find_suggestions
from tpu_runtime.diagnose.report import Citation, CrashDiagnosis, CrashEvidence
from tpu_runtime.yaml_data import safe_load

__all__ = ["NEXT_STEPS_FILE", "error_lines", "load_next_steps", "unknown_diagnosis"]

NEXT_STEPS_FILE = Path(__file__).resolve().parents[1] / "data" / "crash_next_steps.yaml"
MAX_EVIDENCE = 8
UNKNOWN_CAUSE = (
    "None of the known TPU failure signatures matched this log. The facts below are what could be read "
    "from it; the category is left 'unknown' rather than guessed."
)
_ERRORISH = re.compile(
    r"\b(?:error|fatal|failed|failure|exception|abort(?:ed)?|killed|panic)\b|\*\*\* SIG[A-Z]+|"
    r"\b[A-Z][A-Z_]+: |Check failed|RET_CHECK|Traceback \(most recent|\[errno \d+\]",
    re.IGNORECASE,
)


class NextStep(BaseModel):
    id: str
    when: FixCondition
    step: str
    citations: list[Citation] = []


class NextSteps(BaseModel):
    max_steps: int = Field(default=3, ge=1)
    steps: list[NextStep]


@functools.cache
def load_next_steps(path: Path = NEXT_STEPS_FILE) -> NextSteps:
    return NextSteps.model_validate(safe_load(path.read_text(encoding="utf-8")))


def error_lines(lines: Sequence[str]) -> list[str]:
    """The lines that look like errors, last ones first (the fatal error is usually at the end)."""
    picked: dict[str, None] = {}
    for line in reversed(lines):
        s = line.strip()
        if s and _ERRORISH.search(s):
            picked.setdefault(clip(s), None)
        if len(picked) >= MAX_EVIDENCE:
            break
    return list(picked)


def unknown_diagnosis(source: str, lines: Sequence[str], facts: dict[str, Any]) -> CrashDiagnosis:
    """The diagnosis of a log no rule matched: what it shows, and what to run next."""
    found = error_lines(lines)
    if found:
        facts["error_lines"] = found
    config = load_next_steps()
    steps: list[str] = []
    ids: list[str] = []
    citations: dict[str, Citation] = {}
    for step in config.steps:
        if len(steps) >= config.max_steps or not step.when.holds(facts, lines):
            continue
        text = render_template(" ".join(step.step.split()), facts)
        if text is None:
            continue
        steps.append(text)
        ids.append(step.id)
        for citation in step.citations:
            citations.setdefault(citation.url, citation)
    facts["next_steps"] = ids
    fix = " ".join(f"({i}) {s}" for i, s in enumerate(steps, 1)) if len(steps) > 1 else "".join(steps)
    suggestions = find_suggestions(lines)
    if suggestions:
        quoted = " and ".join(f'"{s.text}"' for s in suggestions)
        if all(s.kind == "cause" for s in suggestions):  # what leads to it, not what to do
            lead = f"The error message names the likely cause: {quoted}. Check that first; if it is not that"
        elif all(s.kind == "constraint" for s in suggestions):  # what a setting must be
            lead = (
                f"The error message says what a setting must be: {quoted}. Meet it first; if the error stays"
            )
        elif all(s.kind == "exclusion" for s in suggestions):  # two settings refused together
            lead = (
                f"The error message names settings it refuses together: {quoted}. Keep only one of them "
                "first; if the error stays"
            )
        else:
            lead = f"The error message states its own remedy: {quoted}. Try that first; if the error stays"
        fix = f"{lead}: {fix}"
        ids.insert(0, "message_suggestion")
    return CrashDiagnosis(
        source=source,
        category="unknown",
        title="No known failure signature",
        summary=_summary(facts),
        facts=facts,
        cause=UNKNOWN_CAUSE,
        fix=fix,
        citations=list(citations.values()),
        evidence=CrashEvidence(
            lines=found,
            fix_rule="unknown/" + "+".join(ids),
            fix_reason="next diagnostic steps for what the log shows",
        ),
        confidence=0.0,
        lines=len(lines),
    )


def _summary(facts: dict[str, Any]) -> str:
    parts = []
    if "exception" in facts:
        parts.append(f"{facts['exception']}: {facts.get('message', '')}".rstrip(": "))
    elif "fatal_error" in facts:
        parts.append(str(facts["fatal_error"]))
    elif facts.get("error_lines"):
        parts.append(str(facts["error_lines"][0])[:200])
    if "source_file" in facts:
        parts.append(f"at {facts['source_file']}:{facts['source_line']}")
    return " ".join(parts)
