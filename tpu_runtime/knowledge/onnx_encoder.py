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
passages). Per-tensor int8 (cosine 0.94) and int8 without VNNI (at most a tenth faster) were measured
and dropped earlier (README). A query is still encoded in float32 by the numpy path.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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
DOWN_BLOCK = 128  # inputs per scale of the int8 feed-forward down projection (1,536 inputs: 12 blocks)


def build_graph(weights: dict[str, np.ndarray], int8: bool = False) -> bytes:
    """The serialised model: ids (B, S) int64 and mask (B, S) int64 in, unit vectors (B, 384) out.

    `int8`: the weight matmuls run on 8-bit integers (see `int8_matmuls`); otherwise float32 throughout."""
    initializers: list[bytes] = []
    nodes: list[bytes] = []

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
            xq, x_scale, x_zero = quantized(x, f"l{i}_x")
            qkv_q, qkv_s = _int8_columns(qkv_w)
            qkv = [xq, const(f"l{i}_qkv_w", qkv_q), const(f"l{i}_qkv_b", qkv_b), x_scale]
            qkv += [const(f"l{i}_qkv_s", qkv_s), mask32, x_zero]
            ctx = node("QAttention", qkv, f"l{i}_ctx", MS, num_heads=HEADS)
        else:
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
    return onnx_proto.model(
        "minilm_pooled",
        nodes,
        initializers,
        [
            onnx_proto.value_info("ids", onnx_proto.INT64, tokens),
            onnx_proto.value_info("mask", onnx_proto.INT64, tokens),
        ],
        [onnx_proto.value_info("vectors", onnx_proto.FLOAT, ["batch", DIMENSION])],
        {"": OPSET, MS: 1},
    )


def _int8_columns(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 weights, one scale per output column (zero point 0): (q (K, N) int8, scale (N,))."""
    scale = np.abs(weight).max(0) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(weight / scale), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def _uint8_blocks(weight: np.ndarray, block: int) -> tuple[np.ndarray, np.ndarray]:
    """MatMulNBits' 8-bit layout: per output column, blocks of `block` inputs, each with its own scale and
    the default zero point 128: (packed (N, K / block, block) uint8, scales (N * K / block,))."""
    k, n = weight.shape
    assert k % block == 0, (k, block)
    blocks = weight.T.reshape(n, k // block, block)
    scale = np.abs(blocks).max(-1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(blocks / scale[..., None]), -127, 127).astype(np.int16) + 128
    return q.astype(np.uint8), scale.astype(np.float32).reshape(-1)


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


class OnnxEncoder:
    """Batched, length-sorted encoding of many texts with ONNX Runtime on all available cores."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: Any, int8: bool | None = None) -> None:
        """`int8`: quantised weight matmuls (None: where `int8_matmuls()` says they pay)."""
        self.int8 = int8_matmuls() if int8 is None else int8
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelUnavailable(f"onnxruntime is not installed: {exc}") from exc
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
        try:
            self._session = ort.InferenceSession(
                build_graph(weights, self.int8), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own types (e.g. an operator it lacks)
            raise ModelUnavailable(f"ONNX Runtime cannot run the encoder: {str(exc)[:160]}") from exc
        self._tokenizer = tokenizer
        self._workers = max(len(os.sched_getaffinity(0)), 1)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, shape (len(texts), 384); each batch is padded only to its longest text, and
        one batch per core runs at a time (ONNX Runtime releases the GIL while it runs)."""
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)

        def run(batch: tuple[list[int], np.ndarray, np.ndarray]) -> None:
            chunk, ids, mask = batch
            result[chunk] = self._session.run(None, {"ids": ids, "mask": mask})[0]

        batches = padded_batches(self._tokenizer.encode_batch(texts), BATCH, np.int64)
        if self._workers == 1:
            for batch in batches:
                run(batch)
            return result
        with ThreadPoolExecutor(self._workers) as pool:
            list(pool.map(run, batches))  # list(): re-raises a failed batch's error here
        return result
