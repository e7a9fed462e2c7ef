"""Emulated TPU matmul precision and the per-layer float64 comparison (tpu_runtime.onboard.numerics)."""

from __future__ import annotations

import math
import os
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tpu_runtime.onboard.numerics import (
    DEVICE_CHECK_NOT_RUN,
    ROOT_NAME,
    TOLERANCES,
    Bf16MatmulOnF32,
    EmulatedMatmulPrecision,
    compare_layers,
    emulated_precision,
    split_bf16,
)
from tpu_runtime.onboard.report import NumericsReport, PrecisionMode

ALL_MODES: list[PrecisionMode] = ["default", "high", "highest", "bf16"]
T = TypeVar("T")


def seeded(build: Callable[[], T], seed: int = 0) -> T:
    """Build weights/inputs reproducibly without reseeding the caller's global generator."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def row(report: NumericsReport, layer: str, mode: str) -> Any:
    matches = [r for r in report.rows if r.layer == layer and r.mode == mode]
    assert len(matches) == 1, (layer, mode, matches)
    return matches[0]


def layers(report: NumericsReport) -> list[str]:
    seen: list[str] = []
    for r in report.rows:
        if r.layer not in seen:
            seen.append(r.layer)
    return seen


def bf16(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.bfloat16).float()


# ---------------------------------------------------------------------------------------------------
# The dispatch mode


@pytest.mark.slow
def test_default_matmul_is_the_bf16_operand_product() -> None:
    a, b = seeded(lambda: (torch.randn(256, 256), torch.randn(256, 256)))
    ref = a.double() @ b.double()
    plain = a @ b

    with emulated_precision("default") as mode:
        default = a @ b
    assert torch.equal(default, bf16(a) @ bf16(b))
    assert not torch.equal(default, plain)
    assert mode.emulated["aten.mm.default"] == 1

    with emulated_precision("high"):
        high = a @ b
    with emulated_precision("highest"):
        highest = a @ b
    assert torch.equal(highest, plain)

    err_default = (default.double() - ref).abs().max().item()
    err_high = (high.double() - ref).abs().max().item()
    assert err_high * 100 < err_default
    # bf16x3 is close to, but not literally, the f32 product.
    assert err_high < 1e-5 * ref.abs().max().item() * 100


def test_split_bf16_parts_are_bf16_and_add_up() -> None:
    a = seeded(lambda: torch.randn(1000))
    hi, lo = split_bf16(a)
    assert torch.equal(hi, bf16(hi)) and torch.equal(lo, bf16(lo))
    # hi + lo carries about 16 significand bits: far closer to a than bf16 alone.
    assert ((hi + lo - a).abs() / a.abs()).max() < 2.0**-15
    assert ((hi - a).abs() / a.abs()).max() > 2.0**-12


def test_linear_bias_and_baddbmm_scalars_survive_emulation() -> None:
    x, w, b, base, b1, b2 = seeded(
        lambda: (
            torch.randn(8, 32),
            torch.randn(16, 32),
            torch.randn(16),
            torch.randn(4, 8, 8),
            torch.randn(4, 8, 16),
            torch.randn(4, 16, 8),
        )
    )
    with emulated_precision("default"):
        y = F.linear(x, w, b)
        z = torch.baddbmm(base, b1, b2, beta=0.5, alpha=2.0)
    assert torch.equal(y, F.linear(bf16(x), bf16(w), b))
    assert torch.equal(z, torch.baddbmm(base, bf16(b1), bf16(b2), beta=0.5, alpha=2.0))

    with emulated_precision("high"):
        y_high = F.linear(x, w, b)
        z_high = torch.baddbmm(base, b1, b2, beta=0.5, alpha=2.0)
    # bf16x3 in float64 arithmetic: the emulation must match it to f32 rounding, bias and scalars included.
    (x_hi, x_lo), (w_hi, w_lo) = (split_bf16(t) for t in (x, w))
    (p_hi, p_lo), (q_hi, q_lo) = (split_bf16(t) for t in (b1, b2))
    y_x3 = (
        F.linear(x_hi.double(), w_hi.double(), b.double())
        + F.linear(x_hi.double(), w_lo.double())
        + F.linear(x_lo.double(), w_hi.double())
    )
    z_x3 = 0.5 * base.double() + 2.0 * (
        p_hi.double() @ q_hi.double() + p_hi.double() @ q_lo.double() + p_lo.double() @ q_hi.double()
    )
    torch.testing.assert_close(y_high.double(), y_x3, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(z_high.double(), z_x3, rtol=1e-6, atol=1e-6)
    z_ref = torch.baddbmm(base.double(), b1.double(), b2.double(), beta=0.5, alpha=2.0)
    assert (z_high.double() - z_ref).abs().max() * 50 < (z.double() - z_ref).abs().max()


def test_other_dtypes_pass_through() -> None:
    a, b = seeded(
        lambda: (torch.randn(64, 64, dtype=torch.float64), torch.randn(64, 64, dtype=torch.float64))
    )
    with emulated_precision("default") as mode:
        c = a @ b
        d = a.bfloat16() @ b.bfloat16()
    assert torch.equal(c, a @ b)
    assert torch.equal(d, a.bfloat16() @ b.bfloat16())
    assert not mode.emulated


def test_bf16_matmuls_run_as_f32_products_rounded_once() -> None:
    """The all-bf16 run's matmuls: bf16 operands, f32 accumulation, one rounding (as the TPU and torch's
    own CPU bf16 kernels do), whatever the CPU's bf16 support; bias included, elementwise ops untouched."""
    x, w, b = seeded(lambda: (torch.randn(16, 96), torch.randn(48, 96), torch.randn(48)))
    xb, wb, bb = x.bfloat16(), w.bfloat16(), b.bfloat16()
    with Bf16MatmulOnF32():
        y = F.linear(xb, wb, bb)
        g = F.gelu(y)
    assert y.dtype == torch.bfloat16 and g.dtype == torch.bfloat16
    assert torch.equal(y, F.linear(xb.float(), wb.float(), bb.float()).bfloat16())
    assert torch.equal(g, F.gelu(y))
    # torch's own bf16 kernel: the same products, summed in another order, so within one bf16 step
    step = y.float().abs() * 2.0**-7
    assert ((y.float() - F.linear(xb, wb, bb).float()).abs() <= step).all()


