"""Families for logs the ablated rules leave `unknown` (gm68): a cloud or cluster that will not give the job
its resources or start its pod (`crash_cues/capacity_admission.yaml`), an exception class that names a
configuration check and a loader that cannot load a model (`crash_cues/setup_exceptions.yaml`, final tier),
and a size bound stated from the smaller side (`crash_cues/size_bounds.yaml`). Wordings written for these
tests, each with nearby wordings the family must not claim."""

from __future__ import annotations

import pytest

from tpu_runtime.diagnose.crash_cues import weak_vote
from tpu_runtime.diagnose.crashlog import diagnose_log
from tpu_runtime.diagnose.similar_errors import SimilarErrors

NO_NEIGHBOURS = SimilarErrors(())

CAPACITY = "a cloud quota or a zone's capacity"
ADMISSION = "a Kueue queue that will not admit"
POD = "a Kubernetes pod that never started its program"
CONFIG_CLASS = "whose class names a configuration"
LOADER = "a model or tokenizer its loader cannot load"
SIZE_BOUND = "a block, step or window bounded"


def _labels(lines: list[str], final: bool = False) -> list[str]:
    vote = weak_vote(lines, final=final)
    return [] if vote is None else vote.labels


@pytest.mark.parametrize(
    ("lines", "label"),
    [
        (["Insufficient quota to satisfy the widget request"], CAPACITY),
        (["Quota 'WIDGETS_PER_REGION' exceeded. Limit: 4.0 in region us-east9."], CAPACITY),
        (["code: ZONE_RESOURCE_POOL_EXHAUSTED", "The zone does not have enough resources left."], CAPACITY),
        (["The zone 'z9' does not have enough resources available to fulfill the request."], CAPACITY),
        (["status:", "  conditions:", "  - reason: Inadmissible", '    status: "False"'], ADMISSION),
        (["    message: 'Can''t admit new workloads: GizmoMissing'"], ADMISSION),
        (["  Message:   ClusterQueue widget-queue doesn't exist"], ADMISSION),
        (['  Warning  FailedMount  12s  kubelet  MountVolume.SetUp failed for volume "widgets"'], POD),
        (["    state:", "      waiting:", "        reason: ImagePullBackOff"], POD),
        (["  Reason:  CreateContainerConfigError"], POD),
    ],
)
def test_a_job_the_cloud_or_queue_will_not_place_is_a_start_up_failure(lines: list[str], label: str) -> None:
    vote = weak_vote(lines)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert any(label in got for got in vote.labels)
    crash = diagnose_log("\n".join(lines) + "\n", "-", similar=NO_NEIGHBOURS)
    assert crash.category == "runtime_init_failure"


@pytest.mark.parametrize(
    "line",
    [
        # device memory exhausted is no zone's pool; a reason that admits the job is no refusal
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2.00G.",
        "The widget quota is 4 per region.",
        "  - reason: Admitted",
        "ClusterQueue widget-queue is active",
        # a container that ran and exited is left to its own log's lines
        "        reason: CrashLoopBackOff",
        "  Warning  BackOff  12s  kubelet  Back-off restarting failed container widget",
    ],
)
def test_nearby_capacity_and_queue_wordings_are_not_claimed(line: str) -> None:
    assert not any(label in got for label in (CAPACITY, ADMISSION, POD) for got in _labels([line]))


@pytest.mark.parametrize(
    ("line", "label"),
    [
        ("gizmo.parsing.DecodingError: The fields `widget_name` are not valid for GizmoConfig", CONFIG_CLASS),
        ("omegaconf.errors.ConfigAttributeError: Key 'widgets' is not in struct", CONFIG_CLASS),
        ("absl.flags._exceptions.IllegalFlagValueError: flag --widgets=-1: must be positive", CONFIG_CLASS),
        ("pydantic_core._pydantic_core.ValidationError: 1 validation error for GizmoSettings", CONFIG_CLASS),
        ("gizmo._compile.exc.InvalidBackend: Invalid backend: 'sprocket'", CONFIG_CLASS),
        ("OSError: Can't load tokenizer for 'acme/widget-7b'.", LOADER),
        ("OSError: acme/widget is not a local folder and is not a valid model identifier on the hub", LOADER),
    ],
)
def test_a_set_up_check_named_by_its_class_is_a_start_up_failure(line: str, label: str) -> None:
    assert not any(label in got for got in _labels([line]))  # final tier: asked only when nothing else spoke
    vote = weak_vote([line], final=True)
    assert vote is not None and vote.category == "runtime_init_failure"
    assert any(label in got for got in vote.labels)
    assert diagnose_log(f"{line}\n", "-", similar=NO_NEIGHBOURS).category == "runtime_init_failure"


@pytest.mark.parametrize(
    "line",
    [
        # TensorFlow's op status and a text codec are no configuration classes; a disk's OSError is no loader
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: widget status lost",
        "UnicodeDecodeError: 'utf-8' codec can't decode byte 0x9c in position 1",
        "OSError: [Errno 28] No space left on device",
        # memory words keep the catch-all's exclusion
        "gizmo.ConfigError: widget memory limit reached",
    ],
)
def test_nearby_exception_classes_are_not_claimed(line: str) -> None:
    assert not any(CONFIG_CLASS in got or LOADER in got for got in _labels([line], final=True))


@pytest.mark.parametrize(
    "line",
    [
        "widget_block=512 should be smaller or equal to seq_len=64",
        "Total gizmo steps 900 must be less than the buffer size 128",
        "window must be no larger than max_model_len",
    ],
)
def test_a_size_bound_from_the_smaller_side_is_a_shape_error(line: str) -> None:
    vote = weak_vote([line])
    assert vote is not None and vote.category == "shape_dtype_error"
    assert any(SIZE_BOUND in got for got in vote.labels)


@pytest.mark.parametrize(
    "line",
    [
        # a bound against the job's layout is a start-up refusal; a bound with no length or size is no shape
        "tensor_parallel must be smaller than the world size",
        "num_widgets must be less than the mesh size",
        "gizmo_rank must be less than 8",
        "the widget should be smaller than the gizmo",
    ],
)
def test_nearby_bounds_are_not_claimed_as_shapes(line: str) -> None:
    assert not any(SIZE_BOUND in got for got in _labels([line]))
