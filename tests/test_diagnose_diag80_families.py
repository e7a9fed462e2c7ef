"""Round diag80's general mechanisms, each with wordings written here (not the corpus files) and a nearby
wording it must not claim: an order whose object is a setting, after the comma that ends a refusal; a fixed
number of devices asked for against the devices the runtime has; one axis name given different sizes by the
arguments of one call (docs/diagnose-accuracy.md, "Round diag80")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_setting_facts import device_count_facts
from tpu_runtime.diagnose.crash_suggestion import find_suggestions


def _kinds(text: str) -> list[tuple[str, tuple[str, ...]]]:
    return [(s.kind, s.named) for s in find_suggestions(text.splitlines())]


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_an_order_after_the_comma_that_ends_a_refusal_is_the_remedy() -> None:
    text = "ValueError: --grad-ckpt is not supported with --pipeline, set PIPELINE_STAGES=1 instead\n"
    assert _kinds(text) == [("advice", ("PIPELINE_STAGES=1",))]
    category, rule, fix = ablated_verdict(text)
    assert rule == f"{category}/message_suggestion"
    assert "PIPELINE_STAGES=1" in fix
    assert _kinds("RuntimeError: Cannot shard the optimizer state, pass --zero-stage=1 on TPUs")[0][1] == (
        "--zero-stage=1",
    )
    # a clause with no failure before the comma is a list of what ran, not a refusal answered
    assert _kinds("Loaded the checkpoint, use --resume to continue from it") == []
    # an order whose object is a plain word names no setting
    assert _kinds("ValueError: Cannot combine these options, use the defaults") == []


def test_a_fixed_device_count_against_the_devices_listed() -> None:
    device = "TpuDevice(id={0}, process_index=0, coords=({0},0,0), core_on_chip=0)"
    listed = ", ".join(device.format(i) for i in range(2))
    text = f"AssertionError: check failed: No 4 TPU devices available in [{listed}].\n"
    facts = device_count_facts(text.splitlines())
    assert facts == {"asked_devices": 4, "found_devices": 2, "device_kind": "TPU"}
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("runtime_init_failure", "runtime_init_failure/from_facts_fixed_device_count")
    assert "jax.device_count()" in fix and "asks for 4 TPU devices and the runtime has 2" in fix
    # the counts in words, either order of the clauses
    said = "RuntimeError: the benchmark requires 16 TPU devices but only 8 are visible"
    assert device_count_facts([said]) == {"asked_devices": 16, "found_devices": 8, "device_kind": "TPU"}
    assert device_count_facts(["ValueError: Only 2 < 4 TPUs available on this host."])["found_devices"] == 2
    # CPU devices listed where TPUs were asked: no TPU backend at all, not a count written for another host
    cpu = "AssertionError: No 8 TPUs available in [CpuDevice(id=0)]."
    assert device_count_facts([cpu]) == {}
    # the count asked for is the count there is, or no device is listed
    assert device_count_facts(["requires 8 TPU devices and 8 are available"]) == {}
    assert device_count_facts(["No 8 TPUs available in []."]) == {}


def test_one_axis_name_given_different_sizes_by_the_arguments() -> None:
    text = (
        "ValueError: Inconsistent named axes in a call to nmap(<function attend at 0x7f00>) "
        "for axes ['heads']:\n"
        "  query.named_shape == {'batch': 4, 'heads': 16, 'kv': 128}\n"
        "  key.named_shape == {'batch': 4, 'heads': 8, 'kv': 128}\n"
    )
    assert _kinds(text) == [("axis_sizes", ("heads",))]
    assert _cue(text) == "shape_dtype_error"
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("shape_dtype_error", "shape_dtype_error/message_suggestion")
    assert "'heads' is 16 in query.named_shape and 8 in key.named_shape" in fix and "rename" in fix
    # the listed shapes agree on every axis: nothing to name
    same = text.replace("'heads': 8", "'heads': 16")
    assert [k for k, _ in _kinds(same)] != ["axis_sizes"]
    # one listed shape compares with nothing; a line with no error word lists no failure
    assert [k for k, _ in _kinds("ValueError: bad axes:\n  x.named_shape == {'a': 2}\n")] != ["axis_sizes"]
    assert _kinds("named shapes:\n  x == {'a': 2}\n  y == {'a': 3}\n") == []
    # consistent sizes reported as such are no error
    assert _cue("INFO: consistent named axes across all arguments") is None
