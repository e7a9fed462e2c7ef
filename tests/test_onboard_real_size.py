"""Onboarding at real size: published architectures built from their configs on fake tensors, and
KernelBench-style files whose inputs would not fit this machine."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from tests.kernelbench_problems import GIANT_MATMUL
from tpu_runtime.onboard import hf_config as hf
from tpu_runtime.onboard.full_size import build_fake, fake_mode, forward_flops, parameter_stats
from tpu_runtime.onboard.job import OnboardRequest, run_onboard
from tpu_runtime.onboard.loader import LoadedModel
from tpu_runtime.onboard.preflight import KVCacheGeometry, kv_cache_bytes
from tpu_runtime.onboard.small_copy import Budget

CONFIGS = Path(__file__).parent / "data" / "hf_configs"
INDEX = yaml.safe_load((CONFIGS / "index.yaml").read_text())["configs"]
DEV = [c for c in INDEX if c["half"] == "dev"]
HELD_BACK = [c for c in INDEX if c["half"] == "held_back"]


def _fake_model(name: str) -> torch.nn.Module:
    config = hf.load_config(hf.read_config_dict(CONFIGS / f"{name}.json"))
    with fake_mode():
        return hf.build_model(config)


def _kv(name: str) -> KVCacheGeometry:
    config = hf.load_config(hf.read_config_dict(CONFIGS / f"{name}.json"))
    geometry = hf.kv_geometry(config)
    assert geometry is not None
    return KVCacheGeometry(**geometry.model_dump(), dtype_bytes=2)


@pytest.mark.parametrize("entry", INDEX, ids=[c["name"] for c in INDEX])
def test_parameter_count_matches_the_published_figure(entry: dict[str, Any]) -> None:
    params = parameter_stats(_fake_model(entry["name"]))[0]
    published = float(entry["published_parameters"])
    assert abs(params - published) / published < 0.01, (entry["name"], params, published)


@pytest.mark.parametrize("entry", INDEX, ids=[c["name"] for c in INDEX])
def test_kv_bytes_per_token_match_the_config_formula(entry: dict[str, Any]) -> None:
    geometry = _kv(entry["name"])
    assert geometry.bytes_per_token() == entry["kv_bytes_per_token_bf16"]
    assert kv_cache_bytes(geometry, batch=3, seq=100) == 300 * entry["kv_bytes_per_token_bf16"]


def test_sliding_window_layers_stop_growing_at_the_window() -> None:
    geometry = _kv("gemma2_9b")  # alternating sliding (4096) and global layers
    assert geometry.sliding_layers == 21 and geometry.sliding_window == 4096
    below = kv_cache_bytes(geometry, batch=1, seq=4096)
    above = kv_cache_bytes(geometry, batch=1, seq=8192)
    # only the 21 global layers keep growing past the window
    assert above - below == 21 * 2 * 8 * 256 * 2 * 4096


@pytest.mark.parametrize("name", ["llama3_8b", "mixtral_8x7b", "deepseek_v3", "qwen3_30b_a3b", "gemma2_9b"])
def test_shrunk_config_builds_small_and_runs_for_real(name: str) -> None:
    config = hf.load_config(hf.read_config_dict(CONFIGS / f"{name}.json"))
    small, changes = hf.shrink_config(config)
    assert any(c.startswith("num_hidden_layers") for c in changes)
    torch.manual_seed(0)
    model = hf.build_model(small).eval()
    assert parameter_stats(model)[0] < 50_000_000
    ids = torch.randint(0, small.vocab_size, (1, 8))
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    assert logits.shape == (1, 8, small.vocab_size) and torch.isfinite(logits).all()
    assert config.num_hidden_layers > small.num_hidden_layers  # the original config is untouched


def test_fake_build_reports_the_user_line_that_needed_data(tmp_path: Path) -> None:
    file = tmp_path / "reads_data.py"
    file.write_text(
        textwrap.dedent(
            """
            import torch
            scale = torch.ones(3)
            def build():
                return int(scale.sum().item())
            """
        )
    )
    from tpu_runtime.onboard.loader import import_user_file

    def loader() -> LoadedModel:
        module = import_user_file(file)
        size = module.build()
        return LoadedModel(model=torch.nn.Linear(size, size), args=(torch.randn(1, size),))

    loaded, failure = build_fake(loader, [tmp_path])
    assert loaded is None and failure is not None
    assert failure.where == "reads_data.py:5"
    assert "tpu_agent_user_reads_data" not in __import__("sys").modules


def test_flops_of_a_fake_matmul_cost_nothing() -> None:
    with fake_mode():
        a, b = torch.rand(32768, 32768), torch.rand(32768, 32768)
    flops = forward_flops(torch.nn.Identity(), (a @ b,), {})  # identity: no FLOPs of its own
    assert flops == 0
    mm = type("MM", (torch.nn.Module,), {"forward": lambda self, x, y: x @ y})()
    assert forward_flops(mm, (a, b), {}) == 2 * 32768**3


@pytest.fixture
def kernelbench_file(tmp_path: Path) -> Callable[[str], Path]:
    def write(source: str) -> Path:
        path = tmp_path / "problem.py"
        path.write_text(textwrap.dedent(source))
        return path

    return write


BIG_CONV = """
import torch
import torch.nn as nn

