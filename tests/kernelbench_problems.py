"""KernelBench-style problem files (a `Model`, `get_inputs`, `get_init_inputs`) that the onboarding tests and
benchmarks/onboard.py both run, so the test and the README figure are about the same file."""

from __future__ import annotations

#: Two 32768 x 32768 float32 operands: 8 GiB of inputs, more than the tests' memory budget.
GIANT_MATMUL = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)

M = 32768
K = 32768
N = 32768

def get_inputs():
    return [torch.rand(M, K), torch.rand(K, N)]

def get_init_inputs():
    return []
"""
