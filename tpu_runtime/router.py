"""Route a request (and the files attached to it) to one of the four specialists, without a model.

Why rules and not a classifier: routing has to work with no API key, give the same answer every time,
and explain itself in one line. The attached files decide most requests (a Pallas kernel, a model, a
crash log, a profile say more than any wording), so each file is sniffed for what it is from its
content; the request text then adds weighted cues per specialist. The specialist with the highest
total wins; with no cue at all the knowledge base takes the request, since it says plainly when its
sources do not cover something. The labelled set in `tests/data/routing.yaml` measures the rules.
"""

from __future__ import annotations

import ast
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from tpu_runtime.diagnose.encodings import (
    archive_hint,
    compression_of,
    decode_text,
    open_decompressed,
    text_encoding,
)
from tpu_runtime.errors import BadInput

AgentName = Literal["tpu-model-onboarding", "tpu-diagnostics", "tpu-kernel-development", "tpu-knowledge-base"]
ONBOARDING: AgentName = "tpu-model-onboarding"
DIAGNOSTICS: AgentName = "tpu-diagnostics"
KERNELS: AgentName = "tpu-kernel-development"
KNOWLEDGE: AgentName = "tpu-knowledge-base"
AGENTS: tuple[AgentName, ...] = (ONBOARDING, DIAGNOSTICS, KERNELS, KNOWLEDGE)

HEAD_BYTES = 128 * 1024  # read this much from each end of a text file: the error is usually at the end
MAX_FOLDER_ENTRIES = 5000
MAX_FOLDER_PY = 50
CLOSE_CALL = 1.0  # a runner-up within this many points is named in the reason


class RouteError(BadInput, ValueError):
    """An attached path that does not exist or cannot be read; the message is one line."""


class RouteDecision(BaseModel):
    """Which specialist takes the request, and why (one line a person can check)."""

    agent: AgentName
    reason: str = Field(description="the evidence that decided it, in one line")


class FileKind(StrEnum):
    pallas_kernel = "a Pallas kernel"
    model = "a PyTorch model"
    training_script = "a PyTorch training script"
    torch_code = "PyTorch code"
    crash_log = "a crash log"
    kernel_error_log = "a kernel compile error log"
    run_log = "a training log"
    metrics_report = "a PyTorch/XLA metrics report"
    xspace = "an XProf profile"
    torch_trace = "a torch.profiler trace"
    xla_dump = "an XLA dump"
    other = "nothing a specialist reads"


@dataclass(frozen=True)
class FileEvidence:
    path: Path
    kind: FileKind
    detail: str  # what gave it away, e.g. "imports jax.experimental.pallas"


@dataclass(frozen=True)
class Cue:
    agent: AgentName
    weight: float
    pattern: re.Pattern[str]
    label: str


def _cue(agent: AgentName, weight: float, pattern: str, label: str) -> Cue:
    return Cue(agent, weight, re.compile(pattern, re.IGNORECASE), label)


_TPU = r"(?:cloud\s+)?(?:tpus?|torch_?tpu|torchtpu|v[4-7][ep]?(?:-\d+)?|tpu\s?v\d\w*|tpu7x|trillium|ironwood)"

