"""Round diag154's crash-rule fixes and weak cues, with wordings written here (not the corpus files) and
nearby wordings they must not claim: jaxlib's compile-option setters refusing a compiler_options value's
type, and the StableHLO verifier refusing a composite name without a namespace
(`crash_rules/xla_compile_error.yaml`, `crash_cues/compiler_checks.yaml`; docs/diagnose-accuracy.md,
"Round diag154")."""

from __future__ import annotations

from crash_helpers import assert_fixed_by, assert_not_claimed

from tpu_runtime.diagnose.crash_cues import weak_vote


def compile_trace(message: str) -> str:
    """An ahead-of-time compile of an invented training step, failing in jax's compile options."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/aot.py", line 41, in <module>\n'
        "    compiled = jax.jit(train_step).lower(state, batch).compile(compiler_options=opts)\n"
        '  File "/opt/venv/lib/python3.12/site-packages/jax/_src/compiler.py", line 219,'
        " in get_compile_options\n"
        f"{message}\n"
    )


BUILD_OPTION_REFUSAL = (
    "TypeError: (): incompatible function arguments. The following argument types are supported:\n"
    "    1. (self, arg: int, /) -> jaxlib._jax.ExecutableBuildOptions\n"
    "\n"
    "Invoked with types: jaxlib._jax.ExecutableBuildOptions, float"
)
"""An invented int-typed build option (an effort level) given a float."""

OVERRIDE_REFUSAL = (
    "TypeError: (): incompatible function arguments. The following argument types are supported:\n"
    "    1. (self, arg: collections.abc.Sequence[tuple[str, str | bool | int | float]], /) -> None\n"
    "\n"
    "Invoked with types: jaxlib._jax.CompileOptions, list"
)


def test_a_build_option_of_the_wrong_type_names_both_types() -> None:
    text = compile_trace(BUILD_OPTION_REFUSAL)
    crash = assert_fixed_by(text, "xla_compile_error", "build_option_value_type", "memory_fitting_level")
    assert "it takes int, got float" in crash.fix, crash.fix


def test_an_override_value_of_the_wrong_type_is_sent_to_leaving_unset_options_out() -> None:
    text = compile_trace(OVERRIDE_REFUSAL)
    crash = assert_fixed_by(text, "xla_compile_error", "compile_option_override_value_type", "is not None")
    assert "str(path)" in crash.fix, crash.fix


def test_other_bindings_refusing_their_arguments_are_not_claimed() -> None:
    # pybind11's wording on another native function (a torch_xla binding of another release) stays with the
    # version rules; neither compile-option fix may claim it.
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/job/train.py", line 12, in <module>\n'
        "    xm.rendezvous('init')\n"
        "TypeError: _xla_rendezvous(): incompatible function arguments. The following argument types are"
        " supported:\n"
        "    1. (arg0: int, arg1: str, arg2: str, arg3: list[int]) -> list[bytes]\n"
        "\n"
        "Invoked with: 0, 'init', b'', []\n"
    )
    for sub_rule in ("build_option_value_type", "compile_option_override_value_type"):
        assert_not_claimed(text, sub_rule)
    vote = weak_vote(text.splitlines())
    assert vote is None or vote.category != "xla_compile_error", vote


def test_the_weak_cues_read_a_compile_option_type_refusal_as_a_compile_error() -> None:
    # The pybind11 wording alone leans to version_mismatch; the setter's class names a compiler_options value.
    vote = weak_vote(compile_trace(OVERRIDE_REFUSAL).splitlines())
    assert vote is not None and vote.category == "xla_compile_error", vote


COMPOSITE_REFUSAL = (
    "ValueError: Cannot lower jaxpr with verifier errors:\n"
    "\tname must be a valid namespaced op name, i.e. it must match the following regular expression:"
    ' ^[a-zA-Z][a-zA-Z0-9_]*([.][a-zA-Z0-9_$]+)+$ e.g. "my_namespace.my_op"\n'
    '\t\tat loc("jit(layer)/composite"(callsite("layer"("/srv/job/model.py":30:9 to :40))))\n'
    "Define JAX_DUMP_IR_TO to dump the module."
)


def test_a_composite_without_a_namespace_is_sent_to_a_dotted_name() -> None:
    text = compile_trace(COMPOSITE_REFUSAL)
    assert_fixed_by(text, "xla_compile_error", "composite_name_not_namespaced", "my_project.")
    vote = weak_vote(text.splitlines())
    assert vote is not None and vote.category == "xla_compile_error", vote


def test_other_verifier_refusals_are_not_sent_to_renaming() -> None:
    # Another StableHLO verifier refusal (a custom call's layout) and an MLIR parse of an unregistered op are
    # not the namespaced-name check.
    for message in (
        "ValueError: Cannot lower jaxpr with verifier errors:\n\t'stablehlo.custom_call' op incorrect layout"
        " dense<0> : tensor<1xindex> for type 'tensor<8x8xf32>', layout must be a permutation of [0, 2)",
        "error: unregistered operation 'my_ns.my_op' found in dialect ('my_ns') that does not allow unknown"
        " operations",
    ):
        assert_not_claimed(compile_trace(message), "composite_name_not_namespaced")
