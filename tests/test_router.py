"""The rule-based router: accuracy on the labelled requests, file sniffing, and the route/chat commands."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.profiles_synth import varint
from tests.subprocess_support import run_text
from tpu_runtime.cli.app import app
from tpu_runtime.router import (
    AGENTS,
    DIAGNOSTICS,
    KERNELS,
    KNOWLEDGE,
    ONBOARDING,
    FileKind,
    RouteError,
    analyse,
    classify_path,
    route,
)

DATA = REPO / "tests" / "data" / "routing.yaml"
MIN_ACCURACY = 0.95
SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}


def xspace_bytes(plane_names: list[str]) -> bytes:
    """A minimal XSpace protobuf: field 1 (planes), each an XPlane with id (1) and name (2)."""
    body = b""
    for index, name in enumerate(plane_names, 1):
        encoded = name.encode()
        plane = b"\x08" + varint(index) + b"\x12" + varint(len(encoded)) + encoded
        body += b"\x0a" + varint(len(plane)) + plane
    return body


def write_fixture_files(root: Path, files: dict[str, dict[str, Any]]) -> None:
    for name, spec in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if "text" in spec:
            path.write_text(spec["text"])
        elif "gzip_json" in spec:
            path.write_bytes(gzip.compress(json.dumps(spec["gzip_json"]).encode()))
        elif "xspace" in spec:
            path.write_bytes(xspace_bytes(spec["xspace"]))
        else:
            raise AssertionError(f"routing.yaml: file {name} has no text, gzip_json or xspace")


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    data = yaml.safe_load(DATA.read_text())
    root = tmp_path_factory.mktemp("routing")
    write_fixture_files(root, data["files"])
    return root, data["cases"]


def test_labelled_set_is_big_and_balanced(labelled: tuple[Path, list[dict[str, Any]]]) -> None:
    _, cases = labelled
    assert len(cases) >= 60
    per_agent = Counter(case["agent"] for case in cases)
    assert set(per_agent) == set(AGENTS)
    assert min(per_agent.values()) >= 12, per_agent
    with_files = [c for c in cases if c.get("files")]
    assert len(with_files) >= 25
    assert len({c["request"] for c in cases if c["request"]}) == len([c for c in cases if c["request"]])


def test_routing_accuracy(labelled: tuple[Path, list[dict[str, Any]]]) -> None:
    root, cases = labelled
    confusion: Counter[tuple[str, str]] = Counter()
    wrong = []
    for case in cases:
        decision = route(case["request"], [root / f for f in case.get("files", [])])
        confusion[(case["agent"], decision.agent)] += 1
        assert decision.reason, case
        if decision.agent != case["agent"]:
            wrong.append(f"{case['request']!r} {case.get('files', [])}: {decision.agent} ({decision.reason})")
    right = sum(n for (want, got), n in confusion.items() if want == got)
    accuracy = right / len(cases)
    held_out = [c for c in cases if c.get("holdout")]
    print(
        f"\nrouting: {right}/{len(cases)} right ({accuracy:.1%}); {len(held_out)} of the cases are held out"
    )
    short = dict(zip(AGENTS, ("onboarding", "diagnostics", "kernels", "knowledge"), strict=True))
    print("labelled \\ routed " + "".join(f"{short[a]:>12}" for a in AGENTS))
    for want in AGENTS:
        print(f"{short[want]:<18}" + "".join(f"{confusion[(want, got)]:>12}" for got in AGENTS))
    for line in wrong:
        print("  wrong:", line)
    assert accuracy >= MIN_ACCURACY, wrong


# --- file sniffing -----------------------------------------------------------------------------------


def test_a_pallas_kernel_wins_over_the_module_around_it(tmp_path: Path) -> None:
    both = tmp_path / "op.py"
    both.write_text(
        "import torch\nfrom jax.experimental import pallas as pl\n\n"
        "class Wrap(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
    )
    model = tmp_path / "model.py"
    model.write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n")
    assert classify_path(both).kind is FileKind.pallas_kernel
    assert classify_path(model).kind is FileKind.model
    assert route("", [both]).agent == KERNELS
    assert route("", [model]).agent == ONBOARDING


def test_python_that_does_not_parse_is_still_read(tmp_path: Path) -> None:
    broken = tmp_path / "kernel.py"
    broken.write_text("from jax.experimental import pallas as pl\ndef kernel(x_ref, o_ref:\n")
    assert classify_path(broken).kind is FileKind.pallas_kernel


def test_a_kernel_compile_log_goes_to_kernels_only_beside_the_kernel(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    log.write_text(
        "Traceback (most recent call last):\nLoweringException: Mosaic failed to compile TPU kernel\n"
    )
    kernel = tmp_path / "k.py"
    kernel.write_text("import jax.experimental.pallas as pl\n")
    assert classify_path(log).kind is FileKind.kernel_error_log
    assert route("it fails", [log]).agent == DIAGNOSTICS
    assert route("it fails", [log, kernel]).agent == KERNELS


def test_the_error_at_the_end_of_a_long_log_is_found(tmp_path: Path) -> None:
    log = tmp_path / "run.txt"
    noise = "".join(f"I0101 00:00:{i % 60:02d} worker.cc:1] heartbeat {i}\n" for i in range(20000))
    log.write_text(noise + "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory\n")
    assert log.stat().st_size > 600_000
    evidence = classify_path(log)
    assert evidence.kind is FileKind.crash_log
    assert "RESOURCE_EXHAUSTED" in evidence.detail or "XlaRuntimeError" in evidence.detail


def test_binary_gzip_and_folder_kinds(tmp_path: Path) -> None:
    trace = tmp_path / "worker.pt.trace.json.gz"
    trace.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    junk = tmp_path / "junk.json.gz"
    junk.write_bytes(gzip.compress(b'{"hello": 1}'))
    bad_gzip = tmp_path / "cut.json.gz"
    bad_gzip.write_bytes(gzip.compress(b'{"traceEvents": [' * 1000)[:40])
    profile = tmp_path / "prof" / "plugins" / "profile" / "run1"
    profile.mkdir(parents=True)
    (profile / "host.xplane.pb").write_bytes(xspace_bytes(["/device:TPU:0"]))
    blob = tmp_path / "weights.bin"
    blob.write_bytes(b"\x00\x01" * 5000)
    assert classify_path(trace).kind is FileKind.torch_trace
    assert classify_path(junk).kind is FileKind.other
    assert classify_path(bad_gzip).kind in (FileKind.torch_trace, FileKind.other)  # never raises
    assert classify_path(tmp_path / "prof").kind is FileKind.xspace
    assert classify_path(blob).kind is FileKind.other
    assert route("", [blob]).agent == KNOWLEDGE  # nothing to go on


def test_other_encodings_and_compressions_route_as_diagnose_reads_them(tmp_path: Path) -> None:
    """The router reads UTF-16, NUL-padded and bzip2/xz files through the same content detector."""
    error = "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory\n"
    noise = "".join(f"I0101 00:00:{i % 60:02d} worker.cc:1] heartbeat {i}\n" for i in range(8000))
    files = {
        "powershell.txt": (noise + error).encode("utf-16"),  # long: the error is in the tail
        "padded.txt": error.encode() + bytes(4096),
        "run.log.xz": lzma.compress(error.encode()),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        evidence = classify_path(tmp_path / name)
        assert evidence.kind is FileKind.crash_log, (name, evidence.detail)
        assert "RESOURCE_EXHAUSTED" in evidence.detail or "XlaRuntimeError" in evidence.detail
    trace = tmp_path / "worker.pt.trace.json.bz2"
    trace.write_bytes(bz2.compress(b'{"traceEvents": []}'))
    assert classify_path(trace).kind is FileKind.torch_trace
    archive = tmp_path / "logs.zip"
    archive.write_bytes(b"PK\x03\x04" + bytes(64))
    assert classify_path(archive).kind is FileKind.other


def test_a_missing_path_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(RouteError, match=r"no-such\.log: no such file or folder$"):
        route("why", [tmp_path / "no-such.log"])


def test_close_calls_name_the_runner_up(tmp_path: Path) -> None:
    analysis = analyse("Explain what a BlockSpec index_map is in Pallas")
    assert analysis.decision.agent == KNOWLEDGE
    assert analysis.scores[KERNELS] > 0  # the Pallas words still count, at half weight


# --- commands ----------------------------------------------------------------------------------------


def test_route_command_json(tmp_path: Path) -> None:
    log = tmp_path / "worker0.log"
    log.write_text(
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Attempting to allocate 21.95G\n"
    )
    runner = CliRunner()
    result = runner.invoke(app, ["route", "what happened?", str(log), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert set(payload) == {"agent", "reason"}
    assert payload["agent"] == DIAGNOSTICS and "worker0.log is a crash log" in payload["reason"]

    missing = runner.invoke(app, ["route", "what happened?", str(tmp_path / "gone.log")])
    assert missing.exit_code == 2
    assert "gone.log: no such file or folder" in missing.output


def test_chat_reads_lines_from_stdin(tmp_path: Path) -> None:
    kernel = tmp_path / "rms.py"
    kernel.write_text("from jax.experimental import pallas as pl\n")
    lines = f"Is aten::nansum supported?\n\nvalidate {kernel}\nWhat is PJRT?\n"
    result = CliRunner().invoke(app, ["chat", "--json"], input=lines)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["agent"] for r in records] == [ONBOARDING, KERNELS, KNOWLEDGE]
    assert records[0]["command"] == "tpu-agent ops show aten::nansum"
    assert records[0]["tool"] == "mcp__tpu-onboarding__op_status"
    assert records[1]["files"] == [str(kernel)]
    assert records[2]["command"] == "tpu-agent ask 'What is PJRT?'"


def test_chat_without_a_key_refuses_llm_mode() -> None:
    result = CliRunner(env={"ANTHROPIC_API_KEY": ""}).invoke(app, ["chat", "--llm"], input="hello\n")
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY" in result.output


def test_the_cli_starts_without_heavy_imports() -> None:
    code = (
        "import sys\nfrom tpu_runtime.cli import app\n"
        "heavy = ('torch', 'jax', 'anthropic', 'mcp_servers', 'tpu_runtime.router')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    env = {**os.environ, **SAFE_ENV}
    done = run_text(
        [sys.executable, "-c", code],
        env=env,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"
