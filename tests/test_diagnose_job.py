"""run_diagnose: dispatch by kind, the profile slot, the metrics report, and the JSON schema."""

from __future__ import annotations

import io
import sys
import types
from pathlib import Path

import pytest
from pydantic import BaseModel

from tests.conftest import REPO, SHARED_FIXTURES
from tests.test_diagnose_detect import xspace_bytes
from tpu_runtime.diagnose.errors import BadInputError
from tpu_runtime.diagnose.job import PROFILE_MODULE, run_diagnose
from tpu_runtime.diagnose.metrics import analyze_metrics
from tpu_runtime.diagnose.report import DiagnoseReport

DATA = REPO / "tests" / "data"
METRICS = DATA / "diagnose" / "pytorch_xla_metrics.txt"
V6E_PROFILE = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"


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


class _FakeSummary(BaseModel):
    path: str
    top: int
    bound_by: str = "device_bound"


def test_profile_slot_takes_the_reader_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    profile = tmp_path / "host.xplane.pb"
    profile.write_bytes(xspace_bytes("/host:CPU"))
    fake = types.ModuleType(PROFILE_MODULE)
    fake.analyze_profile = lambda path, top: _FakeSummary(path=str(path), top=top)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, PROFILE_MODULE, fake)
    report = run_diagnose([str(profile), str(profile)], top=7)
    assert report.profile == {"path": str(profile), "top": 7, "bound_by": "device_bound"}
    assert any("only the first profile" in n for n in report.notes)


def test_profile_slot_says_when_the_reader_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tmp_path / "host.xplane.pb"
    profile.write_bytes(xspace_bytes("/host:CPU"))
    monkeypatch.setitem(sys.modules, PROFILE_MODULE, None)  # makes the import fail as if absent
    report = run_diagnose([str(profile)])
    assert report.profile is None
    assert any(n.startswith("profile analysis not installed") for n in report.notes)


@pytest.mark.skipif(not V6E_PROFILE.is_file(), reason="shared/fixtures/profiles is not present")
def test_real_profile_goes_through_the_installed_reader() -> None:
    pytest.importorskip(PROFILE_MODULE)
    report = run_diagnose([str(V6E_PROFILE)], top=3)
    assert report.profile is not None and report.profile.get("is_tpu") is True
    assert len(report.profile.get("top_ops", [])) <= 3


def test_json_schema_is_documented() -> None:
    schema = DiagnoseReport.model_json_schema()
    crash = schema["$defs"]["CrashDiagnosis"]["properties"]
    assert {"category", "facts", "cause", "fix", "citations", "evidence", "confidence"} <= set(crash)
    assert "unknown" in crash["category"]["enum"] and "hbm_oom" in crash["category"]["enum"]
    assert crash["facts"]["description"] and schema["properties"]["profile"]["description"]
