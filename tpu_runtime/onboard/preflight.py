"""HBM preflight: will the model fit on a TPU chip, and if not, how many chips and which slice?

The memory model is deliberately simple and every assumption is written into `MemoryBreakdown.note`:

- weights = parameter bytes + buffer bytes (as loaded, in the model's own dtypes).
- inference = weights + inference activations + KV cache.
- KV cache (decoder LMs) = 2 (K and V) x layers x kv_heads x head_dim x batch x seq x bytes per element.
- training = weights + gradients (same dtype as the weights: parameter bytes again) + AdamW state
  (two fp32 moments, 8 bytes per parameter) + training activations. An fp32 master copy of bf16
  weights, if the recipe keeps one, is not counted.
- activations are measured by the caller at a probe batch/seq and scaled linearly in batch and in
  sequence length. Linear in seq holds for memory-efficient attention; attention that materialises
  seq x seq scores grows faster, so the estimate is then a lower bound.

Per generation, HBM per chip comes from `knowledge/chips.yaml`, less `RUNTIME_RESERVE_FRACTION`.
Sharding model for "chips needed": weights, gradients, optimizer state and the KV cache are split
evenly over n chips (FSDP-style); activations are split by batch, so each chip holds ceil(batch / n)
samples' worth. When one sample's activations alone exceed a chip, no chip count fits (reported as 0
chips and no slice) and the note says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from pydantic import BaseModel, ConfigDict, Field

from tpu_runtime.chips import ChipSpec, SliceShape, get_chip
from tpu_runtime.onboard.report import GENERATIONS, Generation, GenerationFit, MemoryBreakdown, Preflight

#: Fraction of each chip's listed HBM we keep back for the runtime and the compiler.
#: Why 10%: (1) the v5p page says the physical 96 GiB is listed as 95 GiB after the TPU system and libtpu
#: take their share, and frameworks then also need room for compiled programs, XLA temporaries,
#: collective buffers and allocator fragmentation, none of which this estimate models; (2) the v5e and
#: v6e pages print "GB" where the hardware tables mean GiB, and 10% covers that 6.9% reading gap too.
#: It is a planning margin, not a measured number.
RUNTIME_RESERVE_FRACTION = Fraction(1, 10)
RESERVE_SOURCE = "https://docs.cloud.google.com/tpu/docs/v5p"

#: Bytes of AdamW state per parameter: exp_avg and exp_avg_sq, each fp32.
ADAMW_STATE_BYTES_PER_PARAM = 8


class KVCacheGeometry(BaseModel):
    """Shape of a decoder LM's KV cache (per token, per layer: kv_heads x head_dim for K and again for V)."""

    model_config = ConfigDict(frozen=True)

    layers: int = Field(ge=1)
    kv_heads: int = Field(ge=1)
    head_dim: int = Field(ge=1)
    dtype_bytes: float = Field(gt=0, description="bytes per cached element, e.g. 2 for bf16, 1 for fp8")
    latent_dim: int | None = Field(
        default=None, description="multi-head latent attention: cached elements per token and layer"
    )
    sliding_layers: int = Field(default=0, ge=0, description="layers that cache only a sliding window")
    sliding_window: int | None = Field(default=None, ge=1)

    def elements_per_token_layer(self) -> int:
        """K and V of every KV head, or MLA's one compressed latent vector (rope part included)."""
        return self.latent_dim if self.latent_dim else 2 * self.kv_heads * self.head_dim

    def bytes_per_token(self) -> float:
        """Bytes one more token of context adds over all layers (sliding layers: below their window)."""
        return self.layers * self.elements_per_token_layer() * self.dtype_bytes

    def formula(self) -> str:
        per = (
            f"{self.latent_dim} latent elements (MLA)"
            if self.latent_dim
            else f"2 x {self.kv_heads} kv heads x {self.head_dim} head dim"
        )
        text = f"{self.layers} layers x {per} x {self.dtype_bytes:g} bytes"
        if self.sliding_layers and self.sliding_window:
            text += f"; {self.sliding_layers} sliding-window layers hold at most {self.sliding_window} tokens"
        return text


def kv_cache_bytes(geometry: KVCacheGeometry, batch: int, seq: int) -> int:
    """layers x elements per token and layer x batch x seq x dtype bytes (2 x kv_heads x head_dim
    elements for ordinary attention, the latent width for MLA); sliding-window layers stop at the window."""
    if batch < 1 or seq < 1:
        raise ValueError(f"batch and seq must be >= 1, got batch={batch}, seq={seq}")
    g = geometry
    window = g.sliding_window or seq
    sliding = g.sliding_layers if g.sliding_window else 0
    tokens = (g.layers - sliding) * seq + sliding * min(seq, window)
    return math.ceil(g.elements_per_token_layer() * tokens * batch * g.dtype_bytes)


