"""Which lines to quote: candidate spans, their scores and bonuses, and the runner-up lines quoted beside
the first.

Kept apart from the gate so a ranking weight is found in one place; it reads the question through
`question_reading` and uses the gate's checks (`answer_gate`) to score down a line the gate would refuse
(`FAULT_MISS`) and to hold runner-up lines to them (`quote_faults`); the gate never uses the ranking (see
`answer` for the design).
"""

from __future__ import annotations

import re

from tpu_runtime.knowledge.answer_gate import (
    _CODE_RE,
    Span,
    _coverage,
    _heading,
    _missing_specific,
    _present,
    _terms,
    gives_reason,
    headed_by,
    misplaced_terms,
    product_fault,
    quote_faults,
    span_faults,
    subject_fault,
    unasked_terms,
    width_names,
)
from tpu_runtime.knowledge.generation_clauses import generations_named
from tpu_runtime.knowledge.lexical import STOPWORDS, defines, definition_subject, tokenize
from tpu_runtime.knowledge.models import Passage
from tpu_runtime.knowledge.question_reading import (
    _NOTE_RE,
    _WHOLE_RE,
    _WORD_RE,
    QUESTION_WORDS,
    SCOPES,
    asks_behaviour,
    asks_command,
    asks_condition,
    asks_kinds,
    asks_name,
    asks_setting,
    asks_why,
    counts_asked,
    focus_term,
    frame_names,
    procedure_terms,
    question_numbers,
    whole_scope,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex
from tpu_runtime.knowledge.words import family, stem

# passages whose support is judged and whose spans may be quoted (dev: 8 and 10 tie; 12 and 16 answer one
# fewer once the kb20 facts are in; 10 is also the evaluation's ranking depth: both weigh the same ones)
SUPPORT_PASSAGES = 10
SPECIFIC_MISS = 0.3  # span score factor when the span and its heading lack a specific question term
RANK_PENALTY = 0.05  # span score discount per rank of its passage (no vectors)
COSINE_PENALTY = 1.0  # span score discount per unit of cosine below the closest passage (hybrid)
DENSITY_BONUS = 0.5  # span score bonus for spans made mostly of question terms
CURATED_SPAN_BONUS = 1.1  # fact-sheet lines win near ties with docstrings
HEADING_SHARE = 0.5  # weight of question terms that only a span's heading (not the span) names
SCOPE_MISS = 0.5  # span score factor of a line giving a figure per another unit than the question's
# span score factor of a line the gate would reject as the quote for lacking the attribute or the number
# asked for (`span_faults`): a line that gives them is preferred to one that only shares more words
FAULT_MISS = 0.3
DEFINITION_BONUS = 1.5  # span score factor of a line opening with the X of "what is X" as its subject
SUMMARY_BONUS = 2.5  # span score factor of a symbol's docstring summary when the question asks what it is
REASON_BONUS = 1.5  # span score factor of a line stating a cause when the question asks why
# span score factor of a line stating a condition ('when', 'if', 'unless') when the question asks under
# which condition something happens ('when does X ...'), as `REASON_BONUS` is for 'why'
CONDITION_BONUS = 1.5
PROCEDURE_BONUS = 1.25  # span score factor of a line whose code names the action or term a "how do I" asks
LIST_BONUS = 1.5  # span score factor of a line listing several items when the question asks which kinds
# span score factor of a line assigning a value when the question asks what to set, or how to make a program
# behave otherwise ('how do I tell JAX where to keep ...'; `asks_behaviour`)
SETTING_BONUS = 1.25
# span score factor of a line giving a numeric threshold ('more than 4096 chips', 'fewer than 4096') when the
# question asks at what scale or point one choice beats another (`asks_threshold`, `gives_threshold`)
THRESHOLD_BONUS = 1.5
# span score factor of a line writing an amount per the unit the question asks it per ('int8 ops per byte'
# met by 'operations per byte' or 'FLOP/byte'; `units_asked`, `gives_unit`): 'ops' for 'operations' had left
# the answering line second to one sharing more words that gives a figure per another thing
UNIT_BONUS = 1.25
# span score factor of a line naming no TPU generation (nor its heading) when the question names one and
# another candidate line names it: a question saying 'Trillium' escapes `SPECIFIC_MISS`, which only
# digit names ('v6e') trigger (`generation_unnamed`)
GENERATION_MISS = 0.8
# span score factor of a line repeating a value the question writes as a number ('TP=2', 'a batch of 16'),
# which tokenising drops as a term when short: 'why TP=2 on TPU7x' quoted a line on the CP degree over the
# line giving 'a tensor-parallel degree of 2'
NUMBER_BONUS = 1.25
# span score factor of a line writing in digits the count the question spells in words of the same thing
# ('one Trillium chip' met by '1 chip', 'two VMs' by '2 VMs'; `counts_asked`, `gives_count`): the line
# giving a count per chip had outranked the sub-host line that lists the 1-chip machine type
COUNT_BONUS = 1.5
# span score factor of a line naming none of the names a leading 'Using xpk, ...' / 'On GKE, ...' phrase of
# the question sets its scene with, when another candidate line names one (`frame_unnamed`)
FRAME_MISS = 0.8
MAX_QUOTE_CHARS = 400
# a second line is quoted too when it scores at least this share of the first one's (dev fold A chose 0.9 of
# 0.95/0.9/0.85/0.8: docs/kb-accuracy.md)
RUNNER_UP_SHARE = 0.9
# at most this many lines quoted beside the first: a third within the share is as much a tie as the second
RUNNER_UPS = 2
# lines after the first looked at for those places: lines of one section often restate one fact, so a close
# line of another section may take a place before a closer one of the first line's section
RUNNER_UP_SCAN = 5
# a close line sharing at least this share of its distinct content words with a line already quoted restates
# it and is passed over (`restates`; dev fold A chose 0.6 of 0.5/0.6: the same answers, 0.6 the stricter)
RESTATED_SHARE = 0.6
_PER_RE = re.compile(r"\bper[\s-]+(chip|host|pod|slice|vm|tensorcore|core)\b", re.I)
# "What is X (for)", "what does X do": the question asks for a definition
_ASKS_DEFINITION_RE = re.compile(r"^\s*what\s+(?:is|are|does|do)\b", re.I)
_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[*])")
_LEAD_RE = re.compile(r"^\s*(?:[-*+>]\s+|\d+[.)]\s+|\|\s*)*")
# a source note that ends a line: "([source](URL), checked DATE)", "(source: URL, ...)", "(see ...)"
_TRAIL_RE = re.compile(r"\s*\((?=\[?source\]?[:(]|see |https?://)(?:[^()]|\([^()]*\))*\)[.;]?\s*$", re.I)


