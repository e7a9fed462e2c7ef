"""Logs held in JSON (notebooks, Cloud Logging exports, Docker and JSON-lines loggers) read as plain logs."""

from __future__ import annotations

import json
from pathlib import Path

from tpu_runtime.diagnose.jsonlog import unwrap
from tpu_runtime.router import FileKind, classify_path

OOM = (
    "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00G. "
    "That was not possible. There are 2.05G free."
)
TRACEBACK = [
    "\u001b[0;31m---------------------------------------------------------------------------\u001b[0m",
    "\u001b[0;31mXlaRuntimeError\u001b[0m                           Traceback (most recent call last)",
    "\u001b[0;32m<ipython-input-3-1f2e>\u001b[0m in \u001b[0;36m<module>\u001b[0;34m()\u001b[0m\n"
    "\u001b[0;32m----> 1\u001b[0;31m \u001b[0mtrain\u001b[0m\u001b[0;34m(\u001b[0m\u001b[0;34m)\u001b[0m\n",
    f"\u001b[0;31mXlaRuntimeError\u001b[0m: {OOM}",
]


def _notebook() -> dict[str, object]:
    return {
        "cells": [
            {"cell_type": "markdown", "source": ["# Training"]},
            {
                "cell_type": "code",
                "source": ["import jax"],
                "outputs": [
                    {"output_type": "stream", "name": "stdout", "text": ["devices: 8\n", "step 0\n"]}
                ],
            },
            {
                "cell_type": "code",
                "source": ["train()"],
                "outputs": [
                    {"output_type": "execute_result", "data": {"text/plain": ["Array([1.0])"]}},
                    {
                        "output_type": "error",
                        "ename": "XlaRuntimeError",
                        "evalue": OOM,
                        "traceback": TRACEBACK,
                    },
                ],
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _diagnosed(path: Path) -> tuple[list[str], list[str], list[str]]:
    from tpu_runtime.diagnose.job import run_diagnose

    report = run_diagnose([str(path)])
    crash = report.crashes[0]
    return [c.category for c in report.crashes], crash.evidence.lines, report.notes


def test_a_notebook_is_read_as_its_outputs(tmp_path: Path) -> None:
    unwrapped = unwrap(json.dumps(_notebook(), indent=1), "colab.ipynb")
    assert unwrapped is not None
    lines = unwrapped.text.splitlines()
    assert lines[:2] == ["devices: 8", "step 0"]
    assert "Array([1.0])" not in unwrapped.text  # values shown are not log output
    assert lines[-1].endswith(OOM) and "2 notebook cell(s)" in unwrapped.note
    path = tmp_path / "colab.ipynb"
    path.write_text(json.dumps(_notebook(), indent=1))
    categories, evidence, notes = _diagnosed(path)
    assert categories == ["hbm_oom"]
    assert evidence and all("\\n" not in line and '"evalue"' not in line for line in evidence)
    assert any("notebook cell" in note for note in notes)
    routed = classify_path(path)
    assert routed.kind is FileKind.crash_log and "RESOURCE_EXHAUSTED" in routed.detail


def test_a_cloud_logging_export_is_read_oldest_first(tmp_path: Path) -> None:
    """`gcloud logging read --format=json` lists newest first: the first error must come first again."""
    entries = [
        {
            "textPayload": "E0101 worker 1: terminating after the error on worker 0",
            "timestamp": "2026-01-01T00:00:09.5Z",
        },
        {
            "jsonPayload": {
                "message": f'Traceback (most recent call last):\n  File "train.py", line 9\n{OOM}'
            },
            "timestamp": "2026-01-01T00:00:02.123456789Z",
            "severity": "ERROR",
        },
        {"textPayload": "I0101 step 100 loss 2.31", "timestamp": "2026-01-01T00:00:01Z"},
    ]
    unwrapped = unwrap(json.dumps(entries, indent=2), "export.json")
    assert unwrapped is not None and "time order" in unwrapped.note
    lines = unwrapped.text.splitlines()
    assert lines[0] == "I0101 step 100 loss 2.31" and lines[1] == "Traceback (most recent call last):"
    assert lines[3] == OOM and lines[-1].startswith("E0101 worker 1")
    path = tmp_path / "export.json"
    path.write_text(json.dumps(entries))
    categories, evidence, _ = _diagnosed(path)
    assert categories == ["hbm_oom"] and any(line.startswith("RESOURCE_EXHAUSTED") for line in evidence)


def test_docker_and_json_lines_loggers(tmp_path: Path) -> None:
    docker = "\n".join(
        json.dumps({"log": line + "\n", "stream": "stderr", "time": f"2026-01-01T00:00:0{i}Z"})
        for i, line in enumerate(["Traceback (most recent call last):", '  File "serve.py", line 3', OOM])
    )
    unwrapped = unwrap(docker, "container-json.log")
    assert unwrapped is not None and unwrapped.text.splitlines()[-1] == OOM
    assert "time order" not in unwrapped.note  # already in order
    mixed = (
        json.dumps({"msg": "starting"})
        + "\nplain line among them\n"
        + "\n".join(json.dumps({"message": f"line {i}"}) for i in range(12))
    )
    found = unwrap(mixed)
    assert found is not None and found.text.splitlines()[:3] == [
        "starting",
        "plain line among them",
        "line 0",
    ]


QUOTA = "Quota 'TPUV6E' exhausted. Limit 8 in zone us-east5-b"


def test_an_audit_entry_gives_the_status_of_the_refused_call() -> None:
    entries = [
        {
            "protoPayload": {
                "status": {"code": 8, "message": "Quota 'TPUV6E' exhausted. Limit 8 in zone us-east5-b"}
            }
        },
        {"textPayload": "creating node pool tpu-pool"},
    ]
    unwrapped = unwrap(json.dumps(entries))
    assert unwrapped is not None
    assert unwrapped.text.splitlines() == [QUOTA, "creating node pool tpu-pool"]


def test_json_that_holds_no_log_is_left_alone() -> None:
    assert unwrap('{"lr": 0.1, "steps": 10}') is None
    assert unwrap("\n".join(json.dumps({"step": i, "loss": 2.0 - i / 10}) for i in range(5))) is None
    assert unwrap("plain text\nRuntimeError: boom\n") is None
    assert unwrap('{"cells": [{"cell_type": "code", "outputs": []}]}') is None
    truncated = json.dumps([{"textPayload": OOM}] * 3)[:-30]  # a cut export: neither JSON nor JSON lines
    assert unwrap(truncated) is None
