"""The one report model of `tpu-agent onboard`; every front end renders this and nothing else.

The JSON form (`OnboardReport.model_dump(mode="json")`) is the stable schema documented in the README;
`schema_version` changes whenever a field is renamed or removed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1

DEVICE_CHECK_NOT_RUN = (
    "not run: no TPU target is configured (the same comparison runs on the device after you approve it)"
)

OpStatus = Literal["supported", "composite", "cpu_variant", "missing"]
Phase = Literal["forward", "backward"]
Generation = Literal["v5e", "v5p", "v6e", "tpu7x"]
GENERATIONS: tuple[Generation, ...] = ("v5e", "v5p", "v6e", "tpu7x")
PrecisionMode = Literal["default", "high", "highest", "bf16"]
InputStyle = Literal["positional", "keyword", "single"]
WeightDtype = Literal["f32", "bf16", "fp16", "fp8", "int8", "int4"]
KVDtype = Literal["f32", "bf16", "fp16", "fp8", "int8"]


class ModelInfo(BaseModel):
    """What was loaded and how."""

    file: str
    convention: str = Field(description="which loading convention matched, e.g. 'get_model+get_inputs'")
    input_style: InputStyle = Field(
        default="positional", description="inputs as a tuple/list, a dict of keyword arguments, or one tensor"
    )
    class_name: str
    parameters: int
    parameter_bytes: int
    buffers_bytes: int = 0
    dtype: str = "float32"
    is_decoder_lm: bool = False
    decoder_lm_evidence: str | None = Field(default=None, description="how it was recognised as a decoder LM")
    position_limit: int | None = Field(default=None, description="longest sequence its positions cover")
    hf_architecture: str | None = Field(default=None, description="Hugging Face config.architectures[0]")
    hf_model_type: str | None = None
    shrunk: bool = Field(default=False, description="ops were captured on a narrower copy of the model")
    shrink_note: str | None = None
    output_summary: str = ""


class SizePlan(BaseModel):
    """How the model was run at a size this machine can hold, for the report."""

    full_size: str = Field(description="'fake tensors' or 'real tensors': how the full-size model was built")
    input_shapes: list[str] = []
    input_bytes: int = 0
    forward_flops: int | None = None
    capture: str = ""  # which build the op inventory came from, and why
    numerics_model: str = ""  # which copy numerics compared (layers, widths), empty when the model itself
    numerics_input_shapes: list[str] = []
    build_note: str | None = None  # why the fake build fell back to a real one
    remat_blocks: int = 0
    remat_block_input_bytes: int = 0


class OpUse(BaseModel):
    """One ATen overload the model ran, judged against TorchTPU's dispatcher table."""

    op: str = Field(description="overload-level name, e.g. 'aten::add.Tensor'")
    phase: Phase
    count: int
    status: OpStatus
    detail: str = Field(description="why this status, naming the torch_tpu version the table came from")
    tpu_op: str | None = Field(default=None, description="device counterpart of a CPU-only variant")
    module: str = Field(description="dotted path of the innermost nn.Module that first called it")
    source: str = Field(description="'file:line' of the user's code that first called it")


class Remedy(BaseModel):
    """What to do about one missing op."""

    op: str
    kind: Literal["rewrite", "cpu_fallback", "pallas_kernel"]
    summary: str
    code: str | None = None
    cost: str | None = None


class Risk(BaseModel):
    """Something that makes a TPU recompile or wait for the host."""

    kind: Literal["dynamic_shape", "host_sync", "python_control_flow", "sparse", "varying_input_shape"]
    op: str
    source: str
    module: str = ""
    detail: str = ""


class LayerError(BaseModel):
    """One module's output under one precision mode, against the float64 CPU reference."""

    layer: str
    mode: PrecisionMode
    max_abs: float
    rel: float = Field(description="max |err| / max |reference|")
    cosine: float
    tolerance: float = Field(description="dtype-aware bound on `rel` for this mode")
    ok: bool
    nondeterministic: bool = Field(
        default=False,
        description="differs between two float64 runs with the same samples: not judged (ok stays true)",
    )


class NumericsReport(BaseModel):
    reference: str = "float64 on CPU, same weights and inputs"
    modes: list[PrecisionMode]
    rows: list[LayerError]
    first_divergent_layer: str | None = Field(
        description="first module (execution order) whose error exceeds its tolerance in mode DEFAULT"
    )
    first_divergent_by_mode: dict[str, str | None] = {}
    device_check: str = Field(description="whether the same comparison ran on a real TPU, and why not")
    compared_on: str | None = Field(
        default=None, description="the smaller copy the rows come from, when the model itself was too big"
    )
    device_rows: list[LayerError] = Field(
        default=[],
        description="the same rows measured on the target's device after approval (worst over workers)",
    )
    error: str | None = None


class GenerationFit(BaseModel):
    generation: Generation
    hbm_per_chip_bytes: int
    inference_bytes: int
    training_bytes: int
    fits: bool = Field(description="inference fits on one chip")
    training_fits: bool = Field(description="training fits on one chip")
    inference_chips: int = Field(description="chips needed for inference (sharded evenly)")
    training_chips: int
    smallest_slice_inference: str | None
    smallest_slice_training: str | None
    inference_hosts: float | None = Field(default=None, description="hosts of the smallest inference slice")
    serving_layout: str = Field(default="", description="how inference uses the chips, e.g. TP in one host")
    training_chips_remat: int | None = Field(default=None, description="chips for training with remat")
    xla_bytes: int | None = Field(default=None, description="XLA memory analysis on a compile-only topology")


class MemoryBreakdown(BaseModel):
    weights: int
    activations_inference: int
    kv_cache: int
    gradients: int
    optimizer_state: int
    activations_training: int
    activations_training_remat: int | None = Field(
        default=None,
        description="training activations when each repeated block is recomputed in backward (remat)",
    )
    kv_bytes_per_token: float | None = Field(default=None, description="KV cache bytes per token of context")
    batch: int
    seq: int | None
    note: str = ""


class Preflight(BaseModel):
    breakdown: MemoryBreakdown
    generations: dict[str, GenerationFit]
    sources: list[str]
    xla_note: str | None = None


class ServingPlan(BaseModel):
    path: Literal["vllm-torchtpu", "torch-compile"]
    reason: str
    eager_mode: str
    eager_reason: str
    pretraining: str
    snippet: str
    sources: list[str]


class OnboardReport(BaseModel):
    schema_version: int = SCHEMA_VERSION
    model: ModelInfo
    op_table: str = Field(description="where the TorchTPU op table came from: installed package or snapshot")
    ops: list[OpUse]
    tpu_ops: list[OpUse] = Field(
        default=[],
        description="forward ops as TorchTPU routes them (fake-TPU trace), when torch_tpu is installed",
    )
    tpu_trace_note: str = ""
    missing: list[str]
    remedies: list[Remedy]
    risks: list[Risk]
    numerics: NumericsReport | None
    preflight: Preflight | None
    serving: ServingPlan | None
    timings: dict[str, float] = Field(
        default={}, description="seconds per step; 'child.*' inside the child process that ran the model"
    )
    size: SizePlan | None = Field(
        default=None, description="how the model was run at a size this machine holds (full size, copies)"
    )
    peak_host_memory_bytes: int = Field(
        default=0, description="peak resident memory of the child process that ran the model"
    )
    isolation: str = Field(
        default="",
        description="exactly how the model's code was kept apart from this machine, and what it could reach",
    )
    notes: list[str] = []
