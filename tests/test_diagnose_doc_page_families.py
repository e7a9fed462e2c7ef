"""Errors documentation pages print with their fix: a backend refusing a setting's value, a tokenizer that
cannot be loaded, a jitted argument that is not an array, a kernel block a size is not aligned to, and an
image build context with absolute symbolic links.

The lines are written for these tests (not corpus files): the wordings of the round's dev logs with other
names and values, so each case checks that the rule keys on the message's fixed words and that the fix
quotes this log's values rather than the corpus file's.
"""

from __future__ import annotations

from crashlog_support import diagnosed_as

from tpu_runtime.diagnose.crashlog import diagnose_log


def test_a_backend_refusing_a_page_size_asks_for_a_larger_page() -> None:
    crash = diagnosed_as(
        "AssertionError: FlashMLA backend does not support page_size=8",
        "runtime_init_failure",
        "runtime_init_failure/backend_refuses_page_size",
    )
    assert "page_size=8" in crash.fix
    assert "FlashMLA" in crash.fix
    assert "--page-size" in crash.fix


def test_a_backend_refusing_another_setting_names_that_setting_and_value() -> None:
    crash = diagnosed_as(
        "ValueError: Ragged attention backend does not support max_num_seqs=1",
        "runtime_init_failure",
        "runtime_init_failure/backend_refuses_setting_value",
    )
    assert "max_num_seqs=1" in crash.fix
    assert "--page-size" not in crash.fix


def test_a_missing_tokenizer_names_the_model_and_the_tokenizer_options() -> None:
    text = (
        "OSError: Can't load tokenizer for 'org/checkpoint-without-tokenizer'. If you were trying to load it "
        "from 'https://huggingface.co/models', make sure you don't have a local directory with the same name."
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/tokenizer_files_missing")
    assert "org/checkpoint-without-tokenizer" in crash.fix
    assert "--tokenizer-path" in crash.fix


def _abstract_array_error(function: str, type_name: str, path: str) -> str:
    return (
        f"TypeError: Error interpreting argument to <function {function} at 0x7f00deadbeef> as an abstract "
        f"array. The problematic value is of type <class '{type_name}'> and was passed to the function at "
        f"path {path}.\nThis typically means that a jit-wrapped function was called with a non-array "
        "argument, and this argument was not marked as static using the static_argnums or static_argnames "
        "parameters of jax.jit."
    )


def test_a_jitted_method_names_self_and_the_three_ways_out() -> None:
    crash = diagnosed_as(
        _abstract_array_error("Trainer.step", "model.Trainer", "self"),
        "shape_dtype_error",
        "shape_dtype_error/jitted_method_self_argument",
    )
    assert "Trainer.step" in crash.fix
    assert "model.Trainer" in crash.fix
    assert "static_argnums=0" in crash.fix
    assert "register_pytree_node_class" in crash.fix


def test_another_non_array_argument_names_its_path() -> None:
    crash = diagnosed_as(
        _abstract_array_error("loss_fn", "config.Settings", "cfg"),
        "shape_dtype_error",
        "shape_dtype_error/jit_argument_not_an_array",
    )
    assert "path cfg" in crash.fix
    assert "config.Settings" in crash.fix


def test_a_fused_moe_intermediate_size_off_its_block_asks_for_the_other_backend() -> None:
    crash = diagnosed_as(
        "ValueError: Expected intermediate_size=1408 to be aligned to bf=256",
        "unsupported_op",
        "unsupported_op/fused_moe_intermediate_unaligned",
    )
    assert "intermediate_size=1408" in crash.fix
    assert "256" in crash.fix
    assert "--moe-backend epmoe" in crash.fix


def test_another_size_off_a_kernel_block_names_the_size_and_the_block() -> None:
    crash = diagnosed_as(
        "ValueError: Expected head_dim=96 to be aligned to bd=128",
        "unsupported_op",
        "unsupported_op/kernel_block_unaligned_size",
    )
    assert "head_dim" in crash.fix
    assert "96" in crash.fix
    assert "128" in crash.fix
    assert "epmoe" not in crash.fix


def test_absolute_symlinks_in_a_build_context_point_at_dockerignore() -> None:
    text = "ERROR: Found symbolic links with absolute paths in the build context:\n./venv/bin/python3\n"
    crash = diagnose_log(text, "build.log")
    assert crash.category == "unknown"
    assert "build_context_absolute_symlinks" in crash.evidence.fix_rule
    assert ".dockerignore" in crash.fix
