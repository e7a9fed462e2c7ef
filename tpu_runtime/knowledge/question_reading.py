"""What a question asks: its weighted terms, question words, kinds, counts, clauses and named things.

Read from the question alone (and the index's word counts), apart from ranking and the gate, so both can
ask the same reading and neither's rules leak into it; it imports neither (see `answer` for the design).
"""

from __future__ import annotations

import math
import re

from tpu_runtime.knowledge.lexical import STOPWORDS, is_identifier, tokenize
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import family_words, stem

SPECIFIC_WEIGHT = 2.0  # weight multiplier of specific terms (with a digit, or identifier-like)
TARGET_WEIGHT = 2.0  # weight factor, when ranking spans, of the word naming what is asked for
# Words that ask rather than inform: they never decide whether the corpus covers a question.
QUESTION_WORDS = frozenset(
    "which who whom whose what when where why how much many does do did is are was were can could "  # noqa: SIM905
    "should would will shall may might must there here please tell explain show give list need want "
    "know use using used get set make way best good about any some all each every one two also just "
    "only i me my we our you your it its they them this that these those "
    "myself yourself yourselves itself ourselves themselves mine yours ours theirs us he she him her "
    "his their "
    # words that frame a question rather than name its subject ("what happens when ...", "is it better
    # to ...", "what could be wrong"): a passage need not repeat them to answer it
    "happen happens happened gets got getting ask asking better worse big bigger small smaller up down "
    "within between wrong kind kinds sort thing things something anything actually really instead still "
    "again able possible whether else enough being been having unless otherwise told "
    # comparisons frame a question about two named things ("is X the same as Y", "how do X and Y differ",
    # "why are there differences between X and Y")
    "same different differ differs difference differences ".split()
)
# "How many X ...", "what is the X of ...": X names the quantity or attribute asked for; a line that
# never mentions it (an HBM size for a question about HBM stacks) does not answer the question.
_FOCUS_RE = re.compile(r"\b(?:how\s+(?:many|much)|what(?:'s|\s+is|\s+are|\s+was)\s+the)\s+([^?]*)", re.I)
# "What is the X (used) for?": the question asks what X serves, and X is its subject, not an attribute a
# line must name ('what is the --max-num-seqs setting for' is answered by the line on `--max-num-seqs`)
_PURPOSE_RE = re.compile(r"\bfor\s*\?*\s*$", re.I)
# The unit a hardware figure is given for: a line "per chip" does not answer a question about a whole Pod.
SCOPES = {
    "chip": "chip", "chips": "chip", "host": "host", "hosts": "host", "pod": "pod", "pods": "pod",
    "slice": "slice", "slices": "slice", "vm": "vm", "vms": "vm", "tensorcore": "tensorcore",
    "tensorcores": "tensorcore", "core": "tensorcore", "cores": "tensorcore",
}  # fmt: skip
# a total asked of a whole Pod or slice: 'whole / entire / full / complete / total / combined / aggregate'
# before it ('an entire Trillium pod', 'total HBM of a full pod'), or its chips 'across all' of it
_WHOLE_RE = re.compile(
    r"\b(?:whole|entire|full|complete|total|combined|aggregate)\b[^?.;]{0,40}?\b(pod|slice)s?\b"
    r"|\bacross\s+(?:all\s+)?(?:the\s+)?chips\s+of\s+(?:an?\s+|the\s+)?[^?.;]{0,20}?\b(pod|slice)s?\b",
    re.I,
)
# "How much does X cost / weigh": the verb names the quantity asked for
_COST_RE = re.compile(r"\bhow\s+much\s+(?:does|do|did|will|would|could)\s+[^?]*?\b(costs?|weighs?)\b", re.I)
_WHICH_RE = re.compile(r"\bwhich\s+([^?]*)", re.I)
# "Which bandwidth ...", "what timeout does X use": an attribute picked by which or what
_PICKED_RE = re.compile(r"\bwhich\s+([^?]*)|^\s*what\s+([^?]*)", re.I)
_KINDS_RE = re.compile(r"\b(?:kinds?|types?|sorts?)\s+of\s+([a-z][\w-]*)", re.I)
# verbs that end the noun phrase of "what X does ...", "which X is ..."
AUXILIARIES = frozenset("does do did is are was were can could will would should has have had".split())  # noqa: SIM905
# "What refund ...", "which warranty ...": the thing a what/which question asks for
_ASKED_RE = re.compile(r"^\s*(?:what|which)\s+([^?]*)", re.I)
_FOCUS_STOP = frozenset(
    "of in on per for at to from with by does do did is are was were can could will would should has "  # noqa: SIM905
    "have had a an the that which when if and or vs versus".split()
)
# generic quantity words: "the maximum number of chips" is answered by "up to 256 chips"
QUANTITY_WORDS = frozenset(
    "number size amount value values count maximum minimum max min total default limit level range "  # noqa: SIM905
    "difference compute performance speed throughput capacity".split()
)
# An attribute is also named by a value in its unit: "900 GBps" answers a question about bandwidth.
_SIZE = r"\d[\d.,]*\s*(?:[KMGTP]i?B|[KMGTP]bytes|gigabytes|terabytes)\b"
_RATE = r"\d[\d.,]*\s*(?:[KMGTP]i?B(?:ps|/s)|[KMGTP]bps|[KMGTP]b/s|gigabits|gigabytes per second)"
_FLOPS = r"\d[\d.,]*\s*(?:[KMGTPE]?FLOPs?|[a-z]*flops|TOPS|[a-z]*ops\b)"
SHAPE_WORDS = ("shape", "shapes", "tile", "tiles")
ATTRIBUTE_UNITS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.I)
    for names, pattern in (
        (("bandwidth", "bandwidths"), _RATE),
        (("capacity", "memory", "hbm", "dram", "vmem", "smem"), _SIZE),
        (("throughput", "flops", "peak", "teraflops", "petaflops"), _FLOPS),
        (("power", "watts", "wattage"), r"\d[\d.,]*\s*(?:W|kW|watts)\b"),
        (("clock", "frequency"), r"\d[\d.,]*\s*(?:[MG]Hz)\b"),
        (("latency",), r"\d[\d.,]*\s*(?:ns|us|µs|ms)\b"),
        # a wait or period is a time; a shape two sizes or more ('8x128', '(8, 128)', a slice's '4x4x8')
        (
            ("timeout", "timeouts", "interval", "delay", "ttl"),
            r"\d[\d.,]*\s*(?:ns|us|µs|ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?)\b",
        ),
        (SHAPE_WORDS, r"\b\d+(?:\s*[x×]\s*\d+)+\b|\(\s*\d+\s*,\s*\d+"),
        # a score is a share or a fraction ('87.2%', '0.87'), not a setting's value ('--utilization=0.9')
        (("score", "scores"), r"\d\s*%|(?<![=\w.])\d*\.\d+\b(?!\.\d)"),
        (("version", "versions", "release"), r"\b\d+\.\d+\.\d+\b"),
    )
    for name in names
}
# memories are things as well as attributes: a size names them only when the question asks how big
MEMORY_NOUNS = frozenset(("memory", "hbm", "dram", "vmem", "smem"))
_ASKS_SIZE_RE = re.compile(r"\bhow\s+(?:much|big|large)\b|\bsize\b|\bcapacity\b", re.I)
# "How many X", "the maximum number of X": the question asks for a count, so the quoted line must give
# one (a number or a number word); a line that only names X ('scan_layers loops over decoder layers') does
# not say how many. A digit inside a name, version tag or flag ('v5p', 'bf16', 'HBM2e') is not a number:
# a number starts its word ('256', '4-chip', '2x2x1', '8GB'). "How can a kernel read the number of X"
# asks for a way, not a count.
_ASKS_COUNT_RE = re.compile(r"\bhow\s+many\b|\bnumber\s+of\b", re.I)
_ASKS_WAY_RE = re.compile(r"\bhow\s+(?:to|do|does|did|can|could|should|would)\b", re.I)
# a line's source note ('([source](https://...), checked 2026-12-04)') holds digits that state no
# value: a count, time or limit is looked for in the line with its notes taken out
_NOTE_RE = re.compile(r"\]\([^)]*\)|https?://\S+|\bchecked\s+\d{4}-\d\d-\d\d\b", re.I)
# "How long does X take": the question asks for a time, so the quoted line must give one (a number with
# a time unit, or a span of time in words); a line that only names X does not say how long it takes.
# "How long can a prompt be" asks for a length, which any number answers.
_ASKS_TIME_RE = re.compile(r"\bhow\s+long\b(?![^?]*\b(?:can|may|must|should|could)\b[^?]*\bbe\b)", re.I)
# "What is the largest X / the minimum X": the question asks for a limit, which only a number gives
# (a line saying what X is, or that X must not be set, states no limit)
_ASKS_LIMIT_RE = re.compile(
    r"^\s*what(?:'s|\s+is|\s+are|\s+was)\s+the\s+(?:largest|maximum|max|highest|biggest|greatest|"
    r"smallest|minimum|min|lowest|fewest|longest|shortest)\b",
    re.I,
)
# "What is the default X", "what X does Y use when --z is not given": the question asks for the value
# used when nothing is set, which a line gives only by saying so (a value from an example command is
# what that example chose, not the default)
_ASKS_DEFAULT_RE = re.compile(
    r"^\s*(?:what|which)\b[^?]*(?:\bdefault\b|\bwhen\s+[^?]*\b(?:is|are)\s+(?:not|n't)\s+"
    r"(?:given|set|passed|specified)\b|\b(?:is|are)\s+(?:left\s+)?(?:unset|omitted)\b)",
    re.I,
)
# "Which flag ...", "what environment variable ...": the question asks for a name; the quoted line must
# give one (a code span or an identifier), not only talk about flags
_NAME_KINDS = r"(flags?|variables?|env\s+vars?|functions?|commands?|annotations?|decorators?)"
_NAME_KIND_RE = re.compile(rf"{_NAME_KINDS}$", re.I)
_ASKS_NAME_RE = re.compile(
    rf"^\s*(?:which|what(?:'s|\s+is|\s+are)?(?:\s+the)?)\s+(?:[\w/.-]+\s+){{0,2}}?{_NAME_KINDS}\b", re.I
)
# after a stated situation: "What should I run?", "What do I need to call?"
_ASKS_COMMAND_RE = re.compile(
    r"^\s*what\s+(?:should|do|can|must)\s+(?:i|we|you)\s+(?:need\s+to\s+)?"
    r"(?:run|call|execute|invoke|type|install)\b[^?]*\??\s*$",
    re.I,
)
_PROCEDURAL_RE = re.compile(r"\bhow\s+(?:do|can|should|would)\s+(?:i|we|you)\b|\bhow\s+to\b", re.I)
# verbs of finding out rather than doing: 'how do I read the roofline' is answered by what it shows, 'how
# should I decide whether X is memory bound' by what tells it
INQUIRY_VERBS = frozenset(
    "read see find check view look understand interpret learn identify spot tell know figure work "  # noqa: SIM905
    "decide determine judge".split()
)
# "How do I <verb> ...": the action asked for
_ACTION_RE = re.compile(r"^\s*how\s+(?:(?:do|can|should|would)\s+(?:i|we|you)|to)\s+([a-z]+)\b", re.I)
_WORD_RE = re.compile(r"[A-Za-z]{2,}")


