"""Serving plan: vLLM TorchTPU for architectures vLLM serves on TPU, torch.compile otherwise."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from datetime import date
from pathlib import Path

import pytest
import yaml

from tpu_runtime.onboard.loader import load_model
from tpu_runtime.onboard.report import ModelInfo, ServingPlan
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


def _plan_on(path: str, model: ModelInfo, missing_ops: list[str]) -> ServingPlan:
    """The serving plan for `model`, asserted to take `path`."""
    plan = plan_serving(model, missing_ops=missing_ops)
    assert plan.path == path, plan.reason
    return plan


def test_llama_goes_to_vllm() -> None:
    plan = _plan_on("vllm-torchtpu", _llama(), [])
    assert "LlamaForCausalLM" in plan.reason
    assert "vllm serve" in plan.snippet
    assert 'torch.device("tpu")' in plan.snippet
    assert "torchtitan" in plan.pretraining.lower()
    assert "https://docs.vllm.ai/en/v0.11.2/models/hardware_supported_models/tpu/" in plan.sources
    assert all(url.startswith("https://") for url in plan.sources)


def test_convnet_goes_to_torch_compile() -> None:
    plan = _plan_on("torch-compile", _convnet(), [])
    assert 'torch.compile(model, backend="tpu")' in plan.snippet
    assert 'torch.device("tpu")' in plan.snippet
    assert "ResNet18" in plan.reason
    assert "TorchTitan" in plan.pretraining and "does not apply" in plan.pretraining


def test_unknown_hf_architecture_goes_to_torch_compile() -> None:
    model = _model(class_name="FancyForCausalLM", hf_architecture="FancyForCausalLM", is_decoder_lm=True)
    plan = _plan_on("torch-compile", model, [])
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
    plan = _plan_on("vllm-torchtpu", _llama(), ops)
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


# Each loading convention onboarding accepts, as a user would write it; the snippet must run against it.
_CONVENTION_FILES: dict[str, tuple[dict[str, str], str | None]] = {
    "get_model + list inputs": (
        {
            "net.py": """
                import torch
                def get_model(): return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
                def get_inputs(): return [torch.randn(2, 8)]
            """
        },
        None,
    ),
    "module-level model + dict inputs": (
        {
            "tagger.py": """
                import torch
                class Tagger(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.emb = torch.nn.Embedding(50, 8)
                    def forward(self, input_ids, attention_mask):
                        return self.emb(input_ids) * attention_mask[..., None]
                model = Tagger()
                ids = torch.randint(0, 50, (2, 5))
                example_inputs = {"input_ids": ids, "attention_mask": torch.ones(2, 5)}
            """
        },
        None,
    ),
    "KernelBench file named with a digit": (
        {
            "1_Square_matrix_multiplication_.py": """
                import torch
                import torch.nn as nn
                N = 64
                class Model(nn.Module):
                    def __init__(self, scale):
                        super().__init__()
                        self.scale = scale
                    def forward(self, a, b):
                        return torch.matmul(a, b) * self.scale
                def get_inputs(): return [torch.randn(N, N), torch.randn(N, N)]
                def get_init_inputs(): return [2.0]
            """
        },
        None,
    ),
    "class Model without get_init_inputs, one tensor": (
        {
            "relu.py": """
                import torch
                class Model(torch.nn.Module):
                    def forward(self, x): return torch.relu(x)
                def get_inputs(): return torch.randn(3, 3)
            """
        },
        None,
    ),
    "--entry in the model file": (
        {
            "app.py": """
                import torch
                def build():
                    return torch.nn.Linear(4, 2), (torch.randn(1, 4),)
            """
        },
        "app:build",
    ),
    "--entry in another module": (
        {
            "main.py": "import torch\n",
            "factory.py": """
                import torch
                class Builders:
                    @staticmethod
                    def small():
                        return torch.nn.Conv1d(2, 2, 3), [torch.randn(1, 2, 8)]
            """,
        },
        "factory:Builders.small",
    ),
}


def _on_cpu(snippet: str) -> str:
    """The snippet as it would run with the TPU swapped for the CPU: same calls, no torch_tpu."""
    kept = [
        line.replace('torch.device("tpu")', 'torch.device("cpu")').replace('backend="tpu"', 'backend="eager"')
        for line in snippet.splitlines()
        if "import torch_tpu" not in line and "torch.tpu." not in line
    ]
    return "\n".join(kept) + "\n"


def _run_snippet(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TORCH_DEVICE_BACKEND_AUTOLOAD": "0", "PYTHONPATH": ""}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("case", list(_CONVENTION_FILES))
def test_the_snippet_runs_for_every_loading_convention(case: str, tmp_path: Path) -> None:
    files, entry = _CONVENTION_FILES[case]
    for name, source in files.items():
        (tmp_path / name).write_text(textwrap.dedent(source))
    model_file = tmp_path / next(iter(files))
    loaded = load_model(model_file, entry)
    info = _model(file=str(model_file), convention=loaded.convention, input_style=loaded.input_style)
    snippet = plan_serving(info, missing_ops=[]).snippet
    assert "get_model()" not in snippet or "get_model" in model_file.read_text()
    run = _run_snippet(_on_cpu(snippet), tmp_path)
    assert run.returncode == 0, f"{case}:\n{snippet}\n{run.stderr[-3000:]}"
    assert run.stdout.strip(), run.stderr[-2000:]


@pytest.mark.slow
def test_the_hf_checkpoint_smoke_test_runs(tmp_path: Path) -> None:
    transformers = pytest.importorskip("transformers")
    from tests.models.zoo import build_llama

    model, _ = build_llama()
    assert isinstance(model, transformers.PreTrainedModel)
    checkpoint = tmp_path / "llama-tiny"
    model.save_pretrained(checkpoint)
    where = {"file": str(checkpoint / "config.json"), "convention": "--hf-config", "input_style": "keyword"}
    info = _llama().model_copy(update=where)
    snippet = plan_serving(info, missing_ops=[]).snippet
    assert f'from_pretrained("{checkpoint}"' in snippet
    smoke = snippet.split("# Smoke-test the plain PyTorch model on TorchTPU first:\n", 1)[1]
    code = "\n".join(line.removeprefix("#").removeprefix(" ") for line in smoke.splitlines())
    run = _run_snippet(_on_cpu(code), tmp_path)
    assert run.returncode == 0, f"{code}\n{run.stderr[-3000:]}"
    assert "CausalLMOutputWithPast" in run.stdout
