"""Profile analysis: agreement with xprof's own tools, the GPU control, compare, edge cases."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.conftest import SHARED_FIXTURES
from tests.profiles_synth import (
    add_steps_line,
    delay_module_runs,
    edit_device_stats,
    load_space,
    scale_op,
    synthesize,
    write_space,
)
from tests.profiles_xprof import (
    capture_cpu_profile,
    op_profile_nodes,
    percent,
    run_xprof,
    table,
    xprof_available,
)
from tpu_runtime.chips import get_chip
from tpu_runtime.diagnose import profile_intervals
from tpu_runtime.diagnose.profile import ProfileSummary, analyze_profile
from tpu_runtime.diagnose.profile_compare import compare_profiles
from tpu_runtime.diagnose.profile_intervals import busy_within, merge_intervals, self_times
from tpu_runtime.diagnose.profile_planes import async_start_of
from tpu_runtime.diagnose.profile_summary import HOST_BOUND_IDLE_PERCENT
from tpu_runtime.diagnose.xspace import NotAProfileError, TruncatedProfileError, read_planes

PROFILES = SHARED_FIXTURES / "profiles"
V6E = PROFILES / "tpu_v6e_inference.xplane.pb"
GPU = PROFILES / "gpu_v100_bert.xplane.pb"
GIB_PER_GB = 1e9 / 2**30
#: Relative tolerance against xprof: both read the same integers; only float summation order differs.
REL = 1e-6
MODULE = "jit_f("  # the busiest module of the v6e fixture (100 runs per chip)
SLOW_OP = "broadcast_add_fusion.1"


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"shared fixture {path} is absent (the shared/ folder beside the checkout)")
    return path


@pytest.fixture(scope="module")
def v6e() -> ProfileSummary:
    return analyze_profile(need(V6E), top=10)


@pytest.fixture(scope="module")
def host_bound_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The v6e profile with 1 s of idle inserted before every run of the busiest module."""
    space = load_space(need(V6E))
    assert delay_module_runs(space, MODULE, gap_ps=1_000_000_000_000) == 400
    return write_space(space, tmp_path_factory.mktemp("hostbound") / "hostbound.xplane.pb")


@pytest.fixture(scope="module")
def wide_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The v6e profile grown to 8 chips and two jittered repeats of its timeline."""
    space = synthesize(load_space(need(V6E)), devices=8, repeats=2)
    return write_space(space, tmp_path_factory.mktemp("wide") / "wide.xplane.pb")


@pytest.fixture(scope="module")
def cpu_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A profile captured here with jax.profiler on the CPU (a jitted matmul run five times)."""
    return capture_cpu_profile(tmp_path_factory.mktemp("cpu"))


@pytest.fixture(scope="module")
def xprof(host_bound_path: Path, wide_path: Path, cpu_path: Path) -> dict[str, Any]:
    """xprof's own tools on the profiles (one child process)."""
    if not xprof_available():
        pytest.skip("xprof is not installed (pip install 'xprof==2.24.*', a test dependency)")
    tools = ["overview_page", "hlo_stats", "roofline_model", "op_profile"]
    v6e_out, slow_out, wide_out, gpu_out, cpu_out = run_xprof(
        [
            (need(V6E), tools),
            (host_bound_path, ["overview_page"]),
            (wide_path, ["overview_page", "hlo_stats"]),
            (need(GPU), ["overview_page"]),
            (cpu_path, ["overview_page", "hlo_stats", "op_profile", "trace_viewer"]),
        ]
    )
    return {"v6e": v6e_out, "host_bound": slow_out, "wide": wide_out, "gpu": gpu_out, "cpu": cpu_out}


def props(overview: dict[str, Any], key: str) -> str:
    """A property from whichever table of the overview page carries it."""
    for part in overview["data"]:
        value = (part.get("p") or {}).get(key)
        if value is not None:
            return str(value)
    raise KeyError(key)


# --- agreement with xprof ------------------------------------------------------------------------


