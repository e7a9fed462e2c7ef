"""Families of version skew that round diag138 added to the rules (docs/diagnose-accuracy.md).

Two families: torch's linear-algebra functions deprecated in 1.9 that now only raise (torch/_linalg_utils.py
lists solve, lstsq, symeig, eig and matrix_rank), whose replacement is torch.linalg, and transformers' own
AdamW, removed in 4.50, whose replacement is torch.optim.AdamW. Each case is worded apart from the collected
logs (another function of the raise site, another import path), and each family has a nearby wording it
must not claim, so a rule matching only the collected text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            '  File "/srv/app/solver.py", line 12, in fit\n'
            "    X, _ = torch.lstsq(B, A)\n"
            "RuntimeError: This function was deprecated since version 1.9 and is now removed. "
            "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
            "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition in the "
            "returned tuple (although it returns other information about the problem).",
            "torch.lstsq is gone from torch, and the message names torch.linalg.lstsq",
        ),
        (
            "RuntimeError: This function was deprecated since version 1.9 and is now removed.\n"
            "Please use the `torch.linalg.matrix_rank` function instead.",
            "",
        ),
    ],
)
def test_a_removed_torch_function_is_ported_to_torch_linalg(text: str, named: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/torch_function_removed_for_linalg"
    assert named in crash.fix
    assert "torch.linalg.solve(A, B)" in crash.fix
    assert "torch.linalg.matrix_rank" in crash.fix


def test_a_torch_deprecation_warning_is_not_read_as_a_removed_function() -> None:
    """A function still present (a warning about a coming removal) does not get the removed-function port."""
    crash = _diagnose(
        "UserWarning: torch.cholesky is deprecated in favor of torch.linalg.cholesky and will be removed "
        "in a future PyTorch release."
    )
    assert crash.evidence.fix_rule != "version_mismatch/torch_function_removed_for_linalg"
    assert "torch.linalg.solve(A, B)" not in crash.fix


@pytest.mark.parametrize(
    "module",
    ["transformers", "transformers.optimization"],
)
def test_transformers_adamw_is_replaced_by_torch_adamw(module: str) -> None:
    crash = _diagnose(
        '  File "/srv/app/train.py", line 3, in <module>\n'
        f"    from {module} import AdamW\n"
        f"ImportError: cannot import name 'AdamW' from '{module}' "
        f"(/opt/venv/lib/python3.12/site-packages/{module.replace('.', '/')}.py)"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/transformers_adamw_removed"
    assert "torch.optim.AdamW" in crash.fix
    assert "correct_bias" in crash.fix


def test_another_missing_transformers_name_keeps_the_release_advice() -> None:
    """A name that only sounds like the optimizer (TF's AdamWeightDecay) is not told to use torch's."""
    crash = _diagnose(
        "ImportError: cannot import name 'AdamWeightDecay' from 'transformers' "
        "(/opt/venv/lib/python3.12/site-packages/transformers/__init__.py)"
    )
    assert crash.evidence.fix_rule != "version_mismatch/transformers_adamw_removed"
    assert "torch.optim.AdamW" not in crash.fix
