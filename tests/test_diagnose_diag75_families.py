"""Families of wording that round diag75 added to the general fallbacks: real error outputs from TPU threads.

An op a message says is implemented only on the backends it lists, none of them the TPU (jax's wording for
a primitive with no TPU lowering in the installed release: `from_facts_backend_only_op`), and a TensorFlow 1
name that an installed TensorFlow 2 no longer has in its namespace (`from_facts_tf1_api_under_tf2`).

Each case is a wording of its family that no collected log holds (another op, other backends, another TF1
name or submodule), checked with the fallbacks alone as well, and each family has a nearby wording it must not
claim, so a fallback matching only a collected log's text would fail.
"""

from __future__ import annotations

from tests.crash_helpers import ablated_verdict, assert_fixed_by, assert_not_claimed
from tpu_runtime.diagnose.crash_operand_facts import backend_only_facts
from tpu_runtime.diagnose.crash_setting_facts import tf1_api_facts

_JAX_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/home/user/solver/run.py", line 31, in <module>\n'
    "    q, r, p = jax.scipy.linalg.qr(a, pivoting=True)\n"
)


def test_an_op_lowered_for_gpu_and_cpu_only_names_them_and_a_jax_upgrade() -> None:
    text = _JAX_FRAMES + "NotImplementedError: Pivoted QR is only implemented on the GPU and CPU backends\n"
    crash = assert_fixed_by(text, "unsupported_op", "from_facts_backend_only_op", "Upgrade jax")
    assert "Pivoted QR" in crash.fix and "GPU and CPU" in crash.fix
    category, fix_rule, fix = ablated_verdict(text)
    assert (category, fix_rule) == ("unsupported_op", "unsupported_op/from_facts_backend_only_op")
    assert 'backend="cpu"' in fix


def test_backends_are_read_in_any_listing() -> None:
    facts = backend_only_facts(["LU pivot permutation is only supported on the CUDA/ROCm backends."])
    assert facts == {"backend_only_op": "LU pivot permutation", "implementing_backends": "CUDA/ROCm"}


def test_an_op_said_to_exist_only_on_the_tpu_is_no_backend_only_op() -> None:
    assert (
        backend_only_facts(["NotImplementedError: ragged all-to-all is only implemented on the TPU backend"])
        == {}
    )
    assert_not_claimed(
        "NotImplementedError: ragged all-to-all is only implemented on the TPU backend\n",
        "from_facts_backend_only_op",
    )


def test_a_sentence_without_a_backend_list_is_no_backend_only_op() -> None:
    assert backend_only_facts(["This kernel is only implemented for float32 inputs on the CPU"]) == {}


def test_a_tf1_placeholder_under_tf2_names_its_compat_home() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/content/model.py", line 8, in <module>\n'
        "    x = tf.placeholder(tf.float32, [None, 784])\n"
        "AttributeError: module 'tensorflow' has no attribute 'placeholder'\n"
    )
    assert_fixed_by(text, "version_mismatch", "from_facts_tf1_api_under_tf2", "tf.compat.v1.placeholder")
    _, fix_rule, fix = ablated_verdict(text)
    assert fix_rule == "version_mismatch/from_facts_tf1_api_under_tf2"
    assert "TensorFlow 1" in fix


def test_a_tf1_optimizer_in_a_tf2_submodule_keeps_the_submodule() -> None:
    facts = tf1_api_facts(
        ["AttributeError: module 'tensorflow._api.v2.train' has no attribute 'AdamOptimizer'"]
    )
    assert facts == {
        "tf1_api": "tf.train.AdamOptimizer",
        "tf1_compat_api": "tf.compat.v1.train.AdamOptimizer",
    }


def test_names_without_a_compat_v1_home_are_no_tf1_api() -> None:
    # tf.contrib left with TensorFlow 1; a misspelt name and another package's module are no TF1 API either.
    assert tf1_api_facts(["AttributeError: module 'tensorflow' has no attribute 'contrib'"]) == {}
    assert tf1_api_facts(["AttributeError: module 'tensorflow' has no attribute 'Sesion'"]) == {}
    assert tf1_api_facts(["AttributeError: module 'keras.backend' has no attribute 'Session'"]) == {}
    assert_not_claimed(
        "AttributeError: module 'tensorflow' has no attribute 'contrib'\n", "from_facts_tf1_api_under_tf2"
    )
