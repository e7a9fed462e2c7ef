"""Where an error was raised as the last weak cue (crash_locations, data/raise_locations.yaml), from the raise
sites mined from installed libraries (raise_sites_build, data/raise_sites.json): sites and log lines written
for these tests, each with a nearby line the site must not claim."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tpu_runtime.diagnose import crash_locations
from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_locations import (
    RAISE_SITES_FILE,
    CategoryLocations,
    LocationTable,
    RaiseSite,
    load_locations,
    load_raise_sites,
    location_vote,
)
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.raise_sites_build import mine, raise_sites_of, template
from tpu_runtime.diagnose.raise_sites_snapshot import load_snapshot_config

SNAPSHOTS = Path(__file__).resolve().parents[1] / "benchmarks" / "raise_site_snapshots.yaml"

SITE = RaiseSite(
    module="jax._src.pallas.mosaic.lowering",
    function="_lower_widget",
    exception="ValueError",
    pattern=r"Cannot\ lower\ a\ widget\ of\ .+?\ lanes\ into\ sublanes",
    anchor="lanes into sublanes",
)
LINE = "ValueError: Cannot lower a widget of 7 lanes into sublanes"


def test_the_longest_entry_wins_and_a_function_entry_beats_its_module() -> None:
    table = LocationTable(
        categories=[
            CategoryLocations(category="shape_dtype_error", modules=["pkg.shapes"]),
            CategoryLocations(category="runtime_init_failure", modules=["pkg.shapes:make_mesh"]),
            CategoryLocations(category="unknown", modules=["pkg.shapes.mixed"]),
        ]
    )
    assert table.category_of_module("pkg.shapes.broadcast") == ("shape_dtype_error", "pkg.shapes")
    assert table.category_of_module("pkg.shapes", "make_mesh") == (
        "runtime_init_failure",
        "pkg.shapes:make_mesh",
    )
    assert table.category_of_module("pkg.shapes.mixed.any") is None  # listed under unknown: no vote
    assert table.category_of_module("pkg.shapesfoo") is None  # a dotted boundary, not a string prefix
    assert table.may_map("pkg.shapes") and not table.may_map("pkg.other")


def test_a_line_matching_a_mined_raise_site_names_its_module_and_category() -> None:
    vote = location_vote(["Traceback (most recent call last):", LINE], sites=[SITE])
    assert vote is not None and vote.category == "mosaic_compile_error" and vote.by_location
    assert vote.labels == ["message raised in jax._src.pallas.mosaic.lowering (_lower_widget)"]
    assert vote.evidence == [LINE]
    # the message continued on the line after an error line is read too
    assert location_vote(
        ["ERROR: the kernel failed:", "Cannot lower a widget of 7 lanes into sublanes"], sites=[SITE]
    )


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        (
            ["KeyError: Cannot lower a widget of 7 lanes into sublanes"],
            "another class: another library's message",
        ),
        (["ValueError: 7 lanes into sublanes"], "the anchor alone, not the template's literal text"),
    ],
)
def test_a_line_the_site_does_not_name(lines: list[str], why: str) -> None:
    assert location_vote(lines, sites=[SITE]) is None, why


def test_only_error_lines_and_the_line_after_one_are_read() -> None:
    notice = RaiseSite(
        SITE.module, "f", "ValueError", r"the\ widget\ of\ .+?\ lanes\ goes\ to\ sublanes", "goes to sublanes"
    )
    assert location_vote(["step 10: the widget of 7 lanes goes to sublanes"], sites=[notice]) is None
    assert location_vote(["ValueError: the widget of 7 lanes goes to sublanes"], sites=[notice]) is not None


def test_a_site_of_an_unmapped_module_or_a_denied_exception_names_nothing() -> None:
    elsewhere = RaiseSite("mylib.core", "run", "ValueError", SITE.pattern, SITE.anchor)
    assert location_vote([LINE], sites=[elsewhere]) is None
    nan = RaiseSite(
        "jax._src.lax.lax", "f", "FloatingPointError", r"invalid\ value\ \(nan\)\ in\ .+?", "invalid value"
    )
    assert location_vote(["FloatingPointError: invalid value (nan) in jit(dot)"], sites=[nan]) is None


SHAPE_SITE = RaiseSite(
    module="jax._src.lax.lax",
    function="broadcast_shapes",
    exception="TypeError",
    pattern=r"operands\ .+?\ and\ .+?\ do\ not\ line\ up\ for\ the\ broadcast",
    anchor="do not line up for the broadcast",
)
PLAIN = [
    "Traceback (most recent call last):",
    "TypeError: operands (3, 4) and (5,) do not line up for the broadcast",
]


def test_the_location_decides_only_when_no_word_cue_did(monkeypatch: pytest.MonkeyPatch) -> None:
    """A weak cue's category wins over the location's; a location places a log the cues leave unknown."""
    monkeypatch.setattr(crash_locations, "load_raise_sites", lambda: (SHAPE_SITE,))
    worded = [
        *PLAIN[:-1],
        "RuntimeError: RESOURCE_EXHAUSTED: TPU out of memory allocating 4G in HBM",
        PLAIN[-1],
    ]
    assert weak_vote(worded) is not None
    assert diagnose_log("\n".join(worded), "-").category == "hbm_oom"
    assert weak_vote(PLAIN) is None  # no word of the message leans anywhere
    crash = diagnose_log("\n".join(PLAIN), "-")
    assert crash.category == "shape_dtype_error"
    assert crash.facts["evidence_tier"] == "weak"
    assert crash.facts["raise_location"] == ["message raised in jax._src.lax.lax (broadcast_shapes)"]
    assert crash.evidence.lines == [PLAIN[-1]]
    assert "where the error was raised" in crash.cause and crash.confidence <= 0.6
    # a veto line keeps the log unknown whatever the location
    assert (
        diagnose_log("\n".join([*PLAIN, "SIGTERM received by PID 10 from PID 1"]), "-").category == "unknown"
    )


# ------------------------------------------------------------------------------------ mined raise sites

SOURCE = """
def check(x, n):
    if x:
        raise ValueError(f"operand of rank {n} cannot be broadcast to the output shape")
    msg = "the padded block size %d is not a multiple of the tile %d" % (x, n)
    if n:
        raise TypeError(msg)
    raise RuntimeError("dims {} and {{literal}} disagree on the leading axis".format(x))

