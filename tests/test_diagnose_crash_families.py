"""Message forms of the weaker crash families, each sent to the sub-rule whose fix names its evidence.

Each fragment is worded as its upstream source raises it (values made up): jax/_src/xla_bridge.py (TPU
backend wait, tpu_driver, distributed initialise), torch_xla's computation client ("Missing XLA
configuration"), libtpu (slice builder, metadata), TensorFlow's TPU client and its server ("is neither a type
of a primitive operation", "Op type not registered"), jax/_src/pallas/mosaic/lowering.py ("Unimplemented
primitive"), Mosaic's verifier (jaxlib/mosaic), flax/errors.py (ScopeParamShapeError), jax's sharding
checks, PyTorch's index and allocator errors, TensorFlow's XLA bridge (unsupported ops, compile-time
constants) and jax's tracer errors.
"""

from __future__ import annotations

import pytest

from tests.crashlog_support import diagnosed_as
from tpu_runtime.diagnose.crash_facts import version_skew_facts
from tpu_runtime.diagnose.crash_release_facts import vocab_padding_facts
from tpu_runtime.diagnose.crashlog import diagnose_log

FORMS: list[tuple[str, str, str, str]] = [
    (
        # A libtpu flag put in XLA_FLAGS: the framework's XLA rejects it; it belongs in LIBTPU_INIT_ARGS.
        "parse_flags_from_env.cc:226] Unknown flags in XLA_FLAGS: "
        "--xla_tpu_enable_latency_hiding_scheduler=true\n"
        "Perhaps you meant to specify these on the TF_XLA_FLAGS envvar?\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_flag_in_xla_flags",
        'LIBTPU_INIT_ARGS="--xla_tpu_enable_latency_hiding_scheduler=true"',
    ),
    (
        # A flag XLA itself does not know (not a TPU flag) stays a release question.
        "Unknown flags in XLA_FLAGS: --xla_gpu_enable_made_up_pass=true\n",
        "version_mismatch",
        "version_mismatch/flag_from_another_release",
        "--xla_gpu_enable_made_up_pass=true",
    ),
    (
        "ERROR: Accessing retired flag 'xla_tpu_enable_made_up_offload'\n",
        "runtime_init_failure",
        "runtime_init_failure/retired_flag",
        "--xla_tpu_enable_made_up_offload",
    ),
    (
        # Mosaic E2002 on a 32-bit operand: the fix names the tiling the message gives.
        "jax.errors.JaxRuntimeError: INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: Failed to set "
        "window params for input 1: E2002: CompileTimeMosaicMisalignedBlockAndTiling:\n"
        "Operand of shape (..., 8, 512) has tiling (8, 128), but its block shape (..., 4, 512) is not "
        "divisible by tiling evenly nor matches the full shape\n",
        "mosaic_compile_error",
        "mosaic_compile_error/block_against_operand_tiling",
        "multiple of 8",
    ),
    (
        "RuntimeError: Bad StatusOr access: INTERNAL: Mosaic failed to compile TPU kernel: Slice shape along "
        "dimension 2 must be aligned to tiling (8), but is 2.\n",
        "mosaic_compile_error",
        "mosaic_compile_error/slice_against_tiling",
        "multiple of 8",
    ),
    (
        "AssertionError: Partition spec length (3) should be equal to the input rank (2).\n",
        "shape_dtype_error",
        "shape_dtype_error/partition_spec_rank",
        "tensor of rank 2",
    ),
    # (text, category, sub-rule, a word of the evidence the fix must name)
    (
        "/usr/lib/python3/site-packages/jax/_src/xla_bridge.py:146: UserWarning: TPU backend "
        "initialization is "
        "taking more than 60.0 seconds. Did you run your code on all TPU hosts? See "
        "https://jax.readthedocs.io/en/latest/multi_process.html for more information.\n",
        "runtime_init_failure",
        "runtime_init_failure/not_all_hosts_started",
        "--worker=all",
    ),
    (
        "RuntimeError: tensorflow/compiler/xla/xla_client/computation_client.cc:280 : Missing XLA "
        "configuration\n",
        "runtime_init_failure",
        "runtime_init_failure/torch_xla_no_device_config",
        "PJRT_DEVICE=TPU",
    ),
    (
        "E0101 grpc_tpu_driver.cc:1070] Failed to open the gRPC driver: 4: Deadline Exceeded: \n"
        "WARNING:absl:No GPU/TPU found, falling back to CPU. (Set TF_CPP_MIN_LOG_LEVEL=0 and rerun "
        "for more info.)\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_driver_backend_gone",
        "tpu_driver",
    ),
    (
        # jax >= 0.4 on the old TPU-node runtime: jaxlib has no TPU-node client any more (not a package skew).
        "RuntimeError: Unable to initialize backend 'tpu': module 'jaxlib.xla_extension' has no attribute "
        "'get_tpu_client' (set JAX_PLATFORMS='' to automatically choose an available backend)\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_node_runtime_unsupported",
        "TPU VM",
    ),
    (
        "AttributeError: module 'jax.tree_util' has no attribute 'register_pytree_with_keys_class'\n"
        "RuntimeError: \nAs of JAX 0.5.0, JAX only supports TPU VMs, not the older Colab TPUs.\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_node_runtime_unsupported",
        "0.5.0 or later",
    ),
    (
        "RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to establish SliceBuilder grpc "
        "channel to 10.0.0.12:8471.\n",
        "runtime_init_failure",
        "runtime_init_failure/slice_builder_unreachable",
        "10.0.0.12:8471",
    ),
    (
        "RuntimeError: jax.distributed.initialize() must be called before any JAX calls that might "
        "initialise "
        "the XLA backend.\n",
        "runtime_init_failure",
        "runtime_init_failure/distributed_initialize_late",
        "jax.distributed.initialize()",
    ),
    (
        "W0101 tpu_hal.cc] Failed to get TPU metadata (tpu-env) from instance metadata for variable "
        "CHIPS_PER_HOST_BOUNDS: INTERNAL: Couldn't connect to server\n",
        "runtime_init_failure",
        "runtime_init_failure/metadata_unreachable",
        "CHIPS_PER_HOST_BOUNDS",
    ),
    (
        "pytorch_lightning.utilities.exceptions.MisconfigurationException: No TPU devices were found.\n",
        "runtime_init_failure",
        "runtime_init_failure/framework_found_no_tpu",
        "PJRT_DEVICE=TPU",
    ),
    (
        "NotFoundError: 'AnonymousSeedGenerator' is neither a type of a primitive operation nor a name of a "
        "function registered in binary running on n-0a1b2c3d-w-0.\n",
        "version_mismatch",
        "version_mismatch/tensorflow_server_lacks_op",
        "n-0a1b2c3d-w-0",
    ),
    (
        "RuntimeError: xrt_computation_client.cc:105 : Check failed: session.Run() (Not found: Op type not "
        "registered 'XRTAllocateFromTensor' in binary running on n-0a1b2c3d-w-0. vs. OK)\n",
        "version_mismatch",
        "version_mismatch/xrt_ops_missing_on_tpu",
        "XRTAllocateFromTensor",
    ),
    (
        "ImportError: cannot import name 'linear_util' from 'jax' "
        "(/usr/lib/python3/site-packages/jax/__init__.py)\n",
        "version_mismatch",
        "version_mismatch/import_from_another_release",
        "linear_util",
    ),
    (
        "RuntimeError: operator torchvision::nms does not exist\n",
        "version_mismatch",
        "version_mismatch/torchvision_for_another_torch",
        "torchvision::nms",
    ),
    (
        "NotImplementedError: Unimplemented primitive in Pallas TPU lowering for KernelType.TC: cumsum.\n",
        "mosaic_compile_error",
        "mosaic_compile_error/unlowered_primitive",
        "cumsum",
    ),
    (
        "XlaRuntimeError: INTERNAL: Mosaic failed to compile TPU kernel: iota rank below 2D unsupported\n",
        "mosaic_compile_error",
        "mosaic_compile_error/rank_below_2d",
        "broadcasted_iota",
    ),
    (
        "XlaRuntimeError: INTERNAL: Mosaic failed to compile TPU kernel: Target does not support "
        "this comparison\n"
        "\nThe MLIR operation involved:\n"
        '  %5 = "arith.cmpf"(%3, %4) : (vector<8x128xbf16>, vector<8x128xbf16>) -> vector<8x128xi1>\n',
        "mosaic_compile_error",
        "mosaic_compile_error/dtype_on_this_generation",
        "float32",
    ),
    (
        "ValueError: Mosaic failed to compile TPU kernel: cannot statically prove that index in "
        "dimension 1 is a "
        "multiple of 128\n",
        "mosaic_compile_error",
        "mosaic_compile_error/unaligned_dynamic_index",
        "pl.multiple_of(index, 128)",
    ),
    (
        "flax.errors.ScopeParamShapeError: Initializer expected to generate shape (512, 4) but got "
        "shape (512, 6) "
        'instead for parameter "kernel" in "/Dense_1".\n',
        "shape_dtype_error",
        "shape_dtype_error/flax_param_shape",
        "/Dense_1",
    ),
    (
        "ValueError: One of pjit outputs was given the sharding of NamedSharding(mesh, P('data')), "
        "which implies "
        "that the global size of its dimension 0 should be divisible by 8, but it is equal to 12\n",
        "shape_dtype_error",
        "shape_dtype_error/sharding_divisibility",
        "multiple of 8",
    ),
    (
        "RuntimeError: Expected tensor for argument #1 'indices' to have one of the following scalar types: "
        "Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)\n",
        "shape_dtype_error",
        "shape_dtype_error/index_tensor_dtype",
        "indices",
    ),
    (
        "tensorflow.python.framework.errors_impl.InvalidArgumentError: Compilation failure: Detected "
        "unsupported "
        "operations when trying to compile graph cluster_1[] on XLA_TPU_JIT: ResizeNearestNeighbor, "
        "ResizeNearestNeighborGrad\n",
        "unsupported_op",
        "unsupported_op/tensorflow_ops_without_tpu_kernel",
        "ResizeNearestNeighbor",
    ),
    (
        "NotImplementedError: Nonsymmetric eigendecomposition is only implemented on the CPU backend.\n",
        "unsupported_op",
        "unsupported_op/cpu_only_primitive",
        "Nonsymmetric eigendecomposition",
    ),
    (
        "jax.errors.ConcretizationTypeError: Abstract tracer value encountered where concrete value "
        "is expected: "
        "traced array with shape int32[]\n",
        "xla_compile_error",
        "xla_compile_error/traced_value_as_static",
        "static_argnums",
    ),
    (
        "InvalidArgumentError: XLA compilation requires that operator arguments that represent shapes or "
        "dimensions be evaluated to concrete values at compile time.\n",
        "xla_compile_error",
        "xla_compile_error/tensorflow_shape_not_constant",
        "drop_remainder=True",
    ),
    (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:83] data. DefaultCPUAllocator: not enough memory: you "
        "tried to allocate 34359738368 bytes.\n",
        "host_oom",
        "host_oom/host_array_allocation",
        "RAM",
    ),
    (
        "RuntimeError: Error while lowering: f32[128,10]{1,0} xla::cast, "
        "location=forward@model.py:12, type=f32, "
        "dtype=Float, stype=Half\nError: torch_xla/csrc/convert_ops.cpp:83 : Unsupported XLA type 10\n",
        "unsupported_op",
        "unsupported_op/float16_on_tpu",
        "forward@model.py:12",
    ),
    (
        "RuntimeError: Error while lowering: f32[8,16]{1,0} aten::add\n"
        "Error: torch_xla/csrc/convert_ops.cpp:49 : Unsupported XLA type 12\n",
        "unsupported_op",
        "unsupported_op/float64_on_tpu",
        "float32",
    ),
    (
        "RuntimeError: Error while lowering: f32[64,64]{1,0} xla::cast, type=f32, dtype=Float, "
        "stype=ComplexDouble\n"
        "Error: torch_xla/csrc/convert_ops.cpp:83 : Unsupported XLA type 18\n",
        "unsupported_op",
        "unsupported_op/complex_on_tpu",
        "view_as_real",
    ),
    (
        # jaxlib's bundled copy of TensorFlow's loader (external/org_tensorflow/...); TensorFlow's own loader
        # goes to libtpu_lacks_function_tensorflow_loader (test_diagnose_evidence_ranking.py)
        "2022-01-01 00:00:00.000000: F "
        "external/org_tensorflow/tensorflow/core/tpu/tpu_library_init_fns.inc:34] "
        "TpuSomeFunction_Create not available in this library.\n",
        "version_mismatch",
        "version_mismatch/libtpu_lacks_function",
        "TpuSomeFunction_Create",
    ),
    (
        "A module that was compiled using NumPy 1.x cannot be run in NumPy 2.0.0 as it may crash.\n",
        "version_mismatch",
        "version_mismatch/numpy_abi",
        "numpy<2",
    ),
    (
        # NumPy's guard wraps its line after "cannot be run in"; a launcher prefix on each line (SkyPilot's)
        "(train, pid=7) A module that was compiled using NumPy 1.x cannot be run in\n"
        "(train, pid=7) NumPy 2.1.0 as it may crash. To support both 1.x and 2.x\n",
        "version_mismatch",
        "version_mismatch/numpy_abi",
        "numpy<2",
    ),
    (
        "KeyError: 'TPU_WORKER_HOSTNAMES'\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_env_var_missing",
        "TPU_WORKER_HOSTNAMES",
    ),
    (
        "ValueError: To serve at least one request with the models's max seq len (32768), (8.00 GiB "
        "KV cache is "
        "needed, which is larger than the available KV cache memory (1.50 GiB). Based on the "
        "available memory, "
        "the estimated maximum model length is 6144. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.\n",
        "hbm_oom",
        "hbm_oom/kv_cache_for_max_len",
        "--max-model-len 6144",
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: TPU platform already registered "
        "for platform "
        "hardware version 4\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_platform_registered_twice",
        "jax.devices()",
    ),
    (
        "external/local_xla/xla/stream_executor/tpu/tpu_platform_interface.cc:78] No TPU platform found.\n",
        "runtime_init_failure",
        "runtime_init_failure/tensorflow_tpu_platform_missing",
        "tensorflow-tpu",
    ),
    # XLA's error-code pages (E0102, E0200, E1002, E1200), torch_xla's metrics and spawn, jax.distributed
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: TPU TensorCore Hbm usage: 12.50G, "
        "SparseCore Hbm usage 80.00G, exceeding available bytes: 31.25G\n",
        "hbm_oom",
        "hbm_oom/sparsecore_hbm",
        "80.00 GiB",
    ),
    (
        "Compilation failure: Ran out of memory in memory space vmem. It should not be possible to run out "
        "of vmem - please file a bug against XLA.\n",
        "vmem_oom",
        "vmem_oom/compiler_fusion_vmem",
        "--xla_dump_to",
    ),
    (
        "XlaRuntimeError: INTERNAL: Core halted unexpectedly: INTERNAL: Accelerator device halted "
        "prematurely, perhaps due to an on-device check-failure. Node 0 halted unexpectedly at tag:pc "
        "TensorCoreSequencer:3:0x1a2: Semaphore (scratch argument 2) has a nonzero value upon exit from a "
        "Mosaic kernel. Make sure every DMA is awaited, and every semaphore signal is paired with a wait.\n",
        "mosaic_compile_error",
        "mosaic_compile_error/semaphore_not_awaited",
        ".wait()",
    ),
    (
        "XlaRuntimeError: INVALID_ARGUMENT: Executable(jit_train_step) expected parameter 17 of size 262144 "
        "(f32[64,1024]{1,0:T(8,128)}) but got buffer with incompatible size 524288 "
        "(f32[64,1024]{0,1:T(8,128)}): while running replica 0 and partition 3 of a replicated computation\n",
        "shape_dtype_error",
        "shape_dtype_error/buffer_layout_mismatch",
        "f32[64,1024]{0,1:T(8,128)}",
    ),
    (
        "TypeError: dot_general requires contracting dimensions to have the same shape, got (512,) and "
        "(768,).\n",
        "shape_dtype_error",
        "shape_dtype_error/dot_contracting_mismatch",
        "768",
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: Tensor which is moved to host (starting "
        "from copy.12) is returned from the entry computation but the layout for this output is not set to "
        "host memory.\n",
        "xla_compile_error",
        "xla_compile_error/host_offload_output",
        "pinned_host",
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: "
        "PjRT_Client_Connect. Timed out task names:\n/job:jax_worker/replica:0/task:1\n"
        "/job:jax_worker/replica:0/task:3\n",
        "collective_timeout",
        "collective_timeout/client_connect_barrier",
        "task:3",
    ),
    (
        "torch.multiprocessing.spawn.ProcessExitedException: process 5 terminated with signal SIGKILL\n",
        "host_oom",
        "host_oom/spawned_process_killed",
        "batch size",
    ),
    (
        "Counter: CachedCompile\n  Value: 3\nCounter: MarkStep\n  Value: 50\n"
        "Counter: aten::_local_scalar_dense\n  Value: 4000\n",
        "recompilation",
        "recompilation/host_reads",
        "4000",
    ),
    (
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Attempting to reserve 6.00G at the bottom of "
        "memory. That was not possible. There are 7.50G free, 0B reserved, and 5.25G reservable.\n",
        "hbm_oom",
        "hbm_oom/hbm_fragmented",
        "5.25 GiB",
    ),
    (
        "TypeError: dot_general requires lhs batch dimensions and rhs batch dimensions to have the same "
        "shape, got [8 16] and [8 1].\n",
        "shape_dtype_error",
        "shape_dtype_error/dot_batch_mismatch",
        "[8 1]",
    ),
    (
        # torch.load restoring storages saved from XLA tensors (torch/serialization.py's location tags).
        "RuntimeError: don't know how to restore data location of torch.storage.UntypedStorage "
        "(tagged with xla:1)\n",
        "unsupported_op",
        "unsupported_op/xla_tensors_in_checkpoint",
        "tagged xla:1",
    ),
    (
        # The same checkpoint unpickled where no XLA backend exists (torch/_utils.py's _rebuild_xla_tensor).
        '  File "/opt/conda/lib/python3.10/site-packages/torch/_utils.py", line 177, in _rebuild_xla_tensor\n'
        "    tensor = torch.from_numpy(data).to(dtype=dtype, device=device)\n"
        "RuntimeError: Could not run 'aten::empty_strided' with arguments from the 'XLA' backend.\n",
        "unsupported_op",
        "unsupported_op/xla_tensors_in_checkpoint_unnamed",
        'map_location="cpu"',
    ),
    (
        # A notebook host restarting its kernel when its RAM runs out (Kaggle's wording).
        "Your notebook tried to allocate more memory than is available. It has restarted.\n",
        "host_oom",
        "host_oom/notebook_host_ram",
        "high-RAM runtime",
    ),
    (
        # libtpu's TPU client finding no chip (the driver name varies with the release).
        "jaxlib.xla_extension.XlaRuntimeError: NOT_FOUND: No tpu7 device found.\n",
        "runtime_init_failure",
        "runtime_init_failure/no_tpu_device_found",
        "ls /dev/accel*",
    ),
    (
        # An offline conversion script of the user's own placing the whole model on one TPU core.
        "Traceback (most recent call last):\n"
        '  File "/home/me/tools/convert_to_safetensors.py", line 41, in <module>\n'
        "    params = jax.device_put(params)\n"
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 1.00GiB "
        "(1073741824B) on device ordinal 0\n",
        "hbm_oom",
        "hbm_oom/offline_tool_on_device",
        "convert_to_safetensors.py",
    ),
    (
        # Only the shell's report of a SIGKILL: the host-RAM fallback names the check and the knobs.
        "step 120 loss 2.1\nKilled\n",
        "host_oom",
        "host_oom/from_facts_killed",
        "dmesg",
    ),
    (
        # The kill happens while a checkpoint is read: the loading fallback names mmap loading.
        '  File "train.py", line 80, in <module>\n    state = torch.load(ckpt_path)\nKilled\n',
        "host_oom",
        "host_oom/from_facts_loading_weights",
        "mmap=True",
    ),
    (
        # The shell's job report of a SIGKILLed command: the fallback names the command and the check.
        "./run.sh: line 9: 71885 Killed                  python -m trainer.main --cfg=pod.py\n",
        "host_oom",
        "host_oom/from_facts_killed",
        "python -m trainer.main --cfg=pod.py",
    ),
    (
        # torch.compile guards on a module's training flag: train()/eval() toggling, two compiled functions.
        "W0605 17:24:08.994000 1 convert_frame.py:744] [4/8] torch._dynamo hit config.cache_size_limit (8)\n"
        "W0605 17:24:08.994000 1 convert_frame.py:744] [4/8]    function: 'forward' (model.py:149)\n"
        "W0605 17:24:08.994000 1 convert_frame.py:744] [4/8]    last reason: L['self'].training == False\n",
        "recompilation",
        "recompilation/dynamo_training_guard",
        "two separate compiled functions",
    ),
    (
        # A global-state guard on grad mode: a training step also called under torch.no_grad() to evaluate.
        "V0101 10:00:00.000000 7 torch/_dynamo/guards.py:5396] [1/1] [__recompiles] Recompiling function "
        "train_step in /home/u/fit.py:12\n"
        "V0101 10:00:00.000000 7 torch/_dynamo/guards.py:5396] [1/1] [__recompiles]     triggered by the "
        "following guard failure(s):\n"
        "V0101 10:00:00.000000 7 torch/_dynamo/guards.py:5396] [1/1] [__recompiles]     - 1/0: GLOBAL_STATE "
        "changed: grad_mode \n",
        "recompilation",
        "recompilation/dynamo_grad_mode_guard",
        "eval_step = torch.compile",
    ),
    (
        # The guard on the line after "triggered by the following guard failure(s):" is a Python int.
        "".join(
            f"[2024-01-01 10:00:0{i},000] torch._dynamo.guards.__recompiles: [DEBUG] Recompiling function "
            "accumulate in train.py:6\n"
            f"[2024-01-01 10:00:0{i},000] torch._dynamo.guards.__recompiles: [DEBUG]     triggered by the "
            "following guard failure(s):\n"
            f"[2024-01-01 10:00:0{i},000] torch._dynamo.guards.__recompiles: [DEBUG]     - "
            f"L['n_steps'] == {i}\n"
            for i in range(3)
        ),
        "recompilation",
        "recompilation/dynamo_python_value_guard",
        "L['n_steps'] == 2",
    ),
    (
        # The older one-line form inside a logged tuple; a captured object created anew each call.
        "".join(
            f"[2023-04-13 21:42:5{i},808] torch._dynamo.convert_frame.__recompiles: [DEBUG] ('Recompiling "
            "function step in /home/u/run.py', \"triggered by the following guard failure: "
            f"___check_obj_id(L['fn'], {1400 + i})\")\n"
            for i in range(3)
        ),
        "recompilation",
        "recompilation/dynamo_object_identity_guard",
        "outside the loop",
    ),
    (
        # One PT_XLA_DEBUG_LEVEL analysis (no error word): the host read and the user frame are named.
        "pt-xla-profiler: Compilation Analysis: Compilation Cause\n"
        "pt-xla-profiler: Compilation Analysis:   most likely user code trying to access tensor value before "
        "mark_step\n"
        "pt-xla-profiler: Compilation Analysis: Python Frame Triggered Execution:\n"
        "pt-xla-profiler: Compilation Analysis:   mark_step (/src/xla/torch_xla/core/xla_model.py:840)\n"
        "pt-xla-profiler: Compilation Analysis:   eval_step (/home/u/loop.py:51)\n",
        "recompilation",
        "recompilation/torch_xla_cause_host_read",
        "eval_step at /home/u/loop.py:51",
    ),
    (
        # vLLM's TPU runner finds a compile after its warm-up: the bucket-sizing flags are named.
        "ERROR 05-01 10:00:00 [core.py:386] AssertionError: Recompilation after warm up is detected during "
        "execute_model. num_xla_graphs = 12 curr_cached_graph = 13\n",
        "recompilation",
        "recompilation/vllm_recompile_after_warmup",
        "--max-num-batched-tokens",
    ),
    (
        # XLA E0101: the program itself does not fit beside the live buffers; the program is named.
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Error loading program 'jit_update_fn': Attempting to reserve "
        "12.50G at the bottom of memory. That was not possible. There are 310.00M free, 0B reserved, and "
        "310.00M reservable.\n",
        "hbm_oom",
        "hbm_oom/program_load",
        "jit_update_fn",
    ),
    (
        # PyTorch's DataLoader worker killed by SIGBUS: shared memory, not RAM, is the limit to raise.
        "RuntimeError: DataLoader worker (pid 4312) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.\n",
        "host_oom",
        "host_oom/dataloader_shared_memory",
        "--shm-size",
    ),
    (
        # A constant baked into the executable (an array the jitted function closes over) does not fit.
        "E0000 00:00:1 pjrt_stream_executor_client.cc:2985] Execution of replica 0 failed: INTERNAL: "
        "Failed to allocate 17179869184 bytes for new constant\n",
        "hbm_oom",
        "hbm_oom/large_constant",
        "as an argument",
    ),
    (
        # TensorFlow's allocator names the CPU: host RAM, and the tensor's shape is named.
        "ResourceExhaustedError: OOM when allocating tensor with shape[8192,50257] and type float on "
        "/job:localhost/replica:0/task:0/device:CPU:0 by allocator cpu\n",
        "host_oom",
        "host_oom/tensorflow_cpu_tensor",
        "[8192,50257]",
    ),
]


