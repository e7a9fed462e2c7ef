"""Records the op capture produces in the child process and the coverage step reads in the parent."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tpu_runtime.onboard.report import InputStyle, Phase, SizePlan


class RawOp(BaseModel):
    """One ATen overload as the model ran it, before it is judged against TorchTPU's table."""

    op: str
    phase: Phase
    count: int
    module: str
    source: str
    source_text: str = ""


class KVGeometry(BaseModel):
    """What a decoder LM's KV cache is made of, read from its config."""

    layers: int
    kv_heads: int
    head_dim: int
    latent_dim: int | None = None  # multi-head latent attention: one compressed vector per token and layer
    sliding_layers: int = 0  # layers whose cache holds only the last `sliding_window` tokens
    sliding_window: int | None = None


class ActivationProbe(BaseModel):
    """Activation memory measured on CPU at the example inputs' size."""

    inference_peak_bytes: int
    training_saved_bytes: int
    batch: int
    seq: int | None
    depth_ratio: float = 1.0


class ModelProbe(BaseModel):
    """What the child process learned by running the user's model; no torch objects, only data."""

    convention: str
    input_style: InputStyle = "positional"
    class_name: str
    parameters: int
    parameter_bytes: int
    buffers_bytes: int
    dtype: str
    hf_architecture: str | None = None
    hf_model_type: str | None = None
    kv: KVGeometry | None = None
    lm_evidence: str | None = None  # how the model was recognised as a decoder LM
    position_limit: int | None = None  # longest sequence its position encoding covers, where known
    output_summary: str
    raw_ops: list[RawOp]
    tpu_raw_ops: list[RawOp] = []
    tpu_note: str = ""
    shrink_note: str | None = None
    activations: ActivationProbe
    size: SizePlan | None = None
    numerics: dict[str, object] | None = None
    numerics_error: str | None = None
    input_shapes_vary: bool = False
    timings: dict[str, float] = {}
    peak_rss_bytes: int = 0
    xla: dict[str, dict[str, Any]] = {}  # generation -> xla_memory.XlaMemory as JSON
    xla_notes: list[str] = []
    notes: list[str] = []
