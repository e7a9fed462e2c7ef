# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A call written in a code span ('`frob.ceil_div(a, b)`') is how a fact sheet names a function, so a question's
'Frobton function for ...' meets it in the support share; a code span that calls nothing (a variable, a flag)
names no function, and a question lacking another content word is still refused. A users' word for a sources'
word (`words.SAID_AS`: 'necessary' for a line's 'needs', a cache 'directory' for its `..._PATH`, a 'mean' for
its 'average' or 'avg', 'inference' for its 'serving',
'machines' for the 'hosts' it counts, 'billed' for 'charged') counts the same way. Hand-made sheets on tiny
lexical indexes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.kb_helpers import ask, assert_quoted, lexical_index
from tpu_runtime.knowledge import words
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import spelled_out

SHEET = """\
# Tiny Frobton kernels

## Grid helpers

- `frob.ceil_div(a, b)` is Frobton's ceiling division, for grid sizes that cover a ragged last block. ([source](https://example.org/cdiv), checked 2026-12-07)
- `FROB_GRID_LIMIT` caps the grid steps a Frobton kernel may launch. ([source](https://example.org/limit), checked 2026-12-07)

## Tracing

- A Frobton kernel body is a Python function traced once per block shape. ([source](https://example.org/body), checked 2026-12-07)
"""
QUESTION = "Which Frobton function gives ceiling division when computing grid sizes?"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("call-names"), {"frobton.md": SHEET})


def test_a_call_in_a_code_span_names_a_function() -> None:
    assert words.CALL_NAMES in spelled_out("`pl.cdiv(a, b)` is Pallas's ceiling division").split()
    assert (
        words.CALL_NAMES
        in spelled_out("Inside `jax.jit`, `jax.lax.with_sharding_constraint(x, s)` pins it").split()
    )


@pytest.mark.parametrize(
    "text",
    [
        "`FROB_GRID_LIMIT` caps the grid steps",
        "pass `--top_n` to keep more",
        "call it (once) with no code span",
    ],
)
def test_a_code_span_calling_nothing_names_no_function(text: str) -> None:
    assert words.CALL_NAMES not in spelled_out(text).split()


def test_the_function_question_is_answered_and_refused_without_the_rule(
    index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(index, QUESTION, "frob.ceil_div")
    monkeypatch.setattr(words, "_CALL_RE", re.compile(r"(?!)"))
    reply = ask(index, QUESTION)
    assert not reply.covered and "function" in reply.reason, reply.reason


def test_a_missing_content_word_is_still_refused(index: KnowledgeIndex) -> None:
    reply = ask(index, "Which Frobton function gives ceiling division when computing tensor sizes?")
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


NEED_SHEET = """\
# Tiny Frobton hosts

## Host maintenance

- Frobton hosts need maintenance handling by their owner only where the machine type cannot live migrate. ([source](https://example.org/maint), checked 2026-12-07)

## Images

- The Frobton image builder makes one boot disk per host. ([source](https://example.org/image), checked 2026-12-07)
"""
NEED_QUESTION = "What makes active maintenance handling necessary for Frobton hosts?"


@pytest.fixture(scope="module")
def need_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("said-as"), {"frobton.md": NEED_SHEET})


def test_a_lines_need_is_what_the_question_calls_necessary() -> None:
    assert "necessary" in spelled_out("Frobton hosts need active handling").split()
    assert "necessary" in spelled_out("a restart is required first").split()
    assert "necessary" not in spelled_out("Frobton hosts live migrate").split()


def test_the_necessary_question_is_answered_and_refused_without_the_join(
    need_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(need_index, NEED_QUESTION, "live migrate")
    monkeypatch.setattr(words, "SAID_AS", ())
    reply = ask(need_index, NEED_QUESTION)
    assert not reply.covered and "necessary" in reply.reason, reply.reason


def test_necessary_alone_does_not_cover_another_missing_word(need_index: KnowledgeIndex) -> None:
    reply = ask(need_index, "What makes active cooling upgrades necessary for Frobton hosts?")
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


PATH_SHEET = """\
# Tiny Frobton serving

## Compilation cache

- Frobton serving writes its compiled-graph cache where `FROB_CACHE_PATH` points, so new replicas skip the warm-up. ([source](https://example.org/cache), checked 2026-12-07)

## Logs

- A Frobton replica rotates its log directory every hour. ([source](https://example.org/logs), checked 2026-12-07)
"""
PATH_QUESTION = "frobton serving cache directory change"


@pytest.fixture(scope="module")
def path_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("said-as-path"), {"frobton.md": PATH_SHEET})


def test_a_lines_path_is_the_directory_asked_about() -> None:
    assert "directory" in spelled_out("set `FROB_CACHE_PATH` to shared storage").split()
    assert "directory" not in spelled_out("set `FROB_CACHE_DIR` to shared storage").split()


def test_the_directory_question_is_answered_and_refused_without_the_join(
    path_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(path_index, PATH_QUESTION, "FROB_CACHE_PATH")
    monkeypatch.setattr(words, "SAID_AS", ())
    reply = ask(path_index, PATH_QUESTION)
    assert not reply.covered and "directory" in reply.reason, reply.reason


def test_the_directory_alone_does_not_cover_another_missing_word(path_index: KnowledgeIndex) -> None:
    reply = ask(path_index, "frobton cache directory owner change")
    assert not reply.covered and "best passage supports" in reply.reason, reply.reason


MEAN_SHEET = """\
# Tiny Frobton profiler

## Step report

- `frob step_report` prints the average step time of a Frobton run next to the slowest step. ([source](https://example.org/steps), checked 2026-12-07)

## Capture

- A Frobton capture keeps one trace file per host. ([source](https://example.org/capture), checked 2026-12-07)
"""
MEAN_QUESTION = "frobton capture mean step time"


@pytest.fixture(scope="module")
def mean_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("said-as-mean"), {"frobton.md": MEAN_SHEET})


