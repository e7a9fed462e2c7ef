"""Families of wording that round diag64 added to the rules: Keras 3's distribution API and keras-hub on TPU.

Keras 3 (https://github.com/keras-team/keras) trains on TPU through `keras.distribution` on the JAX backend,
and refuses a set-up that cannot work: a DeviceMesh whose shape does not multiply out to its devices
(`keras_device_mesh_shape_vs_devices`), a jax.sharding.Mesh where its own DeviceMesh is expected
(`keras_device_mesh_expected`), ModelParallel without a LayoutMap
(`keras_model_parallel_layout_map`), a variable path two LayoutMap keys match
(`keras_layout_map_multiple_keys`), a DeviceMesh with a different number of axis names than dimensions
(`keras_device_mesh_axis_names_size`) and a dtype policy name it cannot parse (`keras_dtype_policy_name`);
keras-hub (https://github.com/keras-team/keras-hub) refuses to save LoRA weights of a model without LoRA
(`keras_hub_lora_not_enabled`).

Each case is another wording of its family (other values, another class, under a traceback), and each family
has a nearby wording it must not claim, so a rule matching only a collected log's text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import assert_fixed_by, assert_not_claimed

_TRACE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.10/site-packages/keras/src/distribution/distribution_lib.py", '
    "line 200, in __init__\n"
    "    raise ValueError(\n"
)


def test_a_mesh_larger_than_a_v5e_host() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: Shape does not match the number of devices. "
        "Received: shape=(4, 4); devices.shape=(8,)",
        "runtime_init_failure",
        "keras_device_mesh_shape_vs_devices",
        "list_devices()",
    )
    assert "(4, 4)" in (crash.fix or "")


def test_a_jax_mesh_of_the_wrong_size_is_not_kerass_mesh_check() -> None:
    assert_not_claimed(
        "ValueError: Number of devices 8 must equal the product of mesh_shape (4, 4)",
        "keras_device_mesh_shape_vs_devices",
    )


def test_model_parallel_given_a_jax_mesh() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: Expect `mesh` to be an instance of `DeviceMesh`. "
        "Received: mesh=Mesh('batch': 2, 'model': 4) (of type <class 'jax.sharding.Mesh'>)",
        "runtime_init_failure",
        "keras_device_mesh_expected",
        "keras.distribution.DeviceMesh(",
    )


def test_an_optimizer_type_check_is_not_the_mesh_check() -> None:
    assert_not_claimed(
        "ValueError: Expect `optimizer` to be an instance of `Optimizer`. Received: optimizer=adamw",
        "keras_device_mesh_expected",
    )


def test_model_parallel_without_a_layout_map() -> None:
    assert_fixed_by(
        _TRACE + "ValueError: You must specify a layout_map argument.",
        "runtime_init_failure",
        "keras_model_parallel_layout_map",
        "keras.distribution.LayoutMap(",
    )


def test_a_layout_given_where_a_tensor_layout_belongs_is_not_the_layout_map_check() -> None:
    assert_not_claimed(
        "ValueError: ('model', None) should be a TensorLayout type, got <class 'tuple'>",
        "keras_model_parallel_layout_map",
    )


def test_an_embedding_path_two_keys_match() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: Path 'token_embedding/embeddings' matches multiple layout specification keys: "
        "['token_embedding/embeddings', '.*embeddings']. Please make sure each tensor/variable path only "
        "matches at most one layout specification key in the LayoutMap.",
        "runtime_init_failure",
        "keras_layout_map_multiple_keys",
        "stricter",
    )
    assert "token_embedding/embeddings" in (crash.fix or "")


def test_a_dtype_policy_map_overlap_is_not_the_layout_map_check() -> None:
    assert_not_claimed(
        "ValueError: Path 'dense/kernel' matches multiple dtype policy specification keys: ['dense.*', "
        "'.*kernel']. Please make sure each path only matches at most one dtype policy specification key in "
        "the DTypePolicyMap.",
        "keras_layout_map_multiple_keys",
    )


def test_save_lora_weights_of_a_llama_without_lora() -> None:
    assert_fixed_by(
        'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.10/site-packages/keras_hub/src/'
        'models/backbone.py", line 229, in save_lora_weights\n    raise ValueError(\n'
        "ValueError: There are no lora-enabled layers in this model. "
        "Make sure to call `.enable_lora(rank)` first.",
        "runtime_init_failure",
        "keras_hub_lora_not_enabled",
        "enable_lora(rank",
    )


def test_a_lora_file_name_refusal_is_not_the_lora_enable_check() -> None:
    assert_not_claimed(
        "ValueError: The filename must end in `.lora.h5`. Received: filepath=gemma_lora.h5",
        "keras_hub_lora_not_enabled",
    )


def test_a_three_dimensional_mesh_with_two_names() -> None:
    crash = assert_fixed_by(
        _TRACE + "ValueError: Shape and axis_names should have same size. Received: shape=(2, 2, 2), "
        "axis_names=('data', 'model')",
        "shape_dtype_error",
        "keras_device_mesh_axis_names_size",
        "axis_names",
    )
    assert "(2, 2, 2)" in (crash.fix or "")


def test_an_empty_mesh_is_not_the_axis_names_size_check() -> None:
    assert_not_claimed(
        "ValueError: Shape and axis_names cannot be empty. Received: shape=(), axis_names=[]",
        "keras_device_mesh_axis_names_size",
    )


def test_a_float16_spelling_of_a_policy() -> None:
    crash = assert_fixed_by(
        'Traceback (most recent call last):\n  File "/opt/venv/lib/python3.10/site-packages/keras/src/'
        'dtype_policies/dtype_policy.py", line 91, in _parse_name\n    raise ValueError(\n'
        "ValueError: Cannot convert 'fp16_mixed' to a mixed precision DTypePolicy. Valid policies include "
        "'mixed_float16', 'mixed_bfloat16', and the name of any float dtype such as 'float32'.",
        "shape_dtype_error",
        "keras_dtype_policy_name",
        "mixed_bfloat16",
    )
    assert "fp16_mixed" in (crash.fix or "")


def test_a_policy_name_of_the_wrong_type_is_not_the_policy_name_check() -> None:
    assert_not_claimed(
        "TypeError: 'name' must be a string, such as 'mixed_float16'. Received: name=None (of type <class "
        "'NoneType'>)",
        "keras_dtype_policy_name",
    )
