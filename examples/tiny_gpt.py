"""A small GPT written in plain PyTorch: the built-in example for `tpu-agent onboard`.

It follows the `get_model()` + `get_inputs()` convention and has the things real models have that
matter on a TPU: attention through scaled_dot_product_attention, a top-k sampling head that calls
`.item()`, and a mask built with `nonzero`.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, WIDTH, HEADS, LAYERS, CONTEXT = 512, 128, 4, 4, 64


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, HEADS, c // HEADS).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(WIDTH)
        self.attn = Attention()
        self.ln2 = nn.LayerNorm(WIDTH)
        self.mlp = nn.Sequential(
            nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(approximate="tanh"), nn.Linear(4 * WIDTH, WIDTH)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tok = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.randn(CONTEXT, WIDTH) / math.sqrt(WIDTH))
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        keep = (ids != 0).nonzero()  # data-dependent shape: recompiles on a TPU
        if keep.numel() == 0:  # Python control flow on a tensor: a host sync
            raise ValueError("all padding")
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.ln_f(x))
        top = logits[:, -1].topk(5).values
        self.last_top = float(top.max().item())  # .item(): another host sync
        return logits


def get_model() -> nn.Module:
    torch.manual_seed(0)
    return TinyGPT()


def get_inputs() -> tuple[torch.Tensor]:
    return (torch.randint(1, VOCAB, (2, 32)),)
