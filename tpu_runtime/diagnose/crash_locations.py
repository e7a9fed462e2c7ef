"""Where an error was raised, as the last weak cue: a category from the raising location, not the wording.

The weak cues (crash_cues) read words, and a known failure family in new words can match none of them. Many
logs also say where the error was raised, which does not depend on the wording: the innermost frame of a
Python traceback (`File ".../jax/_src/lax/lax.py", line N, in broadcast_shapes`), the C++ source file of a
glog error line or a failed check (`E1204 ... pjrt_api.cc:123]`, `torch_xla/csrc/helpers.cpp:581 : Check
failed`), or a message that is the template of a known raise site of an installed library (mined from their
sources by `benchmarks/build_raise_sites.py` into `tpu_runtime/data/raise_sites.json`, each with its module).

`tpu_runtime/data/raise_locations.yaml` maps module prefixes and C++ source-path fragments to a category (a
module whose own checks raise one kind of error: `jax._src.lax` checks shapes and dtypes,
`jax._src.xla_bridge` starts the backend). The location decides only when no rule matched and no weak cue
decided, and only when every location the log names agrees; the report says so (`evidence_tier: weak`, the
cue label names the module and the deciding line is the first evidence line).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.crash_cues import WeakVote, is_error_line
from tpu_runtime.diagnose.report import Category
from tpu_runtime.yaml_data import safe_load

__all__ = [
    "LOCATIONS_FILE",
    "RAISE_SITES_FILE",
    "Location",
    "LocationTable",
    "RaiseSite",
    "find_locations",
    "load_locations",
    "load_raise_sites",
    "location_vote",
    "module_of_path",
]

DATA = Path(__file__).resolve().parents[1] / "data"
LOCATIONS_FILE = DATA / "raise_locations.yaml"
RAISE_SITES_FILE = DATA / "raise_sites.json"
MAX_LINE = 400
FRAME_REACH = 12
"""How many lines after the innermost frame its exception line may be (its code, IPython's context)."""

# `File "/x/site-packages/jax/_src/lax/lax.py", line 120, in broadcast_shapes` and IPython's
# `/x/site-packages/jax/_src/lax/lax.py in broadcast_shapes(*shapes)`
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+\.pyx?)", line \d+, in (?P<func>[\w<>.]+)')
_IPY_FRAME = re.compile(r"^\s*(?P<path>/\S+\.pyx?) in (?P<func>[\w<>.]+)\(")
# a C++ source file with its line, as glog prefixes and failed checks print it
_SOURCE = re.compile(r"(?<![\w./+-])(?P<path>(?:[\w.+-]+/)*[\w+-]+\.(?:cc|cpp|cxx|h|hpp|inc)):\d+")
# `ValueError: ...`, `jax.errors.ConcretizationTypeError: ...`: the exception a traceback ends with
_EXCEPTION = re.compile(r"^\s*(?:[\w]+\.)*(?P<name>[A-Z]\w*(?:Error|Exception|Exit|Interrupt)):")
_PACKAGE_ROOT = re.compile(r".*/(?:site-packages|dist-packages)/")


class CategoryLocations(BaseModel):
    """The raising locations whose errors are of one category."""

    category: Category
    modules: list[str] = Field(default=[], description="dotted module prefixes (jax._src.lax)")
    sources: list[str] = Field(
        default=[], description="C++ source path fragments (tpu_initializer_helper.cc)"
    )


class LocationTable(BaseModel):
    weight: float = Field(default=0.45, le=0.6, description="the score a location's category gets")
    pass_through: list[str] = Field(
        default=[], description="modules whose frames only re-raise or wrap (stepped over, never deciding)"
    )
    deny_exceptions: list[str] = Field(
        default=[],
        description="exception classes any code may raise (a NaN check, memory, a lost connection): their "
        "location says nothing of the kind of error",
    )
    categories: list[CategoryLocations]

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

    def category_of_source(self, path: str) -> tuple[Category, str] | None:
        """The category of the longest path fragment `path` holds (at a `/` boundary), and the fragment."""
        best: tuple[Category, str] | None = None
        for group in self.categories:
            for fragment in group.sources:
                if _holds_fragment(path, fragment) and (best is None or len(fragment) > len(best[1])):
                    best = (group.category, fragment)
        return best

    def may_map(self, module: str) -> bool:
        """Whether some entry (a whole module's or one function's) names `module`."""
        return any(
            _names_module(prefix.partition(":")[0], module) for g in self.categories for prefix in g.modules
        )

    def passes_through(self, module: str) -> bool:
        return any(_names_module(prefix, module) for prefix in self.pass_through)


@dataclass(frozen=True)
class RaiseSite:
    """One `raise X("...")` of an installed library: its module, function, exception and message regex."""

    module: str
    function: str
    exception: str
    pattern: str
    anchor: str

    @functools.cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


@dataclass(frozen=True)
class Location:
    """A place the log says an error was raised: how it was read, the module or source, the line."""

    kind: str  # "frame", "source" or "message"
    where: str
    category: Category
    line: int
    text: str


def _names_module(prefix: str, module: str) -> bool:
    """Whether `module` is `prefix` or inside it; a path outside site-packages may hold it further in."""
    dotted = f".{module}."
    return module == prefix or module.startswith(prefix + ".") or f".{prefix}." in dotted


def _holds_fragment(path: str, fragment: str) -> bool:
    return path == fragment or path.endswith("/" + fragment) or f"/{fragment}" in f"/{path}"


