"""Round diag104's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: a limit on how many different graphs a compiled function may trace is a recompilation
(a weak cue over the IR op names it lists) answered by padding or moving the branch
(`recompilation/from_facts_graph_limit`); a device index past the devices a host has is a start-up failure
answered by launching one process per local device (`runtime_init_failure/from_facts_device_index_range`);
and a value refused for its format with the form quoted before the word "format" is rewritten in that form
(the message's own suggestion) (docs/diagnose-accuracy.md, "Round diag104")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_suggestion import find_suggestions, reformatted_value


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


GRAPH_LIMIT = (
    "RuntimeError: Maximum number of different graphs allowed per function exceeded: 3\n"
    "Got: [] aten::softmax, xla_shape=bf16[8,12,256,256]{3,2,1,0}, dynamic_dims: ()\n"
    "Expected: [] aten::softmax, xla_shape=bf16[8,12,512,512]{3,2,1,0}, dynamic_dims: ()\n"
)


def test_a_graph_limit_exceeded_is_a_recompilation_over_the_ops_it_lists() -> None:
    assert _cue(GRAPH_LIMIT) == "recompilation"
    category, fix_rule, fix = ablated_verdict(GRAPH_LIMIT)
    assert (category, fix_rule) == ("recompilation", "recompilation/from_facts_graph_limit")
    assert "max_different_graphs" in fix and "torch.where" in fix and "pad" in fix


def test_limits_that_are_not_about_traced_graphs_keep_their_reading() -> None:
    # an aten op with no lowering is still an unsupported op
    no_lowering = "RuntimeError: aten::_ctc_loss has no XLA lowering and is not supported on TPU"
    assert _cue(no_lowering) != "recompilation"
    # a limit on something other than graphs or compilations
    assert _cue("ValueError: maximum number of stop sequences exceeded: 9 > 8") != "recompilation"


DEVICE_INDEX = "IndexError: Device index 9 out of range in ['xla:0', 'xla:1', 'xla:2', 'xla:3', 'xla:4']\n"


def test_a_device_index_past_the_hosts_devices_is_a_launch_failure() -> None:
    assert _cue(DEVICE_INDEX) == "runtime_init_failure"
    category, fix_rule, fix = ablated_verdict(DEVICE_INDEX)
    assert category == "runtime_init_failure"
    assert fix_rule == "runtime_init_failure/from_facts_device_index_range"
    assert "nproc-per-node" in fix and "local rank" in fix


def test_a_tensor_index_out_of_range_is_not_a_device_index() -> None:
    line = "IndexError: index 9 is out of range for dimension 0 with size 4"
    assert _cue(line) != "runtime_init_failure"


def _format_named(line: str) -> tuple[str, ...]:
    return next((s.named for s in find_suggestions(line.splitlines()) if s.kind == "format"), ())


def test_a_value_refused_for_its_quoted_format_is_rewritten_in_that_form() -> None:
    line = "ValueError: Invalid trace option format in 'device_tracer_level=2'. Expected 'key:value' format."
    assert _format_named(line) == ("key:value", "device_tracer_level:2")
    line = "ValueError: Malformed override format in 'dtype:bf16'. Expected 'name=value' format."
    assert _format_named(line) == ("name=value", "dtype=bf16")


def test_a_pair_is_rewritten_only_when_it_is_a_pair_with_another_separator() -> None:
    assert reformatted_value("level:2", "key:value") == ""  # already in the form
    assert reformatted_value("level", "key:value") == ""  # no pair
    assert reformatted_value("level=2", "KEY-VALUE") == ""  # no pair form
    # "format" without a quoted form before it is no format refusal
    assert _format_named("ValueError: Invalid option in 'level=2'. Expected a number.") == ()
