"""Families of version skew that round diag144 added to the rules (docs/diagnose-accuracy.md).

Four families: jax.Array's `device` property called as the old DeviceArray's `device()` method, DeviceArray
methods jax.Array dropped (`to_py`, `device_buffer`), `jax.stages.OutInfo` (replaced by
`jax.ShapeDtypeStruct` in jax 0.7.0), and torch's op namespace refusing an overload name the installed torch
does not define (PyTorch 2.13 deleted the named-tensor `Dimname` overloads). Each case is worded apart from
the collected logs (another script, another op or overload), and each family has a nearby wording it must
not claim, so a rule matching only the collected text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose


def test_jax_device_called_as_a_method_is_told_it_is_a_property() -> None:
    crash = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/shard_report.py", line 14, in report\n'
        "    print(name, leaf.device())\n"
        "TypeError: 'Device' object is not callable"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_array_device_is_property"
    assert "x.devices()" in crash.fix
    assert "x.sharding" in crash.fix


def test_a_torch_device_called_as_a_method_is_not_read_as_jax() -> None:
    """torch's device class is `torch.device`: calling it is not the jax.Array property change."""
    crash = _diagnose(
        '  File "/srv/app/train.py", line 9, in step\n'
        "    dev = batch.device()\n"
        "TypeError: 'torch.device' object is not callable"
    )
    assert crash.evidence.fix_rule != "version_mismatch/jax_array_device_is_property"
    assert "x.devices()" not in crash.fix


@pytest.mark.parametrize(
    ("method", "expected"),
    [("to_py", "jax.device_get(x)"), ("device_buffers", "x.addressable_shards")],
)
def test_a_removed_devicearray_method_names_the_jax_array_replacement(method: str, expected: str) -> None:
    crash = _diagnose(
        '  File "/srv/app/metrics.py", line 30, in summarize\n'
        f"    host = loss.{method}\n"
        f"AttributeError: 'jaxlib.xla_extension.ArrayImpl' object has no attribute '{method}'"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_array_devicearray_method_removed"
    assert f".{method} belonged to the old DeviceArray" in crash.fix
    assert expected in crash.fix


def test_another_missing_array_attribute_keeps_the_general_jaxlib_advice() -> None:
    """An attribute jax.Array never had (a typo, a torch name) is not sent to the DeviceArray replacements."""
    crash = _diagnose("AttributeError: 'jaxlib._jax.ArrayImpl' object has no attribute 'numpy'")
    assert crash.evidence.fix_rule != "version_mismatch/jax_array_devicearray_method_removed"
    assert "jax.device_get(x)" not in crash.fix


def test_jax_stages_outinfo_is_replaced_by_shape_dtype_struct() -> None:
    crash = _diagnose(
        '  File "/opt/venv/lib/python3.12/site-packages/weather_lib/rollout.py", line 88, in _out_specs\n'
        "    return jax.stages.OutInfo(shape=s, dtype=d)\n"
        "AttributeError: module 'jax.stages' has no attribute 'OutInfo'"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_stages_outinfo_removed"
    assert "jax.ShapeDtypeStruct" in crash.fix


def test_another_missing_jax_stages_name_is_not_told_about_outinfo() -> None:
    crash = _diagnose("AttributeError: module 'jax.stages' has no attribute 'XlaExecutable'")
    assert crash.evidence.fix_rule != "version_mismatch/jax_stages_outinfo_removed"
    assert "ShapeDtypeStruct" not in crash.fix


def test_a_removed_dimname_overload_names_torch_213_and_the_pin() -> None:
    crash = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/policy.py", line 40, in <module>\n'
        "    torch.ops.aten.index_copy.dimname: Policy.PROMOTE,\n"
        '  File "/opt/venv/lib/python3.12/site-packages/torch/_ops.py", line 1242, in __getattr__\n'
        "    raise AttributeError(\n"
        "AttributeError: The underlying op of 'aten.index_copy' has no overload name 'dimname'"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/torch_named_tensor_overload_removed"
    assert "aten.index_copy.dimname" in crash.fix
    assert "torch<2.13" in crash.fix


def test_another_missing_overload_is_not_blamed_on_named_tensors() -> None:
    """An overload that is not a named-tensor one gets the general release advice, not the 2.13 removal."""
    crash = _diagnose(
        "AttributeError: The underlying op of 'aten.scaled_dot_product_attention' has no overload name 'gqa'"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/torch_op_overload_of_another_release"
    assert "torch.ops.aten.scaled_dot_product_attention.overloads()" in crash.fix
    assert "named tensors" not in crash.fix


def test_a_missing_op_namespace_attribute_is_not_read_as_an_overload() -> None:
    """torch's other wording, an op missing from the namespace, is not the overload rule's."""
    crash = _diagnose(
        "AttributeError: '_OpNamespace' 'aten' object has no attribute 'sym_constrain_range_for_size'"
    )
    assert not (crash.evidence.fix_rule or "").startswith("version_mismatch/torch_")
    assert "overloads()" not in crash.fix
