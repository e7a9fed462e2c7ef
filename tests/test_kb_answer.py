# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Span selection and the "not covered" gate: on hand-made passages, and on a tiny real index where
questions the sheets answer must be answered from the right line and the others refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.kb_helpers import ask, lexical_index
from tpu_runtime.knowledge.answer import _url_near, closest_page, compose, listed_passages
from tpu_runtime.knowledge.answer_gate import (
    _GIVES_COUNT_RE,
    _missing_specific,
    _present,
    _terms,
    names_attribute,
)
from tpu_runtime.knowledge.models import Answer, Citation, Passage
from tpu_runtime.knowledge.question_reading import (
    _weights,
    asks_count,
    focus_term,
    name_terms,
    value_units,
    whole_scope,
)
from tpu_runtime.knowledge.quote_choice import (
    SUPPORT_PASSAGES,
    best_span,
    candidate_spans,
    scope_mismatch,
    summary_passages,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import stem


def _passage(text: str, url: str | None = None, kind: str = "curated") -> Passage:
    return Passage(
        text=text,
        source="x.md:1",
        url=url,
        score=1.0,
        kind=kind,
        path="x.md",
        line=1,
        chunk_id="c1",  # type: ignore[arg-type]
    )


def test_spans_are_exact_substrings_without_list_markers_or_source_tails() -> None:
    text = (
        "- First fact about HBM. ([source](https://a.example/hbm), checked 2026-11-30)\n"
        "- Second fact: VMEM is small and fast. Another sentence here follows it.\n\n"
        "A wrapped paragraph that goes on\nacross two lines of text."
    )
    spans = candidate_spans(text)
    assert "First fact about HBM." in spans
    assert "Second fact: VMEM is small and fast." in spans
    assert "Another sentence here follows it." in spans
    assert "A wrapped paragraph that goes on\nacross two lines of text." in spans
    assert all(span in text for span in spans)
    assert not any("source" in span or span.startswith("- ") for span in spans)


def test_a_fact_line_of_several_sentences_is_also_a_whole_candidate() -> None:
    # a question answered across two sentences of one fact must be able to quote both
    text = "- Megacore is only on TPU v4 and v5p. Elsewhere the annotation is a no-op. ([source](https://a.example/m), checked 2026-12-02)"
    spans = candidate_spans(text)
    assert "Megacore is only on TPU v4 and v5p. Elsewhere the annotation is a no-op." in spans
    assert "Megacore is only on TPU v4 and v5p." in spans


def test_pronouns_do_not_count_as_question_terms(tiny: KnowledgeIndex) -> None:
    from tpu_runtime.knowledge.question_reading import _weights

    weights = _weights(tiny, "How do I copy a Pallas operand myself?")
    assert "myself" not in weights and "copy" in weights and "pallas" in weights


def test_url_nearest_after_the_quote_is_cited() -> None:
    passage = _passage(
        "- Alpha value is 1. ([source](https://a.example/1), checked 2026-11-30)\n"
        "- Beta value is 2. ([source](https://b.example/2), checked 2026-11-30)",
        url="https://a.example/1",
    )
    assert _url_near(passage, "Beta value is 2.") == "https://b.example/2"
    assert _url_near(passage, "Alpha value is 1.") == "https://a.example/1"


def test_closest_page_prefers_a_passage_url_then_a_fallback() -> None:
    assert closest_page([_passage("t", None), _passage("u", "https://b.example/")]) == "https://b.example/"
    assert closest_page([_passage("t", None, kind="package")]).startswith("https://docs.jax.dev/")
    assert closest_page([]).startswith("https://")


def test_stemming_meets_plural_and_verb_forms() -> None:
    assert stem("topologies") == stem("topology")
    assert stem("offers") == stem("offer")
    assert stem("v6e") == "v6e" and stem("bf16") == "bf16"
    # applied until nothing changes, so noun and verb forms of one word meet
    assert stem("preempted") == stem("preemption") == stem("preempt")
    assert stem("sizes") == stem("size") and stem("versions") == stem("version")
    # short plurals of acronyms and verbs meet their singular: a question about TPUs matches a TPU line
    assert stem("tpus") == "tpu" and stem("mxus") == "mxu" and stem("runs") == stem("run")


def test_irregular_past_forms_and_un_re_prefixes_meet_their_word() -> None:
    assert stem("written") == stem("write") and stem("ran") == stem("run")
    # 'retracing' is about tracing, 'filled' is named by 'unfilled'
    assert _present(_terms("Tracing a pure function is cached."), "retracing")
    assert _present(_terms("A request still unfilled at its end time expires."), "filled")
    assert not _present(_terms("The profile is read by XProf."), "retracing")
    assert not _present(_terms("Set the port."), "reset")  # too short to carry a prefix


def test_a_dotted_name_is_named_without_its_root_alias_only_by_a_distinctive_rest() -> None:
    doc = _terms("jax.experimental.pallas.tpu.BufferedRef: a helper for double buffering")
    assert _present(doc, "pltpu.bufferedref") and not _missing_specific(
        ["pltpu.bufferedref"], "BufferedRef helper"
    )
    # a short common tail is not enough: 'devices' alone does not name jax.devices
    assert not _present(_terms("List the devices of the slice."), "jax.devices")
    assert _missing_specific(["jax.devices"], "List the devices of the slice.") == ["jax.devices"]


class _Corpus:
    """The two members of KnowledgeIndex that `_weights` reads."""

    def __init__(self, df: dict[str, int], size: int = 1000) -> None:
        self.chunks = [None] * size
        self.df = df

    def document_frequency(self, token: str) -> int:
        return self.df.get(token, 0)


def test_stated_durations_and_alias_roots_weigh_little() -> None:
    corpus = _Corpus({"queued": 20, "resource": 30, "hours": 5, "hour": 5, "pltpu": 40, "bufferedref": 3})
    stated = _weights(corpus, "How do I make a queued resource give up after 6 hours?")  # type: ignore[arg-type]
    asked = _weights(corpus, "How long, in hours, does a queued resource wait?")  # type: ignore[arg-type]
    assert stated["hours"] < stated["queued"] and asked["hours"] > asked["queued"]
    alias = _weights(corpus, "What is pltpu.BufferedRef for?")  # type: ignore[arg-type]
    assert alias["pltpu"] < 0.5 * alias["bufferedref"]


def test_a_total_asked_of_a_whole_pod_is_not_a_per_chip_figure() -> None:
    """'across all the chips of a pod' names chips, but the total of the Pod is what is asked."""
    question = "Combined peak FLOPS across all the chips of a TPU v4 pod?"
    table = "The per-chip table for TPU v4: a 16x16x16 pod, 2x2x1 chips per host, a peak of 2.75e14 FLOPS."
    pod = "A full TPU v4 Pod peaks at 1.1 exaflops (bf16 or int8)."
    both = "TPU v4 against TPU v3, per chip: 2.2x the bf16 peak; per Pod, 4x the chips."
    assert (
        whole_scope(question) == "pod"
        and whole_scope("If I book an entire Trillium pod, what peak?") == "pod"
    )
    assert scope_mismatch(question, table) and not scope_mismatch(question, pod)
    assert not scope_mismatch(question, both)  # it gives the Pod's figures as well
    # chips named without a total asked keep the plain rule: a per-chip line names the chips asked
    assert whole_scope("How many chips are in a v4 pod?") is None
    assert not scope_mismatch("What peak FLOPS does each chip of a v4 pod reach?", table)
    weights = {"combined": 5.4, "peak": 3.9, "flops": 4.2, "across": 3.4, "chips": 3.0, "v4": 7.3, "pod": 3.7}
    passages = [_passage(f"- {table}\n- {pod}")]
    span = best_span(weights, passages, ["v4"], question=question)
    assert span is not None and "1.1 exaflops" in span.text


def test_a_figure_per_chip_does_not_answer_a_question_about_a_pod() -> None:
    question = "What is the bf16 peak compute of a whole v5e Pod?"
    chip = "TPU v5e peak compute per chip is 197 TFLOPs in bf16 and 393 TOPs in int8."
    pod = "A full TPU v5e Pod peaks at 50.63 PFLOPs in bf16."
    assert scope_mismatch(question, chip) and not scope_mismatch(question, pod)
    # the question's own unit, or no unit at all, is no mismatch
    assert not scope_mismatch("How many v5e chips share one host?", "A v5e host has 8 chips, 4 per VM.")
    assert not scope_mismatch("What is the HBM of v5e?", chip)
    weights = {"bf16": 7.5, "peak": 3.7, "compute": 6.0, "whole": 4.7, "v5e": 7.3, "pod": 2.0}
    passages = [_passage(f"- {chip}\n- {pod}")]
    span = best_span(weights, passages, ["bf16", "v5e"], question=question)
    assert span is not None and "50.63" in span.text
    plain = best_span(weights, passages, ["bf16", "v5e"])  # by words alone the per-chip line wins
    assert plain is not None and "per chip" in plain.text


def test_a_symbols_docstring_summary_defines_it() -> None:
    def doc(text: str, line: int, symbol: str) -> Passage:
        return Passage(
            text=text, source=f"p.py:{line}", url=None, score=1.0, kind="package", path="p.py",
            line=line, symbol=symbol, chunk_id=f"c{line}",  # type: ignore[arg-type]
        )  # fmt: skip

    passages = [
        doc("In the case of a BufferedRef targeting VMEM, the window is allocated.", 470, "pkg.BufferedRef"),
        doc("A helper class to automate double buffering in pipelines.", 451, "pkg.BufferedRef"),
        doc("Abstract interface for BufferedRefs.", 272, "pkg.BufferedRefBase"),
    ]
    question = "What is pltpu.BufferedRef for?"
    assert summary_passages(question, passages) == {"c451"}
    assert summary_passages("How do I size a pltpu.BufferedRef?", passages) == set()
    weights = {"pltpu.bufferedref": 8.0, "pltpu": 0.7, "bufferedref": 4.0, "buffered": 3.5, "ref": 3.0}
    span = best_span(weights, passages, ["pltpu.bufferedref"], question=question)
    assert span is not None and "double buffering" in span.text
    plain = best_span(weights, passages, ["pltpu.bufferedref"])
    assert plain is not None and "double buffering" not in plain.text


def test_a_line_giving_a_value_in_the_unit_names_the_attribute_asked_for() -> None:
    # 'which version' is answered by the line giving one, though the other line says 'version'
    passage = _passage(
        "- Run `prof -h` to list the subcommands of the installed version. ([source](https://a.example/1), checked 2026-12-02)\n"
        "- The viewer needs tool 2.20.0 or later. ([source](https://a.example/2), checked 2026-12-02)"
    )
    question = "Which tool version do I need?"
    weights = {"tool": 1.7, "version": 3.7}
    assert value_units(question).keys() == {"version"}
    span = best_span(weights, [passage], units=value_units(question))
    assert span is not None and "2.20.0" in span.text
    plain = best_span(weights, [passage])  # the word alone would pick the line that only says 'version'
    assert plain is not None and "installed version" in plain.text
    # a memory is a thing too: a size names it only when the question asks how big
    assert "vmem" not in value_units("How do I give a Pallas kernel more VMEM than the default?")
    assert "vmem" not in value_units("Which memory space is VMEM?")
    assert "hbm" in value_units("How much HBM does a v6e chip have?")


def test_focus_term_is_the_attribute_a_quantity_question_asks_for() -> None:
    assert focus_term("How many HBM stacks does a TPU v5e chip use?") == "stacks"
    assert focus_term("How many v5e chips share one host?") == "chips"
    assert focus_term("What is the clock speed of the SparseCores on TPU7x?") == "clock"
    assert focus_term("What is the hourly on-demand price of a TPU v6e chip?") == "price"
    # generic quantities and comparisons name no attribute of their own
    assert focus_term("What is the maximum number of chips in a slice?") is None
    assert focus_term("What is the difference between PROVISIONING and ACTIVE?") is None
    assert focus_term("How do I create a TPU?") is None
    # 'which X' asks for an attribute only when X has a unit; 'which tool' is answered by naming one
    assert focus_term("Which Windows version does SGLang on TPU support?") == "version"
    assert focus_term("Which ICI bandwidth does a v5e chip have?") == "bandwidth"
    assert focus_term("Which XProf tool tracks memory use over time?") is None
    assert focus_term("Which memory space is VMEM?") is None


def test_an_attribute_is_named_by_its_word_or_by_a_value_in_its_unit() -> None:
    assert names_attribute("bandwidth", "32 GiB of HBM2 per chip at 900 GBps")
    assert names_attribute("clock", "runs at 1.75 GHz") and names_attribute("power", "draws 220 W")
    assert names_attribute("stacks", "four HBM stacks per chip")
    assert not names_attribute("bandwidth", "Each TPU v3 chip has two TensorCores.")
    assert not names_attribute("clock", "Each TPU7x chip has two TensorCores and four SparseCores.")


def test_the_span_that_itself_names_the_question_terms_wins_over_its_heading_mates() -> None:
    # both lines sit under a heading naming the question's subject; only one says what is asked
    passage = _passage(
        "- Names differ between the two sources, as noted below. ([source](https://a.example/1), checked 2026-12-02)\n"
        "- The eager modes are DEFAULT and ASYNC, selected with torch.tpu.eager_mode. ([source](https://a.example/2), checked 2026-12-02)"
    ).model_copy(update={"section": "Eager modes of TorchTPU"})
    weights = {"eager": 4.0, "modes": 4.2, "torchtpu": 2.3, "differ": 2.0}
    span = best_span(weights, [passage])
    assert span is not None and "eager_mode" in span.text


GENERATIONS = """\
# Tiny hardware sheet

## TPU v3

- Each TPU v3 chip has two TensorCores, and each v3 TensorCore has two matrix-multiply units (MXUs). ([source](https://example.org/v3), checked 2026-12-02)
- A TPU v3 Pod has 1024 chips connected as a 2D torus. ([source](https://example.org/v3), checked 2026-12-02)
- TPU v3 racks are joined by optical circuit switches. ([source](https://example.org/v3ocs), checked 2026-12-04)

## TPU v4

- Each v4 TensorCore has four MXUs, one vector unit and one scalar unit. ([source](https://example.org/v4), checked 2026-12-02)
- TPU v4 ICI resilience routes traffic around faulty optical links. ([source](https://example.org/v4res), checked 2026-12-04)
- Sources disagree on the v4 figure: one page prints 1200 GBps ([source](https://example.org/a), checked 2026-12-02), another prints 1100 GBps ([source](https://example.org/b), checked 2026-12-02).

## Multislice

- Multislice joins two or more slices that talk over the data-center network; all slices must have the same TPU type, size and topology. ([source](https://example.org/ms), checked 2026-12-02)
- On a preemption or hardware failure of one slice, Cloud TPU recreates it and then restarts the other slices of the Multislice job from its last checkpoint. ([source](https://example.org/ms2), checked 2026-12-02)
- TPU v3 memory: 32 GiB of HBM2 per chip at 900 GBps. ([source](https://example.org/v3mem), checked 2026-12-02)

## Scan

- The Falcon tracer records one event per scan step. ([source](https://example.org/falcon), checked 2026-12-04)
- `scan_layers` replaces a Python loop over identical decoder layers: it traces the first layer and reuses it for the others. ([source](https://example.org/scan), checked 2026-12-03)
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("gate"), {"generations.md": GENERATIONS})


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("How many chips are in a TPU v3 Pod?", "1024 chips"),
        ("What is the number of chips in a TPU v3 Pod?", "1024 chips"),
        ("Must all Multislice slices have the same topology?", "same TPU type, size and topology"),
        ("How many MXUs does each v4 TensorCore have?", "four MXUs"),
        ("Where does scalar prefetch put the first operand?", "SMEM"),
        # the answer line words it as 'preemption' and 'restarts'; 'what happens' frames the question
        ("What happens to a Multislice job when one slice gets preempted?", "restarts the other slices"),
        # the line never says 'bandwidth' but gives a value in its unit
        ("What is the HBM bandwidth of a TPU v3 chip?", "900 GBps"),
    ],
)
def test_a_question_whose_answer_is_in_a_passage_is_answered_with_it(
    tiny: KnowledgeIndex, question: str, expected: str
) -> None:
    reply = ask(tiny, question)
    assert reply.covered, reply.reason
    assert expected in reply.citations[0].quote
    assert reply.citations[0].quote in next(
        p.text for p in reply.passages if p.chunk_id == reply.citations[0].chunk_id
    )


@pytest.mark.parametrize(
    "question",
    [
        "What is the warranty period of a TPU v3 host?",
        "How many transistors does a TPU8 chip have?",
        "How do I enable autoscaling for a Dataflow streaming pipeline?",
        # every name is known and a v3 Pod line matches most words, but none says anything about stacks
        "How many HBM stacks does a TPU v3 chip use?",
        # real chips asked for figures no source gives: the names match, the attribute does not
        "What is the die area of a TPU v3 chip in square millimetres?",
        "What clock frequency does the MXU of a TPU v4 chip run at?",
        # a made-up flag: its common parts ('tpu', 'enable') must not carry it
        "What is the default value of the XLA flag --xla_tpu_enable_turbo_all_reduce?",
        # a count is asked for: the line names the layers scan_layers loops over but gives no number
        "What is the maximum number of layers scan_layers can loop over?",
        # the only digit of the matching line is inside the product's name: 'v3' is not a count
        "How many optical circuit switches join TPU v3 racks?",
        # a name no source mentions ('SLA'), whatever the other words match
        "Which SLA covers the 1024 chips of a TPU v3 Pod?",
        # the cost is asked for: a line about the Pod's chips does not give it
        "How much does a TPU v3 Pod with 1024 chips cost?",
    ],
)
def test_a_question_the_sources_do_not_answer_is_refused(tiny: KnowledgeIndex, question: str) -> None:
    reply = ask(tiny, question)
    assert not reply.covered and reply.citations == [] and reply.closest


def test_a_derived_form_of_a_question_word_meets_the_lines_form(tiny: KnowledgeIndex) -> None:
    for word, form in (("resiliency", "resilience"), ("availability", "available"), ("deployment", "deploy")):
        assert stem(word) == stem(form)
    assert stem("preemptible") == stem("preempted")
    # the line says 'resilience'; the question's 'resiliency' is the same word
    reply = ask(tiny, "What does ICI resiliency route around on TPU v4?")
    assert reply.covered and "faulty optical links" in reply.citations[0].quote
    # the same wording about a generation the line does not name is still refused
    assert not ask(tiny, "What does ICI resiliency route around on TPU v3?").covered


def test_a_name_only_an_unrelated_passage_mentions_makes_a_question_not_covered(tiny: KnowledgeIndex) -> None:
    # 'Falcon' is known to the corpus (a tracer), but no passage about TPU v3 Pods mentions it: a question
    # about a 'v3 Falcon Pod' asks about something else than the v3 Pod the other words match
    question = "How many chips are in a TPU v3 Falcon Pod?"
    found = tiny.search(question, SUPPORT_PASSAGES)
    about = replace(found, passages=[p for p in found.passages if "Falcon" not in p.text])
    assert about.passages and not compose(question, tiny, about).covered
    # the same question without the made-up variant is answered from the same passages
    plain = "How many chips are in a TPU v3 Pod?"
    assert compose(plain, tiny, replace(found, passages=about.passages)).covered


def test_a_line_about_another_generation_does_not_answer(tiny: KnowledgeIndex) -> None:
    # the v3 line matches more of the wording; only the v4 line answers a question about v4
    reply = ask(tiny, "How many matrix multiply units per TensorCore does TPU v4 have?")
    assert reply.covered and "v4" in reply.citations[0].quote
    assert ask(tiny, "How many matrix multiply units does a TPU v9 chip have?").covered is False


def test_a_count_is_a_number_starting_its_word_and_a_way_question_asks_for_none() -> None:
    assert asks_count("How many chips does a v5p Pod have?")
    assert asks_count("What is the number of hosts in a slice?")
    assert not asks_count("How can a kernel read the number of cores of its chip?")
    assert _GIVES_COUNT_RE.search("A Pod has 256 chips.") and _GIVES_COUNT_RE.search("a 2x2x1 slice")
    assert _GIVES_COUNT_RE.search("a 4-chip host") and _GIVES_COUNT_RE.search("eight hosts")
    assert not _GIVES_COUNT_RE.search("TPU v5p racks use bf16 and HBM2e")


def test_name_terms_are_the_words_a_question_capitalises_after_its_first() -> None:
    assert name_terms("What uptime SLA does Google give? Does Trillium have one") == [
        "sla",
        "google",
        "trillium",
    ]
    assert name_terms("Which flags does a v5e chip take?") == []
    # a quoted log line or code is text to match, not names
    assert name_terms('A log says "Retrace Warning Zeta". Does `Foo Bar` run on Trillium?') == ["trillium"]


def test_capitalised_words_of_a_quoted_log_line_are_not_names_to_find(tiny: KnowledgeIndex) -> None:
    reply = ask(tiny, 'My log says "Retrace Warning Zeta". Which layer does scan_layers trace first?')
    assert reply.covered and "traces the first layer" in reply.citations[0].quote
    # the same unknown word written as a name outside the quote is not covered
    assert not ask(tiny, "Which layer does scan_layers trace first on a Zeta host?").covered


def test_a_line_citing_two_sources_is_quoted_whole() -> None:
    text = GENERATIONS.split("## TPU v4")[1]
    spans = candidate_spans(text)
    assert any("1200 GBps" in s and "1100 GBps" in s for s in spans)
    assert not any(s.startswith("([source]") for s in spans)


def test_between_equally_worded_lines_the_one_from_the_passage_closer_in_meaning_wins() -> None:
    # both lines name every question term; the second-ranked passage is the one the encoder found closer
    first = _passage(
        "- SSH into the TPU VM with gcloud; the shell opens on worker 0. ([source](https://a.example/1), checked 2026-12-02)"
    )
    second = _passage(
        "- If SSH to a TPU VM fails, the VM may lack an external IP address. ([source](https://a.example/2), checked 2026-12-02)"
    )
    weights = {"ssh": 5.8, "tpu": 0.3, "vm": 3.9}
    first = first.model_copy(update={"cosine": 0.50})
    second = second.model_copy(update={"cosine": 0.66, "chunk_id": "c2"})
    span = best_span(weights, [first, second])
    assert span is not None and "external IP" in span.text
    # without vectors the retrieval rank decides
    plain = best_span(
        weights, [first.model_copy(update={"cosine": None}), second.model_copy(update={"cosine": None})]
    )
    assert plain is not None and "worker 0" in plain.text


def test_the_cited_passage_is_listed_even_when_it_ranks_below_k() -> None:
    passages = [
        _passage(f"- line {i} of the sheet").model_copy(update={"chunk_id": f"c{i}"}) for i in range(8)
    ]
    cited = Citation(source="x.md:1", quote="line 6 of the sheet", chunk_id="c6")
    reply = Answer(
        question="q", covered=True, answer="a", citations=[cited], passages=passages, mode="hybrid"
    )
    assert [p.chunk_id for p in listed_passages(reply, 3)] == ["c0", "c1", "c2", "c6"]
    assert [p.chunk_id for p in listed_passages(reply.model_copy(update={"citations": []}), 3)] == [
        "c0",
        "c1",
        "c2",
    ]


def test_the_thing_a_what_or_which_question_asks_for_is_its_head_word() -> None:
    from tpu_runtime.knowledge.question_reading import asked_thing

    assert asked_thing("What refund does Google give when a quota request is blocked?") == "refund"
    assert asked_thing("Which XProf tool shows memory over time?") == "tool"  # no auxiliary: past the names
    assert asked_thing("Which documentation holds the flags?") == "documentation"  # not the main verb
    assert asked_thing("Which PCIe generation does TPU v5e use?") == "generation"
    assert asked_thing("How many HBM stacks does a TPU v3 chip use?") == "stacks"
    assert asked_thing("How do I enable the fused mode?") is None
    assert asked_thing("How much does a TPU v3 Pod cost per hour?") == "cost"


@pytest.mark.parametrize(
    "question",
    [
        # every other word matches the v3 Pod line; what is asked for is named nowhere
        "What refund covers the 1024 chips of a TPU v3 Pod?",
        "Which heatsink do the chips of a TPU v3 Pod use?",
    ],
)
def test_a_question_asking_for_something_no_source_names_is_refused(
    tiny: KnowledgeIndex, question: str
) -> None:
    reply = ask(tiny, question)
    assert not reply.covered and "what the question asks for" in reply.reason


def test_an_agent_noun_is_known_through_its_verb(tiny: KnowledgeIndex) -> None:
    # 'picker' is named nowhere, but 'pick' is: the question is not refused for naming it
    reply = ask(tiny, "Which mode picker runs faster than strict eager?")
    assert "what the question asks for" not in reply.reason


def test_a_word_the_question_says_twice_weighs_twice(tiny: KnowledgeIndex) -> None:
    once = _weights(tiny, "How much HBM does a v3 chip have?")
    twice = _weights(tiny, "How much HBM does a v3 chip have, in HBM stacks?")
    assert twice["hbm"] == pytest.approx(2 * once["hbm"])
    assert twice["chip"] == pytest.approx(once["chip"])


def test_auxiliary_verb_forms_are_not_question_terms(tiny: KnowledgeIndex) -> None:
    weights = _weights(tiny, "How do I keep the backend from being loaded, unless told otherwise?")
    assert not {"being", "unless", "told", "otherwise"} & set(weights) and "loaded" in weights


def test_the_action_of_a_how_do_i_question_is_its_verb() -> None:
    from tpu_runtime.knowledge.question_reading import asked_action

    assert asked_action("How do I disable the MXU on TPU v5e?") == "disable"
    assert asked_action("How to pin a kernel to a core?") == "pin"
    # finding out is not an action a line must name; 'use' frames any question
    assert asked_action("How do I read the roofline of a profile?") is None
    assert asked_action("How do I use scalar prefetch?") is None
    assert asked_action("What does the fused mode do?") is None


def test_a_how_do_i_question_needs_a_line_naming_the_action_or_giving_a_command(tiny: KnowledgeIndex) -> None:
    # the fused-mode line describes the mode; it neither says how to disable it nor gives a setting
    refused = ask(tiny, "How do I disable the fused eager mode?")
    assert not refused.covered and "'disable'" in refused.reason
    # the line gives the call in a code span: it answers how to pick the mode
    answered = ask(tiny, "How do I pick the eager mode for a block of code?")
    assert answered.covered and "set_eager_mode" in answered.citations[0].quote


def test_the_answer_reaches_a_line_ranked_below_the_top_eight(tiny: KnowledgeIndex) -> None:
    # the retrieval ranks lines that share the question's wording above the one that answers it; the
    # answer step weighs SUPPORT_PASSAGES passages, so a line in ninth place or lower is still quoted
    question = "Must all Multislice slices have the same topology?"
    found = tiny.search(question, SUPPORT_PASSAGES)
    answering = next(p for p in found.passages if "same TPU type, size and topology" in p.text)
    decoy = Passage(
        text="Multislice slices are listed in the console.",
        source="decoy.md:1",
        score=0.0,
        kind="curated",
        path="decoy.md",
        line=1,
        chunk_id="decoy",
    )
    ahead = [decoy.model_copy(update={"chunk_id": f"decoy-{i}", "line": i}) for i in range(9)]
    assert len(ahead) < SUPPORT_PASSAGES
    reply = compose(question, tiny, replace(found, passages=[*ahead, answering]))
    assert reply.covered and "same TPU type, size and topology" in reply.citations[0].quote


def test_a_line_the_gate_would_reject_ranks_below_one_it_accepts() -> None:
    # the first line shares more of the question's words but gives no number to a 'how many' question;
    # the gate would refuse to quote it, so the span ranking prefers the line that gives the count
    from tpu_runtime.knowledge.answer_gate import span_faults

    question = "How many TensorCores does each v4 chip have?"
    wordy = "Each TPU v4 chip has TensorCores and a large HBM, and v4 chips are joined by ICI links."
    count = "A v4 chip holds 2 TensorCores."
    weights = {"tensorcores": 4.0, "v4": 6.0, "chip": 1.5, "each": 0.5}
    assert span_faults(question, wordy, "x.md") and not span_faults(question, count, "x.md")
    passages = [_passage(f"- {wordy}\n- {count}")]
    span = best_span(weights, passages, ["v4"], question=question)
    assert span is not None and span.text == count
    plain = best_span(weights, passages, ["v4"])  # by words alone the wordy line wins
    assert plain is not None and plain.text == wordy


def test_a_line_giving_some_command_does_not_outrank_the_line_about_the_action() -> None:
    # 'how do I disable X': a line giving an unrelated call passes the gate's action check (it has a
    # code span) but must not win the ranking over the line about X, which the gate then refuses
    from tpu_runtime.knowledge.answer_gate import span_faults

    question = "How do I disable the fused eager mode?"
    about = "The fused mode merges operations on the fly and runs faster than strict eager."
    other = "Pick a mode with `set_eager_mode(EagerMode.DEFER)` around a block of code."
    assert span_faults(question, about, "x.md") and not span_faults(question, about, "x.md", action=False)
    weights = {"disable": 2.5, "fused": 1.4, "eager": 0.9, "mode": 1.4}
    span = best_span(weights, [_passage(f"- {about}\n- {other}")], question=question)
    assert span is not None and span.text == about


def test_a_disable_question_needs_a_line_that_turns_something_off() -> None:
    # 'how do I disable X' is not answered by a line that merely names a call ('reached through
    # `jax.lax.dot_general`'); a setting to false, 0 or off, or the verb itself, answers it
    from tpu_runtime.knowledge.answer_gate import span_faults

    question = "How do I disable the persistent cache?"
    call = "The persistent cache directory can be set with `set_cache_dir(DIR)`."
    off = "Setting `jax_enable_compilation_cache=false` turns the persistent cache off."
    says = "Unset `JAX_COMPILATION_CACHE_DIR` to disable the persistent cache."
    assert span_faults(question, call, "x.md")
    assert not span_faults(question, off, "x.md") and not span_faults(question, says, "x.md")
    # an action that does not negate keeps the looser check: any command or setting may say how
    assert not span_faults("How do I enable the persistent cache?", call, "x.md")


def test_a_what_is_question_quotes_the_line_that_says_what_it_is() -> None:
    # the short limitation line is denser in the question's words; the line opening with the subject
    # as the subject of its verb is what answers 'what is X'
    question = "What is TPU Multislice?"
    limit = "Multislice does not support TPU v3."
    define = "TPU Multislice joins two or more TPU slices that talk over the data-center network (DCN)."
    weights = {"tpu": 0.24, "multislice": 2.37}
    passages = [_passage(f"- {limit}\n- {define}")]
    span = best_span(weights, passages, question=question)
    assert span is not None and span.text == define
    plain = best_span(weights, passages)
    assert plain is not None and plain.text == limit


def test_a_which_flag_question_needs_a_line_that_names_one() -> None:
    from tpu_runtime.knowledge.answer_gate import gives_name, span_faults
    from tpu_runtime.knowledge.question_reading import asks_name

    assert asks_name("Which XLA flag turns on FP4 matmuls?") == "flag"
    assert asks_name("What environment variable selects the PJRT device?") == "variable"
    assert asks_name("Which XProf tool shows memory over time?") is None
    assert asks_name("How do I set a flag?") is None
    # 'what is the command to X' asks for a name too
    assert asks_name("What is the command to install the server on a TPU VM?") == "command"
    assert gives_name("Set `PJRT_DEVICE=TPU` before starting.")
    assert gives_name("Pass --placement-policy instead of the topology flag.")
    assert gives_name("The xla_tpu_enable_latency_hiding_scheduler flag overlaps collectives.")
    assert not gives_name("XLA flags are read once, when the backend starts.")
    assert not gives_name("The per-chip figure holds on multi-host slices.")
    assert not gives_name("Each SparseCore has 16 vector subcores.")  # a product name, not a setting
    question = "Which XLA flag turns on FP4 matmuls on TPU v5e?"
    talk = "XLA flags on TPU v5e are read once, when the backend starts; FP4 matmuls are not among them."
    name = "On TPU v5e the `--xla_tpu_fp4_matmul=true` flag turns on FP4 matmuls."
    assert span_faults(question, talk, "x.md") and not span_faults(question, name, "x.md")
    weights = {"xla": 1.0, "flag": 2.0, "turns": 2.0, "fp4": 6.0, "matmuls": 3.0, "v5e": 5.0}
    span = best_span(weights, [_passage(f"- {talk}\n- {name}")], ["v5e", "fp4"], question=question)
    assert span is not None and span.text == name


def test_the_word_naming_what_is_asked_for_weighs_more_when_ranking_lines() -> None:
    from tpu_runtime.knowledge.question_reading import target_term, target_weights

    assert target_term("How do I find which slice of a global array each device holds?") == "slice"
    assert target_term("What kinds of semaphores can a kernel allocate?") == "semaphores"
    # a question opening with 'which X' picks one X: the answering line names it, not the word X
    assert target_term("Which XProf tool tracks memory use over time?") is None
    # nor is a kind of name a target: 'which variable' is answered by the variable's name
    assert target_term("Where is the compile cache kept, and which variable changes it?") is None
    assert target_term("How many chips does a v5e host have?") == "chips"
    weights = {"find": 2.0, "slice": 1.9, "global": 3.9, "array": 2.9, "device": 2.0, "holds": 4.2}
    question = "How do I find which slice of a global array each device holds?"
    boosted = target_weights(question, weights)
    assert boosted["slice"] == pytest.approx(2 * weights["slice"]) and boosted["array"] == weights["array"]
    # an attribute with a unit is left to the focus check
    assert target_weights("Which bandwidth does ICI have?", {"bandwidth": 2.0}) == {"bandwidth": 2.0}
    shard = "Find which shard of the global array each device holds with `x.sharding`."
    mapped = "`devices_indices_map(shape)` maps every device to the slice of the global array it holds."
    passages = [_passage(f"- {shard}\n- {mapped}")]
    span = best_span(boosted, passages, question=question)
    assert span is not None and span.text == mapped
    plain = best_span(weights, passages, question=question)
    assert plain is not None and plain.text == shard


def test_a_stated_symptom_then_what_should_i_run_is_answered_by_a_command() -> None:
    from tpu_runtime.knowledge.answer_gate import gives_command, span_faults
    from tpu_runtime.knowledge.question_reading import asks_command

    question = 'The server logs "Could not find tuned sizes for key". What should I run?'
    assert asks_command(question)
    assert asks_command("Later kernels keep failing. What do I need to call?")
    assert asks_command("later kernels keep failing. what do i need to call")  # typed without capitals or '?'
    assert not asks_command("What should I run?")  # no situation stated: an ordinary question
    assert not asks_command("The job is slow. What should I check?")
    # a code span repeating the message the user quoted is the symptom, not a command
    echo = "The log line `Could not find tuned sizes for key...` means the kernel fell back to defaults."
    fix = "The server autotuner writes tuned sizes with the `tune-kernels` command."
    assert not gives_command(question, echo) and gives_command(question, fix)
    assert span_faults(question, echo, "x.md") and not span_faults(question, fix, "x.md")
    weights = {"server": 2.0, "logs": 3.0, "find": 4.0, "tuned": 5.0, "sizes": 2.0, "key": 3.0, "run": 2.0}
    passages = [_passage(f"- {echo}\n- {fix}")]
    span = best_span(weights, passages, question=question)
    assert span is not None and span.text == fix
    plain = best_span(weights, passages)  # by words alone the line naming the message wins
    assert plain is not None and plain.text == echo


def test_a_fact_line_with_its_source_note_is_one_candidate_not_two() -> None:
    text = "- `MemorySpace.SEMAPHORE` allocates semaphores for barriers. ([source](https://a.example/s), checked 2026-12-02)"
    assert candidate_spans(text) == ["`MemorySpace.SEMAPHORE` allocates semaphores for barriers."]


GROUPS_SHEET = (
    """\
# Groups sheet

## Groups

"""
    + "".join(
        f"- Groupslice rule {i}: a Groupslice needs quota {i} in the zone. ([source](https://example.org/g{i}), checked 2026-12-04)\n"
        for i in range(12)
    )
    + (
        "- A Groupslice joins two or more slices that talk over the data-center network, one program across them. "
        "([source](https://example.org/def), checked 2026-12-04)\n"
    )
)


def test_a_what_is_question_reaches_and_quotes_the_defining_line(tmp_path: Path) -> None:
    # twelve short lines repeat the name; BM25 ranks the longer defining line below several of them, and
    # the lift for a line opening with the subject puts it first; the answer quotes it
    from tpu_runtime.knowledge import retrieve

    index = lexical_index(tmp_path, {"groups.md": GROUPS_SHEET})
    question = "What is a Groupslice?"
    reply = ask(index, question)
    assert reply.covered and "data-center network" in reply.citations[0].quote
    lifted = index.search(question, SUPPORT_PASSAGES).passages
    rank = next(i for i, p in enumerate(lifted) if "data-center" in p.text)
    original = retrieve.DEFINITION_BOOST
    try:
        retrieve.DEFINITION_BOOST = 1.0
        plain = index.search(question, 50).passages
    finally:
        retrieve.DEFINITION_BOOST = original
    assert rank < next(i for i, p in enumerate(plain) if "data-center" in p.text)


def test_close_forms_of_compounds_and_numbers_with_units_meet() -> None:
    from tpu_runtime.knowledge.question_reading import close_forms

    assert {"allgather", "16", "gb"} <= close_forms(["all-gather", "16gb"])
    assert "32gib" in close_forms(["32", "gib", "hbm"])
    assert not close_forms(["jax.lax.all_gather"])  # a dotted name keeps its own spelling
    assert _present(_terms("Each chip has 16 GB of HBM."), "16gb")
    assert _present(_terms("Each chip has 16GB of HBM."), "16")
    assert _present(_terms("The all-gather runs over ICI."), "allgather")
    assert _present(_terms("The AllGather runs over ICI."), "all-gather")
    assert not _present(_terms("The all-reduce runs over ICI."), "allgather")


def test_the_kind_of_thing_two_names_are_compared_as_weighs_little(tiny: KnowledgeIndex) -> None:
    # 'are X and Y the same chip': a line saying X is called Y answers it without the word 'chip'
    compared = _weights(tiny, "Are v5e and v5p the same chip?")
    plain = _weights(tiny, "How big is a v5e chip?")
    assert compared["chip"] == pytest.approx(0.2 * plain["chip"])
    # 'have the same topology' asks about the topology: it keeps its weight
    asked = _weights(tiny, "Must all slices have the same topology?")
    assert asked["topology"] == pytest.approx(_weights(tiny, "Which topology do slices have?")["topology"])


def test_a_lead_in_before_the_question_does_not_count_against_coverage(tiny: KnowledgeIndex) -> None:
    question = "Must all Multislice slices have the same topology?"
    plain = ask(tiny, question)
    framed = ask(tiny, f"Quick question: {question[0].lower()}{question[1:]}")
    assert plain.covered and framed.covered
    assert framed.citations[0].quote == plain.citations[0].quote
    assert framed.question.startswith("Quick question:")  # the reply echoes what was asked


def test_words_of_the_sentences_around_a_full_question_are_asides() -> None:
    from tpu_runtime.knowledge.question_reading import aside_terms

    # the asking sentence names its subject: the greeting and the thanks are asides
    aside = aside_terms("I am new to TPUs. How big is the boot disk of a TPU VM? Thanks!")
    assert {"new", "tpus", "thanks"} <= aside and not {"boot", "disk", "tpu", "vm"} & aside
    # the asking sentence says only what form the answer takes: the situation is the subject
    assert aside_terms('The server logs "Could not find tuned sizes". What should I run?') == set()
    assert aside_terms("My kernel fails with 'block shape not divisible'. What rule did I break?") == set()
    assert aside_terms("How big is the boot disk of a TPU VM?") == set()


def test_a_thanks_after_the_question_does_not_count_against_coverage(tiny: KnowledgeIndex) -> None:
    question = "Must all Multislice slices have the same topology?"
    plain = ask(tiny, question)
    thanked = ask(tiny, f"{question} Thanks a lot!")
    assert plain.covered and thanked.covered
    assert thanked.citations[0].quote == plain.citations[0].quote


def test_an_adverb_of_a_known_word_weighs_little() -> None:
    corpus = _Corpus({"exact": 3, "recompiles": 4, "vllm": 20, "supply": 2})
    weights = _weights(corpus, "When does vLLM recompile, exactly?")  # type: ignore[arg-type]
    assert weights["exactly"] < 0.5 * weights["recompile"]
    # a word ending in -ly whose stem the sources do not know is no adverb of theirs
    plain = _weights(corpus, "Which power supply does a rack use?")  # type: ignore[arg-type]
    assert plain["supply"] > 0.5 * plain["rack"]


def test_words_after_the_asking_sentence_are_asides_even_when_it_is_short() -> None:
    from tpu_runtime.knowledge.question_reading import aside_terms

    # 'What is TPU Multislice?' names two words only, yet the thanks after it is still an aside
    assert aside_terms("What is TPU Multislice? Thanks a lot!") == {"thanks", "lot"}
    # a follow-up question is the asking sentence; the one before it says what it is about
    assert aside_terms("What is the HBM of v5e? And v5p?") == set()
