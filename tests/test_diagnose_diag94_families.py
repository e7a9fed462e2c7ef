"""Round diag94's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a check that expected one kind of tensor or array and was handed another is a shape
reading of the input, not a kind the release cannot take; and an object created while no distribution
strategy was in scope gets the fallback `runtime_init_failure/from_facts_tensorflow_strategy_scope`
(docs/diagnose-accuracy.md, "Round diag94")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, library_trace

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_specs import SubRule
from tpu_runtime.diagnose.crashlog import load_rules


def _final_cue(line: str) -> str | None:
    vote = weak_vote([line], final=True)
    return vote.category if vote else None


def test_a_tensor_of_the_wrong_kind_is_a_shape_reading() -> None:
    for line in (
        "ValueError: Expect mask to be RaggedTensor type but got <class 'invented.framework.DenseTensor'>",
        "TypeError: expected the ids to be a jax.Array, but got Tensor",
        "ValueError: expected labels to be an np.ndarray but received torch.Tensor",
    ):
        assert _final_cue(line) == "shape_dtype_error", line
    text = library_trace("ValueError: Expect mask to be RaggedTensor type but got <class 'x.DenseTensor'>")
    assert ablated_verdict(text)[0] == "shape_dtype_error"


def test_other_kind_checks_keep_their_reading() -> None:
    # a refused kind with no expected tensor stays an input kind the code does not handle
    assert _final_cue("ValueError: Unsupported input <class 'invented.DenseTensor'>") == "unsupported_op"
    # a setting given a value of the wrong type stays a configuration check
    assert _final_cue("ValueError: tp_size must be an int type but got float") == "runtime_init_failure"
    # a tensor named on the expected side only, with no other kind received, is not claimed
    assert _final_cue("ValueError: Expected the batch to be a Tensor") != "shape_dtype_error"


def _scope_fix() -> SubRule:
    rule = next(r for r in load_rules() if r.category == "runtime_init_failure")
    return next(f for f in rule.fixes if f.id == "from_facts_tensorflow_strategy_scope")


def test_an_object_created_outside_the_strategy_scope_is_named() -> None:
    when = _scope_fix().when
    for line in (
        "RuntimeError: InventedTable should be created under TPUStrategy but found <object at 0x7f00>.",
        "ValueError: the slot variable was created in the scope of a MirroredStrategy, not this one",
        "RuntimeError: found <tensorflow.python.distribute._DefaultDistributionStrategy object>",
        "ValueError: metric 'auc' must be built inside the strategy scope",
    ):
        assert when.holds({}, [line]), line
    text = library_trace(
        "RuntimeError: InventedTable should be created under TPUStrategy but found"
        " <tensorflow.python.distribute.distribute_lib._DefaultDistributionStrategy object at 0x7f00>."
    )
    category, rule, fix = ablated_verdict(text)
    assert category == "runtime_init_failure"
    assert rule == "runtime_init_failure/from_facts_tensorflow_strategy_scope"
    assert "strategy.scope()" in fix


def test_scope_words_without_a_strategy_are_not_claimed() -> None:
    when = _scope_fix().when
    for line in (
        "RuntimeError: TPU system not initialized; call initialize_tpu_system first",
        "INFO created under checkpoints/run-3",
        "ValueError: the variable scope 'encoder' is reused",
    ):
        assert not when.holds({}, [line]), line
