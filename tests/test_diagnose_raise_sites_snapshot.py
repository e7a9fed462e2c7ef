"""Raise sites mined from repository snapshots (raise_sites_snapshot, raise_sites_cxx): C++ and Python
source text written for these tests (no snapshot is read), each site with its log line and a nearby line
it must not claim."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tpu_runtime.diagnose.crash_locations import (
    RAISE_SITES_FILE,
    CategoryLocations,
    LocationTable,
    RaiseSite,
    load_locations,
    load_raise_sites,
    location_vote,
)
from tpu_runtime.diagnose.raise_sites_build import SiteValue, mapped_first, write_raise_sites
from tpu_runtime.diagnose.raise_sites_cxx import cxx_sites_of
from tpu_runtime.diagnose.raise_sites_snapshot import Snapshot, is_test_path, mine_files, module_of

CXX = r"""
absl::Status CheckWidgetInputs(const Widget& a, int64_t n) {
  if (a.rank() != n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "widget(): expected the gadget ", a.name(), " to have rank ", n,
        " but it has rank ", a.rank()));
  }
  // return absl::InternalError("a commented-out widget message that is long enough");
  return InvalidArgument("The sprocket layout %s does not tile the lanes of %d", a.layout(), n);
}

void StartWidgetClient(const std::string& name) {
  XLA_CHECK(client != nullptr) << "Could not start the widget client for device " << name
                               << "; is the runtime installed?";
  if (bad) LOG(FATAL) << "Widget coordinator lost contact with " << name << " during start-up";
  CHECK(ok);
  return tsl::errors::Internal("Widget buffer of ", n, " bytes overflows the arena\nsecond line");
}

LogicalResult WidgetOp::verify() {
  return emitOpError("Expected the sublane count to divide ") << getSize() << " for a widget layout";
}

absl::Status Short() { return absl::InternalError(absl::StrCat("bad ", x)); }
"""

LINES = {
    "InvalidArgumentError": (
        "RuntimeError: widget(): expected the gadget w0 to have rank 3 but it has rank 2",
        "RuntimeError: widget(): expected the gadget w0 to be on the device",
    ),
    "InvalidArgument": (
        "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: The sprocket layout (8,128) does not tile "
        "the lanes of 7",
        "INVALID_ARGUMENT: The sprocket layout (8,128) is fine",
    ),
    "XLA_CHECK": (
        "RuntimeError: Check failed: client != nullptr: Could not start the widget client for device TPU:0; "
        "is the runtime installed?",
        "RuntimeError: Could not start the widget server for device TPU:0",
    ),
    "LOG(FATAL)": (
        "F1204 10:00:00.000 123 widget.cc:12] Widget coordinator lost contact with host-3 during start-up",
        "F1204 10:00:00.000 123 widget.cc:12] Widget coordinator lost contact with host-3",
    ),
    "Internal": (
        "RuntimeError: INTERNAL: Widget buffer of 4096 bytes overflows the arena",
        "RuntimeError: INTERNAL: Widget buffer of 4096 bytes fits the arena",
    ),
    "emitOpError": (
        "error: 'tpu.widget' op Expected the sublane count to divide 12 for a widget layout",
        "error: 'tpu.widget' op Expected the sublane count to divide 12",
    ),
}


def test_cxx_status_messages_and_streams_become_templates() -> None:
    sites = {str(s["exception"]): s for s in cxx_sites_of(CXX, "lib/widget/widget.cc")}
    assert set(sites) == set(LINES)  # the comment, the bare CHECK and the short message give none
    for code, (line, nearby) in LINES.items():
        pattern = re.compile(str(sites[code]["pattern"]))
        assert pattern.search(line), code
        assert not pattern.search(nearby), code
        assert sites[code]["module"] == "lib/widget/widget.cc"
    assert sites["InvalidArgumentError"]["function"] == "CheckWidgetInputs"
    assert sites["XLA_CHECK"]["function"] == "StartWidgetClient"
    assert sites["InvalidArgumentError"]["line"] == 4
    assert "nullptr" not in str(sites["XLA_CHECK"]["pattern"])  # a check's condition is code, not kept
    assert "second" not in str(sites["Internal"]["pattern"])  # the message's first line only


PY = """
def shard(x, n):
    if n:
        raise ValueError(f"Cannot shard the widget axis {n} over a mesh of {x} devices")
