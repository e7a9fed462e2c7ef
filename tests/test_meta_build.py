"""The shrunk copy built without the full model: parameters on meta, stacks cut, the rest materialised."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from tpu_runtime.onboard.loader import LoadedModel, load_model
from tpu_runtime.onboard.meta_build import materialise, parameters_on_meta, refusal
from tpu_runtime.onboard.op_capture import capture_ops
from tpu_runtime.onboard.shrink import cut_stacks, shallow_copy

GPT2 = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

def get_model():
    torch.manual_seed(0)
    return GPT2LMHeadModel(GPT2Config(n_layer=6, n_embd=64, n_head=4, vocab_size=512, n_positions=64))

def get_inputs():
    return {"input_ids": torch.randint(0, 512, (2, 16))}
"""

LOADS_WEIGHTS = """
import torch
from transformers import GPT2Config, GPT2LMHeadModel

def get_model():
    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=32, n_head=4, vocab_size=128, n_positions=32))
    model.transformer.wte.weight.data.copy_(torch.ones(128, 32))  # stands for a checkpoint's values
    return model

def get_inputs():
    return {"input_ids": torch.randint(0, 128, (1, 8))}
"""


def _meta_build(path: Path) -> tuple[LoadedModel, str | None]:
    with parameters_on_meta() as watch:
        loaded = load_model(path)
    return loaded, refusal(loaded.model, watch)


@pytest.mark.slow
def test_copy_matches_the_cut_full_model(write_model: Callable[..., Path]) -> None:
    path = write_model(GPT2, "gpt2_meta.py")
    full = load_model(path)
    with shallow_copy(full.model) as expected:
        want = {n: (tuple(p.shape), p.dtype) for n, p in full.model.named_parameters()}
        want_ops = set(capture_ops(full.model, full.args, full.kwargs, [path.parent])[0].ops)

    loaded, why = _meta_build(path)
    assert why is None
    assert all(p.is_meta for p in loaded.model.parameters())
    assert all(not b.is_meta for b in loaded.model.buffers())  # computed values stay real
    shrink, patch_counts = cut_stacks(loaded.model)
    assert materialise(loaded.model) is None
    patch_counts()
    model = loaded.model
    assert shrink.describe() == expected.describe() and model.config.n_layer == 2
    assert {n: (tuple(p.shape), p.dtype) for n, p in model.named_parameters()} == want
    assert all(torch.isfinite(p).all() for p in model.parameters())
    assert model.lm_head.weight is model.transformer.wte.weight  # tied weights stay one parameter
    # initialised as the full-depth model is: GPT-2 scales residual projections by 1/sqrt(2 x 6 layers)
    std = float(model.transformer.h[0].attn.c_proj.weight.detach().std())
    assert math.isclose(std, 0.02 / math.sqrt(12), rel_tol=0.1)
    assert float(model.transformer.h[1].ln_1.weight.detach().min()) == 1.0
    assert set(capture_ops(model, loaded.args, loaded.kwargs, [path.parent])[0].ops) == want_ops


def test_refuses_what_a_replayed_initialisation_would_lose(write_model: Callable[..., Path]) -> None:
    _, why = _meta_build(write_model(LOADS_WEIGHTS, "loads_weights.py"))
    assert why is not None and "copy_" in why
    plain = write_model("import torch\nmodel = torch.nn.Linear(4, 4)\nexample_inputs = (torch.ones(1, 4),)\n")
    _, why = _meta_build(plain)
    assert why is not None and "Hugging Face" in why


def test_materialise_reports_a_parameter_left_unset() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    with parameters_on_meta():
        model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=32, n_head=4, vocab_size=64, n_positions=16))
        model.transformer.extra = torch.nn.Parameter(torch.zeros(3))  # no initialisation knows this one
    why = materialise(model)
    assert why is not None and "transformer.extra" in why
