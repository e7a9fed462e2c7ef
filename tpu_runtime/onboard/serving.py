"""How to run the model on TPU: vLLM TorchTPU for architectures vLLM serves on TPU, else plain PyTorch
with `torch.compile(backend="tpu")`, which TorchTPU eager mode to start in, and how to pre-train.

Architectures come from the team's fact sheet `knowledge/vllm_tpu_models.yaml`. What this module says
about TorchTPU's eager modes was checked against the installed torch_tpu 0.2.0
(`torch_tpu/_internal/execution_mode/__init__.py`, `torch_tpu/_internal/device/_device_module.py`) and by
running it on a CPU host on 2026-11-30:

- `torch.tpu.EagerMode` has three public members: DEFER_NEVER (the default), DEFER_NEVER_AND_LAUNCH_BLOCKING
  and DEFER_AND_FUSE.
- Set it for the process with `torch.tpu.eager_mode = torch.tpu.EagerMode.<MODE>`, for a block with
  `with torch.tpu.set_eager_mode(torch.tpu.EagerMode.<MODE>):` (not allowed inside a torch.compile region),
  or before start-up with the environment variable TORCH_TPU_LAUNCH_BLOCKING=1
  (-> DEFER_NEVER_AND_LAUNCH_BLOCKING) or TORCH_TPU_DEFER_AND_FUSE=1 (-> DEFER_AND_FUSE).
- `torch.compile(backend="tpu")` is registered by `torch_tpu._internal.compile`.

The package's docstrings do not describe the modes' behaviour. Google's TorchTPU announcement describes
three eager modes: a synchronous debug mode, an asynchronous "strict" mode that behaves like default
PyTorch, and a fused mode that fuses streams of eager ops for speed. Matching those to the enum names
(LAUNCH_BLOCKING = synchronous debug, DEFER_NEVER = strict/async default, DEFER_AND_FUSE = fused) is our
reading of the names and of the env-var behaviour above, not a documented mapping.
"""

from __future__ import annotations

import functools
import keyword
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tpu_runtime.chips import Sourced
from tpu_runtime.onboard.report import ModelInfo, ServingPlan
from tpu_runtime.resources import knowledge_dir
from tpu_runtime.yaml_data import safe_load

VLLM_MODELS_FILE = "vllm_tpu_models.yaml"

TORCHTPU_BLOG = "https://developers.googleblog.com/torchtpu-running-pytorch-natively-on-tpus-at-google-scale/"
TORCHTPU_BLOG_SUMMARY = (
    "https://app.daily.dev/posts/torchtpu-running-pytorch-natively-on-tpus-at-google-scale-wnrth1jyb"
)
TORCHTITAN = "https://github.com/pytorch/torchtitan"
TORCH_COMPILE_DOCS = "https://docs.pytorch.org/docs/stable/torch.compiler_custom_backends.html"

Status = Literal["optimized", "runs_unoptimized", "fails_accuracy", "jax_native", "vllm_preferred"]

_STATUS_TEXT: dict[str, str] = {
    "optimized": "runs and is tuned",
    "runs_unoptimized": "runs correctly, not yet tuned",
    "fails_accuracy": "did not pass vLLM's accuracy test",
    "jax_native": "tpu-inference has its own JAX implementation",
    "vllm_preferred": "tpu-inference uses vLLM's PyTorch implementation",
}


class VllmEvidence(Sourced):
    """One source's word on one architecture."""

    status: Status
    models: tuple[str, ...] = ()
    note: str | None = None


class VllmArchitecture(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    decoder_lm: bool = True
    evidence: tuple[VllmEvidence, ...]

    def summary(self) -> str:
        parts = []
        for ev in self.evidence:
            models = f" ({', '.join(ev.models)})" if ev.models else ""
            parts.append(f"{_STATUS_TEXT[ev.status]}{models}")
        return "; ".join(parts)

    def sources(self) -> list[str]:
        out: list[str] = []
        for ev in self.evidence:
            if ev.source not in out:
                out.append(ev.source)
        return out


class VllmCatalog(BaseModel):
    model_config = ConfigDict(frozen=True)

    stack_summary: str
    stack_source: str
    architectures: Mapping[str, VllmArchitecture]


def load_vllm_catalog(path: Path | None = None) -> VllmCatalog:
    """Parse `vllm_tpu_models.yaml` (default: the shipped sheet, cached)."""
    if path is None:
        return _default_catalog()
    return _parse_catalog(path)


@functools.cache
def _default_catalog() -> VllmCatalog:
    return _parse_catalog(knowledge_dir() / VLLM_MODELS_FILE)


def _parse_catalog(path: Path) -> VllmCatalog:
    raw = safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("architectures"), dict):
        raise ValueError(f"{path}: expected a mapping with an 'architectures' mapping")
    stack = raw.get("serving_stack") or {}
    archs = {
        str(name): VllmArchitecture.model_validate({"name": str(name), **body})
        for name, body in raw["architectures"].items()
    }
    return VllmCatalog(
        stack_summary=str(stack.get("summary", "")),
        stack_source=str(stack.get("source", "")),
        architectures=archs,
    )