TEXT_CUES: tuple[Cue, ...] = (
    # onboarding: a model that has not run on a TPU yet
    _cue(ONBOARDING, 5, r"\bonboard(ing)?\b", "asks to onboard a model"),
    _cue(ONBOARDING, 5, r"\baten(::|\.)\w+", "names an ATen op"),
    _cue(
        ONBOARDING,
        4,
        r"\b(move|moving|migrat\w*|port|porting|bring)\b.{0,60}\bto\s+(a\s+|the\s+)?" + _TPU,
        "asks to move code onto TPU",
    ),
    _cue(
        ONBOARDING,
        4,
        r"\bfits?\b.{0,40}\b(hbm|memory|v[4-7]|tpu)|\b(hbm|memory)\b.{0,30}\bfits?\b",
        "asks whether it fits",
    ),
    _cue(
        ONBOARDING,
        4,
        r"\b(smallest|which|minimum)\s+(tpu\s+)?(slice|topology|pod)\b|\bslice\b.{0,30}\bholds?\b|\bholds?\b",
        "asks for a slice size",
    ),
    _cue(
        ONBOARDING,
        3,
        r"\bestimate\b.{0,20}\b(hbm|memory)|\b(hbm|memory)\b.{0,30}\bfor\s+(training|fine-?tuning|inference|serving)",
        "asks for a memory estimate",
    ),
    _cue(
        ONBOARDING,
        3,
        r"\b(missing|unsupported|not\s+supported)\s+(aten\s+)?ops?\b|\bops?\b.{0,40}\b(missing|unsupported|not\s+support|lacks?|fall\s*back)|\bwhat'?s\s+missing\b|\bwhat\s+will\s+break\b",
        "asks which ops are missing",
    ),
    _cue(ONBOARDING, 3, r"\b(serve|serving)\b|\bvllm\b", "asks how to serve on TPU"),
    _cue(
        ONBOARDING,
        3,
        r"\b(train|fine-?tune|run|serve|inference)\b.{0,40}\b(on|with)\s+(a\s+|an\s+|the\s+|one\s+|single\s+|\d+\s+)*"
        + _TPU
        + r"\b",
        "asks to run a model on TPU",
    ),
    _cue(
        ONBOARDING, 2, r"\bnumerics?\b|\bmatch(es)?\s+the\s+(cpu|gpu)\b|\bprecision\b", "asks about numerics"
    ),
    _cue(
        ONBOARDING,
        2,
        r"\bdata-dependent\b|\bdynamic\s+shapes?\b|\bnonzero\b|\.item\(\)|\bhost\s+syncs?\b",
        "mentions shapes or host syncs",
    ),
    _cue(
        ONBOARDING, 1.5, r"\bnn\.module\b|\b(module|forward|checkpoint|weights)\b", "talks about model code"
    ),
    _cue(
        ONBOARDING,
        1,
        r"\b(model|llama|mixtral|mistral|gemma|bert|gpt|unet|resnet|vit|transformer)s?\b",
        "talks about a model",
    ),
    _cue(ONBOARDING, 1, r"\b(on|to|for)\s+(a\s+|the\s+)?" + _TPU + r"\b", "targets a TPU"),
    _cue(ONBOARDING, 1, r"\b\w+\.py\b", "names a Python file"),
    # diagnostics: a run that already failed or is slow
    _cue(
        DIAGNOSTICS,
        5,
        r"resource_exhausted|\bout\s+of\s+memory\b|\bo\.?o\.?m(s|ed|ing)?\b|check\s+failed|\bsegfault|segmentation\s+fault|core\s+dumped",
        "quotes a crash",
    ),
    _cue(
        DIAGNOSTICS,
        4,
        r"\b(unimplemented|internal|failed_precondition|deadline_exceeded|unavailable):|xlaruntimeerror|initiali[sz]ation\s+failed|/dev/accel",
        "quotes an XLA or libtpu error",
    ),
    _cue(
        DIAGNOSTICS,
        4,
        r"\bhangs?\b|\bhanging\b|\bstuck\b|\bfreez\w*|\btim(e|es|ed|ing)\s*-?\s*outs?\b|\bdeadlock",
        "reports a hang",
    ),
    _cue(
        DIAGNOSTICS,
        3,
        r"\bcrash\w*|\bdied\b|\babort\w*|\bkilled\b|\bfail(s|ed|ing|ure)?\b|\berrors?\b|\bexception\b|\btraceback\b|\bbroke\b",
        "reports a failure",
    ),
    _cue(
        DIAGNOSTICS,
        3,
        r"\bprofiles?\b|\bprofiler\b|\bxprof\b|\btensorboard\b|\btraces?\b|\bxplane\b",
        "mentions a profile or trace",
    ),
    _cue(
        DIAGNOSTICS,
        3,
        r"\bslow(er|ly|ness)?\b|\bstep\s+time\b|\bthroughput\b|\bmfu\b|\butili[sz]ation\b|\bbottleneck\b|\bidle\b|\bstall\w*|\bwhere\s+(does\s+)?(the\s+)?time\s+go",
        "asks about speed",
    ),
    _cue(
        DIAGNOSTICS,
        3,
        r"\brecompil\w*|\bcompil\w*\s+too\s+often|\bcompiling\s+(every|each)",
        "reports recompilation",
    ),
    _cue(
        DIAGNOSTICS,
        3,
        r"\b(xla|hlo)\s+dumps?\b|xla_dump_to|\bmetrics\s+report\b|\blogs?\b",
        "brings a dump, report or log",
    ),
    _cue(
        DIAGNOSTICS,
        3,
        r"\bloss\b.{0,20}\bnan\b|\bnans?\b.{0,20}\b(loss|grad|step)",
        "reports NaNs in training",
    ),
    _cue(
        DIAGNOSTICS,
        2,
        r"\ball-?(reduce|gather|to-all)\b|\breduce-?scatter\b|\bcollectives?\b|\bmulti-?host\b",
        "mentions collectives",
    ),
    _cue(DIAGNOSTICS, 1, r"\bfix\b|\bwhat\s+happened\b|\bdebug\w*", "asks to fix something"),
    # kernels: Pallas code
    _cue(
        KERNELS,
        5,
        r"\b(write|implement|scaffold|create|build|port|fuse|generate|make|need|replace\b.{0,30}\bwith)\b.{0,50}\bkernels?\b",
        "asks to build a kernel",
    ),
    _cue(KERNELS, 3, r"\bpallas\b|\bpltpu\b|pallas_call|\bmosaic\b", "mentions Pallas"),
    _cue(
        KERNELS,
        3,
        r"\b(my|this|the|our)\s+(\w+\s+){0,3}kernels?\b|\bcustom\s+(\w+\s+){0,3}kernels?\b",
        "talks about their kernel",
    ),
    _cue(
        KERNELS,
        3,
        r"\bblockspec\b|\bblock\s+sizes?\b|\btil(e|ing)\s*(size)?s?\b|\bvmem\b|\bsmem\b|\bscalar\s+prefetch\b|\binterpret\s+mode\b|\bautotun\w*",
        "mentions kernel tuning",
    ),
    _cue(
        KERNELS,
        2,
        r"\b(flash|paged|ragged|splash)\s+attention\b|\b(grouped|int8|fp8)\s+matmul\b|\btriton\b|\bcuda\s+kernel",
        "names a kernel kind",
    ),
    _cue(KERNELS, 1.5, r"\bkernels?\b", "says kernel"),
    # knowledge base: documentation questions
    _cue(
        KNOWLEDGE,
        4,
        r"\bdocs?\b|\bdocumentation\b|\bcite\b|\bcitations?\b|\bsources?\b|\breference\s+manual\b",
        "asks for documentation",
    ),
    _cue(
        KNOWLEDGE,
        3,
        r"\bflags?\b|--xla_\w+|\benv(ironment)?\s+(var(iable)?s?|flags?)\b|\bapis?\b",
        "asks about a flag, variable or API",
    ),
    _cue(
        KNOWLEDGE,
        3,
        r"\binstall\w*|\bversions?\b|\brelease\s+notes\b|\bwhat'?s\s+new\b|\bchangelog\b|\bpackages?\b",
        "asks about installing or versions",
    ),
    _cue(
        KNOWLEDGE,
        2,
        r"\bpeak\b|\btflops?\b|\bbandwidth\b|\bcapacity\b|\bspecs?\b|\bgenerations?\b",
        "asks for chip facts",
    ),
    _cue(
        KNOWLEDGE,
        2,
        r"\bdifference\s+between\b|\bexplain\b|\bwhat\s+is\b|\bwhat\s+are\b|\bmeaning\s+of\b",
        "asks what something is",
    ),
)

