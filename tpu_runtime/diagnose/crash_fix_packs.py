"""Fix packs: `from_facts_*` fallbacks that reason on facts any wording of a category shares.

A category's own file (crash_rules/<category>.yaml) holds its signatures and the sub-rules written for
known messages. A fix pack (tpu_runtime/data/crash_fix_packs/*.yaml: a list of `{category, fixes}`) adds
fallbacks keyed on generic facts (the element type of a failing op, the kind of operand mismatch), so one
mechanism serves every category it fits and new packs do not edit the category files. Pack fallbacks are
tried after the category's cause-specific sub-rules and the message's own suggestion (crashlog.choose_fix),
and before the category's own `from_facts_*` sub-rules (they need more specific evidence than those
catch-alls); an entry with `position: last` goes after them instead, for a broad catch-all that must not
pre-empt the category's evidence-chosen fallbacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tpu_runtime.diagnose.crash_specs import FALLBACK_PREFIX, CrashRule, SubRule
from tpu_runtime.yaml_data import safe_load

__all__ = ["PACKS_DIR", "merge_fix_packs"]

PACKS_DIR = Path(__file__).resolve().parents[1] / "data" / "crash_fix_packs"


def merge_fix_packs(rules: Sequence[CrashRule], folder: Path = PACKS_DIR) -> tuple[CrashRule, ...]:
    """The rules with every pack's fallbacks placed before (or, `position: last`, after) each category's own
    `from_facts_*` sub-rules.

    Raises ValueError for a pack naming an unknown category, a sub-rule id that is not a `from_facts_*`
    fallback, or an id the category already has.
    """
    added: dict[str, list[SubRule]] = {}
    appended: dict[str, list[SubRule]] = {}
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        entries = safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError(f"{path}: a fix pack is a list of {{category, fixes}} entries")
        for entry in entries:
            fixes = [SubRule.model_validate(raw) for raw in entry.get("fixes") or []]
            for sub in fixes:
                if not sub.id.startswith(FALLBACK_PREFIX):
                    raise ValueError(f"{path}: {sub.id}: fix packs hold only {FALLBACK_PREFIX}_* fallbacks")
            position = entry.get("position", "first")
            if position not in ("first", "last"):
                raise ValueError(f"{path}: position must be 'first' or 'last', not {position!r}")
            target = added if position == "first" else appended
            target.setdefault(str(entry.get("category")), []).extend(fixes)
    known = {rule.category for rule in rules}
    unknown = (set(added) | set(appended)) - known
    if unknown:
        raise ValueError(f"{folder}: fix packs name unknown categories: {', '.join(sorted(unknown))}")
    merged: list[CrashRule] = []
    for rule in rules:
        first, last = added.get(rule.category, []), appended.get(rule.category, [])
        if not first and not last:
            merged.append(rule)
            continue
        ids = [s.id for s in [*first, *last]]
        clash = set(ids) & {s.id for s in rule.fixes}
        if clash or len(set(ids)) != len(ids):
            raise ValueError(f"{rule.category}: fix pack sub-rule ids repeat: {', '.join(sorted(clash))}")
        specific = [s for s in rule.fixes if not s.id.startswith(FALLBACK_PREFIX)]
        own = [s for s in rule.fixes if s.id.startswith(FALLBACK_PREFIX)]
        merged.append(rule.model_copy(update={"fixes": [*specific, *first, *own, *last]}))
    return tuple(merged)
