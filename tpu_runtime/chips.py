"""Cloud TPU chip specs, loaded from the team's fact sheet `knowledge/chips.yaml`.

Every number comes with the public URL it was taken from and the date it was checked; see
`knowledge/README.md`. Look a generation up with `get_chip("v6e")` (aliases such as "TPU v6 lite",
"trillium", "ironwood", "v5litepod-8" work too).
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tpu_runtime.chip_names import CHIPS_FILE, compiled_alias_index, key_in
from tpu_runtime.chip_names import COMPILED_AS as COMPILED_AS  # re-exported: names precompile here
from tpu_runtime.chip_names import normalize_chip_name as normalize_chip_name
from tpu_runtime.errors import BadInput
from tpu_runtime.resources import knowledge_dir
from tpu_runtime.yaml_data import safe_load

GIB = 1 << 30


class Sourced(BaseModel):
    """What every fact-sheet entry carries (here and `onboard/serving.py`): the https:// page it was taken
    from and the date that page was checked. Entries are frozen and refuse unknown keys."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    source: str
    checked: date

    @field_validator("source")
    @classmethod
    def _source_ok(cls, url: str) -> str:
        if not url.startswith("https://"):
            raise ValueError(f"source must be an https:// URL, got {url!r}")
        return url


class Fact(Sourced):
    """One sourced number, plus the other values other sources print for the same quantity."""

    value: float
    unit: str | None = None
    note: str | None = None
    alternatives: tuple[Fact, ...] = ()


class CountFact(Sourced):
    """A sourced whole number (TensorCores per chip, chips per host, ...)."""

    value: int = Field(ge=1)
    note: str | None = None


class NamesFact(Sourced):
    """Sourced names, e.g. the `device_kind` strings JAX/libtpu report for a generation."""

    values: tuple[str, ...]


class HbmFact(Sourced):
    """HBM capacity per chip, in GiB and bytes (binary units)."""

    gib: float = Field(gt=0)
    bytes: int = Field(gt=0)
    note: str | None = None
    alternatives: tuple[Fact, ...] = ()

    @model_validator(mode="after")
    def _bytes_match_gib(self) -> HbmFact:
        if self.bytes != round(self.gib * GIB):
            raise ValueError(f"hbm.bytes {self.bytes} is not hbm.gib {self.gib} x 2**30")
        return self


class SliceShape(Sourced):
    """One slice topology a generation offers, e.g. v6e '2x4' (8 chips)."""

    topology: str
    chips: int = Field(ge=1)
    hosts: float | None = Field(default=None, gt=0)
    note: str | None = None

    @model_validator(mode="after")
    def _chips_match_topology(self) -> SliceShape:
        if not re.fullmatch(r"\d+(x\d+){1,2}", self.topology):
            raise ValueError(f"topology {self.topology!r} is not of the form AxB or AxBxC")
        product = math.prod(int(d) for d in self.topology.split("x"))
        if product != self.chips:
            raise ValueError(f"topology {self.topology} has {product} chips, the sheet says {self.chips}")
        return self


