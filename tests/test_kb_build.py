"""Index builds: incremental by unit, resumable, and robust to damage; nothing indexed is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kb_helpers import write_corpus, write_docs
from tpu_runtime.knowledge import build as build_module
from tpu_runtime.knowledge import embedder as embedder_module
from tpu_runtime.knowledge.api import answer, search, status
from tpu_runtime.knowledge.build import (
    OLD_EXPORT_FOLDER,
    PACKAGE_EMBED_TOKENS,
    BuildRequest,
    embed_text,
    embed_texts,
    run_kb_build,
)
from tpu_runtime.knowledge.corpus import ChunkRecord
from tpu_runtime.knowledge.embedder import MAX_TOKENS, ModelUnavailable, load_embedder
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.store import BuildLocked, KbIndexError, Store


@pytest.fixture
def corpus(tmp_path: Path) -> BuildRequest:
    return write_corpus(tmp_path)


def _index(request: BuildRequest) -> KnowledgeIndex:
    assert request.folder is not None
    return KnowledgeIndex.open(request.folder)


@pytest.mark.slow
def test_first_build_then_only_changed_units_are_redone(corpus: BuildRequest) -> None:
    steps: list[str] = []
    first = run_kb_build(corpus, lambda step, message, fraction: steps.append(step))
    assert sorted(first.indexed) == ["curated:chips.yaml", "curated:eager.md", "curated:pallas.md"]
    assert sorted(first.embedded) == sorted(first.indexed) and first.dense_ready
    assert "embed" in steps and steps[-1] == "done"

    again = run_kb_build(corpus)
    assert again.indexed == [] and again.embedded == [] and len(again.unchanged) == 3

    assert corpus.knowledge_folder is not None
    sheet = corpus.knowledge_folder / "pallas.md"
    sheet.write_text(
        sheet.read_text()
        + "\n## Grid\n\n- The grid runs sequentially on one core."
        + " ([source](https://example.org/grid), checked 2026-11-30)\n"
    )
    third = run_kb_build(corpus)
    assert third.indexed == ["curated:pallas.md"] and third.embedded == ["curated:pallas.md"]
    # the sheet's old passages keep their vectors (text-hash cache); only the edited one is encoded
    assert 0 < third.reused_vectors < third.chunks
    hits = _index(corpus).search("does the grid run sequentially", 3)
    assert hits.mode == "hybrid" and hits.passages[0].section == "Tiny Pallas sheet › Grid"

    (corpus.knowledge_folder / "eager.md").unlink()
    fourth = run_kb_build(corpus)
    assert fourth.removed == ["curated:eager.md"]
    assert all(p.path != "knowledge/eager.md" for p in _index(corpus).search("eager mode", 5).passages)


@pytest.mark.slow
def test_answer_quotes_verbatim_and_refuses_what_is_not_there(corpus: BuildRequest) -> None:
    run_kb_build(corpus)
    reply = answer("How do I pick the eager mode?", 3, folder=corpus.folder)
    assert reply.covered and reply.mode == "hybrid"
    quote = reply.citations[0].quote
    cited = next(p for p in reply.passages if p.chunk_id == reply.citations[0].chunk_id)
    assert quote in cited.text and "set_eager_mode" in quote
    assert reply.citations[0].url == "https://example.org/eager"
    refused = answer("What is the price of a Bitcoin mining rig?", 3, folder=corpus.folder)
    assert not refused.covered and refused.citations == []
    assert refused.closest and refused.closest.startswith("https://")
    exact = search("TORCH_DEVICE_BACKEND_AUTOLOAD", 1, folder=corpus.folder)
    assert exact[0].section == "Tiny TorchTPU sheet › Environment"


def test_lexical_answers_while_vectors_are_missing(corpus: BuildRequest) -> None:
    run_kb_build(corpus.model_copy(update={"dense": False}))
    reply = answer("PrefetchScalarGridSpec", 3, folder=corpus.folder)
    assert reply.mode == "lexical" and reply.covered
    assert any("lexical search only" in note for note in reply.notes)
    assert not status(corpus.folder).dense_ready


def test_missing_model_degrades_to_lexical_with_a_clear_note(
    corpus: BuildRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(cache_dir: Path | None = None) -> None:
        raise ModelUnavailable("model file missing: /x/model.safetensors; reinstall with pip install x")

    monkeypatch.setattr("tpu_runtime.knowledge.build.load_embedder", no_model)
    report = run_kb_build(corpus)
    assert not report.dense_ready and any("model file missing" in p for p in report.problems)
    assert report.chunks > 0
    reply = answer("block shapes divisible by 8 and 128", 3, folder=corpus.folder)
    assert reply.covered and reply.mode == "lexical"


def test_tampered_weights_are_refused(tmp_path: Path) -> None:
    real = embedder_module.locate_model()
    fake = tmp_path / "model.safetensors"
    fake.write_bytes(b"not the weights")
    files = embedder_module.ModelFiles(real.folder, fake, real.tokenizer, real.expected_sha256, "0")
    with pytest.raises(ModelUnavailable, match="does not match its recorded sha256"):
        embedder_module.verify_weights(files)


def test_corrupt_manifest_falls_back_to_the_previous_copy(corpus: BuildRequest, tmp_path: Path) -> None:
    docs = write_docs(
        tmp_path / "docs", {"guide.md": "# Guide\n\nThe widget knob sets the frobnication level.\n"}
    )
    run_kb_build(corpus.model_copy(update={"dense": False, "add_folders": [docs]}))
    run_kb_build(corpus.model_copy(update={"dense": False}))  # second write leaves manifest.prev.json
    store = Store(corpus.folder or tmp_path)
    store.manifest_path.write_text("{ not json")
    index = _index(corpus)
    assert any("unreadable" in p for p in index.problems)
    assert index.search("frobnication", 1).passages[0].path == "docs/guide.md"
    report = run_kb_build(corpus.model_copy(update={"dense": False}))
    assert json.loads(store.manifest_path.read_text())["folders"] == [str(docs.resolve())]
    assert any("unreadable" in p for p in report.problems)


def test_lost_manifests_are_recovered_from_chunk_files(corpus: BuildRequest, tmp_path: Path) -> None:
    docs = write_docs(tmp_path / "docs", {"a.md": "# A\n\nThe zorbulator reticulates splines.\n"})
    run_kb_build(corpus.model_copy(update={"dense": False, "add_folders": [docs]}))
    store = Store(corpus.folder or tmp_path)
    store.manifest_path.unlink()
    store.prev_manifest_path.unlink(missing_ok=True)
    assert _index(corpus).search("zorbulator", 1).passages[0].path == "docs/a.md"
    report = run_kb_build(corpus.model_copy(update={"dense": False}))
    assert any("recovered" in p for p in report.problems)
    assert str(docs.resolve()) in json.loads(store.manifest_path.read_text())["folders"]


def test_damaged_chunk_file_is_reported_and_rebuilt(corpus: BuildRequest) -> None:
    run_kb_build(corpus.model_copy(update={"dense": False}))
    store = Store(corpus.folder or Path())
    victim = next(store.chunks_dir.glob("curated_eager*"))
    victim.write_text(victim.read_text()[:40])
    index = _index(corpus)
    assert any("damaged" in p for p in index.problems)
    assert index.search("block shapes", 1).passages  # the other sheets still answer
    report = run_kb_build(corpus.model_copy(update={"dense": False}))
    assert "curated:eager.md" in report.indexed
    assert _index(corpus).search("eager mode", 1).passages[0].path == "knowledge/eager.md"


@pytest.mark.slow
def test_damaged_vector_store_is_set_aside_and_rebuilt(corpus: BuildRequest) -> None:
    run_kb_build(corpus)
    store = Store(corpus.folder or Path())
    (store.chroma_dir / "chroma.sqlite3").write_bytes(b"garbage" * 100)
    reply = answer("How do I pick the eager mode?", 3, folder=corpus.folder)
    assert reply.covered and reply.mode == "lexical"
    assert any("vector store" in note for note in reply.notes)
    report = run_kb_build(corpus)
    assert any("moved it to" in p for p in report.problems) and report.dense_ready
    assert list(store.folder.glob("chroma.broken-*"))
    assert answer("How do I pick the eager mode?", 3, folder=corpus.folder).mode == "hybrid"


def test_damaged_lexical_index_is_rebuilt_in_memory(corpus: BuildRequest) -> None:
    run_kb_build(corpus.model_copy(update={"dense": False}))
    store = Store(corpus.folder or Path())
    for path in store.lexical_dir.glob("*.index.*"):
        path.write_bytes(b"\x00garbage")
    index = _index(corpus)
    assert any("lexical index unreadable" in p for p in index.problems)
    assert (
        index.search("PrefetchScalarGridSpec", 1).passages[0].section == "Tiny Pallas sheet › Scalar prefetch"
    )


@pytest.mark.slow
def test_half_built_vectors_are_completed_by_the_next_build(corpus: BuildRequest) -> None:
    run_kb_build(corpus)
    store = Store(corpus.folder or Path())
    manifest = store.read_manifest()
    manifest.units["curated:pallas.md"].dense_done = False  # as if the build stopped mid-unit
    store.write_manifest(manifest)
    partial = _index(corpus).search("grid scalar prefetch", 3)
    assert any("vectors missing for 1 of 3" in note for note in partial.notes)
    report = run_kb_build(corpus)
    assert report.embedded == ["curated:pallas.md"] and report.dense_ready


def test_folders_skip_binary_and_oversized_files(corpus: BuildRequest, tmp_path: Path) -> None:
    docs = write_docs(
        tmp_path / "docs",
        {
            "good.md": "# Good\n\nThe quux parameter controls prefetch depth.\n",
            "image.md": b"\x89PNG\r\n\x1a\n\x00\x00binary",
            "latin1.txt": "caf\xe9".encode("latin-1"),
            "notes.rst": "Title\n=====\n\nPlain reST text about quux.\n",
            "skip.bin": b"\x00" * 10,
        },
    )
    big = docs / "huge.md"
    with big.open("wb") as handle:  # a 50 MB Markdown file
        handle.truncate(50 * 1024 * 1024)
    report = run_kb_build(corpus.model_copy(update={"dense": False, "add_folders": [docs]}))
    skipped = "\n".join(report.skipped)
    assert "image.md: binary file" in skipped and "latin1.txt: not UTF-8 text" in skipped
    assert "huge.md: 50.0 MB is over the 5 MB limit per file" in skipped
    hits = _index(corpus).search("quux prefetch depth", 3).passages
    assert hits[0].path == "docs/good.md" and hits[0].kind == "folder"


def test_binary_only_folder_and_bad_paths(corpus: BuildRequest, tmp_path: Path) -> None:
    binaries = write_docs(tmp_path / "bin", {"a.md": b"\x00\x01", "b.html": b"\xff\xfe\x00"})
    report = run_kb_build(corpus.model_copy(update={"dense": False, "add_folders": [binaries]}))
    assert len([s for s in report.skipped if "binary file" in s]) == 2
    with pytest.raises(KbIndexError, match="no such folder"):
        run_kb_build(corpus.model_copy(update={"add_folders": [tmp_path / "missing"]}))
    (tmp_path / "file.md").write_text("x")
    with pytest.raises(KbIndexError, match="not a folder"):
        run_kb_build(corpus.model_copy(update={"add_folders": [tmp_path / "file.md"]}))


def test_a_build_removes_the_old_encoder_export(corpus: BuildRequest) -> None:
    """The torch.onnx export (86 MiB) earlier builds left in the index folder is no longer read."""
    assert corpus.folder is not None
    stale = corpus.folder / OLD_EXPORT_FOLDER / "minilm-53aa51172d142c89-pooled-opset17.onnx"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"old export")
    report = run_kb_build(corpus.model_copy(update={"dense": False}))
    assert not stale.parent.exists() and report.chunks > 0


def test_a_second_build_is_refused_while_one_runs(corpus: BuildRequest) -> None:
    store = Store(corpus.folder or Path())
    with store.build_lock():
        assert store.build_running()
        with pytest.raises(BuildLocked, match="another knowledge-base build is running"):
            run_kb_build(corpus)
    assert not store.build_running()


@pytest.mark.slow
def test_rebuild_reuses_the_vectors_of_unchanged_passages(
    corpus: BuildRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run_kb_build(corpus)
    assert first.reused_vectors == 0 and first.dense_ready
    before = _index(corpus).search("does the grid run sequentially", 3)
    encoded: list[str] = []
    real = embedder_module.Embedder.embed_many

    def counting(self: embedder_module.Embedder, texts: list[str]) -> object:
        encoded.extend(texts)
        return real(self, texts)

    monkeypatch.setattr(embedder_module.Embedder, "embed_many", counting)
    again = run_kb_build(corpus.model_copy(update={"rebuild": True}))
    assert encoded == [] and again.reused_vectors == again.chunks == first.chunks and again.dense_ready
    after = _index(corpus).search("does the grid run sequentially", 3)
    assert [(p.path, p.section) for p in after.passages] == [(p.path, p.section) for p in before.passages]

    assert corpus.folder is not None
    (corpus.folder / "vector-cache.npz").write_bytes(b"not a zip file")
    third = run_kb_build(corpus.model_copy(update={"rebuild": True}))
    assert third.reused_vectors == 0 and len(encoded) == first.chunks and third.dense_ready


@pytest.mark.slow
def test_groups_in_flight_encode_each_text_once_and_store_every_vector(
    corpus: BuildRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With groups of one unit, a group is encoded while the one before is stored: no text is encoded
    for two groups, and every unit's vectors are stored, the last groups' too."""
    monkeypatch.setattr(build_module, "EMBED_GROUP", 1)
    calls: list[list[str]] = []
    real = embedder_module.Embedder.embed_many

    def counting(self: embedder_module.Embedder, texts: list[str]) -> object:
        calls.append(list(texts))
        return real(self, texts)

    monkeypatch.setattr(embedder_module.Embedder, "embed_many", counting)
    report = run_kb_build(corpus)
    assert report.dense_ready and not report.problems and len(calls) > 1
    seen = [set(texts) for texts in calls]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1 :])
    store = Store(corpus.folder or Path())
    assert store.open_collection(create=False).count() == report.chunks


