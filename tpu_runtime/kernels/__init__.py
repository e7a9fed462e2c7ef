"""Pallas TPU kernel development: scaffold, check and autotune kernels written to one simple convention.

A kernel module is one Python file that defines:

``kernel(*inputs, **params) -> Array | tuple[Array, ...]``
    The Pallas TPU kernel. It builds and calls ``pl.pallas_call`` (``from jax.experimental import pallas
    as pl``, ``from jax.experimental.pallas import tpu as pltpu``). Array arguments are annotated
    ``jax.Array`` (``torch.tpu.pallas.jax_op`` needs the types); tunable parameters are keyword arguments
    with defaults. It need not pass ``interpret=``: the checker forces TPU interpret mode itself.
``reference(*inputs) -> Array | tuple[Array, ...]``
    The same computation in plain ``jax.numpy``, no Pallas. The checker runs it on float64 copies of the
    floating inputs and compares the kernel against that.
``make_inputs(rng, shape, dtype) -> tuple[Array, ...]``
    Random inputs for one shape (a dict such as ``{"m": 256, "k": 512}``) and one dtype name. ``rng`` is a
    ``numpy.random.Generator`` seeded afresh for every run; never return zeros or constants, so a kernel
    that ignores an input cannot pass.
``SHAPES: list[dict[str, int]]``
    Shapes checked for correctness in interpret mode. Keep them small (a few grid steps): interpret mode
    runs on the CPU. The checker adds a held-out shape (the smallest one, every dimension doubled).
``DTYPES: list[str]`` (default ``["float32"]``)
    Dtype names each shape is checked with.
``TARGET_SHAPE: dict[str, int]`` (default ``SHAPES[-1]``)
    The production shape: lowered, compiled per TPU generation, estimated, and tuned for.
``SPACE: dict[str, list]``
    Each tunable parameter and the values ``kernel tune`` may try.
``DEFAULTS: dict[str, object]``
    The parameters ``kernel check`` uses and ``kernel tune`` measures its margin against.
``TOLERANCE: dict[str, list[float]]`` (optional)
    Output dtype name -> ``[rtol, atol]``, where atol is a fraction of the reference output's RMS; the
    defaults are 1e-4 for float32 and 2e-2 for bfloat16, exact for integers.
``MESH: dict[str, int]`` (optional; collective kernels)
    Mesh axis name -> device count, a literal dict. ``kernel`` then takes and returns global arrays and runs
    its ``pallas_call`` under ``jax.shard_map`` over ``jax.sharding.get_abstract_mesh()``; the checker
    provides that many devices (``mesh``) and runs interpret mode in both DMA models.

``tpu-agent kernel new NAME --template T`` writes such a module from ``templates/`` (tiled matmul in float32
and in bfloat16 with a float32 accumulator, int8 quantized matmul, RMSNorm, softmax, flash attention
forward, grouped matmul for MoE); each template passes ``kernel check`` as shipped.

Modules: ``convention`` (load and validate), ``correctness``/``poison`` (stage 1), ``honesty`` (2),
``lowering`` (3), ``tpu_compile``/``roofline``/``introspect`` (4), ``torch_integration`` (5), ``mesh``
(devices for multi-device kernels), ``check`` (the sandboxed child running them), ``job`` (the parent side),
``tune``/``runlog`` (autotune), ``scaffold`` (kernel new), ``report`` (the report models), ``explain``
(errors into plain fixes).
"""
