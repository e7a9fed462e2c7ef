"""Where an error was raised as the last weak cue (crash_locations, data/raise_locations.yaml) and the raise
sites mined from installed libraries (raise_sites_build, data/raise_sites.json): logs written for these
tests, each with a nearby log the location must not claim."""

from __future__ import annotations

import re

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_locations import (
    CategoryLocations,
    LocationTable,
    RaiseSite,
    find_locations,
    load_locations,
    load_raise_sites,
    location_vote,
    module_of_path,
)
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.raise_sites_build import raise_sites_of, template

NO_SITES: tuple[RaiseSite, ...] = ()
LAX = '  File "/opt/venv/lib/python3.11/site-packages/jax/_src/lax/lax.py", line 180, in broadcast_shapes'
USER = '  File "/home/u/proj/model.py", line 40, in forward'
TRACEBACK = "Traceback (most recent call last):"


def _log(*frames: str, error: str = "TypeError: operands (3, 4) and (5,) do not line up") -> list[str]:
    return [TRACEBACK, *[line for f in frames for line in (f, "    x = f(y)")], error]


def test_module_of_path_reads_site_packages_and_other_folders() -> None:
    assert module_of_path("/opt/venv/lib/python3.11/site-packages/jax/_src/lax/lax.py") == "jax._src.lax.lax"
    assert module_of_path("/usr/lib/python3/dist-packages/torch/nn/functional.py") == "torch.nn.functional"
    assert module_of_path("/x/jax/_src/numpy/__init__.py") == "x.jax._src.numpy"


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
    assert table.category_of_module("home.u.venv.pkg.shapes.x") is not None  # a path outside site-packages


def test_the_innermost_library_frame_of_a_complete_traceback_decides() -> None:
    vote = location_vote(_log(USER, LAX), sites=NO_SITES)
    assert vote is not None and vote.category == "shape_dtype_error" and vote.by_location
    assert vote.labels == ["raised in jax._src.lax.lax (broadcast_shapes)"]
    assert vote.evidence == [LAX.strip()]


@pytest.mark.parametrize(
    ("lines", "why"),
    [
        (_log(LAX, USER), "user code raised it: an outer library frame says nothing"),
        (_log(USER, LAX)[:-1], "a traceback cut before its exception line"),
        (
            _log(USER, LAX, error="FloatingPointError: invalid value (nan) encountered"),
            "an exception any code raises",
        ),
        (_log('  File "/v/site-packages/mylib/core.py", line 3, in run'), "a library the table does not map"),
    ],
)
def test_a_frame_names_no_location(lines: list[str], why: str) -> None:
    assert location_vote(lines, sites=NO_SITES) is None, why


def test_wrapper_frames_are_stepped_over() -> None:
    wrapper = (
        '  File "/v/site-packages/jax/_src/traceback_util.py", line 182, in reraise_with_filtered_traceback'
    )
    vote = location_vote(_log(USER, LAX, wrapper), sites=NO_SITES)
    assert vote is not None and vote.category == "shape_dtype_error"


def test_a_cpp_source_of_an_error_line_decides() -> None:
    lines = [
        "I1204 10:00:00.000 7 main.cc:10] starting",
        "E1204 10:00:01.000 7 tpu_initializer_helper.cc:99] odd",
    ]
    vote = location_vote(lines, sites=NO_SITES)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert vote.labels == ["raised in tpu_initializer_helper.cc"]
    # the same file on a line that reads as no error names nothing
    assert location_vote(["I1204 10:00:01.000 7 tpu_initializer_helper.cc:99] odd"], sites=NO_SITES) is None


def test_locations_that_disagree_decide_nothing() -> None:
    lines = [*_log(USER, LAX), "E1204 10:00:01.000 7 tpu_initializer_helper.cc:99] failed to open"]
    assert {loc.category for loc in find_locations(lines, sites=NO_SITES)} == {
        "shape_dtype_error",
        "runtime_init_failure",
    }
    assert location_vote(lines, sites=NO_SITES) is None


SITE = RaiseSite(
    module="jax._src.pallas.mosaic.lowering",
    function="_lower_widget",
    exception="ValueError",
    pattern=r"Cannot\ lower\ a\ widget\ of\ .+?\ lanes\ into\ sublanes",
    anchor="lanes into sublanes",
)


def test_a_line_matching_a_mined_raise_site_names_its_module() -> None:
    vote = location_vote(["ValueError: Cannot lower a widget of 7 lanes into sublanes"], sites=[SITE])
    assert vote is not None and vote.category == "mosaic_compile_error"
    assert vote.labels == ["message raised in jax._src.pallas.mosaic.lowering (_lower_widget)"]
    # another exception class on the line: another library's message, not this site's
    assert location_vote(["KeyError: Cannot lower a widget of 7 lanes into sublanes"], sites=[SITE]) is None
    # the literal text must be there, not just the anchor
    assert location_vote(["ValueError: 7 lanes into sublanes"], sites=[SITE]) is None


def test_the_location_decides_only_when_no_word_cue_did() -> None:
    """A weak cue's category wins over the location's; a location places a log the cues leave unknown."""
    worded = _log(USER, LAX, error="RuntimeError: RESOURCE_EXHAUSTED: TPU out of memory allocating 4G in HBM")
    assert weak_vote(worded) is not None
    assert diagnose_log("\n".join(worded), "-").category == "hbm_oom"
    plain = _log(USER, LAX)
    assert weak_vote(plain) is None  # no word of the message leans anywhere
    crash = diagnose_log("\n".join(plain), "-")
    assert crash.category == "shape_dtype_error"
    assert crash.facts["evidence_tier"] == "weak"
    assert crash.facts["raise_location"] == ["raised in jax._src.lax.lax (broadcast_shapes)"]
    assert LAX.strip() in crash.evidence.lines
    assert "where the error was raised" in crash.cause and crash.confidence <= 0.6


def test_a_veto_line_keeps_the_log_unknown_whatever_the_location() -> None:
    lines = [*_log(USER, LAX), "SIGTERM received by PID 10 from PID 1"]
    assert diagnose_log("\n".join(lines), "-").category == "unknown"


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
    sites = load_raise_sites()
    table = load_locations()
    assert len(sites) > 500
    for site in sites:
        assert table.category_of_module(site.module, site.function) is not None, site.module
        assert site.anchor in re.sub(r"\\(.)", r"\1", site.pattern), site.pattern
        site.compiled  # noqa: B018  (compiles)
