# ruff: noqa: E501  (fact-sheet lines are long by design)
"""Two names a question gives that a line must share to answer it: the TPU generations of a 'which TPU
generations ...' question (a line naming none does not say which ones) and the model family of a recipe
or setting asked about (the Qwen3 recipe's sampling settings are not the Llama 3 recipe's), and a vendor
written in capitals ('on AMD GPUs'), held as a rare name that the quoted passage must name. Hand-made
sheets on a tiny lexical index: refused from a line sharing the other words, answered once the line
giving the value is added."""

from __future__ import annotations

import pytest

from tests.kb_helpers import assert_quoted, assert_refused, lexical_index
from tpu_runtime.knowledge.answer_gate import rare_names, span_faults
from tpu_runtime.knowledge.question_reading import asks_generation, model_families
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

LATE = """\
# Tiny Gridlet compiler sheet

## Gridlet late binding

- A Gridlet async start can begin before all operands are ready through late binding in hardware, so the copy overlaps the compute. ([source](https://example.org/late), checked 2026-12-06)
"""
LATE_ANSWER = """\
# Gridlet late binding support

## Gridlet late binding support

- Late binding of Gridlet async operands in hardware runs on TPU v5p and TPU v6e only. ([source](https://example.org/late-gens), checked 2026-12-06)
"""
LATE_QUESTION = "Which TPU generations support late binding of Gridlet async operands in hardware?"

RECIPE = """\
# Tiny Gridlet serving sheet

## Gridlet recipes

- The Gridlet Qwen3 recipe recommends temperature 0.7 and top_p 0.95 for sampling. ([source](https://example.org/qwen), checked 2026-12-06)
"""
RECIPE_ANSWER = """\
# Gridlet Llama recipe

## Gridlet Llama recipe

- The Gridlet Llama 3 recipe recommends temperature 0.6 and top_p 0.9 for sampling. ([source](https://example.org/llama), checked 2026-12-06)
"""
RECIPE_QUESTION = "What temperature and top_p does the Gridlet Llama 3 recipe recommend for sampling?"


def test_which_generations_is_asked_by_its_usual_wordings() -> None:
    assert asks_generation(LATE_QUESTION)
    assert asks_generation("On which TPUs does the SparseCore offload run?")
    assert asks_generation("Which TPU versions have 2 TensorCores per chip?")
    # a question naming one generation asks something of it, not which ones
    assert not asks_generation("Which flag enables late binding on TPU v5p?")
    assert not asks_generation("How many chips does a v6e host hold?")


@pytest.fixture(scope="module")
def late_bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("generations-bare"), {"late.md": LATE})


@pytest.fixture(scope="module")
def late_full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("generations-full"), {"late.md": LATE, "gens.md": LATE_ANSWER}
    )


def test_a_line_naming_no_generation_is_refused(late_bare: KnowledgeIndex) -> None:
    assert_refused(late_bare, LATE_QUESTION, "asks which TPU generations")


def test_a_line_naming_the_generations_answers(late_full: KnowledgeIndex) -> None:
    assert_quoted(late_full, LATE_QUESTION, "TPU v5p and TPU v6e only")


def test_model_families_are_read_from_their_written_forms() -> None:
    assert model_families("Serve Qwen/Qwen3-Coder-480B with vllm") == {"qwen"}
    assert model_families("SGL-JAX's Llama 3.3 70B recipe") == {"llama"}
    assert model_families("gpt-oss-120b and Gemma2 on one host") == {"gpt", "gemma"}
    # a family name inside another word or a source URL is none
    assert model_families("philosophy of a CodeLlama fork") == set()
    assert model_families("see ([source](https://example.org/qwen3))") == set()


def test_a_line_about_another_family_is_a_fault_and_one_naming_none_is_not() -> None:
    fault = "asks about llama models"
    qwen = "The Qwen3 recipe recommends temperature 0.7."
    assert any(fault in f for f in span_faults(RECIPE_QUESTION, qwen, "Recipes"))
    for line in (
        "The Llama 3 recipe recommends temperature 0.6.",
        "Every recipe samples at temperature 0.6.",
    ):
        assert not [f for f in span_faults(RECIPE_QUESTION, line, "Recipes") if fault in f], line


@pytest.fixture(scope="module")
def recipe_bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(tmp_path_factory.mktemp("families-bare"), {"recipes.md": RECIPE})


@pytest.fixture(scope="module")
def recipe_full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    return lexical_index(
        tmp_path_factory.mktemp("families-full"), {"recipes.md": RECIPE, "llama.md": RECIPE_ANSWER}
    )


def test_another_familys_recipe_is_refused(recipe_bare: KnowledgeIndex) -> None:
    assert_refused(recipe_bare, RECIPE_QUESTION, "asks about llama models")


def test_the_familys_own_recipe_answers(recipe_full: KnowledgeIndex) -> None:
    assert_quoted(recipe_full, RECIPE_QUESTION, "Llama 3 recipe recommends temperature 0.6")


VENDOR = """\
# Tiny Gridlet parallelism sheet

## Gridlet context parallelism

- Gridlet context parallelism runs ring attention on GPUs through cuDNN kernels and on TPUs through Splash kernels. ([source](https://example.org/ring), checked 2026-12-06)
"""
VENDOR_ANSWER = """\
# Gridlet on AMD

## Gridlet on AMD GPUs

- On AMD GPUs Gridlet context parallelism runs ring attention through ROCm kernels. ([source](https://example.org/amd), checked 2026-12-06)
"""
FILLER = "\n".join(
    f"# Gridlet note {i}\n\n## Gridlet note {i}\n\n- Gridlet note {i} covers topic {i} of the Gridlet host. ([source](https://example.org/n{i}), checked 2026-12-06)\n"
    for i in range(100)
)
VENDOR_QUESTION = "How do I run Gridlet context parallelism with ring attention on AMD GPUs?"


def test_a_vendor_in_capitals_counts_as_a_rare_name_and_other_acronyms_do_not(
    vendor_full: KnowledgeIndex,
) -> None:
    names = ["amd", "gpus", "gridlet"]
    assert rare_names(vendor_full, VENDOR_QUESTION, names) == ["amd"]
    # 'GPUs' is an acronym that sources also write out; it pins nothing down
    assert rare_names(vendor_full, "How many GPUs does Gridlet use?", ["gpus"]) == []


@pytest.fixture(scope="module")
def vendor_bare(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    # AMD must be a name some source uses (else another check refuses), in few of the passages
    sheets = {
        "ring.md": VENDOR,
        "filler.md": FILLER,
        "amd.md": VENDOR_ANSWER.replace("ring attention", "sort"),
    }
    return lexical_index(tmp_path_factory.mktemp("vendor-bare"), sheets)


@pytest.fixture(scope="module")
def vendor_full(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeIndex:
    sheets = {"ring.md": VENDOR, "filler.md": FILLER, "amd.md": VENDOR_ANSWER}
    return lexical_index(tmp_path_factory.mktemp("vendor-full"), sheets)


def test_a_line_from_a_passage_never_naming_the_vendor_is_refused(vendor_bare: KnowledgeIndex) -> None:
    assert_refused(vendor_bare, VENDOR_QUESTION, "never names amd")


def test_the_vendors_own_line_answers(vendor_full: KnowledgeIndex) -> None:
    assert_quoted(vendor_full, VENDOR_QUESTION, "On AMD GPUs")