# Message forms of the families the rules had missed, as the upstream code words them (each line is the
# message its source raises, filled in with made-up values):
# jax/_src/tpu_custom_call.py (older "Internal TPU kernel compiler error" wording of Mosaic failures),
# xla/service/hlo_verifier.cc ("during context [hlo verifier]"), xla/pjrt/pjrt_api.cc (PJRT versions),
# jax/_src/xla_bridge.py (TPU present, no libtpu), tensorflow/python/tpu/client/client.py (no TPU name),
# torch.nn.functional.embedding (index past the table).
FORMS += [
    (
        "RuntimeError: Internal TPU kernel compiler error: Not implemented: unsupported layout change\n"
        "\nThe MLIR operation involved:\n"
        '  %7 = "vector.shape_cast"(%5) : (vector<8x1xf32>) -> vector<8xf32>\n',
        "mosaic_compile_error",
        "mosaic_compile_error/layout_change",
        "unsupported layout change",
    ),
    (
        "INTERNAL: during context [hlo verifier]: Expected instruction to have shape equal to "
        "f32[4,8]{1,0}, actual shape is f32[8,4]{1,0}:\n"
        "%dot.3 = f32[8,4]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n",
        "xla_compile_error",
        "xla_compile_error/hlo_verifier_shape",
        "dot.3",
    ),
    (
        "F0101 00:00:00.0 1 pjrt_c_api_helpers.cc:258] Unexpected error status: the plugin was built with "
        "PJRT API version 0.75.\n",
        "version_mismatch",
        "version_mismatch/pjrt_api_version",
        "PJRT C API versions",
    ),
    (
        "AttributeError: module 'jaxlib.xla_extension' has no attribute 'some_new_client'\n",
        "version_mismatch",
        "version_mismatch/module_missing_attribute",
        "some_new_client",
    ),
    (
        "WARNING:jax._src.xla_bridge:A Google TPU may be present on this machine, but either a TPU-enabled "
        "jaxlib or libtpu is not installed. Falling back to cpu.\n",
        "runtime_init_failure",
        "runtime_init_failure/jax_without_libtpu",
        'pip install -U "jax[tpu]"',
    ),
    (
        "ValueError: Please provide a TPU Name to connect to.\n",
        "runtime_init_failure",
        "runtime_init_failure/tensorflow_no_tpu_name",
        "tpu='local'",
    ),
    (
        '  File "train.py", line 3, in step\nIndexError: index out of range in self\n',
        "shape_dtype_error",
        "shape_dtype_error/embedding_index_out_of_range",
        "resize_token_embeddings",
    ),
]