def test_a_lines_average_is_the_mean_asked_about() -> None:
    assert "mean" in spelled_out("prints the average step time").split()
    assert "mean" in spelled_out("`frob get_avg_step_time` returns it").split()
    assert "mean" not in spelled_out("prints the slowest step time").split()


def test_the_mean_question_is_answered_and_refused_without_the_join(
    mean_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(mean_index, MEAN_QUESTION, "step_report")
    monkeypatch.setattr(words, "SAID_AS", ())
    reply = ask(mean_index, MEAN_QUESTION)
    assert not reply.covered and "mean" in reply.reason, reply.reason


def test_a_line_giving_no_average_does_not_meet_the_mean(tmp_path: Path) -> None:
    sheet = MEAN_SHEET.replace(
        "the average step time of a Frobton run next to", "the step time of a Frobton run and"
    )
    reply = ask(lexical_index(tmp_path, {"frobton.md": sheet}), MEAN_QUESTION)
    assert not reply.covered and "mean" in reply.reason, reply.reason


SERVING_SHEET = """\
# Tiny Frobton pools

## Pool kinds

- Frobton pools come in two kinds, serving pools tuned for latency and training pools tuned for throughput, chosen by `--pool-kind`. ([source](https://example.org/pools), checked 2026-12-07)

## Capture

- A Frobton capture keeps one trace file per host. ([source](https://example.org/capture), checked 2026-12-07)
"""
SERVING_QUESTION = "frobton pool kind for inference"


@pytest.fixture(scope="module")
def serving_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("said-as-serving"), {"frobton.md": SERVING_SHEET})


def test_a_lines_serving_is_the_inference_asked_about() -> None:
    assert "inference" in spelled_out("serving pools tuned for latency").split()
    assert "inference" not in spelled_out("training pools tuned for throughput").split()


def test_the_inference_question_is_answered_and_refused_without_the_join(
    serving_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(serving_index, SERVING_QUESTION, "--pool-kind")
    monkeypatch.setattr(words, "SAID_AS", ())
    reply = ask(serving_index, SERVING_QUESTION)
    assert not reply.covered and "inference" in reply.reason, reply.reason


def test_a_line_naming_no_serving_does_not_meet_inference(tmp_path: Path) -> None:
    sheet = SERVING_SHEET.replace("serving pools tuned for latency", "batch pools tuned for latency")
    reply = ask(lexical_index(tmp_path, {"frobton.md": sheet}), SERVING_QUESTION)
    assert not reply.covered and "inference" in reply.reason, reply.reason


HOSTS_SHEET = """\
# Tiny Frobton pods

## Pod shape

- A full Frobton pod is 64 chips on 16 hosts, four chips per host. ([source](https://example.org/pod), checked 2026-12-07)

## Capture

- A Frobton capture keeps one trace file per chip. ([source](https://example.org/capture), checked 2026-12-07)

## Images

- One boot image serves all machines of a project. ([source](https://example.org/images), checked 2026-12-07)
"""
HOSTS_QUESTION = "How many host machines does a full Frobton pod have?"


@pytest.fixture(scope="module")
def hosts_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("said-as-hosts"), {"frobton.md": HOSTS_SHEET})


def test_a_lines_hosts_are_the_machines_asked_about() -> None:
    assert "machines" in spelled_out("64 chips on 16 hosts").split()
    assert "machines" not in spelled_out("64 chips on one host board").split()


def test_the_machines_question_is_answered_and_refused_without_the_join(
    hosts_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(hosts_index, HOSTS_QUESTION, "16 hosts")
    monkeypatch.setattr(words, "SAID_AS", ())
    reply = ask(hosts_index, HOSTS_QUESTION)
    assert not reply.covered, reply.reason


def test_a_line_counting_no_hosts_does_not_meet_the_machines(tmp_path: Path) -> None:
    sheet = HOSTS_SHEET.replace("64 chips on 16 hosts, four chips per host", "64 chips on 16 boards")
    reply = ask(lexical_index(tmp_path, {"frobton.md": sheet}), HOSTS_QUESTION)
    assert not reply.covered, reply.reason


BILLED_SHEET = """\
# Tiny Frobton leases

## Short leases

- A Frobton lease cancelled within its first ten minutes is not charged. ([source](https://example.org/lease), checked 2026-12-07)

## Renewals

- A Frobton lease renews at midnight unless it was cancelled. ([source](https://example.org/renew), checked 2026-12-07)
"""
BILLED_QUESTION = "Is a Frobton lease billed to the tenant when it is cancelled within minutes?"


@pytest.fixture(scope="module")
def billed_index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("said-as-billed"), {"frobton.md": BILLED_SHEET})


def test_a_lines_charge_is_the_bill_asked_about() -> None:
    assert "billed" in spelled_out("not charged if cancelled early").split()
    assert "billed" not in spelled_out("not charging docks").split()


def test_the_billed_question_is_answered_and_refused_without_the_join(
    billed_index: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_quoted(billed_index, BILLED_QUESTION, "not charged")
    monkeypatch.setattr(words, "SAID_AS", ())
    reply = ask(billed_index, BILLED_QUESTION)
    assert not reply.covered and "billed" in reply.reason, reply.reason


def test_billed_alone_does_not_cover_another_missing_word(billed_index: KnowledgeIndex) -> None:
    reply = ask(billed_index, "Is a Frobton lease billed twice when its renewal overlaps a refund?")
    assert not reply.covered, reply.reason