@pytest.mark.slow
def test_device_busy_idle_and_run_environment_agree_with_overview_page(
    v6e: ProfileSummary, xprof: dict[str, Any]
) -> None:
    overview = xprof["v6e"]["overview_page"]
    assert v6e.device_time is not None
    # xprof prints one decimal; its idle time in ps is printed with 6 significant digits
    assert v6e.device_time.busy_percent == pytest.approx(
        percent(props(overview, "device_duty_cycle_percent")), abs=0.051
    )
    idle_ps = float(props(overview, "idle_time_high_confidence_ps"))
    assert v6e.device_time.idle_ms * 1e9 == pytest.approx(idle_ps, rel=1e-5)
    assert v6e.device_kind == props(overview, "device_type")
    assert v6e.device_count == int(props(overview, "device_core_count"))
    assert v6e.mxu_utilization_percent == pytest.approx(
        percent(props(overview, "mxu_utilization_percent")), abs=0.051
    )
    # xprof finds no step markers in this profile; we say where our steps come from instead
    assert float(props(overview, "steptime_ms_average")) == 0.0
    assert v6e.steps is not None and v6e.steps.source.startswith("XLA module jit_f")


def test_idle_added_on_the_device_shows_in_both_tools(host_bound_path: Path, xprof: dict[str, Any]) -> None:
    slowed = analyze_profile(host_bound_path)
    overview = xprof["host_bound"]["overview_page"]
    assert slowed.device_time is not None
    assert slowed.device_time.busy_percent == pytest.approx(
        percent(props(overview, "device_duty_cycle_percent")), abs=0.051
    )
    assert slowed.device_time.idle_ms * 1e9 == pytest.approx(
        float(props(overview, "idle_time_high_confidence_ps")), rel=1e-5
    )
    assert slowed.bound_by == "host_bound"
    assert slowed.steps is not None
    assert slowed.steps.idle_ms == pytest.approx(1000.0, rel=0.01)  # the inserted second per step
    assert slowed.steps.idle_percent >= HOST_BOUND_IDLE_PERCENT


def test_top_ops_agree_with_hlo_stats(v6e: ProfileSummary, xprof: dict[str, Any]) -> None:
    """Each op row is xprof's; an async pair is the sum of xprof's two rows (start and done)."""
    rows = {(r["program_id"], r["hlo_op_name"]): r for r in table(xprof["v6e"]["hlo_stats"]["data"])}
    assert v6e.distinct_ops == len(rows)
    starts = {op.paired_with for op in v6e.top_ops if op.paired_with}
    assert starts, "the fixture's copy-start ops pair with their copy-done ops"

    def self_us(r: dict[str, Any]) -> float:
        pair = rows.get((r["program_id"], async_start_of(r["hlo_op_expression"]) or ""))
        return r["total_self_time"] + (pair["total_self_time"] if pair else 0.0)

    ranked = sorted((r for r in rows.values() if r["hlo_op_name"] not in starts), key=lambda r: -self_us(r))
    assert [op.name for op in v6e.top_ops] == [r["hlo_op_name"] for r in ranked[: len(v6e.top_ops)]]
    peak = v6e.peaks.hbm_gigabytes_per_second if v6e.peaks else None
    assert peak
    for op in v6e.top_ops:
        row = rows[(op.program_id, op.name)]
        start = rows[(op.program_id, op.paired_with)] if op.paired_with else None
        assert op.occurrences == row["occurrences"]
        assert op.self_time_ms * 1e3 == pytest.approx(self_us(row), rel=REL)  # xprof: microseconds
        total = row["total_time"] + (start["total_time"] if start else 0.0)
        assert op.total_time_ms * 1e3 == pytest.approx(total, rel=REL)
        assert op.category == row["category"]
        # xprof gives rates; the FLOPs and bytes per run follow from them and the self time
        seconds = row["total_self_time"] / 1e6
        assert op.flops * op.occurrences == pytest.approx(row["model_flop_rate"] * 1e9 * seconds, rel=1e-5)
        if start is None:
            assert op.gigabytes_per_second is not None
            assert op.gigabytes_per_second * GIB_PER_GB == pytest.approx(row["measured_memory_bw"], rel=1e-5)
        elif op.gigabytes_per_second is not None:  # the pair's bytes once, over both halves' time
            assert op.gigabytes_per_second <= peak
            moved = op.bytes_accessed * op.occurrences
            assert op.gigabytes_per_second == pytest.approx(moved / (self_us(row) / 1e6) / 1e9, rel=1e-6)
        assert op.bound == ("compute" if row["bound_by"] == "Compute" else "memory")
        if start is None:  # per-op rates and averages as hlo_stats prints them
            assert op.avg_self_time_us == pytest.approx(row["avg_self_time"], rel=1e-5)
            assert op.gflops_per_second == pytest.approx(row["model_flop_rate"], rel=1e-5)
            if op.operational_intensity:
                assert op.operational_intensity == pytest.approx(row["operational_intensity"], rel=1e-5)
        if op.framework_op:
            assert op.framework_op == row["tf_op_name"]
        if op.source:
            assert op.source in row["source_info"]