def short(x):
    raise ValueError(f"bad {x}")
"""


def test_raise_sites_become_regexes_of_their_literal_text() -> None:
    sites = {s["exception"]: s for s in raise_sites_of(SOURCE, "pkg.mod")}
    assert set(sites) == {"ValueError", "TypeError", "RuntimeError"}  # `bad {x}` is too short to name a site
    assert all(s["module"] == "pkg.mod" and s["function"] == "check" for s in sites.values())
    fstring = re.compile(sites["ValueError"]["pattern"])
    assert fstring.search("ValueError: operand of rank 3 cannot be broadcast to the output shape (2, 8)")
    assert not fstring.search("operand of rank 3 cannot be reshaped")
    percent = re.compile(sites["TypeError"]["pattern"])  # through the name it was assigned to
    assert percent.search("the padded block size 100 is not a multiple of the tile 8")
    braces = re.compile(sites["RuntimeError"]["pattern"])
    assert braces.search("dims (3,) and {literal} disagree on the leading axis")


def test_a_template_keeps_the_first_line_and_needs_enough_literal_text() -> None:
    made = template(["the vector kernel needs ", None, " lanes\nsee the guide for details"])
    assert made is not None
    regex, anchor = made
    assert "guide" not in regex and anchor == "the vector kernel needs"
    assert re.search(regex, "the vector kernel needs 128 lanes")
    assert template([None, " is bad", None]) is None


def test_the_shipped_raise_sites_load_compile_and_map_to_a_category() -> None:
    """Every site maps to a category, except those of a snapshot mined whole for the raise guard."""
    sites = load_raise_sites()
    table = load_locations()
    whole = {s.repo for s in load_snapshot_config(SNAPSHOTS).snapshots if s.all_modules}
    assert len(sites) > 500 and whole
    for site in sites:
        mapped = table.category_of_module(site.module, site.function) is not None
        assert mapped or site.repo in whole, site.module
        assert site.anchor in re.sub(r"\\(.)", r"\1", site.pattern), site.pattern
        site.compiled  # noqa: B018  (compiles)
    unmapped = [s for s in sites if table.category_of_module(s.module, s.function) is None]
    assert unmapped and all(s.repo in whole for s in unmapped)


def test_only_the_last_error_lines_are_read() -> None:
    """A huge log is read from its end, a bounded number of error lines (each meets every site's anchor)."""
    noise = ["ERROR: worker failed to send the batch"] * crash_locations.MAX_READ
    assert location_vote([LINE, *noise[:-1]], sites=[SITE]) is not None
    assert location_vote([LINE, *noise], sites=[SITE]) is None


def test_the_shipped_raise_sites_are_those_the_table_and_installed_libraries_give() -> None:
    """After an edit of raise_locations.yaml, `python benchmarks/build_raise_sites.py` must be rerun."""
    shipped = json.loads(RAISE_SITES_FILE.read_text(encoding="utf-8"))
    versions, sites = mine(load_locations())
    if versions != shipped["packages"]:
        pytest.skip(f"installed {versions}, the file was mined from {shipped['packages']}")
    assert sites == [s for s in shipped["sites"] if "repo" not in s]  # snapshot sites: not installed here
