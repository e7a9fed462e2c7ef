"""The parts of a crash rule file that other modules read: a line pattern that votes, a fact extractor,
the condition that selects a sub-rule's fix, and the rule and sub-rule models themselves.

A leaf of `tpu_runtime.diagnose` (pydantic, the standard library and the report's types only), so the rule
engine (`crashlog`), the fix packs (`crash_fix_packs`), fact extraction (`crash_facts`) and the next-step
table (`crash_next_steps`) share these types without importing one another.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from tpu_runtime.diagnose.report import Category, Citation

__all__ = [
    "FALLBACK_PREFIX",
    "CrashRule",
    "FactSpec",
    "FactVote",
    "FixCondition",
    "PatternSpec",
    "SubRule",
]

FALLBACK_PREFIX = "from_facts"
"""Sub-rules whose id starts so are the category's fallbacks: tried after the message's own suggestion."""


class PatternSpec(BaseModel):
    """One regex that votes for a category when it matches a line."""

    regex: str
    weight: float = Field(default=0.9, gt=0.0, le=1.0, description="how specific a match is")
    min_count: int = Field(
        default=1,
        ge=1,
        description="matching lines needed (e.g. a recompile storm); with a `key` group in the regex, "
        "lines with the same key (one function compiled again, not several compiled once each)",
    )
    ignore_case: bool = False
    overrides: list[Category] = Field(
        default_factory=list,
        description="categories whose broader wrapper wording this pattern explains (a chip's refusal inside "
        "Mosaic's compile failure): when it matches, their votes are dropped, whatever their score",
    )

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, re.IGNORECASE if self.ignore_case else 0)


class FactSpec(BaseModel):
    """A regex whose named groups become facts.

    kind: `first`/`last` take the groups of the first/last matching line; `all` collects a list under
    `name`; `count` counts matching lines into `name`; `count_by` counts per value of the group `key`
    into `name`; `records` starts a record (a dict) at each match and fills it from the `fields`
    regexes on the lines that follow, up to the next start, into a list under `name`.
    Groups listed in `bytes` are sizes and become `<group>_bytes` integers; those in `ints` integers,
    those in `floats` numbers. A group named `shape` holding an HLO shape (`f32[8,128]{1,0}`) also
    yields `dtype` and `dims`.
    """

    kind: Literal["first", "last", "all", "count", "count_by", "records"] = "first"
    regex: str
    name: str | None = None
    fields: list[str] = []
    bytes: list[str] = []
    ints: list[str] = []
    floats: list[str] = []
    limit: int = Field(default=10, ge=1)
    ignore_case: bool = False

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.regex, re.IGNORECASE if self.ignore_case else 0)

    @functools.cached_property
    def compiled_fields(self) -> list[re.Pattern[str]]:
        return [re.compile(f, re.IGNORECASE if self.ignore_case else 0) for f in self.fields]


class FixCondition(BaseModel):
    """When a sub-rule applies; every condition given must hold."""

    facts: list[str] = Field(default=[], description="facts that must be present")
    absent: list[str] = Field(default=[], description="facts that must not be present")
    min: dict[str, float] = Field(default={}, description="numeric facts that must be at least this")
    max: dict[str, float] = Field(default={}, description="numeric facts that must be at most this")
    fact_match: dict[str, str] = Field(default={}, description="facts whose text must match a regex")
    match: str | None = Field(default=None, description="a regex some log line must match")
    no_match: str | None = Field(default=None, description="a regex no log line may match")

    def holds(self, facts: Mapping[str, Any], lines: Sequence[str]) -> bool:
        if any(_missing(facts.get(name)) for name in self.facts):
            return False
        if any(not _missing(facts.get(name)) for name in self.absent):
            return False
        for name, bound in self.min.items():
            value = facts.get(name)
            if not isinstance(value, int | float) or value < bound:
                return False
        for name, bound in self.max.items():
            value = facts.get(name)
            if not isinstance(value, int | float) or value > bound:
                return False
        for name, regex in self.fact_match.items():
            value = facts.get(name)
            if _missing(value) or re.search(regex, str(value)) is None:
                return False
        if self.match is not None and not any(re.search(self.match, line) for line in lines):
            return False
        return not (self.no_match is not None and any(re.search(self.no_match, line) for line in lines))

    def describe(self) -> str:
        """The condition in words, for the report's evidence."""
        parts = [f"{name} present" for name in self.facts]
        parts += [f"{name} >= {bound:g}" for name, bound in self.min.items()]
        parts += [f"{name} <= {bound:g}" for name, bound in self.max.items()]
        parts += [f"{name} matches /{regex}/" for name, regex in self.fact_match.items()]
        parts += [f"no {name}" for name in self.absent]
        if self.match is not None:
            parts.append(f"a line matches /{self.match}/")
        if self.no_match is not None:
            parts.append(f"no line matches /{self.no_match}/")
        return "; ".join(parts)


def _missing(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


class SubRule(BaseModel):
    """A cause within a category, with the fix for it; the fix names the facts that show the cause."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    when: FixCondition
    cause: str | None = Field(default=None, description="replaces the category's cause when given")
    fix: str = Field(description="a template over facts: `{name}` placeholders")
    citations: list[Citation] = []
    addendum: str | None = Field(
        default=None,
        description=(
            "a `from_facts_*` fallback's one-sentence form, added to a cause-specific fix when this "
            "fallback's conditions hold and the fix does not already name the facts the sentence names"
        ),
    )


class FactVote(BaseModel):
    """A vote from what the rule's facts add up to (e.g. a metrics report's compile count), not one line."""

    when: FixCondition
    weight: float = Field(gt=0.0, le=1.0)


class CrashRule(BaseModel):
    category: Category
    title: str
    priority: int = Field(default=0, description="breaks ties between equally strong matches")
    patterns: list[PatternSpec]
    fact_votes: list[FactVote] = Field(default=[], description="votes on the rule's extracted facts")
    facts: list[FactSpec] = []
    summary: list[str] = Field(default=[], description="templates over facts; the first complete one is used")
    cause: str
    fix: str
    fixes: list[SubRule] = Field(default=[], description="cause-specific fixes, first applicable wins")
    citations: list[Citation]

    @field_validator("citations")
    @classmethod
    def _needs_a_source(cls, value: list[Citation]) -> list[Citation]:
        if not value or not all(c.url.startswith("https://") for c in value):
            raise ValueError("each rule needs at least one https citation")
        return value