def test_categories_time_classes_and_pair_bytes_agree_with_op_profile(
    v6e: ProfileSummary, xprof: dict[str, Any]
) -> None:
    """op_profile's per-category time is ours; the time classes are sums of its categories (the
    off-device idle is the overview page's); an async pair moves the bytes op_profile gives its halves."""
    nodes = op_profile_nodes(xprof["v6e"]["op_profile"]["data"]["byProgram"])
    by_category: dict[str, float] = {}
    for node in nodes:
        if node["depth"] == 2:  # program -> category
            by_category[node["name"]] = by_category.get(node["name"], 0.0) + node["metrics"]["rawTime"]
    for c in v6e.categories:
        assert c.self_time_ms * 1e9 == pytest.approx(by_category[c.category], rel=REL)
    shares = {t.time_class: t for t in v6e.time_breakdown}
    classes = {"host_transfers": ("copy-done", "copy-start"), "hbm": ("loop fusion", "broadcast")}
    classes["collectives"] = ("all-reduce",)
    for time_class, categories in classes.items():
        expected = sum(by_category[c] for c in categories)
        assert shares[time_class].ms * 1e9 == pytest.approx(expected, rel=REL)
    idle_ps = float(props(xprof["v6e"]["overview_page"], "idle_time_high_confidence_ps"))
    assert shares["idle"].ms * 1e9 == pytest.approx(idle_ps, rel=1e-5)
    assert sum(t.percent for t in v6e.time_breakdown) == pytest.approx(100.0)
    leaves = {n["name"]: n["metrics"] for n in nodes if n["depth"] == 3}
    for op in v6e.top_ops:
        if op.paired_with:  # xprof puts a pair's bytes on one half or the other, never on both
            moved = (
                leaves[op.name]["rawBytesAccessedArray"][0]
                + leaves[op.paired_with]["rawBytesAccessedArray"][0]
            )
            assert op.bytes_accessed * op.occurrences == pytest.approx(moved, rel=1e-6)


def test_cpu_capture_agrees_with_xprof(cpu_path: Path, xprof: dict[str, Any]) -> None:
    """A jax.profiler capture on the CPU: no device ops in either tool, and the host events are the ones
    xprof's trace viewer shows (names, counts, threads)."""
    summary = analyze_profile(cpu_path, top=50)
    out = xprof["cpu"]
    assert not summary.is_tpu and summary.top_ops == [] and summary.distinct_ops == 0
    assert table(out["hlo_stats"]["data"]) == []
    assert out["op_profile"]["data"]["deviceType"] == "CPU_ONLY"
    assert out["op_profile"]["data"]["byProgram"].get("children", []) == []
    events = [
        e
        for e in out["trace_viewer"]["data"]["traceEvents"]
        if e.get("ph") == "X" and e.get("pid") == _host_pid(out)
    ]
    counts: dict[str, int] = {}
    for e in events:
        counts[e["name"]] = counts.get(e["name"], 0) + 1
    assert summary.host is not None
    # the trace viewer leaves some zero-length events out (ThreadpoolListener regions)
    timed = [e for e in summary.host.top_events if e.self_time_ms > 0]
    assert len(timed) >= 3
    for event in timed:
        assert event.count == counts[event.name], event.name
    assert all(e.self_time_ms == 0 for e in summary.host.top_events if e.name not in counts)


