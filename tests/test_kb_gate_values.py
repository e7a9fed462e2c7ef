# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The gate's checks on what kind of value a question asks for: a made-up `--flag` whose words are all
common is unknown, and a 'when / in which release' question needs a line giving a date or a version of
the product it names. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.answer_gate import _GIVES_WHEN_RE, gives_setting
from tpu_runtime.knowledge.question_reading import asks_when, question_flags, release_owner
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny launcher sheet

## Launcher workloads

- `--max-restarts` on `launcher workload create` (default 0) restarts a job that terminates; a large value such as 50 suits production jobs. ([source](https://example.org/launcher), checked 2026-12-04)
- `launcher workload create` takes `--workload`, `--command` and `--cluster` and queues the job on the cluster. ([source](https://example.org/launcher2), checked 2026-12-04)

- The launcher supports `v5e`, `v6e` and `tpu7x` slices on regional clusters. ([source](https://example.org/launcher3), checked 2026-12-04)
- The launcher reports usage telemetry; `launcher config set send-telemetry false` turns that off. ([source](https://example.org/launcher4), checked 2026-12-04)

## Releases

- Cancelling the collectives of failed processes works on GPU; its TPU support is planned but not yet released. ([source](https://example.org/cancel), checked 2026-12-04)
- Gridlet 0.4.0 and later can attach a dashboard to each cluster with `--create-dashboard`. ([source](https://example.org/dash), checked 2026-12-04)
- The node agent must run version 1.30.4 or later for slices to start. ([source](https://example.org/agent), checked 2026-12-04)
"""


@pytest.fixture(scope="module")
def sheet(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("values"), {"launcher.md": SHEET})


def test_flags_are_read_whole_and_when_questions_are_recognised() -> None:
    assert question_flags("What is the default of --max-slices and --xla_tpu_foo=3?") == [
        "max-slices",
        "xla_tpu_foo",
    ]
    assert question_flags("Is a pre-emptible VM cheaper?") == []
    assert asks_when("When will JAX support this on TPU?")
    assert asks_when("In which JAX release will cancelling collectives work on TPU?")
    assert not asks_when("When is Multislice better than one big slice?")
    assert release_owner("In which JAX release will it ship?") == "jax"
    # a version or date, not a speed-up, a share or an IP address
    assert _GIVES_WHEN_RE.search("needs version 1.30.4 or later") and _GIVES_WHEN_RE.search(
        "since March 2025"
    )
    assert not _GIVES_WHEN_RE.search("ran 1.8x faster, 2.5 % slower, at 127.0.0.1")


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the default of --max-restarts on launcher workload create?", "default 0"),
        ("Which Gridlet version can attach a dashboard to each cluster?", "0.4.0"),
        # the line never says 'stop' but gives the command that does it
        ("How do I stop the launcher from sending usage telemetry?", "send-telemetry false"),
    ],
)
def test_a_value_the_line_gives_is_answered(sheet: KnowledgeIndex, question: str, expected: str) -> None:
    reply = ask(sheet, question)
    assert reply.covered, reply.reason
    assert expected in reply.citations[0].quote


@pytest.mark.parametrize(
    "question",
    [
        # '--max-slices' is named nowhere, though 'max' and 'slices' are everywhere
        "What is the default value of --max-slices in launcher workload create?",
        # the line on cancelling collectives gives no release, and the version line is about the node agent
        "In which JAX release will cancelling the collectives of failed processes work on TPU?",
        "When will cancelling the collectives of failed processes be released for TPU?",
        # the line names both generations in backticks, which is no command for moving between them
        "How do I migrate launcher slices from v5e to v6e on a regional cluster?",
    ],
)
def test_a_value_no_line_gives_is_refused(sheet: KnowledgeIndex, question: str) -> None:
    reply = ask(sheet, question)
    assert not reply.covered and reply.citations == [], reply.answer


def test_a_bare_name_in_backticks_is_no_command_or_setting() -> None:
    assert not gives_setting("The launcher supports `v5e`, `v6e` and `tpu7x` slices.")
    for span in (
        "run `launcher config set x false`",
        "pass `--spot`",
        "set `PJRT_DEVICE=TPU`",
        "call `jax.jit(f)`",
    ):
        assert gives_setting(span), span