# Durations a question states as a value ("not filled within 6 hours", "hangs for minutes") rather than
# asks about: passages give the setting, not the user's number, so these words weigh little unless the
# question asks how long something takes.
DURATION_WORDS = frozenset(
    "second seconds minute minutes hour hours day days week weeks month months".split()  # noqa: SIM905
)
DURATION_WEIGHT = 0.3
_ASKS_DURATION_RE = re.compile(r"\bhow\s+(?:long|many\s+(?:seconds|minutes|hours|days))\b", re.I)
# "Is X the same chip as Y", "are X and Y the same TPU": the word after 'same' is the kind of thing
# compared, which a line saying 'X is called Y' need not repeat (but in "must slices have the same
# topology" it is the attribute asked about)
_SAME_RE = re.compile(r"^\s*(?:is|are)\b[^?]*?\bthe\s+same\s+([a-z]+)\b", re.I)
COMPARED_WEIGHT = 0.2
# 'exactly', 'unexpectedly', 'properly': an adverb made from a word the sources know qualifies how,
# and a line answering the question need not repeat it
_ADVERB_RE = re.compile(r"^[a-z]{4,}ly$")
ADVERB_WEIGHT = 0.3
# weight factor of a hyphenated compound of plain words whose words are terms too (`plain_compounds`); at 0
# the compound counted for nothing and main dev fold A lost answers
COMPOUND_WEIGHT = 0.5
ASIDE_MIN_OWN = 3  # content words the asking sentence needs for the others to be asides
ASIDE_WEIGHT = 0.1  # weight factor of a word only the sentences around the asking one use
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")
NAMESPACE_WEIGHT = 0.2  # weight factor of the root of a dotted name ('pltpu' in 'pltpu.BufferedRef')
_DOTTED_RE = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\b")


def _parts(token: str) -> list[str]:
    return [p for p in re.split(r"[._\-/:]+", token) if p]


def is_specific(token: str) -> bool:
    """A term that pins down what is asked about: a generation or size (v5e, 2x2x1, bf16), a flag or name."""
    return any(ch.isdigit() for ch in token) or is_identifier(token)


_QUOTED_RE = re.compile(r'"[^"]*"|`[^`]*`|\u201c[^\u201d]*\u201d')


def name_terms(question: str) -> list[str]:
    """Words the question writes as a name (capitalised after a sentence's first word: 'Trillium',
    'SLA'): like a version or flag, a name pins down what is asked about, so one that no source
    mentions makes the question not covered, however well its other words match a line."""
    names: list[str] = []
    # a quoted log line or code ('logs "Couldn't find tuned sizes"') is matched as text, not as names
    prose = _QUOTED_RE.sub(" ", question)
    for sentence in re.split(r"(?<=[.?!:])\s+", prose):
        for word in re.findall(r"[A-Za-z][\w-]*", sentence)[1:]:
            lower = word.lower()
            if word[0].isupper() and word.isalpha() and lower not in QUESTION_WORDS and lower not in names:
                names.append(lower)
    return names


# a plain word written as a name: one capital, then lower case ('Power', 'Viewer'); not a product's own
# spelling ('MaxText', 'XProf': a product before a thing names two things), an acronym ('TPUs') nor a word
# with a digit ('Qwen3'), which other checks read
_TITLE_WORD_RE = re.compile(r"[A-Z][a-z]+")


