"""XLA:TPU memory analysis without a TPU: TorchTPU builds the StableHLO, libtpu compiles it for a
compile-only topology.

Everything that imports torch_tpu runs once, in one child process (`measure` below), so this process
never initialises TorchTPU's device. On small shapes XLA:TPU keeps intermediates in on-chip VMEM and
reports no temporary HBM at all, so the temp checks use a training step (saved activations) and, for
growth with batch, sizes past v4's 16 MiB of VMEM.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from tpu_runtime.onboard import xla_memory
from tpu_runtime.onboard.xla_memory import missing_requirements, topology_for, xla_memory_analysis
from tpu_runtime.sandbox import ChildFailure, Limits, child_env, run_child

# compiles real models with XLA in a module fixture: slow as a whole
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent


class MLP(nn.Module):
    def __init__(self, d: int = 64, h: int = 256) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(nn.functional.gelu(self.up(x)))


class Block(nn.Module):
    """A pre-norm transformer block."""

    def __init__(self, d: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class DataDependent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return y if y.sum() > 0 else -y


def _param_bytes(model: nn.Module, dtype: torch.dtype | None = None) -> int:
    return sum(p.numel() * (dtype or p.dtype).itemsize for p in model.parameters())


def measure(payload: dict[str, Any]) -> dict[str, Any]:
    """Child side: every case the tests check, in one process."""
    torch.manual_seed(0)
    mlp, block = MLP(), Block()
    wide = MLP(64, 1024)
    cases: dict[str, tuple[nn.Module, tuple[Any, ...], str, dict[str, Any]]] = {
        "mlp": (mlp, (torch.randn(16, 64),), "v5e", {}),
        "mlp_bf16": (mlp, (torch.randn(16, 64),), "v5e", {"dtype": torch.bfloat16}),
        "block": (block, (torch.randn(2, 32, 64),), "v6e", {}),
        "block_train": (block, (torch.randn(2, 32, 64),), "v6e", {"training": True}),
        "wide_train_8k": (wide, (torch.randn(8192, 64),), "v4", {"training": True}),
        "wide_train_16k": (wide, (torch.randn(16384, 64),), "v4", {"training": True}),
        "data_dependent": (DataDependent(), (torch.randn(4, 8),), "v5e", {}),
        "unknown_generation": (mlp, (torch.randn(16, 64),), "v99", {}),
    }
    out: dict[str, Any] = {
        "param_bytes": {
            "mlp": _param_bytes(mlp),
            "mlp_bf16": _param_bytes(mlp, torch.bfloat16),
            "block": _param_bytes(block),
        }
    }
    for name, (model, args, generation, options) in cases.items():
        result, note = xla_memory_analysis(model, args, {}, generation, **options)
        out[name] = {"result": result.model_dump(mode="json") if result else None, "note": note}
    return out


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    missing = missing_requirements()
    if missing:
        pytest.skip(f"XLA memory analysis needs {', '.join(missing)} (the 'tpu' extra); not importable here")
    env = child_env({"PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])})
    try:
        out = run_child("test_xla_memory:measure", {}, Limits(timeout_s=240), env=env)
    except ChildFailure as exc:
        pytest.fail(f"measuring child failed: {exc.message}\n{exc.detail}")
    if out["mlp"]["result"] is None and "importable" in out["mlp"]["note"]:
        pytest.skip(out["mlp"]["note"])
    return out


def _ok(measured: dict[str, Any], name: str) -> dict[str, Any]:
    result: dict[str, Any] | None = measured[name]["result"]
    assert result is not None, measured[name]["note"]
    return result


def test_topology_names() -> None:
    assert topology_for("v6e") == ("v6e", "v6e:1x1")
    assert topology_for("Trillium") == ("v6e", "v6e:1x1")
    assert topology_for("v5p") == ("v5p", "v5p:1x1x1")
    assert topology_for("ironwood") == ("tpu7x", "tpu7x:1x1x1")
    assert topology_for("v6e:2x2") == ("v6e", "v6e:2x2")


def test_missing_torch_tpu_fails_soft(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(xla_memory, "_prepare_environment", lambda: None)
    monkeypatch.setattr(xla_memory, "missing_requirements", lambda: ["torch_tpu", "libtpu"])
    result, note = xla_memory_analysis(MLP(), (torch.randn(2, 64),), {}, "v6e")
    assert result is None
    assert "torch_tpu" in note and "libtpu" in note and "'tpu' extra" in note


@pytest.mark.slow
@pytest.mark.needs_torch_tpu
def test_mlp_arguments_hold_the_parameters(measured: dict[str, Any]) -> None:
    mlp = _ok(measured, "mlp")
    assert mlp["mode"] == "inference" and mlp["topology"] == "v5e:1x1" and mlp["dtype"] == "float32"
    assert mlp["state_bytes"] == measured["param_bytes"]["mlp"]
    assert mlp["argument_bytes"] >= mlp["state_bytes"] + mlp["input_bytes"]
    assert mlp["output_bytes"] >= 16 * 64 * 4
    assert mlp["generated_code_bytes"] > 0
    assert mlp["total_bytes"] == (
        mlp["argument_bytes"]
        + mlp["output_bytes"]
        - mlp["alias_bytes"]
        + mlp["temp_bytes"]
        + mlp["generated_code_bytes"]
    )


@pytest.mark.needs_torch_tpu
def test_bf16_halves_the_parameters(measured: dict[str, Any]) -> None:
    mlp, bf16 = _ok(measured, "mlp"), _ok(measured, "mlp_bf16")
    assert bf16["dtype"] == "bfloat16"
    assert bf16["state_bytes"] == measured["param_bytes"]["mlp_bf16"]
    assert bf16["argument_bytes"] >= bf16["state_bytes"]
    assert bf16["argument_bytes"] < mlp["argument_bytes"]


@pytest.mark.needs_torch_tpu
def test_transformer_block(measured: dict[str, Any]) -> None:
    block = _ok(measured, "block")
    assert block["argument_bytes"] >= measured["param_bytes"]["block"]
    assert block["output_bytes"] >= 2 * 32 * 64 * 4


@pytest.mark.needs_torch_tpu
def test_training_step_has_gradients_and_temporaries(measured: dict[str, Any]) -> None:
    train = _ok(measured, "block_train")
    assert train["mode"] == "training"
    assert train["argument_bytes"] >= measured["param_bytes"]["block"]
    assert train["output_bytes"] >= measured["param_bytes"]["block"]  # one gradient per parameter
    assert train["temp_bytes"] > 0


@pytest.mark.needs_torch_tpu
def test_bigger_batch_needs_more_temporaries(measured: dict[str, Any]) -> None:
    small, big = _ok(measured, "wide_train_8k"), _ok(measured, "wide_train_16k")
    assert small["topology"] == "v4:1x1x1"
    assert 0 < small["temp_bytes"] < big["temp_bytes"]
    # the saved hidden activation (batch x 1024 floats) has to live somewhere in HBM at 16k
    assert big["temp_bytes"] >= 16384 * 1024 * 4


@pytest.mark.needs_torch_tpu
def test_failures_come_back_as_reasons(measured: dict[str, Any]) -> None:
    assert measured["data_dependent"]["result"] is None
    assert "reads tensor values" in measured["data_dependent"]["note"]
    assert measured["unknown_generation"]["result"] is None
    assert "v99" in measured["unknown_generation"]["note"]