CONCEPT_QUESTION = re.compile(
    r"^\s*(what|which|where|how\s+(do|does|can|is|are)|explain|define|is\s+there|are\s+there|does|do)\b",
    re.IGNORECASE,
)
"""A question about how things are, rather than a request to act on something of the user's."""
CONCEPT_WEIGHT = 4.0
STRONG_CUE = 5.0
"""Cues this strong (an ATen op name, a quoted crash, a request to build a kernel) keep full weight in a
concept question."""
PERSONAL = re.compile(
    r"\b(my|mine|our|ours|this|these|here'?s|here\s+is|attached|should\s+(i|we)|i\s+have|we\s+have|i'?m|we'?re)\b",
    re.IGNORECASE,
)
"""Words that point at something of the user's: then a question is about their artifact, not the docs."""

FILE_WEIGHTS: dict[FileKind, tuple[AgentName | None, float]] = {
    FileKind.pallas_kernel: (KERNELS, 7.5),
    FileKind.model: (ONBOARDING, 5.0),
    FileKind.training_script: (ONBOARDING, 4.0),
    FileKind.torch_code: (ONBOARDING, 2.0),
    FileKind.crash_log: (DIAGNOSTICS, 6.0),
    FileKind.kernel_error_log: (DIAGNOSTICS, 6.0),  # goes to kernels when a kernel file is attached too
    FileKind.run_log: (DIAGNOSTICS, 3.0),
    FileKind.metrics_report: (DIAGNOSTICS, 6.0),
    FileKind.xspace: (DIAGNOSTICS, 7.0),
    FileKind.torch_trace: (DIAGNOSTICS, 7.0),
    FileKind.xla_dump: (DIAGNOSTICS, 7.0),
    FileKind.other: (None, 0.0),
}

