"""Small models of the kinds users bring, built from code (no downloads), one `build_*` per kind.

Each builder returns (model, inputs) where inputs are positional args (tuple) or keyword args (dict).
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

Built = tuple[nn.Module, Any]


# The tiny decoder shared by the Llama-style builders: two layers, grouped-query attention, 128 words.
TINY_DECODER: dict[str, int] = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 128,
    "max_position_embeddings": 64,
}


def build_gpt2() -> Built:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64)
    return GPT2LMHeadModel(config), {"input_ids": torch.randint(0, 128, (2, 16))}


def build_llama() -> Built:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**TINY_DECODER, architectures=["LlamaForCausalLM"])
    return LlamaForCausalLM(config), {"input_ids": torch.randint(0, 128, (2, 16))}


def build_t5() -> Built:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(
        vocab_size=128, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, decoder_start_token_id=0
    )
    return T5ForConditionalGeneration(config), {
        "input_ids": torch.randint(0, 128, (2, 12)),
        "decoder_input_ids": torch.randint(0, 128, (2, 8)),
    }


def build_mixtral() -> Built:
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(**TINY_DECODER, num_local_experts=4, num_experts_per_tok=2)
    return MixtralForCausalLM(config), {"input_ids": torch.randint(0, 128, (2, 16))}


def build_vit() -> Built:
    from transformers import ViTConfig, ViTForImageClassification

    config = ViTConfig(
        image_size=32,
        patch_size=8,
        num_channels=3,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=128,
        num_labels=10,
    )
    return ViTForImageClassification(config), {"pixel_values": torch.randn(2, 3, 32, 32)}


class ConvNet(nn.Module):
    """A small ResNet-style classifier."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2)
        )
        self.block = nn.Sequential(
            nn.Conv2d(16, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1),
            nn.BatchNorm2d(16),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        x = F.relu(x + self.block(x))
        return self.fc(self.pool(x).flatten(1))


def build_convnet() -> Built:
    return ConvNet(), (torch.randn(2, 3, 32, 32),)


class Recommender(nn.Module):
    """Two-tower style: bags of sparse features through EmbeddingBag, dense features through an MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.bags = nn.EmbeddingBag(1000, 16, mode="sum")
        self.dense = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, ids: torch.Tensor, offsets: torch.Tensor, dense: torch.Tensor) -> torch.Tensor:
        sparse = self.bags(ids, offsets)
        return torch.sigmoid(self.top(torch.cat([sparse, self.dense(dense)], dim=1)))


def build_recommender() -> Built:
    ids = torch.randint(0, 1000, (20,))
    offsets = torch.tensor([0, 3, 9, 14])
    return Recommender(), (ids, offsets, torch.randn(4, 8))


class UNetBlock(nn.Module):
    def __init__(self, cin: int, cout: int, tdim: int) -> None:
        super().__init__()
        self.norm1 = nn.GroupNorm(4, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.time = nn.Linear(tdim, cout)
        self.norm2 = nn.GroupNorm(4, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.time(t)[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return h + self.skip(x)


class TinyUNet(nn.Module):
    """A diffusion UNet: sinusoidal timestep embedding, GroupNorm/SiLU blocks, down and up sampling."""

    def __init__(self) -> None:
        super().__init__()
        self.tdim = 32
        self.inp = nn.Conv2d(3, 16, 3, padding=1)
        self.down = UNetBlock(16, 32, self.tdim)
        self.mid = UNetBlock(32, 32, self.tdim)
        self.up = UNetBlock(64, 16, self.tdim)
        self.out = nn.Conv2d(16, 3, 3, padding=1)

    def embed(self, t: torch.Tensor) -> torch.Tensor:
        half = self.tdim // 2
        freqs = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        angles = t[:, None].float() * freqs[None]
        return torch.cat([angles.sin(), angles.cos()], dim=1)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        temb = self.embed(t)
        h0 = self.inp(x)
        h1 = self.down(F.avg_pool2d(h0, 2), temb)
        h2 = self.mid(h1, temb)
        up = F.interpolate(h2, scale_factor=2, mode="nearest")
        h3 = self.up(torch.cat([up, torch.cat([h0, h0], dim=1)[:, :32]], dim=1), temb)
        return self.out(h3)


def build_unet() -> Built:
    return TinyUNet(), (torch.randn(2, 3, 16, 16), torch.randint(0, 1000, (2,)))


BUILDERS = {
    "gpt2": build_gpt2,
    "llama": build_llama,
    "t5": build_t5,
    "mixtral": build_mixtral,
    "vit": build_vit,
    "convnet": build_convnet,
    "recommender": build_recommender,
    "unet": build_unet,
}
