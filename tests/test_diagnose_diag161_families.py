"""Families of version skew that round diag161 added to the rules (docs/diagnose-accuracy.md).

Four families: members jax.interpreters.xla no longer exports, tracing internals that left jax.core for
jax.extend.core, jax.tree_util's removed register_keypaths, and transformers' removed legacy dataset
classes. Each case is worded apart from the collected logs (another member, another script), and each
family has a nearby wording it must not claim, so a rule matching only the collected text would fail here.
"""

from __future__ import annotations

from tests.crash_helpers import diagnose_rules_alone as _diagnose


def test_a_removed_jax_interpreters_xla_member_is_sent_to_jax_typeof() -> None:
    crash = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/lowering.py", line 21, in <module>\n'
        "    xla.pytype_aval_mappings[MyArray] = lambda x: x.aval\n"
        "AttributeError: module 'jax.interpreters.xla' has no attribute 'pytype_aval_mappings'"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_interpreters_xla_member_removed"
    assert "pytype_aval_mappings" in crash.fix
    assert "jax.typeof" in crash.fix


def test_another_jax_interpreters_module_keeps_the_general_advice() -> None:
    """jax.interpreters.mlir is not the module that shed its members."""
    crash = _diagnose(
        '  File "/srv/app/lowering.py", line 8, in <module>\n'
        "    mlir.lower_fun(f)\n"
        "AttributeError: module 'jax.interpreters.mlir' has no attribute 'lower_fun'"
    )
    assert crash.evidence.fix_rule != "version_mismatch/jax_interpreters_xla_member_removed"
    assert "jax.typeof" not in crash.fix


def test_a_jax_core_tracing_type_is_sent_to_jax_extend_core() -> None:
    crash = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/inspect_jaxpr.py", line 5, in <module>\n'
        "    if isinstance(v, jax.core.Literal):\n"
        "AttributeError: module 'jax.core' has no attribute 'Literal'"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_core_member_moved_to_extend"
    assert "from jax.extend.core import Literal" in crash.fix


def test_a_jax_core_name_jax_extend_does_not_export_is_not_sent_there() -> None:
    """A jax.core name outside jax.extend.core (a typo, a private helper) keeps the general advice."""
    crash = _diagnose(
        '  File "/srv/app/inspect_jaxpr.py", line 5, in <module>\n'
        "    jax.core.ShapedArrayy((2,), 'float32')\n"
        "AttributeError: module 'jax.core' has no attribute 'ShapedArrayy'"
    )
    assert crash.evidence.fix_rule != "version_mismatch/jax_core_member_moved_to_extend"
    assert "jax.extend.core" not in crash.fix


def test_register_keypaths_is_sent_to_register_pytree_with_keys() -> None:
    crash = _diagnose(
        '  File "/srv/app/state.py", line 30, in <module>\n'
        "    jax.tree_util.register_keypaths(TrainState, handler)\n"
        "AttributeError: module 'jax.tree_util' has no attribute 'register_keypaths'"
    )
    assert crash.evidence.fix_rule == "version_mismatch/jax_tree_util_register_keypaths_removed"
    assert "register_pytree_with_keys" in crash.fix


def test_another_missing_tree_util_name_is_not_read_as_register_keypaths() -> None:
    crash = _diagnose(
        '  File "/srv/app/state.py", line 12, in <module>\n'
        "    jax.tree_util.tree_multimap(f, a, b)\n"
        "AttributeError: module 'jax.tree_util' has no attribute 'tree_multimap'"
    )
    assert crash.evidence.fix_rule != "version_mismatch/jax_tree_util_register_keypaths_removed"
    assert "register_pytree_with_keys" not in crash.fix


def test_a_legacy_transformers_dataset_class_is_sent_to_the_datasets_library() -> None:
    crash = _diagnose(
        "Traceback (most recent call last):\n"
        '  File "/srv/app/pretrain_mlm.py", line 3, in <module>\n'
        "    from transformers import BertTokenizerFast, LineByLineTextDataset\n"
        "ImportError: cannot import name 'LineByLineTextDataset' from 'transformers' "
        "(/opt/venv/lib/python3.12/site-packages/transformers/__init__.py)"
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/transformers_legacy_dataset_removed"
    assert "load_dataset" in crash.fix


def test_another_missing_transformers_name_keeps_the_general_import_advice() -> None:
    crash = _diagnose(
        '  File "/srv/app/pretrain_mlm.py", line 3, in <module>\n'
        "    from transformers import DataCollatorForWholeWordMaskk\n"
        "ImportError: cannot import name 'DataCollatorForWholeWordMaskk' from 'transformers' "
        "(/opt/venv/lib/python3.12/site-packages/transformers/__init__.py)"
    )
    assert crash.evidence.fix_rule != "version_mismatch/transformers_legacy_dataset_removed"
    assert "load_dataset" not in crash.fix
