"""Release requirements a library states itself: a lowest release of a package, an Enum member of a release.

The lines are written for these tests (not corpus files): the wordings of the round's dev logs with other
packages, versions and members, so each case checks that the rule keys on the message's fixed words and
that the fix quotes this log's values rather than the corpus file's.
"""

from __future__ import annotations

import pytest
from crashlog_support import diagnosed_as

from tpu_runtime.diagnose.crashlog import diagnose_log


@pytest.mark.parametrize(
    ("text", "package", "version", "feature"),
    [
        (
            "lightning.fabric.utilities.exceptions.MisconfigurationException: `XLAStrategy` is only "
            "supported with `torch_xla >= 2.1`",
            "torch_xla",
            "2.1",
            "`XLAStrategy`",
        ),
        (
            "RuntimeError: fsdp_v2 is only available with torch-xla>=2.3",
            "torch-xla",
            "2.3",
            "fsdp_v2",
        ),
        (
            "ImportError: SpmdTrainer requires optax>=0.2.2",
            "optax",
            "0.2.2",
            "SpmdTrainer",
        ),
    ],
)
def test_lowest_release_names_the_package_the_version_and_what_needs_it(
    text: str, package: str, version: str, feature: str
) -> None:
    crash = diagnosed_as(text, "version_mismatch", "version_mismatch/from_facts_minimum_release")
    assert f"{package} >= {version}" in crash.fix
    assert f'pip install -U "{package}>={version}"' in crash.fix
    assert crash.fix.startswith(feature), crash.fix


def test_a_requirement_with_its_own_install_command_keeps_the_message_suggestion() -> None:
    crash = diagnosed_as(
        "Exception in device=TPU:3: Using the `Trainer` with `PyTorch` requires `accelerate>=0.21.0`: "
        "Please run `pip install transformers[torch]` or `pip install accelerate -U`",
        "version_mismatch",
        "version_mismatch/message_suggestion",
    )
    assert "pip install accelerate -U" in crash.fix


def test_accelerate_tpu_member_names_the_renamed_type() -> None:
    crash = diagnosed_as(
        "ValueError: 'TPU' is not a valid DistributedType",
        "version_mismatch",
        "version_mismatch/accelerate_distributed_type_tpu_renamed",
    )
    assert "distributed_type" in crash.fix
    assert "XLA" in crash.fix


@pytest.mark.parametrize(
    ("text", "member", "enum"),
    [
        ("ValueError: 'MEGATRON' is not a valid DistributedType", "MEGATRON", "DistributedType"),
        ("ValueError: 'bf16-true' is not a valid PrecisionType", "bf16-true", "PrecisionType"),
    ],
)
def test_other_enum_members_name_the_member_and_the_enum(text: str, member: str, enum: str) -> None:
    crash = diagnosed_as(text, "version_mismatch", "version_mismatch/enum_member_not_in_release")
    assert f"{enum} has no member '{member}'" in crash.fix


def test_a_plain_value_error_about_validity_is_not_an_enum_member() -> None:
    crash = diagnose_log("ValueError: 'abc' is not a valid number for batch size", "plain.log")
    assert "enum_member_not_in_release" not in crash.evidence.fix_rule
    assert "has no member" not in crash.fix
