"""Identifier-aware BM25: exact names typed by the user find their passage."""

from __future__ import annotations

from tests.subprocess_support import python_output
from tpu_runtime.knowledge.lexical import LexicalIndex, tokenize


def test_tokenize_keeps_whole_identifiers_and_parts() -> None:
    tokens = tokenize(
        "Set XLA_FLAGS=--xla_tpu_enable_latency_hiding_scheduler=true and torch.tpu.pallas.jax_op"
    )
    for expected in (
        "xla_flags",
        "xla_tpu_enable_latency_hiding_scheduler",
        "latency",
        "torch.tpu.pallas.jax_op",
        "jax_op",
        "pallas",
    ):
        assert expected in tokens
    assert "and" not in tokens
    assert "prefetchscalargridspec" in tokenize("PrefetchScalarGridSpec")
    assert "scalar" in tokenize("PrefetchScalarGridSpec")


def test_exact_flag_lookup_beats_prose_about_the_same_topic() -> None:
    texts = [
        "The latency hiding scheduler overlaps collectives with compute on TPUs in general.",
        "Flag --xla_tpu_enable_latency_hiding_scheduler=true turns the scheduler on.",
        "Scheduler options for latency and hiding are described elsewhere in this guide.",
        "Unrelated text about HBM capacity.",
    ]
    index = LexicalIndex.build(texts)
    assert index.top("--xla_tpu_enable_latency_hiding_scheduler", 2)[0][0] == 1
    assert index.top("HBM capacity", 1)[0][0] == 3
    assert index.top("zzzz unknown", 3) == []


def test_importing_bm25s_does_not_import_jax() -> None:
    code = (
        "import sys, importlib.util; from tpu_runtime.knowledge.lexical import _bm25s; _bm25s(); "
        "print('jax' in sys.modules, importlib.util.find_spec('jax') is not None)"
    )
    assert python_output(code).split() == ["False", "True"]  # not imported, and still importable afterwards


def test_a_what_is_question_names_the_subject_a_defining_line_opens_with() -> None:
    from tpu_runtime.knowledge.lexical import defines, definition_subject

    assert definition_subject("What is TPU Multislice?") == ("tpu", "multislice")
    assert definition_subject("What are megacore chips used for?") == ("megacore", "chips")
    assert definition_subject("What does pltpu.emit_pipeline do?") == ("pltpu.emit_pipeline",)
    # a closing place ('on TPU', 'in JAX') is not part of the name
    assert definition_subject("What is Multislice on TPU?") == ("multislice",)
    assert definition_subject("What is megacore in TPU v4?") == ("megacore",)
    # an attribute or a situation is not a name
    assert definition_subject("What is the peak of a v4 chip?") is None
    assert definition_subject("What is wrong when the compile hangs for an hour on a pod?") is None
    subject = ("tpu", "multislice")
    assert defines(subject, "- TPU Multislice joins two or more slices over DCN.")
    assert defines(("megacore", "chips"), "A megacore chip is a chip whose two TensorCores share one device.")
    assert defines(("pltpu.emit_pipeline",), "`pltpu.emit_pipeline` runs a nested pipeline inside a kernel.")
    # a negation, a longer name or a line that only mentions the subject later is no definition
    assert not defines(("multislice",), "Multislice does not support TPU v3.")
    assert not defines(subject, "A TPU Multislice JobSet needs one node pool per slice.")
    assert not defines(subject, "A TPU Multislice workload spans slices.")
    assert not defines(subject, "Every slice of a TPU Multislice job runs the same program.")


def test_a_place_after_the_subject_may_take_an_article() -> None:
    from tpu_runtime.knowledge.lexical import defines, definition_subject

    # 'on a TPU chip' places the name as 'on TPU' does
    assert definition_subject("What are the SparseCores on a TPU chip for?") == ("sparsecores",)
    assert definition_subject("What is megacore on the v4 chip?") == ("megacore",)
    # a line naming the subject in its place before the copula defines it
    assert defines(("sparsecores",), "The SparseCores on a TPU chip are for sparse operations.")
    assert defines(("megacore",), "Megacore in TPU v4 is two TensorCores seen as one device.")
    # not with another verb, nor when the copula comes too late to be the subject's
    assert not defines(("sparsecores",), "SparseCores on TPU v5p do not run matmuls.")
    assert not defines(("sparsecores",), "SparseCores on a chip work beside the TensorCores that are busy.")


def test_a_defining_line_may_expand_its_subject_in_parentheses() -> None:
    from tpu_runtime.knowledge.lexical import defines

    assert defines(("ici",), "ICI (inter-chip interconnect) links the chips of one slice.")
    assert not defines(("ici",), "ICI (inter-chip interconnect) bandwidth per chip is 400 GBps.")


def test_a_plain_lead_in_before_a_colon_is_not_part_of_the_question() -> None:
    from tpu_runtime.knowledge.lexical import strip_preamble

    assert (
        strip_preamble("Quick question: how big is a TPU VM's boot disk?")
        == "how big is a TPU VM's boot disk?"
    )
    assert strip_preamble("I was wondering: what is ICI?") == "what is ICI?"
    # a lead-in that names something, or a long one (an error message), is part of the question
    assert strip_preamble("JAX: how do I shard an array?") == "JAX: how do I shard an array?"
    assert strip_preamble("Pallas on TPU: which dtypes work?") == "Pallas on TPU: which dtypes work?"
    assert strip_preamble("XProf: which tool shows memory?") == "XProf: which tool shows memory?"
    error = "Mosaic failed to compile TPU kernel: unsupported shape cast"
    assert strip_preamble(error) == error
    assert (
        strip_preamble("How do I set XLA_FLAGS=--xla_dump_to:/tmp?")
        == "How do I set XLA_FLAGS=--xla_dump_to:/tmp?"
    )