def vllm_architecture(name: str | None) -> VllmArchitecture | None:
    """The catalog entry for a Hugging Face `config.architectures[0]` name, if vLLM serves it on TPU."""
    if not name:
        return None
    return load_vllm_catalog().architectures.get(name)


EAGER_FIRST_RUN = "DEFER_NEVER_AND_LAUNCH_BLOCKING"

_EAGER_REASON = (
    "Start in torch.tpu.EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING: each op is launched and waited for "
    "before Python moves on, so a failing or missing op raises at the line that called it (slowest mode; "
    "use it for the first run and for debugging). Set it with TORCH_TPU_LAUNCH_BLOCKING=1 or "
    "`torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING`. Once the run is clean, "
    "drop back to the default DEFER_NEVER (asynchronous, like default PyTorch: errors can surface later, "
    "at the next sync), then use DEFER_AND_FUSE (TORCH_TPU_DEFER_AND_FUSE=1; fuses runs of eager ops) or "
    "torch.compile(backend='tpu') on the hot path for speed. Mode names and switches were checked against "
    "torch_tpu 0.2.0; the debug/strict/fused descriptions follow Google's TorchTPU announcement, and the "
    "pairing of names to descriptions is our reading."
)


def _missing_ops_text(missing_ops: list[str]) -> str:
    if not missing_ops:
        return ""
    shown = ", ".join(missing_ops[:5]) + (f" and {len(missing_ops) - 5} more" if len(missing_ops) > 5 else "")
    return f"{len(missing_ops)} op(s) without a TorchTPU kernel ({shown})"


def _import_lines(file: str) -> list[str]:
    """Bind the user's model file to the name `user`, by import when its name allows, else by path."""
    path = Path(file)
    if path.stem.isidentifier() and not keyword.iskeyword(path.stem):
        return [f"import {path.stem} as user  # your model file, {path.name}"]
    return [
        "import importlib.util",
        "",
        f"# your model file; {path.name} is not an importable module name, so load it by path",
        f'spec = importlib.util.spec_from_file_location("user_model", "{path.name}")',
        "user = importlib.util.module_from_spec(spec)",
        "spec.loader.exec_module(user)",
    ]


def _load_lines(model: ModelInfo) -> list[str]:
    """How the user's own code builds the model and its inputs, by the convention onboarding used."""
    convention = model.convention
    if convention == "--hf-config":
        folder = Path(model.file).parent if model.file.endswith(".json") else Path(model.file)
        return [
            "from transformers import AutoModelForCausalLM",
            "",
            "# the checkpoint folder (config.json and weights) that was onboarded",
            f'model = AutoModelForCausalLM.from_pretrained("{folder}", dtype=torch.bfloat16)',
            'inputs = {"input_ids": torch.randint(0, model.config.vocab_size, (1, 128))}',
        ]
    if convention.startswith("--entry "):
        where, _, fn = convention.removeprefix("--entry ").strip().partition(":")
        if where and where != Path(model.file).stem:
            top = fn.split(".", 1)[0]
            return [f"from {where} import {top}", "", f"model, inputs = {fn}()  # your entry point"]
        return [*_import_lines(model.file), "", f"model, inputs = user.{fn}()  # your entry point"]
    lines = [*_import_lines(model.file), ""]
    if convention.startswith("model + "):
        return [*lines, "model, inputs = user.model, user.example_inputs"]
    if convention.startswith("class Model"):
        return [
            *lines,
            'init = user.get_init_inputs() if hasattr(user, "get_init_inputs") else []',
            "model = user.Model(**init) if isinstance(init, dict) else user.Model(*init)",
            "inputs = user.get_inputs()",
        ]
    return [*lines, "model, inputs = user.get_model(), user.get_inputs()"]


def _call_lines(model: ModelInfo, target: str) -> list[str]:
    """Move the inputs to the device and call `target` the way the inputs are shaped."""
    if model.input_style == "keyword":
        return [
            "inputs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}",
            "with torch.no_grad():",
            f"    out = {target}(**inputs)",
        ]
    if model.input_style == "single":
        return ["inputs = inputs.to(device)", "with torch.no_grad():", f"    out = {target}(inputs)"]
    return [
        "inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs]",
        "with torch.no_grad():",
        f"    out = {target}(*inputs)",
    ]