def title_names(question: str) -> list[str]:
    """Names the question writes as two or more capitalised words in a row after a sentence's first word
    ('the Power Viewer tool', 'Azure Blob Storage'): such a name is known only whole, as a release or a
    subcommand path is, since each of its words may be common on its own ('power', 'viewer')."""
    found: list[str] = []
    prose = _QUOTED_RE.sub(" , ", question)
    for sentence in re.split(r"(?<=[.?!:;])\s+", prose):
        run: list[str] = []
        for i, raw in enumerate(sentence.split()):
            word = raw.strip("(),;:.?!")
            opens, closes = raw != raw.lstrip("("), raw != raw.rstrip("),;:.?!")
            if opens or i == 0 or not _TITLE_WORD_RE.fullmatch(word):
                if len(run) >= 2:
                    found.append(" ".join(run))
                run = [word] if opens and i and _TITLE_WORD_RE.fullmatch(word) else []
            else:
                run.append(word)
            if closes:
                if len(run) >= 2:
                    found.append(" ".join(run))
                run = []
        if len(run) >= 2:
            found.append(" ".join(run))
    return list(dict.fromkeys(found))


def aside_terms(question: str) -> set[str]:
    """Words only the sentences around the asking one (the last ending in '?') use: those after it
    ('Thanks!', 'Any pointer helps.') always, those before it ('I am new to TPUs.') when the asking
    sentence names its subject itself, in `ASIDE_MIN_OWN` words or more. A source need not repeat the
    asides. When the asking sentence only says what form the answer takes ('... logs "X". What should I
    run?'), the sentences before it say what it is about."""
    sentences = [x for x in _SENTENCE_RE.split(question.strip()) if x]
    asking = [i for i, x in enumerate(sentences) if x.rstrip().endswith("?")]
    if len(sentences) < 2 or not asking:
        return set()
    at = asking[-1]
    own = {t for t in tokenize(sentences[at]) if t not in QUESTION_WORDS and len(t) > 1}
    before = {t for x in sentences[:at] for t in tokenize(x)}
    after = {t for x in sentences[at + 1 :] for t in tokenize(x)}
    aside = after - before - own
    if len(own) >= ASIDE_MIN_OWN:
        aside |= before - own
    return aside


# a clause break before the asking clause of one sentence: a semicolon, or a comma before a question word
# ('... stalls; should I set ...', '... comes out empty, how do I grab ...')
_CLAUSE_RE = re.compile(
    r";\s+|,\s+(?=(?:how|what|which|why|when|where|should|can|could|is|are|do|does)\b)", re.I
)


def clause_asides(question: str) -> set[str]:
    """Words only the clauses before the asking one use, within the asking sentence, when the asking clause
    names its subject itself in `ASIDE_MIN_OWN` words or more: the story of a symptom ('my script exits
    after about a second') that a source answering the question need not retell, as `aside_terms` does
    for whole sentences."""
    sentences = [x for x in _SENTENCE_RE.split(question.strip()) if x]
    asking = [x for x in sentences if x.rstrip().endswith("?")]
    if not asking:
        return set()
    clauses = [x for x in _CLAUSE_RE.split(asking[-1]) if x.strip()]
    if len(clauses) < 2:
        return set()
    own = {t for t in tokenize(clauses[-1]) if t not in QUESTION_WORDS and len(t) > 1}
    if len(own) < ASIDE_MIN_OWN:
        return set()
    return {t for x in clauses[:-1] for t in tokenize(x)} - own


def _weights(index: KnowledgeIndex, question: str) -> dict[str, float]:
    """Rarity weight (idf) of each distinctive question term; terms absent from the corpus weigh most."""
    total = max(len(index.chunks), 1)
    weights: dict[str, float] = {}
    # the root of a dotted name is an alias or package ('pltpu', 'jnp', 'torch'): sources spell it
    # differently or not at all, so it barely decides coverage
    roots = {m.group(0).split(".")[0].lower() for m in _DOTTED_RE.finditer(question)}
    states_duration = not _ASKS_DURATION_RE.search(question)
    compared = {m.group(1).lower() for m in _SAME_RE.finditer(question)}
    aside = aside_terms(question)
    for token in tokenize(question):
        if token in QUESTION_WORDS or len(token) < 2 or token in weights:
            continue
        # rarity of the word's family: 'TPUs' is as common as 'TPU', though the plural is rarer, and a
        # paraphrase ('steer', absent from the docs) is as common as the docs' word for it ('hint')
        weights[token] = math.log((total + 1) / (_family_df(index, token) + 0.5))
        if is_specific(token) and _df(index, token) > 0:
            weights[token] *= SPECIFIC_WEIGHT
        if token in roots:
            weights[token] *= NAMESPACE_WEIGHT
        if states_duration and token in DURATION_WORDS:
            weights[token] *= DURATION_WEIGHT
        if token in compared:
            weights[token] *= COMPARED_WEIGHT
        if token in aside:
            weights[token] *= ASIDE_WEIGHT
        if _ADVERB_RE.match(token) and index.document_frequency(token[:-2]) > 0:
            weights[token] *= ADVERB_WEIGHT
    for token in plain_compounds(weights):
        weights[token] *= COMPOUND_WEIGHT
    # a word the question says twice ('host DRAM of a v6e VM host') is what it is about: it counts twice,
    # as a repeated query word does in BM25
    said = tokenize(question)
    for token in weights:
        weights[token] *= said.count(token)
    return weights


def plain_compounds(weights: dict[str, float]) -> set[str]:
    """The question's compounds of plain words written with a hyphen ('rounding-up', 'seventh-generation')
    whose words are terms of their own: tokenizing yields the compound and each word, so a line writing
    one word otherwise ('ceiling division' for 'rounding-up division') lacked it twice. A compound with a
    digit ('v6e-8', '8-bit') is a name and keeps its weight."""
    return {
        token
        for token in weights
        if "-" in token
        and token.replace("-", "").isalpha()
        and (words := [p for p in token.split("-") if p not in QUESTION_WORDS and len(p) > 1])
        and all(p in weights for p in words)
    }


def _family_df(index: KnowledgeIndex, token: str) -> int:
    """Passages naming the word in any form or family member (the largest count of one of them; the
    index holds words as written, so a member's plural is looked up too: 'docs' for 'doc')."""
    kin = {token, *family_words(token)}
    return max(
        max(_df(index, w), index.document_frequency(stem(w)), index.document_frequency(f"{w}s")) for w in kin
    )


def _df(index: KnowledgeIndex, token: str) -> int:
    df = index.document_frequency(token)
    if df == 0 and len(_parts(token)) > 1:
        # an unseen compound ('3.1', 'fine-tuning') counts as known when its parts are known
        df = min((index.document_frequency(p) for p in _parts(token)), default=0)
    return df


_NUMBER_UNIT_RE = re.compile(r"^(\d+(?:\.\d+)?)([a-z]{1,5})$")
# a rate of bytes per second written either way: the sheets write 'GB/s' and 'GBps' (also 'TB/s', 'TBps',
# 'GiB/s'), each in dozens of lines, from the pages they restate
_RATE_RE = re.compile(r"^([kmgtp]i?b)(?:/s|ps)$")


def rate_forms(token: str) -> set[str]:
    """The other spelling of a byte rate ('gb/s' -> 'gbps', 'tbps' -> 'tb/s'), or nothing."""
    rate = _RATE_RE.match(token)
    return {f"{rate.group(1)}/s", f"{rate.group(1)}ps"} - {token} if rate else set()


