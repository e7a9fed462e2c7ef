"""Call-site facts (crash_call_facts) and the fixes that name them, on wordings no corpus log holds.

Each log is written the way its framework prints it (paths, names and values made up): a package calling
another package's function with arguments its installed release refuses; a device mesh built from a device
list that held one CPU device; TensorFlow's TPU client failing while it parses the runtime's report; a
platform named in JAX_PLATFORMS that no plugin registered; Mesh TensorFlow laying a logical mesh on a
physical one of another size. The counter-cases hold the same words where the cause is not the one named.
"""

from __future__ import annotations

import pytest

from tests.crashlog_support import diagnosed_as
from tpu_runtime.diagnose.crash_call_facts import (
    last_frame,
    runtime_report_facts,
    signature_skew_facts,
    single_device_facts,
)
from tpu_runtime.diagnose.crash_setting_facts import graduated_api_facts, mesh_device_facts
from tpu_runtime.diagnose.crashlog import diagnose_log

SITE = "/opt/venv/lib/python3.11/site-packages"


def _traceback(frames: list[tuple[str, str, str]], error: str) -> str:
    body = "".join(f'  File "{path}", line 12, in {func}\n    {code}\n' for path, func, code in frames)
    return f"Traceback (most recent call last):\n{body}{error}\n"


# --------------------------------------------------------------------------------- signature skew


@pytest.mark.parametrize(
    ("log", "caller", "action"),
    [
        (
            _traceback(
                [
                    ("/home/u/train.py", "main", "trainer.fit(model)"),
                    (f"{SITE}/made_up_trainer/loop.py", "run", "made_up_runtime.comm.barrier(group)"),
                ],
                "TypeError: barrier() missing 1 required positional argument: 'timeout'",
            ),
            "made_up_trainer",
            "pass a timeout argument",
        ),
        (
            _traceback(
                [
                    (
                        f"{SITE}/fancy_models/attention.py",
                        "forward",
                        "out = jax.nn.dot_product_attention(q, k, v, scale_by=s)",
                    )
                ],
                "TypeError: dot_product_attention() got an unexpected keyword argument 'scale_by'",
            ),
            "fancy_models",
            "drop the scale_by argument",
        ),
        (
            _traceback(
                [(f"{SITE}/orbit_ckpt/save.py", "save", "xm.save(state, path, True, 4)")],
                "TypeError: save() takes from 2 to 4 positional arguments but 5 were given",
            ),
            "orbit_ckpt",
            "pass the arguments the installed release takes",
        ),
    ],
)
def test_a_call_between_packages_refused_by_its_signature_is_a_release_skew(
    log: str, caller: str, action: str
) -> None:
    crash = diagnosed_as(log, "version_mismatch", "version_mismatch/from_facts_signature_skew")
    assert f"Upgrade {caller}" in crash.fix
    assert action in crash.fix


@pytest.mark.parametrize(
    "log",
    [
        # The user's own call: a bug in the call, not two packages released apart.
        _traceback(
            [("/home/u/train.py", "main", "made_up_runtime.comm.barrier(group)")],
            "TypeError: barrier() missing 1 required positional argument: 'timeout'",
        ),
        # A library calling the user's function (jit of a function missing an argument): no module path.
        _traceback(
            [
                ("/home/u/train.py", "main", "step(params)"),
                (
                    f"{SITE}/jax/_src/linear_util.py",
                    "call_wrapped",
                    "ans = self.f(*args, **dict(self.params))",
                ),
            ],
            "TypeError: step() missing 1 required positional argument: 'batch'",
        ),
        # A package calling its own function: one release, one package.
        _traceback(
            [(f"{SITE}/made_up_trainer/loop.py", "run", "made_up_trainer.utils.sync(group)")],
            "TypeError: sync() missing 1 required positional argument: 'tag'",
        ),
    ],
)
def test_a_signature_error_without_two_packages_is_no_skew(log: str) -> None:
    assert signature_skew_facts(log.splitlines()) == {}


def test_the_skew_names_caller_call_and_callee() -> None:
    log = _traceback(
        [(f"{SITE}/made_up_trainer/loop.py", "run", "torch_xla.core.xla_model.rendezvous()")],
        "TypeError: rendezvous() missing 1 required positional argument: 'tag'",
    )
    facts = signature_skew_facts(log.splitlines())
    assert facts["skew_caller_package"] == "made_up_trainer"
    assert facts["skew_call"] == "torch_xla.core.xla_model.rendezvous"
    assert facts["skew_callee_module"] == "torch_xla"


# ------------------------------------------------------------------------------ one visible device


