"""Serving plan: vLLM TorchTPU for architectures vLLM serves on TPU, torch.compile otherwise."""

from __future__ import annotations

import ast
from datetime import date
from pathlib import Path

import pytest
import yaml

from tpu_runtime.onboard.report import ModelInfo
from tpu_runtime.onboard.serving import (
    EAGER_FIRST_RUN,
    load_vllm_catalog,
    plan_serving,
    vllm_architecture,
)
from tpu_runtime.resources import knowledge_dir


def _model(**overrides: object) -> ModelInfo:
    fields: dict[str, object] = {
        "file": "model.py",
        "convention": "get_model+get_inputs",
        "class_name": "Net",
        "parameters": 1000,
        "parameter_bytes": 4000,
    }
    fields.update(overrides)
    return ModelInfo.model_validate(fields)


def _llama() -> ModelInfo:
    return _model(
        class_name="LlamaForCausalLM",
        is_decoder_lm=True,
        hf_architecture="LlamaForCausalLM",
        hf_model_type="llama",
        dtype="bfloat16",
    )


def _convnet() -> ModelInfo:
    return _model(class_name="ResNet18")


def test_llama_goes_to_vllm() -> None:
    plan = plan_serving(_llama(), missing_ops=[])
    assert plan.path == "vllm-torchtpu"
    assert "LlamaForCausalLM" in plan.reason
    assert "vllm serve" in plan.snippet
    assert 'torch.device("tpu")' in plan.snippet
    assert "torchtitan" in plan.pretraining.lower()
    assert "https://docs.vllm.ai/en/v0.11.2/models/hardware_supported_models/tpu/" in plan.sources
    assert all(url.startswith("https://") for url in plan.sources)


def test_convnet_goes_to_torch_compile() -> None:
    plan = plan_serving(_convnet(), missing_ops=[])
    assert plan.path == "torch-compile"
    assert 'torch.compile(model, backend="tpu")' in plan.snippet
    assert 'torch.device("tpu")' in plan.snippet
    assert "ResNet18" in plan.reason
    assert "TorchTitan" in plan.pretraining and "does not apply" in plan.pretraining


def test_unknown_hf_architecture_goes_to_torch_compile() -> None:
    model = _model(class_name="FancyForCausalLM", hf_architecture="FancyForCausalLM", is_decoder_lm=True)
    plan = plan_serving(model, missing_ops=[])
    assert plan.path == "torch-compile"
    assert "FancyForCausalLM" in plan.reason


def test_first_run_eager_mode_is_launch_blocking() -> None:
    for model in (_llama(), _convnet()):
        plan = plan_serving(model, missing_ops=[])
        assert plan.eager_mode == EAGER_FIRST_RUN == "DEFER_NEVER_AND_LAUNCH_BLOCKING"
        assert "TORCH_TPU_LAUNCH_BLOCKING=1" in plan.eager_reason
        assert "DEFER_AND_FUSE" in plan.eager_reason


def test_missing_ops_are_named_in_the_reason() -> None:
    ops = ["aten::foo.default", "aten::bar.Tensor"]
    plan = plan_serving(_convnet(), missing_ops=ops)
    assert "2 op(s)" in plan.reason and "aten::foo.default" in plan.reason
    plan = plan_serving(_llama(), missing_ops=ops)
    assert plan.path == "vllm-torchtpu"
    assert "aten::bar.Tensor" in plan.reason


def test_snippets_are_valid_python() -> None:
    ast.parse(plan_serving(_convnet(), missing_ops=[]).snippet)
    vllm_snippet = plan_serving(_llama(), missing_ops=[]).snippet
    python_part = vllm_snippet.split("# or from Python\n", 1)[1].replace("<chips>", "8")
    ast.parse(python_part)


@pytest.mark.parametrize(
    "name",
    ["LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "MistralForCausalLM"],
)
def test_catalog_has_the_common_decoder_architectures(name: str) -> None:
    arch = vllm_architecture(name)
    assert arch is not None and arch.decoder_lm


def test_catalog_misses_are_none() -> None:
    assert vllm_architecture(None) is None
    assert vllm_architecture("ResNetForImageClassification") is None


def test_every_catalog_entry_is_sourced_and_dated() -> None:
    raw = yaml.safe_load((knowledge_dir() / "vllm_tpu_models.yaml").read_text(encoding="utf-8"))
    for name, body in raw["architectures"].items():
        assert body["evidence"], name
        for ev in body["evidence"]:
            assert ev["source"].startswith("https://"), name
            assert ev["checked"] == date(2026, 11, 30), name
    catalog = load_vllm_catalog()
    assert set(catalog.architectures) == set(raw["architectures"])
    assert catalog.stack_source.startswith("https://")


def test_catalog_rejects_unknown_status(tmp_path: Path) -> None:
    raw = yaml.safe_load((knowledge_dir() / "vllm_tpu_models.yaml").read_text(encoding="utf-8"))
    raw["architectures"]["LlamaForCausalLM"]["evidence"][0]["status"] = "probably"
    bad = tmp_path / "vllm_tpu_models.yaml"
    bad.write_text(yaml.safe_dump(raw), encoding="utf-8")
    with pytest.raises(ValueError):
        load_vllm_catalog(bad)