class ChipSpec(BaseModel):
    """What `knowledge/chips.yaml` knows about one TPU generation (all per chip unless named otherwise)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str = Field(description="canonical key, e.g. 'v6e'")
    display_name: str
    aliases: tuple[str, ...] = ()
    device_kinds: NamesFact
    hbm: HbmFact
    hbm_bandwidth: Fact
    peak_bf16: Fact
    peak_f32: Fact | None = Field(
        default=None, description="float32 matmuls at full precision (several bf16 passes on the MXU)"
    )
    peak_int8: Fact | None = None
    peak_fp8: Fact | None = None
    tensorcores_per_chip: CountFact
    devices_per_chip: CountFact | None = Field(
        default=None, description="framework-visible devices per chip, where it differs from one (TPU7x)"
    )
    chips_per_host: CountFact
    ici_bandwidth: Fact | None = None
    vmem_per_core: Fact | None = None
    slices: tuple[SliceShape, ...]
    notes: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _slices_ascending(self) -> ChipSpec:
        if not self.slices:
            raise ValueError(f"{self.name}: no slice shapes listed")
        counts = [s.chips for s in self.slices]
        if counts != sorted(counts):
            raise ValueError(f"{self.name}: slices must be listed from smallest to largest, got {counts}")
        return self

    @property
    def hbm_bytes(self) -> int:
        return self.hbm.bytes

    @property
    def max_slice_chips(self) -> int:
        return self.slices[-1].chips

    def smallest_slice(self, chips: int) -> SliceShape | None:
        """The smallest listed slice with at least `chips` chips; None if even the largest is too small."""
        for shape in self.slices:
            if shape.chips >= chips:
                return shape
        return None

    def sources(self) -> list[str]:
        """Every URL this spec cites, in first-seen order."""
        return _collect_sources(self.model_dump())


def _collect_sources(node: Any) -> list[str]:
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            src = value.get("source")
            if isinstance(src, str) and src not in found:
                found.append(src)
            for child in value.values():
                walk(child)
        elif isinstance(value, (list, tuple)):
            for child in value:
                walk(child)

    walk(node)
    return found


class UnknownChipError(BadInput, ValueError):
    """Raised by `get_chip` for a name that matches no generation; the message lists the known ones."""


def load_chips(path: Path | None = None) -> dict[str, ChipSpec]:
    """Parse a chips sheet into ChipSpecs keyed by canonical name (default: the shipped sheet, cached)."""
    if path is None:
        return dict(_default_chips())
    return _parse_chips(path)


@functools.cache
def _default_chips() -> Mapping[str, ChipSpec]:
    return _parse_chips(knowledge_dir() / CHIPS_FILE)


def _parse_chips(path: Path) -> dict[str, ChipSpec]:
    raw = safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("generations"), dict):
        raise ValueError(f"{path}: expected a mapping with a 'generations' mapping")
    chips: dict[str, ChipSpec] = {}
    for key, body in raw["generations"].items():
        if not isinstance(body, dict):
            raise ValueError(f"{path}: generation {key!r} is not a mapping")
        chips[str(key)] = ChipSpec.model_validate({"name": str(key), **body})
    return chips


@functools.cache
def _alias_index() -> Mapping[str, str]:
    """Normalised name or alias -> generation key, precompiled from the sheet (resolving a name then
    reads no figure of the sheet) or, when the sheet has changed since, made from it."""
    shipped = compiled_alias_index()
    return shipped if shipped is not None else alias_index_of(_default_chips())


def alias_index_of(chips: Mapping[str, ChipSpec]) -> dict[str, str]:
    """Every name a generation goes by (key, display name, aliases, device kinds), normalised -> its key."""
    index: dict[str, str] = {}
    for key, spec in chips.items():
        for alias in dict.fromkeys([key, spec.display_name, *spec.aliases, *spec.device_kinds.values]):
            norm = normalize_chip_name(alias)
            owner = index.setdefault(norm, key)
            if owner != key:
                raise ValueError(f"alias {alias!r} names both {owner} and {key} in {CHIPS_FILE}")
    return index


def known_chips() -> list[str]:
    """Canonical generation names in sheet order."""
    return list(_default_chips())


def chip_key(name: str) -> str | None:
    """The canonical generation a name or alias names ('TPU v6 lite' -> 'v6e'), None when none does."""
    return key_in(_alias_index(), name)


def get_chip(name: str) -> ChipSpec:
    """Look a generation up by name or alias ('v6e', 'TPU v6 lite', 'trillium', 'v5litepod-8', ...)."""
    key = chip_key(name)
    if key is None:
        chips = _default_chips()
        listing = "; ".join(
            f"{k} ({', '.join(a for a in spec.aliases if a != k)})" if spec.aliases else k
            for k, spec in chips.items()
        )
        raise UnknownChipError(f"unknown TPU generation {name!r}; known generations: {listing}")
    return _default_chips()[key]