def _record(kind: str, text: str) -> ChunkRecord:
    return ChunkRecord(id=f"{kind}-1", unit=kind, kind=kind, title="mod.fn", text=text, path="mod.py", line=1)


def test_package_passages_are_embedded_from_their_first_word_pieces_and_sheets_whole() -> None:
    tokenizer = load_embedder().tokenizer
    text = " ".join(f"block shape {i} must divide the array" for i in range(40))  # far past MAX_TOKENS
    package = embed_text(_record("package", text), tokenizer)
    assert _record("package", text).index_text().startswith(package)
    assert len(tokenizer.encode(package).ids) == PACKAGE_EMBED_TOKENS  # a word-piece boundary, not less
    assert embed_text(_record("curated", text), tokenizer) == _record("curated", text).index_text()
    assert len(tokenizer.encode(_record("curated", text).index_text()).ids) == MAX_TOKENS
    short = "grid steps run in order"
    assert embed_text(_record("package", short), tokenizer) == _record("package", short).index_text()


def test_passages_cut_in_one_batch_match_each_cut_alone() -> None:
    """The build cuts a group's package passages with one tokenizer call; each text must be the one
    its passage gets alone, whatever kinds and lengths sit around it."""
    tokenizer = load_embedder().tokenizer
    long = " ".join(f"block shape {i} must divide the array" for i in range(40))
    mixed = [
        _record("curated", long + " ([source](https://example.com/a), checked 2026-12-03)"),
        _record("package", long),
        _record("folder", "a note"),
        _record("package", "grid steps run in order"),
        _record("package", "Runs the kernel " + long),
    ]
    assert embed_texts(mixed, tokenizer) == [embed_text(r, tokenizer) for r in mixed]
    assert len({len(tokenizer.encode(t).ids) for t in embed_texts([mixed[1], mixed[4]], tokenizer)}) == 1
    assert embed_texts([], tokenizer) == []


