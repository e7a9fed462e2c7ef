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
vector the numpy query path and sentence-transformers produce (a test checks the cosine). Float32
throughout: dynamic int8 quantisation was measured and rejected (no faster without VNNI, cosine only
0.95 to float32).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from tpu_runtime.knowledge import onnx_proto
from tpu_runtime.knowledge.model_files import DIMENSION, ModelUnavailable, padded_batches

BATCH = 32
OPSET = 17
HEADS = 12
LAYER_NORM_EPS = 1e-12  # BERT's


def build_graph(weights: dict[str, np.ndarray]) -> bytes:
    """The serialised model: ids (B, S) int64 and mask (B, S) int64 in, unit vectors (B, 384) out."""
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
        qkv = [x, const(f"l{i}_qkv_w", qkv_w), const(f"l{i}_qkv_b", qkv_b), mask32]
        ctx = node("Attention", qkv, f"l{i}_ctx", "com.microsoft", num_heads=HEADS)
        out = node("MatMul", [ctx, const(f"l{i}_ao_w", w[f"{p}attention.output.dense.weight"].T)], f"l{i}_ao")
        x = _skip_layer_norm(node, const, out, x, w, f"{p}attention.output", f"l{i}_ln1")
        up = node("MatMul", [x, const(f"l{i}_up_w", w[f"{p}intermediate.dense.weight"].T)], f"l{i}_up")
        up_b = const(f"l{i}_up_b", w[f"{p}intermediate.dense.bias"])
        act = node("BiasGelu", [up, up_b], f"l{i}_gelu", "com.microsoft")  # erf GELU, as BERT's
        down = node("MatMul", [act, const(f"l{i}_down_w", w[f"{p}output.dense.weight"].T)], f"l{i}_down")
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
        {"": OPSET, "com.microsoft": 1},
    )


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
    return node("SkipLayerNormalization", inputs, name, "com.microsoft", epsilon=LAYER_NORM_EPS)


class OnnxEncoder:
    """Batched, length-sorted encoding of many texts with ONNX Runtime on all available cores."""

    def __init__(self, weights: dict[str, np.ndarray], tokenizer: Any) -> None:
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
                build_graph(weights), options, providers=["CPUExecutionProvider"]
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
