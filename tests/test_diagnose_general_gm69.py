"""A batch that does not split over the data-parallel devices (gm69,
`tpu_runtime/data/crash_fix_packs/sharding_specs.yaml`): the category's catch-all (`from_facts_sharding`) told
the user to pad the dimension or replicate it; when the dimension is an input's leading one, the fix names a
global batch size that is a multiple of the devices and every step kept at that size. Wordings written for
these tests, with nearby wordings (an inner dimension, a spec that names an axis twice) that keep the
catch-all."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crashlog import diagnose_log, fallback_rules, load_rules
from tpu_runtime.diagnose.report import CrashDiagnosis
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())
BATCH = "shape_dtype_error/from_facts_batch_over_data_devices"
CATCH_ALL = "shape_dtype_error/from_facts_sharding"


def _fallbacks_only(text: str) -> CrashDiagnosis:
    """The remedy pass of the corpus ablation: every signature, only the `from_facts_*` fallbacks."""
    return diagnose_log(text, "-", fallback_rules(load_rules()), NO_NEIGHBOURS)


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: One of device_put args was given the sharding of NamedSharding(mesh=Mesh('rows': 8), "
        "spec=P('rows',), memory_kind=device), which implies that the global size of its "
        "dimension 0 should be divisible by 8, but it is equal to 30",
        "ValueError: global batch size 30 must be divisible by the number of devices along the data axes (8)",
        "ValueError: batch_size 30 must be a multiple of the 'data' mesh axis size 8 "
        "for PartitionSpec('data')",
    ],
)
def test_a_batch_that_does_not_split_over_the_devices_names_the_global_batch(line: str) -> None:
    crash = _fallbacks_only(f"{line}\n")
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule == BATCH
    assert "multiple of the number of devices" in crash.fix and "drop_remainder" in crash.fix


@pytest.mark.parametrize(
    "line",
    [
        # an inner dimension that does not divide by its model axis: the catch-all's padding advice fits
        "ValueError: One of pjit outputs was given the sharding of NamedSharding(mesh=Mesh('rows': 2, "
        "'cols': 16), spec=P(None, 'cols')), which implies that the global size of its dimension 1 should "
        "be divisible by 16, but it is equal to 1000",
        # dimension 0 of a weight, split over the model axis, with no batch or device count in the message
        "ValueError: sharding P('rows', None) of a value of shape (7, 4): its dimension 0 of size 7 "
        "is not divisible by the mesh axis 'rows' of size 2",
        # a batch cut into accumulation steps: the divisor is the step count, not the devices
        "ValueError: global batch size 64 must be divisible by the number of accumulation steps (3)",
        # a spec that names one axis twice: no batch to resize
        "ValueError: A single NamedSharding spec specification can map every mesh axis to at most one "
        "positional dimension, but P('rows', 'rows') has duplicate entries for `rows`",
    ],
)
def test_other_sharding_errors_keep_the_catch_all(line: str) -> None:
    crash = _fallbacks_only(f"{line}\n")
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule == CATCH_ALL