DIAGNOSTIC_KINDS = frozenset(kind for kind, (agent, _) in FILE_WEIGHTS.items() if agent == DIAGNOSTICS)
"""The file kinds `tpu-agent diagnose` reads."""

_KERNEL_ERROR = re.compile(r"\bMosaic\b|\bpallas\b|LoweringException", re.IGNORECASE)
_KERNEL_CATEGORIES = frozenset({"mosaic_compile_error", "vmem_oom"})
_RUN_LOG = re.compile(r"\b(step|epoch|iter(ation)?)\s*[:=]?\s*\d+.{0,80}\bloss\b", re.IGNORECASE)
_PALLAS_IMPORT = re.compile(r"^(jax\.experimental\.pallas|torch\.tpu\.pallas|torch_tpu\.pallas)")
_MODEL_BASES = re.compile(r"(Module|PreTrainedModel|LightningModule)$")
_MODEL_FUNCS = frozenset({"get_model", "get_inputs", "get_init_inputs"})
_HF_LOADERS = re.compile(r"\b(AutoModel\w*|\w+ForCausalLM|\w+Model)\.(from_pretrained|from_config)\(")
_XLA_DUMP_FILE = re.compile(r"^module_\d+\..*\.(txt|pb|hlo|json)$|\.hlo(\.txt)?$|\.mlir$")


@dataclass(frozen=True)
class RouteAnalysis:
    """The decision plus what it rested on: each file's kind and each specialist's score."""

    decision: RouteDecision
    evidence: list[FileEvidence]
    scores: dict[AgentName, float]


def route(request: str, files: Sequence[Path] = ()) -> RouteDecision:
    """Pick the specialist for `request` with `files` attached; raises `RouteError` for a bad path."""
    return analyse(request, files).decision


def analyse(request: str, files: Sequence[Path] = ()) -> RouteAnalysis:
    """`route` with its evidence, for front ends that also say what the specialist will run."""
    evidence = [classify_path(Path(f)) for f in files]
    scores: dict[AgentName, float] = dict.fromkeys(AGENTS, 0.0)
    reasons: dict[AgentName, list[tuple[float, str]]] = {agent: [] for agent in AGENTS}

    has_kernel_file = any(e.kind is FileKind.pallas_kernel for e in evidence)
    for item in evidence:
        agent, weight = FILE_WEIGHTS[item.kind]
        if item.kind is FileKind.kernel_error_log and has_kernel_file:
            agent = KERNELS  # the kernel's own compile error: the kernel specialist fixes it
        if agent is None:
            continue
        scores[agent] += weight
        reasons[agent].append((weight, f"{item.path.name} is {item.kind.value} ({item.detail})"))

    text = " ".join(request.split())
    # A question about how things work, with nothing of the user's attached or pointed at: the topic
    # words in it are its subject, not a task, so they count half and the knowledge base gets a bonus.
    concept = (
        bool(text) and not evidence and bool(CONCEPT_QUESTION.search(text)) and not PERSONAL.search(text)
    )
    for cue in TEXT_CUES:
        match = cue.pattern.search(text)
        if match:
            weight = cue.weight
            if concept and cue.agent != KNOWLEDGE and weight < STRONG_CUE:
                weight *= 0.5
            scores[cue.agent] += weight
            reasons[cue.agent].append((weight, f"the request {cue.label} ({match.group(0).strip()!r})"))
    if concept:
        scores[KNOWLEDGE] += CONCEPT_WEIGHT
        reasons[KNOWLEDGE].append(
            (CONCEPT_WEIGHT, "it is a question about how things work, with nothing of theirs to analyse")
        )

    ranked = sorted(AGENTS, key=lambda a: (-scores[a], AGENTS.index(a)))
    best = ranked[0]
    if scores[best] <= 0:
        fallback = RouteDecision(
            agent=KNOWLEDGE,
            reason="nothing in the request or its files points at a specialist; the knowledge base answers "
            "general questions and says when its sources do not cover one",
        )
        return RouteAnalysis(fallback, evidence, scores)
    top = sorted(reasons[best], key=lambda r: -r[0])[:3]
    reason = "; ".join(text for _, text in top)
    runner_up = ranked[1]
    if scores[runner_up] > 0 and scores[best] - scores[runner_up] <= CLOSE_CALL:
        reason += f" (close call: {runner_up} also fits)"
    return RouteAnalysis(RouteDecision(agent=best, reason=reason), evidence, scores)