def test_fact_sheet_vectors_leave_out_the_source_notes_the_citation_gives() -> None:
    """Both forms of a fact's source note are left out of its vector's text (a URL is many word pieces
    of little meaning), while BM25 and the cited passage keep them."""
    tokenizer = load_embedder().tokenizer
    text = (
        "- v5e chips have 16 GiB of HBM. ([source](https://cloud.google.com/tpu/docs/v5e), "
        "checked 2026-12-03)\n\nv4 hbm: value 32, unit GiB "
        "(source: https://cloud.google.com/tpu/docs/v4, checked 2026-11-30)"
    )
    record = _record("curated", text)
    stripped = "mod.fn\n- v5e chips have 16 GiB of HBM.\n\nv4 hbm: value 32, unit GiB"
    assert embed_text(record, tokenizer) == stripped
    assert "https://cloud.google.com/tpu/docs/v4" in record.index_text()
    folder = _record("folder", text)  # a user's own folder is embedded as written
    assert embed_text(folder, tokenizer) == folder.index_text()


def test_package_passage_vectors_leave_out_the_location_the_citation_gives() -> None:
    """A symbol's title ends with "[package version path]": its vector is computed without it (the
    citation still names them), so the window holds the symbol, its signature and its docstring."""
    tokenizer = load_embedder().tokenizer
    record = _record("package", "Runs.").model_copy(
        update={
            "title": "pltpu.f — f(x) [jax 0.10.2 jax/experimental/pallas/tpu.py]",
            "package": "jax",
            "version": "0.10.2",
            "path": "jax/experimental/pallas/tpu.py",
        }
    )
    expected = "pltpu.f — f(x)\nRuns."
    assert len(tokenizer.encode(expected).ids) < PACKAGE_EMBED_TOKENS  # whole, so only the location went
    assert embed_text(record, tokenizer) == expected
    assert "[jax 0.10.2" in record.index_text() and "0.10.2" in record.citation()  # BM25 and citing keep it


