"""Hugging Face architectures from a `config.json` alone: no weights, no network, no remote code.

`tpu-agent onboard --hf-config PATH` builds the architecture a checkpoint's config names, on fake tensors
at full size, and feeds it token ids of the requested batch and length. The same module shrinks a config
in depth and width for the numerics copy, and reads the KV-cache geometry serving needs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import torch

from tpu_runtime.errors import BadInput
from tpu_runtime.onboard.capture_types import KVGeometry


class HFConfigError(BadInput):
    """The config cannot be used; the message is one line that says what to change."""


LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model")
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads")
FFN_KEYS = (
    "intermediate_size",
    "n_inner",
    "d_ff",
    "ffn_dim",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
)
EXPERT_KEYS = ("num_local_experts", "n_routed_experts", "num_experts")
TOKEN_ID_KEYS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")
SMALL_VOCAB = 1024
SMALL_HEADS = 4
SMALL_LAYERS = 2


def config_file(path: Path) -> Path:
    """`config.json` itself, or the one inside a checkpoint folder."""
    file = path / "config.json" if path.is_dir() else path
    if not file.is_file():
        raise HFConfigError(f"no config.json at {path}: pass the file or a folder that holds it")
    return file


def read_config_dict(path: Path) -> dict[str, Any]:
    file = config_file(path)
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise HFConfigError(f"{file} is not readable JSON: {exc}") from exc
    if not isinstance(raw, dict) or "model_type" not in raw:
        raise HFConfigError(f"{file} has no 'model_type': not a Hugging Face model config")
    return raw


def load_config(raw: dict[str, Any]) -> Any:
    """A transformers config object for the dict; refuses architectures that need remote code."""
    from transformers import CONFIG_MAPPING

    model_type = str(raw["model_type"])
    if model_type not in CONFIG_MAPPING:
        hint = " (it names remote code in auto_map, which is never run)" if raw.get("auto_map") else ""
        raise HFConfigError(
            f"transformers {_transformers_version()} has no built-in architecture '{model_type}'{hint}"
        )
    body = {k: v for k, v in raw.items() if k not in ("auto_map", "model_type", "transformers_version")}
    return CONFIG_MAPPING[model_type](**body)


def build_model(config: Any) -> torch.nn.Module:
    """The class `architectures[0]` names when transformers has it, else the causal-LM auto class."""
    import transformers

    names = list(getattr(config, "architectures", None) or [])
    cls = getattr(transformers, names[0], None) if names else None
    if cls is not None and hasattr(cls, "_from_config"):
        model: torch.nn.Module = cls._from_config(config)
        return model
    try:
        return transformers.AutoModelForCausalLM.from_config(config)
    except ValueError:
        return transformers.AutoModel.from_config(config)


def compute_dtype(config: Any, weight_dtype: str | None) -> torch.dtype | None:
    """The dtype a checkpoint is run in: bf16 for bf16 or quantised weights (activations stay bf16),
    else the config's own `dtype` (`torch_dtype` in older configs)."""
    if weight_dtype in ("bf16", "fp8", "int8", "int4"):
        return torch.bfloat16
    if weight_dtype == "fp16":
        return torch.float16
    if weight_dtype == "f32":
        return torch.float32
    named = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(named, torch.dtype):
        return named
    if isinstance(named, str) and isinstance(getattr(torch, named, None), torch.dtype):
        value: torch.dtype = getattr(torch, named)
        return value
    return None


def default_seq(config: Any, requested: int | None) -> int:
    limit = int(getattr(_text(config), "max_position_embeddings", 0) or 4096)
    return requested or min(limit, 2048)


def token_inputs(config: Any, batch: int, seq: int) -> dict[str, torch.Tensor]:
    vocab = int(getattr(_text(config), "vocab_size", 0) or SMALL_VOCAB)
    return {"input_ids": torch.randint(0, vocab, (batch, seq))}


