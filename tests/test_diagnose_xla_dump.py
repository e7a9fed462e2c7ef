"""XLA dumps made here: small jax functions jitted on CPU with XLA_FLAGS=--xla_dump_to, in a subprocess."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO
from tpu_runtime.diagnose.detect import detect_input
from tpu_runtime.diagnose.report import XlaDumpSummary
from tpu_runtime.diagnose.xla_dump import COLLECTIVES, analyze_xla_dump

SCRIPT = textwrap.dedent(
    """
    import jax, jax.numpy as jnp
    import numpy as np
    from jax import shard_map
    from jax.sharding import Mesh, PartitionSpec as P

    @jax.jit
    def mlp(x, w):
        return jnp.tanh(x @ w).sum(axis=-1)

    w = np.ones((16, 32), np.float32)
    mlp(np.ones((8, 16), np.float32), w)
    mlp(np.ones((4, 16), np.float32), w)  # a new shape: jit_mlp compiles again

    mesh = Mesh(np.array(jax.devices()[:4]), ("d",))

    def body(x):
        a = jax.lax.psum(x, "d")  # all-reduce
        b = jax.lax.all_gather(x, "d")  # all-gather
        c = jax.lax.ppermute(x, "d", [(i, (i + 1) % 4) for i in range(4)])  # collective-permute
        d = jax.lax.psum_scatter(b.reshape(-1, x.shape[-1]), "d", tiled=True)  # reduce-scatter
        e = jax.lax.all_to_all(x.reshape(4, -1), "d", 0, 0, tiled=True)  # all-to-all
        return a + c + d[: x.shape[0]], e

    f = jax.jit(shard_map(body, mesh=mesh, in_specs=P("d"), out_specs=(P("d"), P("d"))))
    f(np.arange(64.0, dtype=np.float32).reshape(16, 4))
    """
)
COMMENT_KIND = re.compile(r"#\s*(all-reduce|all-gather|collective-permute|reduce-scatter|all-to-all)")


@pytest.fixture(scope="module")
def dump(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, XlaDumpSummary]:
    root = tmp_path_factory.mktemp("xla")
    script = root / "make_dump.py"
    script.write_text(SCRIPT)
    out = root / "dump"
    env = {
        **os.environ,
        "XLA_FLAGS": f"--xla_dump_to={out} --xla_force_host_platform_device_count=4",
        "JAX_PLATFORMS": "cpu",
        "TPU_SKIP_MDS_QUERY": "1",
    }
    subprocess.run(
        [sys.executable, str(script)], env=env, check=True, timeout=300, cwd=REPO, capture_output=True
    )
    detected = detect_input(str(out))
    assert detected.kind == "xla_dump"
    return out, script, analyze_xla_dump(detected.files, str(out), top=50)


@pytest.mark.slow
def test_recompiled_module_is_found_with_both_layouts(dump: tuple[Path, Path, XlaDumpSummary]) -> None:
    _, _, s = dump
    mlp = next(r for r in s.recompilations if r.name == "jit_mlp")
    assert mlp.compilations == 2 and len(mlp.module_ids) == 2
    assert any("f32[8,16]" in sig for sig in mlp.signatures) and any(
        "f32[4,16]" in sig for sig in mlp.signatures
    )
    assert not any(r.name == "jit_body" for r in s.recompilations)
    assert any(f.kind == "recompilation" and "jit_mlp" in f.message for f in s.findings)
    names = [m.name for m in s.modules]
    assert names.count("jit_mlp") == 2 and "jit_body" in names
    assert s.module_count == len(names) and s.distinct_names == len(set(names))


def test_collectives_and_their_source_lines(dump: tuple[Path, Path, XlaDumpSummary]) -> None:
    _, script, s = dump
    assert s.collective_counts == dict.fromkeys(COLLECTIVES, 1)
    expected_lines = {
        m[1]: i
        for i, line in enumerate(script.read_text().splitlines(), 1)
        if (m := COMMENT_KIND.search(line))
    }
    for c in s.collectives:
        assert c.module.endswith("jit_body")
        assert c.source is not None and c.source.startswith(f"{script}:{expected_lines[c.kind]}"), (
            c.kind,
            c.source,
        )
    reduce = next(c for c in s.collectives if c.kind == "all-reduce")
    assert reduce.replica_groups == "{{0,1,2,3}}" and reduce.shape.startswith("f32[4,4]")


def test_fusions_and_buffers_agree_with_the_files(dump: tuple[Path, Path, XlaDumpSummary]) -> None:
    out, _, s = dump
    after = sorted(out.glob("*after_optimizations.txt"))
    fusions = sum(len(re.findall(r"^\s*(?:ROOT )?%\S+ = .* fusion\(", p.read_text(), re.M)) for p in after)
    assert s.fusion_total == fusions > 0
    assert sum(s.fusion_kinds.values()) == fusions
    sizes = [
        int(m)
        for p in out.glob("*-buffer-assignment.txt")
        for m in re.findall(r"value: <.*?\(size=(\d+),", p.read_text())
    ]
    assert s.largest_buffers[0].size_bytes == max(sizes)
    assert [b.size_bytes for b in s.largest_buffers] == sorted(
        (b.size_bytes for b in s.largest_buffers), reverse=True
    )
    for m in s.modules:
        ba = next(out.glob(f"module_{m.id}.*-buffer-assignment.txt"))
        total = sum(int(x) for x in re.findall(r"^allocation \d+: size (\d+)", ba.read_text(), re.M))
        assert m.assigned_bytes == total


def test_single_hlo_text_file(dump: tuple[Path, Path, XlaDumpSummary]) -> None:
    out, _, _ = dump
    one = next(out.glob("*jit_body*cpu_after_optimizations.txt"))
    detected = detect_input(str(one))
    assert detected.kind == "xla_dump"
    s = analyze_xla_dump(detected.files, str(one))
    assert s.module_count == 1 and sum(s.collective_counts.values()) == 5
