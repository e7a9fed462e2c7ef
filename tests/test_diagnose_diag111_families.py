"""Round diag111's general mechanisms, with wordings written here (not the corpus files) and nearby wordings
they must not claim: an attention kernel that refuses dropout is answered with dropout_p=0.0; a request for
an input modality the model does not read (video, audio) is answered with frames sent as images; and a request
feature a running server refuses as launched is an unsupported op, constrained decoding without a grammar
backend being answered with `--grammar-backend` (docs/diagnose-accuracy.md, "Round diag111")."""

from __future__ import annotations

from crash_helpers import ablated_verdict

from tpu_runtime.diagnose.crash_cues import weak_vote


def _cue(text: str) -> str | None:
    vote = weak_vote(text.splitlines())
    return vote.category if vote else None


DROPOUT = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/encoder.py", line 40, in forward\n'
    "    out = splash_attention(q, k, v, dropout_rate=0.1)\n"
    "NotImplementedError: splash attention kernel does not support dropout_rate\n"
)


def test_an_attention_kernel_without_dropout_is_answered_with_dropout_zero() -> None:
    category, fix_rule, fix = ablated_verdict(DROPOUT)
    assert (category, fix_rule) == ("unsupported_op", "unsupported_op/from_facts_attention_dropout_refused")
    assert "dropout_p=0.0" in fix and "attention_dropout" in fix


def test_a_dropout_that_is_supported_or_a_drop_of_rows_is_not_claimed() -> None:
    other = "NotImplementedError: this kernel does not support sliding windows with soft capping\n"
    assert ablated_verdict(other)[1] != "unsupported_op/from_facts_attention_dropout_refused"
    rows = "NotImplementedError: dropping the last partial batch is not supported for streaming datasets\n"
    assert ablated_verdict(rows)[1] != "unsupported_op/from_facts_attention_dropout_refused"


VIDEO = (
    "ERROR 10-01 09:12:03 [core.py:798] Traceback (most recent call last):\n"
    '  File "/srv/models/vlm.py", line 311, in get_input_modality\n'
    "    raise NotImplementedError('Video inputs are not supported yet for this model.')\n"
    "NotImplementedError: Video inputs are not supported yet for this model.\n"
)


def test_a_video_request_to_an_image_model_is_answered_with_frames_as_images() -> None:
    category, fix_rule, fix = ablated_verdict(VIDEO)
    assert (category, fix_rule) == ("unsupported_op", "unsupported_op/from_facts_input_modality_refused")
    assert "frames" in fix and "image" in fix


def test_a_video_codec_or_an_image_refusal_is_not_a_modality_refusal() -> None:
    codec = "NotImplementedError: image format webp is not supported by this decoder\n"
    assert ablated_verdict(codec)[1] != "unsupported_op/from_facts_input_modality_refused"


GRAMMAR = (
    '{"text":"","meta_info":{"finish_reason":{"type":"abort","message":"Constrained decoding with a regex is '
    'not supported when the server is launched with --grammar-backend none"}}}\n'
)


def test_a_feature_refused_by_a_server_as_launched_is_an_unsupported_op() -> None:
    assert _cue(GRAMMAR) == "unsupported_op"
    category, fix_rule, fix = ablated_verdict(GRAMMAR)
    assert (category, fix_rule) == ("unsupported_op", "unsupported_op/from_facts_grammar_backend_off")
    assert "--grammar-backend llguidance" in fix


def test_other_server_refusals_keep_their_reading() -> None:
    # LoRA refused as launched: the cue claims the family, the grammar remedy does not answer it
    lora = "LoRA adapters are not supported when the server is launched with --disable-lora\n"
    assert _cue(lora) == "unsupported_op"
    assert ablated_verdict(lora)[1] != "unsupported_op/from_facts_grammar_backend_off"
    # a server that failed to start is not a request refused by a running server
    assert _cue("the server failed to start: port 30000 is already in use") != "unsupported_op"