# Families from their sources: each message as the code that raises it words it (values made up).
FORMS += [
    (
        "E0601 coordination_service.cc:380] /job:jax_worker/replica:0/task:3 Heartbeat: Incarnation ID "
        "mismatch: expecting 123 but got 456. The task has restarted and likely crashed earlier - check for "
        "any earlier errors or any scheduler events (e.g. preemption, eviction) to debug further.\n",
        "collective_timeout",
        "collective_timeout/task_restarted_named",
        "/job:jax_worker/replica:0/task:3",
    ),
    (
        "jax.errors.JaxRuntimeError: INTERNAL: Coordination service has stopped. RegisterTask() from task: "
        "/job:jax_worker/replica:0/task:2 failed.\n",
        "collective_timeout",
        "collective_timeout/coordination_service_stopped",
        "process 0",
    ),
    (
        "E0601 client.cc:90] Shutdown barrier has failed.\nBarrier result: 'DEADLINE_EXCEEDED: Barrier timed "
        "out. Id: Shutdown::0'\n",
        "collective_timeout",
        "collective_timeout/shutdown_barrier",
        "shutdown barrier",
    ),
    (
        "jax.errors.JaxRuntimeError: INTERNAL: Mosaic failed to compile TPU kernel: Unsupported version: "
        "expected <= 5 but got 7\n",
        "version_mismatch",
        "version_mismatch/mosaic_serialisation_version",
        "jax[tpu]",
    ),
    (
        "RuntimeError: Pallas TPU requires a recent libtpu version (at least 0.0.44). Found version "
        "string:\n",
        "version_mismatch",
        "version_mismatch/pallas_needs_newer_libtpu",
        "0.0.44",
    ),
    (
        "ValueError: Loads are only allowed on VMEM and SMEM references.\n",
        "mosaic_compile_error",
        "mosaic_compile_error/kernel_memory_space",
        "memory_space",
    ),
    (
        "ValueError: Cannot find block sizes that fit within VMEM limit.\n",
        "vmem_oom",
        "vmem_oom/kernel_blocks_do_not_fit",
        "vmem_limit_bytes",
    ),
    # XLA error pages 2xxx, E3000 and E3001 (https://github.com/openxla/xla/tree/main/docs/errors)
    (
        "INVALID_ARGUMENT: Mosaic failed to compile TPU kernel: unregistered operation 'tpu.wait_dma' found "
        "in dialect ('tpu') that does not allow unknown operations\n",
        "version_mismatch",
        "version_mismatch/mosaic_op_unknown_to_libtpu",
        "tpu.wait_dma",
    ),
    (
        "INTERNAL:Failed to run pass pipeline. Hlo-Op: result.1:279:1: error: 'memref.alloca' op current "
        "allocation offset upper bound (140704 words) exceeds the legitimate user allocatable offset upper "
        "bound (131071 words) in memory space 201 when allocating 23440 words.\n",
        "vmem_oom",
        "vmem_oom/sparsecore_scratch",
        "--xla_sc_dump_mlir_to",
    ),
    (
        "INTERNAL: error: current allocation offset upper bound (9000 words) exceeds the legitimate user "
        "allocatable offset upper bound (8000 words) in memory space 203 when allocating 2000 words.\n",
        "hbm_oom",
        "hbm_oom/sparsecore_hbm_allocation",
        "max_ids_per_partition",
    ),
    (
        "XLA:TPU compile permanent error. Compilation failure: No viable logical replica count for the "
        "embedding table with metadata: max_nz_per_row = 141352, max_unique_nz_per_row = 8\n",
        "vmem_oom",
        "vmem_oom/sparsecore_replica_count",
        "max_nz_per_row",
    ),
    # jax's cluster start-up (jax/_src/distributed.py, jax/_src/clusters/k8s_cluster.py, xla_bridge.py)
    (
        "W0101 JAX detected proxy variable(s) in the environment as distributed setup: HTTPS_PROXY. On some "
        "systems, this may cause a hang of distributed.initialize and you may need to unset these ENV "
        "variable(s)\njax.errors.JaxRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: "
        "PjRT_Client_Connect.\n",
        "collective_timeout",
        "collective_timeout/distributed_behind_proxy",
        "HTTPS_PROXY",
    ),
    (
        "RuntimeError: Pods within a job need a headless service in order to communicate with each other. "
        "To fix, add the following to the job specification:\n",
        "runtime_init_failure",
        "runtime_init_failure/gke_headless_service",
        "subdomain",
    ),
    (
        "ValueError: coordinator_address should be defined.\n",
        "runtime_init_failure",
        "runtime_init_failure/jax_distributed_arguments",
        "coordinator_address",
    ),
    (
        "RuntimeError: Backend 'tpu' provides no devices.\n",
        "runtime_init_failure",
        "runtime_init_failure/from_facts_backend_missing",
        "Backend 'tpu' provides no devices",
    ),
    # PyTorch/XLA's start-up checks (torch_xla/_internal/pjrt.py, torch_xla/_internal/tpu.py)
    (
        "RuntimeError: Runtime is already initialized. Do not use the XLA device before calling xmp.spawn.\n",
        "runtime_init_failure",
        "runtime_init_failure/torch_xla_device_before_spawn",
        "xmp.spawn",
    ),
    (
        "RuntimeError: Could not find IP of host running process 0\n",
        "runtime_init_failure",
        "runtime_init_failure/torch_xla_process_zero_ip",
        "--worker=all",
    ),
    (
        "OSError: libtpu not found\n",
        "runtime_init_failure",
        "runtime_init_failure/libtpu_not_found",
        "torch_xla[tpu]",
    ),
    (
        "ValueError: Unsupported nprocs (8). Please use nprocs=1 or None (default). If None, spawn will use "
        "all available devices.\n",
        "runtime_init_failure",
        "runtime_init_failure/unsupported_nprocs",
        "nprocs=1",
    ),
    # the older release's warning for the same count (made-up count): the process count, not the chips
    (
        "WARNING:root:Unsupported nprocs (4), ignoring...\n",
        "runtime_init_failure",
        "runtime_init_failure/unsupported_nprocs",
        "nprocs=None",
    ),
    # launcher options that exclude one another (made-up option names): keep one, name the ones given
    (
        "error: --foo-backend and --bar-backend are mutually exclusive\n",
        "runtime_init_failure",
        "runtime_init_failure/exclusive_options_together",
        "--foo-backend and --bar-backend",
    ),
    (
        "ValueError: Only one of `tpu_name` or `tpu_address` may be set.\n",
        "runtime_init_failure",
        "runtime_init_failure/exclusive_options_together",
        "`tpu_name` or `tpu_address`",
    ),
    # a hybrid mesh whose data-centre shape does not multiply to the slices (made-up shape): name both
    (
        "ValueError: Number of slices 2 must equal the product of dcn_mesh_shape (4, 1)\n",
        "runtime_init_failure",
        "runtime_init_failure/dcn_mesh_product_vs_slices",
        "equal 2",
    ),
    # a length setting above the one that bounds it (made-up setting names): lower the first
    (
        "ValueError: max_prefill_predict_length must be less than or equal to max_target_length\n",
        "shape_dtype_error",
        "shape_dtype_error/setting_above_its_bound",
        "lower max_prefill_predict_length to at most max_target_length",
    ),
    # a graph over the TPU program's input limit (made-up counts): PJRT's parameter wrapping, not a bug report
    (
        "2024-01-02 03:04:05.000001: E tensorflow/core/tpu/kernels/tpu_compilation_cache_external.cc:113] "
        "Computation requires more parameters (4012) than supported (limit 3302).\n",
        "xla_compile_error",
        "xla_compile_error/program_parameter_limit",
        "XLA_PARAMETER_WRAPPING_THREADSHOLD",
    ),
    # a module handed to an FSDP wrapper twice (torch FSDP's wording)
    (
        "RuntimeError: Cannot wrap a module that is already wrapped with FullyShardedDataParallel\n",
        "unsupported_op",
        "unsupported_op/module_wrapped_twice",
        "inner child modules first",
    ),
    (
        # A hang digest that blames the hardware of a named host (made-up host name): replace the host.
        "Megascale detects a hang that is likely caused by bad TPU chips on the following hosts.\n"
        "Full error digest:\n  Potential cause: Bad TPU chips\n  Potential culprit workers: t1v-n-abc-w-3\n",
        "collective_timeout",
        "collective_timeout/faulty_hardware_named",
        "t1v-n-abc-w-3",
    ),
    (
        # A Kubernetes container killed at its memory limit: raise the pod's limit, not the TPU's memory.
        "  Last State:  Terminated\n    Reason:  OOMKilled\n    Exit Code:  137\n",
        "host_oom",
        "host_oom/from_facts_container_memory_limit",
        "resources.limits.memory",
    ),
    (
        # A one-line PyTorch/XLA device OOM without sizes: the fallback names torch_xla's own knobs.
        "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of "
        "memory in memory space hbm.\n",
        "hbm_oom",
        "hbm_oom/from_facts_torch_xla",
        "torch.utils.checkpoint",
    ),
    (
        # A barrier that only some tasks reached (made-up id): the fix names the barrier and the timeouts.
        "XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: my_sync_7. "
        "# of tasks that reached the barrier: 3/4.\n",
        "collective_timeout",
        "collective_timeout/from_facts_barrier_counts",
        "heartbeat_timeout_seconds",
    ),
    (
        # Older jax raised Mosaic's layout failures as a bare NotImplementedError; the traceback's BlockSpec
        # (index_map first, as before jax 0.4.31) names the block the fix points at.
        '  File "/opt/venv/lib/python3.10/site-packages/jax/_src/pallas/pallas_call.py", line 402, in f\n'
        "          pl.BlockSpec(lambda i: (i, 0), (16, 1)),\n"
        "NotImplementedError: unsupported shape cast\n",
        "mosaic_compile_error",
        "mosaic_compile_error/layout_change",
        "(16, 1)",
    ),
    (
        # jax's TPU VM start-up finding no TPU attribute in the metadata (the server's 404 page as the key):
        # the host is not a TPU VM, whatever the versions.
        "/opt/venv/lib/python3.9/site-packages/jax/__init__.py:27: UserWarning: cloud_tpu_init failed: "
        "KeyError('<!DOCTYPE html>\\n<html lang=en>\\n  <title>Error 404 (Not Found)!!1</title>')\n"
        '  _warn(f"cloud_tpu_init failed: {repr(exc)}\\n This a JAX bug; please report ")\n',
        "runtime_init_failure",
        "runtime_init_failure/cloud_tpu_init_not_a_tpu_vm",
        "Error 404 (Not Found)",
    ),
    (
        # The same warning from another libtpu stays a version question.
        "UserWarning: cloud_tpu_init failed: AttributeError(\"module 'libtpu' has no attribute "
        "'get_library_path'\")\n",
        "version_mismatch",
        "version_mismatch/libtpu_from_another_package",
        "get_library_path",
    ),
    (
        # torch_xla's extension missing a torch symbol decides, even beside a jax start-up warning.
        "UserWarning: cloud_tpu_init failed: KeyError('')\n"
        '  _warn(f"cloud_tpu_init failed: {repr(exc)}\\n This a JAX bug; please report ")\n'
        "ImportError: /opt/venv/lib/python3.11/site-packages/_XLAC.cpython-311-x86_64-linux-gnu.so: "
        "undefined symbol: _ZN3c104impl12MadeUpSymbolEv\n",
        "version_mismatch",
        "version_mismatch/torch_xla_built_for_another_torch",
        "_ZN3c104impl12MadeUpSymbolEv",
    ),
    (
        # A container that cannot reach the metadata server: the fix names host networking and the runtime
        # version a TPU VM of that generation needs.
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='metadata.google.internal', port=80): "
        "Max retries exceeded with url: /computeMetadata/v1/instance/attributes/accelerator-type\n",
        "runtime_init_failure",
        "runtime_init_failure/metadata_unreachable_unnamed",
        "--network=host",
    ),
    (
        # A parallelism allowed over one network scope only, set over both: the two per-scope settings named.
        "ValueError: Tensor parallelism may only be set on ICI or DCN, not both.\n",
        "runtime_init_failure",
        "runtime_init_failure/exclusive_scope_both_set",
        "ici_tensor_parallelism and dcn_tensor_parallelism",
    ),
    (
        # A feature of another kind, the same refusal: the scopes are named, no setting is made up.
        "ValueError: Remat offloading can only be enabled for host or device memory, not both.\n",
        "runtime_init_failure",
        "runtime_init_failure/exclusive_scope_both_set",
        "over host or over device",
    ),
    (
        # A TPU-only strategy chosen by a setting the message quotes, run on other hardware.
        "ValueError: Ring attention (attention_strategy='ring') is only supported on TPU.\n",
        "runtime_init_failure",
        "runtime_init_failure/tpu_only_setting_off_tpu",
        "another attention_strategy",
    ),
    (
        # Pallas's grid/semantics count check in its own wording, with both counts quoted.
        "ValueError: Length of grid does not match length of dimension semantics. len(grid)=2, "
        "len(dimension_semantics)=1\n",
        "mosaic_compile_error",
        "mosaic_compile_error/dimension_semantics_length",
        "(2 grid axes, 1 entries)",
    ),
    (
        # A 1-D block that is neither whole, a register multiple nor a large enough power of 2.
        "ValueError: The Pallas TPU lowering currently requires that rank 1 block shapes, either 1) the "
        "first (and only) dimension of the block shape is equal to the first (and only) dimension of the "
        "array shape, or 2) the first (and only) dimension of the block shape is a multiple of 1024, or 3) "
        "the first (and only) dimension of the block shape is a power of 2 and at least the tiling size "
        "(512 = 128 * (32 // 8)) of the array shape. Block spec for y_ref in pallas_call k at k.py:3 "
        "has block shape (384,), array "
        "shape (1536,), and index_map { lambda ; a:i32[]. let  in (a,) }, in memory space None.\n",
        "mosaic_compile_error",
        "mosaic_compile_error/rank1_block_shape",
        "(512 elements); block (384,) over (1536,)",
    ),
    (
        # A checkpoint option the Pathways path does not implement: the option turned off is named.
        "ValueError: OCDBT is not supported with Pathways.\n",
        "unsupported_op",
        "unsupported_op/pathways_feature_refused",
        "use_ocdbt=False",
    ),
    (
        # An async checkpoint save whose background thread ran out of time.
        "E0101 async_checkpointer.py:210] Thread save_thread_3 did not complete within 600 seconds.\n",
        "collective_timeout",
        "collective_timeout/async_save_timed_out",
        "AsyncOptions(timeout_secs=...)",
    ),
    (
        # The Pathways path accepting one sharding type only.
        "ValueError: Pathways only supports jax.sharding.NamedSharding.\n",
        "unsupported_op",
        "unsupported_op/pathways_requires_type",
        "jax.sharding.NamedSharding over a Mesh",
    ),
]