def _scale(measured: int, factor: Fraction) -> int:
    return math.ceil(measured * factor)


def estimate_memory(
    *,
    parameters: int,
    parameter_bytes: int,
    buffer_bytes: int = 0,
    activation_bytes_inference: int = 0,
    activation_bytes_training: int = 0,
    batch: int = 1,
    seq: int | None = None,
    probe_batch: int = 1,
    probe_seq: int | None = None,
    kv_cache: KVCacheGeometry | None = None,
    activation_bytes_training_remat: int | None = None,
) -> MemoryBreakdown:
    """Bytes the model needs for inference and for training at the user's batch/seq.

    `parameter_bytes` is the total size of all parameters as loaded (so the dtype is already in it);
    activation bytes are what the caller measured at `probe_batch`/`probe_seq`.
    """
    for label, value in (
        ("parameters", parameters),
        ("parameter_bytes", parameter_bytes),
        ("buffer_bytes", buffer_bytes),
        ("activation_bytes_inference", activation_bytes_inference),
        ("activation_bytes_training", activation_bytes_training),
    ):
        if value < 0:
            raise ValueError(f"{label} must be >= 0, got {value}")
    if batch < 1 or probe_batch < 1:
        raise ValueError(f"batch and probe_batch must be >= 1, got {batch} and {probe_batch}")
    if (seq is not None and seq < 1) or (probe_seq is not None and probe_seq < 1):
        raise ValueError(f"seq and probe_seq must be >= 1 when given, got {seq} and {probe_seq}")

    notes: list[str] = []
    factor = Fraction(batch, probe_batch)
    effective_seq = seq if seq is not None else probe_seq
    if seq is not None and probe_seq is not None:
        factor *= Fraction(seq, probe_seq)
        notes.append(
            f"activations measured at batch {probe_batch}, seq {probe_seq} and scaled linearly to batch "
            f"{batch}, seq {seq} (attention that stores seq x seq scores grows faster: then a lower bound)"
        )
    else:
        notes.append(f"activations measured at batch {probe_batch} and scaled linearly to batch {batch}")
        if seq is not None:
            notes.append(f"no probe seq given, so activations are not rescaled to seq {seq}")

    weights = parameter_bytes + buffer_bytes
    kv = 0
    if kv_cache is not None:
        if effective_seq is None:
            raise ValueError("a KV cache estimate needs a sequence length (seq or probe_seq)")
        kv = kv_cache_bytes(kv_cache, batch, effective_seq)
        notes.append(f"KV cache = {kv_cache.formula()} x batch {batch} x seq {effective_seq}")
    notes.append(
        "training = weights + gradients (weights' dtype) + AdamW state (2 x fp32 = 8 bytes per parameter) "
        "+ training activations; an fp32 master copy of low-precision weights is not counted"
    )
    return MemoryBreakdown(
        weights=weights,
        activations_inference=_scale(activation_bytes_inference, factor),
        kv_cache=kv,
        gradients=parameter_bytes,
        optimizer_state=ADAMW_STATE_BYTES_PER_PARAM * parameters,
        activations_training=_scale(activation_bytes_training, factor),
        activations_training_remat=(
            None
            if activation_bytes_training_remat is None
            else _scale(activation_bytes_training_remat, factor)
        ),
        kv_bytes_per_token=kv_cache.bytes_per_token() if kv_cache is not None else None,
        batch=batch,
        seq=effective_seq,
        note="; ".join(notes),
    )


def inference_bytes(b: MemoryBreakdown) -> int:
    return b.weights + b.activations_inference + b.kv_cache


def training_bytes(b: MemoryBreakdown) -> int:
    return b.weights + b.gradients + b.optimizer_state + b.activations_training


def usable_hbm_bytes(chip: ChipSpec) -> int:
    """A chip's listed HBM less the runtime reserve."""
    return math.floor(chip.hbm_bytes * (1 - RUNTIME_RESERVE_FRACTION))


def per_chip_bytes(sharded: int, activations: int, batch: int, chips: int) -> Fraction:
    """Bytes on each of `chips` chips: sharded state split evenly, activations split by batch."""
    if chips < 1:
        raise ValueError(f"chips must be >= 1, got {chips}")
    samples_per_chip = math.ceil(batch / chips)
    return Fraction(sharded, chips) + Fraction(activations * samples_per_chip, batch)


