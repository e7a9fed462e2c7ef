"""Op capture: forward and backward ops, each traced to the module and user line behind it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from tpu_runtime.onboard.loader import load_model
from tpu_runtime.onboard.op_capture import capture_ops
from tpu_runtime.onboard.shrink import shallow_copy

MODEL = """
import torch
from torch import nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)
    def forward(self, x):
        h = F.gelu(self.fc(x))
        return self.norm(h) + x

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.blocks = nn.ModuleList(Block() for _ in range(6))
        self.out = nn.Linear(8, 16)
    def forward(self, ids):
        x = self.emb(ids)
        for block in self.blocks:
            x = block(x)
        idx = (ids > 3).nonzero()
        if x.mean() > 10:
            x = x * 0
        return self.out(x)

def get_model(): return Net()
def get_inputs(): return (torch.randint(0, 16, (2, 5)),)
"""


def _capture(write_model: Callable[..., Path]) -> tuple[dict[tuple[str, str], object], Path]:
    path = write_model(MODEL)
    loaded = load_model(path)
    capture, out = capture_ops(loaded.model, loaded.args, loaded.kwargs, [path.parent])
    assert out.shape == (2, 5, 16)
    return {(r.op, r.phase): r for r in capture.raw_ops()}, path


@pytest.mark.slow
def test_forward_and_backward_ops_with_sources(write_model: Callable[..., Path]) -> None:
    ops, _path = _capture(write_model)
    fwd_gelu = ops[("aten::gelu", "forward")]
    assert fwd_gelu.count == 6  # type: ignore[attr-defined]
    assert fwd_gelu.module == "blocks.0" and fwd_gelu.source == "model.py:12"  # type: ignore[attr-defined]
    assert "F.gelu" in fwd_gelu.source_text  # type: ignore[attr-defined]
    bwd = ops[("aten::gelu_backward", "backward")]
    assert bwd.count == 6 and bwd.source == "model.py:12"  # type: ignore[attr-defined]
    assert ops[("aten::embedding_dense_backward", "backward")].source == "model.py:22"  # type: ignore[attr-defined]
    assert ops[("aten::native_layer_norm_backward", "backward")].module.endswith(".norm")  # type: ignore[attr-defined]
    assert ops[("aten::nonzero", "forward")].source == "model.py:25"  # type: ignore[attr-defined]
    sync = ops[("aten::_local_scalar_dense", "forward")]
    assert sync.source_text.startswith("if x.mean()")  # type: ignore[attr-defined]


@pytest.mark.slow
def test_model_mode_and_grads_are_restored(write_model: Callable[..., Path]) -> None:
    path = write_model(MODEL)
    loaded = load_model(path)
    loaded.model.eval()
    capture_ops(loaded.model, loaded.args, loaded.kwargs, [path.parent])
    assert not loaded.model.training
    assert all(p.grad is None for p in loaded.model.parameters())


def test_activation_bytes_grow_with_batch() -> None:
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 64))
    small, _ = capture_ops(model, (torch.randn(4, 64),), {}, [])
    big, _ = capture_ops(model, (torch.randn(64, 64),), {}, [])
    assert 0 < small.peak_live_bytes < big.peak_live_bytes
    assert big.saved_bytes >= 64 * 256 * 4  # the ReLU output is kept for backward


def test_shallow_copy_keeps_op_set_and_restores(write_model: Callable[..., Path]) -> None:
    path = write_model(MODEL)
    loaded = load_model(path)
    full, _ = capture_ops(loaded.model, loaded.args, loaded.kwargs, [path.parent])
    with shallow_copy(loaded.model) as shrink:
        assert len(loaded.model.get_submodule("blocks")) == 2  # type: ignore[arg-type]
        short, _ = capture_ops(loaded.model, loaded.args, loaded.kwargs, [path.parent])
    assert len(loaded.model.get_submodule("blocks")) == 6  # type: ignore[arg-type]
    assert shrink.depth_ratio == 3.0 and "blocks 6->2" in shrink.describe()
    assert set(full.ops) == set(short.ops)
    assert full.ops[("aten::gelu", "forward")].count == 6 and short.ops[("aten::gelu", "forward")].count == 2
