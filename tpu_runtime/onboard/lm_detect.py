"""Is this a decoder (causal) language model? Decided by what the model does, not by its class name.

Serving sizing (KV cache), the serving path and the pre-training advice all hinge on it, and most models
people write themselves are not Hugging Face classes. Three observations decide it, each one named in the
report: the input is token ids, an output is vocabulary-sized (as wide as an embedding table has rows),
and changing the last token leaves every earlier position's output unchanged (causal attention).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._pytree import tree_flatten

from tpu_runtime.onboard.capture_types import KVGeometry
from tpu_runtime.onboard.loader import LoadedModel


@dataclass
class LMRecognition:
    evidence: str
    kv: KVGeometry | None
    position_limit: int | None


def _token_input(loaded: LoadedModel) -> tuple[str | int, torch.Tensor] | None:
    """(where, tensor) of the first 2-D integer input: (batch, seq) token ids."""
    for index, value in enumerate(loaded.args):
        if isinstance(value, torch.Tensor) and value.dim() == 2 and not value.is_floating_point():
            return index, value
    for name, value in loaded.kwargs.items():
        is_ids = isinstance(value, torch.Tensor) and value.dim() == 2 and not value.is_floating_point()
        if is_ids and "mask" not in name:
            return name, value
    return None


def _with_ids(
    loaded: LoadedModel, where: str | int, ids: torch.Tensor
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args, kwargs = list(loaded.args), dict(loaded.kwargs)
    if isinstance(where, int):
        args[where] = ids
    else:
        kwargs[where] = ids
    return tuple(args), kwargs


def _logits(output: Any, batch: int, seq: int, vocabularies: set[int]) -> torch.Tensor | None:
    if isinstance(output, dict) and type(output) is not dict:
        output = dict(output.items())
    for leaf in tree_flatten(output)[0]:
        if (
            isinstance(leaf, torch.Tensor)
            and leaf.is_floating_point()
            and leaf.dim() == 3
            and tuple(leaf.shape[:2]) == (batch, seq)
            and leaf.shape[2] in vocabularies
        ):
            return leaf
    return None


def recognise(model: torch.nn.Module, loaded: LoadedModel, output: Any) -> LMRecognition | None:
    """Run on real tensors (the model itself or its smaller copy); None when it is not a decoder LM."""
    found = _token_input(loaded)
    if found is None or found[1].numel() == 0:
        return None
    where, ids = found
    batch, seq = ids.shape
    tables = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    vocabularies = {m.num_embeddings for m in tables if m.num_embeddings > int(ids.max())}
    logits = _logits(output, batch, seq, vocabularies)
    if logits is None or seq < 2:
        return None
    vocab = logits.shape[2]
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] + 1) % vocab
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            args, kwargs = _with_ids(loaded, where, ids)
            first = _logits(model(*args, **kwargs), batch, seq, {vocab})
            torch.manual_seed(0)
            args, kwargs = _with_ids(loaded, where, changed)
            second = _logits(model(*args, **kwargs), batch, seq, {vocab})
    except Exception:  # a model that cannot take the changed ids: no behavioural evidence
        return None
    finally:
        model.train(was_training)
    if first is None or second is None:
        return None
    earlier_same = torch.allclose(first[:, :-1], second[:, :-1], rtol=1e-5, atol=1e-6)
    last_moved = not torch.allclose(first[:, -1], second[:, -1], rtol=1e-5, atol=1e-6)
    if not (earlier_same and last_moved):
        return None
    evidence = (
        f"token-id input {tuple(ids.shape)}, an output of {tuple(logits.shape)} as wide as the {vocab}-row "
        "embedding table, and changing the last token changes only the last position's output (causal)"
    )
    return LMRecognition(evidence=evidence, kv=None, position_limit=None)


def structural_kv(model: torch.nn.Module, vocab: int | None) -> tuple[KVGeometry | None, int | None, str]:
    """KV geometry of a model without a config: one K and one V as wide as the hidden size per block of
    the largest repeated stack (full multi-head attention assumed), and the position limit from a
    learned position table. Returns (geometry, position limit, how it was estimated)."""
    from tpu_runtime.onboard.shrink import repeated_stacks

    stacks = repeated_stacks(model, min_len=1)
    tables = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
    token_table = next((m for m in tables if vocab is None or m.num_embeddings == vocab), None)
    if not stacks or token_table is None:
        return None, None, ""
    layers = max(len(stack) for _, stack in stacks)
    hidden = token_table.embedding_dim
    limit = None
    for name, param in model.named_parameters():
        if "pos" in name.lower() and param.dim() == 2 and param.shape[1] == hidden:
            limit = int(param.shape[0])
    for module in tables:
        if module is not token_table and module.embedding_dim == hidden:
            limit = module.num_embeddings
    geometry = KVGeometry(layers=layers, kv_heads=1, head_dim=hidden)
    how = (
        f"estimated from the structure: {layers} repeated blocks, K and V {hidden} wide each per token "
        "(full multi-head attention assumed; grouped-query attention caches less)"
    )
    return geometry, limit, how