def kv_geometry(config: Any) -> KVGeometry | None:
    """Per-token KV cache of a decoder LM from its config; None when the config has no attention stack."""
    c = _text(config)
    layers = _first(c, LAYER_KEYS)
    heads = _first(c, HEAD_KEYS)
    hidden = _first(c, HIDDEN_KEYS)
    if not (layers and heads and hidden):
        return None
    kv_heads = int(getattr(c, "num_key_value_heads", None) or heads)
    head_dim = int(getattr(c, "head_dim", None) or hidden // heads)
    latent = None
    if getattr(c, "kv_lora_rank", None):  # multi-head latent attention caches one compressed vector
        latent = int(c.kv_lora_rank) + int(getattr(c, "qk_rope_head_dim", 0) or 0)
    window = getattr(c, "sliding_window", None)
    types = list(getattr(c, "layer_types", None) or [])
    sliding = sum(1 for t in types[:layers] if "sliding" in str(t)) if window else 0
    return KVGeometry(
        layers=int(layers),
        kv_heads=kv_heads,
        head_dim=head_dim,
        latent_dim=latent,
        sliding_layers=sliding,
        sliding_window=int(window) if sliding and window else None,
    )


def shrink_config(config: Any) -> tuple[Any, list[str]]:
    """A copy of `config` with two layers, a few heads of the same size and a small vocabulary, and a
    description of each change. Expert counts stay large enough for the router's top-k and groups."""
    small = config.__class__.from_dict(config.to_dict())
    target = _text(small)
    changes: list[str] = []

    def put(key: str, value: int) -> None:
        old = getattr(target, key, None)
        if isinstance(old, int) and not isinstance(old, bool) and old != value:
            setattr(target, key, value)
            changes.append(f"{key} {old}->{value}")

    layers = _first(target, LAYER_KEYS)
    if layers:
        keep = min(layers, SMALL_LAYERS)
        for key in LAYER_KEYS:
            put(key, keep)
        if getattr(target, "first_k_dense_replace", None):
            put("first_k_dense_replace", min(int(target.first_k_dense_replace), keep - 1))
        types = getattr(target, "layer_types", None)
        if isinstance(types, list) and len(types) > keep:
            kinds = list(dict.fromkeys(types))[:keep]  # keep one layer of each kind where possible
            target.layer_types = kinds + types[len(kinds) : keep]
    heads, hidden = _first(target, HEAD_KEYS), _first(target, HIDDEN_KEYS)
    if heads and hidden and heads > SMALL_HEADS:
        head_dim = int(getattr(target, "head_dim", None) or hidden // heads)
        ratio = heads // SMALL_HEADS
        kv = getattr(target, "num_key_value_heads", None)
        new_hidden = max(hidden // ratio, 64)
        if getattr(target, "head_dim", None) is None and hasattr(target, "num_key_value_heads"):
            target.head_dim = head_dim  # keep the head size when the head count drops
        for key in HEAD_KEYS:
            put(key, SMALL_HEADS)
        if isinstance(kv, int):
            put("num_key_value_heads", max(1, SMALL_HEADS * kv // heads))
        for key in HIDDEN_KEYS:
            put(key, new_hidden)
        for key in FFN_KEYS:
            value = getattr(target, key, None)
            if isinstance(value, int) and value > 0:
                put(key, max(8, value * new_hidden // hidden))
        for key in ("q_lora_rank", "kv_lora_rank"):
            value = getattr(target, key, None)
            if isinstance(value, int) and value > 64:
                put(key, max(64, value * new_hidden // hidden))
    _shrink_experts(target, put)
    vocab = getattr(target, "vocab_size", None)
    if isinstance(vocab, int) and vocab > SMALL_VOCAB:
        put("vocab_size", SMALL_VOCAB)
        for key in TOKEN_ID_KEYS:
            value = getattr(target, key, None)
            if isinstance(value, int) and value >= SMALL_VOCAB:
                setattr(target, key, SMALL_VOCAB - 1)
    return small, changes


def _shrink_experts(target: Any, put: Any) -> None:
    top_k = int(getattr(target, "num_experts_per_tok", None) or 1)
    groups = int(getattr(target, "n_group", None) or 1)
    topk_groups = int(getattr(target, "topk_group", None) or groups)
    for key in EXPERT_KEYS:
        experts = getattr(target, key, None)
        if not isinstance(experts, int) or experts <= 8:
            continue
        want = max(8, 2 * top_k)
        # grouped routing picks top-k inside `topk_group` of `n_group` groups: keep enough per group
        per_group = max(1, math.ceil(want / groups))
        while per_group * topk_groups < top_k:
            per_group += 1
        put(key, min(experts, per_group * groups))


def _text(config: Any) -> Any:
    """Multimodal configs keep the language model's sizes in `text_config`."""
    return getattr(config, "text_config", None) or config


def _first(config: Any, keys: tuple[str, ...]) -> int | None:
    for key in keys:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _transformers_version() -> str:
    from importlib.metadata import version

    return version("transformers")
