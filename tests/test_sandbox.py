"""The user's model runs in a child: every way it can fail ends in one line, and we survive."""

from __future__ import annotations

import os
import socket
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from tpu_runtime.sandbox import ChildFailure, Limits, describe_isolation, run_child

PROBE = "tpu_runtime.onboard.probe:run"
FAST = {"numerics": False, "fake_tpu": False}


def _probe(path: Path, limits: Limits | None = None, **extra: object) -> dict[str, object]:
    return run_child(PROBE, {"model_file": str(path), **FAST, **extra}, limits or Limits(timeout_s=60))


def _forward_fails(
    write_model: Callable[..., Path], imports: str, forward: str, limits: Limits | None = None
) -> ChildFailure:
    """How the probe fails on a model (after `import IMPORTS`) whose forward on `torch.ones(2)` runs the
    statements `forward`."""
    body = textwrap.indent(forward, " " * 8)
    source = f"import {imports}\nclass Model(torch.nn.Module):\n    def forward(self, x):\n{body}\n"
    path = write_model(
        source + "def get_model(): return Model()\ndef get_inputs(): return (torch.ones(2),)\n"
    )
    with pytest.raises(ChildFailure) as info:
        _probe(path, limits)
    return info.value


@pytest.mark.slow
def test_model_that_raises_gives_one_line(write_model: Callable[..., Path]) -> None:
    failure = _forward_fails(
        write_model, "torch", 'raise RuntimeError("shape mismatch in my layer\\nsecond line")'
    )
    assert failure.kind == "raised"
    assert "shape mismatch in my layer" in failure.message and "\n" not in failure.message
    assert "Traceback" in failure.detail


@pytest.mark.slow
def test_hanging_model_is_stopped(write_model: Callable[..., Path]) -> None:
    failure = _forward_fails(write_model, "time, torch", "time.sleep(600)", Limits(timeout_s=8))
    assert failure.kind == "timeout"
    assert "8 s" in failure.message


@pytest.mark.slow
def test_memory_hog_is_stopped(write_model: Callable[..., Path]) -> None:
    failure = _forward_fails(
        write_model,
        "torch",
        "keep = [torch.ones(2**28 // 4) for _ in range(64)]  # 16 GiB, touched\nreturn x",
        Limits(timeout_s=60, memory_bytes=2 * 2**30),
    )
    assert failure.kind in ("memory",)
    assert "GiB" in failure.message


@pytest.mark.slow
def test_crash_is_reported(write_model: Callable[..., Path]) -> None:
    failure = _forward_fails(write_model, "os, torch", "os._exit(3)")
    assert failure.kind == "crashed"
    assert "exit code 3" in failure.message


@pytest.mark.slow
def test_no_tensor_output(write_model: Callable[..., Path]) -> None:
    failure = _forward_fails(write_model, "torch", 'return {"label": "cat"}')
    assert failure.kind == "bad_output"
    assert "no tensor" in failure.message


@pytest.mark.slow
def test_file_without_convention(write_model: Callable[..., Path]) -> None:
    path = write_model("x = 1\n")
    with pytest.raises(ChildFailure) as info:
        _probe(path)
    assert info.value.kind == "bad_input"
    assert "get_model()" in info.value.message and "--entry" in info.value.message


@pytest.mark.slow
def test_child_environment_is_clean(
    write_model: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-secret")
    path = write_model(
        """
        import os, torch
        LEAK = os.environ.get("ANTHROPIC_API_KEY")
        class M(torch.nn.Module):
            def forward(self, x):
                if LEAK:
                    raise RuntimeError("leaked " + LEAK)
                return x * 2
        def get_model(): return M()
        def get_inputs(): return (torch.ones(2),)
        """
    )
    result = _probe(path)
    assert result["class_name"] == "M"


@pytest.mark.slow
def test_a_childs_peak_memory_is_its_own_not_its_parents(write_model: Callable[..., Path]) -> None:
    """ru_maxrss carries the parent's peak across fork and exec; the probe's figure must not."""
    path = write_model(
        """
        import torch
        def get_model(): return torch.nn.Linear(4, 4)
        def get_inputs(): return (torch.ones(2, 4),)
        """
    )
    ballast = bytearray(3 << 30)  # the parent (a pytest or MCP server) now holds 3 GiB
    for offset in range(0, len(ballast), 1 << 12):
        ballast[offset] = 1
    try:
        out = _probe(path)
    finally:
        del ballast
    assert 0 < int(out["peak_rss_bytes"]) < 2 << 30  # type: ignore[call-overload]


@pytest.mark.slow
def test_the_models_code_cannot_reach_a_server_the_parent_can(write_model: Callable[..., Path]) -> None:
    """The child has a network namespace of its own: a listener on loopback here is out of its reach."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=5).close()  # the parent reaches it
        path = write_model(
            f"""
            import socket, torch
            def get_model():
                socket.create_connection(("127.0.0.1", {port}), timeout=5)
                return torch.nn.Linear(2, 2)
            def get_inputs(): return (torch.ones(1, 2),)
            """
        )
        with pytest.raises(ChildFailure) as failure:
            _probe(path)
    assert "OSError" in failure.value.message or "unreachable" in failure.value.message.lower()


@pytest.mark.slow
def test_the_isolation_is_described_as_it_was(write_model: Callable[..., Path]) -> None:
    path = write_model(
        """
        import torch
        def get_model(): return torch.nn.Linear(2, 2)
        def get_inputs(): return (torch.ones(1, 2),)
        """
    )
    out = run_child(PROBE, {"model_file": str(path), **FAST}, Limits(timeout_s=60, memory_bytes=3 << 30))
    network = out["_child"]["network"]
    assert network.startswith("no network"), network
    text = describe_isolation(Limits(timeout_s=60, memory_bytes=3 << 30), network)
    assert "60 s" in text and "3.0 GiB" in text and "no network" in text and "sandbox" not in text
    assert "read and write the files your user can" in text  # no claim beyond what holds


def test_the_child_thread_count_is_set_on_purpose(monkeypatch: pytest.MonkeyPatch) -> None:
    from tpu_runtime.sandbox import child_env

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    env = child_env()
    assert int(env["OMP_NUM_THREADS"]) == len(os.sched_getaffinity(0))
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"  # idle threads sleep rather than spin on busy cores
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert child_env()["OMP_NUM_THREADS"] == "3"  # the person's own choice wins
    assert child_env()["OMP_WAIT_POLICY"] == "ACTIVE"
