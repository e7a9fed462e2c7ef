"""Where an error was raised, as the last weak cue: a category from the module that raised the message.

The weak cues (crash_cues) read words, and a known failure family in new words can match none of them. An
error message a library raises itself has a fixed text with values filled in, and the text names the place
that raised it, whatever words it uses: `benchmarks/build_raise_sites.py` mines the installed libraries'
`raise X(f"...")` statements into message templates, each with its module and function
(`tpu_runtime/data/raise_sites.json`; the mining is raise_sites_build.py), and the libraries not installed
here from repository snapshots (raise_sites_snapshot.py; their C++ status messages with
raise_sites_cxx.py), each such site with its repository, path and line. A log line a template matches
names the module that raised it (`jax._src.pallas.mosaic.lowering`), and
`tpu_runtime/data/raise_locations.yaml` maps module prefixes to a category: a module whose own checks raise
one kind of error (`jax._src.lax` checks shapes and dtypes, `jax._src.xla_bridge` starts the backend).

The location decides only when no rule matched and no weak cue decided; the report says so
(`evidence_tier: weak`, the fact `raise_location` and the cue label name the module and its function, the
deciding line is the evidence). A site whose exception is one any code raises (`deny_exceptions`: a NaN
check, memory, a lost connection, an unimplemented case) or whose class differs from the one the log line
shows names nothing; a C++ site's class is not compared (a binding raises its status as any class). A line
Python itself prints for any code (`interpreter_messages`: "'X' object has no attribute 'y'") names no site
either, though a module that mimics it (`torch.nn.Module.__getattr__`) has a template its words fit.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.crash_cues import WeakVote, is_error_line
from tpu_runtime.diagnose.crash_facts import clip, traceback_frames
from tpu_runtime.diagnose.report import Category
from tpu_runtime.yaml_data import safe_load

__all__ = [
    "LOCATIONS_FILE",
    "RAISE_SITES_FILE",
    "Location",
    "LocationTable",
    "RaiseSite",
    "find_location",
    "load_locations",
    "load_raise_sites",
    "location_vote",
]

DATA = Path(__file__).resolve().parents[1] / "data"
LOCATIONS_FILE = DATA / "raise_locations.yaml"
RAISE_SITES_FILE = DATA / "raise_sites.json"
MAX_READ = 200
"""Error lines read from the end of the log (each is tested against every site's anchor: a log of a
hundred thousand error lines would otherwise take seconds)."""
FRAMES_READ = 400
"""Lines above the matched error line read for its traceback's frames (only when several sites match)."""

# `ValueError: ...`, `jax.errors.ConcretizationTypeError: ...`: the class of the exception a line shows
_EXCEPTION = re.compile(r"^\s*(?:\w+\.)*(?P<name>[A-Z]\w*(?:Error|Exception|Exit|Interrupt)):")


class CategoryLocations(BaseModel):
    """The modules whose own checks raise errors of one category."""

    category: Category
    modules: list[str] = Field(
        description="dotted module prefixes (jax._src.lax), or `module:function` for one function"
    )


class LocationTable(BaseModel):
    weight: float = Field(default=0.45, le=0.6, description="the score a location's category gets")
    deny_exceptions: list[str] = Field(
        default=[],
        description="exception classes any code may raise (a NaN check, memory, a lost connection): where "
        "they were raised says nothing of the kind of error",
    )
    interpreter_messages: list[str] = Field(
        default=[],
        description="messages Python itself prints for any code (regexes): a line of one names no raise "
        "site, whatever module's template its words also fit",
    )
    categories: list[CategoryLocations]

    @functools.cached_property
    def compiled_interpreter_messages(self) -> re.Pattern[str] | None:
        """The interpreter's messages as one regex, compiled once: find_location tests every error line."""
        return (
            re.compile("|".join(f"(?:{m})" for m in self.interpreter_messages))
            if self.interpreter_messages
            else None
        )

    def category_of_module(self, module: str, function: str = "") -> tuple[Category, str] | None:
        """The category of the longest prefix that names `module` (at a dotted boundary), and the prefix; a
        `module:function` entry names that function only and beats its module's. None when no prefix names
        it or the longest is listed under `unknown` (a module of a mapped package that raises every kind)."""
        best: tuple[Category, str] | None = None
        for group in self.categories:
            for prefix in group.modules:
                name, _, func = prefix.partition(":")
                if func and func != function:
                    continue
                if _names_module(name, module) and (best is None or len(prefix) > len(best[1])):
                    best = (group.category, prefix)
        return None if best is None or best[0] == "unknown" else best

    def may_map(self, module: str) -> bool:
        """Whether some entry (a whole module's or one function's) names `module`."""
        return any(
            _names_module(prefix.partition(":")[0], module) for g in self.categories for prefix in g.modules
        )


