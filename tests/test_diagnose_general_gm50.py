"""The final tier of the weak cues, told apart by what the exception names (gm50): an uncaught check exception
nothing else placed is a shape error when it names jax's array or layout types, not only when it says dtype or
sharding, and a missing code path when it is a NotImplementedError
(`tpu_runtime/data/crash_cues/configuration_checks.yaml`); and a line Python prints for any attribute lookup
names no raise site (`interpreter_messages` in `tpu_runtime/data/raise_locations.yaml`). Wordings and sites
written for these tests."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_locations import (
    CategoryLocations,
    LocationTable,
    RaiseSite,
    find_location,
    load_locations,
    location_vote,
)
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: Calling gizmo() on `Array`s that live on other hosts is not allowed here.",
        "ValueError: The widget output needs its manual axes on the ShapeDtypeStruct it returns.",
        "ValueError: gizmo_fn under shard_map returned 3 outputs for 2 entries.",
        "AssertionError: out_specs of the widget kernel list a mesh axis twice.",
        "ValueError: Expected a jax.Array for the gizmo buffer, got a Python list.",
        "RuntimeError: A GizmoSharding cannot be applied to the widget's output.",
    ],
)
def test_a_check_exception_naming_jax_array_types_is_a_shape_error(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "shape_dtype_error"
    assert vote.runner_up is None  # the start-up reading is overridden, not outvoted
    crash = diagnose_log(f"Traceback (most recent call last):\n{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "shape_dtype_error"
    assert crash.facts["evidence_tier"] == "weak"


@pytest.mark.parametrize(
    "line",
    [
        # a setting whose name holds the word, and a lower-case noun that is no sharding class
        "ValueError: resharding_interval must be positive, got 0.",
        "ValueError: gizmo resharding is only allowed every 10 steps.",
        # the devices a host holds are a mesh check, not an array's layout
        "RuntimeError: The gizmo mesh needs 16 addressable devices, this host has 8.",
        # a plural `Arrays` type in plain words and an array module are not jax's array type
        "ValueError: Arrays of widgets must be registered before training starts.",
        "ValueError: gizmo_array_size must be divisible by 4.",
    ],
)
def test_nearby_wordings_stay_a_refused_configuration(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "runtime_init_failure"


@pytest.mark.parametrize(
    "line",
    [
        "NotImplementedError: Sprocket pooling with more than one shard is not wired up yet.",
        "NotImplementedError: gizmo_scan over a ragged widget",
        # a sharding it has no path for is still a missing path, not a layout to fix
        "NotImplementedError: PartitionSpec over a ragged gizmo axis",
        "(EngineCore pid=7) NotImplementedError: GizmoSharding of a sprocket buffer",
    ],
)
def test_an_uncaught_not_implemented_error_is_a_missing_code_path(line: str) -> None:
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "unsupported_op"
    assert vote.runner_up is None
    crash = diagnose_log(f"Traceback (most recent call last):\n{line}\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "unsupported_op"
    assert crash.title == "A code path the library has not implemented"
    assert "no implementation for what was asked" in crash.cause
    assert crash.fix.startswith("Take the path the message names out of the run")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # the same refusal raised as a ValueError stays a refused configuration
        ("ValueError: Sprocket pooling with more than one shard is refused.\n", "runtime_init_failure"),
        # memory words and a bug report are other families, as for the other check exceptions
        ("NotImplementedError: gizmo offload when host memory is pinned\n", "unknown"),
        ("NotImplementedError: reached an unhandled widget state. This is a gizmolib bug.\n", "unknown"),
        # a class whose name merely ends the same way is not Python's NotImplementedError
        ("GizmoNotImplementedError: sprocket pooling\n", "unknown"),
    ],
)
def test_nearby_exceptions_are_not_a_missing_code_path(text: str, category: str) -> None:
    assert diagnose_log(text, "-", similar=NO_NEIGHBOURS).category == category


# a module's own __getattr__ that raises Python's wording, and a message of its own in the same module
GETATTR_SITE = RaiseSite(
    module="gizmolib.layers",
    function="__getattr__",
    exception="AttributeError",
    pattern=r"'.+?'\ object\ has\ no\ attribute\ '.+?'",
    anchor="' object has no attribute '",
)
OWN_SITE = RaiseSite(
    module="gizmolib.layers",
    function="__getattr__",
    exception="AttributeError",
    pattern=r"Sprocket\ .+?\ is\ not\ a\ child\ of\ this\ widget\ layer",
    anchor="is not a child of this widget layer",
)
TABLE = LocationTable(
    interpreter_messages=load_locations().interpreter_messages,
    categories=[CategoryLocations(category="shape_dtype_error", modules=["gizmolib.layers"])],
)


@pytest.mark.parametrize(
    "line",
    [
        "AttributeError: 'GizmoNamespace' 'ops' object has no attribute 'sprocket_mm'",
        "AttributeError: 'WidgetRunner' object has no attribute 'mesh'",
        "AttributeError: module 'gizmolib.ops' has no attribute 'sprocket_mm'",
    ],
)
def test_a_line_python_prints_for_any_attribute_lookup_names_no_raise_site(line: str) -> None:
    lines = ["Traceback (most recent call last):", line]
    assert find_location(lines, TABLE, [GETATTR_SITE, OWN_SITE], any_module=True) is None
    assert location_vote(lines, TABLE, [GETATTR_SITE, OWN_SITE]) is None
    # the same table without the list: the module's template fits the words and votes for its category
    bare = LocationTable(categories=TABLE.categories)
    if "object has no attribute" in line:
        vote = location_vote(lines, bare, [GETATTR_SITE])
        assert vote is not None and vote.category == "shape_dtype_error"


def test_a_message_of_the_modules_own_still_names_it() -> None:
    line = "AttributeError: Sprocket gear_3 is not a child of this widget layer"
    vote = location_vote(["Traceback (most recent call last):", line], TABLE, [GETATTR_SITE, OWN_SITE])
    assert vote is not None and vote.category == "shape_dtype_error"
    assert vote.labels == ["message raised in gizmolib.layers (__getattr__)"]