def chips_needed(sharded: int, activations: int, batch: int, usable: int) -> int | None:
    """Fewest chips whose usable HBM holds the job under the sharding model; None if no count does."""
    if usable <= 0:
        return None
    if per_chip_bytes(sharded, activations, batch, 1) <= usable:
        return 1
    per_sample = Fraction(activations, batch)
    if per_sample > usable or (per_sample == usable and sharded > 0):
        return None
    # per_chip_bytes is non-increasing in the chip count, so double until it fits, then bisect.
    low, high = 1, 2
    while per_chip_bytes(sharded, activations, batch, high) > usable:
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        if per_chip_bytes(sharded, activations, batch, mid) <= usable:
            high = mid
        else:
            low = mid
    return high


def _fit(generation: Generation, breakdown: MemoryBreakdown) -> tuple[GenerationFit, list[str], list[str]]:
    chip = get_chip(generation)
    usable = usable_hbm_bytes(chip)
    b = breakdown
    inf_total, train_total = inference_bytes(b), training_bytes(b)
    inf_chips = chips_needed(b.weights + b.kv_cache, b.activations_inference, b.batch, usable)
    train_chips = chips_needed(
        b.weights + b.gradients + b.optimizer_state, b.activations_training, b.batch, usable
    )
    notes: list[str] = []
    for label, count, acts in (
        ("inference", inf_chips, b.activations_inference),
        ("training", train_chips, b.activations_training),
    ):
        if count is None:
            notes.append(
                f"{generation}: one sample's {label} activations ({acts / b.batch / (1 << 30):.1f} GiB) "
                f"exceed the usable {usable / (1 << 30):.1f} GiB per chip, so no chip count fits by "
                "batch split; lower the sequence length, checkpoint activations or shard the sequence"
            )
    inf_slice = chip.smallest_slice(inf_chips) if inf_chips else None
    train_slice = chip.smallest_slice(train_chips) if train_chips else None
    remat_chips = None
    if b.activations_training_remat is not None:
        remat_chips = chips_needed(
            b.weights + b.gradients + b.optimizer_state, b.activations_training_remat, b.batch, usable
        )
    sources = [chip.hbm.source, chip.chips_per_host.source]
    sources += [s.source for s in (inf_slice, train_slice) if s is not None]
    fit = GenerationFit(
        generation=generation,
        hbm_per_chip_bytes=chip.hbm_bytes,
        inference_bytes=inf_total,
        training_bytes=train_total,
        fits=inf_total <= usable,
        training_fits=train_total <= usable,
        inference_chips=inf_chips or 0,
        training_chips=train_chips or 0,
        smallest_slice_inference=inf_slice.topology if inf_slice else None,
        smallest_slice_training=train_slice.topology if train_slice else None,
        inference_hosts=inf_slice.hosts if inf_slice else None,
        serving_layout=serving_layout(inf_chips, inf_slice, chip.chips_per_host.value),
        training_chips_remat=remat_chips,
    )
    return fit, sources, notes


def serving_layout(chips: int | None, shape: SliceShape | None, chips_per_host: int) -> str:
    """How a server spreads the weights: tensor parallel inside one host, more hosts beyond it."""
    if not chips:
        return "does not fit any chip count (one sample's activations exceed a chip)"
    if shape is None:
        return f"{chips} chips: more than the largest listed slice"
    degree = shape.chips
    if degree == 1:
        return "one chip, no sharding"
    hosts = shape.hosts or math.ceil(degree / chips_per_host)
    if hosts <= 1:
        return f"tensor parallel over {degree} chips of one host ({shape.topology})"
    return (
        f"{degree} chips over {hosts:g} hosts ({shape.topology}): tensor parallel inside each host of "
        f"{chips_per_host} chips, pipeline or data parallel across hosts"
    )


def preflight(breakdown: MemoryBreakdown, generations: Sequence[Generation] = GENERATIONS) -> Preflight:
    """Fit `breakdown` against each generation's HBM (less the runtime reserve) and its listed slices.

    `inference_chips`/`training_chips` of 0 mean no chip count fits under the sharding model (the note
    in the returned breakdown says why).
    """
    fits: dict[str, GenerationFit] = {}
    sources: list[str] = []
    extra_notes: list[str] = [
        f"usable HBM per chip = listed HBM less {float(RUNTIME_RESERVE_FRACTION):.0%} for the runtime and "
        "compiler; chips needed assumes weights, gradients, optimizer state and KV cache sharded evenly "
        "(FSDP-style) and activations split by batch"
    ]
    for generation in generations:
        fit, fit_sources, fit_notes = _fit(generation, breakdown)
        fits[generation] = fit
        extra_notes += fit_notes
        for url in [*fit_sources, RESERVE_SOURCE]:
            if url not in sources:
                sources.append(url)
    note = "; ".join(n for n in (breakdown.note, *extra_notes) if n)
    return Preflight(breakdown=breakdown.model_copy(update={"note": note}), generations=fits, sources=sources)