def _torch_snippet(model: ModelInfo, compile_model: bool) -> str:
    lines = [
        "import torch",
        "import torch_tpu  # noqa: F401  ('tpu' device and torch.compile backend; torch also autoloads it)",
        *_load_lines(model),
        "",
        "# First run: synchronous launches, so errors point at the offending line.",
        "torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_NEVER_AND_LAUNCH_BLOCKING",
        "",
        'device = torch.device("tpu")',
        "model = model.to(device).eval()",
        *_call_lines(model, "model"),
        "print(out.cpu() if isinstance(out, torch.Tensor) else type(out).__name__)",
    ]
    if compile_model:
        lines += [
            "",
            "# Once the eager run is clean: default mode, then compile the hot path.",
            "torch.tpu.eager_mode = torch.tpu.EagerMode.DEFER_NEVER",
            'compiled = torch.compile(model, backend="tpu")',
            "with torch.no_grad():",
            "    out = " + _call_lines(model, "compiled")[-1].strip().removeprefix("out = "),
        ]
    return "\n".join(lines) + "\n"


def _vllm_snippet(architecture: str, model: ModelInfo) -> str:
    return (
        "# On the TPU VM, with vllm and the vllm-torchtpu plugin installed:\n"
        f"# checkpoint directory whose config.json has architectures = ['{architecture}']\n"
        "vllm serve /path/to/checkpoint --tensor-parallel-size <chips>\n"
        "\n"
        "# or from Python\n"
        "from vllm import LLM, SamplingParams\n"
        'llm = LLM(model="/path/to/checkpoint", tensor_parallel_size=<chips>)\n'
        'print(llm.generate(["Hello"], SamplingParams(max_tokens=32))[0].outputs[0].text)\n'
        "\n"
        "# Smoke-test the plain PyTorch model on TorchTPU first:\n"
        + "\n".join(f"# {line}" if line else "#" for line in _torch_snippet(model, False).splitlines())
        + "\n"
    )


def _pretraining(model: ModelInfo) -> str:
    if model.is_decoder_lm:
        return (
            "Pre-training a decoder LM: TorchTitan (github.com/pytorch/torchtitan), PyTorch's reference "
            "stack for LLM pre-training with composable FSDP2, tensor, pipeline and context parallelism. "
            "TorchTPU supports DDP, FSDPv2 and DTensor, and its published 2026 roadmap lists TorchTitan "
            "integration: confirm TorchTitan runs on your torch_tpu version before committing to it."
        )
    return (
        "Not a decoder LM, so TorchTitan (built for LLM pre-training) does not apply: train with a plain "
        "PyTorch loop on torch.device('tpu'), wrapped in DDP or FSDPv2 for several chips, and "
        "torch.compile(backend='tpu') on the training step."
    )


def plan_serving(model: ModelInfo, missing_ops: list[str]) -> ServingPlan:
    """Pick the serving path, the first eager mode and the pre-training route for `model`."""
    arch = vllm_architecture(model.hf_architecture)
    missing = _missing_ops_text(missing_ops)
    sources: list[str] = []
    if arch is not None:
        catalog = load_vllm_catalog()
        reason = (
            f"{arch.name} is an architecture vLLM serves on TPU ({arch.summary()}). vLLM TorchTPU runs "
            "vLLM's own PyTorch definition of it through TorchTPU, with paged attention and batching "
            "built in."
        )
        if missing:
            reason += (
                f" Your model code has {missing}; vLLM uses its own model definition, so these matter only "
                "if your code differs from the upstream architecture: check the smoke test first."
            )
        path: Literal["vllm-torchtpu", "torch-compile"] = "vllm-torchtpu"
        snippet = _vllm_snippet(arch.name, model)
        sources += arch.sources()
        if catalog.stack_source:
            sources.append(catalog.stack_source)
    else:
        why = (
            f"{model.hf_architecture} is not an architecture our vLLM TPU sheet lists"
            if model.hf_architecture
            else f"{model.class_name} is not a Hugging Face architecture vLLM serves"
        )
        reason = (
            f"{why}, so run it as plain PyTorch on torch.device('tpu') and compile the hot path with "
            "torch.compile(backend='tpu') (TorchTPU lowers the captured graph through XLA)."
        )
        if missing:
            reason += f" Before compiling, replace or fix what is missing: {missing}."
        path = "torch-compile"
        snippet = _torch_snippet(model, True)
        sources.append(TORCH_COMPILE_DOCS)
    sources += [TORCHTPU_BLOG, TORCHTPU_BLOG_SUMMARY]
    if model.is_decoder_lm:
        sources.append(TORCHTITAN)
    return ServingPlan(
        path=path,
        reason=reason,
        eager_mode=EAGER_FIRST_RUN,
        eager_reason=_EAGER_REASON,
        pretraining=_pretraining(model),
        snippet=snippet,
        sources=list(dict.fromkeys(sources)),
    )
