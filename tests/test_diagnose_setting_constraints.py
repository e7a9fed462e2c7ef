"""What one named setting must be: a library's check of its own configuration ("x_ratio must be positive, got
0.0") names the setting to change, and that comes before the library catch-all's advice to upgrade the
library (docs/diagnose-accuracy.md, "General mechanisms"). Wordings written for these tests, each family with
a nearby wording it must not claim."""

from __future__ import annotations

import pytest

from tests.crash_helpers import ablated_verdict, library_trace
from tpu_runtime.diagnose.crash_suggestion import find_suggestions

# a line of a check and the setting it must name
CONSTRAINED = [
    ("ValueError: prefill_chunk_ratio must be positive, got -0.5", "prefill_chunk_ratio"),
    ("ValueError: MY_LOADER_RETRY_SECONDS must be non-negative, got -3.", "MY_LOADER_RETRY_SECONDS"),
    ("ValueError: --draft-window must be at least 2 when speculation is on.", "--draft-window"),
    ("AssertionError: adapter_rank is required when --merge-adapters is enabled", "adapter_rank"),
    ("ValueError: --kv-offload requires --host-pool-gb > 0; got host_pool_gb=0.", "--host-pool-gb"),
    ("ValueError: `shard_count` cannot be zero.", "shard_count"),
    ("RuntimeError: cache.page_tokens should be a power of two, got 100", "cache.page_tokens"),
]

# nearby wordings: no setting named (plain words), a size the program computed, a value with no constraint,
# an informational line
NOT_CONSTRAINED = [
    "ValueError: the learning rate must be positive, got -0.1",
    "ValueError: Input must be a 2-D array, got shape (3,).",
    "ValueError: prefill_chunk_ratio was -0.5 at step 12.",
    "INFO: warmup_steps must be at least 1 for this schedule; using 1.",
]


@pytest.mark.parametrize(("line", "setting"), CONSTRAINED)
def test_what_a_named_setting_must_be_is_read(line: str, setting: str) -> None:
    found = find_suggestions([line])
    assert found and found[0].kind == "constraint", found
    assert found[0].named[0] == setting


@pytest.mark.parametrize("line", NOT_CONSTRAINED)
def test_a_line_naming_no_setting_or_no_constraint_is_not_read(line: str) -> None:
    assert all(s.kind != "constraint" for s in find_suggestions([line]))


def test_a_boolean_refused_at_its_value_names_the_other_value() -> None:
    found = find_suggestions(
        ["NotImplementedError: Option `eager_flush=True` with `replicas` set is not supported."]
    )
    assert found and found[0].kind == "constraint" and found[0].named == ("eager_flush=False",), found
    # a value that is not a boolean names no other value
    other = find_suggestions(
        ["NotImplementedError: Option `mode=fast` with `replicas` set is not supported."]
    )
    assert all(s.kind != "constraint" for s in other)


def _library_trace(message: str) -> str:
    return library_trace(message, "serve.py", "invented_server")


def test_a_library_check_of_its_own_setting_names_the_setting_not_an_upgrade() -> None:
    category, rule, fix = ablated_verdict(
        _library_trace("ValueError: --prefix-share requires --prefetch-pages > 0; got prefetch_pages=0.")
    )
    assert category == "runtime_init_failure"
    assert rule == "runtime_init_failure/message_suggestion"
    assert "`--prefetch-pages`" in fix and "pip install -U" not in fix


def test_a_library_probe_without_a_setting_keeps_the_library_advice() -> None:
    category, rule, fix = ablated_verdict(
        _library_trace("RuntimeError: No TPU devices were found by the server.")
    )
    assert category == "runtime_init_failure"
    assert rule == "runtime_init_failure/from_facts_library_check"
    assert "pip install -U invented-server" in fix


# ------------------------------------------------- advice after its condition, and two-word orders

CONDITIONAL_ADVICE = [
    (
        "ValueError: cannot fold the replicated rows. If every row is unique across hosts, set "
        "dedup_mode='global', else pass a custom merge function.",
        "dedup_mode",
    ),
    (
        "RuntimeError: the pool has no free slot. If the pool is shared, then raise --slot-count.",
        "--slot-count",
    ),
]

# a symptom the reader may be seeing (a hint printed for every failure), and a condition with no advice
NOT_CONDITIONAL_ADVICE = [
    "RuntimeError: step failed. If you are seeing host memory errors, set PREFETCH_WORKERS=1.",
    "ValueError: the pool has no free slot. If the pool is shared, the other job holds it.",
]


@pytest.mark.parametrize(("line", "named"), CONDITIONAL_ADVICE)
def test_advice_after_the_condition_it_applies_under_is_read(line: str, named: str) -> None:
    found = find_suggestions([line])
    assert found and found[0].kind == "advice" and named in found[0].named, found


@pytest.mark.parametrize("line", NOT_CONDITIONAL_ADVICE)
def test_a_symptom_clause_or_a_bare_condition_is_no_advice(line: str) -> None:
    assert not [s for s in find_suggestions([line]) if s.kind == "advice"]


@pytest.mark.parametrize(
    ("line", "named"),
    [
        (
            "NotImplementedError: sliding windows need the paged pool; remove MY_POOL_DISABLE=1.",
            "MY_POOL_DISABLE=1",
        ),
        ("RuntimeError: the compile cache is read-only here: pass --no-cache-write", "--no-cache-write"),
        ("ValueError: eager mode cannot be traced; set trace_mode=lazy.", "trace_mode=lazy"),
    ],
)
def test_a_two_word_order_naming_a_setting_is_advice(line: str, named: str) -> None:
    found = find_suggestions([line])
    assert found and found[0].kind == "advice" and found[0].named == (named,), found


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: the worker went away; try again.",
        "ValueError: the tokenizer is missing; use it.",
        "RuntimeError: the cache is stale; remove cache_dir.",  # a name without the value it is set to
    ],
)
def test_a_two_word_order_naming_no_setting_is_not_advice(line: str) -> None:
    assert not [s for s in find_suggestions([line]) if s.kind == "advice"]


# ------------------------------------------------------------------------ long lines stay linear


def test_long_error_lines_without_a_full_stop_are_read_quickly() -> None:
    # "... may help" was tried from every position of a line: 20 error lines of 3,900 characters with no full
    # stop took about 36 s; from sentence starts only they take milliseconds
    import time

    words = " ".join(f"step_{i} needs shard_{i}" for i in range(400))
    lines = [f"ValueError: {words}"[:3900] for _ in range(20)]
    start = time.perf_counter()
    assert find_suggestions(lines) == []
    assert time.perf_counter() - start < 3.0


@pytest.mark.parametrize(
    ("line", "text"),
    [
        (
            "RuntimeError: the pool is full. Raising pool_pages may help here.",
            "Raising pool_pages may help here",
        ),
        (
            "RuntimeError: pool full (v1.2). A larger max_slots is recommended",
            "A larger max_slots is recommended",
        ),
    ],
)
def test_what_would_help_is_still_read_from_a_sentence_start(line: str, text: str) -> None:
    found = find_suggestions([line])
    assert found and found[0].text == text, found