batch_size = 128
in_channels = 64
out_channels = 128
height = 512
width = 512
kernel_size = 3

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))

def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]

def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""


@pytest.mark.slow
def test_kernelbench_inputs_larger_than_memory_onboard(kernelbench_file: Callable[[str], Path]) -> None:
    path = kernelbench_file(GIANT_MATMUL)
    report = run_onboard(OnboardRequest(model_file=path, memory_gb=4, fake_tpu=False))
    size = report.size
    assert size is not None and size.full_size == "fake tensors"
    assert size.input_shapes == ["(32768, 32768) float32", "(32768, 32768) float32"]
    assert size.input_bytes == 2 * 32768 * 32768 * 4
    assert size.numerics_input_shapes and size.numerics_input_shapes != size.input_shapes
    assert "M 32768->" in size.numerics_model
    assert {u.op for u in report.ops} == {"aten::mm"}
    assert report.numerics is not None and report.numerics.rows
    assert report.numerics.compared_on == size.numerics_model
    assert report.peak_host_memory_bytes < 2 * 2**30


WIDE_SOFTMAX = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)

batch_size = 4096
dim = 393216

def get_inputs():
    return [torch.rand(batch_size, dim)]

def get_init_inputs():
    return []
"""


@pytest.mark.slow
def test_work_without_flops_still_shrinks_until_numerics_is_cheap(
    kernelbench_file: Callable[[str], Path],
) -> None:
    """A softmax over 6 GiB counts no FLOPs; its copy must still be small, not the first one under 512 MiB."""
    path = kernelbench_file(WIDE_SOFTMAX)
    report = run_onboard(OnboardRequest(model_file=path, fake_tpu=False, xla="none"))
    size = report.size
    assert size is not None and size.full_size == "fake tensors" and size.input_bytes == 4096 * 393216 * 4
    (shape,) = size.numerics_input_shapes
    rows, cols = (int(n) for n in shape.split(")")[0].strip("(").split(","))
    assert rows * cols * 4 <= Budget(memory_bytes=1 << 30).copy_input_bytes
    assert report.numerics is not None and report.numerics.rows


@pytest.mark.slow
def test_kernelbench_conv_with_a_large_batch(kernelbench_file: Callable[[str], Path]) -> None:
    path = kernelbench_file(BIG_CONV)
    report = run_onboard(OnboardRequest(model_file=path, memory_gb=4, fake_tpu=False))
    assert report.size is not None and report.size.full_size == "fake tensors"
    ops = {(u.op, u.phase) for u in report.ops}
    assert ("aten::convolution", "forward") in ops
    assert ("aten::convolution_backward", "backward") in ops
    assert report.model.parameters == 128 * 64 * 9 + 128  # the full-size model's, not the copy's
    assert report.numerics is not None and report.numerics.first_divergent_layer is None
    assert report.preflight is not None
    # activations at full size: the (128, 128, 512, 512) f32 conv output alone is 16 GiB
    assert report.preflight.breakdown.activations_inference >= 128 * 128 * 512 * 512 * 4


@pytest.mark.slow
def test_hf_config_at_full_size(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint"
    folder.mkdir()
    (folder / "config.json").write_text((CONFIGS / "mixtral_8x7b.json").read_text())
    report = run_onboard(
        OnboardRequest(
            hf_config=folder, batch=4, seq=256, weight_dtype="bf16", kv_cache_dtype="fp8", fake_tpu=False
        )
    )
    m = report.model
    assert m.parameters == parameter_stats(_fake_model("mixtral_8x7b"))[0]
    assert m.parameter_bytes == 2 * m.parameters and m.is_decoder_lm
    pf = report.preflight
    assert pf is not None
    assert pf.breakdown.kv_cache == 32 * 2 * 8 * 128 * 1 * 4 * 256  # fp8 cache at batch 4, context 256
    assert pf.breakdown.activations_training_remat is not None
    assert pf.breakdown.activations_training_remat < pf.breakdown.activations_training
    v6e = pf.generations["v6e"]
    assert not v6e.fits and v6e.inference_chips >= 4
    assert "chips" in v6e.serving_layout
    assert any(u.phase == "backward" for u in report.ops)
    assert report.numerics is not None and report.numerics.compared_on
    assert "num_hidden_layers 32->2" in report.numerics.compared_on
    assert report.peak_host_memory_bytes < 6 * 2**30
    assert report.serving is not None and f'from_pretrained("{folder}"' in report.serving.snippet


def test_hf_config_errors_are_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "no_such_arch", "auto_map": {"AutoModel": "x.Y"}}))
    with pytest.raises(hf.HFConfigError, match="remote code"):
        hf.load_config(hf.read_config_dict(tmp_path))
    with pytest.raises(hf.HFConfigError, match=r"no config\.json"):
        hf.config_file(tmp_path / "missing")


def test_request_takes_exactly_one_source(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        OnboardRequest()
    with pytest.raises(ValueError, match="exactly one"):
        OnboardRequest(model_file=tmp_path / "a.py", hf_config=tmp_path)
    assert math.isclose(
        KVCacheGeometry(layers=1, kv_heads=1, head_dim=1, dtype_bytes=0.5).bytes_per_token(), 1
    )
