"""Stage 1 runs a TPU kernel in interpret mode without executing jax's Mosaic GPU interpreter, which jax's
lowering imports only to test whether the interpret parameters are GPU ones."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from tpu_runtime.kernels.scaffold import TEMPLATES_DIR

SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import numpy as np

    from tpu_runtime.kernels.child import prepare_child
    from tpu_runtime.kernels.convention import load_kernel_module
    from tpu_runtime.kernels.correctness import GPU_INTERPRETER, make_case_inputs, rng_for, run_kernel

    prepare_child()
    km = load_kernel_module(Path(sys.argv[1]))
    x, y = make_case_inputs(km, rng_for(0), {"m": 128, "k": 256, "n": 128}, "float32")
    run = run_kernel(km, km.params(), (x, y))
    assert run.error is None and run.race is None, run
    np.testing.assert_allclose(run.outputs[0], np.asarray(x) @ np.asarray(y), rtol=1e-4, atol=1e-3)
    (name,) = GPU_INTERPRETER
    assert name in sys.modules, "jax no longer imports the GPU interpreter here: drop GPU_INTERPRETER"
    assert type(sys.modules[name]).__name__ == "_LazyModule", "the GPU interpreter was executed"
    assert "jax.experimental.mosaic.gpu" not in sys.modules
    print("ok")
    """
)


def test_the_gpu_interpreter_is_never_executed() -> None:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TPU_SKIP_MDS_QUERY": "1"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(TEMPLATES_DIR / "matmul.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