@pytest.mark.parametrize(
    "log",
    [
        _traceback(
            [
                (
                    "/home/u/serve.py",
                    "<module>",
                    "mesh = np.array(jax.devices()).reshape(jax.device_count() // 4, 4)",
                )
            ],
            "ValueError: cannot reshape array of size 1 into shape (0,4)",
        ),
        # IPython's form: the frame, then numbered source with an arrow at the failing line.
        "ValueError                                Traceback (most recent call last)\n"
        "<ipython-input-3-0f0f0f0f0f0f> in <module>\n"
        "      8 cores = 8\n"
        "----> 9 grid = np.asarray(jax.local_devices()).reshape((jax.local_device_count() // cores, cores))\n"
        "     10 \n\n"
        "ValueError: cannot reshape array of size 1 into shape (0,8)\n",
        _traceback(
            [
                (
                    "/home/u/run.py",
                    "build",
                    "mesh = Mesh(mesh_utils.create_device_mesh((1, 8), jax.devices()), ('d', 'm'))",
                )
            ],
            "ValueError: Number of devices 1 must equal the product of mesh_shape (1, 8)",
        ),
    ],
)
def test_a_mesh_built_from_a_single_device_is_a_missing_tpu(log: str) -> None:
    crash = diagnosed_as(log, "runtime_init_failure", "runtime_init_failure/from_facts_single_device")
    assert "TPU VM" in crash.fix


def test_a_reshape_of_data_is_still_a_shape_error() -> None:
    log = _traceback(
        [("/home/u/data.py", "batch", "x = np.array(rows).reshape(-1, 8)")],
        "ValueError: cannot reshape array of size 1 into shape (0,8)",
    )
    assert single_device_facts(log.splitlines()) == {}
    assert diagnose_log(log, "-").category == "shape_dtype_error"


# -------------------------------------------------------------------- the TPU runtime's own report


def test_a_failure_parsing_the_runtime_report_is_a_client_runtime_skew() -> None:
    log = _traceback(
        [
            ("/home/u/fit.py", "<module>", "strategy = tf.distribute.TPUStrategy(resolver)"),
            (
                f"{SITE}/tensorflow/python/tpu/topology.py",
                "_parse_topology",
                'raise ValueError("`device_coordinates` must be a rank 3 int32 array")',
            ),
        ],
        "ValueError: `device_coordinates` must be a rank 3 int32 array with minor dimension equal to the "
        "mesh shape rank",
    )
    facts = runtime_report_facts(log.splitlines())
    assert facts["runtime_report_parse"] == "topology.py in _parse_topology"
    assert facts["runtime_report_parse_lines"][0].endswith("in _parse_topology")
    crash = diagnosed_as(log, "version_mismatch", "version_mismatch/from_facts_runtime_report_parse")
    assert "TPU software version" in crash.fix


def test_a_user_frame_after_the_topology_code_is_not_the_runtime_report() -> None:
    log = _traceback(
        [
            (f"{SITE}/tensorflow/python/tpu/topology.py", "_parse_topology", "x = 1"),
            ("/home/u/fit.py", "check", "assert shape == (4,)"),
        ],
        "ValueError: the user's own check failed",
    )
    assert runtime_report_facts(log.splitlines()) == {}


def test_last_frame_reads_both_traceback_forms() -> None:
    plain = last_frame(_traceback([("/a/b.py", "f", "g(1)")], "ValueError: x").splitlines())
    assert plain is not None and (plain.path, plain.func, plain.code) == ("/a/b.py", "f", "g(1)")
    ipython = last_frame(
        [
            "/usr/lib/python3/dist-packages/pkg/mod.py in run(self, x)",
            "     41     y = 2",
            "---> 42     return self.helper(x)",
            "ValueError: x",
        ]
    )
    assert ipython is not None and ipython.package == "pkg" and ipython.code == "return self.helper(x)"


# ------------------------------------------------------------------------ backends no plugin registered


@pytest.mark.parametrize(
    ("line", "fix_rule", "named"),
    [
        (
            "RuntimeError: Unable to initialize backend 'proxy': Backend 'proxy' is not in the list of known "
            "backends: ['cpu']. (set JAX_PLATFORMS='' to automatically choose an available backend)",
            "runtime_init_failure/from_facts_unknown_backend_proxy",
            "pathwaysutils.initialize()",
        ),
        (
            "RuntimeError: Unable to initialize backend 'tpu': Backend 'tpu' is not in the list of known "
            "backends: ['cpu'].",
            "runtime_init_failure/from_facts_unknown_backend_accelerator",
            'pip install -U "jax[tpu]"',
        ),
        (
            "RuntimeError: Unknown backend: 'gpu' requested, but no platforms that are instances of gpu are "
            "present. Platforms present are: interpreter,cpu",
            "runtime_init_failure/jax_named_backend_absent",  # jax's own wording has its sub-rule (diag130)
            "interpreter,cpu",
        ),
        (
            "RuntimeError: Unable to initialize backend 'madeup': Backend 'madeup' is not in the list of "
            "known backends: ['cpu', 'tpu'].",
            "runtime_init_failure/from_facts_unknown_backend",
            "'madeup'",
        ),
    ],
)
def test_a_platform_without_a_registered_backend_names_its_plugin(
    line: str, fix_rule: str, named: str
) -> None:
    crash = diagnosed_as(line + "\n", "runtime_init_failure", fix_rule)
    assert named in crash.fix


