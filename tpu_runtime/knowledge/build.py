"""`tpu-agent kb build` / `kb add`: bring the index up to date with the corpus, one unit at a time.

Order matters for robustness: every changed unit is chunked and written, then the lexical (BM25) index
is rebuilt, and only then are vectors computed, unit by unit, each unit marked complete in the manifest
as soon as its vectors are stored. So `ask` can answer lexically while this runs, a build stopped at
any point resumes where it was, and a unit whose package did not change is never embedded again.
"""

from __future__ import annotations

import re
import shutil
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from tpu_runtime.knowledge.corpus import ChunkRecord, UnitSpec
from tpu_runtime.knowledge.curated import discover_curated
from tpu_runtime.knowledge.embedder import ModelUnavailable, load_embedder
from tpu_runtime.knowledge.folders import FolderError, discover_folder
from tpu_runtime.knowledge.models import BuildReport, SourceState
from tpu_runtime.knowledge.packages import discover_packages, load_package_configs
from tpu_runtime.knowledge.store import KbIndexError, Manifest, Store, index_dir
from tpu_runtime.knowledge.vector_cache import VectorCache, text_key
from tpu_runtime.progress import ProgressFn

if TYPE_CHECKING:
    import numpy as np

# Units are encoded in groups of at least this many passages: one sentence-transformers call sorts the
# whole group by length (little padding), and a build stopped mid-way loses at most one group's work.
EMBED_GROUP = 512
STORE_BATCH = 1000  # vectors per chromadb add (its limit is about 5,000)
# Installed packages' docs are embedded from their first this many word pieces, their title without the
# "[package version path]" location that ends it (the citation still names it), fact sheets whole (up to
# MAX_TOKENS) but without their source notes, added folders whole; BM25 still indexes every passage whole.
# Why: the encoder's time is linear in word pieces and was 95 % of a from-scratch build, package passages
# were 60 % of its word pieces but the cited source of 3 of the 122 answered dev questions, and a symbol's
# title (dotted path, signature, location) is about 65 word pieces. Dev half (benchmarks/kb_eval.py
# --half dev; answered / refused / recall@5 / MRR): whole titles at 64 pieces 0.898 / 1.000 / 0.993 /
# 0.936; at 32 0.898 / 1.000 / 0.985 / 0.934; without the location at 32 0.898 / 1.000 / 0.993 / 0.938,
# half the package word pieces (86k -> 43k). With the larger eval set and the source notes stripped
# (below): at 32 0.912 / 1.000 / 0.985 / 0.942, at 16 (adopted) 0.912 / 1.000 / 0.978 / 0.937 (0.934 on a
# fresh index), another 21.6k word pieces fewer (43.2k -> 21.6k).
PACKAGE_EMBED_TOKENS = 16
# A fact sheet's "([source](URL), checked DATE)" and "(source: URL, checked DATE)" notes: a URL is 20-40
# word pieces of little meaning to the encoder, and the cited passage still shows it. Stripping them cut
# the fact sheets' word pieces from 100.6k to 73.4k; dev answered and refused unchanged (0.912 / 1.000),
# recall@5 0.993 -> 0.985, MRR 0.938 -> 0.942 (package passages at 32 in both).
SOURCE_NOTE = re.compile(r"\s*\(\[source\]\([^)]*\)[^)]*\)|\s*\(source: [^)]*\)")
# Bump when embed_text changes what a passage's vector is computed from: the manifest records it, so an
# index built by the old rule re-embeds instead of mixing vectors of two rules.
EMBED_RULE = 3
# Where the previous encoder kept its torch.onnx export (86 MiB) in the index folder; the graph is now
# built in memory (onnx_encoder), so a build removes the stale file.
OLD_EXPORT_FOLDER = "onnx"