# Round diag36: device meshes asking for more devices than they get, arguments given together that exclude one
# another, memory kinds, tensors no dimension of which fits a mesh axis, pairwise settings of different length
# and EasyDeL's batch axes (tunix/utils/mesh.py, tunix/rl/rl_cluster.py, torchax/mesh_util.py, EasyDeL).
FORMS += [
    (
        "ValueError: Mesh shape (2, 8) requires 16 devices, but was assigned 4. axis_names=('dp', 'tp').\n",
        "runtime_init_failure",
        "runtime_init_failure/mesh_needs_more_devices",
        "mesh.shape (2, 8)",
    ),
    (
        "ValueError: Mesh allocation requires 16 devices for reference, but only 8 remain available.\n",
        "runtime_init_failure",
        "runtime_init_failure/mesh_needs_more_devices",
        "the reference mesh",
    ),
    (
        "ValueError: Pass either mesh or devices to build_model, not both.\n",
        "runtime_init_failure",
        "runtime_init_failure/exclusive_options_together",
        "mesh or devices",
    ),
    (
        "ValueError: Invalid memory kind: 'host'. Expected one of device, pinned_host.\n",
        "unsupported_op",
        "unsupported_op/memory_kind_not_supported",
        '"host"',
    ),
    (
        "AssertionError: Unable to find a dim to shard because None of the dims ((7, 9, 3)) in shape is "
        "multiple of 4\n",
        "shape_dtype_error",
        "shape_dtype_error/no_dim_to_shard",
        "multiple of 4",
    ),
    (
        "ValueError: ici_parallelism (1, 4) and mesh_axes ('data', 'fsdp', 'tensor') must have the same "
        "length\n",
        "shape_dtype_error",
        "shape_dtype_error/pairwise_lengths_differ",
        "mesh_axes one entry per",
    ),
    (
        "ValueError: One of device_put args was given the sharding of NamedSharding(mesh=Mesh('dp': 2, "
        "'fsdp': 4, 'tp': 1, 'sp': 1), spec=PartitionSpec(('dp', 'fsdp'),), memory_kind=device), which "
        "implies that the global size of its dimension 0 should be divisible by 8, but it is equal to 3 "
        "(full shape: (3, 2048))\n",
        "shape_dtype_error",
        "shape_dtype_error/sharding_divisibility_easydel_mesh",
        "sharding_axis_dims",
    ),
]


