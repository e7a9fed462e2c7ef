"""Round diag93's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: when several mined raise sites match one message, the site whose line a traceback frame
shows is the check that ran (its condition is the one to read); and a serving engine's refusal of a
checkpoint's quantization scheme gets the fallback `unsupported_op/from_facts_quant_scheme`
(docs/diagnose-accuracy.md, "Round diag93")."""

from __future__ import annotations

from crash_helpers import ablated_verdict, guarded, library_trace

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crash_locations import RaiseSite, find_location, load_locations
from tpu_runtime.diagnose.crash_specs import SubRule
from tpu_runtime.diagnose.crashlog import load_rules

MODULE = "invented_engine.layers.position"
SITE_PACKAGES = "/opt/venv/lib/python3.12/site-packages/invented_engine/layers"


def _site(line: int, pattern: str, guard: str) -> RaiseSite:
    return guarded(
        RaiseSite(
            module=MODULE,
            function="make_position_table",
            exception="ValueError",
            pattern=pattern,
            anchor="Unknown position scaling",
            path="src/invented_engine/layers/position.py",
            line=line,
        ),
        guard,
    )


SITES = (
    _site(40, "Unknown position scaling", "not ('kind' in scaling)"),
    _site(88, "Unknown position scaling ", "not (kind == 'linear')"),
)


def _lines(frame_line: int | None) -> list[str]:
    lines = ["Traceback (most recent call last):"]
    if frame_line is not None:
        lines += [
            f'  File "{SITE_PACKAGES}/position.py", line {frame_line}, in make_position_table',
            "    raise ValueError(msg)",
        ]
    return [*lines, "ValueError: Unknown position scaling dynamic_ntk"]


def test_the_traceback_frame_picks_the_raise_site_that_ran() -> None:
    found = find_location(_lines(88), load_locations(), SITES, any_module=True)
    assert found is not None and found.site.line == 88
    assert found.site.passes == ("kind=linear",)  # what that check's condition reads, not the other's


def test_without_a_frame_of_either_site_the_first_match_stays() -> None:
    table = load_locations()
    for frame_line in (None, 87, 41):  # no traceback, or frames at other lines of the file
        found = find_location(_lines(frame_line), table, SITES, any_module=True)
        assert found is not None and found.site.line == 40
    # a frame of the right line in another function or file does not pick the site either
    other = [
        "Traceback (most recent call last):",
        f'  File "{SITE_PACKAGES}/other.py", line 88, in make_position_table',
        f'  File "{SITE_PACKAGES}/position.py", line 88, in build',
        "ValueError: Unknown position scaling dynamic_ntk",
    ]
    found = find_location(other, table, SITES, any_module=True)
    assert found is not None and found.site.line == 40


def _quant_fix() -> SubRule:
    rule = next(r for r in load_rules() if r.category == "unsupported_op")
    return next(f for f in rule.fixes if f.id == "from_facts_quant_scheme")


def test_a_quantization_scheme_refusal_is_named() -> None:
    when = _quant_fix().when
    for line in (
        "NotImplementedError: no marlin-compatible quantization scheme for layer decoder.blocks.3.mlp",
        "ValueError: Unsupported quantization format 'hqq' for the paged engine",
        "RuntimeError: int3 quantization is not yet supported on this backend",
        "NotImplementedError: the compressed-tensors group 'g1' is unsupported here",
    ):
        assert when.holds({}, [line]), line
    text = library_trace("ValueError: Unsupported quantization format 'hqq' for the paged engine")
    category, rule, fix = ablated_verdict(text)
    assert (category, rule) == ("unsupported_op", "unsupported_op/from_facts_quant_scheme")
    assert "FP8" in fix and "bf16" in fix


def test_quantization_words_without_a_refusal_are_not_claimed() -> None:
    when = _quant_fix().when
    for line in (
        "INFO loaded 224 quantized layers in 41.2 s",
        "WARNING no quantization applied to lm_head",
        "Quantization is supported for this model; using fp8 weights",
        "ValueError: the router does not support 9 experts per token",
    ):
        assert not when.holds({}, [line]), line


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


def test_an_out_of_memory_message_asking_for_a_smaller_batch_is_device_memory() -> None:
    assert _cue("RuntimeError: OOM in the page pool; reduce the batch size or the context\n") == "hbm_oom"
    assert _cue("RuntimeError: Out of memory. Please lower your batch_size and retry.\n") == "hbm_oom"


def test_nearby_wordings_keep_their_reading() -> None:
    # the kernel's OOM killer stays a host failure, batch size or not
    assert _cue("Out of memory: Killed process 4242 (python3) total-vm:98765432kB\n") == "host_oom"
    # advice about the batch without any out-of-memory words is no memory error
    assert _cue("ValueError: reduce the batch size so it divides the 8 data-parallel ranks\n") != "hbm_oom"
    # out of memory on the host's RAM keeps the host reading
    assert _cue("MemoryError: out of memory in host RAM; lower the batch size of the loader\n") != "hbm_oom"
