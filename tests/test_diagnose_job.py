"""run_diagnose: dispatch by kind, the typed profile and --compare, metrics reports, the JSON schema."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_FIXTURES
from tests.profiles_synth import load_space, scale_op, write_space
from tests.test_diagnose_detect import xspace_bytes
from tpu_runtime.cli.render.diagnose.facts import headline
from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.job import run_diagnose
from tpu_runtime.diagnose.metrics import analyze_metrics
from tpu_runtime.diagnose.profile_model import ProfileSummary
from tpu_runtime.diagnose.report import DiagnoseReport

DATA = REPO / "tests" / "data"
METRICS = DATA / "diagnose" / "pytorch_xla_metrics.txt"
V6E_PROFILE = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"
SLOW_OP = "broadcast_add_fusion.1"  # a loop fusion in the fixture's jit_f, 400 runs over 4 chips


def test_metrics_report_numbers_and_findings() -> None:
    s = analyze_metrics(METRICS.read_text(), "m.txt")
    assert (s.compilations, s.executions, s.device_to_host_transfers) == (23, 206, 229)
    assert s.compile_seconds == pytest.approx(4 * 60 + 11.602517001)
    assert s.fallback_ops == {"aten::_local_scalar_dense": 229, "aten::nonzero": 206}
    assert "xla::add" not in s.fallback_ops
    assert {f.kind for f in s.findings} == {"recompilation", "cpu_fallback", "host_sync"}
    quiet = analyze_metrics(
        "Metric: CompileTime\n  TotalSamples: 2\n  Accumulator: 10s\nMetric: ExecuteTime\n"
        "  TotalSamples: 500\n  Accumulator: 50s\nCounter: CachedCompile\n  Value: 498\n",
        "quiet.txt",
    )
    assert quiet.compilations == 2 and quiet.findings == []


def test_crash_log_and_metrics_from_paths_and_stdin() -> None:
    log = DATA / "crash_logs" / "vmem_oom" / "pallas_flash_scoped_vmem.log"
    report = run_diagnose([str(log), "-"], top=5, stdin=io.BytesIO(METRICS.read_bytes()))
    assert [i.kind for i in report.inputs] == ["crash_log", "metrics_report"]
    assert report.crashes[0].category == "vmem_oom" and report.metrics[0].compilations == 23
    assert {str(log), "-"} <= set(report.timings) and "step:detect" in report.timings
    ranked = report.findings
    assert ranked[0].kind == "vmem_oom" and ranked[0].source == str(log) and ranked[0].severity == "high"
    assert [f.severity for f in ranked] == sorted(
        (f.severity for f in ranked), key=["high", "medium", "low", "info"].index
    )
    assert {f.kind for f in ranked if f.source == "-"} == {"recompilation", "cpu_fallback", "host_sync"}


def test_bad_input_fails_before_any_analysis(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    with pytest.raises(BadInputError, match="empty file"):
        run_diagnose([str(DATA / "crash_logs" / "host_oom" / "dmesg_oom_killer.log"), str(empty)])
    with pytest.raises(BadInputError, match="only once"):
        run_diagnose(["-", "-"], stdin=io.BytesIO(b"x"))


def _slowed_copy(folder: Path, factor: float = 2.0) -> Path:
    """The v6e fixture with every run of SLOW_OP stretched by `factor` (tests/profiles_synth.py)."""
    space = load_space(V6E_PROFILE)
    assert scale_op(space, SLOW_OP, factor) == 400
    return write_space(space, folder / "plugins" / "profile" / "run" / "slow.xplane.pb")


@pytest.fixture(scope="module")
def slowed_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A profile log dir (plugins/profile/run/) holding the slowed copy of the v6e fixture."""
    if not V6E_PROFILE.is_file():
        pytest.skip(f"shared fixture {V6E_PROFILE} is absent (the shared/ folder beside the checkout)")
    folder = tmp_path_factory.mktemp("slowed")
    _slowed_copy(folder)
    return folder


def test_profile_slot_is_the_typed_summary(tmp_path: Path) -> None:
    profile = tmp_path / "host.xplane.pb"
    profile.write_bytes(xspace_bytes("/host:CPU"))
    report = run_diagnose([str(profile), str(profile)], top=7)
    assert isinstance(report.profile, ProfileSummary)
    assert report.profile.path == str(profile) and report.profile.is_tpu is False
    assert report.comparison is None
    assert any("only the first profile" in n for n in report.notes)
    again = DiagnoseReport.model_validate_json(report.model_dump_json())
    assert again.profile == report.profile


