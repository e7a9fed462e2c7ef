"""The index build's bulk encoder: the shipped MiniLM exported once to ONNX and run by ONNX Runtime.

Why: on CPUs without bf16 instructions (AVX2-only AMD EPYC, like CI's) sentence-transformers runs
float32 and costs 20+ s of imports and model loading before the first passage; ONNX Runtime (already
installed as a chromadb dependency) opens the exported model in about 0.5 s and embeds the same
passages in 0.8-1.0x the CPU time (benchmarks/kb.py prints the ratio; float32 either way, so the
per-passage cost stays about 0.1 s of CPU on such a CPU). The export itself needs torch,
transformers and the `onnx` package and takes ~10-20 s, so it runs once and is kept in the index folder
under the weights' sha256: a changed or re-installed model gets a new file, never a stale one.

The graph includes mean pooling over the attention mask and L2 normalisation, so its output is the
same vector sentence-transformers and the numpy query path produce (cosine 0.99999 measured). Dynamic
int8 quantisation (onnxruntime's quantize_dynamic of the weight matmuls) was measured and rejected
(benchmarks/kb_int8.py): without VNNI, ONNX Runtime's int8 matmuls took 0.90-1.09x float32's CPU in two
runs, and quantising per channel (which keeps cosine 0.993 to float32; per tensor only 0.95) took 36-68 s,
more than a from-scratch build could save.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from tpu_runtime.knowledge.model_files import DIMENSION, ModelFiles, ModelUnavailable, padded_batches

BATCH = 32
OPSET = 17
EXPORT_FOLDER = "onnx"


def model_path(cache_dir: Path, weights_sha256: str) -> Path:
    """Where the exported model for these weights lives (pooling and normalisation included)."""
    return cache_dir / EXPORT_FOLDER / f"minilm-{weights_sha256[:16]}-pooled-opset{OPSET}.onnx"


def export_model(files: ModelFiles, target: Path) -> None:
    """Trace the model with pooling and write it to `target` atomically (a stopped export leaves nothing)."""
    try:
        import onnx  # noqa: F401  (torch's exporter needs it; fail with our message, not its)
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise ModelUnavailable(f"cannot export the model to ONNX: {exc}") from exc

    class Pooled(torch.nn.Module):
        def __init__(self, model: Any) -> None:
            super().__init__()
            self.model = model

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            hidden = self.model(input_ids=ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, dim=1)

    model = AutoModel.from_pretrained(str(files.folder), local_files_only=True).eval()
    sample = torch.ones(2, 16, dtype=torch.long)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, scratch = tempfile.mkstemp(suffix=".onnx", dir=target.parent)
    os.close(handle)
    try:
        with torch.inference_mode():
            torch.onnx.export(
                Pooled(model),
                (sample, sample),
                scratch,
                input_names=["ids", "mask"],
                output_names=["vectors"],
                dynamic_axes={"ids": {0: "batch", 1: "tokens"}, "mask": {0: "batch", 1: "tokens"}},
                opset_version=OPSET,
                dynamo=False,  # the TorchScript exporter needs no onnxscript and runs offline
            )
        os.replace(scratch, target)
    except Exception as exc:  # torch's exporter raises many types; the caller falls back
        Path(scratch).unlink(missing_ok=True)
        raise ModelUnavailable(f"ONNX export failed ({type(exc).__name__}: {str(exc)[:120]})") from exc


class OnnxEncoder:
    """Batched, length-sorted encoding of many texts with ONNX Runtime on all available cores."""

    def __init__(self, files: ModelFiles, weights_sha256: str, cache_dir: Path, tokenizer: Any) -> None:
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise ModelUnavailable(f"onnxruntime is not installed: {exc}") from exc
        path = model_path(cache_dir, weights_sha256)
        if not path.is_file():
            export_model(files, path)
        options = ort.SessionOptions()
        options.intra_op_num_threads = max(len(os.sched_getaffinity(0)), 1)
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle worker threads sleep instead of spinning: on a shared 2-core machine spinning cost 10 %
        # (107 passages: 12.2 s spinning, 11.0 s not, 13.2 s sentence-transformers float32; load 2.8)
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a truncated or damaged export: drop it so the next build re-exports
            path.unlink(missing_ok=True)
            raise ModelUnavailable(f"cannot open {path}: {str(exc)[:120]}") from exc
        self._tokenizer = tokenizer
        self.path = path

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors, shape (len(texts), 384); each batch is padded only to its longest text."""
        result = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        for chunk, ids, mask in padded_batches(self._tokenizer.encode_batch(texts), BATCH, np.int64):
            result[chunk] = self._session.run(None, {"ids": ids, "mask": mask})[0]
        return result
