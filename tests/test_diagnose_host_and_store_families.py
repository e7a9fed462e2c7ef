"""Common wordings people paste from the host side of a TPU job: CUDA code and CUDA checkpoints on a TPU
VM, Google and Hugging Face credentials, torch.distributed's store and Gloo timeouts, pt-xla-profiler's
transfer counts, PyTorch CPU kernels without a reduced-precision dtype, a mesh axis named twice, and a
halted core's "no compiler metadata" note, which is not a compile error; and the start-up refusals of the
machine around the job (Docker's GPU flag, SSH at port 22, a Kubernetes kind not installed, an image not
pulled, launcher variables, NCCL, pip's Python range), jax's and numpy's pytree, dtype and array refusals, and
TorchTPU's own refusals (a GPU profiler activity, point-to-point send/recv, a device that is not a TPU, a
subgroup collective, a reduce op, a launch with no chips, group ranks, Muon on a non-matrix, blockwise K).

Each case is a wording of the family with other values than the rule's comment; the assertions check the
category, the sub-rule and what the fix names, and each family has a nearby wording it must not claim.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import assert_fixed_by, assert_not_claimed
from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "category", "sub_rule", "named"),
    [
        (
            "RuntimeError: No CUDA GPUs are available",
            "runtime_init_failure",
            "cuda_called_on_tpu_host",
            'torch.device("tpu")',
        ),
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions "
            "before calling NumCudaDevices() that might have already set an error? Error 804",
            "runtime_init_failure",
            "cuda_called_on_tpu_host",
            ".to(device)",
        ),
        (
            "RuntimeError: Attempting to deserialize object on a CUDA device but "
            "torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use "
            "torch.load with map_location",
            "runtime_init_failure",
            "cuda_checkpoint_on_tpu_host",
            'map_location="cpu"',
        ),
        (
            "huggingface_hub.errors.GatedRepoError: 403 Client Error. Cannot access gated repo for url "
            "https://huggingface.co/google/gemma-2-9b/resolve/main/config.json.",
            "runtime_init_failure",
            "hf_gated_repo",
            "HF_TOKEN",
        ),
        (
            "huggingface_hub.errors.LocalEntryNotFoundError: An error happened while trying to locate the "
            "file on the Hub and we cannot find the requested files in the local cache.",
            "runtime_init_failure",
            "hf_hub_unreachable",
            "huggingface-cli download",
        ),
        (
            "google.auth.exceptions.DefaultCredentialsError: Could not automatically determine "
            "credentials. Please set GOOGLE_APPLICATION_CREDENTIALS or explicitly create credentials and "
            "re-run the application.",
            "runtime_init_failure",
            "go_default_credentials_missing",
            "gcloud auth application-default login",
        ),
        (
            "google.api_core.exceptions.Forbidden: 403 GET https://storage.googleapis.com/storage/v1/b/"
            "ckpts/o/step_100: trainer@proj-7.iam.gserviceaccount.com does not have storage.objects.get "
            "access to the Google Cloud Storage object. Permission 'storage.objects.get' denied on resource "
            "(or it may not exist).",
            "runtime_init_failure",
            "service_account_storage_permission",
            "storage.objects.get",
        ),
        (
            "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 clients "
            "joined.",
            "collective_timeout",
            "torch_store_or_gloo_timeout",
            "MASTER_ADDR",
        ),
        (
            "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out "
            "waiting 600000ms for recv operation to complete\nRuntimeError: [../torch/csrc/distributed/c10d/"
            "ProcessGroupGloo.cpp:2917] Timed out waiting 600000ms for recv operation to complete",
            "collective_timeout",
            "torch_store_or_gloo_timeout",
            "timeout=",
        ),
        (
            "pt-xla-profiler: TransferFromDeviceTime too frequent: 240 counts during 20 steps",
            "recompilation",
            "torch_xla_transfers_per_step",
            "240 device-to-host transfers",
        ),
        (
            "RuntimeError: \"layer_norm_cpu_kernel\" not implemented for 'Half'",
            "unsupported_op",
            "cpu_kernel_lacks_dtype",
            "layer_norm_cpu_kernel has no Half version",
        ),
        (
            "RuntimeError: \"baddbmm_with_gemm_cpu_\" not implemented for 'BFloat16'",
            "unsupported_op",
            "cpu_kernel_lacks_dtype",
            "model.to(device)",
        ),
        (
            "jax._src.named_sharding.DuplicateSpecError: A single NamedSharding spec specification can "
            "map every mesh axis to at most one positional dimension, but PartitionSpec('fsdp', None, "
            "'fsdp') has duplicate entries for `fsdp`",
            "shape_dtype_error",
            "mesh_axis_used_twice",
            "`fsdp`",
        ),
        (
            'docker: Error response from daemon: could not select device driver "" with capabilities: '
            "[[gpu]].\nERRO[0000] error waiting for container: context canceled",
            "runtime_init_failure",
            "docker_gpu_flag_on_tpu_vm",
            "--privileged",
        ),
        (
            "ssh: connect to host 34.91.7.200 port 22: No route to host\n"
            "ERROR: (gcloud.compute.tpus.tpu-vm.ssh) [/usr/bin/ssh] exited with return code [255].",
            "runtime_init_failure",
            "ssh_port_unreachable",
            "--tunnel-through-iap",
        ),
        (
            'error: resource mapping not found for name: "train" namespace: "" from "rc.yaml": no matches '
            'for kind "RayCluster" in version "ray.io/v1"\nensure CRDs are installed first',
            "runtime_init_failure",
            "kubernetes_kind_not_installed",
            "KubeRay",
        ),
        (
            'Warning  Failed  12s  kubelet  Failed to pull image "europe-docker.pkg.dev/p/r/trainer:v3": '
            "rpc error: code = PermissionDenied desc = failed to pull and unpack image\n"
            "Warning  Failed  12s  kubelet  Error: ErrImagePull",
            "runtime_init_failure",
            "image_pull_failed",
            "europe-docker.pkg.dev/p/r/trainer:v3",
        ),
        (
            '  File "/usr/lib/python3.10/os.py", line 680, in __getitem__\n'
            "    raise KeyError(key) from None\nKeyError: 'WORLD_SIZE'",
            "runtime_init_failure",
            "torchrun_variables_missing",
            "torchrun",
        ),
        (
            "RuntimeError: Distributed package doesn't have NCCL built in",
            "runtime_init_failure",
            "nccl_backend_on_tpu",
            'backend="tpu_dist"',
        ),
        (
            "ERROR: Package 'tpu-inference' requires a different Python: 3.10.12 not in '>=3.11'",
            "version_mismatch",
            "python_outside_requires_python",
            "the release needs >=3.11",
        ),
        (
            "ValueError: Dict key mismatch; expected keys: ['mu', 'nu']; dict: {'mu': 1}.",
            "shape_dtype_error",
            "pytree_structure_mismatch",
            "Dict key mismatch",
        ),
        (
            "TypeError: Cannot interpret 'torch.float16' as a data type",
            "shape_dtype_error",
            "torch_dtype_given_to_numpy",
            "torch.float16",
        ),
        (
            "ValueError: setting an array element with a sequence. The requested array has an inhomogeneous "
            "shape after 2 dimensions. The detected shape was (4, 2) + inhomogeneous part.",
            "shape_dtype_error",
            "ragged_sequence_to_array",
            "max_length",
        ),
        (
            "TypeError: Argument 'mode' of type <class 'str'> is not a valid JAX type.",
            "shape_dtype_error",
            "non_array_argument",
            'static_argnames=("mode",)',
        ),
        (
            '  File "torch_tpu/_internal/profiler/_api.py", line 89, in _get_profile_options\n'
            "ValueError: GPU profiling is not supported.",
            "unsupported_op",
            "torch_tpu_gpu_profiler_activity",
            "ProfilerActivity.TPU",
        ),
        (
            "NotImplementedError: P2P recv is not supported on this TPU backend.",
            "unsupported_op",
            "torch_tpu_p2p_unsupported",
            "no point-to-point recv",
        ),
        (
            "ValueError: Expected a tpu or cpu device, but got: cuda:1",
            "runtime_init_failure",
            "torch_tpu_foreign_device_argument",
            "the device cuda:1",
        ),
        (
            "RuntimeError: We currently do not support subgroup communication.",
            "unsupported_op",
            "torch_tpu_subgroup_collective",
            "all_gather",
        ),
        (
            "ValueError: Unsupported torchcomms ReduceOp: RedOpType.PREMUL_SUM",
            "unsupported_op",
            "torch_tpu_reduce_op",
            "PREMUL_SUM cannot run",
        ),
        (
            "ValueError: set_tpu_launch_env(): expected TPU devices, got none",
            "runtime_init_failure",
            "torch_tpu_launch_found_no_tpu",
            "/dev/accel*",
        ),
        (
            "ValueError: ranks must not contain duplicates, got [0, 2, 2].",
            "runtime_init_failure",
            "torch_tpu_group_ranks",
            "sorted(set(ranks))",
        ),
        (
            "ValueError: Input tensor gradient must be a 2D matrix",
            "shape_dtype_error",
            "muon_on_non_matrix_param",
            "AdamW",
        ),
        (
            "ValueError: K=4000 must be a multiple of block_size=256",
            "shape_dtype_error",
            "scaled_mm_k_not_whole_blocks",
            "K=4000",
        ),
    ],
)
def test_family_wording_gets_its_sub_rule(text: str, category: str, sub_rule: str, named: str) -> None:
    assert_fixed_by(text, category, sub_rule, named)


@pytest.mark.parametrize(
    ("text", "not_sub_rule"),
    [
        # a CUDA device asked for by a program that does find one is not a TPU-host mistake
        ("RuntimeError: CUDA error: out of memory", "cuda_called_on_tpu_host"),
        # torch.load on the CPU failing for another reason is not a CUDA checkpoint
        (
            "RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory",
            "cuda_checkpoint_on_tpu_host",
        ),
        # a repository that does not exist is not a gated one
        (
            "huggingface_hub.errors.RepositoryNotFoundError: 404 Client Error. Repository Not Found for url",
            "hf_gated_repo",
        ),
        # a barrier of the jax coordination service is not torch's store
        (
            "jax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: PjRT_Client_Connect. "
            "# of tasks that reached the barrier: 3/4.",
            "torch_store_or_gloo_timeout",
        ),
        # the compile count is the other counter's sub-rule
        (
            "pt-xla-profiler: CompileTime too frequent: 30 counts during 10 steps",
            "torch_xla_transfers_per_step",
        ),
        # a CUDA kernel without a dtype is not a CPU kernel
        ("RuntimeError: \"index_put_cuda\" not implemented for 'Bool'", "cpu_kernel_lacks_dtype"),
        # an axis missing from the mesh is not an axis named twice
        (
            "ValueError: Resource axis: model of PartitionSpec(None, 'model') is not found in mesh: "
            "('data',).",
            "mesh_axis_used_twice",
        ),
        # the SSH client refused by the server's key check reached the VM
        ("git@github.com: Permission denied (publickey).", "ssh_port_unreachable"),
        # an unknown field of a kind that exists is not a missing kind
        (
            'error: error validating "job.yaml": unknown field "replicas" in io.k8s.api.batch.v1.JobSpec',
            "kubernetes_kind_not_installed",
        ),
        # a KeyError of the program's own dict is not a launcher variable
        ("KeyError: 'MASTER_WEIGHTS'", "torchrun_variables_missing"),
        # jax's own ShapeDtypeStruct refusal has its own sub-rule
        (
            "TypeError: Argument 'x' of type <class 'jax._src.api.ShapeDtypeStruct'> is not a valid JAX type",
            "non_array_argument",
        ),
        # a numpy dtype that does not exist is not a torch dtype
        ("TypeError: Cannot interpret 'bfloat17' as a data type", "torch_dtype_given_to_numpy"),
        # a GPU that other code cannot find is not TorchTPU's profiler
        (
            "RuntimeError: GPU profiling requires CUPTI, which was not found",
            "torch_tpu_gpu_profiler_activity",
        ),
        # a collective the backend lacks is not point-to-point
        (
            "NotImplementedError: all_to_all is not supported on this TPU backend.",
            "torch_tpu_p2p_unsupported",
        ),
        # another library's device check
        ("ValueError: Expected a cuda device, but got: cpu", "torch_tpu_foreign_device_argument"),
        # a tensor that is not 2-D in another check is not Muon's
        ("ValueError: weight must be a 2D matrix for this layer", "muon_on_non_matrix_param"),
        # a block size another kernel asks a sequence length to divide by
        ("ValueError: seq_len=1000 must be a multiple of block_size=128", "scaled_mm_k_not_whole_blocks"),
        # a reduce op PyTorch itself refuses
        ("ValueError: Unsupported ReduceOp: PREMUL_SUM for backend gloo", "torch_tpu_reduce_op"),
    ],
)
def test_nearby_wording_is_not_claimed(text: str, not_sub_rule: str) -> None:
    assert_not_claimed(text, not_sub_rule)


def test_halted_core_note_is_not_a_compile_error() -> None:
    """ "no compiler metadata was provided" is the runtime's note on a halted core: the log stays unknown with
    the halted-core next steps, never a compile error."""
    crash = _diagnose(
        "jax.errors.JaxRuntimeError: INTERNAL: Core halted unexpectedly: No error message available as no "
        "compiler metadata was provided."
    )
    assert crash.category == "unknown"
    assert "tpu_halted" in crash.evidence.fix_rule
