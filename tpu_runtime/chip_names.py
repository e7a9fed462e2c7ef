"""Which TPU generation a name stands for ('TPU v6 lite' -> 'v6e'), without the chip sheet's models.

The names come precompiled from `knowledge/chips.yaml` (`tpu_runtime.yaml_data.compiled`), so resolving a
device kind, as a profile's report does, loads neither PyYAML nor pydantic. Only when the sheet has
changed since it was compiled (`compiled_alias_index` is None) must the sheet be read and validated:
`tpu_runtime.chips.chip_key` does that, on top of this module.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from tpu_runtime.resources import knowledge_dir
from tpu_runtime.yaml_data import compiled

__all__ = ["CHIPS_FILE", "COMPILED_AS", "compiled_alias_index", "key_in", "normalize_chip_name"]

CHIPS_FILE = "chips.yaml"
#: The precompiled form of the sheet's names (`tpu_runtime.yaml_data.compiled`): normalised name -> key.
COMPILED_AS = "alias_index"


def normalize_chip_name(name: str) -> str:
    """Lower-case, drop a topology (':2x2') or accelerator-type count ('-8'), and drop separators."""
    text = name.strip().lower().split(":", 1)[0]
    text = re.sub(r"-\d+$", "", text)
    return re.sub(r"[\s\-_()]+", "", text)


@functools.cache
def compiled_alias_index() -> Mapping[str, str] | None:
    """Normalised name or alias -> generation key, as precompiled from the sheet's current text; None
    when the sheet has changed since it was compiled."""
    shipped: Mapping[str, str] | None = compiled(knowledge_dir() / CHIPS_FILE, COMPILED_AS)
    return shipped


def key_in(index: Mapping[str, str], name: str) -> str | None:
    """The generation `name` names in an alias index ('TPU v6 lite' -> 'v6e'), None when none does."""
    norm = normalize_chip_name(name)
    key = index.get(norm)
    if key is None and norm.startswith("tpu"):
        key = index.get(norm[3:])
    return key
