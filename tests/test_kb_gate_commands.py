# ruff: noqa: E501  (fact-sheet lines are long by design)
"""A subcommand path a question writes in prose ('xpk workload migrate') is a name: its words are common,
so a line on a sibling subcommand ('xpk workload delete') matches it word by word, and only a source
writing the path whole knows it. Hand-made sheets on a tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import path_known
from tpu_runtime.knowledge.question_reading import capability_asked, command_paths
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, flat_text

SHEET = """\
# Tiny xpk workloads

## Workload subcommands

- `xpk workload delete --workload W` removes a workload from a Gridlet cluster and frees its slices. ([source](https://example.org/delete), checked 2026-12-06)
- `xpk workload list` prints each workload of a Gridlet cluster with its state. ([source](https://example.org/list), checked 2026-12-06)
"""
MIGRATE = """\
# Tiny xpk migrations

## Moving workloads

- `xpk workload migrate --workload W` moves a workload to another Gridlet cluster when its slices are preempted. ([source](https://example.org/migrate), checked 2026-12-06)
"""
QUESTION = (
    "What does xpk workload migrate do to a workload of a Gridlet cluster when its slices are preempted?"
)


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("commands-bare"), {"xpk.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("commands-full"), {"xpk.md": SHEET, "migrate.md": MIGRATE})


def test_the_path_ends_where_the_prose_resumes() -> None:
    assert command_paths(QUESTION) == ["xpk workload migrate"]
    assert command_paths("How do I use tpu-ctl drain to hand requests over?") == ["tpu-ctl drain"]
    # after an auxiliary the program is the subject, and the last word the clause's verb
    assert command_paths("Which zone does gcloud compute tpus tpu-vm create use by default?") == [
        "gcloud compute tpus tpu-vm create"
    ]
    assert command_paths("What does gcloud compute tpus tpu-vm snapshot create do?") == [
        "gcloud compute tpus tpu-vm snapshot create"
    ]
    # a program named without a subcommand, or inside a longer name, writes no path
    assert command_paths("Is there a tpu-info option for JSON?") == []
    assert command_paths("What does pip install my-xpk helper do?") == []
    # after an article or other determiner the program's name qualifies a noun: no command is written
    assert command_paths("Can an xpk workload keep going once a slice is lost?") == []


def test_a_phrase_is_written_whole_only(bare: KnowledgeIndex) -> None:
    assert flat_text("Run `xpk workload list`. Then") == "run xpk workload list . then"
    assert bare.writes("XPK workload list")
    assert bare.writes("xpk workload delete")
    assert not bare.writes("xpk workload migrate")
    assert bare.writes("xpk workload")  # the start of a written path is a command group
    assert not bare.writes("workload migrate")
    assert bare.writes("xpk workload delete --workload w")


def test_a_sibling_subcommands_line_is_refused(bare: KnowledgeIndex) -> None:
    assert_refused(bare, QUESTION, "never mention xpk workload migrate")


def test_a_subcommand_the_sources_write_answers(bare: KnowledgeIndex, full: KnowledgeIndex) -> None:
    assert_quoted(
        bare, "What does xpk workload delete do to a workload of a Gridlet cluster?", "xpk workload delete"
    )
    assert_quoted(full, QUESTION, "xpk workload migrate")


GAUGES = """\
# Tiny gauge tools

## Reading gauges

- `tpu-info --gauges` prints the Zentrix gauge of each chip; `tpu-info --watch` refreshes it every second. ([source](https://example.org/gauges), checked 2026-12-07)
- `tpu-info` reads the Zentrix gauges by polling a Quillon socket at port 7311 on the host. ([source](https://example.org/quillon), checked 2026-12-07)
- The `tpu-ctl` helper offers `pause` and `resume` for a Zentrix replica. ([source](https://example.org/ctl), checked 2026-12-07)
- `tpu-tune apply` writes the tuned Zentrix block sizes for a model. ([source](https://example.org/tune), checked 2026-12-07)
"""


@pytest.fixture(scope="module")
def gauges(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("commands-gauges"), {"gauges.md": GAUGES})


def test_a_program_written_only_with_flags_takes_no_subcommands(
    gauges: KnowledgeIndex, bare: KnowledgeIndex
) -> None:
    assert gauges.flags_only("tpu-info")
    assert not gauges.flags_only("tpu-tune")  # `tpu-tune apply`: a subcommand
    assert not gauges.flags_only("tpu-ctl")  # written alone, its subcommands listed apart
    assert not bare.flags_only("xpk")
    assert path_known(gauges, "tpu-info work")
    assert not path_known(gauges, "tpu-tune revert")


def test_the_word_after_a_flags_only_program_is_the_clauses_verb(gauges: KnowledgeIndex) -> None:
    assert command_paths("How does tpu-info work out the Zentrix gauge of each chip?") == ["tpu-info work"]
    assert_quoted(gauges, "How does tpu-info print the Zentrix gauge of each chip?", "--gauges")
    assert_quoted(gauges, "What does tpu-info show for the Zentrix gauge of each chip?", "--gauges")
    # a made-up subcommand of a program whose subcommands the sources write stays unknown
    assert_refused(gauges, "What does tpu-ctl drain do to a Zentrix replica?", "never mention tpu-ctl drain")
    assert_refused(
        gauges, "What does tpu-tune revert do to the Zentrix block sizes?", "never mention tpu-tune revert"
    )


def test_a_capability_no_passage_names_is_refused(gauges: KnowledgeIndex) -> None:
    assert capability_asked("Does tpu-info support exporting its gauges?") == "exporting"
    assert capability_asked("Does tpu-info print gauges?") is None
    assert_refused(
        gauges,
        "Does tpu-info support exporting its Zentrix gauges on a Quillon socket?",
        "supports 'exporting'",
    )
    # the same question on the action the sources name is answered
    assert_quoted(gauges, "Does tpu-info support polling a Quillon socket for the Zentrix gauges?", "Quillon")


CLUSTERS = """\
# Tiny xpk clusters

## Cluster subcommands

- `xpk cluster create --cluster C --tpu-type T` makes a Gridlet cluster of Quorvan slices. ([source](https://example.org/create), checked 2026-12-08)
- The `xpk cluster` group has `create`, `delete`, `describe` and `list`. ([source](https://example.org/group), checked 2026-12-08)
- Deleting a Gridlet cluster waits for its Quorvan workloads to stop; pass `--force` to stop them first and delete it anyway. ([source](https://example.org/force), checked 2026-12-08)
"""
STUCK = "xpk cluster delete hangs while Quorvan workloads run on the Gridlet cluster; how do I stop them first and delete it anyway?"


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("commands-clusters"), {"clusters.md": CLUSTERS})


def test_a_group_lists_its_subcommands_apart(clusters: KnowledgeIndex) -> None:
    assert clusters.lists("xpk cluster", "delete")
    assert clusters.lists("XPK Cluster", "list")
    assert not clusters.lists("xpk cluster", "migrate")  # not listed
    assert not clusters.lists("xpk cluster", "force")  # a flag is no subcommand
    assert not clusters.lists("xpk", "cluster")  # the program is not written closed in code
    # the group is written whole and followed by a subcommand, and no source writes 'xpk cluster delete'
    assert clusters.continued("xpk cluster") and not clusters.writes("xpk cluster delete")
    assert path_known(clusters, "xpk cluster delete hangs")
    assert not path_known(clusters, "xpk cluster migrate hangs")


def test_a_listed_subcommand_before_the_users_story_is_known(
    clusters: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert command_paths(STUCK) == ["xpk cluster delete hangs"]
    assert_quoted(clusters, STUCK, "--force")
    # a subcommand the group's line does not list stays a made-up one
    assert_refused(clusters, STUCK.replace("delete", "migrate", 1), "never mention xpk cluster migrate")
    # with the listing unread, the story's word makes the path unknown, as before
    monkeypatch.setattr(KnowledgeIndex, "lists", lambda self, group, word: False)
    assert_refused(clusters, STUCK, "never mention xpk cluster delete hangs")
