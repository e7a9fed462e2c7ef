"""A TPU attention kernel refusing a feature by name (round diag148).

Each case is another wording of the family (not a corpus file's text): a configuration check that says a TPU
attention kernel has no path for a feature. The fix must name the feature and the other kernels, so a rule
that only matched the collected log's exact text would fail here; the nearby wordings (a GPU kernel, a kernel
named without TPU) are not the TPU kernel's refusal.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

SUB_RULE = "tpu_kernel_refuses_named_feature"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "ValueError: TPU splash attention kernel does not support sliding window with segment ids.",
            "sliding window",
        ),
        (
            "NotImplementedError: TPU flash attention does not support logit soft capping yet.",
            "logit soft capping",
        ),
        ("ValueError: TPU Tokamax ring attention does not support packed sequences.", "packed sequences"),
    ],
)
def test_a_tpu_kernel_refusing_a_feature_gets_its_fix(text: str, named: str) -> None:
    crash = assert_fixed_by(text + "\n", "unsupported_op", SUB_RULE, named)
    assert "attention=dot_product" in (crash.fix or "")


@pytest.mark.parametrize(
    "text",
    [
        "ValueError: GPU flash attention does not support dropout.",
        "ValueError: Ring attention does not support sequence sharding on this mesh.",
    ],
)
def test_a_kernel_not_named_for_tpu_is_not_claimed(text: str) -> None:
    assert_not_claimed(text + "\n", SUB_RULE)
