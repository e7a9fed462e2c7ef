"""Errors that the documentation of TPU launchers and cluster tools prints beside its fix: a zone out of
capacity, a project out of quota, JobSet followers waiting for their leader pod, an old JobSet's missing field
index, a node's inotify limits, a service account without a bucket permission, kubectl top without metrics,
a Pax ghost-clipping layer that was not wrapped, and Kueue's queues and workloads (a missing ResourceFlavor or
ClusterQueue, an incomplete pod group, an elastic job with partial admission).

The lines are written for these tests (not corpus files): the wordings of the round's dev logs with other
names and values, so each case checks that the rule keys on the message's fixed words and that the fix
quotes this log's values rather than the corpus file's.
"""

from __future__ import annotations

from crashlog_support import diagnosed_as

from tpu_runtime.diagnose.crashlog import diagnose_log


def test_a_zone_stockout_names_the_zone_and_other_zones_or_a_reservation() -> None:
    text = (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - The zone 'projects/my-proj/zones/us-east5-b' does not have enough resources available to fulfill "
        "the request.  Try a different zone, or try again later."
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/zone_capacity_stockout")
    assert "us-east5-b" in crash.fix
    assert "different zone" in crash.fix
    assert "reservation" in crash.fix


def test_a_compute_engine_quota_refusal_quotes_the_metric_and_the_numbers() -> None:
    text = "- Insufficient 'TPU_V5E_CHIPS' quota. Requested 64.0, available 16.0."
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/project_quota_exhausted")
    assert "TPU_V5E_CHIPS" in crash.fix
    assert "64.0" in crash.fix
    assert "16.0" in crash.fix
    assert "request an increase" in crash.fix


def test_a_tpu_api_quota_limit_is_named() -> None:
    text = (
        "ERROR: (gcloud.compute.tpus.create) RESOURCE_EXHAUSTED: Quota limit "
        "'TPUV4PodPerProjectPerZoneForTPUAPI' has been exceeded. Limit: 0 in zone us-central2-b."
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/project_quota_exhausted")
    assert "TPUV4PodPerProjectPerZoneForTPUAPI" in crash.fix


def test_a_quota_refusal_without_a_metric_reads_without_empty_brackets() -> None:
    crash = diagnose_log("Insufficient quota to satisfy the request", "gke.log")
    assert crash.evidence.fix_rule == "runtime_init_failure/project_quota_exhausted"
    assert "()" not in crash.fix
    assert "requested" not in crash.fix


def test_rejected_jobset_followers_point_at_the_leader_pod() -> None:
    text = (
        'Error creating: admission webhook "vpod.kb.io" denied the request: '
        "follower pod node selector not set"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/jobset_leader_pod_unscheduled")
    assert "leader pod" in crash.fix
    assert "describe pod" in crash.fix


def test_a_missing_controller_field_index_asks_for_a_current_jobset() -> None:
    text = (
        "ERROR\tsetup\tunable to list jobs\t"
        '{"error": "Index with name field:.spec.replicatedJob does not exist"}'
    )
    crash = diagnosed_as(text, "version_mismatch", "version_mismatch/controller_field_index_missing")
    assert "v0.2.1" in crash.fix


def test_spent_inotify_limits_name_the_sysctls() -> None:
    text = "F0312 10:01:02.000000 1 watcher.go:41] inotify_init: too many open files"
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/inotify_limits_spent")
    assert "fs.inotify.max_user_watches" in crash.fix


def test_plain_too_many_open_files_is_not_an_inotify_limit() -> None:
    crash = diagnose_log("OSError: [Errno 24] Too many open files: '/data/shard-0001.tfrecord'", "input.log")
    assert crash.evidence.fix_rule != "runtime_init_failure/inotify_limits_spent"


def test_a_service_account_without_a_bucket_permission_is_named() -> None:
    text = (
        "google.api_core.exceptions.Forbidden: 403 trainer@my-proj.iam.gserviceaccount.com does not have "
        "storage.objects.create access to the Google Cloud Storage bucket. "
        "Permission 'storage.objects.create' denied on resource (or it may not exist)."
    )
    crash = diagnosed_as(
        text, "runtime_init_failure", "runtime_init_failure/service_account_storage_permission"
    )
    assert "trainer@my-proj.iam.gserviceaccount.com" in crash.fix
    assert "storage.objects.create" in crash.fix
    assert "IAM" in crash.fix


def test_kubectl_top_without_metrics_names_metrics_server() -> None:
    crash = diagnosed_as(
        "$ kubectl top pod --sum\nerror: Metrics API not available",
        "runtime_init_failure",
        "runtime_init_failure/kubectl_metrics_api_missing",
    )
    assert "metrics-server" in crash.fix


def test_an_unwrapped_ghost_clipping_layer_asks_for_wrappable_layers() -> None:
    text = (
        "TypeError: dot_general requires ndarray or scalar arguments, got "
        "<class 'paxml.ghostnorm.base.ParamWithAux'> at position 1."
    )
    crash = diagnosed_as(text, "shape_dtype_error", "shape_dtype_error/pax_ghostnorm_layer_not_wrapped")
    assert "_WRAPPABLE_LAYERS" in crash.fix
    assert "WrappedGhostNorm" in crash.fix


def test_a_cluster_queue_with_a_missing_flavor_asks_for_the_resource_flavor() -> None:
    text = (
        '  conditions:\n  - message: "Can\'t admit new workloads: FlavorNotFound"\n    reason: FlavorNotFound'
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/kueue_flavor_not_found")
    assert "ResourceFlavor" in crash.fix


def test_a_missing_cluster_queue_is_named() -> None:
    text = "    Message:  ClusterQueue tpu-v5e-queue doesn't exist\n    Reason:   Inadmissible"
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/kueue_cluster_queue_missing")
    assert "tpu-v5e-queue" in crash.fix
    assert "spec.clusterQueue" in crash.fix


def test_an_incomplete_pod_group_is_named_with_its_annotations() -> None:
    text = "Warning ErrWorkloadCompose 3s kueue 'slice-a' group has fewer runnable pods than expected"
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/kueue_pod_group_incomplete")
    assert "slice-a" in crash.fix
    assert "pod-group-total-count" in crash.fix


def test_scaling_a_job_with_partial_admission_is_refused() -> None:
    text = (
        'admission webhook "vjob.kb.io" denied the request: spec.parallelism: Forbidden: '
        "cannot change when partial admission is enabled and the job is not suspended"
    )
    crash = diagnosed_as(text, "unsupported_op", "unsupported_op/kueue_partial_admission_blocks_scaling")
    assert "partial admission" in crash.fix
    assert "suspend" in crash.fix


def test_an_accelerator_type_the_zone_lacks_points_at_the_zones_list() -> None:
    text = (
        "W 03-02 10:11:12 instance_utils.py:112] Got return code 'CREATION_FAILED' in europe-west9-c: "
        "'Cloud TPU received a bad request. the accelerator v3-2048 was not found in zone europe-west9-c'"
    )
    crash = diagnosed_as(
        text, "runtime_init_failure", "runtime_init_failure/cloud_tpu_accelerator_not_in_zone"
    )
    assert "v3-2048" in crash.fix
    assert "europe-west9-c" in crash.fix
    assert "accelerator-types list" in crash.fix


def test_a_gpu_type_compute_engine_did_not_find_is_not_a_tpu_zone_refusal() -> None:
    text = (
        "ERROR: (gcloud.compute.instances.create) Could not fetch resource:\n"
        " - The resource 'projects/p/zones/us-west9-b/acceleratorTypes/nvidia-gizmo' was not found"
    )
    crash = diagnose_log(text, "gce.log")
    assert crash.evidence.fix_rule != "runtime_init_failure/cloud_tpu_accelerator_not_in_zone"


def test_a_refused_tpu_software_version_quotes_the_value_and_the_versions_list() -> None:
    text = (
        "googleapi: Error 400: Cloud TPU received an invalid argument. "
        'The field "RuntimeVersion" cannot be "tpu-vm-gizmo". [EID: 0x1], badRequest'
    )
    crash = diagnosed_as(
        text, "runtime_init_failure", "runtime_init_failure/cloud_tpu_software_version_refused"
    )
    assert '"tpu-vm-gizmo"' in crash.fix
    assert "RuntimeVersion" in crash.fix
    assert "versions list" in crash.fix


def test_another_refused_tpu_field_is_a_start_up_failure_without_the_version_fix() -> None:
    text = (
        "googleapi: Error 400: Cloud TPU received an invalid argument. "
        'The field "AcceleratorType" cannot be "v9-3". [EID: 0x2], badRequest'
    )
    crash = diagnose_log(text, "ctpu.log")
    assert crash.category == "runtime_init_failure"
    assert crash.evidence.fix_rule != "runtime_init_failure/cloud_tpu_software_version_refused"


def test_a_container_without_an_ipv6_loopback_is_a_start_up_failure_not_a_compiler_check() -> None:
    text = (
        "F0101 01:02:03.000004      12 enforce_kernel_ipv6_support.cc:80] Check failed: loopback6_ok || "
        "!loopback4_ok This machine (gizmo-box) does not have an IPv6 loopback (::1) interface.\n"
        "*** Check failure stack trace: ***"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/libtpu_ipv6_loopback_missing")
    assert "gizmo-box" in crash.fix
    assert "--net=host" in crash.fix


def test_another_check_failure_is_left_to_its_own_family() -> None:
    text = "F0101 01:02:03.000004      12 hlo_instruction.cc:99] Check failed: operand_count() == 2 (3 vs. 2)"
    crash = diagnose_log(text, "xla.log")
    assert crash.evidence.fix_rule != "runtime_init_failure/libtpu_ipv6_loopback_missing"
