"""`tpu-agent diagnose` as a user runs it: exit codes, --json, stdin, --md/--html, errors, profiles."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from typer.testing import CliRunner

from tests.conftest import REPO, SHARED_FIXTURES
from tests.profiles_synth import load_space, scale_op, write_space
from tests.test_diagnose_detect import TRACE, xspace_bytes
from tpu_runtime.cli.app import app
from tpu_runtime.cli.render.diagnose.html import ROOFLINE_LABEL, label_groups, roofline_figure
from tpu_runtime.diagnose.profile import analyze_profile

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
    assert {"facts", "cause", "fix", "citations", "evidence"} <= set(crash)
    assert crash["evidence"]["lines"] and crash["evidence"]["fix_rule"].startswith("hbm_oom")
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
        ("fake.json.gz", gzip.compress(bytes(range(256)) * 8), "binary data"),
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


# --- profiles: --compare, and the summary in every renderer ------------------------------------------

V6E = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"
SLOW_OP = "broadcast_add_fusion.1"
_SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}


@pytest.fixture(scope="module")
def slowed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared v6e profile with one loop fusion twice as slow (tests/profiles_synth.py)."""
    if not V6E.is_file():
        pytest.skip(f"shared fixture {V6E} is absent (the shared/ folder beside the checkout)")
    space = load_space(V6E)
    assert scale_op(space, SLOW_OP, 2.0) == 400
    return write_space(space, tmp_path_factory.mktemp("slowed") / "slow.xplane.pb")


def _number(cell: str) -> float:
    """A rendered figure back as a number: '77,773', '21.2%', '1.342 GFLOP', '10.74 GB'."""
    match = re.fullmatch(r"([-+0-9.,e]+)\s*([kMGTPE]?)(?:FLOP|B)?%?", cell.strip())
    assert match, cell
    return float(match.group(1).replace(",", "")) * _SI[match.group(2)]


def _shows(cell: str, value: float) -> bool:
    """Whether a rendered figure is `value` rounded to the digits it prints (half a unit in the last)."""
    match = re.fullmatch(r"([-+0-9.,]+)(e[-+]\d+)?\s*([kMGTPE]?)(?:FLOP|B)?%?", cell.strip())
    assert match, cell
    mantissa, exponent, prefix = match.groups()
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    unit = 10.0 ** (int(exponent[1:]) if exponent else 0) * _SI[prefix]
    return abs(_number(cell) - value) <= 0.5 * 10.0**-decimals * unit * (1 + 1e-9)