@pytest.mark.parametrize(("text", "category", "fix_rule", "evidence"), FORMS)
def test_family_form_gets_its_sub_rule(text: str, category: str, fix_rule: str, evidence: str) -> None:
    crash = diagnosed_as(text, category, fix_rule)
    assert evidence in crash.fix  # the fix names what this log shows, not the category's paragraph


# A sub-rule whose evidence is absent stays out: the log keeps its category, under another rule.
WITHOUT_EVIDENCE = [
    pytest.param(
        # Only the user's own script counts: a converter inside site-packages is part of the training run.
        '  File "/usr/local/lib/python3.10/site-packages/flax/training/convert_checkpoint.py", line 9, in f\n'
        "XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 1.00GiB (1073741824B) on device "
        "ordinal 0\n",
        "hbm_oom",
        "hbm_oom/offline_tool_on_device",
        id="a_library_file_named_like_a_conversion_tool_is_not_the_users_tool",
    ),
    pytest.param(
        # A request larger than all free HBM is plain exhaustion, not fragmentation.
        "RESOURCE_EXHAUSTED: Attempting to reserve 9.00G at the bottom of memory. That was not possible. "
        "There are 7.50G free, 0B reserved, and 5.25G reservable.\n",
        "hbm_oom",
        "hbm_oom/hbm_fragmented",
        id="fragmentation_only_when_the_free_memory_would_have_sufficed",
    ),
    pytest.param(
        # Another global state changed (deterministic algorithms switched on): not a grad-mode switch.
        "V0101 10:00:00.000000 7 torch/_dynamo/guards.py:5396] [1/1] [__recompiles] Recompiling function "
        "train_step in /home/u/fit.py:12\n"
        "V0101 10:00:00.000000 7 torch/_dynamo/guards.py:5396] [1/1] [__recompiles]     triggered by the "
        "following guard failure(s):\n"
        "V0101 10:00:00.000000 7 torch/_dynamo/guards.py:5396] [1/1] [__recompiles]     - 1/0: GLOBAL_STATE "
        "changed: deterministic_algorithms \n",
        "recompilation",
        "recompilation/dynamo_grad_mode_guard",
        id="grad_mode_fix_only_when_grad_mode_is_the_changed_state",
    ),
    pytest.param(
        # XLA type 10 is F16: the float16 rule, not the complex one, although both read convert_ops' number.
        "RuntimeError: Error while lowering: f32[4,4]{1,0} xla::cast, type=f32, dtype=Float, stype=Half\n"
        "Error: torch_xla/csrc/convert_ops.cpp:83 : Unsupported XLA type 10\n",
        "unsupported_op",
        "unsupported_op/complex_on_tpu",
        id="half_cast_is_not_a_complex_cast",
    ),
    pytest.param(
        # XLA type 120 is no F64: the number must match whole.
        "RuntimeError: Error while lowering: f32[4,4]{1,0} aten::mul\n"
        "Error: torch_xla/csrc/convert_ops.cpp:49 : Unsupported XLA type 120\n",
        "unsupported_op",
        "unsupported_op/float64_on_tpu",
        id="only_type_12_is_float64",
    ),
]