# ------------------------------------------------------------------------------ Mesh TensorFlow layout


@pytest.mark.parametrize(
    "line",
    [
        "I0101 00:00:00.000000 1 simd_mesh_impl.py:860] auto_logical_to_physical_tpu logical_shape=[16, 4] "
        "physical_shape=[4, 4, 2]",
        "ValueError: physical and logical shapes must have the same product physical_shape=[2, 2, 2] "
        "logical_shape=[32]",
    ],
)
def test_a_logical_mesh_of_another_size_than_the_tpu_names_the_topology(line: str) -> None:
    facts = mesh_device_facts([line])
    assert facts["mesh_devices"] != facts["visible_devices"]
    crash = diagnosed_as(
        line + "\n", "shape_dtype_error", "shape_dtype_error/from_facts_mesh_larger_than_devices_shape"
    )
    assert "tpu_topology" in crash.fix
    assert f"divides {facts['visible_devices']}" in crash.fix


def test_a_layout_that_fits_is_no_mesh_fact() -> None:
    assert (
        mesh_device_facts(["auto_logical_to_physical_tpu logical_shape=[8] physical_shape=[2, 2, 2]"]) == {}
    )


# ------------------------------------------------------------------------------ a TPU node's core halt


def test_a_core_halt_reported_by_the_tpu_nodes_server_names_the_software_versions() -> None:
    log = (
        "Exception in device=TPU:3: From /job:tpu_worker/replica:0/task:0:\n"
        "2 root error(s) found.\n"
        "  (0) Internal: Core halted unexpectedly: No error message available.\n"
    )
    crash = diagnosed_as(log, "version_mismatch", "version_mismatch/from_facts_tpu_node_halt")
    assert "/job:tpu_worker" in crash.fix
    assert "TPU software version" in crash.fix


def test_a_core_halt_without_a_remote_tpu_server_is_no_release_question() -> None:
    log = (
        "E0101 00:00:00.000000 1 real_program_continuator.cc:1331] 0x0x0_TC0: *** Halt is unexpected, all "
        "pending programs will fail.\n"
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Core halted unexpectedly: No error message "
        "available as no compiler metadata was provided.\n"
    )
    assert diagnose_log(log, "-").category != "version_mismatch"


# --------------------------------------------------------------- renamed APIs and bare signature errors


@pytest.mark.parametrize(
    ("line", "old", "new"),
    [
        (
            "AttributeError: 'TPUStrategyV2' object has no attribute 'experimental_run_v2'",
            "experimental_run_v2",
            "run",
        ),
        (
            "AttributeError: 'MadeUpRunner' object has no attribute 'experimental_compile'",
            "experimental_compile",
            "compile",
        ),
        ("AttributeError: 'Checkpointer' object has no attribute 'restore_v2'", "restore_v2", "restore"),
    ],
)
def test_an_api_called_by_its_experimental_name_names_the_stable_one(line: str, old: str, new: str) -> None:
    crash = diagnosed_as(line + "\n", "version_mismatch", "version_mismatch/from_facts_graduated_api")
    assert f"Call {new} instead of {old}" in crash.fix


def test_a_missing_plain_attribute_is_no_graduated_api() -> None:
    assert graduated_api_facts(["AttributeError: 'Trainer' object has no attribute 'fit_v'"]) == {}
    assert graduated_api_facts(["AttributeError: 'Trainer' object has no attribute 'model'"]) == {}


def test_a_bare_signature_error_is_a_release_question_whatever_the_argument_is_called() -> None:
    crash = diagnosed_as(
        "TypeError: __init__() got an unexpected keyword argument 'dtype'\n",
        "version_mismatch",
        "version_mismatch/from_facts_signature_refused",
    )
    assert "__init__() refused its call" in crash.fix


def test_one_visible_device_under_a_mesh_names_the_missing_tpu() -> None:
    crash = diagnosed_as(
        "ValueError: Number of devices 1 must equal the product of mesh_shape (2, 4)\n",
        "runtime_init_failure",
        "runtime_init_failure/from_facts_mesh_on_one_device",
    )
    assert "only one is visible" in crash.fix
    many = diagnose_log("ValueError: Number of devices 4 must equal the product of mesh_shape (2, 4)\n", "-")
    assert many.evidence.fix_rule == "runtime_init_failure/from_facts_mesh_larger_than_devices"