def _md_table(text: str, heading: str) -> list[dict[str, str]]:
    """The rows of the Markdown table under the first heading that starts with `heading`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = [line for line in lines[start + 1 :] if line.startswith("|")]
    block = rows[: next((i for i, r in enumerate(rows[1:], 1) if not r.startswith("|")), len(rows))]
    cells = [[c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]] for row in block]
    header, body = cells[0], cells[2:]
    end = next((i for i, row in enumerate(body) if len(row) != len(header)), len(body))
    return [dict(zip(header, row, strict=True)) for row in body[:end]]


@pytest.mark.slow
def test_compare_in_json_terminal_markdown_and_html(tmp_path: Path, slowed: Path) -> None:
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    result = runner.invoke(app, ["diagnose", str(slowed), "--compare", str(V6E), "--top", "8", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["profile"] == analyze_profile(slowed, 8).model_dump(mode="json")
    diff = data["comparison"]
    assert diff["before"] == str(V6E) and diff["ops"][0]["name"] == SLOW_OP
    assert diff["ops"][0]["status"] == "slower" and "1 slower" in diff["summary"]

    shown = runner.invoke(
        app,
        ["diagnose", str(slowed), "--compare", str(V6E), "--top", "8", "--md", str(md), "--html", str(html)],
        env={"COLUMNS": "220"},
    )
    assert shown.exit_code == 0, shown.output
    for words in (
        "host-transfer-bound",
        "top 8 of 17 ops by self time",
        "MXU utilisation",
        "compared with baseline",
    ):
        assert words in shown.stdout, words
    assert re.search(rf"slower\s+{re.escape(SLOW_OP)}\s+8,155\s+16,31\d\s+\+100\.0%", shown.stdout)

    text = md.read_text()
    assert "## Compared with the baseline profile" in text
    changed = {
        row["op"].strip("`").replace("\\_", "_"): row for row in _md_table(text, "### Top ops, average")
    }
    assert changed[SLOW_OP]["status"] == "slower" and changed[SLOW_OP]["change"] == "+100.0%"
    metrics = {row["metric"]: row for row in _md_table(text, "## Compared with the baseline")}
    step = diff["metrics"][0]
    assert _shows(metrics["step time mean (ms)"]["baseline"], step["before"])
    assert _shows(metrics["step time mean (ms)"]["this run"], step["after"])

    page = html.read_text()
    assert page.count("<svg") == 1 and f'aria-label="{ROOFLINE_LABEL}"' in page
    assert "<script" not in page.lower() and "src=" not in page
    assert 'id="comparison"' in page and "status-slower" in page


@pytest.mark.skipif(not V6E.is_file(), reason="shared/fixtures/profiles is not present")
def test_markdown_numbers_match_the_profile_summary(tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    assert runner.invoke(app, ["diagnose", str(V6E), "--top", "10", "--md", str(md)]).exit_code == 0
    summary = analyze_profile(V6E, 10)
    text = md.read_text()
    rows = _md_table(text, "### Top 10 of 17 ops by self time")
    assert [row["#"] for row in rows] == [str(op.rank) for op in summary.top_ops]
    for row, op in zip(rows, summary.top_ops, strict=True):
        assert row["op"] == f"`{op.paired_with} + {op.name}`" if op.paired_with else f"`{op.name}`"
        for column, value in (
            ("self time (ms)", op.self_time_ms),
            ("% of device", op.percent_of_device_time),
            ("avg/run (µs)", op.avg_self_time_us),
            ("FLOPs/run", op.flops),
            ("bytes/run", op.bytes_accessed),
            ("FLOP/B", op.operational_intensity or 0.0),
            ("GFLOP/s", op.gflops_per_second),
        ):
            assert _shows(row[column], value), (op.name, column, row[column], value)
        if op.gigabytes_per_second is None:  # above the chip's peak: not printed (a note says why)
            assert row["GB/s"] == "—"
        else:
            assert _shows(row["GB/s"], op.gigabytes_per_second)
        assert row["bound"] == op.bound
        if op.source:
            assert row["source"] == f"`{op.source}`" and row["framework op"] == f"`{op.framework_op}`"
    overview = dict(
        re.findall(r"^\| (step time|device busy / idle|program roofline) \| (.+) \|$", text, flags=re.M)
    )
    assert summary.steps is not None and summary.device_time is not None and summary.roofline is not None
    mean = re.search(r"mean ([\d,.]+) ms", overview["step time"])
    assert mean and _shows(mean.group(1), summary.steps.mean_ms)
    busy = re.search(r"busy ([\d.]+%)", overview["device busy / idle"])
    assert busy and _shows(busy.group(1), summary.device_time.busy_percent)
    rate = re.search(r"([\d,.]+) GB/s per core", overview["program roofline"])
    assert rate and _shows(rate.group(1), summary.roofline.gigabytes_per_second)


@pytest.mark.slow
@pytest.mark.skipif(not V6E.is_file(), reason="shared/fixtures/profiles is not present")
def test_roofline_chart_beside_the_step_timeline(tmp_path: Path) -> None:
    trace = _steps_trace(tmp_path / "trace.json")
    html = tmp_path / "r.html"
    result = runner.invoke(app, ["diagnose", str(trace), str(V6E), "--html", str(html)])
    assert result.exit_code == 0, result.output
    page = html.read_text()
    assert page.count("<svg") == 2
    assert 'aria-label="step durations' in page and f'aria-label="{ROOFLINE_LABEL}"' in page

    summary = analyze_profile(V6E, 10)
    fig = roofline_figure(summary)
    assert fig is not None and summary.peaks is not None and summary.peaks.teraflops_per_second
    ax = fig.axes[0]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    roof = ax.get_lines()[0].get_ydata()
    assert max(roof) == pytest.approx(summary.peaks.teraflops_per_second * 1e12)
    labels = [t for t in ax.texts if t.get_text()[:1].isdigit()]
    ranks = [int(r) for t in labels for r in t.get_text().split(", ")]
    points = sorted((float(x), float(y)) for c in ax.collections for x, y in c.get_offsets())
    drawn = [op for op in summary.top_ops if op.flops and op.bytes_accessed]
    assert drawn and sorted(ranks) == [op.rank for op in drawn]
    assert summary.roofline is not None  # the whole program is the one extra point
    expected = sorted(
        [(op.operational_intensity or 0.0, op.gflops_per_second * 1e9) for op in drawn]
        + [(summary.roofline.operational_intensity or 0.0, summary.roofline.gflops_per_second * 1e9)]
    )
    assert len(points) == len(expected)
    for (x, y), (want_x, want_y) in zip(points, expected, strict=True):
        assert (x, y) == (pytest.approx(want_x), pytest.approx(want_y))


@pytest.mark.skipif(not V6E.is_file(), reason="shared/fixtures/profiles is not present")
def test_roofline_labels_do_not_overlap() -> None:
    """Ops 5-7 of the fixture land on one spot: one label '5, 6, 7', and no two labels cross."""
    summary = analyze_profile(V6E, 10)
    fig = roofline_figure(summary)
    assert fig is not None
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = [t for t in fig.axes[0].texts if t.get_text()[:1].isdigit()]
    assert "5, 6, 7" in [t.get_text() for t in texts]
    boxes = [t.get_window_extent(renderer) for t in texts]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    assert label_groups([(1, 1.0, 1.0), (2, 1.05, 1.02), (3, 10.0, 1.0)]) == [
        ("1, 2", 1.0, 1.0),
        ("3", 10.0, 1.0),
    ]


def test_no_roofline_without_tpu_peaks(tmp_path: Path) -> None:
    profile = tmp_path / "host.xplane.pb"
    profile.write_bytes(xspace_bytes("/host:CPU"))
    html = tmp_path / "r.html"
    assert runner.invoke(app, ["diagnose", str(profile), "--html", str(html)]).exit_code == 0
    page = html.read_text()
    assert "<svg" not in page and "no TPU device planes" in page


@pytest.mark.skipif(not V6E.is_file(), reason="shared/fixtures/profiles is not present")
def test_op_table_reads_whole_in_an_80_column_terminal() -> None:
    """Op names are not folded every few characters; FLOPs and bytes come back on a wide terminal."""
    narrow = runner.invoke(app, ["diagnose", str(V6E)], env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    assert all(len(line) <= 80 for line in narrow.stdout.splitlines())
    assert re.search(r"^ 1   copy-start\.4 \+ copy-done\.4 +77,773", narrow.stdout, flags=re.M)
    assert "host_offload_stress_test.py:29" in narrow.stdout and "FLOPs/run" not in narrow.stdout
    wide = runner.invoke(app, ["diagnose", str(V6E)], env={"COLUMNS": "160"})
    assert "FLOPs/run" in wide.stdout and "1.342 GFLOP" in wide.stdout