def module_of_path(path: str) -> str:
    """The dotted module a traceback's file path names (`.../site-packages/jax/_src/lax/lax.py` ->
    `jax._src.lax.lax`); a path outside site-packages keeps its folders (the table matches further in)."""
    path = _PACKAGE_ROOT.sub("", path.replace("\\", "/"))
    path = re.sub(r"\.pyx?$", "", path).strip("/")
    return path.replace("/", ".").removesuffix(".__init__")


@functools.cache
def load_locations(path: Path = LOCATIONS_FILE) -> LocationTable:
    return LocationTable.model_validate(safe_load(path.read_text(encoding="utf-8")))


@functools.cache
def load_raise_sites(path: Path = RAISE_SITES_FILE) -> tuple[RaiseSite, ...]:
    """The mined raise sites (benchmarks/build_raise_sites.py); none when the file is absent."""
    if not path.is_file():
        return ()
    raw = json.loads(path.read_text(encoding="utf-8"))
    return tuple(RaiseSite(**site) for site in raw["sites"])


def find_locations(
    lines: Sequence[str], table: LocationTable | None = None, sites: Sequence[RaiseSite] | None = None
) -> list[Location]:
    """The mapped locations the log names: the innermost frame of its last traceback (frames of
    `pass_through` modules stepped over), the C++ source of its last error line that names one, and the
    last error line that matches a mined raise site. An innermost frame no prefix maps (user code, an
    unmapped library) names no location: an outer library frame did not raise the error."""
    table = load_locations() if table is None else table
    sites = load_raise_sites() if sites is None else sites
    found: list[Location] = []
    raised = _last_exception(lines)
    frame = _innermost_frame(lines, table)
    if frame is not None and raised not in table.deny_exceptions:
        found.append(frame)
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if not is_error_line(line):
            continue
        source = next((m["path"] for m in reversed(list(_SOURCE.finditer(line)))), None)
        if source is None:
            continue
        mapped = table.category_of_source(source)
        if mapped is not None:
            found.append(Location("source", source, mapped[0], i, _clip(line)))
        break
    message = _site_match(lines, table, sites)
    if message is not None:
        found.append(message)
    return found


def _last_exception(lines: Sequence[str]) -> str | None:
    """The class name of the last `Name: message` exception line (its last dotted component)."""
    for line in reversed(lines):
        m = _EXCEPTION.match(line)
        if m is not None:
            return m["name"]
    return None


def _innermost_frame(lines: Sequence[str], table: LocationTable) -> Location | None:
    """The innermost frame of the last traceback that ends in its exception line (a traceback cut short
    names no raising frame: the frames printed so far may be wrappers on the way down)."""
    frames = [
        (i, m["path"], m["func"])
        for i, line in enumerate(lines)
        if (m := _FRAME.match(line) or _IPY_FRAME.match(line)) is not None
    ]
    if not frames or not _ends_in_exception(lines, frames[-1][0]):
        return None
    for i, path, func in reversed(frames):
        module = module_of_path(path)
        if table.passes_through(module):
            continue
        mapped = table.category_of_module(module, func)
        if mapped is None:
            return None
        return Location("frame", f"{module} ({func})", mapped[0], i, _clip(lines[i]))
    return None


def _ends_in_exception(lines: Sequence[str], frame: int, reach: int = FRAME_REACH) -> bool:
    """Whether an exception line follows the frame at `frame` within `reach` lines (its code between)."""
    return any(_EXCEPTION.match(line) for line in lines[frame + 1 : frame + 1 + reach])


def _site_match(lines: Sequence[str], table: LocationTable, sites: Sequence[RaiseSite]) -> Location | None:
    """The last error line (or the line after one) that a mined raise site's message template matches."""
    if not sites:
        return None
    for i in range(len(lines) - 1, -1, -1):
        line = lines[i]
        if not (is_error_line(line) or (i > 0 and is_error_line(lines[i - 1]))):
            continue
        shown = _EXCEPTION.match(line)
        for site in sites:
            if site.exception in table.deny_exceptions or (
                shown is not None and shown["name"] != site.exception
            ):
                continue
            if site.anchor in line and site.compiled.search(line):
                mapped = table.category_of_module(site.module, site.function)
                if mapped is None:
                    continue
                where = f"{site.module} ({site.function})"
                return Location("message", where, mapped[0], i, _clip(line))
    return None


def location_vote(
    lines: Sequence[str], table: LocationTable | None = None, sites: Sequence[RaiseSite] | None = None
) -> WeakVote | None:
    """The category every raising location of the log agrees on, as a weak vote; None when the log names
    no mapped location or its locations disagree."""
    table = load_locations() if table is None else table
    found = find_locations(lines, table, sites)
    categories = {loc.category for loc in found}
    if len(categories) != 1:
        return None
    labels = [
        f"raised in {loc.where}" if loc.kind != "message" else f"message raised in {loc.where}"
        for loc in found
    ]
    evidence = list(dict.fromkeys(loc.text.strip() for loc in found))
    return WeakVote(
        category=found[0].category,
        score=table.weight,
        last_line=max(loc.line for loc in found),
        evidence=evidence,
        labels=labels,
        runner_up=None,
        by_location=True,
    )


def _clip(s: str) -> str:
    return s if len(s) <= MAX_LINE else s[: MAX_LINE - 1] + "…"
