"""Whether a quote may answer: the checks that refuse a line (specific terms, names, releases,
generations, bounds, defaults ...), the support share of a passage, and the checks of the whole
retrieval: the share the best passage must support (`MIN_SUPPORT`, `AGREE_*`) and the names and things
asked for that no source mentions.

Kept apart from ranking so a refusal rule is found in one place; it reads the question through
`question_reading` only (see `answer` for the design).
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass

from tpu_runtime.knowledge.generation_clauses import generation_parts, generations_named
from tpu_runtime.knowledge.lexical import STOPWORDS, is_identifier, tokenize
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.products import SHEET_PRODUCTS, names_product_of, products_named
from tpu_runtime.knowledge.question_reading import (
    _CLAUSE_RE,
    _FOCUS_STOP,
    _NOTE_RE,
    _QUOTED_RE,
    _WORD_RE,
    ASIDE_WEIGHT,
    ATTRIBUTE_UNITS,
    COMMAND_TOOLS,
    PLATFORMS,
    QUANTITY_WORDS,
    QUESTION_WORDS,
    SHAPE_WORDS,
    SUPERLATIVES,
    _df,
    _family_df,
    _parts,
    asked_action,
    asked_thing,
    asks_amount,
    asks_command,
    asks_count,
    asks_date,
    asks_default,
    asks_generation,
    asks_limit,
    asks_main_count,
    asks_name,
    asks_time,
    asks_when,
    asks_why,
    assigned_values,
    attribute_of,
    capability_asked,
    clause_asides,
    close_forms,
    command_paths,
    example_terms,
    focus_term,
    frame_names,
    is_specific,
    letter_names,
    model_families,
    platforms_asked,
    question_flags,
    question_subject,
    rate_forms,
    release_owner,
    releases_named,
    superlatives_asked,
    title_names,
    value_units,
    yes_no_head,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import EVERYDAY_WORDS, family, spelled_out, stem
from tpu_runtime.knowledge.words import unprefixed as _unprefixed

# lines of the quote's section at most this many lines away count together for the gate's support
SECTION_NEAR = 2
_GIVES_COUNT_RE = re.compile(
    r"(?<![A-Za-z_\d])\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|sixteen|hundred|thousand|"
    r"dozens?|single|twice|double|half|none|unlimited)\b",
    re.I,
)
_GIVES_TIME_RE = re.compile(
    r"(?<![A-Za-z_\d])\d[\d.,]*\s*(?:ms|us|µs|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|"
    r"weeks?|months?)\b|\b(?:seconds|minutes|hours|days|weeks|months|instantly|immediately)\b",
    re.I,
)
_GIVES_DEFAULT_RE = re.compile(
    r"\bdefaults?\b|\bdefaulting\b|\bunless\b|\botherwise\b|\bomit|\bunset\b|\bnot\s+(?:set|given)\b|"
    r"\bwithout\b|\bif\s+no\b",
    re.I,
)
_JOINED_NAME_RE = re.compile(r"[A-Za-z0-9][._][A-Za-z]")
_CODE_RE = re.compile(r"`[^`]+`")


@dataclass
class Span:
    text: str
    passage: Passage
    overlap: float


_VERSIONED_RE = re.compile(r"^([a-z]{3,})\d+[a-z]?$")


@functools.lru_cache(maxsize=16384)
def _terms(text: str) -> frozenset[str]:
    """Tokens, their stems and families of `text` (cached: a warm server sees the same lines again)."""
    tokens = tokenize(text)
    # a versioned name also names its family: 'HBM2e' is HBM, 'DDR5' is DDR
    families = {m.group(1) for t in tokens if (m := _VERSIONED_RE.match(t))}
    bare = {b for t in tokens if (b := _unprefixed(t))}  # 'unfilled' also names 'filled'
    stems = {stem(t) for t in tokens} | {stem(b) for b in bare}
    # word families: 'documentation' names the docs, 'place' what a line 'puts' (`words.FAMILIES`)
    marks = {k for t in stems if (k := family(t))}
    return frozenset(tokens) | stems | families | bare | marks | close_forms(tokens)


def _present(terms: frozenset[str], token: str) -> bool:
    """Whether `token` occurs in `terms`: as is, by its stem, without an 'un-'/'re-' prefix ('retracing'
    meets 'tracing'), or by its parts; a dotted name ('pltpu.BufferedRef') also without its root when
    the rest is distinctive (a part with '_' or of 8+ letters), since sources spell the alias their way."""
    if token in terms or stem(token) in terms:
        return True
    mark = family(token)
    if mark is not None and mark in terms:
        return True
    bare = _unprefixed(token)
    if bare and (bare in terms or stem(bare) in terms):
        return True
    parts = _parts(token)
    if len(parts) < 2:
        return False
    if all(p in terms or stem(p) in terms for p in parts):
        return True
    if "." not in token and "".join(parts) in terms:  # 'all-gather' written 'AllGather'
        return True
    rest = token.split(".")[1:]
    return (
        "." in token
        and any("_" in r or len(r) >= 8 for r in rest)
        and all(r in terms or _present(terms, r) for r in rest)
    )


def _coverage(weights: dict[str, float], text: str, extra: float = 0.0) -> float:
    """Share of the question's weighted terms that occur in `text` (after light stemming); `extra` is
    the weight of terms `text` names otherwise (an attribute by a value in its unit), when absent."""
    if not weights:
        return 0.0
    present = _terms(text)
    found = sum(w for t, w in weights.items() if _present(present, t))
    return min(found + extra, sum(weights.values())) / sum(weights.values())


def gives_name(span: str) -> bool:
    """Whether the span names a flag, variable, command or API: a code span, a `--flag` or a word
    joined by '_' or '.' ('PJRT_DEVICE', 'jax.jit', 'xla_tpu_enable_x'); a hyphenated word is prose
    ('per-chip', 'multi-host') unless it starts with a dash, and a CamelCase product name
    ('SparseCore') names no setting."""
    if _CODE_RE.search(span):
        return True
    words = (raw.strip(".,;:()'\"") for raw in span.split())
    return any((len(w) > 2 and w.startswith("-")) or _JOINED_NAME_RE.search(w) for w in words)


_LINE_WORD_RE = re.compile(r"[A-Za-z0-9][\w.\-/]*")
# words either side of a value, function words aside, that say what it is of ('up to 256 chips', 'takes
# 12 minutes')
VALUE_NEAR = 3
# the word every sheet is about (the 'tpu' family is in 89 % of the passages of main's index): standing
# beside a value it does not say what the value is of ('the last sampling period (60 seconds) in which a
# TPU chip ...' gives no time Cloud Monitoring keeps TPU metrics)
DOMAIN_WORDS = frozenset(("tpu", "tpus"))


def value_near(question: str, span: str, value: re.Pattern[str], near: int = VALUE_NEAR) -> bool:
    """Whether a value of the line (a match of `value`) stands within `near` words of a word the
    question names: a count, limit or time belongs to what stands beside it, so a line giving one for
    something else ('two ways', 'the first compile can take minutes' for how long entries are kept) does
    not say it for the question's thing. 'TPU' (`DOMAIN_WORDS`) stands beside too many values to count."""
    asked = {
        t
        for t in tokenize(question)
        if t not in QUESTION_WORDS
        and t not in STOPWORDS
        and t not in DOMAIN_WORDS
        and len(t) > 1
        and not t.isdigit()
    }
    stated = _NOTE_RE.sub(" ", span)
    # function words ('of', 'at', 'to') do not count towards the distance: 'files of at most 2 GB'
    words = [w for w in _LINE_WORD_RE.finditer(stated) if w.group(0).lower() not in STOPWORDS]
    for match in value.finditer(stated):
        inside = [i for i, w in enumerate(words) if w.start() < match.end() and match.start() < w.end()]
        if not inside:
            continue
        lo, hi = max(0, inside[0] - near), inside[-1] + near + 1
        beside = [w.group(0) for i, w in enumerate(words[lo:hi], lo) if i not in inside]
        terms = _terms(" ".join(beside))
        if any(_present(terms, t) for t in asked):
            return True
    return False


# 'one' and 'single' also serve as a pronoun or an article ('pull requests that address one issue', 'a
# single path restricts it'): a line whose only count is one of them gives a count for the question only when
# it stands right beside a word of the question ('each host runs one process')
_WEAK_COUNT_RE = re.compile(r"\b(?:one|single)\b", re.I)


def weak_count_only(question: str, span: str) -> bool:
    """Whether the line's only count words are 'one' or 'single', none of them beside a word the question
    names: 'address one issue' says nothing of how many pull requests one may have open."""
    stated = _NOTE_RE.sub(" ", span)
    counts = [m.group(0) for m in _GIVES_COUNT_RE.finditer(stated)]
    if not counts or not all(_WEAK_COUNT_RE.fullmatch(c) for c in counts):
        return False
    return not value_near(question, span, _WEAK_COUNT_RE, near=1)


