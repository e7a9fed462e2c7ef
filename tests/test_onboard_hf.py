"""A Hugging Face decoder LM through the whole job: KV cache, vLLM path, shrunk copy, TorchTPU routing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tpu_runtime.onboard.job import OnboardRequest, run_onboard

LLAMA = """
import torch
from transformers import LlamaConfig, LlamaForCausalLM

def get_model():
    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=6, num_attention_heads=4,
                         num_key_value_heads=2, vocab_size=256, max_position_embeddings=128,
                         architectures=["LlamaForCausalLM"])
    return LlamaForCausalLM(config)

def get_inputs():
    return {"input_ids": torch.randint(0, 256, (2, 16))}
"""


@pytest.fixture(scope="module")
def llama_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("llama") / "llama.py"
    path.write_text(LLAMA)
    return path


@pytest.mark.slow
def test_llama_full_run(llama_file: Path) -> None:
    report = run_onboard(OnboardRequest(model_file=llama_file, batch=4, seq=1024, xla="none"))
    assert report.model.hf_architecture == "LlamaForCausalLM" and report.model.is_decoder_lm
    assert report.serving is not None and report.serving.path == "vllm-torchtpu"
    assert (
        report.model.input_style == "keyword"
    )  # get_inputs() returns a dict: the snippet calls model(**inputs)
    assert "out = model(**inputs)" in report.serving.snippet and "user.get_model()" in report.serving.snippet
    assert report.preflight is not None
    kv = report.preflight.breakdown.kv_cache
    assert kv == 2 * 6 * 2 * 16 * 4 * 1024 * 4  # K and V, 6 layers, 2 KV heads of 16, batch 4, seq 1024, fp32
    assert report.missing == []
    assert report.numerics is not None and report.numerics.first_divergent_layer is None
    assert {r.layer for r in report.numerics.rows} >= {"model.layers.0.self_attn", "lm_head"}
    tpu = {o.op for o in report.tpu_ops}
    assert "aten::linear" in tpu  # TorchTPU keeps linear whole
    assert not report.model.shrunk


@pytest.mark.slow
def test_llama_shrunk_copy_has_the_same_ops(llama_file: Path) -> None:
    full = run_onboard(OnboardRequest(model_file=llama_file, numerics=False, fake_tpu=False, xla="none"))
    short = run_onboard(
        OnboardRequest(model_file=llama_file, numerics=False, fake_tpu=False, xla="none", shrink="always")
    )
    assert short.model.shrunk and short.model.shrink_note and "6->2" in short.model.shrink_note
    assert {(o.op, o.phase) for o in full.ops} == {(o.op, o.phase) for o in short.ops}
    assert short.model.parameters == full.model.parameters  # the report describes the real model
    assert short.preflight is not None and full.preflight is not None
    assert short.preflight.breakdown.kv_cache == full.preflight.breakdown.kv_cache


@pytest.mark.slow
def test_progress_reaches_every_step(write_model: Callable[..., Path]) -> None:
    path = write_model("import torch\nmodel = torch.nn.Linear(4, 4)\nexample_inputs = (torch.ones(2, 4),)\n")
    seen: list[tuple[str, str]] = []
    run_onboard(
        OnboardRequest(model_file=path, fake_tpu=False, xla="none"), lambda s, m, f: seen.append((s, m))
    )
    assert {"probe", "coverage", "risks", "preflight", "serving", "device_numerics"} <= {s for s, _ in seen}
    # the sandboxed child reports its own stages through the progress pipe
    assert {"ops", "numerics"} <= {m for s, m in seen if s == "probe"}