"""


def test_a_snapshot_python_module_is_named_as_it_imports_and_records_its_source() -> None:
    snapshot = Snapshot(repo="owner/widgets", commit="a" * 40, roots=["src/widgets"], python_base="src")
    table = LocationTable(
        categories=[
            CategoryLocations(category="shape_dtype_error", modules=["widgets.sharding"]),
            CategoryLocations(category="runtime_init_failure", modules=["native/client"]),
        ]
    )
    files = {
        "src/widgets/sharding/__init__.py": PY,
        "src/widgets/other.py": PY.replace("widget", "gadget"),  # not mapped: not mined
        "native/client/widget.cc": CXX,
    }
    sites = mine_files(files, snapshot, table)
    py = [s for s in sites if str(s["path"]).endswith(".py")]
    assert [(s["module"], s["function"], s["line"]) for s in py] == [("widgets.sharding", "shard", 4)]
    assert all(s["repo"] == "owner/widgets" for s in sites)
    assert {s["module"] for s in sites} == {"widgets.sharding", "native/client/widget.cc"}
    assert module_of("src/widgets/a/b.py", "src") == "widgets.a.b"
    assert is_test_path("tunix/tests/mesh_test.py") and is_test_path("x/widget_test.cc")
    assert is_test_path("pkg/kernels/bench_widget.py")
    assert not is_test_path("torch_xla/csrc/tensor_methods.cpp")


def test_a_cxx_site_names_its_file_its_repository_and_source_whatever_class_the_binding_raised(
    tmp_path: Path,
) -> None:
    site = {
        "module": "native/client/widget.cc",
        "function": "StartWidgetClient",
        "exception": "XLA_CHECK",
        "pattern": r"Could\ not\ start\ the\ widget\ client\ for\ device\ ",
        "anchor": "Could not start the widget client for device",
        "repo": "owner/widgets",
        "path": "native/client/widget.cc",
        "line": 12,
    }
    path = tmp_path / "sites.json"
    write_raise_sites(path, {}, [site], {"owner/widgets": "b" * 40})
    (loaded,) = load_raise_sites(path)
    url = f"https://github.com/owner/widgets/blob/{'b' * 40}/native/client/widget.cc#L12"
    assert loaded.source_url == url
    table = LocationTable(
        categories=[CategoryLocations(category="runtime_init_failure", modules=["native/client"])]
    )
    vote = location_vote([LINES["XLA_CHECK"][0]], table, [loaded])
    assert vote is not None and vote.category == "runtime_init_failure"
    assert vote.labels == [
        f"message raised in native/client/widget.cc (StartWidgetClient) of owner/widgets, {loaded.source_url}"
    ]
    assert location_vote([LINES["XLA_CHECK"][1]], table, [loaded]) is None
    # a folder entry names the files below it, not a file whose name merely starts the same
    other = RaiseSite(**{**site, "module": "native/clientele/widget.cc"})  # type: ignore[arg-type]
    assert location_vote([LINES["XLA_CHECK"][0]], table, [other]) is None


def test_the_shipped_snapshot_sites_name_their_source_and_the_file_stays_small() -> None:
    raw = json.loads(RAISE_SITES_FILE.read_text(encoding="utf-8"))
    assert RAISE_SITES_FILE.stat().st_size < 3_000_000
    snapshot_sites = [s for s in load_raise_sites() if s.repo]
    assert snapshot_sites and set(raw["snapshots"]) == {s.repo for s in snapshot_sites}
    for site in snapshot_sites:
        assert site.source_url.startswith(f"https://github.com/{site.repo}/blob/{site.commit}/{site.path}#L")
        assert site.line > 0


@pytest.mark.parametrize(
    ("repo", "module", "function", "category"),
    [
        ("apple/axlearn", "axlearn.cloud.gcp.jobs.launch", "", "runtime_init_failure"),
        ("apple/axlearn", "axlearn.common.utils", "infer_mesh_shape", "runtime_init_failure"),
        ("apple/axlearn", "axlearn.common.input_base", "", "shape_dtype_error"),
        ("stanford-crfm/levanter", "levanter.optim.config", "", "runtime_init_failure"),
        ("AI-Hypercomputer/maxdiffusion", "maxdiffusion.pyconfig", "", "runtime_init_failure"),
    ],
)
def test_the_training_libraries_mined_from_snapshots_map_their_start_up_and_input_checks(
    repo: str, module: str, function: str, category: str
) -> None:
    table = load_locations()
    mapped = table.category_of_module(module, function)
    assert mapped is not None and mapped[0] == category
    assert any(s.repo == repo and s.module.startswith(module) for s in load_raise_sites())
    # a library's other helpers raise every kind of error: only the functions named map
    assert table.category_of_module("axlearn.common.utils", "flatten_items") is None


def test_a_message_two_libraries_raise_alike_keeps_the_site_whose_module_maps() -> None:
    """The build keeps one site per pattern; a later mapped site must not lose to an earlier unmapped one."""
    table = LocationTable(
        categories=[CategoryLocations(category="runtime_init_failure", modules=["trainer.config"])]
    )

    def site(module: str, line: int) -> dict[str, SiteValue]:
        return {"pattern": "Must set a mesh", "module": module, "function": "f", "line": line}

    unmapped, mapped, other_mapped = (
        site("serving.app", 1),
        site("trainer.config", 2),
        site("trainer.config", 3),
    )
    assert mapped_first([unmapped, mapped], table) == [mapped]
    assert mapped_first([mapped, unmapped], table) == [mapped]
    assert mapped_first([mapped, other_mapped], table) == [mapped]
    assert mapped_first([unmapped, site("serving.cli", 4)], table) == [unmapped]
    assert mapped_first([unmapped, {**mapped, "pattern": "other"}], table) == [
        unmapped,
        {**mapped, "pattern": "other"},
    ]
