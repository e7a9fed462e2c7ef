"""Which TPU generation a name stands for ('TPU v6 lite' -> 'v6e'), without the chip sheet's models.

The names come precompiled from `knowledge/chips.yaml` (`tpu_runtime.yaml_data.compiled`), so resolving a
device kind, as a profile's report does, loads neither PyYAML nor pydantic; only when the sheet has
changed since it was compiled is it read and validated (`tpu_runtime.chips`). `tpu_runtime.chips`
re-exports both functions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

from tpu_runtime.resources import knowledge_dir
from tpu_runtime.yaml_data import compiled

__all__ = ["CHIPS_FILE", "COMPILED_AS", "chip_key", "normalize_chip_name"]

CHIPS_FILE = "chips.yaml"
#: The precompiled form of the sheet's names (`tpu_runtime.yaml_data.compiled`): normalised name -> key.
COMPILED_AS = "alias_index"


def normalize_chip_name(name: str) -> str:
    """Lower-case, drop a topology (':2x2') or accelerator-type count ('-8'), and drop separators."""
    text = name.strip().lower().split(":", 1)[0]
    text = re.sub(r"-\d+$", "", text)
    return re.sub(r"[\s\-_()]+", "", text)


@functools.cache
def alias_index() -> Mapping[str, str]:
    """Normalised name or alias -> generation key, precompiled from the sheet (resolving a name then
    reads no figure of the sheet) or, when the sheet has changed since, made from it."""
    shipped = compiled(knowledge_dir() / CHIPS_FILE, COMPILED_AS)
    if shipped is not None:
        index: Mapping[str, str] = shipped
        return index
    from tpu_runtime import chips

    return chips.alias_index_of(chips.load_chips())


def chip_key(name: str) -> str | None:
    """The canonical generation a name or alias names ('TPU v6 lite' -> 'v6e'), None when none does."""
    norm = normalize_chip_name(name)
    index = alias_index()
    key = index.get(norm)
    if key is None and norm.startswith("tpu"):
        key = index.get(norm[3:])
    return key
