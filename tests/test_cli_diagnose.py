"""`tpu-agent diagnose` as a user runs it: exit codes, --json, stdin, --md/--html, one-line errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.test_diagnose_detect import TRACE, xspace_bytes
from tpu_runtime.cli.app import app

DATA = REPO / "tests" / "data"
HBM_LOG = DATA / "crash_logs" / "hbm_oom" / "jax_train_step_compile.log"
UNKNOWN_LOG = DATA / "crash_logs" / "unknown" / "keyerror_in_collate.log"
METRICS = DATA / "diagnose" / "pytorch_xla_metrics.txt"

runner = CliRunner()


def _steps_trace(path: Path) -> Path:
    """A Chrome trace with three ProfilerStep#N, a data-loader wait in one and an aten::item in each."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
    for n, start in enumerate((0, 12_000, 20_000)):
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{n}",
                "pid": 1,
                "tid": 1,
                "ts": start,
                "dur": 10_000 if n != 1 else 7_000,
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "enumerate(DataLoader)#_Iter.__next__",
                "pid": 1,
                "tid": 1,
                "ts": start + 10,
                "dur": 6_000 if n == 1 else 100,
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::addmm",
                "pid": 1,
                "tid": 1,
                "ts": start + 6_500,
                "dur": 300,
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::item",
                "pid": 1,
                "tid": 1,
                "ts": start + 6_900,
                "dur": 50,
            }
        )
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_crash_log_json() -> None:
    result = runner.invoke(app, ["diagnose", str(HBM_LOG), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    crash = report["crashes"][0]
    assert crash["category"] == "hbm_oom"
    assert {"facts", "cause", "fix", "citations"} <= set(crash)
    assert crash["facts"]["tpu_generation"] == "v5e" and crash["citations"][0]["url"].startswith("https://")


def test_unknown_crash_still_exits_zero_and_says_so() -> None:
    result = runner.invoke(app, ["diagnose", str(UNKNOWN_LOG)])
    assert result.exit_code == 0
    assert "unknown" in result.stdout and "KeyError" in result.stdout and "data.py:112" in result.stdout


def test_stdin() -> None:
    result = runner.invoke(app, ["diagnose", "-", "--json"], input=HBM_LOG.read_bytes())
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["crashes"][0]["source"] == "-"
    assert runner.invoke(app, ["diagnose", "-"], input=METRICS.read_text()).exit_code == 0


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.log", b"", "empty file"),
        ("cut.xplane.pb", xspace_bytes("/host:CPU", "/device:TPU:0")[:-11], "truncated XSpace"),
        ("trace.json.gz", b"\x1f\x8b\x08\x00" + b"\xff" * 64, "corrupt gzip"),
        ("fake.json.gz", json.dumps(TRACE).encode(), "not gzip"),
        ("blob.bin", bytes(range(256)) * 4, "binary data"),
        ("cut.json", json.dumps(TRACE).encode()[:-20], "truncated or invalid trace JSON"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    result = runner.invoke(app, ["diagnose", str(path)])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and reason in lines[0]


def test_stdin_empty_and_missing_path_exit_2(tmp_path: Path) -> None:
    assert runner.invoke(app, ["diagnose", "-"], input=b"").exit_code == 2
    result = runner.invoke(app, ["diagnose", str(tmp_path / "nope.log")])
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_markdown_and_html_reports(tmp_path: Path) -> None:
    trace = _steps_trace(tmp_path / "trace.json")
    gz = tmp_path / "trace.json.gz"
    gz.write_bytes(gzip.compress(trace.read_bytes()))
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    result = runner.invoke(
        app, ["diagnose", str(HBM_LOG), str(gz), str(METRICS), "--md", str(md), "--html", str(html)]
    )
    assert result.exit_code == 0, result.output
    text = md.read_text()
    assert "hbm\\_oom" in text and "### Steps" in text and "aten::item" in text
    assert "https://openxla.org/xla/errors/error_1000" in text
    page = html.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page.lower()
    assert page.count("<svg") == 1 and 'aria-label="step durations' in page
    assert "src=" not in page  # self-contained: nothing loaded from elsewhere
    assert "dataloader_stall" in page and "host_sync" in page


def test_cli_module_does_not_import_heavy_libraries() -> None:
    code = (
        "import sys, tpu_runtime.cli.diagnose_cmd as m\n"
        "heavy = [n for n in ('torch', 'jax', 'numpy', 'matplotlib', 'ijson') if n in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.strip() == ""