class BuildRequest(BaseModel):
    """What to build. The defaults build the shipped corpus under the user's data folder."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    folder: Path | None = None  # the index folder (default: index_dir())
    rebuild: bool = False  # drop everything except the list of added folders, then build
    dense: bool = True  # compute vectors (False: lexical index only)
    add_folders: list[Path] = []
    remove_folders: list[Path] = []
    knowledge_folder: Path | None = None  # fact sheets (default: the shipped knowledge/)
    packages_file: Path | None = None  # package list (default: knowledge/indexed_packages.yaml)


def discover_all(request: BuildRequest, manifest: Manifest) -> tuple[list[UnitSpec], list[str]]:
    """Every unit the corpus has now, and notes about what could not be found."""
    specs = discover_curated(request.knowledge_folder)
    configs = load_package_configs(request.packages_file)
    package_specs, notes = discover_packages(configs)
    specs.extend(package_specs)
    for folder in manifest.folders:
        try:
            specs.append(discover_folder(Path(folder)))
        except FolderError as exc:
            notes.append(f"{exc}; its passages already indexed are kept")
    return specs, notes


def run_kb_build(request: BuildRequest, progress: ProgressFn | None = None) -> BuildReport:
    """Raises KbIndexError (one line) when another build holds the lock or a folder cannot be added."""
    notify = progress or (lambda step, message, fraction: None)
    store = Store(request.folder or index_dir())
    started = time.perf_counter()
    report = BuildReport(index_dir=str(store.folder))
    with store.build_lock():
        manifest = store.read_manifest()
        report.problems.extend(store.problems)
        if request.rebuild:
            manifest = Manifest(folders=manifest.folders)
            store.quarantine_chroma()
        for folder in request.add_folders:
            try:
                spec = discover_folder(folder)
            except FolderError as exc:
                raise KbIndexError(str(exc)) from None
            if spec.location not in manifest.folders:
                manifest.folders.append(spec.location)
        for folder in request.remove_folders:
            manifest.folders = [f for f in manifest.folders if Path(f) != folder.resolve()]
        shutil.rmtree(store.folder / OLD_EXPORT_FOLDER, ignore_errors=True)
        notify("scan", "finding sources", 0.0)
        specs, notes = discover_all(request, manifest)
        report.problems.extend(notes)
        _index_units(store, manifest, specs, report, notify)
        t0 = time.perf_counter()
        _write_lexical(store, manifest, report)
        report.timings_s["lexical"] = round(time.perf_counter() - t0, 3)
        if request.dense:
            t0 = time.perf_counter()
            _embed_units(store, manifest, report, notify)
            report.timings_s["embed"] = round(time.perf_counter() - t0, 3)
        report.chunks = sum(s.chunks for s in manifest.units.values())
        report.dense_ready = bool(manifest.units) and all(s.dense_done for s in manifest.units.values())
    report.seconds = round(time.perf_counter() - started, 3)
    notify("done", "index up to date", 1.0)
    return report


def _index_units(
    store: Store, manifest: Manifest, specs: list[UnitSpec], report: BuildReport, notify: ProgressFn
) -> None:
    t0 = time.perf_counter()
    current = {spec.unit for spec in specs}
    for unit in list(manifest.units):
        state = manifest.units[unit]
        if unit not in current and not (state.kind == "folder" and state.location in manifest.folders):
            store.remove_chunks(unit)
            _drop_vectors(store, unit, report)
            del manifest.units[unit]
            report.removed.append(unit)
    for number, spec in enumerate(specs):
        known = manifest.units.get(spec.unit)
        readable = known is not None and _chunks_readable(store, spec.unit, known)
        if known is not None and readable and known.content_hash == spec.content_hash:
            report.unchanged.append(spec.unit)
            continue
        notify("chunk", f"reading {spec.label}", 0.05 * number / max(len(specs), 1))
        assert spec.load is not None
        loaded = spec.load()
        store.write_chunks(spec.unit, loaded.chunks)
        manifest.units[spec.unit] = SourceState(
            unit=spec.unit,
            kind=spec.kind,
            label=spec.label,
            version=spec.version,
            content_hash=spec.content_hash,
            chunks=len(loaded.chunks),
            dense_done=False,
            location=spec.location,
            skipped=loaded.skipped,
        )
        report.skipped.extend(loaded.skipped)
        report.indexed.append(spec.unit)
        store.write_manifest(manifest)
    store.write_manifest(manifest)
    report.timings_s["chunk"] = round(time.perf_counter() - t0, 3)


def _chunks_readable(store: Store, unit: str, state: SourceState) -> bool:
    try:
        return len(store.read_chunks(unit)) == state.chunks
    except KbIndexError as exc:
        store.problems.append(str(exc))
        return False


def all_chunks(store: Store, manifest: Manifest, problems: list[str]) -> list[ChunkRecord]:
    chunks: list[ChunkRecord] = []
    for unit in manifest.units:
        try:
            chunks.extend(store.read_chunks(unit))
        except KbIndexError as exc:
            problems.append(f"{exc}; `tpu-agent kb build` re-reads the source")
    return chunks


def _readable_chunks(store: Store, unit: str) -> list[ChunkRecord]:
    try:
        return store.read_chunks(unit)
    except KbIndexError:
        return []  # all_chunks reports it; its cached vectors are dropped as before


def embed_text(chunk: ChunkRecord, tokenizer: Any) -> str:
    """The text a passage's vector is computed from: for a package passage, its title without the
    trailing "[package version path]" and its text, cut to the first PACKAGE_EMBED_TOKENS word pieces
    (counting [CLS] and [SEP]) at a word-piece boundary; a fact sheet's passage without its source
    notes; any other passage whole."""
    return embed_texts([chunk], tokenizer)[0]


def embed_texts(chunks: list[ChunkRecord], tokenizer: Any) -> list[str]:
    """`embed_text` of each passage, the package passages tokenized in one batch call (the
    tokenizer spreads it over its threads)."""
    texts: list[str] = []
    cut: list[int] = []  # positions of package passages, whose text is cut to PACKAGE_EMBED_TOKENS
    for chunk in chunks:
        if chunk.kind == "curated":
            texts.append(SOURCE_NOTE.sub("", chunk.index_text()))
        elif chunk.kind != "package":
            texts.append(chunk.index_text())
        else:
            title = chunk.title.removesuffix(f" [{chunk.package} {chunk.version} {chunk.path}]")
            texts.append(f"{title}\n{chunk.text}")
            cut.append(len(texts) - 1)
    encodings = tokenizer.encode_batch([texts[i] for i in cut]) if cut else []
    for i, encoding in zip(cut, encodings, strict=True):
        if len(encoding.ids) > PACKAGE_EMBED_TOKENS:  # keep up to the last piece before [SEP]
            texts[i] = texts[i][: encoding.offsets[PACKAGE_EMBED_TOKENS - 2][1]]
    return texts


def _write_lexical(store: Store, manifest: Manifest, report: BuildReport) -> None:
    chunks = all_chunks(store, manifest, report.problems)
    ids = [c.id for c in chunks]
    if store.read_lexical_order() == ids and not report.indexed and not report.removed:
        return
    store.write_lexical(ids, [c.index_text() for c in chunks])


def _drop_vectors(store: Store, unit: str, report: BuildReport) -> None:
    if not store.chroma_dir.exists():
        return
    try:
        store.open_collection(create=True).delete(where={"unit": unit})
    except Exception as exc:  # chromadb raises many types; a failed delete is repaired on the next build
        report.problems.append(f"could not drop old vectors of {unit}: {type(exc).__name__}")


def _open_or_repair(store: Store, manifest: Manifest, report: BuildReport) -> Any:
    try:
        return store.open_collection(create=True)
    except Exception as exc:  # a damaged sqlite file or HNSW segment: chromadb's error types vary
        moved = store.quarantine_chroma()
        report.problems.append(
            f"vector store was unreadable ({type(exc).__name__}: {str(exc)[:120]}); moved it to {moved} "
            "and re-embedding; lexical passages were kept"
        )
        for state in manifest.units.values():
            state.dense_done = False
        return store.open_collection(create=True)


@dataclass
class _Encoding:
    """A group of units whose new passages are being encoded: `fresh` are the keys it encodes."""

    group: list[tuple[SourceState, list[ChunkRecord]]]
    keys: list[str]
    fresh: list[str]
    vectors: Future[np.ndarray] | None  # None: every text of the group is cached or in flight


def _store_group(
    encoding: _Encoding,
    cache: VectorCache,
    in_flight: set[str],
    collection: Any,
    store: Store,
    manifest: Manifest,
    report: BuildReport,
) -> int | None:
    """Store one encoded group's vectors unit by unit; the passages stored, or None when it failed."""
    try:
        if encoding.vectors is not None:
            cache.put(encoding.fresh, encoding.vectors.result())
        in_flight.difference_update(encoding.fresh)
        vectors = cache.stack(encoding.keys)
        offset = 0
        for state, chunks in encoding.group:
            collection.delete(where={"unit": state.unit})
            for start in range(0, len(chunks), STORE_BATCH):
                batch = chunks[start : start + STORE_BATCH]
                collection.add(
                    ids=[c.id for c in batch],
                    embeddings=vectors[offset + start : offset + start + len(batch)],
                    metadatas=[{"unit": state.unit} for _ in batch],
                )
            offset += len(chunks)
            state.dense_done = True
            store.write_manifest(manifest)
            report.embedded.append(state.unit)
        cache.save()
    except Exception as exc:  # chromadb/disk/model failure: keep what is done, the next build resumes
        report.problems.append(
            f"could not store vectors of {', '.join(s.label for s, _ in encoding.group)} "
            f"({type(exc).__name__}: {str(exc)[:120]}); their passages answer lexically until "
            "`tpu-agent kb build` succeeds"
        )
        return None
    return len(encoding.keys)