def close_forms(tokens: list[str]) -> set[str]:
    """Spellings of the same word or value that the tokens do not hold as written: a compound joined
    ('all-gather', 'all_gather' -> 'allgather'), a number glued to its unit split or joined ('16gb' ->
    '16', 'gb'; '16', 'gb' -> '16gb')."""
    forms: set[str] = set()
    for i, token in enumerate(tokens):
        if ("-" in token or "_" in token) and "." not in token:
            forms.add(token.replace("-", "").replace("_", ""))
        glued = _NUMBER_UNIT_RE.match(token)
        if glued:
            forms.update(glued.groups())
        elif token.replace(".", "", 1).isdigit() and i + 1 < len(tokens) and tokens[i + 1].isalpha():
            unit = tokens[i + 1]
            if len(unit) <= 5:
                forms.add(token + unit)
    return forms


def _lead_words(phrase: str) -> list[str]:
    """The first words of `phrase` up to a function word or question word (at most four)."""
    words: list[str] = []
    for raw in phrase.split()[:4]:
        word = raw.strip(",.;:()'\"").lower()
        if not word or word in _FOCUS_STOP or word in QUESTION_WORDS:
            break
        words.append(word)
    return words


# 'how many times faster / larger / as much / more ...' asks a ratio, read as 'how much faster' is: the
# attribute is what the comparative is of ('faster': speed), not 'times' as in 'how many times does X retry'
_COMPARATIVE = (
    r"(?:fast|slow|larg|small|bigg|high|low|great|long|short|cheap|wid|new|old|bett|quick|light)er|worse"
)
_RATIO_RE = re.compile(
    rf"\bhow\s+many\s+times\s+(?:as\s+(?:(?:much|many)\s+)?|(?=(?:more|less|{_COMPARATIVE})\b))", re.I
)


# 'what is the metric called / named': the words ask the name of the thing before them, which is the focus
NAMING_WORDS = frozenset({"called", "named"})


def focus_term(question: str) -> str | None:
    """The head word of the quantity or attribute a 'how many / what is the' question asks for; for a
    'which X / what X' question only when X is an attribute with a unit ('which Windows version', 'which
    bandwidth', 'what timeout does X use', 'what tile shape'), since 'which tool' or 'which flag' is
    answered by a line naming one, not the word. None for 'what is the X (used) for?', which asks
    what X serves."""
    question = _RATIO_RE.sub("how much ", question)
    verb = _COST_RE.search(question)
    if verb:  # 'how much does X cost': the cost is asked for
        return stem(verb.group(1).lower())
    match = _FOCUS_RE.search(question)
    if not match:
        which = _PICKED_RE.search(question)
        heads = (
            [
                w
                for w in _lead_words(which.group(1) or which.group(2))
                if w in ATTRIBUTE_UNITS and w not in MEMORY_NOUNS
            ]
            if which
            else []
        )
        return heads[-1] if heads else None
    if match.group(0).lower().startswith("what") and _PURPOSE_RE.search(question):
        return None
    words = _lead_words(match.group(1))
    # the last word that is not a generic quantity ('clock' in 'clock speed'); none for 'maximum number';
    # after 'how many' the first plural ('chips' in 'how many v5e chips share one host')
    heads = [w for w in words if w not in QUANTITY_WORDS and w not in NAMING_WORDS and not is_specific(w)]
    if heads and _NAME_KIND_RE.match(heads[-1]) and asks_name(question):
        # 'what's the pip command to ...': a line giving a command answers it (`asks_name`) without the word
        return None
    plurals = [w for w in heads if w.endswith("s")]
    if match.group(0).lower().startswith("how") and plurals:
        heads = plurals[:1]
    return heads[-1] if heads else None


def asked_thing(question: str) -> str | None:
    """The head word of what a question asks for: the focus of 'how many X / what is the X', else for
    'what X / which X' the word before the auxiliary verb that ends the noun phrase ('refund' in 'what
    refund does Google give', 'generation' in 'which PCIe generation does ...'); without such a verb
    the first word past capitalised names ('tool' in 'which XProf tool tracks'), since a later one may
    be the main verb ('which documentation holds ...')."""
    focus = focus_term(question)
    if focus:
        return focus
    match = _ASKED_RE.search(question)
    if not match:
        return None
    raw = [w.strip(",.;:()'\"").lower() for w in match.group(1).split()[:3]]
    lead = _lead_words(match.group(1))
    ends = next((i for i, w in enumerate(raw) if w in AUXILIARIES), None)
    if ends and ends <= len(lead):
        head: str | None = lead[ends - 1]
    else:  # the first word past the names that qualify it ('tool' in 'which XProf tool tracks ...')
        cased = match.group(1).split()
        plain = [w for w, c in zip(lead, cased, strict=False) if not c[:1].isupper()]
        head = plain[0] if plain else (lead[0] if lead else None)
    return head if head and head not in QUANTITY_WORDS and not is_specific(head) else None


def target_term(question: str) -> str | None:
    """The word naming what the question wants back: X of 'what kinds of X', the attribute of 'how many
    X / what is the X of', or X of a 'which X' clause inside the question ('how do I find which slice
    ... holds'). A question opening with 'which X' picks one of the Xs, and the line answering it names
    that one, not the word X ('which tool' is answered by 'the Memory Profile'), so it has no target."""
    kinds = _KINDS_RE.search(question)
    if kinds:
        return kinds.group(1).lower()
    focus = focus_term(question)
    if focus:
        return focus
    which = _WHICH_RE.search(question)
    if which and question[: which.start()].strip():
        # the head noun, past the names that qualify it
        raw = which.group(1).split()
        lead = [w for w, r in zip(_lead_words(which.group(1)), raw, strict=False) if not r[:1].isupper()]
        # a kind of name ('which variable sets it') is answered by the name, not the word
        if (
            lead
            and lead[0] not in QUANTITY_WORDS
            and not is_specific(lead[0])
            and not _NAME_KIND_RE.match(lead[0])
        ):
            return lead[0]
    return None


def target_weights(question: str, weights: dict[str, float]) -> dict[str, float]:
    """The question's weights for ranking spans, with the word naming what it wants back
    (`target_term`) weighing `TARGET_WEIGHT` times: of two lines sharing the question's words, the one
    that names the thing asked for answers it."""
    target = target_term(question)
    if not target or target in ATTRIBUTE_UNITS:  # an attribute is already asked for by the focus check
        return weights
    hits = [t for t in weights if t == target or stem(t) == stem(target)]
    return {t: w * TARGET_WEIGHT if t in hits else w for t, w in weights.items()}


def asked_action(question: str) -> str | None:
    """The verb of a 'how do I <verb> ...' question ('disable' in 'how do I disable the MXU'), unless it is
    a word that frames any question ('get', 'make', 'use')."""
    match = _ACTION_RE.search(question)
    verb = match.group(1).lower() if match else None
    return verb if verb and verb not in QUESTION_WORDS | INQUIRY_VERBS and verb not in STOPWORDS else None


# "I need X to do Y, what do I set?": the user's task, then a request for the setting that does it
_ASKS_SETTING_RE = re.compile(
    r"\bwhat\s+(?:do|should|must|would|can)\s+(?:i|we|you)\s+(?:set|pass|turn\s+on|switch\s+on|enable)\b",
    re.I,
)