def gives_procedure(wanted: list[str], span: str) -> bool:
    """A line whose code span (a call, command or setting) names one of `wanted`: it shows how, where a
    line sharing as many words may only describe the thing ('the backend is implemented in ...')."""
    code = " ".join(_CODE_RE.findall(span))
    if not code:
        return False
    terms = _terms(code)
    return any(_present(terms, w) for w in wanted)


# a value given in code: `name=value`, a `--flag`, or an environment variable (`ENABLE_X`)
_ASSIGNS_RE = re.compile(r"`[^`]*=[^`]*`|`--[\w-]+|`[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")


def gives_assignment(span: str) -> bool:
    """A line whose code assigns a value, passes a flag or names an environment variable: what a question
    asking what to set wants, where a line about the same thing may only describe it."""
    return bool(_ASSIGNS_RE.search(span))


def _density(weights: dict[str, float], span: str) -> float:
    """Share of the span's distinct words that are question terms."""
    words = {t for t in tokenize(span) if t not in QUESTION_WORDS}
    if not words:
        return 0.0
    marks = {family(t) for t in weights} - {None}
    return sum(
        1 for w in words if family(w) in marks or any(w == t or stem(w) == stem(t) for t in weights)
    ) / len(words)


def candidate_spans(text: str) -> list[str]:
    """Sentences and fact lines of a passage, each an exact substring of it."""
    spans: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        lines = block.split("\n")
        # a wrapped paragraph reads as one sentence stream; bullets, tables and code are line-based
        if len(lines) > 1 and not any(_LEAD_RE.match(line).group(0) for line in lines[1:]):  # type: ignore[union-attr]
            units = [block]
        else:
            units = lines
        for unit in units:
            sentences = _sentences(unit)
            # a fact line is one fact: when it runs to several sentences, the whole line is a candidate
            # too, so a question answered across its sentences can quote all of them
            pieces = [*sentences, unit] if len(sentences) > 1 else sentences
            for sentence in pieces:
                lead = _LEAD_RE.match(sentence)
                cleaned = sentence[lead.end() if lead else 0 :]
                cleaned = _TRAIL_RE.sub("", cleaned).strip().rstrip(",;")
                if sentence is unit and len(cleaned) > MAX_QUOTE_CHARS:
                    continue
                if len(cleaned) >= 12 and len(_WORD_RE.findall(cleaned)) >= 3 and cleaned in text:
                    spans.append(cleaned[:MAX_QUOTE_CHARS] if cleaned[:MAX_QUOTE_CHARS] in text else cleaned)
    # a fact line whose source note reads as a second sentence yields the same span twice: score it once
    return list(dict.fromkeys(spans))


