"""The index build's bulk encoder: the shipped MiniLM written as an ONNX graph of fused operators and run
by ONNX Runtime (a chromadb dependency).

Why a graph built here rather than `torch.onnx.export`: the export imported torch and transformers and
traced the model, 7-26 s of a from-scratch build, and its graph (three Q/K/V matmuls, masking through
IsNaN/Where, separate add + LayerNorm) was left mostly unfused by ONNX Runtime. The same six BERT layers
written directly with ONNX Runtime's fused CPU operators (`Attention` with one packed QKV GEMM,
`SkipLayerNormalization`, `BiasGelu`, from the com.microsoft domain, documented at
https://onnxruntime.ai/docs/reference/operators/ContribOperators.html) are made in memory from the
weights the numpy query path already holds, in well under a second, with nothing written to disk,
and run faster per token (benchmarks/kb.py prints the ratio to sentence-transformers).

The graph ends with mean pooling over the attention mask and L2 normalisation, so its output is the
vector the numpy query path and sentence-transformers produce (a test checks the cosine).

Where the CPU has VNNI (`int8_matmuls`) the weight matmuls run on 8-bit integers, since the float32
graph missed the 60 s build aim on such a 2-core machine (86.9 s) and int8 took about half its CPU
there: `QAttention` and `DynamicQuantizeMatMul` (weights int8 per output column, activations uint8 per
batch) for the QKV, attention-output and feed-forward up projections, and `MatMulNBits` (8-bit weights
and activations scaled per block of 128 inputs) for the down projection, whose post-GELU inputs lost
most to one scale per batch (mean cosine to float32 0.9937 with it, 0.9971 with blocks; 320 fact
passages); the other inputs are smoothed first (`build_graph`'s `smoothed`: 0.9990). Per-tensor int8
(cosine 0.94) and int8 without VNNI (at most a tenth faster) were measured and dropped earlier (README).
A query is still encoded in float32 by the numpy path.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from tpu_runtime.knowledge import onnx_proto
from tpu_runtime.knowledge.model_files import DIMENSION, ModelUnavailable, padded_batches

BATCH = 32
OPSET = 17
HEADS = 12
LAYER_NORM_EPS = 1e-12  # BERT's
MS = "com.microsoft"  # ONNX Runtime's contrib operator domain
PROBE = "input_of_"  # with `build_graph(probes=True)`: input_of_l0_qkv, input_of_l0_ao, ...
# Smoothing needs each matmul input's range per channel; the large channels are the model's own (the
# same few in every text), so these few sentences in the fact sheets' style find them: 4 or 8 corpus
# passages gave the same cosine to float32 as 32 (0.9989).
CALIBRATION = (
    "knowledge/tpu_basics.md > TPU basics > Memory\n- A v5e chip has 16 GiB of HBM; a v5p chip has 95 GiB.",
    "knowledge/jax.md > JAX on TPU > Sharding\n- `jax.sharding.NamedSharding` places an array over a `Mesh` "
    "by axis names, e.g. `PartitionSpec('data', None)`.",
    "knowledge/xla.md > XLA flags\n- `--xla_tpu_enable_latency_hiding_scheduler=true` lets the compiler "
    "overlap collectives with compute.",
    "knowledge/gke.md > TPUs on GKE > Node pools\n- A multi-host TPU slice is one node pool; its nodes are "
    "created and deleted together, and a failed host restarts the whole slice's workload.",
    "knowledge/pytorch.md > PyTorch/XLA > Debugging\n- Set PT_XLA_DEBUG_LEVEL=2 to print why each graph "
    "was compiled again, such as a dynamic shape or a Python scalar that changes each step.",
    "knowledge/vllm.md > vLLM on TPU > Errors\n- RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: "
    "Error allocating device buffer: Attempting to allocate 1.50G. That was not possible.",
    "knowledge/pallas.md > Pallas > Block shapes\n- The last two dimensions of a block must be divisible "
    "by 8 and 128 (float32), or equal the array's own dimensions.",
    "knowledge/cloud.md > Cloud TPU VMs > Queued resources\n- gcloud compute tpus queued-resources create "
    "asks for capacity that may take hours; --valid-until-duration bounds the wait.",
)
DOWN_BLOCK = 128  # inputs per scale of the int8 feed-forward down projection (1,536 inputs: 12 blocks)


def build_graph(
    weights: dict[str, np.ndarray],
    int8: bool = False,
    ranges: dict[str, np.ndarray] | None = None,
    probes: bool = False,
) -> bytes:
    """The serialised model: ids (B, S) int64 and mask (B, S) int64 in, unit vectors (B, 384) out.

    `int8`: the weight matmuls run on 8-bit integers (see `int8_matmuls`); otherwise float32 throughout.
    `ranges`: each int8 matmul's largest input magnitude per input channel (`input_ranges`), to smooth
    its input before the per-batch quantisation. `probes`: the inputs of the matmuls are outputs too,
    named PROBE + the matmul's name as in `ranges` (a float32 graph for `input_ranges`)."""
    initializers: list[bytes] = []
    nodes: list[bytes] = []
    probed: dict[str, str] = {}  # matmul name -> the tensor it multiplies

    def smoothed(x: str, weight: np.ndarray, name: str) -> tuple[str, np.ndarray]:
        """x / s and s * weight (same product) with s_j = sqrt(range_j / max |weight_j|), per input j.

        Why: a LayerNorm output has a few channels 10-15x larger than the rest (28 against a median of
        1.9 in layer 0), so one scale per batch leaves the other channels a handful of int8 levels;
        moving half of that range (in the log) into the weights, which are scaled per output column,
        raised the cosine to float32 from 0.9972 to 0.9989 at the same speed (SmoothQuant, Xiao et al.
        2022, https://arxiv.org/abs/2211.10438, with its migration strength 0.5)."""
        probed[name] = x
        if ranges is None or not int8:
            return x, weight
        factor = np.sqrt(ranges[name]) / np.sqrt(np.maximum(np.abs(weight).max(1), 1e-8))
        factor = np.where(factor > 0, factor, 1.0).astype(np.float32)
        scaled = node("Mul", [x, const(f"{name}_smooth", (1.0 / factor).astype(np.float32))], f"{name}_in")
        return scaled, weight * factor[:, None]

    def const(name: str, value: np.ndarray) -> str:
        initializers.append(onnx_proto.tensor(name, value))
        return name

    def node(
        op: str, inputs: list[str], output: str, domain: str = "", **attrs: float | int | list[int]
    ) -> str:
        nodes.append(onnx_proto.node(op, inputs, [output], output, domain, **attrs))
        return output

    def quantized(x: str, name: str) -> tuple[str, str, str]:
        """x as uint8 with its per-batch scale and zero point (one DynamicQuantizeLinear)."""
        outputs = [f"{name}_q", f"{name}_scale", f"{name}_zero"]
        nodes.append(onnx_proto.node("DynamicQuantizeLinear", [x], outputs, f"{name}_q"))
        return outputs[0], outputs[1], outputs[2]

    def matmul(x: str, weight: np.ndarray, name: str) -> str:
        """x @ weight, weight (K, N): float32, or int8 per output column with x quantised per batch."""
        x, weight = smoothed(x, weight, name)
        if not int8:
            return node("MatMul", [x, const(f"{name}_w", weight)], name)
        q, scale = _int8_columns(weight)
        return node("DynamicQuantizeMatMul", [x, const(f"{name}_w", q), const(f"{name}_s", scale)], name, MS)

    def matmul_blocks(x: str, weight: np.ndarray, name: str) -> str:
        """As `matmul`, int8 weights and activations scaled per block of DOWN_BLOCK inputs instead."""
        if not int8:
            return node("MatMul", [x, const(f"{name}_w", weight)], name)
        packed, scales = _uint8_blocks(weight, DOWN_BLOCK)
        k, n = weight.shape
        inputs = [x, const(f"{name}_w", packed), const(f"{name}_s", scales)]
        return node(
            "MatMulNBits", inputs, name, MS, K=k, N=n, bits=8, block_size=DOWN_BLOCK, accuracy_level=4
        )

    w = weights
    layers = sum(1 for k in w if k.endswith("attention.self.query.weight"))
    # embeddings: word + position (the first S rows) + token type 0, then LayerNorm
    words = node("Gather", [const("word_emb", w["embeddings.word_embeddings.weight"]), "ids"], "words")
    length = node("Shape", ["ids"], "length", start=1, end=2)
    zero = const("zero", np.array([0], dtype=np.int64))
    positions = node(
        "Slice", [const("pos_emb", w["embeddings.position_embeddings.weight"]), zero, length], "positions"
    )
    summed = node("Add", [words, positions], "emb_sum")
    summed = node("Add", [summed, const("type_emb", w["embeddings.token_type_embeddings.weight"][0])], "emb")
    ln_w, ln_b = (
        const("emb_ln_w", w["embeddings.LayerNorm.weight"]),
        const("emb_ln_b", w["embeddings.LayerNorm.bias"]),
    )
    x = node("LayerNormalization", [summed, ln_w, ln_b], "emb_ln", axis=-1, epsilon=LAYER_NORM_EPS)
    mask32 = node("Cast", ["mask"], "mask32", to=onnx_proto.INT32)
    for i in range(layers):
        p = f"encoder.layer.{i}."
        qkv_w = np.concatenate(
            [w[f"{p}attention.self.{n}.weight"].T for n in ("query", "key", "value")], axis=1
        )
        qkv_b = np.concatenate([w[f"{p}attention.self.{n}.bias"] for n in ("query", "key", "value")])
        if int8:
            x_in, qkv_w = smoothed(x, qkv_w, f"l{i}_qkv")
            xq, x_scale, x_zero = quantized(x_in, f"l{i}_x")
            qkv_q, qkv_s = _int8_columns(qkv_w)
            qkv = [xq, const(f"l{i}_qkv_w", qkv_q), const(f"l{i}_qkv_b", qkv_b), x_scale]
            qkv += [const(f"l{i}_qkv_s", qkv_s), mask32, x_zero]
            ctx = node("QAttention", qkv, f"l{i}_ctx", MS, num_heads=HEADS)
        else:
            smoothed(x, qkv_w, f"l{i}_qkv")  # records the probe
            qkv = [x, const(f"l{i}_qkv_w", qkv_w), const(f"l{i}_qkv_b", qkv_b), mask32]
            ctx = node("Attention", qkv, f"l{i}_ctx", MS, num_heads=HEADS)
        out = matmul(ctx, w[f"{p}attention.output.dense.weight"].T, f"l{i}_ao")
        x = _skip_layer_norm(node, const, out, x, w, f"{p}attention.output", f"l{i}_ln1")
        up = matmul(x, w[f"{p}intermediate.dense.weight"].T, f"l{i}_up")
        up_b = const(f"l{i}_up_b", w[f"{p}intermediate.dense.bias"])
        act = node("BiasGelu", [up, up_b], f"l{i}_gelu", MS)  # erf GELU, as BERT's
        down = matmul_blocks(act, w[f"{p}output.dense.weight"].T, f"l{i}_down")
        x = _skip_layer_norm(node, const, down, x, w, f"{p}output", f"l{i}_ln2")
    # mean pooling over the mask, then L2 normalisation (sentence-transformers' modules.json)
    maskf = node("Cast", ["mask"], "maskf", to=onnx_proto.FLOAT)
    weight = node("Unsqueeze", [maskf, const("axis2", np.array([2], dtype=np.int64))], "mask3")
    axis1 = const("axis1", np.array([1], dtype=np.int64))
    total = node("ReduceSum", [node("Mul", [x, weight], "masked"), axis1], "total", keepdims=0)
    count = node("ReduceSum", [weight, axis1], "count", keepdims=0)
    count = node("Max", [count, const("tiny", np.array([1e-9], dtype=np.float32))], "count_min")
    pooled = node("Div", [total, count], "pooled")
    norm = node("ReduceL2", [pooled], "norm", axes=[1], keepdims=1)
    norm = node("Max", [norm, const("eps", np.array([1e-12], dtype=np.float32))], "norm_min")
    node("Div", [pooled, norm], "vectors")
    tokens = ["batch", "tokens"]
    for name, x in probed.items() if probes else ():
        node("Identity", [x], PROBE + name)
    return onnx_proto.model(
        "minilm_pooled",
        nodes,
        initializers,
        [
            onnx_proto.value_info("ids", onnx_proto.INT64, tokens),
            onnx_proto.value_info("mask", onnx_proto.INT64, tokens),
        ],
        [
            onnx_proto.value_info("vectors", onnx_proto.FLOAT, ["batch", DIMENSION]),
            *(
                onnx_proto.value_info(PROBE + n, onnx_proto.FLOAT, [*tokens, "width"])
                for n in probed
                if probes
            ),
        ],
        {"": OPSET, MS: 1},
    )