def asks_setting(question: str) -> bool:
    """Whether the question asks what to set ('I need Orbax to clean up after a crash, what do I set?'):
    a line assigning a value answers it, where a line describing the thing may share more of its words."""
    return bool(_ASKS_SETTING_RE.search(question))


# 'how do I tell JAX where to keep ...', 'how do I make jnp raise ...', 'how do I get X to explain ...': the
# user wants a program to behave otherwise (the verb is causative, its object a program or thing, not 'a')
_ASKS_BEHAVIOUR_RE = re.compile(
    r"\bhow\s+(?:do|can|should|would)\s+(?:i|we|you)\s+(?:tell|make|get|let|force|have)\s+"
    r"(?!(?:a|an|the|some|any|it|its|this|that|these|those|more|rid|whether|if|when|what|which|how|why|where)\b)"
    r"[\w./'-]+\s+\w",
    re.I,
)


def asks_behaviour(question: str) -> bool:
    """Whether a "how do I" question asks how to make a program behave otherwise ('how do I tell JAX where
    to keep compiled programs'): a setting answers it, but its causative verb ('tell', 'make') names no
    action that a line's code could name, so `PROCEDURE_BONUS` finds nothing to reward."""
    return bool(_ASKS_BEHAVIOUR_RE.search(question))


def procedure_terms(question: str, terms: list[str]) -> list[str]:
    """What the code of a line answering a "how do I" question names: the action ('install' in 'how do I
    install X') and the question's specific terms (`torch.compile`, `v5e`). Empty for other questions."""
    if not _PROCEDURAL_RE.search(question):
        return []
    verb = asked_action(question)
    return ([verb] if verb else []) + [t for t in terms if is_specific(t)]


def asks_name(question: str) -> str | None:
    """The kind of name a 'which flag / what environment variable / which function' question asks for
    ('flag'), or None: such a question is answered by a line that names one, not one about flags."""
    match = _ASKS_NAME_RE.search(question)
    return match.group(1).lower() if match else None


# A clause asking yes or no: it opens with an auxiliary ('do I still pass ...', 'does X give ...'), at the
# question's start or after a comma; 'is there / are there' asks whether a limit exists, which a count answers
_YES_NO_RE = re.compile(
    r"(?:^|[,;:]\s*)(?:do|does|did|is|are|was|were|can|could|should|would|will|must|has|have)\s+"
    r"(?!there\b)(?![^?]*\b(?:what|which|how)\b)",
    re.I,
)


# "Which metric shows how many times ...", "what setting controls how long ...": the 'how many / how
# long' describes the thing a which/what question asks for, named by a line without giving the count
_PICKED_BY_CLAUSE_RE = re.compile(
    r"^\s*(?:which|what)\s+((?:[\w/.'-]+\s+){1,4}?)how\s+(?:many|much|long)\b", re.I
)


# "how does the scaling book estimate how long ...": the clause is what a way is asked for, not the time
_WAY_TO_KNOW_RE = re.compile(
    r"^\s*how\s+(?:do|does|did|can|could|should|would)\s+(?:[\w/.'-]+\s+){1,6}?"
    r"(?:estimate|compute|calculate|measure|work\s+out|predict|determine|decide|tell|know)s?\s+"
    r"how\s+(?:many|much|long)\b",
    re.I,
)


def asks_way_to_know(question: str) -> bool:
    """Whether a how-question asks for the way a count, amount or time is worked out ('how does the
    scaling book estimate how long the math takes'): a line giving the formula answers it, not a time."""
    return bool(_WAY_TO_KNOW_RE.search(question))


def asks_by_clause(question: str) -> bool:
    """Whether a which/what question names its thing by a 'how many / how long' clause ('which metric
    shows how many times a JobSet restarted'): it asks for the metric, not the count. Not when an
    auxiliary or 'and' stands between ('what form do I fill in, and how long does approval take')."""
    if asks_way_to_know(question):
        return True
    match = _PICKED_BY_CLAUSE_RE.search(question)
    if not match:
        return False
    words = [w.strip(",.;:'\"").lower() for w in match.group(1).split()]
    return len(words) >= 2 and not any(w in AUXILIARIES or w in ("and", "or") for w in words)


def asks_count(question: str) -> bool:
    """Whether the question asks how many: 'how many X', or 'the number of X' outside a question asking
    for a way ('how can a kernel read the number of cores' is answered by the call that reads it) or for
    yes or no ('when I switch to torch_xla.launch, do I still pass the number of processes?' is answered
    by a line saying what replaces it), and not in a clause naming what a which-question asks for."""
    match = _ASKS_COUNT_RE.search(question)
    if not match or asks_by_clause(question):
        return False
    if match.group(0).lower().startswith("how"):
        return True
    return not _ASKS_WAY_RE.search(question) and not _YES_NO_RE.search(question[: match.start()])


# 'shows the fan speed of': the object of a verb, not an idiom after a preposition ('at the price of')
_OF_RE = re.compile(r"\b([a-z]+)\s+the\s+((?:[a-z][\w-]*\s+){0,2}?[a-z][\w-]*)\s+of\b", re.I)


def attribute_of(question: str) -> str | None:
    """The attribute a 'which / what' question asks about in 'the X of Y' past its opening ('fan' in
    'which XProf tool shows the fan speed of each chip'; 'speed' is a generic quantity): the line
    answering it names X (or gives a value in X's unit), not only Y and the tool."""
    if not _ASKED_RE.search(question) or _FOCUS_RE.search(question):
        return None
    match = next((m for m in _OF_RE.finditer(question) if m.group(1).lower() not in _FOCUS_STOP), None)
    if not match:
        return None
    words = [w.lower() for w in match.group(2).split()]
    heads = [w for w in words if w not in QUANTITY_WORDS and w not in QUESTION_WORDS and not is_specific(w)]
    return heads[-1] if heads else None


# "How many X", "what is the number of X": a count asked by the question itself, not inside a clause that
# asks for something else ('which config sets how many steps run' asks for a name)
_MAIN_COUNT_RE = re.compile(
    r"^\s*(?:how\s+many\b|what(?:'s|\s+is|\s+are)\s+the\s+(?:[a-z]+\s+)?number\s+of\b)", re.I
)


# "What upper bound does X use", "what is the score of ...": a quantity that only a number gives
_ASKS_AMOUNT_RE = re.compile(
    r"^\s*(?:what|which)(?:'s|\s+is|\s+are|\s+was)?(?:\s+the)?\s+(?:[\w-]+\s+){0,2}?"
    r"(?:bound|limit|threshold|score|ratio|percentage|fraction)s?\b",
    re.I,
)


def asks_amount(question: str) -> bool:
    """Whether a what/which question asks for a bound, limit, threshold, score or ratio ('what upper bound
    does the backend use'), which only a number gives."""
    return bool(_ASKS_AMOUNT_RE.search(question))


def asks_main_count(question: str) -> bool:
    """Whether the question itself asks how many or how much at most ('how many X', 'what is the largest
    X'), rather than for a name in a clause about a count."""
    return bool(_MAIN_COUNT_RE.search(question)) or asks_limit(question)


def asks_limit(question: str) -> bool:
    """Whether the question asks for a limit ('what is the largest priority Shardy accepts'): only a
    number answers it."""
    return bool(_ASKS_LIMIT_RE.search(question))


def asks_time(question: str) -> bool:
    """Whether the question asks how long something takes ('how long does the export take'), not how
    long a thing may be."""
    return bool(_ASKS_TIME_RE.search(question)) and not asks_by_clause(question)