def _sentences(unit: str) -> list[str]:
    """Split at sentence ends, but never inside a `code span` (log lines hold full stops)."""
    pieces: list[str] = []
    start = 0
    for match in _SPLIT_RE.finditer(unit):
        if unit.count("`", 0, match.start()) % 2 == 0:
            pieces.append(unit[start : match.start()])
            start = match.end()
    pieces.append(unit[start:])
    return pieces


def best_span(
    weights: dict[str, float],
    passages: list[Passage],
    specific: list[str] | None = None,
    units: dict[str, re.Pattern[str]] | None = None,
    question: str | None = None,
) -> Span | None:
    """The span that best covers the question; one lacking a specific term of it (in the span or its
    heading) is discounted, so a line about v3 does not answer a question about v4."""
    ranked = ranked_spans(weights, passages, specific, units, question)
    return ranked[0] if ranked else None


def scope_mismatch(question: str, span: str) -> bool:
    """Whether the span gives its figure per a unit (chip, host, Pod, slice, VM, TensorCore) that the
    question does not name, while never naming the one the question does; for a question asking a Pod's
    or slice's total (`whole_scope`), any figure per a smaller unit that the line does not also give for
    the whole ('a per-chip table: a 16x16x16 pod, ... 2.75e14 FLOP/s')."""
    asked = {SCOPES[w] for w in (t.lower() for t in _WORD_RE.findall(question)) if w in SCOPES}
    if not asked:
        return False
    per = {SCOPES[m.group(1).lower()] for m in _PER_RE.finditer(span)}
    whole = whole_scope(question)
    if whole and per - {whole}:
        return not (_WHOLE_RE.search(span) or re.search(rf"\bper[\s-]+{whole}\b", span, re.I))
    named = {SCOPES[w] for w in (t.lower() for t in _WORD_RE.findall(span)) if w in SCOPES}
    return bool(per - asked) and not (asked & named)


def summary_passages(question: str, passages: list[Passage]) -> set[str]:
    """Chunk ids of docstring summaries that define what the question asks about: for "what is X /
    what does X do", the first retrieved paragraph (lowest line) of each symbol the question names."""
    if not _ASKS_DEFINITION_RE.search(question):
        return set()
    asked = _terms(question)
    first: dict[str, Passage] = {}
    for passage in passages[:SUPPORT_PASSAGES]:
        if passage.kind != "package" or not passage.symbol:
            continue
        tail = passage.symbol.rsplit(".", 1)[-1].lower()
        if tail not in asked:
            continue
        held = first.get(passage.symbol)
        if held is None or (passage.line or 0) < (held.line or 0):
            first[passage.symbol] = passage
    return {p.chunk_id for p in first.values()}


_GIVES_CONDITION_RE = re.compile(r"\b(?:when|whenever|if|unless|once|as\s+long\s+as)\b", re.I)


def gives_condition(span: str) -> bool:
    """Whether the line states a condition ('when', 'if', 'unless', 'once') or a numeric bound
    (`gives_threshold`: 'a job needing fewer than 4096 chips' says when as well), its source note aside."""
    return gives_threshold(span) or bool(_GIVES_CONDITION_RE.search(_NOTE_RE.sub(" ", span)))


# "At what scale should I switch to Multislice?", "when is Multislice better than one big slice?", "at what
# batch size does X pay off": the answer is a size or count past which one choice wins
_ASKS_THRESHOLD_RE = re.compile(
    r"\bat\s+what\s+(?:scale|size|point|number|count|length|batch(?:\s+size)?)\b|"
    r"^\s*when\s+(?:is|are|does|do|should|would)\b[^?]*\b(?:better|worse|worth|faster|slower|cheaper|"
    r"preferable|pays?\s+off|switch|move)\b|"
    r"\bwhen\s+should\s+(?:i|we|you)\s+(?:switch|move|use|pick|choose|prefer)\b",
    re.I,
)


