"""The three OnboardReport front ends: terminal (rich), Markdown and self-contained HTML."""

from __future__ import annotations

import html
import math
import re
import time
from html.parser import HTMLParser

import pytest
from rich.console import Console

from tpu_runtime.cli.render.onboard.html import render_onboard_html
from tpu_runtime.cli.render.onboard.markdown import render_onboard_markdown
from tpu_runtime.cli.render.onboard.terminal import render_onboard_terminal
from tpu_runtime.onboard.report import (
    GENERATIONS,
    GenerationFit,
    LayerError,
    MemoryBreakdown,
    ModelInfo,
    NumericsReport,
    OnboardReport,
    OpUse,
    PrecisionMode,
    Preflight,
    Remedy,
    Risk,
    ServingPlan,
)

GIB = 2**30
MODES: list[PrecisionMode] = ["default", "high", "highest", "bf16"]
TOL: dict[PrecisionMode, float] = {"default": 3.125e-2, "high": 1e-3, "highest": 1e-4, "bf16": 0.125}
BASE_REL: dict[PrecisionMode, float] = {"default": 4e-3, "high": 2e-5, "highest": 3e-7, "bf16": 1.5e-2}
LAYERS = [
    "embed",
    "blocks.0.attn",
    "blocks.0.mlp",
    "blocks.1.attn",
    "blocks.1.mlp.logsumexp",
    "blocks.1.mlp",
    "norm",
    "lm_head",
    "(model)",
]
DIVERGENT = "blocks.1.mlp.logsumexp"
MISSING_OP = "aten::_fft_r2c"
REMEDY_CODE = "x = torch.where(mask < 0, a & b, c)  # rewrite of <fft>"
HBM = {"v5e": 16, "v5p": 95, "v6e": 32, "tpu7x": 192}
SNIPPET = 'from vllm import LLM\nllm = LLM(model="fftnet", device="tpu")\nprint(llm.generate("a < b"))\n'
SLICES = {"v5e": "v5litepod-4", "v5p": "v5p-8", "v6e": "v6e-4", "tpu7x": "tpu7x-2"}


def _op(op: str, status: str, phase: str = "forward", count: int = 1, module: str = "blocks.0.mlp") -> OpUse:
    return OpUse(
        op=op,
        phase=phase,  # type: ignore[arg-type]
        count=count,
        status=status,  # type: ignore[arg-type]
        detail=f"{status} in torch_tpu 0.2.1 dispatcher table",
        tpu_op="aten::nonzero" if status == "cpu_variant" else None,
        module=module,
        source=f"model.py:{10 + count}",
    )


def _numerics(layers: list[str] = LAYERS, divergent: str | None = DIVERGENT) -> NumericsReport:
    rows: list[LayerError] = []
    first: dict[str, str | None] = {m: None for m in MODES}
    for i, layer in enumerate(layers):
        for mode in MODES:
            rel = BASE_REL[mode] * (1 + 0.1 * i)
            if layer == divergent and mode in ("default", "bf16"):
                rel = 0.4  # cancellation: error of the order of the output
            ok = rel <= TOL[mode]
            if not ok and first[mode] is None:
                first[mode] = layer
            rows.append(
                LayerError(
                    layer=layer,
                    mode=mode,
                    max_abs=rel * 3,
                    rel=rel,
                    cosine=1 - rel,
                    tolerance=TOL[mode],
                    ok=ok,
                )
            )
    return NumericsReport(
        modes=MODES,
        rows=rows,
        first_divergent_layer=first["default"],
        first_divergent_by_mode=first,
        device_check="not run: no TPU target is configured",
    )


