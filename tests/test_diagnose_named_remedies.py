"""Remedy families a log names itself without advice words: settings a check compared, the `name=value`
pairs a mismatch printed, the condition a check says it expected. The wordings are written for these tests
(no corpus file's wording)."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_suggestion import find_suggestions, suggestion_fix
from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, load_rules
from tpu_runtime.diagnose.similar_errors import SimilarErrors

COMPARED = [
    ("ValueError: prompt_budget is greater than cache_capacity", ("prompt_budget", "cache_capacity")),
    ("AssertionError: tile_rows (96) must be divisible by num_cores (8).", ("tile_rows", "num_cores")),
    ("RuntimeError: the window_size must not exceed max_positions", ("window_size", "max_positions")),
    (
        "ValueError: Count of stages does not match count of schedules. len(stages)=4, len(schedules)=3",
        ("stages", "schedules"),
    ),
]

NOT_COMPARED = [
    # one side is a number, not a setting
    "ValueError: grad_norm is greater than 1000",
    # a plain word on one side
    "ValueError: warmup_steps is greater than usual",
    # pairs on a line that reports no mismatch
    "INFO: step_count=4, batch_size=8 done",
    # a mismatch whose printed values agree names no difference
    "ValueError: ranks mismatch: left_rank=2, right_rank=2",
]


@pytest.mark.parametrize(("line", "named"), COMPARED)
def test_comparison_names_both_settings(line: str, named: tuple[str, str]) -> None:
    found = find_suggestions([line])
    assert len(found) == 1
    assert found[0].kind == "comparison"
    assert found[0].named == named
    fix = suggestion_fix(found)
    assert all(f"`{name}`" in fix for name in named)
    assert "comparison holds" in fix


@pytest.mark.parametrize("line", NOT_COMPARED)
def test_nearby_wordings_are_no_comparison(line: str) -> None:
    assert [s for s in find_suggestions([line]) if s.kind == "comparison"] == []


def test_advice_is_preferred_to_a_comparison_on_its_line() -> None:
    line = "ValueError: chunk_len is greater than page_len. Set chunk_len to at most page_len."
    found = find_suggestions([line])
    assert [s.kind for s in found] == ["advice"]
    assert found[0].text.startswith("Set chunk_len")


EXPECTED = [
    "RuntimeError: gather(): expected the size of dimension 2 of `src` (7) to be equal to the size of "
    "dimension 0 of `index` (9).",
    "ValueError: Expected every stage to have the same number of microbatches, got 4 and 6",
]

NOT_EXPECTED = [
    # values with no condition
    "AssertionError: token mismatch ('step'). Expected: [3 4]; got: 3.",
    # a passive statement, not a check's condition
    "RuntimeError: the cache was expected to be warm after the first call",
    # a list of accepted values is another family (accepted_values)
    "ValueError: Expected one of ['fast', 'safe'] to be passed",
    # no error on the line
    "INFO: expected the warmup to be over by step 10",
]


@pytest.mark.parametrize("line", EXPECTED)
def test_expectation_quotes_the_condition(line: str) -> None:
    found = find_suggestions(["noise", "more noise", "even more", line])
    assert [s.kind for s in found] == ["expectation"]
    assert found[0].text.lower().startswith("expected")
    assert found[0].text in suggestion_fix(found)
    assert "reshape" in suggestion_fix(found)


@pytest.mark.parametrize("line", NOT_EXPECTED)
def test_nearby_wordings_are_no_expectation(line: str) -> None:
    lines = ["step 1 ok", "step 2 ok", "step 3 ok", line]
    assert [s for s in find_suggestions(lines) if s.kind == "expectation"] == []


def _ablated(text: str) -> tuple[str, str]:
    """The category and fix sub-rule of `text` with the signature patterns and cause-specific sub-rules
    removed (the general fallbacks alone), as `benchmarks/diagnose_corpus.py --ablate` scores them."""
    rules = fallback_rules(load_rules())
    crash = diagnose_log(text, "invented.log", rules, SimilarErrors(()))
    return crash.category, crash.evidence.fix_rule


def test_stated_condition_is_the_fix_when_no_fallback_applies() -> None:
    text = "Traceback (most recent call last):\nValueError: prompt_budget is greater than cache_capacity\n"
    crash = diagnose_log(text, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert crash.category != "unknown"
    assert crash.evidence.fix_rule.endswith("/message_suggestion")
    assert "`prompt_budget`" in crash.fix and "`cache_capacity`" in crash.fix


def test_fallback_naming_facts_comes_before_a_stated_condition() -> None:
    text = (
        "Traceback (most recent call last):\n"
        "RuntimeError: addmm(): expected the dtype of `mat1` to be equal to the dtype of `mat2` "
        "(found BFloat16 and Float)\n"
    )
    category, fix_rule = _ablated(text)
    assert category == "shape_dtype_error"
    assert fix_rule == "shape_dtype_error/from_facts_dtype"


@pytest.mark.parametrize(
    ("log", "named"),
    [
        (
            "NotImplementedError: lowering rule for primitive 'made_up_scan' not found for platform tpu\n",
            "made_up_scan",
        ),
        (
            "ValueError: VectorUnitX is not available on the current device (TPU v4), but the kernel asks "
            "for it\n",
            "VectorUnitX",
        ),
    ],
)
def test_an_op_the_tpu_lacks_is_named_by_the_fallback(log: str, named: str) -> None:
    for rules in (load_rules(), fallback_rules(load_rules())):
        crash = diagnose_log(log, "invented.log", rules, SimilarErrors(()))
        assert crash.category == "unsupported_op"
        assert crash.evidence.fix_rule == "unsupported_op/from_facts_tpu_unsupported_op"
        assert named in crash.fix and "on the host" in crash.fix


@pytest.mark.parametrize(
    "log",
    [
        # a lowering missing on another platform, and the TPU itself missing, are no op the TPU lacks
        "NotImplementedError: lowering rule for primitive 'made_up_scan' not found for platform cuda\n",
        "RuntimeError: TPU is not available on the current device\n",
    ],
)
def test_nearby_wordings_name_no_op_the_tpu_lacks(log: str) -> None:
    crash = diagnose_log(log, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert crash.evidence.fix_rule != "unsupported_op/from_facts_tpu_unsupported_op"


JAX_MISS = (
    "WARNING:jax._src.interpreters.pxla:TRACING CACHE MISS at train.py:40 (step):\n"
    "  for step defined at train.py:31\n"
    "  all previously seen cache keys differ. For the closest previous key:\n"
    "  different input types:\n"
    "  * at tokens, now i32[16,512] and before i32[16,384]\n"
)
TORCH_XLA_CAUSE = (
    "Compilation Analysis: ================================================================================\n"
    "Compilation Analysis: Compilation Cause\n"
    "Compilation Analysis:   most likely user code trying to access tensor value before step end\n"
    "Compilation Analysis: Python Frame Triggered Execution:\n"
    "Compilation Analysis:   item (/opt/venv/lib/torch_xla/core/xla_model.py:77)\n"
)


def test_recompilation_fallbacks_quote_the_change_the_log_names() -> None:
    _, fix_rule = _ablated(JAX_MISS)
    crash = diagnose_log(JAX_MISS, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert fix_rule == "recompilation/from_facts_jax"
    assert "argument tokens is now i32[16,512], before i32[16,384]" in crash.fix
    crash = diagnose_log(TORCH_XLA_CAUSE, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert crash.evidence.fix_rule == "recompilation/from_facts_torch_xla"
    assert "the log names the cause: most likely user code trying to access tensor value" in crash.fix


def test_recompilation_fallbacks_without_the_explanation_quote_nothing() -> None:
    log = "WARNING:jax._src.interpreters.pxla:TRACING CACHE MISS at train.py:40 (step):\n"
    crash = diagnose_log(log, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert crash.evidence.fix_rule == "recompilation/from_facts_jax"
    assert "the log names the change" not in crash.fix


def test_precompiling_a_serving_engine_is_no_torch_compile_recompile() -> None:
    """'Precompile' holds 'recompil': a JAX server's precompiled buckets are not torch.compile's guards."""
    jax_serving = (
        "Explanation for cache miss in jit_forward: never seen input type signature. "
        "Precompile the batch sizes you serve.\n"
    )
    crash = diagnose_log(jax_serving, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert crash.category == "recompilation"
    assert crash.evidence.fix_rule != "recompilation/from_facts_torch_compile"
    torch_compile = "torch._dynamo hit config.recompile_limit (8)\n   function: 'forward' (model.py:12)\n"
    crash = diagnose_log(torch_compile, "invented.log", fallback_rules(load_rules()), SimilarErrors(()))
    assert crash.category == "recompilation"
    assert "TORCH_LOGS=recompiles" in crash.fix


def test_a_method_call_after_a_full_stop_is_no_glued_sentence() -> None:
    assert (
        find_suggestions(["Check failed: client.Fetch({handle}, &out) == OK (Invalid argument: no kernel)"])
        == []
    )
    found = find_suggestions(["RuntimeError: called outside the scope.Please wrap the call in with_scope()."])
    assert [s.text for s in found] == ["Please wrap the call in with_scope()."]


@pytest.mark.parametrize(
    ("line", "kept"),
    [
        ("ValueError: You can only use one of `--gpus`, `--tpu`, `--ipu` at a time.", "--tpu"),
        ("ValueError: Please set only one of use_gpu, use_tpu and use_cpu.", "use_tpu"),
    ],
)
def test_exclusive_options_keep_the_tpu_one(line: str, kept: str) -> None:
    fix = suggestion_fix(find_suggestions([line]))
    assert f"keep only {kept} " in fix


@pytest.mark.parametrize(
    "line",
    [
        # no TPU option among them
        "ValueError: You can only use one of `--gpus`, `--ipu` at a time.",
        # a TPU-sized option is not the TPU's switch
        "ValueError: You can only use one of `--tpu_cores`, `--devices` at a time.",
        # advice naming the TPU option without excluding the others
        "ValueError: Please pass --tpu and --bf16 together.",
    ],
)
def test_other_option_lists_keep_nothing(line: str) -> None:
    found = find_suggestions([line])
    assert found
    assert "keep only" not in suggestion_fix(found)