@pytest.mark.parametrize(("text", "category", "absent_rule"), WITHOUT_EVIDENCE)
def test_a_sub_rule_without_its_evidence_stays_out(text: str, category: str, absent_rule: str) -> None:
    crash = diagnose_log(text, "-")
    assert crash.category == category
    assert crash.evidence.fix_rule != absent_rule


def test_a_line_cut_after_run_in_is_numpy_s_guard_only_at_the_line_end() -> None:
    # Invented wording that goes on after "run in": not NumPy's wrapped guard, so not its fix.
    crash = diagnose_log(
        "A module that was compiled using NumPy 1.x cannot be run in a subinterpreter\n", "-"
    )
    assert crash.evidence.fix_rule != "version_mismatch/numpy_abi"


def test_a_pathways_refusal_names_the_ocdbt_switch_only_for_ocdbt() -> None:
    """Another feature refused under Pathways gets the family's fix without Orbax's OCDBT setting."""
    crash = diagnosed_as(
        "ValueError: Host offloading is not supported on Pathways.\n",
        "unsupported_op",
        "unsupported_op/pathways_feature_refused",
    )
    assert "Host offloading" in crash.fix
    assert "use_ocdbt" not in crash.fix


def test_unnamed_variant_when_the_evidence_is_missing() -> None:
    """Without the peer address the slice-builder fix still applies, in its words without the address."""
    crash = diagnose_log("E0101 Could not find SliceBuilder port 8476 in any of the 0 ports provided\n", "-")
    assert crash.evidence.fix_rule == "runtime_init_failure/slice_builder_unreachable_unnamed"
    assert "--worker=all" in crash.fix