def _preflight() -> Preflight:
    gens: dict[str, GenerationFit] = {}
    inference, training = 20 * GIB, 90 * GIB
    for g in GENERATIONS:
        hbm = HBM[g] * GIB
        gens[g] = GenerationFit(
            generation=g,
            hbm_per_chip_bytes=hbm,
            inference_bytes=inference,
            training_bytes=training,
            fits=inference <= hbm,
            training_fits=training <= hbm,
            inference_chips=math.ceil(inference / hbm),
            training_chips=math.ceil(training / hbm),
            smallest_slice_inference=SLICES[g],
            smallest_slice_training=None if g == "v5e" else SLICES[g],
        )
    return Preflight(
        breakdown=MemoryBreakdown(
            weights=14 * GIB,
            activations_inference=4 * GIB,
            kv_cache=2 * GIB,
            gradients=14 * GIB,
            optimizer_state=28 * GIB,
            activations_training=34 * GIB,
            batch=8,
            seq=2048,
            note="AdamW, fp32 master weights",
        ),
        generations=gens,
        sources=["https://cloud.google.com/tpu/docs/system-architecture-tpu-vm"],
    )


def full_report(
    module_name: str = "blocks.1.mlp", n_ops: int = 0, layers: list[str] = LAYERS
) -> OnboardReport:
    ops = [
        _op("aten::addmm", "supported", count=24),
        _op("aten::add.Tensor", "supported", count=48),
        _op("aten::gelu", "supported", count=12),
        _op("aten::native_layer_norm", "composite", count=25),
        _op("aten::nonzero", "cpu_variant", count=2, module="blocks.0.attn"),
        _op(MISSING_OP, "missing", count=3, module=module_name),
        _op("aten::addmm", "supported", phase="backward", count=24),
        _op("aten::native_layer_norm_backward", "composite", phase="backward", count=25),
        _op("aten::_fft_c2r", "missing", phase="backward", count=3, module=module_name),
    ]
    ops += [_op(f"aten::synthetic_{i}", ("supported", "composite")[i % 2], count=i + 1) for i in range(n_ops)]
    return OnboardReport(
        model=ModelInfo(
            file="examples/fftnet/model.py",
            convention="get_model+get_inputs",
            class_name="FFTNet",
            parameters=7_241_748_480,
            parameter_bytes=7_241_748_480 * 2,
            buffers_bytes=4096,
            dtype="bfloat16",
            is_decoder_lm=True,
            shrunk=True,
            shrink_note="ops captured on a 2-layer, 256-wide copy",
        ),
        op_table="torch_tpu 0.2.1 (installed package)",
        ops=ops,
        missing=[MISSING_OP, "aten::_fft_c2r"],
        remedies=[
            Remedy(
                op=MISSING_OP,
                kind="rewrite",
                summary="express the real FFT as a matmul with a DFT matrix",
                code=REMEDY_CODE,
                cost="one extra matmul per call",
            ),
            Remedy(op=MISSING_OP, kind="cpu_fallback", summary="run the FFT on the host"),
        ],
        risks=[
            Risk(kind="host_sync", op="aten::nonzero", source="model.py:40", module="blocks.0.attn"),
            Risk(kind="dynamic_shape", op="aten::nonzero", source="model.py:40", detail="data-dependent"),
        ],
        numerics=_numerics(layers),
        preflight=_preflight(),
        serving=ServingPlan(
            path="vllm-torchtpu",
            reason="decoder-only LM with a Hugging Face architecture vLLM knows",
            eager_mode="compile",
            eager_reason="graph is static after warm-up",
            pretraining="torch.compile with the TorchTPU backend",
            snippet=SNIPPET,
            sources=["knowledge/serving.md"],
        ),
        timings={"capture": 1.5, "numerics": 3.25},
        notes=["captured ops on a shrunk copy"],
    )


def empty_report() -> OnboardReport:
    return OnboardReport(
        model=ModelInfo(
            file="m.py", convention="get_model", class_name="Tiny", parameters=10, parameter_bytes=40
        ),
        op_table="snapshot 2025-01",
        ops=[],
        missing=[],
        remedies=[],
        risks=[],
        numerics=None,
        preflight=None,
        serving=None,
        notes=["numerics skipped: the model has no floating-point outputs"],
    )


class _TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _TagCollector()
    parser.feed(page)
    return parser.tags


def _terminal(report: OnboardReport, top: int = 15) -> str:
    console = Console(record=True, width=120)
    render_onboard_terminal(report, console, top=top)
    return console.export_text()


