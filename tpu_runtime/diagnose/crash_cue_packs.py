"""Cue packs: more weak-evidence cues for the categories of crash_cues.yaml, kept in their own files.

crash_cues.yaml holds each category's generic cues; a cue pack (tpu_runtime/data/crash_cue_packs/*.yaml,
`categories: [{category, cues, suppresses}]`, the same schema) adds cues for wording families the main
file does not cover, so several sets of cues can grow without editing one file. A pack's cues join the
category's own (or start the category's group when it has none); its `suppresses` are added to the
category's. The scoring (crash_cues.weak_vote) is unchanged: the strongest cue of a category, plus a
little per further cue, and the veto lines of the main file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import yaml

if TYPE_CHECKING:
    from tpu_runtime.diagnose.crash_cues import CueConfig

__all__ = ["CUE_PACKS_DIR", "merge_cue_packs"]

CUE_PACKS_DIR = Path(__file__).resolve().parents[1] / "data" / "crash_cue_packs"


def merge_cue_packs(config: CueConfig, folder: Path = CUE_PACKS_DIR) -> CueConfig:
    """The config with every pack's cues (and suppressions) added to their categories."""
    from tpu_runtime.diagnose.crash_cues import CategoryCues

    groups = {g.category: g for g in config.categories}
    order = [g.category for g in config.categories]
    for path in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
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