def _host_pid(out: dict[str, Any]) -> int:
    for e in out["trace_viewer"]["data"]["traceEvents"]:
        if e.get("name") == "process_name" and e["args"]["name"] == "/host:CPU":
            return int(e["pid"])
    raise KeyError("/host:CPU")


def test_peaks_and_program_roofline_agree_with_roofline_model(
    v6e: ProfileSummary, xprof: dict[str, Any]
) -> None:
    model = xprof["v6e"]["roofline_model"]["data"]
    params = model[0]["p"]
    assert v6e.peaks is not None and v6e.peaks.source == "device_plane" and v6e.peaks.chip == "v6e"
    assert v6e.peaks.teraflops_per_second * 1000 == pytest.approx(float(params["peak_flop_rate"]), rel=1e-5)
    # xprof's roofline prints the HBM peak in GiB/s (the device plane says 1637.99 GB/s)
    assert v6e.peaks.hbm_gigabytes_per_second * GIB_PER_GB == pytest.approx(
        float(params["peak_hbm_bw"]), rel=1e-4
    )
    assert v6e.peaks.ridge_flops_per_byte == pytest.approx(float(params["hbm_ridge_point"]), rel=1e-4)
    program = next(r for r in table(model[0]) if r["category"] == "Program")
    assert v6e.roofline is not None
    assert v6e.roofline.program_time_ms * 1e3 == pytest.approx(program["total_time"], rel=REL)
    assert v6e.roofline.gflops_per_second == pytest.approx(program["measured_flop_rate"], rel=1e-5)
    assert v6e.roofline.gigabytes_per_second * GIB_PER_GB == pytest.approx(
        program["measured_memory_bw"], rel=1e-5
    )
    assert v6e.roofline.bound == ("compute" if program["bound_by"] == "Compute" else "memory")
    # utilisation: the program's rates over the per-core peaks, both as the roofline model gives them
    assert v6e.roofline.hbm_utilization_percent == pytest.approx(
        100 * program["measured_memory_bw"] / float(params["peak_hbm_bw"]), rel=1e-4
    )
    assert v6e.roofline.flops_utilization_percent == pytest.approx(
        100 * program["measured_flop_rate"] / float(params["peak_flop_rate"]), rel=1e-4
    )
    # an op's share of the device is its self time over the program time of all cores
    for op in v6e.top_ops:
        assert op.percent_of_device_time == pytest.approx(100 * op.self_time_ms * 1e3 / program["total_time"])
    hosts = next(
        part["p"] for part in xprof["v6e"]["overview_page"]["data"] if "host_count" in part.get("p", {})
    )
    assert len(v6e.hosts) == int(hosts["host_count"])


def test_gpu_control_is_not_a_tpu_profile(xprof: dict[str, Any]) -> None:
    summary = analyze_profile(need(GPU), top=5)
    overview = xprof["gpu"]["overview_page"]
    assert props(overview, "hardware_type") == "GPU"
    assert not summary.is_tpu
    assert summary.device_count == 0 and summary.other_devices == {
        "GPU": int(props(overview, "device_core_count"))
    }
    assert summary.peaks is None and summary.device_time is None and summary.steps is None
    assert summary.roofline is None and summary.top_ops == [] and summary.mxu_utilization_percent is None
    assert summary.bound_by == "unknown"
    assert "no TPU device planes" in summary.notes[0]
    assert summary.host is not None and summary.host.threads > 0 and len(summary.host.top_events) == 5
    assert summary.profile_duration_ms is not None and summary.profile_duration_ms > 0


# --- what the summary says ------------------------------------------------------------------------


def test_v6e_summary(v6e: ProfileSummary) -> None:
    assert v6e.is_tpu and v6e.device_count == 4 and v6e.chip_count == 4
    assert v6e.profile_duration_ms == pytest.approx(98_645.1, rel=1e-4)  # the Task Environment stamps
    assert v6e.steps is not None and v6e.steps.compute_ms + v6e.steps.idle_ms == pytest.approx(
        v6e.steps.mean_ms, rel=1e-9
    )
    assert v6e.categories[0].category == "copy-done"
    fusion = next(op for op in v6e.top_ops if op.name == SLOW_OP)
    assert fusion.framework_op == "jit(f)/jit(main)/add:"
    assert fusion.source is not None and fusion.source.endswith("host_offload_stress_test.py:29")
    assert fusion.program == "jit_f" and fusion.flops == 5 * 1024 * 1024 * 256
    assert fusion.operational_intensity == pytest.approx(0.125)
    assert fusion.expression is not None and fusion.expression.startswith(f"%{SLOW_OP} = ")


