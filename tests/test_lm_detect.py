"""Decoder LMs are recognised by behaviour and structure, not by class name."""

from __future__ import annotations

import torch
from torch import nn

from tpu_runtime.onboard.lm_detect import recognise, structural_kv
from tpu_runtime.onboard.loader import LoadedModel, import_user_file
from tpu_runtime.resources import examples_dir


class Encoder(nn.Module):
    """Token ids in, vocabulary-sized output out, but every position sees every other: not causal."""

    def __init__(self, causal: bool) -> None:
        super().__init__()
        self.causal = causal
        self.tok = nn.Embedding(100, 32)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True) for _ in range(3))
        self.head = nn.Linear(32, 100)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.tok(ids)
        mask = nn.Transformer.generate_square_subsequent_mask(ids.shape[1]) if self.causal else None
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=self.causal)
        return self.head(x)


def _recognise(model: nn.Module, ids: torch.Tensor) -> object:
    loaded = LoadedModel(model=model, args=(ids,))
    with torch.no_grad():
        output = model.eval()(ids)
    return recognise(model, loaded, output)


def test_the_built_in_example_is_a_causal_lm() -> None:
    module = import_user_file(examples_dir() / "tiny_gpt.py")
    model = module.get_model()
    found = _recognise(model, module.get_inputs()[0])
    assert found is not None and "causal" in found.evidence  # type: ignore[attr-defined]
    geometry, limit, how = structural_kv(model, 512)
    assert geometry is not None and geometry.layers == 4 and geometry.head_dim == 128
    assert limit == 64 and "full multi-head attention assumed" in how


def test_bidirectional_token_model_is_not_a_decoder_lm() -> None:
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (2, 10))
    assert _recognise(Encoder(causal=False), ids) is None
    assert _recognise(Encoder(causal=True), ids) is not None


def test_float_inputs_are_not_token_ids() -> None:
    model = nn.Sequential(nn.Linear(8, 8))
    loaded = LoadedModel(model=model, args=(torch.randn(2, 8),))
    assert recognise(model, loaded, model(torch.randn(2, 8))) is None