def asks_default(question: str) -> bool:
    """Whether a what/which question asks for the value used when nothing is set ('what is the default
    X', 'what rate does it use when --rate is not given')."""
    return bool(_ASKS_DEFAULT_RE.search(question))


# 'a TPU type like v6e-8', 'such as TPU-V6E': a value the question gives as an example of its input
_EXAMPLE_RE = re.compile(
    r"\b(?:like|such\s+as|e\.g\.,?|for\s+(?:example|instance),?)\s+([\w.\-/\"'`]+)", re.I
)


def example_terms(question: str) -> set[str]:
    """Terms the question gives after 'like', 'such as' or 'e.g.' as an example of what it passes in: a line
    saying what happens to any such input answers it without repeating the example."""
    return {t for m in _EXAMPLE_RE.finditer(question) for t in tokenize(m.group(1))}


def value_units(question: str) -> dict[str, re.Pattern[str]]:
    """Attributes the question names (version, bandwidth, clock...) with the pattern of a value in their
    unit: a line giving such a value names the attribute as well as the word would ('XProf needs
    2.20.0 or later' answers 'which version'). A memory (HBM, VMEM) is a thing as well as an attribute,
    so a size names it only when the question asks how big; 'how do I give a kernel more VMEM' asks
    for a setting. A pair of sizes names a shape only when the question asks which shape: 'do all
    slices need the same shape' is not answered by a line giving one slice's '2x4'."""
    if _PROCEDURAL_RE.search(question):
        return {}
    asks_size = bool(_ASKS_SIZE_RE.search(question))
    focus = focus_term(question)
    units: dict[str, re.Pattern[str]] = {}
    for word in (w.lower() for w in _WORD_RE.findall(question)):
        unit = ATTRIBUTE_UNITS.get(word)
        if unit is None or (word in MEMORY_NOUNS and not asks_size):
            continue
        if word in SHAPE_WORDS and word != focus:
            continue
        units[word] = unit
    return units


def asks_command(question: str) -> bool:
    """Whether the question states a situation, then asks only what to run or call ('tpu-inference logs
    "Couldn't find tuned sizes". What should I run?'): the earlier sentences say what it is about, the
    last one that the answer is a command, call or setting."""
    sentences = [x for x in re.split(r"(?<=[.!?])\s+", question.strip()) if x]
    return len(sentences) > 1 and bool(_ASKS_COMMAND_RE.match(sentences[-1]))


_FLAG_RE = re.compile(r"(?<![\w-])--([A-Za-z][\w-]*[A-Za-z0-9])")
# "When will X ...", "in which release ...", "what year ...": the question asks for a time or a release,
# given by a date, a year or a version number
_ASKS_WHEN_RE = re.compile(
    r"^\s*when\s+(?:will|would|did|was|were|is\s+\S+\s+(?:going|planned|expected|due|scheduled))\b|"
    r"\b(?:in|from|since|by|with)\s+(?:which|what)\s+(?:[\w/.-]+\s+)?(?:release|version|year|month)\b|"
    r"^\s*(?:which|what)\s+(?:release|year|month|date)\b|\bwhat\s+date\b|\bfirst\s+(?:supported|added|shipped)\b|"
    r"^\s*(?:which|what)\s+[\w/.-]+\s+(?:release|version)s?\b",
    re.I,
)


# "which JAX release", "what XPK version": whose release it is
_RELEASE_OF_RE = re.compile(r"\b(?:which|what)\s+([A-Za-z][\w/.-]*)\s+(?:release|version)s?\b", re.I)


def release_owner(question: str) -> str | None:
    """The product whose release or version a question asks for ('jax' in 'in which JAX release'):
    a version in a line about something else (a GKE node version) does not answer it."""
    match = _RELEASE_OF_RE.search(question)
    owner = match.group(1).lower() if match else None
    return owner if owner and owner not in QUESTION_WORDS and owner not in _FOCUS_STOP else None


def question_flags(question: str) -> list[str]:
    """Command-line flags the question writes with their dashes ('--max-slices'), lowercased without
    them: each is a name, which a line must give whole (its parts are common words)."""
    return list(dict.fromkeys(m.group(1).lower() for m in _FLAG_RE.finditer(question)))


# Command-line programs whose subcommands a question may write in prose ('xpk workload create'); the
# words of a path are common ('workload', 'create'), so a path no source writes whole still reads as known
COMMAND_TOOLS = ("gcloud", "gsutil", "helm", "kubectl", "tpu-ctl", "tpu-info", "tpu-tune", "xpk")
_TOOL_PATH_RE = re.compile(
    rf"(?<![\w./-])({'|'.join(map(re.escape, COMMAND_TOOLS))})((?:\s+[a-z][a-z0-9-]*)+)"
)
# words that end a subcommand path written in prose ('xpk workload migrate do ...', 'tpu-ctl drain to ...')
_PATH_END = STOPWORDS | frozenset(
    "did could should after before during command commands subcommand subcommands flag flags option "  # noqa: SIM905
    "options".split()
)


# adverbs that follow a program named as a subject ('kubectl still shows ...', 'gcloud now fails'): the word
# after the program is then no subcommand
PATH_ADVERBS = frozenset("still now also just already always never even then again sometimes often".split())  # noqa: SIM905


def is_adverb(word: str) -> bool:
    """Whether a word after a program's name is an adverb ('still', 'suddenly'), not a subcommand ('apply',
    'reply': '-ply' is a verb's ending)."""
    return word in PATH_ADVERBS or (len(word) > 5 and word.endswith("ly") and not word.endswith("ply"))


def command_paths(question: str) -> list[str]:
    """Subcommand paths the question writes in prose after a program's name ('gcloud compute tpus
    tpu-vm create', 'xpk workload migrate'). Each word of a path is common, so only a source writing
    the path whole knows it (`KnowledgeIndex.writes`), as a `--flag` is known only whole: a made-up
    subcommand next to real ones ('tpu-ctl drain' beside 'tpu-ctl pause') is otherwise matched word by
    word by the real one's line."""
    names: list[str] = []
    for m in _TOOL_PATH_RE.finditer(question):
        before = question[: m.start()].split()
        # 'an xpk workload': the program's name as a modifier, not a command
        if before and before[-1].lower() in _DETERMINERS:
            continue
        words: list[str] = []
        for word in m.group(2).split():
            if word in _PATH_END or is_adverb(word):
                break
            words.append(word)
        # 'what type does gcloud ... create use if': after an auxiliary the program is the subject, and
        # the word ending the path is the clause's verb unless 'do' follows ('what does xpk ... do')
        after = [
            w.strip("?.,;:!").lower() for w in question[m.start(2) :].split()[len(words) : len(words) + 1]
        ]
        if before and before[-1].lower() in AUXILIARIES and after != ["do"] and len(words) > 1:
            words.pop()
        # kubectl's grammar is 'kubectl COMMAND TYPE NAME' (https://kubernetes.io/docs/reference/kubectl/):
        # only the first word is a subcommand, the rest a resource ('kubectl delete node')
        if m.group(1) == "kubectl":
            words = words[:1]
        if words:
            names.append(" ".join([m.group(1), *words]))
    return list(dict.fromkeys(names))