def test_verdict_follows_the_largest_share_of_device_time(v6e: ProfileSummary) -> None:
    """96.5% of the busy time is copy-done to host memory: a transfer-bound run, not 'device-bound'."""
    first = v6e.time_breakdown[0]
    assert first.time_class == "host_transfers" and first.percent > 80.0
    assert [t.percent for t in v6e.time_breakdown] == sorted(
        (t.percent for t in v6e.time_breakdown), reverse=True
    )
    assert v6e.bound_by == "transfer_bound"
    busy = sum(t.ms for t in v6e.time_breakdown if t.time_class != "idle")
    assert f"{100 * first.ms / busy:.1f}% of the busy time" in v6e.bound_reason
    assert "96.5% of the busy time" in v6e.bound_reason
    idle = next(t for t in v6e.time_breakdown if t.time_class == "idle")
    assert v6e.device_time is not None and idle.ms == pytest.approx(v6e.device_time.idle_ms)
    assert any("host transfers" in note for note in v6e.notes)


def test_async_pairs_steps_and_rates_are_physical() -> None:
    """copy-start ops fold into their copy-done ops; steps are counted once per host, not per chip; no
    byte rate above the chip's peak is printed."""
    v6e = analyze_profile(need(V6E), top=20)
    assert not any(op.category == "copy-start" for op in v6e.top_ops)
    pairs = [op for op in v6e.top_ops if op.paired_with]
    assert {op.paired_with for op in pairs} == {f"copy-start{s}" for s in ("", ".1", ".2", ".3", ".4", ".5")}
    for op in pairs:
        assert op.paired_with == op.name.replace("done", "start") and op.time_class == "host_transfers"
    assert v6e.peaks is not None and v6e.peaks.hbm_gigabytes_per_second
    rates = [op.gigabytes_per_second for op in v6e.top_ops if op.gigabytes_per_second is not None]
    assert rates and max(rates) <= v6e.peaks.hbm_gigabytes_per_second
    hidden = [op.name for op in v6e.top_ops if op.gigabytes_per_second is None]
    assert hidden and any("not shown" in note and hidden[0] in note for note in v6e.notes)
    assert v6e.steps is not None and v6e.steps.count == 99 and v6e.steps.windows == 4 * 99


def test_top_bounds_the_summary() -> None:
    small = analyze_profile(need(V6E), top=3)
    assert len(small.top_ops) == 3 and [op.rank for op in small.top_ops] == [1, 2, 3]
    assert small.host is not None and len(small.host.top_events) == 3 and len(small.categories) == 3
    assert len(json.dumps(small.model_dump())) < 8000
    with pytest.raises(ValueError, match="top"):
        analyze_profile(need(V6E), top=0)


def test_run_folder_with_two_hosts(tmp_path: Path, v6e: ProfileSummary) -> None:
    run = tmp_path / "plugins" / "profile" / "2025_03_11_12_00_00"
    run.mkdir(parents=True)
    for host in ("worker-0", "worker-1"):
        (run / f"{host}.xplane.pb").write_bytes(need(V6E).read_bytes())
    both = analyze_profile(tmp_path)
    assert both.hosts == ["worker-0", "worker-1"] and len(both.files) == 2
    assert both.device_count == 8 and both.chip_count == 8
    assert both.steps is not None and v6e.steps is not None and both.steps.count == v6e.steps.count
    assert both.top_ops[0].occurrences == 2 * v6e.top_ops[0].occurrences
    assert both.device_time is not None and v6e.device_time is not None
    assert both.device_time.busy_percent == pytest.approx(v6e.device_time.busy_percent, rel=1e-9)


