# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A subcommand path the sources know though they never write it as the question does: a gcloud command
of the alpha track asked without 'alpha', a kubectl verb followed by a resource, and a command the sources
write only as a leaf followed by the question's own words. A made-up subcommand under a group the sources
do write stays unknown. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import path_forms, path_known
from tpu_runtime.knowledge.question_reading import command_paths
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

SHEET = """\
# Tiny widget commands

## Widget maintenance

- `gcloud alpha compute widgets wobble-event W --zone=ZONE [--arms=0,1]` wobbles the chosen arms of a Frobton widget so you can test how a job copes (alpha track only). ([source](https://example.org/wobble), checked 2026-12-06)
- `gcloud compute widgets create W --zone=ZONE` makes a Frobton widget; `gcloud compute widgets list` prints them. ([source](https://example.org/create), checked 2026-12-06)
- `gcloud compute widgets reset W --hard` resets a Frobton widget whose arms are still moving, stopping them first. ([source](https://example.org/reset), checked 2026-12-06)
- `kubectl cordon NODE` keeps new Frobton pods off a node; to shrink a Frobton pool resize it rather than removing nodes. ([source](https://example.org/cordon), checked 2026-12-06)
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("command-forms"), {"widgets.md": SHEET})


def test_kubectl_paths_stop_at_the_verb() -> None:
    assert command_paths("Is kubectl cordon node enough before I shrink the Frobton pool?") == [
        "kubectl cordon"
    ]
    assert command_paths("What does xpk workload migrate do?") == ["xpk workload migrate"]


def test_gcloud_paths_are_tried_with_and_without_a_track() -> None:
    assert path_forms("gcloud compute widgets wobble-event") == [
        ["gcloud", "compute", "widgets", "wobble-event"],
        ["gcloud", "alpha", "compute", "widgets", "wobble-event"],
        ["gcloud", "beta", "compute", "widgets", "wobble-event"],
    ]
    assert path_forms("gcloud beta compute widgets list") == [
        ["gcloud", "beta", "compute", "widgets", "list"],
        ["gcloud", "compute", "widgets", "list"],
    ]
    assert path_forms("xpk workload create") == [["xpk", "workload", "create"]]


def test_which_paths_are_known(index: KnowledgeIndex) -> None:
    assert index.continued("gcloud compute widgets")  # a group: 'create', 'list' and 'reset' follow
    assert not index.continued("gcloud compute widgets reset")  # a placeholder follows, then a flag
    assert path_known(index, "gcloud compute widgets wobble-event")
    assert path_known(index, "gcloud beta compute widgets create")
    # a leaf the sources write, then the question's own words
    assert path_known(index, "gcloud compute widgets reset fails since")
    # a word after a group that none of the sources' subcommands is
    assert not path_known(index, "gcloud compute widgets snapshot create")
    assert not path_known(index, "gcloud compute widgets shake-event")
    assert path_known(index, "kubectl cordon")
    assert not path_known(index, "kubectl drainify")


def test_an_alpha_command_asked_without_its_track_is_answered(index: KnowledgeIndex) -> None:
    assert_quoted(
        index,
        "Can I run gcloud compute widgets wobble-event on arms 0 and 1 of a Frobton widget only?",
        "wobble-event",
    )
    assert_refused(
        index,
        "Can I run gcloud compute widgets event-wobble on arms 0 and 1 of a Frobton widget only?",
        "never mention gcloud compute widgets event-wobble",
    )
