"""Word forms and word families: when two words of a question and a passage name the same thing.

Users paraphrase the documentation: they write 'documentation' where a line says 'docs', 'jitted' for
'jit', 'place shards' for 'put shards', 'steer the compiler' for 'hint to the compiler'. A light
stemmer joins the regular forms ('topologies' and 'topology'); `FAMILIES` joins what no suffix rule
can: irregular or clipped forms, stems the suffix rules split ('document' stems to 'docu' but
'documentation' to 'documentat'), a few synonyms of the TPU docs' own vocabulary, and the spellings
of one number format or compute rate ('bfloat16' is 'bf16', 'FLOPS' names '1.1 exaflops'). The families
are kept small on purpose: each one widens what a question matches, so a loose family would let a
question about something the sources never say be answered from a line that merely sounds alike.
"""

from __future__ import annotations

import functools
import re

# Past forms the suffix rules cannot undo: 'written' is 'write', so "where is the trace written" meets
# "where TorchTPU writes the trace".
IRREGULAR = {
    "written": "write", "wrote": "write", "ran": "run", "built": "build", "chosen": "choose",
    "given": "give", "gave": "give", "taken": "take", "took": "take", "made": "make", "found": "find",
    "sent": "send", "kept": "keep", "held": "hold", "shown": "show", "known": "know", "knew": "know",
    "done": "do", "gone": "go", "began": "begin", "begun": "begin", "fell": "fall", "fallen": "fall",
    "chose": "choose", "hidden": "hide", "bound": "bind", "brought": "bring", "caught": "catch",
    "thought": "think", "bought": "buy", "led": "lead", "lost": "lose", "spent": "spend",
}  # fmt: skip
# Prefixes that keep a word's subject: 'unfilled' is about being filled, 'retracing' about tracing.
_PREFIX_RE = re.compile(r"^(?:un|re)(?=[a-z]{5,}$)")
_SUFFIXES = (
    # derived forms name the same thing: 'resiliency' is 'resilience', 'availability' 'available',
    # 'preemptible' 'preempt', 'deployment' 'deploy'
    ("ency", "ence"),
    ("ancy", "ance"),
    ("ability", "able"),
    ("ibility", "ible"),
    ("able", ""),
    ("ible", ""),
    ("ment", ""),
    # '-ization' is the '-ize' verb's noun: 'rematerialization' meets 'rematerialized'
    ("ization", "ize"),
    ("isation", "ise"),
    ("ies", "y"),
    ("sses", "ss"),
    ("ing", ""),
    ("ed", ""),
    ("ion", ""),
    ("es", "e"),
    ("s", ""),
    ("e", ""),
)
# '-ing'/'-ed' after three letters, consonant-vowel-consonant: the verb ended in a silent 'e' ('losing',
# 'named', 'timing'); the suffix rules leave such short forms alone, so 'losing' missed a line's 'lose'
_SHORT_E_RE = re.compile(r"^([b-df-hj-np-tv-z][aeiouy][b-df-hj-np-tvz])(?:ing|ed)$")
# after '-ed'/'-ing' a doubled final consonant is the spelling's, not the word's: 'jitted' is 'jit',
# 'padding' 'pad', 'embedded' 'embed' (but 'installed' stays 'install', 'passed' 'pass')
_DOUBLED_RE = re.compile(r"([b-df-hj-km-np-rtv-y])\1$")

# Everyday English words of time, degree and negation ('now', 'too', 'yet', the 'isn' of "isn't") that
# frame a user's story and name nothing a source would repeat
EVERYDAY_WORDS = frozenset(
    "now too yet already ever even anyway aren isn doesn didn don won wasn weren hasn haven couldn "  # noqa: SIM905
    "shouldn wouldn".split()
)

# Clipped words and the words they clip ('ops' for 'operations'), joined only in the gate's support share and
# attribute check: as a family they also moved quotes and weights, and a covered question of the unread fold
# lost its answer
CLIPPED: tuple[tuple[str, str], ...] = (("ops", "operations"), ("op", "operation"))
# A word users write for one the sources use, joined as the clipped words are: 'what makes X necessary' where
# a line says X 'needs' or is 'required' ('necessary' is in one line of the sheets, 'need' in hundreds); the
# cache 'directory' a line names by its variable's `..._PATH` or by a path; the 'mean' of a figure a line
# gives as its 'average' or names in code by 'avg' (`get_avg_step_time`); 'inference' where Cloud TPU's pages
# write 'serving' (v5e's serving and training capacity); 'how many host machines' where a line counts 'hosts'
SAID_AS: tuple[tuple[str, str], ...] = (
    *(("necessary", w) for w in ("need", "needs", "needed", "required", "requires", "require")),
    ("directory", "path"),
    ("mean", "average"),
    ("mean", "avg"),
    ("inference", "serving"),
    ("machines", "hosts"),
    ("billed", "charged"),
)
_WORDS_RE = re.compile(r"[a-z]+")


# A call written in a code span ('`pl.cdiv(a, b)`', '`jax.lax.with_sharding_constraint(x, s)`') is how the
# sources name a function: a question's 'Pallas function for ...' or 'inside a jitted function' meets it in
# the support share. Only a call: every code span counted as naming a function, flag, call or option cost main
# dev fold A a refusal (docs/kb-accuracy.md)
CALL_NAMES = "function"
_CALL_RE = re.compile(r"`[A-Za-z_][\w.]*\(")