def test_compare_needs_a_profile_on_both_sides(tmp_path: Path) -> None:
    profile = tmp_path / "host.xplane.pb"
    profile.write_bytes(xspace_bytes("/host:CPU"))
    log = DATA / "crash_logs" / "host_oom" / "dmesg_oom_killer.log"
    with pytest.raises(BadInputError, match=r"--compare takes an XProf profile.*crash log"):
        run_diagnose([str(profile)], compare=str(log))
    with pytest.raises(BadInputError, match="needs an XProf profile among the inputs"):
        run_diagnose([str(log)], compare=str(profile))
    with pytest.raises(BadInputError, match="no such file"):
        run_diagnose([str(profile)], compare=str(tmp_path / "missing.xplane.pb"))
    with pytest.raises(BadInputError, match="not standard input"):
        run_diagnose([str(profile)], compare="-")


@pytest.mark.skipif(not V6E_PROFILE.is_file(), reason="shared/fixtures/profiles is not present")
def test_real_profile_goes_through_the_reader() -> None:
    report = run_diagnose([str(V6E_PROFILE)], top=3)
    assert report.profile is not None and report.profile.is_tpu
    assert report.profile.device_kind == "TPU v6 Lite" and len(report.profile.top_ops) == 3


def test_compare_against_the_baseline_shows_the_slowed_op(slowed_run: Path) -> None:
    """The slowed copy (run folder) against the untouched fixture as the baseline."""
    report = run_diagnose([str(slowed_run)], top=10, compare=str(V6E_PROFILE))
    diff = report.comparison
    assert diff is not None and report.profile is not None
    assert diff.before == str(V6E_PROFILE) and diff.after == str(slowed_run)
    assert diff.ops[0].name == SLOW_OP and diff.ops[0].status == "slower"
    assert diff.ops[0].change_percent == pytest.approx(100.0, abs=0.5)
    assert {c.status for c in diff.ops[1:]} <= {"unchanged", "added", "removed"}
    step = diff.metrics[0]
    assert step.before is not None and step.after is not None and step.after > step.before
    assert step.after == pytest.approx(report.profile.steps.mean_ms if report.profile.steps else 0.0)
    assert str(V6E_PROFILE) in report.timings and str(slowed_run) in report.timings
    assert "compared with baseline" in headline(report)
    # the other way round the same op is faster
    reverse = run_diagnose([str(V6E_PROFILE)], top=10, compare=str(slowed_run))
    assert reverse.comparison is not None
    assert {c.name: c.status for c in reverse.comparison.ops}[SLOW_OP] == "faster"


def test_json_schema_is_documented() -> None:
    schema = DiagnoseReport.model_json_schema()
    crash = schema["$defs"]["CrashDiagnosis"]["properties"]
    assert {"category", "facts", "cause", "fix", "citations", "evidence", "confidence"} <= set(crash)
    assert "unknown" in crash["category"]["enum"] and "hbm_oom" in crash["category"]["enum"]
    assert crash["facts"]["description"] and schema["properties"]["profile"]["description"]
    assert {"top_ops", "steps", "bound_by", "peaks"} <= set(schema["$defs"]["ProfileSummary"]["properties"])
    assert {"metrics", "ops", "summary"} <= set(schema["$defs"]["ProfileComparison"]["properties"])
    assert "comparison" in schema["properties"]


def test_the_constructed_report_is_what_validation_gives() -> None:
    """`diagnose` constructs its report from validated parts (no validation of the whole): the report of
    every kind of input dumps exactly as a report pydantic validates from that dump, and validating it
    again changes nothing."""
    paths = [str(METRICS), str(DATA / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log")]
    if V6E_PROFILE.is_file():
        paths.append(str(V6E_PROFILE))
    report = run_diagnose(paths, top=5)
    dumped = report.model_dump(mode="json")
    validated = DiagnoseReport.model_validate(dumped)
    assert validated.model_dump(mode="json") == dumped
    assert validated.model_dump_json() == report.model_dump_json()