def classify_path(path: Path) -> FileEvidence:
    """What a path is, from its content (the name only helps for binary formats)."""
    if not path.exists():
        raise RouteError(f"{path}: no such file or folder")
    if path.is_dir():
        return _classify_folder(path)
    try:
        return _classify_file(path)
    except OSError as exc:
        raise RouteError(f"{path}: cannot read it ({exc.strerror or exc})") from None


def _classify_file(path: Path) -> FileEvidence:
    name = path.name.lower()
    if name.endswith(".xplane.pb"):
        return FileEvidence(path, FileKind.xspace, "an *.xplane.pb file")
    head, tail = _ends(path)
    compression = compression_of(head)
    if compression is not None:
        return _classify_compressed(path, compression)
    if name.endswith(".pb") and re.search(rb"/(device|host):", head):
        return FileEvidence(path, FileKind.xspace, "an XSpace protobuf with device planes")
    archive = archive_hint(head)
    if archive is not None:
        return FileEvidence(path, FileKind.other, archive.split(":")[0])
    encoding = text_encoding(head[:8192])
    if encoding is None:
        return FileEvidence(path, FileKind.other, "binary")
    text = decode_text(head, encoding) + ("\n" + decode_text(tail, encoding) if tail else "")
    if name.endswith(".py"):
        return _classify_python(path, text)
    if _XLA_DUMP_FILE.search(name):
        return FileEvidence(path, FileKind.xla_dump, "HLO text")
    return _classify_text(path, text)


def _classify_text(path: Path, text: str) -> FileEvidence:
    """Any other text: the content detector `tpu-agent diagnose` uses decides (content.classify_text)."""
    from tpu_runtime.diagnose.content import classify_text

    verdict = classify_text(text)
    if verdict.kind == "torch_trace":
        return FileEvidence(path, FileKind.torch_trace, "a Chrome trace with traceEvents")
    if verdict.kind == "xla_dump":
        return FileEvidence(path, FileKind.xla_dump, "HLO text")
    if verdict.kind == "metrics_report":
        return FileEvidence(path, FileKind.metrics_report, "'Metric:' sections")
    if verdict.has_error:
        kernel = verdict.signature in _KERNEL_CATEGORIES or _KERNEL_ERROR.search(verdict.error_line or "")
        kind = FileKind.kernel_error_log if kernel else FileKind.crash_log
        if verdict.signature is not None:
            detail = f"a {verdict.signature} signature: {_quote(verdict.error_line)}"
        else:
            detail = f"contains {_quote(verdict.error_line)}"
        return FileEvidence(path, kind, detail)
    if _RUN_LOG.search(text):
        return FileEvidence(path, FileKind.run_log, "step and loss lines")
    return FileEvidence(path, FileKind.other, "no model, kernel, log or profile in it")