def asks_threshold(question: str) -> bool:
    """Whether the question asks at what scale or point one choice beats another, which a size or count
    past which it does answers ('a job needing fewer than 4096 chips'), where a line recommending the
    choice in words ('when a job is too large for one slice') shares as many of the question's words."""
    return bool(_ASKS_THRESHOLD_RE.search(question))


# 'more than 4096', 'fewer than about 8', 'above 1,000', 'at least 64', '64 chips or more'
_GIVES_THRESHOLD_RE = re.compile(
    r"\b(?:more|fewer|less|greater|larger|smaller|bigger|higher|lower)\s+than\s+(?:about\s+|around\s+|roughly\s+)?"
    r"\d|\b(?:above|below|beyond|over|under|exceeds?|exceeding|at\s+least|at\s+most|up\s+to)\s+"
    r"(?:about\s+|around\s+|roughly\s+)?\d|\d[\d,.]*\s+(?:[A-Za-z-]+\s+)?or\s+(?:more|fewer|less|larger|smaller|above|below)\b",
    re.I,
)


_ASKED_PER_RE = re.compile(r"\bper\s+([a-z]{3,})\b", re.I)
# rates over time are read by the time checks; 'per step' and the like name no unit of the figure
_TIME_WORDS = {"second", "minute", "hour", "day", "week", "month", "year", "step", "iteration"}


def units_asked(question: str) -> set[str]:
    """Stems of the units the question asks an amount per ('ops per byte' -> byte), time units and
    function words ('per the docs') aside."""
    words = (m.lower() for m in _ASKED_PER_RE.findall(question))
    return {stem(w) for w in words if stem(w) not in _TIME_WORDS and w not in STOPWORDS | QUESTION_WORDS}


_LINE_PER_RE = re.compile(r"(?:\bper\s+|[A-Za-z]/)([a-z]{3,})\b", re.I)


def gives_unit(units: set[str], span: str) -> bool:
    """Whether the line writes an amount per one of `units` ('per byte', 'FLOP/byte'), its source note
    aside: the unit asked is the one thing a line giving the right figure cannot word otherwise."""
    return any(stem(m.lower()) in units for m in _LINE_PER_RE.findall(_NOTE_RE.sub(" ", span)))


def gives_threshold(span: str) -> bool:
    """Whether the line gives a numeric bound ('more than 4096 chips', '64 chips or more'), its source note
    aside."""
    return bool(_GIVES_THRESHOLD_RE.search(_NOTE_RE.sub(" ", span)))


# "REGULAR, DMA and BARRIER", "`a`, `b`, or `c`": three or more one-word items; items of several words
# are read in a clause joined by commas ('allocate semaphores, for barriers or for tracking copies')
_ITEM = r"[\w`.'()/-]+"
_GIVES_LIST_RE = re.compile(rf"{_ITEM},\s+{_ITEM},?\s+(?:and|or)\s+[\w`]", re.I)


def gives_list(span: str) -> bool:
    """Whether the line lists three or more one-word items ('REGULAR, DMA and BARRIER members')."""
    return bool(_GIVES_LIST_RE.search(_NOTE_RE.sub(" ", span)))


