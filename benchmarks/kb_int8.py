"""Knowledge base: the build's float32 ONNX encoder against int8 dynamic quantisations of it, one run.

Run by hand: `python benchmarks/kb_int8.py [--every 10] [--batch 32]`.

The build's own passages (what `kb build` embeds: fact sheets whole, package passages from their first
word pieces; every `--every`-th one) go through the float32 export the build uses and through
onnxruntime's `quantize_dynamic` of it (int8 weights, activations quantised per batch). Every batch is run
by each model in turn on one intra-op thread and its thread CPU time summed per model, so the ratios
hold on a shared, loaded machine (the load average is printed beside them); the cosine of each model's
vectors to float32's tells what the quantisation costs in accuracy. Only the weight matmuls are
quantised (the attention's activation-by-activation matmuls stay float32). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

for key, value in {
    "TPU_SKIP_MDS_QUERY": "1",
    "JAX_PLATFORMS": "cpu",
    "TORCH_DEVICE_BACKEND_AUTOLOAD": "0",
    "HF_HUB_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
}.items():
    os.environ.setdefault(key, value)

import numpy as np  # noqa: E402

from tpu_runtime.knowledge.build import BuildRequest, discover_all, embed_text  # noqa: E402
from tpu_runtime.knowledge.embedder import DIMENSION, load_embedder  # noqa: E402
from tpu_runtime.knowledge.model_files import padded_batches  # noqa: E402
from tpu_runtime.knowledge.onnx_encoder import BATCH, build_graph  # noqa: E402
from tpu_runtime.knowledge.store import Manifest  # noqa: E402

# name -> quantize_dynamic options (weight_type by name, resolved after onnxruntime is imported)
VARIANTS: dict[str, dict[str, Any]] = {
    "int8 s8 per-tensor (the earlier measurement)": {"weight_type": "QInt8"},
    "int8 s8 per-channel": {"weight_type": "QInt8", "per_channel": True},
    "int8 s8 per-channel, reduce_range (7-bit, for CPUs without VNNI)": {
        "weight_type": "QInt8",
        "per_channel": True,
        "reduce_range": True,
    },
    "int8 u8 per-channel": {"weight_type": "QUInt8", "per_channel": True},
}


def _session(path: Path) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # the caller's thread runs every operator: thread_time is exact
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _weight_matmuls(path: Path) -> list[str]:
    import onnx

    graph = onnx.load(str(path)).graph
    weights = {t.name for t in graph.initializer}
    return [n.name for n in graph.node if n.op_type == "MatMul" and n.input[1] in weights]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=10, help="embed every N-th passage of the corpus")
    parser.add_argument("--batch", type=int, default=BATCH)
    args = parser.parse_args()
    from onnxruntime.quantization import QuantType, quantize_dynamic

    embedder = load_embedder()
    specs, _ = discover_all(BuildRequest(), Manifest())
    chunks = [c for s in specs if s.load is not None for c in s.load().chunks][:: args.every]
    texts = [embed_text(c, embedder.tokenizer) for c in chunks]
    encodings = embedder.tokenizer.encode_batch(texts)
    pieces = sum(len(e.ids) for e in encodings)
    load_before = os.getloadavg()
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        reference = folder / "float32.onnx"
        reference.write_bytes(build_graph(embedder.weights))
        paths = {"float32 (the build's encoder)": reference}
        nodes = _weight_matmuls(reference)
        for name, options in VARIANTS.items():
            target = folder / f"{len(paths)}.onnx"
            started = time.perf_counter()
            kwargs = {**options, "weight_type": getattr(QuantType, options["weight_type"])}
            quantize_dynamic(str(reference), str(target), nodes_to_quantize=nodes, **kwargs)
            rows.append((f"quantising: {name}", f"{time.perf_counter() - started:.1f} s"))
            paths[name] = target
        sessions = {name: _session(path) for name, path in paths.items()}
        vectors = {name: np.zeros((len(texts), DIMENSION), dtype=np.float32) for name in paths}
        cpu = dict.fromkeys(paths, 0.0)
        for rows_, ids, mask in padded_batches(encodings, args.batch, np.int64):
            for name, session in sessions.items():
                started = time.thread_time()
                vectors[name][rows_] = session.run(None, {"ids": ids, "mask": mask})[0]
                cpu[name] += time.thread_time() - started
    base = next(iter(paths))
    for name in paths:
        cosine = (vectors[name] * vectors[base]).sum(1)
        rows.append(
            (
                name,
                f"{cpu[name]:.1f} s of CPU, {pieces / cpu[name]:.0f} word pieces per CPU-second, "
                f"{cpu[name] / cpu[base]:.3f}x float32; cosine to float32 mean {cosine.mean():.4f}, "
                f"min {cosine.min():.4f}",
            )
        )
    load = " / ".join(f"{x:.1f}" for x in load_before)
    print(f"| {len(texts)} passages, {pieces} word pieces (load average {load} before) | measured |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