def test_grown_profile_agrees_with_xprof_too(
    wide_path: Path, v6e: ProfileSummary, xprof: dict[str, Any]
) -> None:
    """8 chips and a repeated, jittered timeline: still xprof's numbers, and about 4x the fixture's."""
    big = analyze_profile(wide_path)
    assert big.device_count == 8 and big.chip_count == 8
    overview = xprof["wide"]["overview_page"]
    assert big.device_time is not None
    assert big.device_time.busy_percent == pytest.approx(
        percent(props(overview, "device_duty_cycle_percent")), abs=0.051
    )
    rows = {(r["program_id"], r["hlo_op_name"]): r for r in table(xprof["wide"]["hlo_stats"]["data"])}
    for op in big.top_ops:
        expected = rows[(op.program_id, op.name)]["total_self_time"]
        if op.paired_with:
            expected += rows[(op.program_id, op.paired_with)]["total_self_time"]
        assert op.self_time_ms * 1e3 == pytest.approx(expected, rel=REL)
    base = {op.name: op for op in v6e.top_ops}
    for op in big.top_ops[:4]:
        assert op.occurrences == 4 * base[op.name].occurrences
        # runs are shortened by up to 5% in the copies
        assert 0.94 * 4 * base[op.name].self_time_ms <= op.self_time_ms <= 4 * base[op.name].self_time_ms


def test_steps_line_is_preferred(tmp_path: Path) -> None:
    space = load_space(need(V6E))
    assert add_steps_line(space, MODULE) == 400
    summary = analyze_profile(write_space(space, tmp_path / "steps.xplane.pb"))
    assert summary.steps is not None and summary.steps.source == "Steps line" and summary.steps.count == 100
    runs = [
        e.duration_ps
        for plane in read_planes(need(V6E))
        if plane.name.startswith("/device:TPU:")
        for line in plane.lines()
        if line.name == "XLA Modules"
        for e in line.events()
        if plane.event_names[e.metadata_id].startswith(MODULE)
    ]
    assert summary.steps.mean_ms == pytest.approx(sum(runs) / len(runs) / 1e9, rel=1e-9)
    assert not any("No step markers" in note for note in summary.notes)


def test_peaks_fall_back_to_the_chip_table(tmp_path: Path) -> None:
    space = load_space(need(V6E))
    edit_device_stats(space, drop=("peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second"))
    summary = analyze_profile(write_space(space, tmp_path / "nopeaks.xplane.pb"))
    chip = get_chip("v6e")
    assert summary.peaks is not None and summary.peaks.source == "chip_table"
    assert summary.peaks.teraflops_per_second == chip.peak_bf16.value
    assert summary.peaks.hbm_gigabytes_per_second == chip.hbm_bandwidth.value
    assert any("chip table" in note for note in summary.notes)


def test_the_summary_holds_what_validation_would_make_of_it(tmp_path: Path, v6e: ProfileSummary) -> None:
    """The analyser constructs the report models without validating them (their schemas are built only
    when a report is written as JSON), so every field must already hold what validation would make of
    it, types included: `repr` tells 1 from 1.0 and a numpy scalar from a float."""
    space = load_space(need(V6E))
    edit_device_stats(space, drop=("peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second"))
    summaries = [
        v6e,
        analyze_profile(write_space(space, tmp_path / "nopeaks.xplane.pb")),
        analyze_profile(need(GPU)),
    ]
    for summary in summaries:
        assert repr(ProfileSummary.model_validate(summary.model_dump())) == repr(summary)


def test_unknown_kind_without_peaks_gives_no_roofline_verdict(tmp_path: Path) -> None:
    space = load_space(need(V6E))
    edit_device_stats(
        space, drop=("peak_teraflops_per_second", "peak_hbm_bw_gigabytes_per_second"), device_type="TPU v99"
    )
    summary = analyze_profile(write_space(space, tmp_path / "v99.xplane.pb"))
    assert summary.is_tpu and summary.device_kind == "TPU v99"
    assert summary.peaks is not None and summary.peaks.source == "none" and summary.peaks.chip is None
    fusion = next(op for op in summary.top_ops if op.name == SLOW_OP)
    assert fusion.bound == "unknown"
    assert any("TPU v99" in note for note in summary.notes)