def amount_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not give the amount a 'what bound / limit / score' question asks for: no
    number, or only a 'one' counting something else ('one static executable serves all shapes within the
    bounds'). A gate check, not a ranking one: ranked, it only moves the quote to a line giving some
    other number."""
    if not asks_amount(question) or asks_limit(question):
        return None
    if _GIVES_COUNT_RE.search(_NOTE_RE.sub(" ", span)) and not weak_count_only(question, span):
        return None
    return "the question asks for an amount and the quoted line gives no number for it"


# "What is the largest priority Shardy accepts": an upper bound, which a line stating only a lower one
# ('is 0 or more', 'at least one axis') does not give
_ASKS_UPPER_RE = re.compile(
    r"^\s*what(?:'s|\s+is|\s+are|\s+was)\s+the\s+(?:largest|maximum|max|highest|biggest|greatest|longest)\b",
    re.I,
)
_GIVES_LOWER_RE = re.compile(
    r"\d[\d.,]*\s*\w*\s+or\s+(?:more|higher|greater|larger|above)\b|\bat\s+least\b|\bminimum\b|>=?", re.I
)
_GIVES_UPPER_RE = re.compile(
    r"\bat\s+most\b|\bup\s+to\b|\bmax(?:imum)?\b|\bor\s+(?:less|fewer|lower|smaller|below)\b|"
    r"\bno\s+more\s+than\b|\blargest\b|\blongest\b|\blimit|\bcap(?:ped|s)?\b|\bceiling\b|<=?|"
    r"\b(?:below|under|within|exceed)",
    re.I,
)


# "What is the lowest --mem-fraction-static X will start with": a lower bound, which a line giving only the
# default ('default of 0.88') does not give: what is used when nothing is set is not where the range starts
_ASKS_LOWER_RE = re.compile(
    r"^\s*what(?:'s|\s+is|\s+are|\s+was)\s+the\s+(?:smallest|minimum|min|lowest|fewest|shortest)\b", re.I
)
_GIVES_LOWEST_RE = re.compile(
    r"\bat\s+least\b|\bmin(?:imum)?\b|\blowest\b|\bsmallest\b|\bor\s+(?:more|higher|greater|larger|above)\b|"
    r"\bno\s+(?:less|fewer|lower)\s+than\b|>=?|\b(?:above|over|exceeds?|exceeding)\b",
    re.I,
)


def lower_bound_fault(question: str, span: str) -> str | None:
    """A line giving only a default ('`mem_fraction_static` default of 0.88') for a question asking for the
    smallest value: the mirror of `bound_fault`, whose 'largest' a default does not give either."""
    if not _ASKS_LOWER_RE.search(question):
        return None
    stated = _NOTE_RE.sub(" ", span)
    if _GIVES_LOWEST_RE.search(stated) or not re.search(r"\bdefaults?\b", stated, re.I):
        return None
    return "the question asks for the smallest value and the quoted line gives only a default"


def _flag_form(text: str) -> str:
    """Text with its names written as dashed flags: 'mem_fraction_static' and 'maxTopologyDistance' read as
    'mem-fraction-static' and 'max-topology-distance'."""
    return re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", text).lower().replace("_", "-")


def flag_passage_fault(question: str, passage: Passage) -> str | None:
    """A `--flag` the question asks about that the quoted passage, heading included, never names in any
    spelling ('--elastic-slices' of SGL-JAX met by SGL-JAX's flags reference: the flag is XPK's, named in
    another sheet, so the unknown-flag check passes). A flag only the story before the asking clause
    writes is where it happened, not what is asked (`unasked_terms`)."""
    told = unasked_terms(question)
    text = _flag_form(f"{_heading(passage)}\n{passage.text}")
    for flag in question_flags(question):
        name = flag.replace("_", "-")
        if flag not in told and not re.search(rf"(?<![\w-])-{{0,2}}{re.escape(name)}(?![\w-])", text):
            return f"the quoted passage never names --{flag}, a flag the question asks about"
    return None


def bound_fault(question: str, span: str) -> str | None:
    """A line giving only a lower bound ('is 0 or more') or only a default ('(default 5)') for a question
    asking for the largest value: the number it gives is where the range starts, or what is used when
    nothing is set, not where the range ends."""
    if not _ASKS_UPPER_RE.search(question):
        return None
    stated = _NOTE_RE.sub(" ", span)
    if _GIVES_UPPER_RE.search(stated):
        return None
    if _GIVES_LOWER_RE.search(stated):
        return "the question asks for the largest value and the quoted line gives only a lower bound"
    # 'profiler_steps ... (default 5)': the value used when nothing is set, not the most one may set
    if re.search(r"\bdefaults?\b", stated, re.I):
        return "the question asks for the largest value and the quoted line gives only a default"
    return None


def names_attribute(attribute: str, text: str) -> bool:
    """Whether `text` names the attribute, as a word, as the head of a compound written as one word
    ('RAM disk' asks about a disk, and a 'ramdisk' is one), or as a value in the attribute's unit."""
    unit = ATTRIBUTE_UNITS.get(attribute)
    said = _terms(f"{text}\n{spelled_out(text)}")  # a line's 'operations' names the 'ops' asked about
    return _present(said, attribute) or headed_by(attribute, text) or bool(unit and unit.search(text))


COMPOUND_HEAD_MIN = 4  # a shorter head ('map', 'op') ends too many unrelated words
COMPOUND_LEAD_MIN = 3  # letters before the head: 'ramdisk', not 'adisk'


def headed_by(word: str, text: str) -> bool:
    """Whether a word of `text` is a compound written as one word whose last part is `word`: English
    compounds name a kind of their last part ('ramdisk' is a disk, 'hyperparameter' a parameter), so
    a line naming the compound names the attribute a 'how much RAM disk' question asks about."""
    head = stem(word.lower())
    if len(head) < COMPOUND_HEAD_MIN or not head.isalpha():
        return False
    return any(
        t.isalpha() and len(t) - len(head) >= COMPOUND_LEAD_MIN and stem(t).endswith(head)
        for t in tokenize(text)
    )


def _heading(passage: Passage) -> str:
    return " ".join(x for x in (passage.section, passage.symbol, passage.path) if x)


def share_weights(weights: dict[str, float]) -> dict[str, float]:
    """The weights the support share counts: everyday words of time, degree and negation
    (`words.EVERYDAY_WORDS`: 'now', 'too', "isn't") weigh `ASIDE_WEIGHT`, as a story's words do."""
    return {t: w * ASIDE_WEIGHT if t in EVERYDAY_WORDS else w for t, w in weights.items()}


# particles a verb takes ('clean up', 'time out', 'roll back'), which the sources often join to it as one
# word ('cleanup', 'timeout', 'rollback'), and how many words before a particle may be its verb ('cleans
# them up')
PARTICLES = frozenset(("up", "down", "out", "off", "back", "over"))
PARTICLE_REACH = 3


# the particles read as ending a phrasal verb: 'over' is left out, as it is mostly a preposition ('priority
# over another', 'over ICI')
PHRASAL_PARTICLES = PARTICLES - {"over"}
# a verb and its particle as two words: a hyphen makes a compound ('rounding-up division'), not a phrasal verb
_PHRASAL_RE = re.compile(rf"(?<![\w-])([a-z]+)\s+(?:{'|'.join(sorted(PHRASAL_PARTICLES))})(?![\w-])", re.I)


def phrasal_verbs(question: str) -> set[str]:
    """The verbs of the question's phrasal verbs, each right before one of `PHRASAL_PARTICLES` ('came up',
    'hands out', 'comes out'): the pair means what neither word does alone (a TPU that 'came up' was
    created, chips 'handed out' are allocated), so a line names the meaning in its own word and the verb
    on its own is no word a source must write (the particle keeps its weight). Read by `phrasal_weights`."""
    found: set[str] = set()
    for m in _PHRASAL_RE.finditer(question):
        verb = m.group(1).lower()
        if len(verb) >= 3 and verb not in PARTICLES and verb not in QUESTION_WORDS:
            found.add(verb)
    return found


def phrasal_weights(question: str, weights: dict[str, float]) -> dict[str, float] | None:
    """The weights with the verbs of the question's phrasal verbs (`phrasal_verbs`) at `ASIDE_WEIGHT`, or
    None when it writes none: the support share is taken with and without them, the larger counting, so a
    passage naming the verb (or the joined word, `named_otherwise`) loses nothing."""
    return aside_weights(weights, phrasal_verbs(question))


def aside_weights(weights: dict[str, float], aside: set[str]) -> dict[str, float] | None:
    """The weights with the question's terms in `aside` at `ASIDE_WEIGHT`, or None when none of them is
    weighed: the one form of `phrasal_weights` and `figure_weights`, whose share is taken beside the plain
    one, the larger counting."""
    terms = aside & set(weights)
    if not terms:
        return None
    return {t: w * ASIDE_WEIGHT if t in terms else w for t, w in weights.items()}


# a figure a user reports: a number with a ratio, share, time or size unit ('1.5x', '50%', '30 minutes',
# '12 GiB'); a bare number (a port, a count) or a name with digits ('v5e-8') is none
_FIGURE_RE = re.compile(
    r"(?<![\w.-])\d+(?:\.\d+)?(?:\s*(?:x|×|%)|\s+(?:percent|ms|milliseconds|s|secs?|seconds?|mins?|minutes?"
    r"|h|hrs?|hours?|days?|[KMGT]i?B))(?![\w-])",
    re.I,
)
_STORY_SENTENCE_RE = re.compile(r"(?<=[.!])\s+")


def reported_figures(question: str) -> set[str]:
    """The terms of the figures a user reports in the story before the asking clause ('I only get about
    1.5x; why not 2x?', 'reaches only 50% of the bandwidth, why?'): a figure the user measured is what
    they saw, not a word a source answering them must write; one in the asking clause ('is the limit
    16 GiB?') is asked and stays. Read by `figure_weights`."""
    asking_at = question.rfind("?")
    if asking_at < 0:
        return set()
    start = max((m.end() for m in _STORY_SENTENCE_RE.finditer(question[:asking_at])), default=0)
    clauses = [x for x in _CLAUSE_RE.split(question[start : asking_at + 1]) if x.strip()]
    story = question[:start] + " ".join(clauses[:-1])
    asked = set(tokenize(clauses[-1])) if clauses else set()
    return {
        t
        for m in _FIGURE_RE.finditer(story)
        for t in tokenize(m.group(0))
        if any(c.isdigit() for c in t) and t not in asked
    }


def figure_weights(question: str, weights: dict[str, float]) -> dict[str, float] | None:
    """The weights with the figures the user reports (`reported_figures`) at `ASIDE_WEIGHT`, or None when
    it reports none: the support share is taken with and without them, the larger counting, so a passage
    writing the figure loses nothing."""
    return aside_weights(weights, reported_figures(question))


def named_otherwise(question: str) -> dict[str, re.Pattern[str]]:
    """Words of the question that a passage names in another form, each with the pattern of that form in a
    passage's text: the 'long' of a 'how long' question by a time ('results are cached for 24 hours'), as
    the time check reads it, and a verb before its particle by the word the two make joined ('what option
    cleans them up' by `cleanup_tmp_directories`, 'times out' by 'timeout'), a percentage by its share word
    (`share_words`) and a number type by its short name (`width_names`). Read by the support share (the last
    two by the quote's specific-term check too): a user asks in verbs what a line names by its noun or its
    value."""
    forms: dict[str, set[str]] = {}
    words = [w.lower() for w in _WORD_RE.findall(question)]
    for i, particle in enumerate(words):
        if particle not in PARTICLES:
            continue
        for verb in words[max(0, i - PARTICLE_REACH) : i]:
            if len(verb) >= 3 and verb not in PARTICLES:
                forms.setdefault(verb, set()).update((verb + particle, stem(verb) + particle))
    named = {
        verb: re.compile(rf"(?<![a-z])(?:{'|'.join(sorted(joined))})s?(?![a-z])", re.I)
        for verb, joined in forms.items()
    }
    if asks_time(question):
        named["long"] = _GIVES_TIME_RE
    return named | share_words(question) | width_names(question)


# a share the question writes as a percentage ('only 50% of the bandwidth') that the sources write as a word
# ('uses half of the ... bandwidth'), each with the words that name it
SHARE_WORDS: dict[str, tuple[str, ...]] = {
    "25": ("quarter", "quarters"),
    "50": ("half", "halves", "halved", "halving"),
    "200": ("double", "doubles", "doubled", "twice"),
}
_PERCENT_RE = re.compile(r"(?<![\w.])(\d+)\s*(?:%|per\s*cent\b|percent\b)", re.I)


def share_words(question: str) -> dict[str, re.Pattern[str]]:
    """The figure of a percentage the question writes, with the pattern of the word a line names that share
    by ('50%' by 'half'): read by the support share (through `named_otherwise`) and by the specific-term
    check of the quote, not by ranking."""
    return {
        m.group(1): re.compile(rf"(?<![a-z])(?:{'|'.join(SHARE_WORDS[m.group(1)])})(?![a-z])", re.I)
        for m in _PERCENT_RE.finditer(question)
        if m.group(1) in SHARE_WORDS
    }


# a number type the question writes as its width and kind ('8-bit float', '4-bit integer') that the sources
# write by its short name ('FP8', 'int4')
_WIDTH_RE = re.compile(r"(?<![\w.-])(\d+)-bit\s+(float(?:ing)?|int(?:eger)?)s?\b", re.I)


def width_names(question: str) -> dict[str, re.Pattern[str]]:
    """The 'N-bit' of a number type the question writes as width and kind, and its 'bit', each with the
    pattern of the type's short name ('8-bit float' by 'FP8' or 'float8'): read as `share_words` is."""
    named: dict[str, re.Pattern[str]] = {}
    for m in _WIDTH_RE.finditer(question):
        width, kind = m.group(1), m.group(2).lower()
        short = rf"(?:fp|float){width}" if kind.startswith("float") else rf"u?int{width}"
        pattern = re.compile(rf"(?<![a-z0-9]){short}(?![0-9])", re.I)
        named[f"{width}-bit"] = named["bit"] = pattern
    return named


def _share(
    weights: dict[str, float], text: str, otherwise: dict[str, re.Pattern[str]] | None = None
) -> float:
    """The support share of `text`: everyday words weigh little (`share_weights`), a clipped word meets
    the word it clips ('ops', 'operations': `words.spelled_out`) and a word the question names otherwise
    meets its other form (`named_otherwise`; a source note's digits give no time)."""
    shared = share_weights(weights)
    said = f"{text}\n{spelled_out(text)}"
    if not otherwise:
        return _coverage(shared, said)
    terms = _terms(said)
    stated = _NOTE_RE.sub(" ", text)
    extra = sum(
        w
        for t, w in shared.items()
        if t in otherwise and not _present(terms, t) and otherwise[t].search(stated)
    )
    return _coverage(shared, said, extra)


def support(
    weights: dict[str, float], passage: Passage, otherwise: dict[str, re.Pattern[str]] | None = None
) -> float:
    """How much of the question one passage (text and heading) supports."""
    return _share(weights, f"{_heading(passage)}\n{passage.text}", otherwise)


def section_support(
    weights: dict[str, float],
    passage: Passage,
    passages: list[Passage],
    otherwise: dict[str, re.Pattern[str]] | None = None,
) -> float:
    """How much of the question the lines retrieved with `passage` from its own section, within
    `SECTION_NEAR` lines of it, support together (their heading included): a fact sheet keeps one fact
    a line, so the line answering a question and the line before it that sets its scene ('elastic
    training keeps a job running when slices fail'; 'launch it with --elastic-slices') each carry part
    of a reworded question's words."""
    return _share(weights, "\n".join([_heading(passage), *section_lines(passage, passages)]), otherwise)


def section_lines(passage: Passage, passages: list[Passage]) -> list[str]:
    """The texts of the `passages` from `passage`'s own section within `SECTION_NEAR` lines of it (itself
    included when retrieved): the lines a fact sheet splits one answer over."""
    return [
        p.text
        for p in passages
        if p.path == passage.path
        and p.section == passage.section
        and abs((p.line or 0) - (passage.line or 0)) <= SECTION_NEAR
    ]


# a model name with a number written in the plural ('8 H100s'): the stemmer keeps its 's', the sources
# write the singular ('8 H100 GPUs')
_NUMBERED_PLURAL_RE = re.compile(r"^[a-z]+\d+s$")


# 'getter/setter' is a pair of words, not a path or a name: a line writing 'getters and setters' names it
_WORD_PAIR_RE = re.compile(r"[a-z]{3,}/[a-z]{3,}")
# 'roofline_efficiency', a field of a tool's output: a line may write its words in prose, in order
_SNAKE_WORDS_RE = re.compile(r"[a-z]+(?:_[a-z]+)+")


def named_in_prose(token: str, text: str, terms: frozenset[str]) -> bool:
    """Whether an identifier-like term is named in prose by `text`: a pair of words joined by '/' by both
    words ('getter/setter' by 'getters and setters'), a lower-case snake_case name by its words side by
    side in order ('roofline_efficiency' by 'roofline efficiency is measured FLOP rate over ...')."""
    if _WORD_PAIR_RE.fullmatch(token):
        return _present(terms, token)
    if _SNAKE_WORDS_RE.fullmatch(token):
        words = r"[ -]".join(token.split("_"))
        return bool(re.search(rf"(?<![\w-]){words}(?![\w-])", text.lower()))
    return False


def _missing_specific(specific: list[str], text: str) -> list[str]:
    """Specific terms `text` lacks; a flag or API name counts only whole (its parts are common words),
    though a dotted name may drop its root alias ('pltpu.BufferedRef' is named by 'BufferedRef') and a
    name written in the plural in prose is named by its singular ('all pallas_calls' by `pallas_call`,
    '8 H100s' by 'H100'), and a pair of words or a lower-case field name by its words (`named_in_prose`)."""
    terms = _terms(text)
    return [
        t
        for t in specific
        if not (
            (_named_whole(terms, t) or named_in_prose(t, text, terms))
            if is_identifier(t)
            else _present(terms, t) or bool(_NUMBERED_PLURAL_RE.match(t) and _present(terms, t[:-1]))
        )
        and not any(form in terms for form in rate_forms(t))
    ]


# an identifier shorter than this keeps a final 's' of its own ('args', 'ops'): no plural is read into it
PLURAL_NAME_MIN = 5


def _named_whole(terms: frozenset[str], token: str) -> bool:
    """An identifier named as a whole, or a dotted one by its whole distinctive rest after the root; a
    plural ('pallas_calls', 'BlockSpecs') also by its singular, the name the sources write."""
    forms = [token, token[:-1]] if len(token) >= PLURAL_NAME_MIN and token.endswith("s") else [token]
    for form in forms:
        if form in terms:
            return True
        rest = form.split(".", 1)[1] if "." in form else ""
        if rest and rest in terms and ("." in rest or "_" in rest or len(rest) >= 8):
            return True
    # a module path the line names as the start of a longer dotted name ('ray.util.tpu' in
    # `ray.util.tpu.get_tpu_version_from_type`)
    return "." in token and any(t.startswith(f"{token}.") for t in terms)


def gives_command(question: str, span: str) -> bool:
    """Whether the span gives a command, call or setting in a code span; one that only repeats a
    message the question quotes is the symptom, not what to do about it."""
    asked = " ".join(question.lower().split())
    for match in _CODE_RE.finditer(span):
        code = " ".join(match.group(0).strip("`").lower().strip(". ").split())
        if not (" " in code and code in asked):
            return True
    return False


# a year, a dotted version or a date; a dotted number glued to a name ('Qwen2.5-3B') is a model's size or
# generation, no release
_GIVES_WHEN_RE = re.compile(
    r"\b(?:19|20)\d\d\b|(?<![\w.])\d+\.\d+(?:\.\d+)?(?![.\d]|x\b|\s*%)|\bv\d+\.\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d|"
    r"\b(?:since|until|release[sd]?|version|preview|GA)\s+\d",
    re.I,
)


# a code span that reads as a command, call or setting: words with spaces, '=', a leading dash, a call, a
# dotted, snake_case or path name; a bare name in backticks (`v6e`, `tpu7x`) only names a thing
_COMMAND_LIKE_RE = re.compile(r"\s|=|^`-|\(|[A-Za-z]\.[A-Za-z]|_|/")
# "How do I disable X": a line answers it by saying so or by a setting that turns something off
# (`=false`, `=0`, `off`, `--no-x`); any other call it names ('reached through `jax.lax.dot_general`')
# does not
NEGATING_ACTIONS = frozenset("disable deactivate suppress silence skip prevent avoid".split())  # noqa: SIM905
_TURNS_OFF_RE = re.compile(r"=\s*(?:0|false|off|none)\b|\boff\b|\bfalse\b|--no-|\bno_", re.I)


def gives_setting(span: str) -> bool:
    """Whether the span gives a command, call or setting in a code span, not only a name in backticks:
    a line listing `v5e` and `v6e` does not say how to move from one to the other."""
    return any(_COMMAND_LIKE_RE.search(m.group(0)) for m in _CODE_RE.finditer(span))


def title_known(index: KnowledgeIndex, name: str) -> bool:
    """Whether some passage writes a name of capitalised words (`title_names`) whole: as asked, with its
    last word in the singular or the plural, or its words joined by a hyphen or written as one word
    ('PowerViewer' for 'Power Viewer')."""
    words = name.split()
    last = words[-1]
    lasts = {last, last.removesuffix("s"), last.removesuffix("es"), f"{last}s"}
    forms = {" ".join([*words[:-1], w]) for w in lasts if w}
    forms |= {"-".join(words), "".join(words)}
    return any(index.writes(form) for form in forms)


def release_known(index: KnowledgeIndex, release: str) -> bool:
    """Whether some passage writes the release, with or without a 'v' before its number ('jax-v0.10.2' in
    a source link counts: the link names the release)."""
    name, number = release.rsplit(" ", 1)
    return any(index.writes(form) for form in (release, f"{name} v{number}", f"{name}-v{number}"))


# gcloud's release tracks: a command of the alpha or beta track is the GA path with the track's word after
# 'gcloud' (https://cloud.google.com/sdk/gcloud#release_levels); users often write it without
GCLOUD_TRACKS = ("alpha", "beta")


def path_forms(path: str) -> list[list[str]]:
    """The ways a source may write a subcommand path: as asked and, for gcloud, with or without a
    release track's word ('gcloud compute tpus tpu-vm simulate-maintenance-event' is written only as
    'gcloud alpha compute tpus ...')."""
    words = path.split()
    if words[0] != "gcloud" or len(words) < 2:
        return [words]
    if words[1] in GCLOUD_TRACKS:
        return [words, [words[0], *words[2:]]]
    return [words, *([words[0], track, *words[1:]] for track in GCLOUD_TRACKS)]


def path_known(index: KnowledgeIndex, path: str) -> bool:
    """Whether the sources know a subcommand path the question writes: some passage writes it whole, or
    writes its longest start (a subcommand at least) only as a command ending there, so the words after
    it are the question's own ('xpk workload create fails when ...') or arguments. A start the sources
    follow with subcommands ('xpk workload', by 'create' and 'delete') is a group, and a word after it
    that the sources never write there is a made-up subcommand ('xpk workload migrate'), unless a line
    lists it apart among the group's subcommands (`KnowledgeIndex.lists`: 'the `gcloud alpha compute tpus
    queued-resources` group has `create`, `delete` ...'): the words after it are then the question's own
    ('... queued-resources delete fails since ...'). A program the sources write only with flags
    (`tpu-info --streaming`) has no subcommands: the words after it are the question's own ('does
    tpu-info show ...')."""
    if index.flags_only(path.split()[0]):
        return True
    for words in path_forms(path):
        if index.writes(" ".join(words)):
            return True
        lead = 2 if words[1:2] and words[1] in GCLOUD_TRACKS else 1
        for end in range(len(words) - 1, lead, -1):
            start = " ".join(words[:end])
            if index.writes(start):
                # a group the sources follow with subcommands: the next word is one when a line lists it
                if not index.continued(start) or index.lists(start, words[end]):
                    return True
                break
    return False


_GIVES_DATE_RE = re.compile(
    r"\b(?:19|20)\d\d\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d", re.I
)
_PLATFORM_RE = re.compile(rf"\b({'|'.join(PLATFORMS)})\b", re.I)


def platforms_named(span: str) -> set[str]:
    """The processor kinds a line names anywhere (its source note's URL aside)."""
    return {PLATFORMS[m.group(1).lower()] for m in _PLATFORM_RE.finditer(_NOTE_RE.sub(" ", span))}


# "What is the name of the XLA pass ...", "the equivalent of ZeRO-2": words that ask for a thing, not for an
# attribute a line words; a line answers them by naming the thing (a code span, an identifier), not the word
NAMING_WORDS = frozenset(
    "name names equivalent equivalents counterpart counterparts analogue analog replacement".split()  # noqa: SIM905
)


def names_asked(word: str, span: str) -> bool:
    """Whether the line answers a question asking for the `word` of something ('the name of the pass',
    'the equivalent of ZeRO-2') by naming one (`gives_name`): such a word is what the answer is, so
    the line need not use it."""
    return word in NAMING_WORDS and gives_name(span)


def span_faults(question: str, span: str, heading: str, *, action: bool = True) -> list[str]:
    """Why a quoted line would not answer the question, whatever its word overlap: it says nothing
    about the attribute asked for ('how many X', 'what is the X of', 'shows the X of'), gives no number
    to a 'how many' or 'what is the largest' question, no time to a 'how long', no default to a 'what is
    the default', or (with `action`) neither names the action of a 'how do I <verb>' question nor gives a
    command."""
    faults: list[str] = []
    named = f"{heading}\n{span}"
    focus = focus_term(question)
    if focus and not names_attribute(focus, named) and not names_asked(focus, span):
        faults.append(f"the quoted line does not say anything about '{focus}'")
    attribute = attribute_of(question)
    if (
        attribute
        and attribute != focus
        and not names_attribute(attribute, named)
        and not names_asked(attribute, span)
    ):
        faults.append(f"the quoted line does not say anything about '{attribute}'")
    stated = _NOTE_RE.sub(" ", span)
    if (asks_count(question) or asks_limit(question)) and not _GIVES_COUNT_RE.search(stated):
        faults.append("the question asks for a number and the quoted line gives none")
    elif asks_main_count(question) and not value_near(question, span, _GIVES_COUNT_RE):
        faults.append("the question asks for a number and the quoted line gives none beside what it asks")
    if asks_count(question) and weak_count_only(question, span):
        faults.append("the question asks how many and the quoted line's only 'one' counts something else")
    if asks_time(question) and not _GIVES_TIME_RE.search(stated):
        faults.append("the question asks how long and the quoted line gives no time")
    elif asks_time(question) and not value_near(question, span, _GIVES_TIME_RE):
        faults.append("the question asks how long and the quoted line gives no time beside what it asks")
    if asks_default(question) and not _GIVES_DEFAULT_RE.search(stated):
        faults.append(
            "the question asks for a default and the quoted line does not say what is used by default"
        )
    elif asks_default(question) and not value_near(question, span, _GIVES_DEFAULT_RE):
        # 'unset ones are NULL' in a line on a table's columns is no default time limit for a query
        faults.append("the question asks for a default and the quoted line gives one only for something else")
    if asks_command(question) and not gives_command(question, span):
        faults.append("the question asks what to run and the quoted line gives no command")
    if asks_when(question) and not _GIVES_WHEN_RE.search(stated):
        faults.append(
            "the question asks when or in which release and the quoted line gives no date or version"
        )
    if asks_date(question) and not _GIVES_DATE_RE.search(stated):
        faults.append("the question asks for a date and the quoted line gives none")
    owner = release_owner(question)
    if (
        owner
        and (asks_when(question) or "version" in value_units(question))
        and not _present(_terms(named), owner)
    ):
        faults.append(f"the question asks for a release of {owner} and the quoted line is not about {owner}")
    asked_on = platforms_asked(question)
    if asked_on:
        named_on = platforms_named(span)
        if named_on and not asked_on & named_on:
            faults.append(
                f"the question asks about {'/'.join(sorted(asked_on))} and the quoted line is about "
                f"{'/'.join(sorted(named_on))}"
            )
    asked_family = model_families(question)
    named_family = model_families(span) if asked_family else set()
    if named_family and not asked_family & named_family:
        faults.append(
            f"the question asks about {'/'.join(sorted(asked_family))} models and the quoted line is about "
            f"{'/'.join(sorted(named_family))}"
        )
    compared = _terms(named)
    for word in superlatives_asked(question):
        if not any(_present(compared, form) for form in (word, *SUPERLATIVES[word])):
            faults.append(f"the question asks which is {word} and the quoted line compares none")
    kind = asks_name(question)
    if kind and not gives_name(span):
        faults.append(f"the question asks which {kind} and the quoted line names none")
    verb = asked_action(question) if action else None
    if verb and not _present(_terms(named), verb):
        if verb in NEGATING_ACTIONS and not _TURNS_OFF_RE.search(span):
            faults.append(f"the quoted line neither says how to '{verb}' nor gives a setting turning it off")
        elif not gives_setting(span):
            faults.append(f"the quoted line neither says how to '{verb}' nor gives a command or setting")
    return faults


def subject_fault(question: str, passage: Passage, passages: list[Passage]) -> str | None:
    """A quote from a passage that never names the question's subject while another retrieved passage
    does: the quote is about a neighbour ('llguidance' asked, an SGL-JAX benchmark line quoted while the
    llguidance passage was retrieved too; a 'does X work / support ...' question's X by its last word,
    `yes_no_head`). A subject no retrieved passage names is left to the support share, since sources may
    call it otherwise ('an entire Pod' for a line's 'whole Pod')."""
    subject = question_subject(question) or yes_no_head(question)
    if not subject or _present(_passage_terms(passage), subject):
        return None
    if not any(_present(_passage_terms(p), subject) for p in passages):
        return None
    return f"the quoted passage never names '{subject}', the question's subject, which another passage names"


def misplaced_terms(question: str, span: str, heading: str, terms: list[str]) -> list[str]:
    """Question terms that a line listing several generations names only in the clauses of generations
    the question does not ask about: the line gives those for another one ('two 100 Gbps NICs' of v5e in
    a line giving v5p's DCN rate does not say how many NICs a v5p host has)."""
    asked = generations_named(question)
    if not asked:
        return []
    lead, owned = generation_parts(_NOTE_RE.sub(" ", span))
    if not set(owned) - asked or not asked & set(owned):
        return []
    own = _terms(" ".join([heading, lead, *(p for g in asked for p in owned.get(g, []))]))
    others = _terms(" ".join(p for g, ps in owned.items() if g not in asked for p in ps))
    skip = asked | {"tpu", "tpus", "generation", "generations"}
    return [
        t
        for t in terms
        if t not in skip and not generations_named(t) and _present(others, t) and not _present(own, t)
    ]


# vendors written in capitals that no source spells out otherwise: unlike 'GCS' or 'RAM', a line about
# another vendor's hardware does not answer a question naming one ('on AMD GPUs')
VENDOR_NAMES = frozenset(("amd", "nvidia", "ibm"))


RARE_NAME_SHARE = 0.01  # a name this few passages use (at most this share of them) pins the subject down


def rare_names(index: KnowledgeIndex, question: str, names: list[str]) -> list[str]:
    """The question's names ('Llama', 'Slurm', 'TensorFlow') that some source uses but at most
    `RARE_NAME_SHARE` of the passages do. Such a name says what the question is about, so a quote from
    a passage that never names it answers a neighbouring question ('the Qwen3 recipe' for 'the Llama 3
    recipe'). Acronyms ('GCS', 'VMs', 'RAM') are left out: sources spell them out or use another one;
    vendors in capitals (`VENDOR_NAMES`: 'AMD', 'NVIDIA') are kept, since nothing else names them."""
    words = re.findall(r"[A-Za-z][\w-]*", _QUOTED_RE.sub(" ", question))
    cased = {
        w.lower()
        for w in words
        if w.lower() in VENDOR_NAMES or not (w.isupper() or w.removesuffix("s").isupper())
    }
    cap = RARE_NAME_SHARE * len(index.chunks)
    return [t for t in names if t in cased and 0 < _family_df(index, t) <= cap]


def product_fault(question: str, span: str, passage: Passage) -> str | None:
    """A line about another stack than the one the question names ('TorchTPU's loop detection' is not
    answered by PyTorch/XLA's): the line's own names decide, then its heading's, then its sheet's."""
    asked = products_named(question)
    if not asked:
        return None
    named = products_named(_NOTE_RE.sub(" ", span))
    if not named and passage.section:
        named = products_named(passage.section.rsplit("\u203a", 1)[-1])
    if not named:
        named = SHEET_PRODUCTS.get(passage.path, frozenset())
    if not named or asked & named:
        return None
    about = ", ".join(sorted(asked))
    return f"the question is about {about} and the quoted line about {', '.join(sorted(named))}"


# JAX is no stack of `products.products_named` (every JAX stack builds on it, so a JAX question may be
# answered by a MaxText line), but the torch stacks do not build on it: a question on JAX answered by a line
# on PyTorch/XLA only (`XLA_IR_DEBUG` for 'which variable makes JAX attach stack frames to its IR dumps'), or
# a PyTorch/XLA question answered by a line on JAX from outside its sheet, is about the other stack.
# torchax, a torch front end on JAX, is not one of them.
TORCH_STACKS = frozenset({"pytorch_xla", "torchtpu", "vllm_torchtpu", "torchprime", "torchtitan"})
_JAX_WORD_RE = re.compile(r"(?<![\w/.-])jax(?![\w-])", re.I)


def jax_torch_fault(question: str, span: str, passage: Passage) -> str | None:
    """Why the first quote is about the other side of the JAX / torch divide: the question names JAX and
    no stack while the line names only torch stacks and never JAX, or the question names only torch
    stacks while the line names JAX and no stack, outside those stacks' own sheets."""
    asked = products_named(question)
    stated = _NOTE_RE.sub(" ", span)
    named = products_named(stated)
    if not asked and named and named <= TORCH_STACKS:
        if _JAX_WORD_RE.search(question) and not _JAX_WORD_RE.search(stated):
            return f"the question is about JAX and the quoted line about {', '.join(sorted(named))}"
        return None
    if (
        asked
        and asked <= TORCH_STACKS
        and not named
        and _JAX_WORD_RE.search(stated)
        and not SHEET_PRODUCTS.get(passage.path, frozenset()) & asked
    ):
        return f"the question is about {', '.join(sorted(asked))} and the quoted line about JAX"
    return None


# "How do I use the Megascale Viewer on a job on one slice only?": a question held to one host, slice, VM or
# node is not answered by a line about several of them ('helps debug Multislice workloads') that never says
# one; what a tool or setting does across slices is not what it does, or whether it works, on one.
_SINGLE_SCOPE_RE = re.compile(
    r"\b(?:single|one|1)[\s-]+(host|slice|vm|node)s?\b(?!\s+pool)|\b(host|slice|vm|node)s?\s+only\b", re.I
)
_SEVERAL_SCOPE_RE = re.compile(
    r"\bmulti[\s-]?(host|slice|vm|node)s?\b|\b(?:multiple|several|many|two\s+or\s+more)\s+(host|slice|vm|node)s\b",
    re.I,
)


def _scopes(pattern: re.Pattern[str], text: str) -> set[str]:
    """The units (host, slice, VM, node) that `pattern` finds `text` counting, lower-cased."""
    return {unit.lower() for m in pattern.finditer(text) for unit in m.groups() if unit}


def single_scope_fault(question: str, span: str) -> str | None:
    """Why the first quote does not answer for the one host, slice, VM or node the question is held to: the
    line speaks of several of that unit ('Multislice', 'multi-host') and never of one."""
    asked = _scopes(_SINGLE_SCOPE_RE, question) - _scopes(_SEVERAL_SCOPE_RE, question)
    stated = _NOTE_RE.sub(" ", span)
    several = asked & _scopes(_SEVERAL_SCOPE_RE, stated) - _scopes(_SINGLE_SCOPE_RE, stated)
    if not several:
        return None
    return f"the question asks about a single {min(several)} and the quoted line about several"


# File formats a question names ('export the chart as an SVG', 'as a CSV file'): a line on exporting in
# another format, or on the same view's other features, does not say the one asked about is offered
FILE_FORMATS = frozenset(
    "csv json jsonl svg png pdf html yaml xml parquet tfrecord tfrecords protobuf arrow".split()  # noqa: SIM905
)


# the format something is written in ('as an SVG', 'to CSV', 'into JSON'); 'in a PathwaysJob YAML' names
# the file a field is in, which a line on that field need not repeat
_AS_FORMAT_RE = re.compile(r"\b(?:as|to|into|in)\s+(?:an?\s+)?([A-Za-z]+)\b", re.I)


def format_fault(question: str, span: str, heading: str) -> str | None:
    """A quoted line (heading included) that never names the file format the question asks for
    something to be written in."""
    asked = {m.group(1).lower() for m in _AS_FORMAT_RE.finditer(question)} & FILE_FORMATS
    if not asked:
        return None
    named = {w.lower() for w in _WORD_RE.findall(f"{heading}\n{span}")}
    missing = sorted(asked - named)
    return (
        f"the quoted line never names {', '.join(missing)}, which the question asks about"
        if missing
        else None
    )


def _passage_terms(passage: Passage) -> frozenset[str]:
    return _terms(f"{_heading(passage)}\n{passage.text}")


# a line stating a cause or a consequence: 'because', 'since', 'so', 'due to', 'causes', 'means'
_GIVES_REASON_RE = re.compile(
    r"\b(?:because|since|due\s+to|so\s+that|so|thus|hence|therefore|as\s+a\s+result|caus(?:e|es|ed|ing)|"
    r"leads?\s+to|means|reason|results?\s+in)\b",
    re.I,
)


def gives_reason(span: str) -> bool:
    """Whether the line states a cause or a consequence ('because', 'so', 'due to', 'causes')."""
    return bool(_GIVES_REASON_RE.search(_NOTE_RE.sub(" ", span)))


# "Why is X 1024 by default?", "why does X default to 0.5?": a cause asked of a default, which a line
# listing that default (often beside its siblings' defaults) with no word on why does not answer
_DEFAULT_WORD_RE = re.compile(r"\bdefaults?\b", re.I)
# a purpose or a trade-off says why as well as a cause does ('to keep', 'avoids', 'leaves room', 'suits')
_PURPOSE_WORDS_RE = re.compile(
    r"\b(?:reasons?|in\s+order\s+to|to\s+(?:keep|avoid|save|leave|hide|fit|match|stay|reduce|limit)|"
    r"avoids?|helps?|lets?|allows?|keeps?|saves?|leaves?|suits?|trade-?offs?|at\s+the\s+cost|for\s+"
    r"(?:speed|memory|safety|stability|throughput|latency))\b",
    re.I,
)


def default_reason_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not answer 'why is X's default N': it states a default and no cause
    (`gives_reason`), purpose or trade-off, so it gives the value the question already has."""
    stated = _NOTE_RE.sub(" ", span)
    if not asks_why(question) or not _DEFAULT_WORD_RE.search(question):
        return None
    if not _DEFAULT_WORD_RE.search(stated) or gives_reason(span) or _PURPOSE_WORDS_RE.search(stated):
        return None
    return "the question asks why a default was chosen and the quoted line gives the default, no reason"


# "What is the default of MLA_TRANSPOSE_KV_CACHE?", "is PROFILE_SINGLE_DEVICE on by default?": the default of
# a named setting, which a line listing its siblings' defaults gives only when one stands beside that name
_SETTING_NAME_RE = re.compile(
    r"(?<![\w-])(?:--)?[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|(?<![\w-])--[a-z][\w-]+"
)
DEFAULT_NEAR = 3  # words between a setting and the 'default' giving its value in a line
DEFAULT_ASKED_NEAR = 2  # ... and in the question ('the default value of X', 'is X on by default')


# "Who maintains tpu-info?", "who wrote the X kernel?": the question asks for a person or an organisation,
# which a line describing the thing without naming who made or keeps it does not give
_ASKS_WHO_RE = re.compile(
    r"^\s*who\b|\bwho\s+(?:wrote|writes|made|makes|maintains|created|designed|develops|"
    r"developed|authored|owns|built|leads|publishe[sd])\b"
    # 'which vendor makes the NICs': a maker picked by its kind is a 'who' too
    r"|^\s*(?:which|what)\s+(?:vendors?|compan(?:y|ies)|manufacturers?|makers?|suppliers?)(?![\w-])",
    re.I,
)
_GIVES_AGENT_RE = re.compile(
    r"\b(?:by|from)\s+(?:the\s+)?[A-Z][\w.-]*|\b[A-Z][\w.-]*'s\b|\b(?:authors?|maintainers?|developers?|"
    r"team|teams|contributors?|wrote|written|maintained|developed|created|designed|published|owned|Google|Meta|"
    r"NVIDIA|Microsoft|Amazon|Anthropic|OpenAI|Hugging\s+Face)\b"
)


def agent_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not answer a 'who' question: it names no one who made, wrote or keeps the
    thing (no 'by X', no 'X's', no maker's noun or verb)."""
    if not _ASKS_WHO_RE.search(question) or _GIVES_AGENT_RE.search(_NOTE_RE.sub(" ", span)):
        return None
    return "the question asks who and the quoted line names no one"


# "Which libtpu version first supported v6e?", "in which release was X first added?": the release that
# began something, which a line about some release doing something else there does not name
_ASKS_FIRST_RE = re.compile(r"\b(?:release|version)s?\b[^?]*\bfirst\b|\bfirst\s+(?:release|version)\b", re.I)
_GIVES_FIRST_RE = re.compile(
    r"\b(?:first|added|adds|introduc\w*|since|new|arrived|started|began|landed|onwards|later|starting|"
    r"brought|enabled|needs|requires|minimum|oldest|earliest|at\s+least|before|until|prior)\b",
    re.I,
)


def first_release_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not answer 'which release first did X': it names a release but says
    nothing of a beginning (first, added, since, needs, at least ...)."""
    if not _ASKS_FIRST_RE.search(question) or _GIVES_FIRST_RE.search(_NOTE_RE.sub(" ", span)):
        return None
    return "the question asks which release first did something and the quoted line says nothing of a start"


def _plain_words(text: str) -> list[str]:
    """The words of `text` without quotes, brackets and function words, in order: what 'beside' counts
    over."""
    words = (w.group(0).strip("`'\"(),;:.?").lower() for w in re.finditer(r"\S+", text))
    return [w for w in words if w and w not in STOPWORDS]


def _beside(words: list[str], names: set[str], near: int, *, owner: bool = True) -> tuple[bool, bool]:
    """Whether any of `names` is among `words`, and whether one has a 'default': within `near` words of
    it, or (with `owner`) after it with no other setting name between ('`--max-restarts` on `launcher
    workload create` (default 0)' gives the flag's default, a command qualifying it)."""
    at = [i for i, w in enumerate(words) if w.lstrip("-") in names]
    defaults = [i for i, w in enumerate(words) if _DEFAULT_WORD_RE.fullmatch(w)]
    settings = [i for i, w in enumerate(words) if _SETTING_NAME_RE.fullmatch(w)]
    owners = {max((i for i in settings if i < j), default=-1) for j in defaults}
    near_one = any(abs(i - j) <= near for i in at for j in defaults)
    return bool(at), near_one or (owner and bool(owners & set(at)))


def setting_default_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not give the default a question asks of a named setting (an env var, a
    snake_case option, a --flag, standing within `DEFAULT_ASKED_NEAR` words of 'default' in the question):
    the line names the setting and states defaults, but none within `DEFAULT_NEAR` words of it, so they
    are the defaults of the settings listed beside it."""
    if asks_why(question) or not _DEFAULT_WORD_RE.search(question):
        return None
    names = {m.group(0).lstrip("-").lower() for m in _SETTING_NAME_RE.finditer(question)}
    if not names or not _beside(_plain_words(question), names, DEFAULT_ASKED_NEAR, owner=False)[1]:
        return None
    stated = _NOTE_RE.sub(" ", span)
    named, beside = _beside(_plain_words(stated), names, DEFAULT_NEAR)
    if named and _DEFAULT_WORD_RE.search(stated) and not beside:
        return f"the quoted line gives defaults only for settings listed beside {sorted(names)[0]}"
    return None


# "What is the ICI bandwidth per port?", "how much DRAM per vCPU?": an amount divided by a thing, which a
# line giving the amount per another thing ('1200 GBps per chip') or in total ('180 vCPUs and 720 GB')
# does not state. Time units are left out: a rate per second or hour is written in its unit ('GBps')
_PER_RE = re.compile(r"\bper\s+((?:[A-Za-z0-9][\w.-]*\s+){0,2}[A-Za-z0-9][\w.-]*)", re.I)
PER_TIME_UNITS = frozenset("s sec second min minute hr hour day week month year cent se".split())  # noqa: SIM905


def _per_nouns(question: str) -> set[str]:
    """The things a question divides by ('per port', 'per TPU chip' -> chip, 'per gigabyte of trace' ->
    gigabyte): the last word after 'per' before a function word; time units excepted."""
    nouns = set()
    for m in _PER_RE.finditer(question):
        words = []
        for w in m.group(1).split():
            if w.lower() in STOPWORDS:
                break
            words.append(w.lower().rstrip("?.,;:"))
        last = words[-1] if words else ""
        if last and last.removesuffix("s") not in PER_TIME_UNITS and not last[0].isdigit():
            nouns.add(last)
    return nouns


# what a line may call the thing divided by: a chip is a device to JAX and the docs alike ('TPU' names the
# product, not the unit, and a host is not a VM: a v6e host holds two 4-chip VMs)
PER_SYNONYMS = (
    frozenset(("chip", "device")),
    frozenset(("core", "tensorcore")),
)


def _names_noun(noun: str, text: str) -> bool:
    """Whether a line names `noun` in any form, also inside a longer word ('ports' for 'port',
    'resources_per_worker' for 'worker', 'TensorCore' for 'core'; leniently, 'supports' for 'port'), or
    by a word `PER_SYNONYMS` puts beside it ('device' for 'chip')."""
    base = stem(noun)
    forms = {base} | next((group for group in PER_SYNONYMS if {noun, base} & group), frozenset())
    return any(re.search(rf"{re.escape(form)}\w{{0,3}}\b", text, re.I) for form in forms)


def per_fault(question: str, span: str, passage: str = "") -> str | None:
    """Why the quoted line does not answer 'what X per Y': neither it nor its `passage` names Y, so its
    figure is per another thing ('1200 GBps per chip' for 'per port') or a total."""
    stated = _NOTE_RE.sub(" ", f"{span}\n{passage}")
    missing = sorted(n for n in _per_nouns(question) if not _names_noun(n, stated))
    if missing:
        return f"the question asks for an amount per {missing[0]} and the quoted passage never names it"
    return None


# "What does X cost per hour?", "is X cheaper in us-west4?": a price asked about, which a line listing
# where or how X is offered, naming no price, cost, discount or charge, does not give ('at the cost of'
# and 'at the price of' are idioms for a trade-off, not a price)
_ASKS_PRICE_RE = re.compile(
    r"\b(?:price[sd]?|pricing|costs?|cheaper|cheapest|expensive|discounts?|charged?|charges|billed|billing)\b",
    re.I,
)
_PRICE_IDIOM_RE = re.compile(r"\bat\s+the\s+(?:cost|price|expense)\s+of\b", re.I)
_GIVES_PRICE_RE = re.compile(
    r"\$|\b(?:USD|pric\w*|cost\w*|cheap\w*|expensive|discount\w*|charg\w*|bill\w*|free|pay\w*|"
    r"fees?|spend\w*)\b",
    re.I,
)


def price_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not answer a question about a price or cost: it names no price, cost,
    discount, charge or currency, so it says where or how the thing is offered, not what it costs."""
    if not _ASKS_PRICE_RE.search(_PRICE_IDIOM_RE.sub(" ", question)):
        return None
    if _GIVES_PRICE_RE.search(_NOTE_RE.sub(" ", span)):
        return None
    return "the question asks about a price or cost and the quoted line names none"


# "Which tpu-tune subcommand ...?", "How do I pass --flag to tpu-info?", "with kubectl", "a GKE machine
# type", "Does Pathways support v2?": a program or service the question asks of, which a line on the same
# setting or task for another tool (a `gcloud` command for 'with kubectl', a kernel table for 'tpu-tune')
# does not answer. A service one runs on ('on GKE', 'on Pathways') sets the scene only: a generic setting
# answers for it. 'without X' and 'instead of X' ask for another way, so X need not be named.
SERVICE_TOOLS = ("gke", "pathways", "xprof", "ray")
_TOOL_RE = re.compile(
    rf"(?<![\w./-])({'|'.join(map(re.escape, (*COMMAND_TOOLS, *SERVICE_TOOLS)))})(?![\w-])", re.I
)
_SCENE_RE = re.compile(r"\b(?:on|under)\s+(?:an?\s+|the\s+|my\s+)?$", re.I)
_NOT_WITH_RE = re.compile(
    r"\b(?:without|instead\s+of|not|no|rather\s+than)\s+(?:using\s+|an?\s+|the\s+)?$", re.I
)


def tools_asked(question: str) -> set[str]:
    """The programs (`COMMAND_TOOLS`) and services (`SERVICE_TOOLS`) a question asks of, less any it asks
    to do without ('by hand, without XPK'), a service it runs on ('on GKE') and a leading 'Using xpk,'
    frame: quote ranking already wants a frame's names, and the line naming it may be the runner-up
    quoted beside the first."""
    return {
        m.group(1).lower()
        for m in _TOOL_RE.finditer(question)
        if not _NOT_WITH_RE.search(question[: m.start()])
        and not (m.group(1).lower() in SERVICE_TOOLS and _SCENE_RE.search(question[: m.start()]))
    } - frame_names(question)


def tool_fault(question: str, span: str, heading: str = "") -> str | None:
    """Why the quoted line does not answer a question asked of a program or service (`tools_asked`):
    neither it nor its heading names it, so it gives the setting or task for another tool or none."""
    named = {m.group(1).lower() for m in _TOOL_RE.finditer(f"{heading}\n{span}")}
    # a tool only the story before the asking clause names ('... with gcloud and passed --x, but it isn't
    # accepted; which flag goes in its place?') is where it happened, not what is asked of
    missing = sorted(tools_asked(question) - named - clause_asides(question))
    if missing:
        return f"the question asks about {missing[0]} and the quoted line never names it"
    return None


# "How much host DRAM does a v2-8 VM have?", "how much disk space does a dump take?", "what object store
# size should the cluster get?": the amount asked for is of a thing named by a compound, and a passage
# on the same subject that names none of its plain words ('TPU memory' for host DRAM) gives another
# amount. Capitalised names ('DRAM'), specific terms and generic quantity words ('size') are left to the
# checks of names and values (`span_faults`' focus); 'what tile shape' asks a property, not an amount.
_HOW_MUCH_RE = re.compile(
    r"(?:^|[.;:]\s+)(how\s+much|what)\s+((?:[^\s?]+\s+){2,4}?)"
    r"(?:does|do|did|is|are|was|were|can|could|will|would|should|has|have|had|must)\b",
    re.I,
)
# prepositions `_FOCUS_STOP` lacks that end the noun phrase too ('how much slack between rank launches')
PHRASE_ENDS = frozenset("between across over under into after before during within without".split())  # noqa: SIM905


def how_much_words(question: str) -> list[str]:
    """The plain words of what a 'how much X Y <auxiliary>' or 'what X Y size <auxiliary>' question asks
    an amount of, when it is named by two words or more ('host' of 'how much host DRAM does'); empty for
    one word ('how much HBM')."""
    match = _HOW_MUCH_RE.search(question)
    if not match:
        return []
    lead: list[str] = []
    for raw in match.group(2).split():
        word = raw.strip(",.;:()'\"")
        if not word or word.lower() in _FOCUS_STOP | PHRASE_ENDS:
            break
        lead.append(word)
    # 'what object store size does': an amount of the thing as well ('what tile shape' is not)
    if len(lead) < 2 or (match.group(1).lower() == "what" and lead[-1].lower() not in QUANTITY_WORDS):
        return []
    return [w for w in lead if w.isalpha() and w.islower() and w not in QUANTITY_WORDS and not is_specific(w)]


def how_much_fault(question: str, span: str, passage: str = "") -> str | None:
    """Why the quoted line does not give the amount a 'how much X Y' question asks (`how_much_words`):
    neither it nor its `passage` names any plain word of X Y, so its figure is of another thing. Any one
    word will do: a paraphrase seldom keeps every word of the docs' name for a thing."""
    words = how_much_words(question)
    named = _NOTE_RE.sub(" ", f"{span}\n{passage}")
    if words and not any(names_attribute(w, named) for w in words):
        return f"the question asks how much {' '.join(words)} and the quoted passage never names it"
    return None


# "Is it recommended to raise X above 1?", "is X advisable ...": a yes/no question on advice, which a line
# stating what X is and its default does not answer; a line advising gives a verdict or a way ('should',
# 'best', 'avoid', 'use', 'set', 'start with')
_ASKS_RECOMMENDED_RE = re.compile(
    r"^\s*(?:is|are)\s+(?:it|\S+)\s+(?:\w+\s+)?(?:recommended|advised|advisable|suggested|a\s+good\s+idea)\b"
    # 'which tier should I pick': a choice asked for advice, which a line listing the tiers does not give
    r"|^\s*(?:which|what)\b[^?]*\bshould\s+(?:I|we|you)\s+(?:pick|choose|select|go\s+with)\b",
    re.I,
)
_GIVES_ADVICE_RE = re.compile(
    r"\b(?:recommend\w*|suggest\w*|advi[sc]\w*|should|best|prefer\w*|guidance|tips?|avoid\w*|instead|"
    r"rather|ideal\w*|better|good|start\s+(?:with|from)|try|use|set|pick|choose)\b",
    re.I,
)


def recommended_fault(question: str, span: str) -> str | None:
    """Why the quoted line does not answer 'is it recommended to X' or 'which X should I pick': it gives no
    advice word or way ('use', 'set'), only what the setting does ('`NUM_PRECOMPILE_WORKERS` (default 1)
    sets how many threads ...') or which choices there are, so it leaves the verdict asked for unsaid."""
    if not _ASKS_RECOMMENDED_RE.search(question) or _GIVES_ADVICE_RE.search(_NOTE_RE.sub(" ", span)):
        return None
    return "the question asks whether something is recommended and the quoted line gives no advice"


# "How much disk space does X take", "what boot disk size does Y use": the question asks how big some
# storage is, which a line gives only by a figure in bytes (or a share or multiple of one); a line naming
# the space ('memory space 203') or listing the disk's flags says nothing of its size. Memory ('how much
# host DRAM') is left to its unit in `ATTRIBUTE_UNITS`: judged here too, it refused a covered question
_ASKS_STORAGE_RE = re.compile(
    r"\bhow\s+(?:much|big|large)\s+(?:[\w-]+\s+){0,2}?(?:disk|storage|space)\b"
    r"|^\s*what\s+(?:[\w-]+\s+){0,2}?(?:disk|storage)\s+(?:space|size)\b",
    re.I,
)
_GIVES_RELATIVE_SIZE_RE = re.compile(
    r"\d\s*%|\b(?:twice|double|doubles|half|halves)\b|\b\d+(?:\.\d+)?\s*(?:x|times)\b", re.I
)
# a size in plain bytes ('12 bytes per parameter'), which the unit list of a capacity leaves out
_GIVES_PLAIN_BYTES_RE = re.compile(r"\b\d[\d.,]*\s*bytes?\b", re.I)


def storage_size_fault(question: str, span: str) -> str | None:
    """Why the first quote does not say how big the storage a question asks about is: no figure in bytes
    and no share or multiple of one in the line (source notes aside)."""
    if not _ASKS_STORAGE_RE.search(question):
        return None
    stated = _NOTE_RE.sub(" ", span)
    if any(
        found.search(stated)
        for found in (ATTRIBUTE_UNITS["capacity"], _GIVES_RELATIVE_SIZE_RE, _GIVES_PLAIN_BYTES_RE)
    ):
        return None
    return "the question asks how big some storage is and the quoted line gives no size"


# "What tile shape does X use": a shape is told by its sizes ('8x128', '(8, 128)'); a line that only
# writes the word ('memory_space=...', 'a block shape') does not say which one
def shape_value_fault(question: str, span: str) -> str | None:
    """Why the first quote does not give the shape a 'what / which ... shape' question asks for: the
    line names no shape of two sizes or more."""
    if focus_term(question) not in SHAPE_WORDS:
        return None
    if ATTRIBUTE_UNITS["shape"].search(_NOTE_RE.sub(" ", span)):
        return None
    return "the question asks for a shape and the quoted line gives no sizes"


# The checks of what a question asks for that the first quote alone must pass (a runner-up quoted beside it
# adds to it, so it need not)
FIRST_QUOTE_CHECKS = (
    default_reason_fault,
    setting_default_fault,
    agent_fault,
    first_release_fault,
    price_fault,
    recommended_fault,
    storage_size_fault,
    shape_value_fault,
)


def gate_faults(question: str, span: Span, passages: list[Passage] | None = None) -> list[str]:
    """Why the first quote cannot answer, judged on it alone: checks of what a question asks for that a
    close runner-up line quoted beside it need not pass on its own (it adds to the first line); the tool
    asked of may be named by a retrieved line next to it in its section (`section_lines`: 'elastic mode
    keeps a job going' above 'turn it on with `xpk workload create-pathways`')."""
    faults = [fault for check in FIRST_QUOTE_CHECKS if (fault := check(question, span.text))]
    heading = _heading(span.passage)
    whole = f"{heading}\n{span.passage.text}"  # the quoted passage with its heading
    per = per_fault(question, span.text, whole)
    near = section_lines(span.passage, passages or [])
    tool = tool_fault(question, "\n".join([span.text, *near]), heading)
    much = how_much_fault(question, span.text, whole)
    stack = jax_torch_fault(question, span.text, span.passage)
    scope = single_scope_fault(question, span.text)
    return [*faults, *(f for f in (per, tool, much, stack, scope) if f)]


def unasked_terms(question: str) -> set[str]:
    """Terms of the question a quoted line need not name though specific: a value given as an example of
    the input ('a type like v6e-8') and the story told before the asking clause ('preemptible v4 VM went
    away overnight; what status ...': the status line answers it for any generation); not a leading
    'On X,' phrase, which sets the scene the question is asked in."""
    return example_terms(question) | (clause_asides(question) - frame_names(question))


# a word written as a name: an acronym ('SMEM') or a capitalised word ('Viewer')
_NAME_WORD_RE = re.compile(r"[A-Z]{3,}|[A-Z][a-z]+")


def _word_pairs(text: str) -> list[tuple[str, str]]:
    """Neighbouring words of `text`, as written, with no punctuation between them."""
    pairs = []
    for chunk in re.split(r"[^\w\s/-]+", text):
        words = chunk.split()
        pairs += list(itertools.pairwise(words))
    return pairs


def swap_fault(question: str, span: str, heading: str) -> str | None:
    """A line naming a sibling of the question's name beside the same plain word: the question writes
    'scoped SMEM' and the line, never naming SMEM, 'scoped VMEM', or 'SMEM limit' and 'VMEM limit' (an
    acronym for an acronym, a capitalised word for a capitalised word, one the question never writes; a
    sentence's first word is no name). The plain word matched, so the line is about the neighbour it goes
    with there, not the thing asked."""
    prose = _QUOTED_RE.sub(" , ", question)
    asked = {w.lower() for w in re.findall(r"[\w-]+", prose)}
    said = f"{heading}\n{_NOTE_RE.sub(' ', span)}"
    written = set(re.findall(r"[\w-]+", said))
    line_pairs = _word_pairs(said)
    starts = {m.group(0) for m in re.finditer(r"(?:^|(?<=[.?!:;]\s))\S+", prose)}
    for a, b in _word_pairs(prose):
        for word, name, at in ((a, b, 1), (b, a, 0)):
            if (
                not _NAME_WORD_RE.fullmatch(name)
                or (at == 0 and name in starts)
                or name in written
                or not (word.isalpha() and word.islower())
                or word in STOPWORDS
                or word in QUESTION_WORDS
            ):
                continue
            for pair in line_pairs:
                other = pair[at]
                if (
                    pair[1 - at].lower() == word
                    and _NAME_WORD_RE.fullmatch(other)
                    and other.isupper() == name.isupper()
                    and other.lower() not in asked
                ):
                    return f"the quoted line names {other} where the question names {name}"
    return None


def quote_faults(
    index: KnowledgeIndex,
    question: str,
    span: Span,
    specific: list[str],
    terms: list[str],
    names: list[str],
    passages: list[Passage] | None = None,
) -> list[str]:
    """Why a span cannot be quoted as the answer: a specific term it lacks, a fault of its wording for what
    is asked, a figure for another generation, a rare name its passage never mentions, the question's
    subject that another of the retrieved `passages` names and its own does not; empty when none."""
    heading = _heading(span.passage)
    reasons = []
    examples = unasked_terms(question)
    said = f"{heading}\n{span.text}"
    # a stack asked by its code name ('torch_xla') is named by the line's prose name ('PyTorch/XLA'); in
    # the gate only: let into ranking as well, it moved quotes of questions the sources do not answer
    shares = share_words(question) | width_names(question)
    reported = reported_figures(question)
    lacking = [
        t
        for t in _missing_specific(specific, said)
        if t not in examples
        and t not in reported
        and not names_product_of(t, said)
        and not (t in shares and shares[t].search(span.text))
    ]
    if lacking:
        reasons.append(f"no passage line names {', '.join(lacking[:3])}")
    reasons.extend(span_faults(question, span.text, heading))
    other = product_fault(question, span.text, span.passage)
    if other:
        reasons.append(other)
    swap = swap_fault(question, span.text, heading)
    if swap:
        reasons.append(swap)
    fmt = format_fault(question, span.text, heading)
    if fmt:
        reasons.append(fmt)
    misplaced = misplaced_terms(question, span.text, heading, terms)
    if misplaced:
        reasons.append(
            f"the quoted line gives {', '.join(misplaced[:3])} for another generation than the question's"
        )
    quoted = _passage_terms(span.passage)
    absent = [t for t in rare_names(index, question, names) if not _present(quoted, t)]
    if absent:
        reasons.append(f"the quoted passage never names {', '.join(absent[:3])}, which few sources name")
    # a check of the quote, not of ranking: as a ranking fault it moves the quote to any line listing
    # generations ('SparseCores per chip by generation') and the gate passes that instead
    if asks_generation(question) and not generations_named(f"{heading}\n{span.text}"):
        reasons.append("the question asks which TPU generations and the quoted line names none")
    # one letter only: a series ('the Q, K, V and O projections') is a notation sources spell out
    asked_letters = letter_names(question)
    letters = sorted(asked_letters - letter_names(f"{heading}\n{span.passage.text}"))
    if len(asked_letters) == 1 and letters:
        reasons.append(
            f"the quoted passage never names {', '.join(letters)}, a one-letter name of the question"
        )
    bound = bound_fault(question, span.text)
    if bound:
        reasons.append(bound)
    flags = flag_passage_fault(question, span.passage)
    if flags:
        reasons.append(flags)
    lower = lower_bound_fault(question, span.text)
    if lower:
        reasons.append(lower)
    amount = amount_fault(question, span.text)
    if amount:
        reasons.append(amount)
    neighbour = subject_fault(question, span.passage, passages or [])
    if neighbour:
        reasons.append(neighbour)
    return reasons


# The checks of the whole retrieval, before any quote: how much of the question the best passage supports,
# and the names and things the question asks about that no source (or no retrieved passage) mentions.
MIN_SUPPORT = 0.60  # share of the question's weighted terms the best passage must contain
CLOSE_COSINE = 0.60  # a passage this close in meaning may leave more of the wording unmatched...
# ...down to this share (at 0.45 a passage on a chip's performance counters answered its fan speed)
CLOSE_MIN_SUPPORT = 0.50
# ...and when the quoted line is itself the passage closest in meaning, at least this close, the wording and
# the meaning agree on it: down to this share (dev fold A of the three sets: docs/kb-accuracy.md)
AGREE_COSINE = 0.70
AGREE_MIN_SUPPORT = 0.45
MIN_COSINE = 0.30  # best cosine below this: nothing in the corpus is about the question
LEXICAL_MIN_SUPPORT = 0.55  # with no vectors, the terms alone decide


def cosine_fault(cos_best: float | None) -> str | None:
    """Why nothing in the corpus is about the question: even the passage closest to it in meaning is
    below `MIN_COSINE` (no vectors, no verdict)."""
    if cos_best is not None and cos_best < MIN_COSINE:
        return f"best cosine {cos_best:.2f} < {MIN_COSINE}"
    return None


def needed_support(mode: str, cos_best: float | None, span: Span | None) -> float:
    """The share of the question's weighted terms the best passage must support: the terms alone decide
    without vectors (`LEXICAL_MIN_SUPPORT`); a close meaning lets more wording go unmatched
    (`CLOSE_MIN_SUPPORT`), more still when the quote's own passage is the closest (`AGREE_MIN_SUPPORT`)."""
    if mode != "hybrid":
        return LEXICAL_MIN_SUPPORT
    if cos_best is not None and cos_best >= AGREE_COSINE and span and span.passage.cosine == cos_best:
        return AGREE_MIN_SUPPORT
    if cos_best is not None and cos_best >= CLOSE_COSINE:
        return CLOSE_MIN_SUPPORT
    return MIN_SUPPORT


def support_fault(weights: dict[str, float], best: Passage, best_support: float, need: float) -> str | None:
    """Why the best passage does not cover the question: it supports less than `need` of its weighted
    terms (`needed_support`); the reason names the first terms it lacks."""
    if best_support >= need:
        return None
    seen = _passage_terms(best)
    missing = [t for t in weights if not _present(seen, t)]
    return (
        f"best passage supports {best_support:.2f} of the question's terms < {need} "
        f"(absent: {', '.join(missing[:5])})"
    )


def unknown_names(
    index: KnowledgeIndex, question: str, weights: dict[str, float], names: list[str], best: Passage
) -> list[str]:
    """The things the question names that no source mentions ('v9', 'tpu8'): a specific term or a name
    in no passage, nor in the best one; a --flag no source names whole; a value assigned to an option,
    a subcommand path or a numbered release that no source writes."""
    seen = _passage_terms(best)
    unknown = [
        t for t in weights if (is_specific(t) or t in names) and _df(index, t) == 0 and not _present(seen, t)
    ]
    # a flag no source names whole ('--max-slices'; its parts 'max' and 'slices' are everywhere)
    unknown += [
        f"--{f}"
        for f in question_flags(question)
        if not any(index.document_frequency(form) for form in {f, f.replace("-", "_"), f.replace("_", "-")})
    ]
    # a value assigned to an option that no source names in any form ('MODEL_IMPL=onnx')
    unknown += [f"={v}" for v in assigned_values(question) if v not in unknown and _family_df(index, v) == 0]
    # a subcommand path of common words that no source writes whole ('xpk workload migrate')
    unknown += [p for p in command_paths(question) if not path_known(index, p)]
    # a release named by product and number that no source writes ('MaxText 2.0', 'JAX 1.0')
    unknown += [r for r in releases_named(question) if not release_known(index, r)]
    # a name of several capitalised words that no source writes whole ('Power Viewer', 'Azure Blob Storage')
    unknown += [n for n in title_names(question) if not title_known(index, n)]
    return unknown


def unknown_fault(unknown: list[str]) -> str | None:
    """Why a question naming something no source mentions (`unknown_names`) is not covered: whatever
    the sources say is about something else."""
    if unknown:  # 'v9', 'tpu8': the question names something no source mentions
        return f"the sources never mention {', '.join(unknown[:3])}"
    return None


def asked_for(question: str) -> str | None:
    """The thing a 'what X / which X / how many X' question asks for (`asked_thing`), unless a value in
    its unit names it ('900 GBps' is a bandwidth) or a name given names it ('the name of')."""
    asked = asked_thing(question)
    if asked in ATTRIBUTE_UNITS or asked in NAMING_WORDS:
        return None
    return asked


def asked_fault(index: KnowledgeIndex, question: str, unknown: list[str]) -> str | None:
    """Why the question is not covered when the thing it asks for ('what refund', 'how many heatsinks')
    is in no form anywhere in the sources: no line can give it, however well its other words match one.
    An agent noun is known through its verb: an 'installer' is what the sources' 'install with' names."""
    asked = asked_for(question)
    verb = asked[:-2] if asked and re.search(r"[a-z]{4}(?:er|or)$", asked) else None
    if (
        asked
        and asked not in unknown
        and _family_df(index, asked) == 0
        and not (verb and _family_df(index, verb))
    ):
        return f"the sources never mention '{asked}', what the question asks for"
    return None


def action_fault(index: KnowledgeIndex, question: str, unknown: list[str]) -> str | None:
    """Why a 'how do I <verb>' question is not covered when its action is in no form anywhere in the
    sources ('encrypt'): a line giving some command for the thing acted on does not say how to do that.
    Turning something off is said by a setting that does, whatever verb the sources use ('stop ...
    sending' by 'send=false'), so those actions are spared."""
    action = asked_action(question)
    if (
        action
        and action not in NEGATING_ACTIONS | {"stop"}
        and action not in unknown
        and action != asked_for(question)
        and _family_df(index, action) == 0
    ):
        return f"the sources never mention '{action}', the action the question asks how to do"
    return None


def capability_fault(question: str, passages: list[Passage]) -> str | None:
    """Why a 'does X support <verb>ing ...' question is not covered when no retrieved passage names the
    action in any form: a passage on the same thing doing another action ('reads ... by scraping an
    endpoint') does not say whether it can do this one."""
    capability = capability_asked(question)
    if capability and not any(_present(_passage_terms(p), capability) for p in passages):
        return f"the question asks whether something supports '{capability}' and no passage names it"
    return None


def elsewhere_fault(
    names: list[str], unknown: list[str], passages: list[Passage], index: KnowledgeIndex, question: str
) -> str | None:
    """Why a question naming something that some source mentions but no passage retrieved for it does
    is not covered: the question is about something else of that name ('Ironwood Ultra' is not
    Ironwood). A common name led by a word the passages write (`common_name_led`: 'host CPU') is not read
    as something else."""
    retrieved = [_passage_terms(p) for p in passages]
    elsewhere = [
        t
        for t in names
        if t not in unknown
        and not any(_present(terms, t) for terms in retrieved)
        and not common_name_led(index, question, t, retrieved)
    ]
    if elsewhere:
        return f"no passage about the question mentions {', '.join(elsewhere[:3])}"
    return None


# A name written in this share of the indexed passages or more is a common word of the sources, not a thing
# of its own: 'VM' and 'CPU' are each in about 4.6% of them, 'HBM' in 4.4%, 'GPU' in 3.9%, 'PCIe' in 0.3%,
# the 'Ultra' of 'Ironwood Ultra' in one passage (0.03 gave the same fold-A answers, docs/kb-accuracy.md)
COMMON_NAME_SHARE = 0.01


def common_name_led(index: KnowledgeIndex, question: str, name: str, retrieved: list[frozenset[str]]) -> bool:
    """Whether the question writes a common name of the sources (`COMMON_NAME_SHARE`) right after a content
    word that a retrieved passage writes ('its host CPU', 'my TPU VM'): the two words name one thing, which
    the passage names by the first ('connects to its host over PCIe'), so the name is no other thing that
    the retrieval missed. A name standing alone ('leak HBM') or led by a word no passage writes counts."""
    if _df(index, name) < COMMON_NAME_SHARE * max(len(index.chunks), 1):
        return False
    words = re.findall(r"[A-Za-z][\w-]*", question)
    leads = {words[i - 1].lower() for i in range(1, len(words)) if words[i].lower() == name}
    return any(_present(terms, lead) for lead in leads if lead not in STOPWORDS for terms in retrieved)


def written_about(index: KnowledgeIndex, code: str, stack: str) -> bool:
    """Whether a passage about `stack` writes `code`: one naming the stack in its line or heading, or from
    the stack's own sheet (`product_fault`'s reading). A plain scan: only a question naming a stack and a
    code name the sources know asks it, and a code name is in few passages."""
    for chunk, lowered in zip(index.chunks, index.lowered_passages(), strict=True):
        if code not in lowered:
            continue
        heading = chunk.section or ""
        about = (
            products_named(chunk.text) | products_named(heading) | SHEET_PRODUCTS.get(chunk.path, frozenset())
        )
        if stack in about:
            return True
    return False


def stack_fault(index: KnowledgeIndex, question: str, weights: dict[str, float]) -> str | None:
    """Why a question pairing a stack with a code name the sources write only about other things is not
    covered: 'call jax.shard_map from inside a TensorFlow tf.function' (no passage about TensorFlow writes
    `jax.shard_map`), so no line says how the two go together, however well the JAX lines match. Only a
    code name (with '_' or '.') is read: a plain word ('ragged', 'baseline') a stack's passages may say
    otherwise, and reading those refused covered questions (docs/kb-accuracy.md, kbref13)."""
    stacks = products_named(question)
    if not stacks:
        return None
    codes = [t for t in weights if ("_" in t or "." in t) and not products_named(t) and _df(index, t) > 0]
    for name in sorted(stacks):
        lacking = [t for t in codes if not written_about(index, t, name)]
        if lacking:
            return f"no passage about {name} names {', '.join(lacking[:3])}, which the sources name elsewhere"
    return None