# 'JAX 1.0', 'vllm-tpu 1.5', 'PyTorch/XLA v2.8': a name, then a release number with a dot; a number
# followed by a unit or a multiplier ('1.5 GHz', '2.0x') is an amount, not a release
_RELEASE_RE = re.compile(
    r"(?<![\w./-])([A-Za-z][\w/.-]*[A-Za-z0-9])\s+v?(\d+\.\d+(?:\.\d+)?)"
    r"(?![\w.%]|\.\d|\s*(?:[KMGTP]i?B|[KMGT]?Hz|[KMGTP]?FLOP|ms|s|x|%)\b)"
)


def releases_named(question: str) -> list[str]:
    """Releases the question names by product and number ('MaxText 2.0'), each as the phrase a source
    would write. A release is known only whole: each part is common ('MaxText' everywhere, '2.0' in any
    figure), so a release no source writes is matched by a line on another release or another '2.0'."""
    found = []
    for m in _RELEASE_RE.finditer(question):
        name = m.group(1)
        if name.lower() in STOPWORDS or name.lower() in QUESTION_WORDS:
            continue
        found.append(f"{name} {m.group(2)}")
    return list(dict.fromkeys(found))


# 'MODEL_IMPL=onnx', 'load_format="onnx"': a word value assigned to a name (a number is a setting's
# amount, which no source need repeat)
_ASSIGNED_RE = re.compile(r"(?<![\w-])[A-Za-z_][\w.-]*\s*=\s*[\"'`]?([A-Za-z][\w.-]*)")


def assigned_values(question: str) -> list[str]:
    """Word values the question assigns to a name ('onnx' in 'what does MODEL_IMPL=onnx select'),
    lowercased: like a flag, such a value is a name, so one that no source mentions in any form makes
    the question not covered, however well the option's own line matches ('auto, vllm or flax_nnx'
    says nothing about an onnx value)."""
    return list(dict.fromkeys(m.group(1).lower() for m in _ASSIGNED_RE.finditer(question)))


# 'Does tpu-info support exposing ...', 'can X allow resizing ...': a yes/no question on whether something
# can do an action, the action written as a gerund after a verb of permitting
_CAPABILITY_RE = re.compile(
    r"^\s*(?:does|do|can|will|is|are)\b[^?]*?\b(?:supports?|allows?|lets?|permits?)\s+([a-z]{3,}ing)\b", re.I
)


def capability_asked(question: str) -> str | None:
    """The action a 'does X support <verb>ing ...' question asks whether something can do ('exposing'),
    lowercased: a line on the same thing doing another action ('reads ... by scraping an endpoint') does
    not say whether it can do this one."""
    match = _CAPABILITY_RE.search(question)
    return match.group(1).lower() if match else None


# "on what date", "which year": a calendar date, not a release number
_ASKS_DATE_RE = re.compile(r"\b(?:what|which)\s+(?:date|day|year|month)\b", re.I)


def asks_date(question: str) -> bool:
    """Whether the question asks for a calendar date or year ('on what date was X released')."""
    return bool(_ASKS_DATE_RE.search(question))


def asks_when(question: str) -> bool:
    """Whether the question asks for a time or release ('when will X ship', 'in which JAX release')."""
    return bool(_ASKS_WHEN_RE.search(question))


# The kind of processor a question is asked for ('fastest on GPU', 'for CPUs'): a line stating its
# claim for another kind ('fastest on TPU') and never naming the one asked about does not answer it.
PLATFORMS = {
    "tpu": "tpu", "tpus": "tpu", "gpu": "gpu", "gpus": "gpu", "cuda": "gpu", "nvidia": "gpu",
    "rocm": "gpu", "cpu": "cpu", "cpus": "cpu",
}  # fmt: skip
_ON_PLATFORM_RE = re.compile(
    rf"\b(?:on|for|with|under|using)\s+(?:an?\s+|the\s+|my\s+)?({'|'.join(PLATFORMS)})\b", re.I
)


def platforms_asked(question: str) -> set[str]:
    """The processor kinds a question asks about ('gpu' in 'which is fastest on GPU')."""
    return {PLATFORMS[m.group(1).lower()] for m in _ON_PLATFORM_RE.finditer(question)}


# open-weight model families: a recipe, setting or figure given for one family is not given for another
# ('the Qwen3 recipe recommends temperature 0.7' says nothing of the Llama 3 recipe)
_FAMILY_RE = re.compile(
    r"(?<![\w-])(llama|qwen|gemma|mistral|mixtral|deepseek|gpt|falcon|bert|grok|olmo|phi)(?=[\d\s.,;:)/'-]|$)",
    re.I,
)


def model_families(text: str) -> set[str]:
    """The model families a text names ('qwen' in 'Qwen3-Coder', 'llama' in 'Llama 3 8B')."""
    return {m.group(1).lower() for m in _FAMILY_RE.finditer(_NOTE_RE.sub(" ", text))}


# "Which TPU generations support late binding", "on which TPUs": the answer is a list of generations
_ASKS_GENERATION_RE = re.compile(
    r"\bwhich\s+(?:tpu\s+|cloud\s+tpu\s+)?(?:generations?|tpus|tpu\s+(?:versions?|chips?|types?))\b", re.I
)


def asks_generation(question: str) -> bool:
    """Whether the question asks which TPU generations something holds for."""
    return bool(_ASKS_GENERATION_RE.search(question))


# "What read throughput does gcsfuse reach ...", "how many tokens per second does SGL-JAX serve ...": the
# phrase asked for, an auxiliary, then the question's subject
_SUBJECT_RE = re.compile(
    r"^\s*(?:what|which|how\s+(?:many|much))\b(?:\s+[^\s?]+){0,5}?\s+"
    r"(?:does|do|did|can|could|will|would|should|may|might|must|has|have)\s+([^?]+)",
    re.I,
)
# words that open a subject without naming it ('a', 'one project', 'each host', 'more chips')
_DETERMINERS = frozenset(
    "the a an one each every my our your its their this that these those any some all no more most "  # noqa: SIM905
    "many much few several both either neither other another such".split()
)
_PRONOUNS = frozenset("i we you it they he she there".split())  # noqa: SIM905


def question_subject(question: str) -> str | None:
    """The first word of the subject of a 'what X does S <verb>' or 'how many X can S <verb>' question
    ('gcsfuse' in 'what read throughput does gcsfuse reach on a v5e host'), past its determiners; None
    for a pronoun ('what should I set') or a question of another shape. The subject says whose value is
    asked for, so a line about something else that shares the other words does not answer it."""
    match = _SUBJECT_RE.search(question)
    if not match:
        return None
    for raw in match.group(1).split()[:4]:
        word = re.sub(r"'s$", "", raw.strip(",.;:()\"'`")).lower()
        if not word or word in _DETERMINERS:
            continue
        if word in _PRONOUNS or word in QUESTION_WORDS:
            return None
        tokens = tokenize(word)
        return tokens[0] if tokens else None
    return None


_YES_NO_HEAD_RE = re.compile(
    r"^\s*(?:does|do|can|will|would)\s+(?:the\s+|a\s+|an\s+)?((?:[\w./-]+\s+){0,5}?[\w./-]+)\s+"
    r"(?:work|works|support|supports|run|runs|handle|handles)\b",
    re.I,
)


def yes_no_head(question: str) -> str | None:
    """The last word of the subject of a 'does / can X work, support, run or handle ...' question ('detector'
    in 'Does the Pallas dynamic race detector work for Mosaic GPU kernels?'): the thing whose support is
    asked, which a line about another thing the question also names ('H100') does not answer."""
    match = _YES_NO_HEAD_RE.search(question)
    if not match:
        return None
    tokens = tokenize(match.group(1).split()[-1])
    return tokens[0] if tokens else None