def test_bad_input_raises_typed_errors(tmp_path: Path) -> None:
    cut = tmp_path / "cut.xplane.pb"
    cut.write_bytes(need(V6E).read_bytes()[:400_000])
    with pytest.raises(TruncatedProfileError):
        analyze_profile(cut)
    trace = tmp_path / "trace.json"
    trace.write_text('{"traceEvents": []}')
    with pytest.raises(NotAProfileError):
        analyze_profile(trace)


# --- compare -----------------------------------------------------------------------------------------


def test_compare_with_itself_shows_no_change(v6e: ProfileSummary) -> None:
    same = compare_profiles(v6e, analyze_profile(need(V6E), top=10))
    assert {c.status for c in same.ops} == {"unchanged"} and len(same.ops) == len(v6e.top_ops)
    assert all(m.change_percent == 0.0 for m in same.metrics if m.change_percent is not None)
    assert "no change" in same.summary


def test_compare_finds_the_slowed_op(tmp_path: Path, v6e: ProfileSummary) -> None:
    space = load_space(need(V6E))
    assert scale_op(space, SLOW_OP, 2.0) == 400
    slowed = analyze_profile(write_space(space, tmp_path / "slow.xplane.pb"), top=10)
    diff = compare_profiles(v6e, slowed)
    by_name = {c.name: c for c in diff.ops}
    assert by_name[SLOW_OP].status == "slower"
    assert by_name[SLOW_OP].change_percent == pytest.approx(100.0, abs=0.5)
    others = [c for c in diff.ops if c.name != SLOW_OP and c.status not in ("added", "removed")]
    assert others and all(c.status == "unchanged" for c in others)
    assert diff.ops[0].name == SLOW_OP
    step = diff.metrics[0]
    assert step.before is not None and step.after is not None and step.after > step.before
    assert "1 slower" in diff.summary
    reverse = compare_profiles(slowed, v6e)
    assert {c.name: c.status for c in reverse.ops}[SLOW_OP] == "faster"


def test_compare_across_kinds_refuses_device_figures(v6e: ProfileSummary) -> None:
    gpu = analyze_profile(need(GPU), top=10)
    for diff in (compare_profiles(v6e, gpu), compare_profiles(gpu, v6e)):
        assert diff.ops == [] and [m.name for m in diff.metrics] == ["profile length (ms)"]
        assert diff.refused is not None and "\n" not in diff.refused and diff.summary == diff.refused
        assert "not compared: step time" in diff.refused and "TPU v6 Lite" in diff.refused
        assert "GPU devices" in diff.refused and diff.comparable == "the profile length only"
    same = compare_profiles(v6e, v6e)
    assert same.refused is None and same.comparable == "all figures"


def test_compare_reports_ops_entering_and_leaving_the_top_list(v6e: ProfileSummary) -> None:
    top3 = analyze_profile(need(V6E), top=3)
    diff = compare_profiles(top3, v6e)
    assert {c.name for c in diff.ops if c.status == "added"} == {op.name for op in v6e.top_ops[3:]}
    assert not [c for c in diff.ops if c.status == "removed"]


# --- interval arithmetic against plain Python ------------------------------------------------------


def reference_self_times(start: list[int], end: list[int]) -> list[int]:
    """Self time by walking a stack, the way xprof nests ops: a child lies wholly inside its parent."""
    own = [e - s for s, e in zip(start, end, strict=True)]
    stack: list[int] = []
    for i in sorted(range(len(start)), key=lambda k: (start[k], -end[k])):
        while stack and not (start[stack[-1]] <= start[i] and end[i] <= end[stack[-1]]):
            stack.pop()
        if stack:
            own[stack[-1]] -= end[i] - start[i]
        stack.append(i)
    return own