def generation_unnamed(question: str, candidates: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (heading, line) candidates that name no TPU generation, when the question names one and some
    other candidate names one it asks about; empty otherwise. A generation written by its codename
    ('Trillium', 'Ironwood') is no specific term, so a generic line ('request preemptible quota for Spot
    VMs') outranked the one giving v6e's preemptible quota for 'spot Trillium chips'."""
    asked = generations_named(question)
    if not asked:
        return set()
    named = {pair: generations_named("\n".join(pair)) for pair in candidates}
    if not any(gens & asked for gens in named.values()):
        return set()
    return {pair for pair, gens in named.items() if not gens}


def frame_unnamed(question: str, candidates: list[tuple[str, str]]) -> set[tuple[str, str]]:
    """The (heading, line) candidates naming none of the question's `frame_names` when another candidate
    names one; empty otherwise. 'Using xpk, how do I keep a Pathways job alive when slices go away' quoted
    a line on elastic training that never names xpk over the line giving xpk's `--elastic-slices`."""
    asked = frame_names(question)
    if not asked:
        return set()
    named = {pair: any(_present(_terms("\n".join(pair)), n) for n in asked) for pair in candidates}
    if not any(named.values()):
        return set()
    return {pair for pair, hit in named.items() if not hit}


_LINE_NUMBER_RE = re.compile(r"(?<![A-Za-z\d.])(\d+(?:\.\d+)?)(?!\d)")


def repeats_number(numbers: set[str], span: str) -> bool:
    """Whether the line gives one of `numbers` as a number of its own, its source note aside."""
    return bool(numbers & set(_LINE_NUMBER_RE.findall(_NOTE_RE.sub(" ", span))))


_DIGIT_COUNT_RE = re.compile(r"(?<![\w.])(\d+)(?:\s+|-)([A-Za-z]+)")


def gives_count(counted: set[tuple[int, str]], span: str) -> bool:
    """Whether the line writes one of `counted` in digits before the same noun ('1 chip', '2-host'),
    its source note aside."""
    text = _NOTE_RE.sub(" ", span)
    return any((int(n), stem(w.lower())) in counted for n, w in _DIGIT_COUNT_RE.findall(text))


def asked_specific(question: str, specific: list[str]) -> list[str]:
    """The specific terms a line is discounted for lacking (`SPECIFIC_MISS`): those the gate wants a quote
    to name, not those it lets a quote lack (`unasked_terms`: an example of the input, a name told only in
    the story before the asking clause), else a line restating the story's name outranks the line that
    answers ('my preemptible v4 VM went away overnight; what status ...': the status line names no v4)."""
    unasked = unasked_terms(question)
    return [t for t in specific if t not in unasked]


def ranked_spans(
    weights: dict[str, float],
    passages: list[Passage],
    specific: list[str] | None = None,
    units: dict[str, re.Pattern[str]] | None = None,
    question: str | None = None,
) -> list[Span]:
    """Every candidate span of the weighed passages with its score, best first; given the question, a
    docstring summary of the symbol it asks about (`summary_passages`) gets `SUMMARY_BONUS`."""
    spans: list[Span] = []
    summaries = summary_passages(question, passages) if question else set()
    subject = definition_subject(question) if question else None
    cosines = [p.cosine for p in passages[:SUPPORT_PASSAGES] if p.cosine is not None]
    top_cosine = max(cosines, default=None)
    focus = focus_term(question) if question else None
    why = bool(question and asks_why(question))
    condition = bool(question and asks_condition(question))
    procedure = procedure_terms(question, list(weights)) if question else []
    kinds = bool(question and asks_kinds(question))
    setting = bool(question and (asks_setting(question) or asks_behaviour(question)))
    threshold = bool(question and asks_threshold(question))
    per_units = units_asked(question) if question else set()
    # a number type asked by width and kind ('8-bit float') is named by the line's short name ('FP8')
    widths = width_names(question) if question else {}
    weighed = passages[:SUPPORT_PASSAGES]
    if specific and question:
        specific = asked_specific(question, specific)
    # each passage's heading and candidate lines, split once for the generation check and the scoring
    split = [(passage, _heading(passage), candidate_spans(passage.text)) for passage in weighed]
    numbers = question_numbers(question) if question else set()
    counted = counts_asked(question) if question else set()
    pairs = [(heading, sp) for _, heading, lines in split for sp in lines]
    unnamed = generation_unnamed(question, pairs) if question else set()
    unframed = frame_unnamed(question, pairs) if question else set()
    for rank, (passage, heading, lines) in enumerate(split):
        for span in lines:
            # the span's own words count fully, terms only its heading names count part: every line under
            # a matching heading shares the heading, so it must not decide between them
            # an attribute the span names by a value in its unit counts as named
            by_value = sum(
                weights.get(w, 0.0)
                for w, unit in (units or {}).items()
                if unit.search(span) and not _present(_terms(f"{heading}\n{span}"), w)
            )
            # so does the attribute asked for when a one-word compound of the span ends in it ('ramdisk')
            if focus and headed_by(focus, span) and not _present(_terms(f"{heading}\n{span}"), focus):
                by_value += weights.get(focus, 0.0)
            own = _coverage(weights, span, by_value)
            overlap = own + HEADING_SHARE * (_coverage(weights, f"{heading}\n{span}", by_value) - own)
            if top_cosine is not None and passage.cosine is not None:
                # a line from a passage further in meaning from the question than the closest one pays
                overlap *= max(0.0, 1.0 - COSINE_PENALTY * (top_cosine - passage.cosine))
            else:
                overlap /= 1.0 + RANK_PENALTY * rank
            if specific and any(
                not (t in widths and widths[t].search(span))
                for t in _missing_specific(specific, f"{heading}\n{span}")
            ):
                overlap *= SPECIFIC_MISS
            if question and scope_mismatch(question, span):
                overlap *= SCOPE_MISS
            # not the action check: any code span passes it, so a line giving some other command would
            # outrank the line that describes the thing asked about
            if question and (
                span_faults(question, span, heading, action=False)
                or misplaced_terms(question, span, heading, list(weights))
                or product_fault(question, span, passage)
                or subject_fault(question, passage, weighed)
            ):
                overlap *= FAULT_MISS
            # among equally covering spans, the one whose words are mostly the question's reads best
            overlap *= 1.0 + DENSITY_BONUS * _density(weights, span)
            if passage.kind == "curated":  # vetted restatements win near ties
                overlap *= CURATED_SPAN_BONUS
            if passage.chunk_id in summaries:
                overlap *= SUMMARY_BONUS
            if subject and defines(subject, span):
                overlap *= DEFINITION_BONUS
            if why and gives_reason(span):
                overlap *= REASON_BONUS
            if condition and gives_condition(span):
                overlap *= CONDITION_BONUS
            if procedure and gives_procedure(procedure, span):
                overlap *= PROCEDURE_BONUS
            if kinds and gives_list(span):
                overlap *= LIST_BONUS
            if setting and gives_assignment(span):
                overlap *= SETTING_BONUS
            if threshold and gives_threshold(span):
                overlap *= THRESHOLD_BONUS
            if per_units and gives_unit(per_units, span):
                overlap *= UNIT_BONUS
            if (heading, span) in unnamed:
                overlap *= GENERATION_MISS
            if (heading, span) in unframed:
                overlap *= FRAME_MISS
            if numbers and repeats_number(numbers, span):
                overlap *= NUMBER_BONUS
            if counted and gives_count(counted, span):
                overlap *= COUNT_BONUS
            spans.append(Span(span, passage, overlap))
    # stable: among equal scores the earlier (higher-ranked) span stays first
    spans.sort(key=lambda sp: -sp.overlap)
    return spans


def runner_ups(
    index: KnowledgeIndex,
    question: str,
    ranked: list[Span],
    specific: list[str],
    terms: list[str],
    names: list[str],
    passages: list[Passage] | None = None,
) -> list[Span]:
    """The lines ranked after the quoted one, up to `RUNNER_UPS`, while each scores within `RUNNER_UP_SHARE`
    of it, repeats no line already quoted and would pass the same checks: the ranking cannot tell such
    lines apart, so the reader gets them all rather than a coin toss. A line failing stops the run, so a
    third line is quoted only beside the second. Up to `RUNNER_UP_SCAN` such lines are looked at and those
    of another section than the first line's fill the places first (`other_sections_first`)."""
    if len(ranked) < 2 or ranked[0].overlap <= 0:
        return []
    kept: list[Span] = []
    for span in ranked[1 : 1 + RUNNER_UP_SCAN]:
        if span.overlap < RUNNER_UP_SHARE * ranked[0].overlap:
            break
        if span.text in {ranked[0].text, *(k.text for k in kept)} or span.text not in span.passage.text:
            break
        if quote_faults(index, question, span, specific, terms, names, passages):
            break
        # another source's wording of a line already quoted: its place goes to the next close line
        if any(restates(span.text, other.text) for other in (ranked[0], *kept)):
            continue
        kept.append(span)
    return other_sections_first(ranked[0], kept, RUNNER_UPS)


# 'what do I call then', 'what should I run': the answer is a call or a command (`asks_command` wants a story
# before such a last sentence; a lead-in before a colon is no sentence)
_ASKS_CALL_RE = re.compile(
    r"\bwhat\s+(?:do|should|can|must)\s+(?:i|we|you)\s+(?:need\s+to\s+)?(?:call|run)\b", re.I
)
# 'which tool generates them', 'what flag turns it off', anywhere in the question (after a story too)
_ASKS_CODE_THING_RE = re.compile(
    r"\b(?:which|what)\s+(?:[\w/.-]+\s+){0,2}?(?:tool|command|flag|variable|function|call)s?\b", re.I
)
# a name joined by '_', '.' or '-' (`metrics_report`, `tpu-tune`)
_JOINED_RE = re.compile(r"\w[_.-]\w")
# whether the first line's place goes to the next line of its sheet when the first restates in code only
# the question's names and the next writes the name asked (`next_line_answer`; off to compare)
NEXT_LINE_ANSWER = True


def asks_code(question: str) -> bool:
    """Whether the question asks for a name a line writes in code: a flag, variable, function, tool,
    command or call ('which tool generates them', 'what do I call then', 'what do I set')."""
    return bool(
        asks_name(question)
        or asks_command(question)
        or asks_setting(question)
        or _ASKS_CALL_RE.search(question)
        or _ASKS_CODE_THING_RE.search(question)
    )


def new_code(asked: frozenset[str], line: str) -> bool:
    """Whether the line's code spans (source note aside) write a word of three or more letters that the
    question, read as `asked` (`_terms`), does not: `tpu-tune` for a question quoting the log line
    `Couldn't find tuned sizes`, where the line quoting that log line back adds no name. A joined name
    (`--jax_export_calling_convention_version`) is new unless the question writes it joined: made of the
    question's words, it is still the name asked for."""
    for code in _CODE_RE.findall(_NOTE_RE.sub(" ", line)):
        for token in tokenize(code):
            if len(token) < 3 or token.isdigit() or token in STOPWORDS:
                continue
            joined = bool(_JOINED_RE.search(token))
            if (token not in asked and stem(token) not in asked) if joined else not _present(asked, token):
                return True
    return False


def next_line_answer(index: KnowledgeIndex, question: str, ranked: list[Span]) -> list[Span]:
    """`ranked` with its first line replaced by the next line of its file and section when the question
    asks a name in code (`asks_code`), the first line writes code but none the question lacks (`new_code`:
    it restates the question's names) and the next line's code does. A sheet often states the situation
    in one bullet ('the log line `Couldn't find tuned sizes for key...` means ...') and names the tool or
    call in the next, which shares fewer of the question's words and need not be retrieved. The next line
    takes the first one's score and place; no line is added, and the gate judges it as it would the first."""
    if not NEXT_LINE_ANSWER or not ranked or not asks_code(question):
        return ranked
    first = ranked[0]
    asked = _terms(question)
    if not _CODE_RE.search(_NOTE_RE.sub(" ", first.text)) or new_code(asked, first.text):
        return ranked
    after = index.next_line(first.passage)
    if after is None:
        return ranked
    line = next((sp for sp in candidate_spans(after.text) if new_code(asked, sp)), None)
    if line is None:
        return ranked
    return [Span(line, after, first.overlap), *(sp for sp in ranked[1:] if sp.text != line)]


def restates(line: str, other: str) -> bool:
    """Whether two lines share at least `RESTATED_SHARE` of their distinct content words: the sheets often
    give one fact twice, from two pages ('When a node of a multi-host TPU slice on GKE needs repair, GKE
    shuts down every TPU VM ...' under two headings), and quoting both spends a runner-up's place."""
    ours = {t for t in tokenize(line) if t not in STOPWORDS}
    theirs = {t for t in tokenize(other) if t not in STOPWORDS}
    if not ours or not theirs:
        return False
    return len(ours & theirs) / len(ours | theirs) >= RESTATED_SHARE


def other_sections_first(first: Span, close: list[Span], places: int) -> list[Span]:
    """Up to `places` of the `close` lines (best first), those of a section other than the first line's
    taken before those of its own: a sheet's section often says one thing in several lines, so in a near tie
    the reader gains more from another section's line (SparseCores' own section restating what they suit,
    while the generations page says they serve embeddings). Returned in rank order."""
    own = (first.passage.path, first.passage.section)
    other = [sp for sp in close if (sp.passage.path, sp.passage.section) != own]
    same = [sp for sp in close if (sp.passage.path, sp.passage.section) == own]
    picked = {id(sp) for sp in (other + same)[:places]}
    return [sp for sp in close if id(sp) in picked]