def test_bf16_is_not_a_dispatch_mode() -> None:
    with pytest.raises(ValueError, match="bfloat16"):
        EmulatedMatmulPrecision("bf16")  # type: ignore[arg-type]


def _errors_by_precision(model: nn.Module, x: torch.Tensor) -> tuple[dict[str, float], dict[str, Any]]:
    model = model.eval()
    with torch.no_grad():
        ref = model.double()(x.double())
        model.float()
        errors: dict[str, float] = {}
        counts: dict[str, Any] = {}
        for precision in ("default", "high", "highest"):
            with emulated_precision(precision) as mode:
                out = model(x)
            errors[precision] = (out.double() - ref).abs().max().item()
            counts[precision] = dict(mode.emulated)
    return errors, counts


@pytest.mark.slow
def test_conv2d_is_emulated() -> None:
    model, x = seeded(
        lambda: (
            nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 8, 3)),
            torch.randn(2, 3, 16, 16),
        )
    )
    errors, counts = _errors_by_precision(model, x)
    assert counts["default"] == {"aten.convolution.default": 2}
    assert errors["default"] > 0
    assert errors["default"] > 100 * errors["highest"]
    assert errors["highest"] < errors["high"] < errors["default"]


class Attention(nn.Module):
    """Self-attention through F.scaled_dot_product_attention (a fused op on CPU)."""

    def __init__(self, width: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, w = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, w // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, s, w))


@pytest.mark.slow
def test_sdpa_is_emulated() -> None:
    model, x = seeded(lambda: (Attention(), torch.randn(2, 16, 64)))
    errors, counts = _errors_by_precision(model, x)
    assert counts["default"]["aten._scaled_dot_product_flash_attention_for_cpu.default"] == 1
    assert errors["default"] > 100 * errors["highest"]

    # Only the attention core, with its linear layers out of the picture, must still change.
    q, k, v = seeded(
        lambda: (torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32), torch.randn(2, 4, 16, 32))
    )
    with emulated_precision("default"):
        core = F.scaled_dot_product_attention(q, k, v)
    assert not torch.allclose(core, F.scaled_dot_product_attention(q, k, v), rtol=0, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"is_causal": True},
        {"scale": 0.3, "is_causal": True},
        {"attn_mask": "bool"},
        {"attn_mask": "float"},
    ],
)
def test_emulated_attention_matches_sdpa_semantics(kwargs: dict[str, Any]) -> None:
    """At bf16x3 the rewritten attention must agree with torch's sdpa (masks, causal, scale, GQA)."""
    q, k, v, fmask = seeded(
        lambda: (
            torch.randn(2, 8, 12, 16),
            torch.randn(2, 2, 12, 16),
            torch.randn(2, 2, 12, 16),
            torch.randn(2, 1, 12, 12),
        )
    )
    bmask = torch.zeros(12, 12, dtype=torch.bool)
    bmask[:, :4] = True
    bmask[3] = False  # a fully masked row
    if kwargs.get("attn_mask") == "bool":
        kwargs = {"attn_mask": bmask}
    elif kwargs.get("attn_mask") == "float":
        kwargs = {"attn_mask": fmask}
    expected = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
    with emulated_precision("high") as mode:
        got = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, **kwargs)
    assert mode.emulated
    assert got.shape == expected.shape and got.stride() == expected.stride()
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-4)