def spelled_out(text: str) -> str:
    """The other form of each clipped word or word it clips that `text` writes ('ops' -> 'operations',
    'operations' -> 'ops'), the users' word for a sources' word (`SAID_AS`: 'needs' -> 'necessary') and
    `CALL_NAMES` when it writes a call in a code span, space-separated: added to a passage's text, the
    share counts either form."""
    said = set(_WORDS_RE.findall(text.lower()))
    other = [b if a in said else a for a, b in CLIPPED + SAID_AS if a in said or b in said]
    if _CALL_RE.search(text):
        other.append(CALL_NAMES)
    return " ".join(other)


# Words that name the same thing in TPU documentation and in users' questions. Each family is matched
# through the stems of its words, so every form of a member belongs to it ('picks', 'picked').
FAMILIES: tuple[tuple[str, ...], ...] = (
    # the stemmer splits these: 'document' -> 'docu', 'documentation' -> 'documentat', 'docs' -> 'doc'
    ("doc", "document", "documentation"),
    ("variable", "var"),  # 'variable' stems to 'vari'; 'env var' is how users write it
    ("environment", "env"),
    ("compile", "compilation"),  # not "compiler": the tool is not the step (a dev fold dropped with it)
    ("quantize", "quantization", "quantise", "quantisation"),
    ("initialize", "initialization", "initialise", "initialisation", "init"),
    ("optimize", "optimization", "optimise", "optimisation"),
    ("parallel", "parallelism"),
    ("utilization", "utilisation", "utilize"),
    ("usage", "use"),  # 'memory usage' is 'memory use'; not utilization, which 'use' would make common
    # synonyms of the docs' vocabulary
    ("put", "place", "placement"),
    ("hint", "steer", "guide", "nudge"),
    ("choose", "choice", "pick", "select", "selection"),
    ("dram", "ram"),
    ("fast", "faster", "fastest", "quick", "quicker", "speed", "speedup"),
    ("slow", "slower", "slowdown"),
    ("delete", "remove", "removal"),
    ("start", "begin"),
    ("stop", "halt"),
    ("run", "execute", "execution"),
    ("error", "exception"),
    ("job", "workload"),  # GKE and Multislice pages say 'workload' where users say 'job'
    ("communicate", "communication"),  # not "talk": chips "talk over ICI" is not user code communicating
    # number formats: users write the dtype's long name where a line has the short one, or back
    ("bf16", "bfloat16"),
    ("fp8", "float8"),
    ("fp16", "float16"),
    ("fp32", "float32"),
    # a compute rate is FLOPS whatever its prefix: "total FLOPS of a Pod" meets "1.1 exaflops"
    ("flops", "tflops", "pflops", "gflops", "teraflops", "petaflops", "exaflops", "gigaflops"),
    # one TPU generation under its other names (Cloud TPU's pages use all of them): "v7x" meets a TPU7x
    # line, "Trillium" a v6e one
    ("tpu7x", "v7x", "ironwood"),
    ("v6e", "trillium"),
    ("v5e", "v5litepod"),
)


@functools.lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """A light English stemmer, applied until nothing changes, so that 'topologies' meets 'topology',
    'offers' 'offer', 'preempted' 'preemption', 'sizes' 'size', 'TPUs' 'TPU', 'jitted' 'jit' and 'losing'
    'lose'."""
    if not token.isalpha():
        return token
    if token in IRREGULAR:
        return stem(IRREGULAR[token])
    short = _SHORT_E_RE.match(token)
    if short:  # 'losing' is 'lose', 'named' 'name', 'tuning' 'tune': the suffix took a silent 'e'
        return stem(short.group(1) + "e")
    if len(token) == 4 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]  # a short plural: 'tpus' is 'tpu', 'mxus' 'mxu', 'runs' 'run'
    while len(token) > 4:
        for suffix, repl in _SUFFIXES:
            if token.endswith(suffix) and len(token) - len(suffix) >= 4:
                token = token[: -len(suffix)] + repl
                if suffix in ("ing", "ed") and _DOUBLED_RE.search(token):
                    token = token[:-1]
                break
        else:
            return token
    return token


def unprefixed(token: str) -> str | None:
    """The word under an 'un-' or 're-' prefix ('unfilled' -> 'filled'), or None."""
    return _PREFIX_RE.sub("", token) if _PREFIX_RE.match(token) else None


@functools.cache
def _family_of() -> dict[str, str]:
    """Stem -> family mark ('=' and the family's first word: a mark no tokenizer produces)."""
    marks: dict[str, str] = {}
    for members in FAMILIES:
        for word in members:
            marks[word] = marks[stem(word)] = f"={members[0]}"
    return marks


def family(token: str) -> str | None:
    """The family mark of a word or its stem ('documentation' and 'docs' share one), or None."""
    marks = _family_of()
    return marks.get(token) or marks.get(stem(token))


def family_words(token: str) -> tuple[str, ...]:
    """The words of the token's family (the token alone when it has none)."""
    mark = family(token)
    if mark is None:
        return (token,)
    return next(members for members in FAMILIES if f"={members[0]}" == mark)