# ---------------------------------------------------------------------------------------------- markdown


def test_markdown_lists_missing_ops_divergent_layer_and_generations() -> None:
    md = render_onboard_markdown(full_report())
    for op in full_report().missing:
        assert op in md
    assert DIVERGENT in md
    assert "First divergent layer (DEFAULT): `blocks.1.mlp.logsumexp`" in md
    for g in GENERATIONS:
        assert re.search(rf"^\| {g} \| ", md, re.M), g
    # remedy code and the serving snippet are fenced, verbatim
    assert "```python\n" + REMEDY_CODE + "\n```" in md
    assert 'llm = LLM(model="fftnet", device="tpu")' in md
    # human-readable GiB, not raw byte counts
    assert "20.00 GiB" in md and "16.00 GiB" in md
    assert str(20 * GIB) not in md


def test_markdown_table_rows_have_consistent_columns() -> None:
    md = render_onboard_markdown(full_report(module_name="a|b"))
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("| ---") or line.startswith("| ---:"):
            width = lines[i - 1].count(" | ")
            j = i + 1
            while j < len(lines) and lines[j].startswith("| "):
                unescaped = re.sub(r"\\\|", "", lines[j])
                assert unescaped.count(" | ") == width, lines[j]
                j += 1


def test_markdown_sections_absent() -> None:
    md = render_onboard_markdown(empty_report())
    assert "Numerics not run: numerics skipped: the model has no floating-point outputs" in md
    assert "Preflight not run" in md
    assert "No serving plan" in md
    assert "## Missing ops (0)" in md
    assert "```" not in md


# -------------------------------------------------------------------------------------------------- html


def test_html_has_three_charts_and_the_tables() -> None:
    page = render_onboard_html(full_report())
    assert page.count("<svg") == 3
    assert page.count("</svg>") == 3
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert MISSING_OP in page and DIVERGENT in page
    for g in GENERATIONS:
        assert f"<td>{g}</td>" in page
    # remedy code is escaped, not interpreted
    assert html.escape(REMEDY_CODE, quote=False) in page
    # chart element ids are unique across the three inline SVGs
    ids = re.findall(r'\bid="([^"]+)"', page)
    assert len(ids) == len(set(ids))


def test_html_fewer_charts_when_sections_absent() -> None:
    page = render_onboard_html(empty_report())
    assert "<svg" not in page
    assert "Numerics not run" in page and "no floating-point outputs" in page
    assert "Preflight not run" in page and "No serving plan" in page

    partial = full_report().model_copy(update={"numerics": None})
    assert render_onboard_html(partial).count("<svg") == 2
    partial = full_report().model_copy(update={"numerics": None, "preflight": None})
    assert render_onboard_html(partial).count("<svg") == 1


def test_html_is_self_contained() -> None:
    page = render_onboard_html(full_report())
    for tag, attrs in _tags(page):
        if tag in {"script", "link", "img", "iframe", "source", "object", "embed", "use", "image"}:
            for key in ("src", "href", "xlink:href", "data"):
                value = attrs.get(key) or ""
                assert not value.startswith(("http://", "https://", "//")), (tag, key, value)
    assert not any(tag in {"script", "link"} for tag, _ in _tags(page))
    assert "@import" not in page and "url(http" not in page


def test_html_escapes_user_strings() -> None:
    evil = "<script>alert(1)</script>"
    report = full_report(module_name=evil, layers=[*LAYERS[:3], evil, *LAYERS[3:]])
    page = render_onboard_html(report)
    assert evil not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not any(tag == "script" for tag, _ in _tags(page))
    md = render_onboard_markdown(report)
    assert "`<script>alert(1)</script>`" in md  # inside a code span, which GitHub shows as text