def test_emulated_attention_logsumexp() -> None:
    """The fused op's second output (used by backward) is reproduced too."""
    op = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default
    q = seeded(lambda: torch.randn(2, 4, 12, 16))
    out, lse = op(q, q, q, is_causal=True)
    with emulated_precision("high"):
        out_x3, lse_x3 = op(q, q, q, is_causal=True)
    torch.testing.assert_close(out_x3, out, rtol=0, atol=1e-4)
    torch.testing.assert_close(lse_x3, lse, rtol=0, atol=1e-4)


# ---------------------------------------------------------------------------------------------------
# compare_layers


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 10))


@pytest.mark.slow
def test_compare_layers_mlp_rows_tolerances_and_bf16() -> None:
    model, x = seeded(lambda: (mlp(), torch.randn(16, 32)))
    report = compare_layers(model, (x,), ALL_MODES)

    assert report.modes == ALL_MODES
    assert layers(report) == ["0", "1", "2", "3", "4", ROOT_NAME]  # execution (completion) order
    assert len(report.rows) == 6 * 4
    assert report.error is None
    assert report.device_check == DEVICE_CHECK_NOT_RUN
    assert report.first_divergent_layer is None
    assert all(r.ok for r in report.rows), [r for r in report.rows if not r.ok]
    for r in report.rows:
        assert r.tolerance == TOLERANCES[r.mode]

    out = {m: row(report, ROOT_NAME, m) for m in ALL_MODES}
    assert out["bf16"].rel > out["default"].rel > out["high"].rel > out["highest"].rel > 0
    assert out["default"].cosine > 0.9999
    # The model output is the last Linear's output.
    assert out["default"].max_abs == row(report, "4", "default").max_abs
    # Emulation really ran: DEFAULT is bf16-sized, far above plain f32.
    assert out["default"].rel > 1e-4 > out["highest"].rel