def _embed_units(store: Store, manifest: Manifest, report: BuildReport, notify: ProgressFn) -> None:
    try:
        embedder = load_embedder(store.folder)
    except ModelUnavailable as exc:
        report.problems.append(f"{exc}; vectors not built, answers use lexical search")
        return
    described = {**embedder.describe(), "package_tokens": PACKAGE_EMBED_TOKENS, "embed_rule": EMBED_RULE}
    if manifest.model is not None and any(
        manifest.model.get(key) != described[key]
        for key in ("sha256", "max_tokens", "package_tokens", "embed_rule")
    ):
        store.quarantine_chroma()
        for state in manifest.units.values():
            state.dense_done = False
    manifest.model = described
    collection: Any = _open_or_repair(store, manifest, report)
    for state in manifest.units.values():  # a unit marked done whose vectors are not all there is redone
        if (
            state.dense_done
            and len(collection.get(where={"unit": state.unit}, include=[])["ids"]) != state.chunks
        ):
            state.dense_done = False
    todo = [s for s in manifest.units.values() if not s.dense_done]
    cache = VectorCache(store.folder, f"{described['sha256']}:{described['max_tokens']}")
    total = sum(s.chunks for s in todo) or 1
    seen: dict[str, list[str]] = {}  # embed texts by unit, for pruning the cache without re-reading
    done = 0
    group: list[tuple[SourceState, list[ChunkRecord]]] = []
    in_flight: set[str] = set()  # keys of texts an earlier, unstored group is encoding
    pending: deque[_Encoding] = deque()
    # Two groups at a time: while one is stored (chromadb, manifest, cache file), the next is encoded,
    # and its first batches take the core the last batch of the group before leaves idle. Batches are
    # the same as one group at a time (a group's texts are those not cached and not in flight), so are
    # the vectors.

    def store_oldest() -> bool:
        nonlocal done
        stored = _store_group(pending.popleft(), cache, in_flight, collection, store, manifest, report)
        if stored is None:
            return False
        done += stored
        notify("embed", f"embedded {done}/{total} passages", 0.1 + 0.9 * done / total)
        return True

    with ThreadPoolExecutor(2, thread_name_prefix="kb-embed") as driver:
        for number, state in enumerate(todo):
            try:
                group.append((state, store.read_chunks(state.unit)))
            except KbIndexError as exc:
                report.problems.append(f"{exc}; its passages answer lexically until `tpu-agent kb build`")
            if sum(len(c) for _, c in group) < EMBED_GROUP and number + 1 < len(todo):
                continue
            texts = embed_texts([c for _, chunks in group for c in chunks], embedder.tokenizer)
            offset = 0
            for state_, chunks in group:
                seen[state_.unit] = texts[offset : offset + len(chunks)]
                offset += len(chunks)
            keys = [text_key(t) for t in texts]
            missing = cache.missing(keys, in_flight)
            fresh = [keys[i] for i in missing]
            in_flight.update(fresh)
            cache.hits += len(texts) - len(missing)
            share = 0.1 + 0.9 * done / total
            notify("embed", f"embedding {len(texts)} passages ({done}/{total} done)", share)
            before = pending[-1].vectors if pending else None
            if before is not None and not embedder.bulk_open:
                wait([before])  # the encoder this group gets is decided by the one before
            vectors = driver.submit(embedder.embed_many, [texts[i] for i in missing]) if missing else None
            pending.append(_Encoding(group, keys, fresh, vectors))
            group = []
            if len(pending) == 2 and not store_oldest():
                break
        else:
            while pending and store_oldest():
                pass
        for left in pending:  # after a failure: the next build resumes from the manifest
            if left.vectors is not None:
                left.vectors.cancel()
    store.write_manifest(manifest)
    report.reused_vectors = cache.hits
    if todo:
        kept = [text for unit in manifest.units if unit in seen for text in seen[unit]]
        others = [c for unit in manifest.units if unit not in seen for c in _readable_chunks(store, unit)]
        cache.keep_only([*kept, *embed_texts(others, embedder.tokenizer)])
        try:
            cache.save()
        except OSError as exc:
            report.problems.append(f"could not save the vector cache ({exc}); the next rebuild embeds again")
