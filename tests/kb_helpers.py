"""Small corpora for the knowledge-base tests: a few fact sheets and an empty package list."""

# ruff: noqa: E501  (fact-sheet lines are long by design: one fact per line, with its source)

from __future__ import annotations

import textwrap
from pathlib import Path

from tpu_runtime.knowledge.answer import compose
from tpu_runtime.knowledge.answer_gate import Span
from tpu_runtime.knowledge.build import BuildRequest, run_kb_build
from tpu_runtime.knowledge.models import Answer, Passage
from tpu_runtime.knowledge.quote_choice import SUPPORT_PASSAGES
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET_EAGER = """\
# Tiny TorchTPU sheet

## Eager modes

- Pick a mode with `torch.tpu.set_eager_mode(torch.tpu.EagerMode.DEFER_AND_FUSE)` around a block of code. ([source](https://example.org/eager), checked 2026-11-30)
- The fused mode merges operations on the fly and runs faster than strict eager. ([source](https://example.org/blog), checked 2026-11-30)

## Environment

- Set `TORCH_DEVICE_BACKEND_AUTOLOAD=0` to keep the backend from loading when torch is imported. ([source](https://example.org/env), checked 2026-11-30)
"""

SHEET_PALLAS = """\
# Tiny Pallas sheet

## Block shapes

- The last two block dimensions must be divisible by 8 and 128 or equal the full array dimensions. ([source](https://example.org/pallas), checked 2026-11-30)

## Scalar prefetch

- `PrefetchScalarGridSpec(num_scalar_prefetch=1)` puts the first operand in SMEM and passes it to every index map. ([source](https://example.org/sparse), checked 2026-11-30)
"""

CHIPS_YAML = """\
generations:
  v6e:
    display_name: TPU v6e
    aliases: [trillium]
    hbm:
      gib: 32
      source: https://example.org/v6e
      checked: 2026-11-30
      alternatives:
        - {value: 31.25, unit: GiB, source: https://example.org/other, checked: 2026-11-30}
"""


def write_corpus(root: Path) -> BuildRequest:
    """A knowledge folder with three sheets and no packages; returns a BuildRequest for it."""
    knowledge = root / "knowledge"
    knowledge.mkdir(parents=True, exist_ok=True)
    (knowledge / "eager.md").write_text(SHEET_EAGER)
    (knowledge / "pallas.md").write_text(SHEET_PALLAS)
    (knowledge / "chips.yaml").write_text(CHIPS_YAML)
    (knowledge / "README.md").write_text("# not a sheet\n")
    packages = root / "packages.yaml"
    packages.write_text("packages: []\n")
    return BuildRequest(folder=root / "index", knowledge_folder=knowledge, packages_file=packages)


def write_docs(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(textwrap.dedent(content))
    return folder


def built_data_dir(root: Path) -> Path:
    """A tpu-agent data folder under `root` holding the lexical index of `write_corpus` (no dense model)."""
    request = write_corpus(root / "corpus")
    run_kb_build(request.model_copy(update={"folder": root / "data" / "kb", "dense": False}))
    return root / "data"


def lexical_index(root: Path, sheets: dict[str, str]) -> KnowledgeIndex:
    """The lexical index of `write_corpus` with `sheets` (file name: text) added to its knowledge folder."""
    request = write_corpus(root)
    assert request.knowledge_folder is not None and request.folder is not None
    for name, text in sheets.items():
        (request.knowledge_folder / name).write_text(text)
    run_kb_build(request.model_copy(update={"dense": False}))
    return KnowledgeIndex.open(request.folder)


def ask(index: KnowledgeIndex, question: str) -> Answer:
    """The answer as `tpu_runtime.knowledge.api.answer` makes it: SUPPORT_PASSAGES passages weighed."""
    return compose(question, index, index.search(question, SUPPORT_PASSAGES))


def assert_quoted(index: KnowledgeIndex, question: str, expected: str) -> Answer:
    """The answer to `question`, asserted covered with `expected` in its first citation's quote."""
    reply = ask(index, question)
    assert reply.covered, reply.reason
    assert expected in reply.citations[0].quote, reply.citations[0].quote
    return reply


def assert_refused(index: KnowledgeIndex, question: str, because: str) -> Answer:
    """The answer to `question`, asserted "not covered" with no citation, for a reason naming `because`, and
    not the generic refusal of a passage too weak in the question's words (the gate rule under test refused)."""
    reply = ask(index, question)
    assert not reply.covered and reply.citations == [], reply.answer
    assert because in reply.reason and "best passage supports" not in reply.reason, reply.reason
    return reply


def sheet_line(text: str, line: int, section: str, path: str) -> Passage:
    """One line of a sheet as a retrieved passage, for tests that score lines without retrieval."""
    return Passage(
        text=text,
        source=f"{path}:{line}",
        score=1.0,
        kind="curated",
        path=path,
        section=section,
        line=line,
        chunk_id=f"{path}:{line}",  # type: ignore[arg-type]
    )


def quote_span(text: str, overlap: float, line: int, section: str, path: str) -> Span:
    """A candidate quote line of a sheet, as quote_choice ranks them, for tests of the runner-up choice
    that set each line's overlap by hand instead of through retrieval."""
    return Span(text, sheet_line(text, line, section, path), overlap)