def random_tree(rng: random.Random, lo: int, hi: int, depth: int, out: list[tuple[int, int]]) -> None:
    cursor = lo
    while cursor < hi and rng.random() < 0.8:
        begin = rng.randint(cursor, hi)
        finish = rng.randint(begin, min(hi, begin + (hi - lo) // 2 + 1))
        out.append((begin, finish))
        if depth and finish > begin:
            random_tree(rng, begin, finish, depth - 1, out)
        cursor = finish + rng.randint(0, 3)


#: Both ways of computing self times: vectorised for every line, and as shipped (a stack walk below
#: `SMALL_LINE` events).
SELF_TIME_PATHS = pytest.mark.parametrize(
    "small_line", [2, profile_intervals.SMALL_LINE], ids=["vectorised", "as-set"]
)


@SELF_TIME_PATHS
def test_self_times_match_a_stack_on_random_nested_events(
    small_line: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(profile_intervals, "SMALL_LINE", small_line)
    rng = random.Random(7)
    for _ in range(200):
        spans: list[tuple[int, int]] = []
        random_tree(rng, 0, 10_000, 4, spans)
        rng.shuffle(spans)
        start = [s for s, _ in spans]
        end = [e for _, e in spans]
        got = self_times(np.array(start, dtype=np.int64), np.array(end, dtype=np.int64)).tolist()
        assert got == reference_self_times(start, end)


@SELF_TIME_PATHS
def test_self_times_of_overlapping_events(small_line: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """B sticks out of A, so it is not A's child; C lies inside B (and A) and is B's child only."""
    monkeypatch.setattr(profile_intervals, "SMALL_LINE", small_line)
    start = np.array([0, 5, 6, 20], dtype=np.int64)
    end = np.array([10, 15, 8, 20], dtype=np.int64)
    assert self_times(start, end).tolist() == [10, 8, 2, 0]
    rng = np.random.default_rng(5)
    for _ in range(50):
        begin = rng.integers(0, 1000, 40)
        finish = begin + rng.integers(0, 300, 40)
        assert self_times(begin, finish).tolist() == reference_self_times(begin.tolist(), finish.tolist())


def test_self_times_match_a_stack_on_the_host_threads_of_both_fixtures() -> None:
    checked = 0
    for path in (need(V6E), need(GPU)):
        for plane in read_planes(path):
            if plane.name != "/host:CPU":
                continue
            for line in plane.lines():
                cols = line.columns()
                start, end = cols.offset_ps, cols.offset_ps + cols.duration_ps
                assert self_times(start, end).tolist() == reference_self_times(start.tolist(), end.tolist())
                checked += len(cols)
    assert checked > 30_000


def test_union_and_busy_windows_match_brute_force() -> None:
    rng = np.random.default_rng(3)
    start = rng.integers(0, 500, 60)
    end = start + rng.integers(0, 40, 60)
    covered = np.zeros(600, dtype=bool)
    for s, e in zip(start, end, strict=True):
        covered[s:e] = True
    seg_start, seg_end = merge_intervals(start, end)
    assert int(np.sum(seg_end - seg_start)) == int(covered.sum())
    assert np.all(seg_start[1:] > seg_end[:-1])
    lo = rng.integers(0, 550, 30)
    hi = lo + rng.integers(0, 80, 30)
    expected = [int(covered[a:b].sum()) for a, b in zip(lo, hi, strict=True)]
    assert busy_within(seg_start, seg_end, lo, hi).tolist() == expected


def test_async_start_of_names_the_start_op_of_each_done_kind() -> None:
    """The operand of a done op is its start op, whatever the tuple shapes in between."""
    cases = {
        "%copy-done.4 = f32[8]{0} copy-done((f32[8], f32[8]{0:S(5)}, u32[]) %copy-start.4)": "copy-start.4",
        "%all-reduce-done = f32[4]{0} all-reduce-done(f32[4]{0} %all-reduce-start.1), metadata={}": (
            "all-reduce-start.1"
        ),
        "%send-done.2 = token[] send-done((f32[2], u32[], token[]) %send.2), channel_id=3": "send.2",
        "%fusion.7 = f32[8]{0} fusion(f32[8]{0} %copy-done.4), kind=kLoop": None,
        "%copy-start = (f32[8], f32[8], u32[]) copy-start(f32[8]{0} %param.0)": None,
    }
    for hlo, start in cases.items():
        assert async_start_of(hlo) == start, hlo
