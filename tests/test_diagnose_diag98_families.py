"""Round diag98's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a no-compile guard that fired is a recompilation (warm-up did not cover a shape or
sharding; `recompilation/compile_guard_fired`), and a paged KV cache whose page pool has no free page left
is device memory running out (`hbm_oom/kv_page_pool_exhausted`) (docs/diagnose-accuracy.md, "Round
diag98")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


GUARD_FIRED = (
    "RuntimeError: XLA compilation is not allowed after warm-up (step 1207)",
    "AssertionError: a compile was triggered inside a region where compiling is forbidden",
    "RuntimeError: Compilation of jit(decode_step) is disallowed while serving",
)


def test_a_no_compile_guard_that_fired_is_a_recompilation() -> None:
    for line in GUARD_FIRED:
        assert _cue(line) == "recompilation", line
    crash = assert_fixed_by(GUARD_FIRED[0] + "\n", "recompilation", "compile_guard_fired", "warm-up")
    assert "VLLM_XLA_CHECK_RECOMPILATION=0" in crash.fix


def test_forbidden_words_without_a_compilation_are_not_a_guard() -> None:
    for line in (
        "PermissionError: [Errno 13] writing /gcs/ckpt is forbidden for this service account",
        "ValueError: negative padding is not allowed for dimension 2",
        "RuntimeError: this operation is disallowed while the mesh is being rebuilt",
    ):
        assert _cue(line) != "recompilation", line
        assert_not_claimed(line + "\n", "compile_guard_fired")
    # a compile error that names no guard keeps its compile reading
    assert_not_claimed("INTERNAL: XLA compilation failed: unsupported custom call\n", "compile_guard_fired")


PAGE_POOL_EMPTY = (
    "RuntimeError: paged cache: out of free pages while allocating for sequence 17",
    "AllocationError: no free pages left in the KV cache pool (512 in use)",
    "ValueError: ran out of KV cache pages during allocation of slot 3",
)


def test_a_page_pool_with_no_free_page_is_device_memory() -> None:
    for line in PAGE_POOL_EMPTY:
        assert _cue(line) == "hbm_oom", line
    crash = assert_fixed_by(PAGE_POOL_EMPTY[0] + "\n", "hbm_oom", "kv_page_pool_exhausted", "max_pages")
    assert "max_num_seqs" in crash.fix


def test_page_words_that_are_no_exhausted_pool_keep_their_reading() -> None:
    for line in (
        # a page-size setting that must divide a length is a shape check, not a full pool
        "ValueError: max_model_len 1000 must be divisible by page_size 64",
        # pages named in progress output
        "INFO allocated 2048 free pages for the KV cache (page_size=16)",
        # a web page that could not be fetched
        "HTTPError: 404 no pages found at https://example.com/docs",
    ):
        assert _cue(line) != "hbm_oom", line
        assert_not_claimed(line + "\n", "kv_page_pool_exhausted")
