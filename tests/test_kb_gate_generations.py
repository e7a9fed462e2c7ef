# ruff: noqa: E501  (fact-sheet lines are long by design)
"""The gate's generation binding: a line listing several TPU generations gives each clause's figure to
the generation that clause names, so a question about one generation is not answered by a line that
names it while giving the asked-for thing for another ('two 100 Gbps NICs' of v5e in a line giving
v5p's DCN rate), and is answered when the line's own clause for it does give it. Hand-made sheets on a
tiny lexical index."""

from __future__ import annotations

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.answer_gate import misplaced_terms
from tpu_runtime.knowledge.generation_clauses import generation_parts, generations_named
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

DCN = (
    "Zephyr uplink bandwidth per chip by generation: 50 Gbps on TPU v5p and 100 Gbps on TPU v6e and "
    "TPU7x; for TPU v5e it works out to 25 Gbps per chip (two 100 Gbps NICs shared by the 8 chips of a host)."
)
SHEET = f"""\
# Tiny Zephyr sheet

## Zephyr uplinks

- {DCN} ([source](https://example.org/dcn), checked 2026-12-04)

## Zephyr kernels

- The Zephyr copy kernel moves tiles between HBM and VMEM with async copies. ([source](https://example.org/copy), checked 2026-12-04)
"""
V5P = """\
# Zephyr v5p hosts

## Zephyr v5p networking

- Each TPU v5p host carries four 200 Gbps NICs for its Zephyr uplinks. ([source](https://example.org/v5p), checked 2026-12-04)
"""
NICS = "How many NICs does each TPU v5p host have for the Zephyr uplinks?"


def test_generations_are_named_under_every_name() -> None:
    assert generations_named("TPU v6e, Trillium and v5litepod") == {"=v6e", "=v5e"}
    assert generations_named("Ironwood (TPU7x) is v7x") == {"=tpu7x"}
    # a ratio or a dotted version is no generation
    assert generations_named("a 2.7x speedup in release v4.2") == set()


def test_a_line_is_split_by_whose_figure_each_clause_gives() -> None:
    lead, owned = generation_parts(DCN)
    assert lead.strip().startswith("Zephyr uplink bandwidth per chip by generation")
    assert owned["v5p"] == ["50 Gbps on TPU v5p"]
    # the bare 'and TPU7x' shares the clause before it
    assert owned["=tpu7x"] == owned["=v6e"] == ["100 Gbps on TPU v6e"]
    assert "two 100 Gbps NICs" in " ".join(owned["=v5e"])
    # the words before the first figure are everyone's, not the first generation's
    lead, owned = generation_parts(
        "ICI bandwidth per port works out to 100 GBps on TPU v5e and 200 GBps on TPU v6e."
    )
    assert "ICI bandwidth per port" in lead and owned["=v6e"] == ["200 GBps on TPU v6e."]


def test_a_bare_figure_borrows_the_first_clause_unit_and_a_clause_after_a_semicolon_is_everyones() -> None:
    ridge = (
        "Compute per byte of HBM bandwidth (peak bf16 over HBM bandwidth) works out to about 137 FLOPs per "
        "byte on TPU v3, 229 on v4 and 560 on v6e; a kernel below its generation's figure is bound by HBM."
    )
    lead, owned = generation_parts(ridge)
    # 'bf16' is no figure: the lead runs to '137'
    assert "peak bf16" in lead and owned["v4"] == [" 229 on v4"]
    assert "FLOPs per byte" in lead and "a kernel below" in lead
    terms = ["bf16", "flops", "byte", "hbm", "v6e", "kernel"]
    assert misplaced_terms("How many bf16 FLOPs per byte does a TPU v6e kernel need?", ridge, "", terms) == []


def test_terms_only_another_generation_gives_are_misplaced() -> None:
    terms = ["nics", "v5p", "host", "zephyr", "uplink"]
    assert misplaced_terms("How many NICs does a TPU v5p host have?", DCN, "", terms) == ["nics", "host"]
    # asked of the generation whose clause gives them, nothing is misplaced
    assert misplaced_terms("How many NICs does a TPU v5e host have?", DCN, "", ["nics", "v5e", "host"]) == []
    # the lead is every generation's: the rate per chip is v5p's to give
    assert (
        misplaced_terms("What uplink bandwidth per chip has TPU v5p?", DCN, "", ["uplink", "chip", "v5p"])
        == []
    )
    # a question naming no generation, or a line naming one only, is left to the other checks
    assert misplaced_terms("How many NICs does a host have?", DCN, "", ["nics", "host"]) == []
    one = "TPU v5e hosts have two 100 Gbps NICs."
    assert misplaced_terms("How many NICs does a TPU v5p host have?", one, "", ["nics", "v5p", "host"]) == []


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("gens-bare"), {"zephyr.md": SHEET})


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("gens-full"), {"zephyr.md": SHEET, "v5p.md": V5P})


def test_a_line_giving_the_figure_for_another_generation_is_refused(bare: KnowledgeIndex) -> None:
    reply = ask(bare, NICS)
    assert not reply.covered and reply.citations == [], reply.answer
    assert "for another generation" in reply.reason, reply.reason
    # the same line answers for the generation its clause gives the NICs of
    same = ask(bare, NICS.replace("v5p", "v5e"))
    assert same.covered and "two 100 Gbps NICs" in same.citations[0].quote, same.reason


def test_the_line_giving_the_asked_generation_its_figure_answers(full: KnowledgeIndex) -> None:
    reply = ask(full, NICS)
    assert reply.covered, reply.reason
    assert "four 200 Gbps NICs" in reply.citations[0].quote