class Cancellation(nn.Module):
    """a(x) - b(x) with b's weights a's plus 1e-3: the result is small and DEFAULT's error is not."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.a = nn.Linear(width, width, bias=False)
        self.b = nn.Linear(width, width, bias=False)
        with torch.no_grad():
            self.b.weight.copy_(self.a.weight + 1e-3 * torch.randn_like(self.a.weight))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.a(x) - self.b(x)


@pytest.mark.slow
def test_planted_cancellation_is_the_first_divergent_layer() -> None:
    model, x = seeded(
        lambda: (
            nn.Sequential(nn.Linear(32, 64), nn.GELU(), Cancellation(64), nn.Linear(64, 8)),
            torch.randn(16, 32),
        )
    )
    report = compare_layers(model, (x,), ["default", "high", "highest"])

    assert report.first_divergent_layer == "2"
    assert report.first_divergent_by_mode["default"] == "2"
    for earlier in ("0", "1", "2.a", "2.b"):
        assert row(report, earlier, "default").ok
    bad = row(report, "2", "default")
    assert not bad.ok and bad.rel > bad.tolerance
    assert row(report, "2", "highest").ok
    assert row(report, "2", "high").rel < bad.rel / 10


class Exp(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


def test_overflow_in_f32_is_flagged() -> None:
    """exp(~100) overflows f32 and bf16 but not float64: inf in the run means not ok."""
    model = seeded(lambda: nn.Sequential(nn.Linear(8, 8), Exp(), nn.Linear(8, 2)))
    with torch.no_grad():
        first = model[0]
        assert isinstance(first, nn.Linear)
        first.weight.zero_()
        first.bias.fill_(100.0)
    report = compare_layers(model, (torch.ones(3, 8),), ["default", "bf16"])
    assert row(report, "0", "default").ok
    assert report.first_divergent_layer == "1"
    assert report.first_divergent_by_mode == {"default": "1", "bf16": "1"}
    assert math.isinf(row(report, "1", "default").max_abs)


class LogShift(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.log(x - 1e3)  # NaN everywhere x < 1000


@pytest.mark.slow
def test_nan_layer_is_not_ok() -> None:
    model, x = seeded(
        lambda: (nn.Sequential(nn.Linear(8, 8), LogShift(), nn.Linear(8, 2)), torch.randn(4, 8))
    )
    report = compare_layers(model, (x,), ALL_MODES)
    for mode in ALL_MODES:
        assert row(report, "0", mode).ok
        assert not row(report, "1", mode).ok
        assert not row(report, ROOT_NAME, mode).ok
        assert report.first_divergent_by_mode[mode] == "1"
    assert report.first_divergent_layer == "1"
    # NaN rows still serialise to JSON.
    assert report.model_dump(mode="json")["rows"]


class FakeModelOutput(OrderedDict[str, Any]):
    """Stand-in for transformers' ModelOutput: an OrderedDict holding only the fields that are set."""


class Pair(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, list[Any]]:
        y = self.lin(x)
        return y, [torch.relu(y), torch.arange(3), "label"]


class DictOut(nn.Module):
    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> dict[str, Any]:
        return {"scaled": x * scale, "none": None}


class Structured(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pair = Pair()
        self.dict_out = DictOut()
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, ids: torch.Tensor, scale: torch.Tensor) -> FakeModelOutput:
        assert ids.dtype == torch.long  # integer inputs are not cast
        y, extra = self.pair(x)
        z = self.dict_out(extra[0], scale)["scaled"]
        return FakeModelOutput(logits=self.head(z), hidden=(y, z))


def test_tuple_dict_and_model_output_structures() -> None:
    model, x = seeded(lambda: (Structured(), torch.randn(4, 16)))
    inputs = {"x": x, "ids": torch.arange(4), "scale": torch.tensor(1.5)}
    report = compare_layers(model, inputs, ["default", "highest"])
    assert report.error is None
    assert set(layers(report)) == {"pair.lin", "pair", "dict_out", "head", ROOT_NAME}
    for layer in layers(report):
        assert row(report, layer, "default").ok
        assert row(report, layer, "default").max_abs > row(report, layer, "highest").max_abs
    # The root output holds logits and both hidden tensors: its largest error is at least the head's.
    assert row(report, ROOT_NAME, "default").max_abs >= row(report, "head", "default").max_abs


@pytest.mark.slow
def test_gpt2_tiny_all_modes() -> None:
    transformers = pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64)
    model, ids = seeded(lambda: (transformers.GPT2LMHeadModel(config), torch.randint(0, 128, (2, 32))))
    model.eval()

    with torch.no_grad(), emulated_precision("default") as mode:
        model(input_ids=ids)
    assert mode.emulated["aten._scaled_dot_product_flash_attention_for_cpu.default"] == 2
    assert mode.emulated["aten.addmm.default"] >= 8

    report = compare_layers(model, {"input_ids": ids}, ALL_MODES)  # its speed: benchmarks/onboard.py

    assert report.error is None
    names = layers(report)
    for expected in (
        "transformer.wte",
        "transformer.h.0.attn.c_attn",
        "transformer.h.0.attn",
        "transformer.h.1.mlp.c_proj",
        "transformer.ln_f",
        "lm_head",
        ROOT_NAME,
    ):
        assert expected in names
    assert names[-1] == ROOT_NAME
    assert len(report.rows) == 4 * len(names)
    assert report.first_divergent_layer is None
    logits = {m: row(report, "lm_head", m) for m in ALL_MODES}
    assert (
        logits["bf16"].max_abs
        > logits["default"].max_abs
        > logits["high"].max_abs
        > logits["highest"].max_abs
    )
    # Integer ids went through unchanged: the embedding is exact in every f32 mode.
    assert row(report, "transformer.wte", "default").max_abs < 1e-6