def test_html_handles_non_finite_and_many_layers() -> None:
    report = full_report()
    assert report.numerics is not None
    rows = list(report.numerics.rows)
    rows[0] = rows[0].model_copy(update={"rel": math.inf, "ok": False})
    rows[1] = rows[1].model_copy(update={"rel": math.nan, "ok": False})
    rows[2] = rows[2].model_copy(update={"rel": 0.0})
    numerics = report.numerics.model_copy(update={"rows": rows})
    page = render_onboard_html(report.model_copy(update={"numerics": numerics}))
    assert page.count("<svg") == 3
    assert ">inf<" in page and ">nan<" in page


def test_no_divergent_layer_shows_worst_layers_instead() -> None:
    report = full_report().model_copy(update={"numerics": _numerics(divergent=None)})
    assert report.numerics is not None and report.numerics.first_divergent_layer is None
    md = render_onboard_markdown(report)
    assert "### Top 9 layers by error / tolerance" in md
    assert "First divergent layer" not in md
    assert "Top 9 layers by error / tolerance" in render_onboard_html(report)
    assert "top 3 layers by error / tolerance" in _terminal(report, top=3)


def test_numerics_error_without_rows() -> None:
    failed = NumericsReport(
        modes=MODES,
        rows=[],
        first_divergent_layer=None,
        device_check="not run",
        error="float64 reference run failed: RuntimeError: <boom>",
    )
    report = full_report().model_copy(update={"numerics": failed})
    page = render_onboard_html(report)
    assert page.count("<svg") == 2
    assert "RuntimeError: &lt;boom&gt;" in page
    assert "No per-layer rows were recorded" in render_onboard_markdown(report)
    assert "<boom>" in _terminal(report)


def test_missing_names_without_an_op_use_are_listed() -> None:
    report = full_report().model_copy(update={"missing": [MISSING_OP, "aten::_fft_c2r", "aten::stft"]})
    md = render_onboard_markdown(report)
    assert "## Missing ops (3)" in md and "`aten::stft`" in md
    assert "aten::stft" in _terminal(report)


# ---------------------------------------------------------------------------------------------- terminal


def test_terminal_shows_missing_op_and_divergent_layer() -> None:
    out = _terminal(full_report())
    assert MISSING_OP in out
    assert DIVERGENT in out
    assert "rewrite, cpu_fallback" in out  # the remedy kinds; their code is in --md/--html
    assert "v5e" in out and "tpu7x" in out
    assert "vllm-torchtpu" in out and 'LLM(model="fftnet"' in out
    assert "7.24B" in out


def test_terminal_copes_with_absent_sections() -> None:
    out = _terminal(empty_report())
    assert "numerics not run" in out and "no floating-point outputs" in out
    assert "preflight not run" in out
    assert "no serving plan" in out
    assert "no ops were captured" in out


def test_terminal_does_not_interpret_markup_in_user_strings() -> None:
    out = _terminal(full_report(module_name="[bold red]blocks[/]"))
    assert "[bold red]blocks[/]" in out


def test_terminal_top_caps_long_lists() -> None:
    report = full_report()
    many = [Risk(kind="host_sync", op=f"aten::item_{i}", source=f"m.py:{i}") for i in range(40)]
    out = _terminal(report.model_copy(update={"risks": many}), top=5)
    assert "aten::item_4" in out and "aten::item_5 " not in out
    assert "35 more risks" in out


# ----------------------------------------------------------------------------------------------- scale


@pytest.mark.parametrize("renderer", ["markdown", "html", "terminal"])
def test_large_report_renders_quickly(renderer: str) -> None:
    layers = [f"model.layers.{i // 5}.sub{i % 5}" for i in range(125)]  # 125 layers x 4 modes = 500 rows
    report = full_report(n_ops=2000, layers=layers)
    assert report.numerics is not None and len(report.numerics.rows) == 500
    start = time.perf_counter()
    if renderer == "markdown":
        out = render_onboard_markdown(report)
        assert "aten::synthetic_1999" in out
    elif renderer == "html":
        out = render_onboard_html(report)
        assert out.count("<svg") == 3
    else:
        out = _terminal(report)
    elapsed = time.perf_counter() - start
    # Not a timing assertion (CI machines vary); this only reports the figure when run with -s.
    print(f"{renderer}: {elapsed:.2f}s for 2000 ops and 500 numerics rows")
