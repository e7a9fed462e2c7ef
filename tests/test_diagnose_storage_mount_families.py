"""Errors of Cloud Storage FUSE (gcsfuse, and the GKE CSI driver that mounts buckets for TPU workloads'
data and checkpoints) that its troubleshooting pages print beside the fix: a token that needs uniform
bucket-level access, a bucket gcsfuse cannot find, the FUSE tools or device missing, no Application Default
Credentials, the sidecar killed for memory, a mount whose server died, the file cache too small, a full
staging disk and an object name that is not a path; and, from Ray's RayService troubleshooting page, the
KubeRay operator's requests to the Serve API port dropped on the way.

The lines are written for these tests (not corpus files): the wordings of the round's dev logs with other
names and values, so each case checks that the rule keys on the message's fixed words and that the fix
quotes this log's values rather than the corpus file's.
"""

from __future__ import annotations

from crashlog_support import diagnosed_as

from tpu_runtime.diagnose.content import classify_text
from tpu_runtime.diagnose.crashlog import diagnose_log


def test_a_write_refused_without_uniform_bucket_level_access_names_the_setting() -> None:
    text = (
        'E1204 10:02:11 CreateObject("ckpt/step_400/state") (88.1ms): gcs.PreconditionError: googleapi: '
        "Error 412: The type of authentication token used for this request requires that Uniform Bucket "
        "Level Access be enabled., conditionNotMet"
    )
    crash = diagnosed_as(
        text, "runtime_init_failure", "runtime_init_failure/gcs_uniform_bucket_level_access_required"
    )
    assert "--uniform-bucket-level-access" in crash.fix


def test_an_unknown_bucket_is_quoted_in_the_fix() -> None:
    text = (
        "daemonize.Run: readFromProcess: sub-process: mountWithArgs: mountWithStorageHandle: fs.NewServer: "
        "create file system: SetUpBucket: OpenBucket: Unknown bucket my-tpu-ckpts: no such file or directory"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/gcsfuse_unknown_bucket")
    assert "my-tpu-ckpts" in crash.fix
    assert "Storage Object Viewer" in crash.fix


def test_fusermount3_missing_asks_for_the_fuse_package() -> None:
    text = 'Error while mounting gcsfuse: mount: exec: "fusermount3": executable file not found in $PATH'
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/fusermount_missing")
    assert "install fuse" in crash.fix


def test_a_container_without_dev_fuse_is_told_to_run_privileged() -> None:
    text = (
        "mount: running fusermount3: exit status 1 stderr: /usr/bin/fusermount3: fuse device not found, "
        "try 'modprobe fuse' first"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/fuse_device_missing")
    assert "--privileged" in crash.fix


def test_go_clients_without_default_credentials_are_sent_to_adc() -> None:
    text = "Error: failed to mount bucket: DefaultTokenSource: google: could not find default credentials."
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/go_default_credentials_missing")
    assert "application-default login" in crash.fix


def test_the_gcsfuse_sidecar_killed_for_memory_gets_its_own_annotation_not_the_pod_limit() -> None:
    text = (
        'Warning  FailedMount  12s  kubelet  MountVolume.SetUp failed for volume "ckpt" : rpc error: code = '
        "ResourceExhausted desc = the sidecar container terminated due to OOMKilled, exit code: 137"
    )
    crash = diagnosed_as(text, "host_oom", "host_oom/gcsfuse_sidecar_killed")
    assert "gke-gcsfuse/memory-limit" in crash.fix


def test_a_dead_fuse_mount_asks_for_sidecar_memory_and_a_restart() -> None:
    text = "OSError: [Errno 107] Transport endpoint is not connected: '/data/ckpt/step_1200'"
    crash = diagnosed_as(text, "host_oom", "host_oom/fuse_mount_server_gone")
    assert "gke-gcsfuse/memory-limit" in crash.fix
    assert "restart" in crash.fix


def test_a_file_cache_too_small_for_one_file_names_its_capacity() -> None:
    text = (
        "tryReadingFromFileCache: while creating CacheHandle: GetCacheHandle: while adding the entry in the "
        "cache: addFileInfoEntryAndCreateDownloadJob: while inserting into the cache: size of the entry is "
        "more than the cache's maxSize"
    )
    crash = diagnose_log(text, "sidecar.log")
    assert crash.category == "unknown"
    assert "gcsfuse_file_cache_entry_too_large" in crash.evidence.fix_rule
    assert "fileCacheCapacity" in crash.fix


def test_a_full_staging_disk_is_an_error_line_and_names_the_temp_dir() -> None:
    text = "OSError [Errno 28] No space left on device: '/mnt/gcs/ckpt/step_9/params.msgpack'"
    assert classify_text(text).has_error
    crash = diagnose_log(text, "save.log")
    assert crash.category == "unknown"
    assert "local_disk_full" in crash.evidence.fix_rule
    assert "gcsfuse_file_cache_volume_full" not in crash.evidence.fix_rule
    assert "--temp-dir" in crash.fix


def test_an_object_name_that_is_not_a_path_is_to_be_renamed() -> None:
    crash = diagnose_log("Panic: Inode 'runs/exp7/' cannot have child file ''", "mount.log")
    assert crash.category == "unknown"
    assert "gcsfuse_object_name_not_a_path" in crash.evidence.fix_rule
    assert "rename" in crash.fix


def test_a_dropped_serve_api_request_points_at_a_network_policy() -> None:
    text = (
        'Put "http://llm-raycluster-x7k2p-head-svc.serving.svc.cluster.local:52365/api/serve/applications/": '
        "dial tcp 10.12.0.41:52365: i/o timeout"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/serve_api_port_unreachable")
    assert "NetworkPolicy" in crash.fix