@pytest.mark.slow
def test_callers_model_is_untouched() -> None:
    model, x = seeded(
        lambda: (nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 2)), torch.randn(4, 8))
    )
    model.train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = compare_layers(model, (x,), ALL_MODES)
    assert all(r.ok for r in report.rows)  # dropout is off: every run is in eval mode
    assert model.training
    assert all(p.dtype == torch.float32 for p in model.parameters())
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(not m._forward_hooks for m in model.modules())
    assert x.dtype == torch.float32


def test_max_layers_caps_the_reference_but_keeps_the_root() -> None:
    model, x = seeded(lambda: (mlp(), torch.randn(4, 32)))
    report = compare_layers(model, x, ["default"], max_layers=2)
    assert layers(report) == ["0", "1", ROOT_NAME]
    assert "max_layers=2" in report.reference


def test_failing_model_is_reported_not_raised() -> None:
    class Broken(nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            raise RuntimeError("boom")

    report = compare_layers(Broken(), (torch.ones(1),), ["default"])
    assert report.rows == []
    assert report.error is not None and "boom" in report.error
    assert report.first_divergent_layer is None


def test_first_divergent_layer_needs_default_mode() -> None:
    model, x = seeded(lambda: (nn.Sequential(nn.Linear(8, 8), LogShift()), torch.randn(2, 8)))
    report = compare_layers(model, (x,), ["bf16"])
    assert report.first_divergent_layer is None
    assert report.first_divergent_by_mode == {"bf16": "1"}


class _Sampler(torch.nn.Module):
    """Samples in forward the way VAEs and noisy models do: rsample, explicit dropout, randn_like."""

    def __init__(self) -> None:
        super().__init__()
        self.enc = torch.nn.Linear(32, 16)
        self.dec = torch.nn.Linear(8, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mu, logvar = self.enc(x).chunk(2, dim=-1)
        z = torch.distributions.Normal(mu, (0.5 * logvar).exp()).rsample()
        z = torch.nn.functional.dropout(z, 0.1, training=True)
        return self.dec(z + torch.randn_like(z) * 0.1)


class _Jitter(torch.nn.Module):
    """Randomness torch's generator does not see: cannot be replayed."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import random

        return self.lin(x) + random.random()


@pytest.mark.slow
def test_sampling_is_replayed_not_read_as_divergence() -> None:
    torch.manual_seed(0)
    report = compare_layers(_Sampler(), (torch.randn(4, 32),))
    assert report.first_divergent_by_mode == {m: None for m in report.modes}
    assert "replays the float64 run's samples" in report.reference
    assert "aten::normal_" in report.reference and "aten::randn_like" in report.reference
    assert not any(r.nondeterministic for r in report.rows)


def test_randomness_outside_torch_is_marked_nondeterministic_not_divergent() -> None:
    torch.manual_seed(0)
    report = compare_layers(_Jitter(), (torch.randn(2, 8),))
    flagged = {r.layer for r in report.rows if r.nondeterministic}
    assert "(model)" in flagged and all(r.ok for r in report.rows if r.layer in flagged)
    assert report.first_divergent_layer is None
    assert "marked nondeterministic" in report.reference


def test_the_comparison_runs_on_one_thread_and_restores_the_count() -> None:
    seen: list[int] = []

    class Probe(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            seen.append(torch.get_num_threads())
            return x * 2

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        compare_layers(Probe(), (torch.ones(4),), ("default",))
        assert seen and set(seen) == {1}
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
