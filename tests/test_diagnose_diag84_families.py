"""Round diag84's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a 16-bit float type an op refuses by name is computed in float32 for that op, a block of
"Suggested fixes:" assignments under a message is its own remedy, a dimension declared dynamic that the traced
code specialized is a shape error, and a backend named that no imported package registered is a start-up
failure whose fix is the import that registers it (docs/diagnose-accuracy.md, "Round diag84")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_a_low_precision_type_an_op_refuses_is_computed_in_float32() -> None:
    text = "RuntimeError: cholesky_solve: Low precision dtypes not supported. Got Half\n"
    category, rule, fix = ablated_verdict(text)
    assert category == "shape_dtype_error"
    assert rule.endswith("/from_facts_low_precision_refused")
    assert "float32" in fix
    also = "RuntimeError: \"histogram_cpu\" not implemented for 'BFloat16'\n"
    assert ablated_verdict(also)[1].endswith("/from_facts_low_precision_refused")
    # two operands that disagree are a mismatch to cast to one dtype, not a type the op lacks
    mismatch = "RuntimeError: expected scalar type BFloat16 but found Float\n"
    assert not ablated_verdict(mismatch)[1].endswith("/from_facts_low_precision_refused")


def test_suggested_fixes_under_a_message_are_its_remedy() -> None:
    text = (
        "torch._dynamo.exc.UserError: Constraints violated (seq_len)! Run with TORCH_LOGS=+dynamic.\n"
        "Suggested fixes:\n"
        "  seq_len = Dim('seq_len', max=4096)\n"
        "  heads = 32\n"
    )
    found = find_suggestions(text.splitlines())
    assert found and found[0].named == ("seq_len = Dim('seq_len', max=4096)", "heads = 32")
    category, _rule, fix = ablated_verdict(text)
    assert category == "shape_dtype_error"
    assert "heads = 32" in fix
    # the heading with nothing assigned under it suggests nothing, and a comparison is no assignment
    empty = "ValueError: export failed\nSuggested fixes:\n  (none found)\n"
    assert not [s for s in find_suggestions(empty.splitlines()) if s.text.startswith("Suggested fixes")]
    compared = "ValueError: export failed\nSuggested fixes:\n  heads == 32\n"
    assert not [s for s in find_suggestions(compared.splitlines()) if s.text.startswith("Suggested fixes")]


def test_a_dynamic_dimension_the_code_specialized_is_a_shape_error() -> None:
    text = (
        "ConstraintViolationError: You marked L['tokens'].size()[1] as dynamic but your code specialized "
        "it to be a constant (2048).\n"
    )
    assert _cue(text) == "shape_dtype_error"
    # a dimension marked dynamic that stayed dynamic is no refusal
    assert _cue("INFO: marked L['tokens'].size()[1] as dynamic; 3 graphs compiled\n") != "shape_dtype_error"


def test_a_backend_no_package_registered_is_a_start_up_failure() -> None:
    text = "Traceback (most recent call last):\nAssertionError: Unknown backend type hccl\n"
    assert _cue(text) == "runtime_init_failure"
    category, rule, fix = ablated_verdict(text)
    assert category == "runtime_init_failure"
    assert rule.endswith("/from_facts_backend_unregistered")
    assert "import" in fix and "torch_xla.distributed.xla_backend" in fix
    # a backend that is registered but failed is not an unregistered name
    failed = "RuntimeError: backend gloo failed to connect to 10.0.0.2:29500\n"
    assert _cue(failed) != "runtime_init_failure" or not ablated_verdict(failed)[1].endswith(
        "/from_facts_backend_unregistered"
    )
