"""Families of version skew that round diag119 added to the rules (docs/diagnose-accuracy.md).

Two families: jax's pmap-era placement helpers (jax.device_put_replicated / device_put_sharded), which
jax 0.10 refuses and whose replacement is jax.device_put with a NamedSharding, and pip's resolver finding
no installable jax[tpu] release (libtpu, which every jax[tpu] pins, has Linux wheels only). Each case is
worded apart from the collected log (the other helper, other releases and packages), and each family has
a nearby wording it must not claim, so a rule matching only the collected text would fail here.
"""

from __future__ import annotations

import pytest

from tests.crash_helpers import diagnose_rules_alone as _diagnose


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (
            "AttributeError: jax.device_put_sharded is deprecated; use jax.device_put instead. See https://"
            "docs.jax.dev/en/latest/migrate_pmap.html#drop-in-replacements for a drop-in replacement.",
            "sharded",
        ),
        (
            '  File "/opt/venv/lib/python3.12/site-packages/flax/jax_utils.py", line 47, in replicate\n'
            "    return jax.device_put_replicated(tree, devices)\n"
            "AttributeError: jax.device_put_replicated is deprecated; use jax.device_put instead.",
            "replicated",
        ),
    ],
)
def test_a_pmap_placement_helper_gets_device_put_with_a_named_sharding(text: str, kind: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/jax_pmap_device_put_retired"
    assert f"jax.device_put_{kind} belongs to the pmap API" in crash.fix
    assert "NamedSharding(mesh, PartitionSpec())" in crash.fix
    assert "jax.shard_map" in crash.fix


def test_another_jax_removal_is_not_read_as_a_pmap_placement_helper() -> None:
    """A removed jax.core name keeps its own replacement, not the mesh placement advice."""
    crash = _diagnose(
        "AttributeError: jax.core.get_aval was deprecated in JAX v0.8.2 and removed in JAX v0.10.0; "
        "use jax.typeof instead."
    )
    assert crash.evidence.fix_rule != "version_mismatch/jax_pmap_device_put_retired"
    assert "NamedSharding" not in crash.fix


@pytest.mark.parametrize(
    "text",
    [
        "ERROR: Cannot install jax[tpu]==0.4.35 and libtpu==0.0.5 because these package versions have "
        "conflicting dependencies.",
        "ERROR: Cannot install my-trainer==1.2.0, jax[tpu]==0.5.0 and jax[tpu]==0.5.1 because these package "
        "versions have conflicting dependencies.\n"
        "ERROR: ResolutionImpossible: for help visit "
        "https://pip.pypa.io/en/latest/topics/dependency-resolution/#dealing-with-dependency-conflicts",
    ],
)
def test_no_installable_jax_tpu_release_points_at_a_linux_tpu_host(text: str) -> None:
    crash = _diagnose(text)
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule == "version_mismatch/pip_no_jax_tpu_release_resolves"
    assert "jax[tpu]==0.5.0" in crash.fix or "jax[tpu]==0.4.35" in crash.fix
    assert "Linux" in crash.fix
    assert "TPU VM" in crash.fix


def test_a_resolver_conflict_without_jax_tpu_is_version_skew_but_not_the_libtpu_advice() -> None:
    """pip's conflict between two other packages is still a version problem, with no libtpu host advice."""
    crash = _diagnose(
        "ERROR: Cannot install flax==0.8.0 and optax==0.1.4 because these package versions have conflicting "
        "dependencies."
    )
    assert crash.category == "version_mismatch", crash.evidence.fix_rule
    assert crash.evidence.fix_rule != "version_mismatch/pip_no_jax_tpu_release_resolves"
    assert "libtpu wheels" not in crash.fix


def test_prose_about_conflicting_dependencies_is_not_a_resolver_failure() -> None:
    """A sentence that uses the words without pip's 'Cannot install ... because' frame claims nothing."""
    crash = _diagnose("note: these package versions have conflicting dependencies in some setups")
    assert crash.evidence.fix_rule != "version_mismatch/pip_no_jax_tpu_release_resolves"
