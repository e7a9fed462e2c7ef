"""Errors from TPU issue threads (round diag47): a Google API refusing a VM whose access scopes are too
narrow, an account that may not read the project, Python 2's unnamed module without an attribute
(TensorFlow 1.13 without tf.contrib.distribute.initialize_tpu_system), an import that fails inside jax's own
modules, and Flax's checks of the PRNG keys passed as `rngs`.

The lines are written for these tests (not corpus files): the wordings of the round's dev logs with other
names and values, so each case checks that the rule keys on the message's fixed words and that the fix
quotes this log's values rather than the corpus file's.
"""

from __future__ import annotations

from crashlog_support import diagnosed_as

from tpu_runtime.diagnose.crashlog import diagnose_log


def test_a_token_without_the_needed_scope_asks_for_the_vm_access_scopes() -> None:
    text = (
        "google.api_core.exceptions.PermissionDenied: 403 Request had insufficient authentication scopes. "
        '[reason: "ACCESS_TOKEN_SCOPE_INSUFFICIENT" domain: "googleapis.com"]'
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/gce_access_scopes_insufficient")
    assert "access scopes" in crash.fix
    assert "--scopes cloud-platform" in crash.fix


def test_the_scope_reason_code_alone_is_enough() -> None:
    crash = diagnose_log('    reason: "ACCESS_TOKEN_SCOPE_INSUFFICIENT"', "api.log")
    assert crash.evidence.fix_rule == "runtime_init_failure/gce_access_scopes_insufficient"


def test_a_project_the_account_may_not_read_is_quoted_with_the_zone_and_project_flags() -> None:
    text = (
        "ERROR: (gcloud.compute.tpus.list) PERMISSION_DENIED: "
        "Read access to project 'annotator-1286' was denied"
    )
    crash = diagnosed_as(text, "runtime_init_failure", "runtime_init_failure/gcp_project_read_access_denied")
    assert "annotator-1286" in crash.fix
    assert "--zone" in crash.fix
    assert "--project" in crash.fix


def test_a_refused_project_without_quotes_reads_without_empty_brackets() -> None:
    text = "2018/07/11 13:03:47 googleapi: Error 403: Read access to project test was denied"
    crash = diagnose_log(text, "c.log")
    assert crash.evidence.fix_rule == "runtime_init_failure/gcp_project_read_access_denied"
    assert "project test," in crash.fix


def test_initialize_tpu_system_missing_from_the_release_names_the_14_api() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in main\n'
        "    tf.contrib.tpu.initialize_tpu_system(cluster)\n"
        "AttributeError: 'module' object has no attribute 'initialize_tpu_system'"
    )
    crash = diagnosed_as(text, "version_mismatch", "version_mismatch/tf_initialize_tpu_system_not_in_release")
    assert "tf.tpu.experimental.initialize_tpu_system" in crash.fix
    assert "tf.contrib.tpu.initialize_tpu_system(cluster)" in crash.fix
    assert "1.14" in crash.fix


def test_python2s_unnamed_module_quotes_the_call_and_the_attribute() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "input.py", line 77, in make_dataset\n'
        "    ds = ds.apply(tf.contrib.data.batch_and_drop_remainder(64))\n"
        "AttributeError: 'module' object has no attribute 'batch_and_drop_remainder'"
    )
    crash = diagnosed_as(text, "version_mismatch", "version_mismatch/py2_module_missing_attribute")
    assert "batch_and_drop_remainder" in crash.fix
    assert "tf.contrib.data.batch_and_drop_remainder(64)" in crash.fix


def test_an_import_failing_inside_jax_asks_for_a_matching_jax_and_jaxlib() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/jax/_src/api.py", line 48, in <module>\n'
        "    from jax._src import dispatch\n"
        '  File "/opt/venv/lib/python3.11/site-packages/jax/_src/dispatch.py", line 30, in <module>\n'
        "    from jax._src.lib import xla_extension_version\n"
        "ImportError: cannot import name 'xla_extension_version' from 'jax._src.lib' "
        "(/opt/venv/lib/python3.11/site-packages/jax/_src/lib/__init__.py)"
    )
    crash = diagnosed_as(text, "version_mismatch", "version_mismatch/jax_private_import_inside_jax")
    assert "jax._src.lib has no xla_extension_version" in crash.fix
    assert "pip uninstall -y jax jaxlib" in crash.fix


def test_a_library_reaching_into_jax_is_not_told_to_reinstall_jax() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/opt/venv/lib/python3.11/site-packages/somelib/dist.py", line 12, in <module>\n'
        "    from jax._src.clusters import TpuCluster\n"
        "ImportError: cannot import name 'TpuCluster' from 'jax._src.clusters' "
        "(/opt/venv/lib/python3.11/site-packages/jax/_src/clusters/__init__.py)"
    )
    crash = diagnose_log(text, "lib.log")
    assert crash.category == "version_mismatch"
    assert crash.evidence.fix_rule != "version_mismatch/jax_private_import_inside_jax"


def test_a_flax_key_of_the_wrong_shape_asks_for_a_raw_prngkey() -> None:
    text = (
        "flax.errors.InvalidRngError: RNGs should be of shape (2,) or PRNGKey in Module Dense_0, "
        "but rngs are: Array((), dtype=key<fry>)"
    )
    crash = diagnosed_as(text, "shape_dtype_error", "shape_dtype_error/flax_rng_key_not_raw_pair")
    assert "jax.random.PRNGKey(seed)" in crash.fix
    assert "key_data" in crash.fix


def test_flax_rngs_that_are_not_a_dict_ask_for_named_streams() -> None:
    text = "flax.errors.InvalidRngError: rngs should be a dictionary mapping strings to `jax.PRNGKey`."
    crash = diagnosed_as(text, "shape_dtype_error", "shape_dtype_error/flax_rngs_not_a_dict")
    assert "'dropout'" in crash.fix