def test_unknown_failure_relayed_from_a_named_worker() -> None:
    """With no rule matching, a runtime that names the failing worker points the next step at its log."""
    crash = diagnose_log(
        "E0601 10:00:00.000000     77 session_master.cc:505] Session is failing with the following status: "
        "Session master detected TPU session error from worker my-job-slice-0-3.headless-svc:8471.\n",
        "-",
    )
    assert crash.category == "unknown"
    assert crash.evidence.fix_rule.startswith("unknown/failure_on_named_worker")
    assert "my-job-slice-0-3.headless-svc:8471" in crash.fix
    assert crash.citations


def test_unknown_slice_failure_names_the_kind_and_the_worker() -> None:
    """A slice failure kind (SLICE_FAILURE_*) next to the worker's name: the step names both."""
    crash = diagnose_log(
        "E0601 10:00:00.000000     77 session_master.cc:505] Session master detected TPU session error from "
        "worker w-7.headless-svc:8471.\n"
        "E0601 10:00:00.000100     77 tpunetd_client.cc:311] Detected failure SLICE_FAILURE_ICI_ERROR in "
        "session 1234; Start failure handling\n",
        "-",
    )
    assert crash.evidence.fix_rule.startswith("unknown/slice_failure_on_named_worker")
    assert "w-7.headless-svc:8471" in crash.fix
    assert "SLICE_FAILURE_ICI_ERROR" in crash.fix


@pytest.mark.parametrize(
    ("prints", "skew"),
    [
        (["jax:    0.4.26", "jaxlib: 0.4.30"], "jax 0.4.26 with jaxlib 0.4.30"),
        (["jax: 0.4.20", "jaxlib: 0.4.14"], "jax 0.4.20 with jaxlib 0.4.14"),
        (["torch==2.1.0", "torch_xla==2.3.0+libtpu"], "torch 2.1.0 with torch_xla 2.3.0+libtpu"),
        (["jax: 0.5.2", "jaxlib: 0.5.1"], None),  # jaxlib may trail jax by one patch release
        (["torch: 2.3.1", "torch_xla: 2.3.0"], None),
    ],
)
def test_lockstep_packages_of_different_releases(prints: list[str], skew: str | None) -> None:
    assert version_skew_facts(prints).get("version_skew") == skew


def test_a_printed_version_skew_decides_a_generic_error_and_names_the_command() -> None:
    log = "jax:    0.4.26\njaxlib: 0.4.30\nRuntimeError: the backend returned an unexpected status\n"
    crash = diagnose_log(log, "-")
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule == "version_mismatch/from_facts_version_skew"
    assert "jax[tpu]==0.4.26" in crash.fix and "jaxlib 0.4.30" in crash.fix
    assert "jaxlib: 0.4.30" in crash.evidence.lines  # the vote quotes the log's own version prints


def test_a_dotted_op_name_does_not_cut_the_mosaic_message() -> None:
    log = "INTERNAL: Mosaic failed to compile TPU kernel: failed to legalize operation 'tpu.made_up'\n"
    assert "'tpu.made_up'" in diagnose_log(log, "-").fix


@pytest.mark.parametrize(
    ("log", "fix_rule", "named"),
    [
        (
            "LoweringException: Only 32-bit types supported for scalar loads, got float16\n",
            "mosaic_compile_error/dtype_on_this_generation",
            "float16",
        ),
        (
            "XlaRuntimeError: UNIMPLEMENTED: MadeUpScan with more than 3 operands is not supported on TPU\n",
            "unsupported_op/from_facts_tpu_unsupported_op",
            "MadeUpScan",
        ),
        (
            "TypeError: add got incompatible shapes for broadcasting: (16, 256), (48, 256).\n",
            "shape_dtype_error/from_facts_shape_pair",
            "(16, 256) and (48, 256)",
        ),
        # Unseen wordings of this round's families: an index of a float dtype, a wheel for another Python,
        # a jax config flag the installed release lacks, an API for older releases, a vocabulary padded to
        # a multiple of 128 on one side, a classifier head restored from a checkpoint with other classes.
        (
            "ValueError: gather indices must be of integer type, got bfloat16\n",
            "shape_dtype_error/from_facts_index_dtype_any_wording",
            "(bfloat16)",
        ),
        (
            "ERROR: jaxlib-0.4.30-cp312-cp312-manylinux2014_x86_64.whl is not a supported wheel on this "
            "platform.\n",
            "version_mismatch/from_facts_wheel_for_another_python",
            "Python 3.12",
        ),
        (
            "jax: 0.4.14\nAttributeError: 'Config' object has no attribute 'jax_made_up_flag'\n",
            "version_mismatch/from_facts_jax_config_flag_release",
            "jax==0.4.13",
        ),
        (
            "RuntimeError: tools.made_up_init() is only needed for older runtime versions and should no "
            "longer be used.\n",
            "version_mismatch/from_facts_legacy_api_refused",
            "tools.made_up_init()",
        ),
        (
            "InvalidArgumentError: Run-time shape mismatch for TPUExecute argument[7]. Expected dimensions: "
            "50257 dimensions: 768; got dimensions: 50304 dimensions: 768\n",
            "shape_dtype_error/from_facts_vocab_padded_one_side",
            "50304 rows",
        ),
        (
            "InvalidArgumentError: Assign requires shapes of both tensors to match. lhs shape= [256,3] rhs "
            "shape= [256,1000]\n  head/classifier/kernel (defined at /home/u/model.py:40)\n",
            "shape_dtype_error/from_facts_checkpoint_output_layer_classes",
            "head/classifier/kernel is [256,3] in the model and [256,1000] in the checkpoint",
        ),
    ],
)
def test_generic_wordings_name_their_evidence(log: str, fix_rule: str, named: str) -> None:
    crash = diagnose_log(log, "-")
    assert crash.evidence.fix_rule == fix_rule
    assert named in crash.fix


def test_an_execution_failure_is_no_compile_error() -> None:
    """A compiled program that fails while it runs (an NCCL call, a replica's execution) names XLA and a
    failure, yet the weak tier does not call it a compile error; the same words without the execution do."""
    running = diagnose_log(
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute XLA Runtime executable: run time "
        "error: custom call 'xla.gpu.all_reduce' failed: NCCL operation ncclGroupEnd() failed\n",
        "-",
    )
    assert running.category != "xla_compile_error"
    compiling = diagnose_log(
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: XLA compilation failed: unexpected custom call "
        "'xla.gpu.all_reduce' operand\n",
        "-",
    )
    assert compiling.category == "xla_compile_error"