def test_vector_search_is_exact_and_the_same_in_every_process(corpus: BuildRequest) -> None:
    """`ask` ranks every stored vector by cosine (chromadb's approximate graph gave other neighbours for
    the same query in another process); equal cosines are ordered by passage position."""
    import numpy as np

    from tpu_runtime.knowledge.retrieve import CANDIDATES

    run_kb_build(corpus)
    index = _index(corpus)
    embedder = index._dense()
    assert embedder is not None, index.dense_status()
    query = embedder.embed(["which block dimensions must be divisible by 8 and 128"])[0]
    stored = Store(index.store.folder).open_collection(create=False).get(include=["embeddings"])
    cosine = {
        index.position[cid]: float(np.dot(vector, query))
        for cid, vector in zip(stored["ids"], stored["embeddings"], strict=True)
    }
    expected = sorted(cosine, key=lambda pos: (-cosine[pos], pos))[:CANDIDATES]
    found = index._nearest(query)
    assert [pos for pos, _ in found] == expected
    assert [round(cos, 5) for _, cos in found] == [round(cosine[pos], 5) for pos in expected]
    second = _index(corpus)  # a second opening of the index agrees
    assert second._dense() is not None and second._nearest(query) == found

    # identical vectors (the same page shipped twice) come back in passage order, whatever their row order
    index._vectors = np.tile(query, (4, 1))
    index._vector_positions = np.array([3, 0, 2, 1])
    assert [pos for pos, _ in index._nearest(query)] == [0, 1, 2, 3]