def _symmetric_int8(values: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 (zero point 0) with one scale per slice along `axis`'s complement: the values'
    largest magnitude over `axis` maps to 127. Returns (q int8 of the values' shape, scale float32)."""
    scale = np.abs(values).max(axis) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(values / np.expand_dims(scale, axis)), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def _int8_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights, one scale per output column (zero point 0): (q (K, N) int8, scale (N,))."""
    return _symmetric_int8(weight, axis=0)


def _uint8_blocks(weight: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """MatMulNBits' 8-bit layout: per output column, blocks of `block` inputs, each with its own scale and
    the default zero point 128: (packed (N, K / block, block) uint8, scales (N * K / block,))."""
    k, n = weight.shape
    assert k % block == 0, (k, block)
    q, scale = _symmetric_int8(weight.T.reshape(n, k // block, block), axis=-1)
    return (q.astype(np.int16) + 128).astype(np.uint8), scale.reshape(-1)


def _skip_layer_norm(
    node: Callable[..., str],
    const: Callable[[str, np.ndarray], str],
    out: str,
    residual: str,
    w: dict[str, np.ndarray],
    prefix: str,
    name: str,
) -> str:
    """LayerNorm(out + dense bias + residual) in one fused operator."""
    inputs = [
        out,
        residual,
        const(f"{name}_w", w[f"{prefix}.LayerNorm.weight"]),
        const(f"{name}_b", w[f"{prefix}.LayerNorm.bias"]),
        const(f"{name}_dense_b", w[f"{prefix}.dense.bias"]),
    ]
    return node("SkipLayerNormalization", inputs, name, MS, epsilon=LAYER_NORM_EPS)


def int8_matmuls(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether the CPU has VNNI (AVX512-VNNI or AVX-VNNI), the 8-bit dot products that make the int8
    graph about twice as fast as float32. Without them int8 matmuls gained at most a tenth (README), and
    ONNX Runtime's documentation advises 7-bit weights there against overflow, so float32 is kept."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return False
    lines = (line for line in text.splitlines() if line.startswith("flags") and ":" in line)
    flags = next((line.split(":", 1)[1].split() for line in lines), [])
    return "avx512_vnni" in flags or "avx_vnni" in flags


def input_ranges(session: Any, tokenizer: Any, texts: Sequence[str] = CALIBRATION) -> dict[str, np.ndarray]:
    """Each probed matmul's largest input magnitude per input channel over `texts`, from a session of
    `build_graph(probes=True)`; one text per run, so no padding position counts."""
    names = [o.name for o in session.get_outputs() if o.name.startswith(PROBE)]
    ranges: dict[str, np.ndarray] = {}
    for encoding in tokenizer.encode_batch(list(texts)):
        ids = np.array([encoding.ids], dtype=np.int64)
        for name, value in zip(
            names, session.run(names, {"ids": ids, "mask": np.ones_like(ids)}), strict=True
        ):
            peak = np.abs(value).reshape(-1, value.shape[-1]).max(0)
            key = name.removeprefix(PROBE)
            ranges[key] = np.maximum(ranges[key], peak) if key in ranges else peak
    return ranges


def _session(graph: bytes) -> Any:
    """An ONNX Runtime session of `graph` on the CPU, one operator thread (see OnnxEncoder.encode)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    # one thread per run, and as many runs at once as there are cores (encode): the batches are
    # independent, so no operator waits for a slower thread. On the shared 2-core machine the same
    # passages took about 6 % less CPU than one run at a time on two operator threads (43k word
    # pieces, three interleaved pairs at load 2.5-3.6: 10.5 / 10.3 / 9.8 s against 10.7 / 11.0 /
    # 11.2 s), with the same vectors.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # idle worker threads sleep instead of spinning: on a shared 2-core machine spinning cost 10 %
    # (107 passages: 12.2 s spinning, 11.0 s not, 13.2 s sentence-transformers float32; load 2.8)
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


class OnnxEncoder:
    """Batched, length-sorted encoding of many texts with ONNX Runtime on all available cores."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: Any, int8: bool | None = None) -> None:
        """`int8`: quantised weight matmuls (None: where `int8_matmuls()` says they pay), their inputs
        smoothed by ranges measured on CALIBRATION with the float32 graph (about 0.5 s)."""
        self.int8 = int8_matmuls() if int8 is None else int8
        try:
            import onnxruntime  # noqa: F401  (only to say clearly that it is missing)
        except ImportError as exc:
            raise ModelUnavailable(f"onnxruntime is not installed: {exc}") from exc
        try:
            ranges = (
                input_ranges(_session(build_graph(weights, probes=True)), tokenizer) if self.int8 else None
            )
            self._session = _session(build_graph(weights, self.int8, ranges))
        except Exception as exc:  # onnxruntime raises its own types (e.g. an operator it lacks)
            raise ModelUnavailable(f"ONNX Runtime cannot run the encoder: {str(exc)[:160]}") from exc
        self._tokenizer = tokenizer
        self._workers = max(len(os.sched_getaffinity(0)), 1)
        # One pool for every call: batches of calls made together queue in order, so a build's next group
        # starts on a core the last batch of the group before leaves idle.
        self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="onnx-encode")

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, shape (len(texts), 384); each batch is padded only to its longest text, and
        one batch per core runs at a time (ONNX Runtime releases the GIL while it runs). Safe to call
        from several threads: their batches share the pool."""
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)

        def run(batch: tuple[list[int], np.ndarray, np.ndarray]) -> None:
            chunk, ids, mask = batch
            result[chunk] = self._session.run(None, {"ids": ids, "mask": mask})[0]

        batches = padded_batches(self._tokenizer.encode_batch(texts), BATCH, np.int64)
        if self._workers == 1:
            for batch in batches:
                run(batch)
            return result
        list(self._pool.map(run, batches))  # list(): re-raises a failed batch's error here
        return result