@pytest.mark.parametrize(
    "lines",
    [
        ["ValueError: shapes (8000, 512) and (9000, 512) are incompatible"],  # 1000 apart, not a padding
        ["Attempting to allocate 32000 bytes, 32128 bytes free"],  # not a shape line
        ["Incompatible shapes: [32128, 512] vs. [32128, 512]"],  # one size only
    ],
)
def test_vocab_padding_needs_two_shape_sizes_a_padding_apart(lines: list[str]) -> None:
    assert vocab_padding_facts(lines) == {}


def test_vocab_padding_names_both_sizes() -> None:
    facts = vocab_padding_facts(["size mismatch: [151643, 896] against [151936, 896]"])
    assert facts == {"vocab_rows": 151643, "vocab_padded_rows": 151936, "vocab_extra": 293}


@pytest.mark.parametrize(
    ("log", "category", "fix_rule", "named"),
    [
        (
            # A package importing a private jax module of another release (values made up).
            "ImportError: cannot import name 'shard_alike' from 'jax._src.sharding_impls' "
            "(/opt/venv/lib/python3.11/site-packages/jax/_src/sharding_impls.py)\n",
            "version_mismatch",
            "version_mismatch/from_facts_private_module_import",
            "pip install git+https://",
        ),
        (
            # Host callbacks reusing a channel, in the verifier's other wording.
            "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: RET_CHECK failure "
            "(xla/service/hlo_verifier.cc:2400) channel 3 is used for multiple host send/recv instructions\n",
            "xla_compile_error",
            "xla_compile_error/host_callback_channels",
            "jax.debug.print",
        ),
        (
            # Flax NNX's static-attribute check on a dict of submodules.
            "ValueError: Found unexpected Arrays on value of type <class 'dict'> in static attribute "
            "'heads' of Pytree type 'model.Decoder'.\n",
            "version_mismatch",
            "version_mismatch/flax_nnx_static_data",
            "heads of model.Decoder",
        ),
        (
            # A collective cancelled because a peer process left the job, as the runtime raises it.
            "E1204 03:12:45.112233  8812 pjrt_client.cc:77] jax.errors.JaxRuntimeError: FAILED_PRECONDITION: "
            "Task with incarnation id 98765 is not connected\n",
            "collective_timeout",
            "collective_timeout/peer_task_gone",
            "live_devices",
        ),
        (
            # Two arguments of one jitted step placed on disjoint device sets.
            "ValueError: Received incompatible devices for pjit computation. Got argument params['w'] of "
            "train_step with shape bfloat16[512,512] and device ids [0, 1, 2, 3] on platform TPU and "
            "argument batch of train_step with shape int32[8,128] and device ids [4, 5, 6, 7] "
            "on platform TPU\n",
            "shape_dtype_error",
            "shape_dtype_error/arguments_on_different_devices",
            "jax.device_put",
        ),
        (
            # Printing a process-spanning array, without the message's own advice.
            'Traceback (most recent call last):\n  File "/srv/eval.py", line 41, in <module>\n'
            "    print(logits)\nRuntimeError: Fetching value for `jax.Array` that spans non-addressable "
            "(non process local) devices is not possible.\n",
            "shape_dtype_error",
            "shape_dtype_error/fetch_other_hosts_shards",
            "process_allgather",
        ),
        (
            # NumPy called on a traced array, the conversion line alone.
            "jax.errors.TracerArrayConversionError: The numpy.ndarray conversion method __array__() was "
            "called on traced array with shape float32[16,128]\n",
            "xla_compile_error",
            "xla_compile_error/numpy_on_tracer",
            "jnp.asarray",
        ),
        (
            # An exported step restored on a smaller slice than it was serialized for, in other words.
            'Traceback (most recent call last):\n  File "/srv/serve.py", line 12, in <module>\n'
            "ValueError: Exported module train_step was lowered for 16 devices and is called in a context "
            "with 4 devices.\n",
            "shape_dtype_error",
            "shape_dtype_error/artifact_device_count",
            "in_shardings_jax",
        ),
        (
            # Contracting dimensions that are a symbol and a size (shape polymorphism).
            "TypeError: dot_general requires contracting dimensions to have the same shape, got (batch,) and "
            "(128,).\n",
            "shape_dtype_error",
            "shape_dtype_error/symbolic_dimension_mismatch",
            "symbolic_shape",
        ),
        (
            # A symbolic expression in a broadcast.
            "TypeError: mul got incompatible shapes for broadcasting: (2*b, 64), (b, 64).\n",
            "shape_dtype_error",
            "shape_dtype_error/symbolic_dimension_mismatch",
            "symbolic_shape",
        ),
        (
            # Serializing a module that calls a kernel by name.
            "ValueError: Cannot serialize code with custom calls whose targets have no compatibility "
            "guarantees: my_fused_attention\n",
            "unsupported_op",
            "unsupported_op/custom_call_without_compat_guarantee",
            "DisabledSafetyCheck.custom_call",
        ),
    ],
)
def test_cause_specific_families_name_their_evidence(
    log: str, category: str, fix_rule: str, named: str
) -> None:
    crash = diagnosed_as(log, category, fix_rule)
    assert named in crash.fix


def test_a_public_module_import_does_not_send_to_the_development_version() -> None:
    """Only a private module (a `_name` part) ties a package to one release date of the library."""
    crash = diagnosed_as(
        "ImportError: cannot import name 'MadeUpLayer' from 'flax.linen' (/opt/flax/linen/__init__.py)\n",
        "version_mismatch",
        "version_mismatch/import_from_another_release",
    )
    assert "git+" not in crash.fix
    assert "pin flax" in crash.fix


def test_a_distributed_runtime_never_started_is_an_init_failure() -> None:
    crash = diagnose_log(
        "ValueError: Distributed client was never initialized; the checkpoint manager needs it.\n",
        "-",
    )
    assert crash.category == "runtime_init_failure"


def test_a_private_attribute_sends_the_upgrade_to_its_caller() -> None:
    """A name starting with `_` is reached into by a library built on the module: that library is upgraded."""
    private = diagnosed_as(
        "AttributeError: module 'jax.interpreters' has no attribute '_made_up_internal'\n",
        "version_mismatch",
        "version_mismatch/from_facts_private_attribute",
    )
    assert "library built on jax.interpreters" in private.fix
    public = diagnose_log("AttributeError: module 'jax.numpy' has no attribute 'made_up_api'\n", "-")
    assert public.evidence.fix_rule == "version_mismatch/module_missing_attribute"


def test_a_restarted_task_is_not_taken_for_a_task_gone() -> None:
    """The incarnation mismatch of a task that came back keeps its own remedy (restart from a checkpoint)."""
    crash = diagnose_log(
        "/job:jax_worker/replica:0/task:3 Heartbeat: Incarnation ID mismatch; it restarted after a crash\n",
        "-",
    )
    assert crash.category == "collective_timeout"
    assert crash.evidence.fix_rule != "collective_timeout/peer_task_gone"
    assert "live_devices" not in crash.fix


@pytest.mark.parametrize(
    "log",
    [
        # Concrete sizes only: the size-based advice, not the symbolic one.
        "TypeError: add got incompatible shapes for broadcasting: (8, 128), (4, 128).\n",
        # Keras prints unknown batch sizes as None, which is no dimension variable.
        "ValueError: Shapes (None, 10) and (None, 5) are incompatible\n",
        # A traceback's source line names variables, not dimensions.
        'Traceback (most recent call last):\n  File "/srv/model.py", line 9, in forward\n'
        "    out = x.reshape(batch, heads, -1)  # shape must match\n"
        "RuntimeError: shape '[8, 12, -1]' is invalid for input of size 1000\n",
    ],
)
def test_concrete_shapes_are_not_taken_for_symbolic_ones(log: str) -> None:
    crash = diagnose_log(log, "-")
    assert crash.category == "shape_dtype_error"
    assert crash.evidence.fix_rule != "shape_dtype_error/symbolic_dimension_mismatch"
    assert "symbolic_shape" not in crash.fix