# "Which PRNG is fastest on GPU", "the cheapest way to ...": a superlative of speed or price asks for a
# comparison, which a line states by the adjective in some degree or by its noun; a line listing the
# implementations without comparing them does not say which is fastest
SUPERLATIVES = {
    "fastest": ("fast", "faster", "speed", "quick", "quicker", "quickest"),
    "quickest": ("quick", "quicker", "fast", "faster", "fastest"),
    "slowest": ("slow", "slower"),
    "cheapest": ("cheap", "cheaper", "price", "cost"),
}


def superlatives_asked(question: str) -> list[str]:
    """The superlatives of speed or price the question asks by ('fastest' in 'which PRNG is fastest')."""
    return [w for w in dict.fromkeys(re.findall(r"[a-z]+", question.lower())) if w in SUPERLATIVES]


# a one-letter name ('an R training loop'): tokenising drops it, so the
# support share never sees it; 'I' and 'A' open sentences and are left out, as is 'C' of 'C++'
_LETTER_NAME_RE = re.compile(r"(?<![\w.\-/'`+])([B-HJ-Z])(?![\w.\-/'`+])")


def letter_names(text: str) -> set[str]:
    """The one-letter capital names a text uses on their own ('R' in 'an R training loop')."""
    return set(_LETTER_NAME_RE.findall(_QUOTED_RE.sub(" ", text)))


def whole_scope(question: str) -> str | None:
    """The Pod or slice a question asks a total of ('the combined peak across all the chips of a v4
    Pod', 'an entire Trillium pod'): the chips it names are what is summed, not the unit asked."""
    match = _WHOLE_RE.search(question)
    return SCOPES[(match.group(1) or match.group(2)).lower()] if match else None


# "Why does X ...", "... only 50% of the bandwidth, why?": the question asks for a cause
_ASKS_WHY_RE = re.compile(r"\bwhy\b", re.I)


# "When does X ...", "when is X ...": the question asks under which condition, not at what time ('when will
# X ship' asks for a date: `asks_when`)
_ASKS_CONDITION_RE = re.compile(r"^\s*when\s+(?:does|do|is|are|can|should|would|must)\b", re.I)


def asks_condition(question: str) -> bool:
    """Whether the question asks under which condition something happens ('when does a v4 slice get
    wraparound links'), rather than for a date or release."""
    return bool(_ASKS_CONDITION_RE.search(question)) and not asks_when(question)


def asks_why(question: str) -> bool:
    """Whether the question asks for a cause ('why does ...', '..., why?')."""
    return bool(_ASKS_WHY_RE.search(question))


# "What kinds of semaphores ...", "which semaphore types ...": the question asks for the members of a kind;
# a singular 'type' names one ('which GKE machine type', 'which TPU type') unless 'of' follows
_ASKS_KINDS_RE = re.compile(
    r"^\s*(?:what|which)\s+(?:[\w-]+\s+){0,2}?(?:(?:kinds|types|sorts|varieties)\b|(?:kind|type|sort)\s+of\b)",
    re.I,
)


def asks_kinds(question: str) -> bool:
    """Whether a what/which question asks for the kinds of something ('what kinds of semaphores can a
    kernel allocate'): a line listing them answers it, not one using a single kind."""
    return bool(_ASKS_KINDS_RE.search(question))


# "Using xpk, how do I ...", "On GKE, if ...": a leading phrase naming the tool or platform the question is
# asked in, ended by a comma
_FRAME_RE = re.compile(r"^\s*(?:using|with|on|in|inside|via|through|from|for|under)\s+([^,?;]{2,60}),", re.I)
_FRAME_WORD_RE = re.compile(r"[A-Za-z][\w-]*")


def frame_names(question: str) -> set[str]:
    """The names in a leading 'Using X, / On X, / In X,' phrase of the question: capitalised words, words
    with a digit and known programs ('xpk', 'kubectl'); not a lone letter (the 'C' of 'C++'). The phrase
    sets the scene the rest of the question is asked in, so a line of the same topic that never names it
    answers it for another tool."""
    match = _FRAME_RE.match(question)
    if not match:
        return set()
    return {
        word.lower()
        for word in _FRAME_WORD_RE.findall(match.group(1))
        if len(word) > 1
        and word.lower() not in STOPWORDS | QUESTION_WORDS
        and (word[0].isupper() or word.lower() in COMMAND_TOOLS or any(ch.isdigit() for ch in word))
    }


# a number standing on its own in the question: not part of a name ('v5e', 'bf16'), a shape ('2x2x4') or a
# ratio ('1.5x'); in a line, one not glued after letters ('TP2', 'v7x'), since '2 chips' or '8B' still give it
_OWN_NUMBER_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?!\w|\.\d)")


_LABEL_RE = re.compile(r"([A-Za-z][\w-]*)\s+$")


def question_numbers(question: str) -> set[str]:
    """The values a question writes as numbers on their own ('TP=2', 'a batch of 16', '8 chips'); a number
    right after a word other than a function word labels a thing ('NUMA node 0', 'PyTorch 2', 'Llama 3'),
    which every line about that thing repeats, so it says nothing of the value asked about."""
    numbers = set()
    for match in _OWN_NUMBER_RE.finditer(question):
        label = _LABEL_RE.search(question[: match.start()])
        if label is None or label.group(1).lower() in STOPWORDS:
            numbers.add(match.group(1))
    return numbers


COUNT_WORDS = {"one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "eight": 8, "sixteen": 16}
# a spelled count and the next words up to a stop word ('one Trillium chip'); not a compound's first part
# ('single-host' is a kind of slice, not a count) nor 'one of / one or / one another'
_SPELLED_COUNT_RE = re.compile(
    rf"\b({'|'.join(COUNT_WORDS)})\b(?![-\w])((?:\s+(?!of\b|or\b|another\b|by\b)[A-Za-z][\w-]*){{1,3}})", re.I
)


def counts_asked(question: str) -> set[tuple[int, str]]:
    """The counts a question spells in words with the stems of the words after each ('one Trillium chip'
    -> (1, 'trillium'), (1, 'chip')): which of them is the counted noun is left to the line."""
    counted: set[tuple[int, str]] = set()
    for match in _SPELLED_COUNT_RE.finditer(question):
        number = COUNT_WORDS[match.group(1).lower()]
        for word in match.group(2).split():
            if word.lower() in STOPWORDS:
                break
            counted.add((number, stem(word.lower())))
    return counted


# 'TPU v5 lite', 'v5 lite pod', 'v5-lite': TPU v5e by the words of its accelerator type ('v5litepod') written
# apart; read as words, 'v5' names v5p (whose sheet is also called 'tpu v5') and 'lite' nothing. A 'pod'
# after it stays a word: 'a 256-chip TPU v5 lite pod' asks about the Pod
_V5_LITE_RE = re.compile(r"\bv5[\s-]?lite\b", re.I)


def generation_names(question: str) -> str:
    """The question with TPU v5e's spelled-apart names ('TPU v5 lite pod') written 'v5e', the name the
    sheets give it: as words, 'v5' matched v5p's lines and left the v5e line missing a specific term."""
    return _V5_LITE_RE.sub("v5e", question)