@dataclass(frozen=True)
class RaiseSite:
    """One `raise X("...")` of an installed library: its module, function, exception and message regex;
    `anchor` is the template's longest literal run, tested before the regex."""

    module: str
    function: str
    exception: str
    pattern: str
    anchor: str
    repo: str = ""  # owner/name of the repository snapshot it was mined from; empty for an installed package
    path: str = ""
    line: int = 0
    commit: str = ""
    # what the test of the `if` the raise sits in reads (Python sites; crash_raise_guard.guard_facts): the
    # settings it names and the `name=value` settings that get past it; the test itself is not kept
    tests: tuple[str, ...] = ()
    passes: tuple[str, ...] = ()

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)

    @property
    def native(self) -> bool:
        """A C++ site (its module is a file path): the Python class a binding raises for it varies."""
        return "/" in self.module

    @property
    def source_url(self) -> str:
        """Where a reader can open the site's source at the commit it was mined from; empty when it was
        mined from an installed package."""
        if not (self.repo and self.commit and self.path):
            return ""
        return f"https://github.com/{self.repo}/blob/{self.commit}/{self.path}#L{self.line}"


@dataclass(frozen=True)
class Location:
    """The raise site a log line matched, the category its module maps to, and the line."""

    site: RaiseSite
    category: Category
    line: int
    text: str

    @property
    def label(self) -> str:
        where = f"message raised in {self.site.module} ({self.site.function})"
        if self.site.repo:
            where += f" of {self.site.repo}, {self.site.source_url}"
        return where


def _names_module(prefix: str, module: str) -> bool:
    """A dotted module prefix (`jax._src.lax`) or a folder of a C++ file's path (`xla/pjrt`)."""
    return module == prefix or module.startswith(prefix + ("/" if "/" in module else "."))


@functools.cache
def load_locations(path: Path = LOCATIONS_FILE) -> LocationTable:
    return LocationTable.model_validate(safe_load(path.read_text(encoding="utf-8")))


@functools.cache
def load_raise_sites(path: Path = RAISE_SITES_FILE) -> tuple[RaiseSite, ...]:
    """The mined raise sites (benchmarks/build_raise_sites.py); none when the file is absent."""
    if not path.is_file():
        return ()
    raw = json.loads(path.read_text(encoding="utf-8"))
    commits = raw.get("snapshots", {})
    return tuple(_site(site, commits.get(site.get("repo", ""), "")) for site in raw["sites"])


def _site(raw: dict[str, Any], commit: str) -> RaiseSite:
    """One site of the file (its lists, the names and values a condition reads, as tuples)."""
    site = RaiseSite(**{k: v for k, v in raw.items() if not isinstance(v, list)}, commit=commit)
    return replace(site, tests=tuple(raw.get("tests", ())), passes=tuple(raw.get("passes", ())))


def find_location(
    lines: Sequence[str],
    table: LocationTable | None = None,
    sites: Sequence[RaiseSite] | None = None,
    any_module: bool = False,
) -> Location | None:
    """The last error line (or the line after one) that a mined raise site of a mapped module matches,
    among the last `MAX_READ` such lines. With `any_module`, a site of a module the table does not map
    counts too, with the category `unknown`: where it was raised says nothing of the kind of error, but
    the check's condition still names what to change (crash_raise_guard)."""
    table = load_locations() if table is None else table
    sites = load_raise_sites() if sites is None else sites
    if not sites:
        return None
    denied = set(table.deny_exceptions)
    sites = [site for site in sites if site.exception not in denied]
    generic = table.compiled_interpreter_messages
    read = 0
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if not (is_error_line(line) or (i > 0 and is_error_line(lines[i - 1]))):
            continue
        read += 1
        if read > MAX_READ:
            break
        if generic is not None and generic.search(line):
            continue
        shown = _EXCEPTION.match(line)
        found: list[Location] = []
        for site in sites:
            if shown is not None and shown["name"] != site.exception and not site.native:
                continue
            if site.anchor in line and site.compiled.search(line):
                mapped = table.category_of_module(site.module, site.function)
                if mapped is not None:
                    found.append(Location(site, mapped[0], i, clip(line.strip())))
                elif any_module:
                    found.append(Location(site, "unknown", i, clip(line.strip())))
        if len(found) > 1:  # several checks raise these words: the traceback above the line says which ran
            frames = traceback_frames(lines[max(0, i - FRAMES_READ) : i])
            return next((f for f in found if _raised_at(f.site, frames)), found[0])
        if found:
            return found[0]
    return None


def _raised_at(site: RaiseSite, frames: Sequence[tuple[str, int, str]]) -> bool:
    """A frame of the log's traceback is the site's own line: its file ends with the site's module path
    (or the repository path it was mined from) and its line and function are the site's. Two checks of one
    function can raise the same words ("Unknown RoPE scaling type" with and without the value, diag93), and
    the traceback says which of them ran, so its condition is the one to read."""
    if site.line <= 0 or site.native:
        return False
    tails = {site.module.replace(".", "/") + ".py", site.module.replace(".", "/") + "/__init__.py"}
    if site.path:
        tails.add(site.path)
    return any(
        line == site.line
        and function == site.function
        and any(path == tail or path.endswith("/" + tail) for tail in tails)
        for path, line, function in frames
    )


def location_vote(
    lines: Sequence[str], table: LocationTable | None = None, sites: Sequence[RaiseSite] | None = None
) -> WeakVote | None:
    """The category of the module that raised the log's message, as a weak vote; None when no line matches
    a raise site of a mapped module."""
    table = load_locations() if table is None else table
    found = find_location(lines, table, sites)
    if found is None:
        return None
    return WeakVote(
        category=found.category,
        score=table.weight,
        last_line=found.line,
        evidence=[found.text],
        labels=[found.label],
        runner_up=None,
        by_location=True,
    )