def _quote(line: str | None, limit: int = 80) -> str:
    text = " ".join((line or "").split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _ends(path: Path) -> tuple[bytes, bytes]:
    """The first and last HEAD_BYTES of the file (the tail empty when the head holds it all)."""
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
        size = path.stat().st_size
        if size <= 2 * HEAD_BYTES:
            return head + fh.read(), b""
        fh.seek(size - HEAD_BYTES)  # an even offset: a UTF-16 tail starts on a whole unit
        return head, fh.read()


def _classify_compressed(path: Path, compression: str) -> FileEvidence:
    try:
        with open_decompressed(path, compression) as fh:
            head = fh.read(HEAD_BYTES)
    except (OSError, EOFError, ValueError, zlib.error):
        return FileEvidence(path, FileKind.other, f"a {compression} file that does not open")
    if b'"traceEvents"' in head:
        return FileEvidence(path, FileKind.torch_trace, f"a {compression} Chrome trace with traceEvents")
    encoding = text_encoding(head[:8192])
    if encoding is None:
        return FileEvidence(path, FileKind.other, f"a {compression} file of no known kind")
    found = _classify_text(path, decode_text(head, encoding))
    return FileEvidence(path, found.kind, f"{compression}-compressed: {found.detail}")


def _classify_python(path: Path, text: str) -> FileEvidence:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return _classify_python_text(path, text)
    imports: list[str] = []
    bases: list[str] = []
    functions: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imports.append(node.module)
            imports.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ClassDef):
            bases.extend(ast.unparse(base) for base in node.bases)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.add(node.name)
    pallas = next((name for name in imports if _PALLAS_IMPORT.match(name)), None)
    if pallas is not None or "pallas_call" in text:
        return FileEvidence(
            path, FileKind.pallas_kernel, f"imports {pallas}" if pallas else "calls pallas_call"
        )
    model_base = next((b for b in bases if _MODEL_BASES.search(b)), None)
    if model_base is not None:
        return FileEvidence(path, FileKind.model, f"subclasses {model_base}")
    if functions & _MODEL_FUNCS:
        return FileEvidence(path, FileKind.model, f"defines {sorted(functions & _MODEL_FUNCS)[0]}()")
    hf = _HF_LOADERS.search(text)
    if hf:
        return FileEvidence(path, FileKind.model, f"builds a model with {hf.group(1)}.{hf.group(2)}")
    uses_torch = any(name == "torch" or name.startswith("torch.") for name in imports)
    if uses_torch and (".backward(" in text or "torch.optim" in text):
        return FileEvidence(path, FileKind.training_script, "runs backward and an optimizer")
    if uses_torch:
        return FileEvidence(path, FileKind.torch_code, "imports torch")
    return FileEvidence(path, FileKind.other, "Python with no model or kernel in it")


def _classify_python_text(path: Path, text: str) -> FileEvidence:
    """The same judgement for Python that does not parse: by what its lines say."""
    if re.search(
        r"^\s*(from|import)\s+(jax\.experimental\.pallas|jax\.experimental\s+import\s+pallas)", text, re.M
    ):
        return FileEvidence(path, FileKind.pallas_kernel, "imports Pallas (the file does not parse)")
    if re.search(r"class\s+\w+\(.*Module\)", text):
        return FileEvidence(path, FileKind.model, "defines an nn.Module (the file does not parse)")
    return FileEvidence(path, FileKind.other, "Python that does not parse")


def _classify_folder(folder: Path) -> FileEvidence:
    python: list[Path] = []
    for count, entry in enumerate(folder.rglob("*")):
        if count >= MAX_FOLDER_ENTRIES:
            break
        name = entry.name.lower()
        if name.endswith(".xplane.pb"):
            return FileEvidence(folder, FileKind.xspace, f"holds {entry.relative_to(folder)}")
        if _XLA_DUMP_FILE.search(name) and entry.is_file():
            return FileEvidence(folder, FileKind.xla_dump, f"holds {entry.relative_to(folder)}")
        if name.endswith((".pt.trace.json", ".pt.trace.json.gz")):
            return FileEvidence(folder, FileKind.torch_trace, f"holds {entry.relative_to(folder)}")
        if name.endswith(".py") and entry.is_file() and len(python) < MAX_FOLDER_PY:
            python.append(entry)
    found = [_classify_file(p) for p in python]
    for kind in (FileKind.pallas_kernel, FileKind.model, FileKind.training_script):
        for item in found:
            if item.kind is kind:
                return FileEvidence(folder, kind, f"{item.path.relative_to(folder)} {item.detail}")
    return FileEvidence(folder, FileKind.other, "a folder with no model, kernel, log or profile")
