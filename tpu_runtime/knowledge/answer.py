"""Turn ranked passages into an answer: a quoted supporting span, or "not covered" and a page to read.

The answer is extractive: the sentence (or fact line) of the top passages that best covers the question's
distinctive terms (those the line itself names count fully, those only its heading names count half),
quoted exactly and checked to occur word for word in the passage it cites. Coverage is
judged from the best single passage's support for the question's terms (each weighted by its rarity in
the corpus; "specific" terms such as v5e, bf16 or a flag name weigh double), not from a cosine alone:

- support: the weighted share of the question's terms found in one passage (its heading included); the
  best of the top `SUPPORT_PASSAGES` decides, and the cosine of the question to the passages (when vectors
  exist) lowers or raises the share needed;
- specificity: the quoted span, with its heading, must name every specific term of the question that the
  corpus knows (a question about v4 is not answered from a line about v3); an API name the question
  writes in the plural ('all pallas_calls') is named by its singular (`pallas_call`);
- unknown names: a question naming a specific term or a capitalised name that no source mentions (a
  'v9', an 'SLA') is not covered, nor one naming a name that none of the passages retrieved for it
  mentions ('Ironwood Ultra': the passages are about Ironwood, not the variant the qualifier names);
- rare names: a name of the question that few passages use (at most `RARE_NAME_SHARE` of them:
  'Llama', 'Slurm', 'Muon'; not an acronym such as 'GCS' or 'VMs') must be named by the passage the
  quote comes from; a line from a passage that never names it answers a neighbouring question ('the
  Qwen3 recipe' for 'the Llama 3 recipe', 'a Kubernetes fleet' for 'a Slurm cluster');
- subject: the subject of a 'what X does S <verb>' question ('gcsfuse' in 'what read throughput does
  gcsfuse reach') must be named by the quote's passage when another retrieved passage names it: a line
  about a neighbour sharing the other words does not answer it, and ranks lower (`subject_fault`); so must
  the last word of a 'does X work / support ...' question's subject ('the race detector', `yes_no_head`);
- superlatives: 'which is fastest / cheapest' is answered only by a line that compares, in some degree
  or by the noun ('faster', 'speed', 'price'), not one listing the candidates (`SUPERLATIVES`);
- asked for: the thing a 'what X / which X / how many X' question asks for, when no source names it
  in any form ('what refund', 'which heatsink'), makes it not covered, however well its other words
  match a line; an attribute a value can name (bandwidth) and an agent noun whose verb is known
  ('installer') are spared;
- actions: a 'how do I <verb> ...' question is answered only by a line that names the verb (in some
  form or family) or gives a command or setting in a code span (a bare name in backticks, `v6e`, is
  none); 'how do I disable the MXU' is not
  answered by a line describing the MXU (verbs of finding out, 'read', 'check', are spared);
- focus: the attribute a "how many X / what is the X of / how much does X cost" question asks for must
  appear in the quoted line or its heading (a line giving a chip's HBM size does not answer how many HBM
  stacks it has); a kind of name ('what is the pip command') is left to the names check below;
- values name attributes: a line giving a value in the unit of an attribute the question names ('2.20.0'
  for "which version", '900 GBps' for "what bandwidth", '300 seconds' for "what timeout does X use",
  '8x128' for "what tile shape") counts as naming it, when spans are ranked as in the focus check, which
  a 'what X' question opening with such an attribute gets as a 'which X' one does;
- commands: a question that states a situation and then asks only what to run or call ('... logs
  "Couldn't find tuned sizes". What should I run?') needs a line giving a command in a code span, one
  other than the message the question quotes;
- flags: a `--flag` the question writes is a name, unknown unless some source names it whole
  ('--max-slices' is not known because 'max' and 'slices' are); so is a word value the question assigns
  to a name ('MODEL_IMPL_TYPE=onnx': the option's line lists other values, `assigned_values`);
- times: a 'when will X / in which JAX release' question needs a line giving a date, a year or a version
  (not '1.8x'), and one naming the product whose release is asked for (a GKE node version does not
  say which JAX release);
- names: a "which flag / what environment variable / what is the command to" question needs a line
  that names one (a code span, a --flag, an identifier), not one that only talks about flags;
- counts: a "how many / number of" question needs a number (one that starts its word, or a number word)
  in the quoted line; a line that only names what is counted, or a digit inside a name ('v5p', 'bf16'),
  does not say how many; a yes-or-no clause naming a number of things ('do I still pass the number of
  processes?') asks for none;
- the X of Y: in a 'which / what' question, the attribute it asks about as a verb's object ('shows the
  fan speed of each chip') must be named by the quoted line or its heading, not only the tool and the
  chip ('at the price of', after a preposition, is an idiom, not an attribute);
- limits, times and defaults: a "what is the largest / minimum X" question needs a number in the quoted
  line, a "how long does X take" one a time (a number with a time unit, or 'minutes'), and a "what is
  the default X / what X is used when --x is not given" one a line saying what is used by default (a
  value an example command chose is not the default); digits in a line's source note (its URL, its
  'checked' date) count for none of these, nor for "how many" or "when"; the number or time of a
  "how many / what is the largest / how long" question must stand within `VALUE_NEAR` words of a word
  the question names ('in two ways' does not say how large a trace file may be: `value_near`), and so
  must a line's words stating a default ('unset ones are NULL' is about columns, not a query's time
  limit); a count given only by 'one' or 'single' must stand right beside one ('address one issue'
  does not say how many pull requests: `weak_count_only`), and a 'what bound / limit / threshold / score
  / ratio' question needs a number of the quoted line other than such a 'one' (`amount_fault`);
- word forms: light stemming (derived forms too: 'resiliency' is 'resilience'), irregular past forms
  ('written' is 'write') and 'un-'/'re-' prefixes ('retracing' meets 'tracing'); a dotted name is
  also named without its root alias ('pltpu.BufferedRef' by 'BufferedRef'), a compound joined or not
  ('all-gather', 'allgather') and a number with its unit glued or apart ('16GB', '16 GB'); the root, like a
  duration the question states ('within 6 hours'), weighs little; the attribute asked for is named by a
  one-word compound ending in it ('how much RAM disk' by a line's 'ramdisk', `headed_by`); a compound of
  plain words written with a hyphen ('rounding-up') weighs `COMPOUND_WEIGHT` beside its words, which
  count on their own;
- comparisons: in 'is X the same chip as Y' the kind of thing compared ('chip') weighs little: a line
  saying X is called Y answers it;
- word families (`words.FAMILIES`): a paraphrase meets the docs' word ('documentation' the docs,
  'place shards' a line that 'puts' them) and weighs as rare as that word, not as a word no source has;
- definitions: for "what is X / what does X do" about an API symbol, the symbol's docstring summary
  (its first retrieved paragraph) is preferred to later paragraphs that merely mention X, and so is a
  line that opens with X as the subject of its verb ('TPU Multislice joins two or more slices');
- target: when ranking lines, the word naming what the question wants back ('slice' in 'how do I find
  which slice ... each device holds', 'semaphores' in 'what kinds of semaphores') weighs double;
- checks rank too: a line the gate would reject as the quote for lacking the attribute or the number
  asked for (`span_faults`) ranks below one that gives it;
- scope: a line giving its figure per a unit (chip, host, Pod, slice, VM, TensorCore) the question does
  not name, and never naming the question's, ranks lower ("per chip" does not answer "a whole Pod");
- adverbs: an '-ly' adverb of a word the sources know ('exactly', 'unexpectedly') weighs little;
- asides: when the sentence that asks ('...?') names its subject itself, words only the sentences around
  it use ('I am new to TPUs.', 'Thanks!') weigh little (`aside_terms`);
- everyday words: words of time, degree and negation a story uses ('and now every kernel fails too',
  "isn't ready yet"; `words.EVERYDAY_WORDS`) weigh little in the support share (`share_weights`);
- clipped words: in the support share and the attribute check, 'ops' meets 'operations'
  (`words.spelled_out`);
- words named otherwise: in the support share, the 'long' of a 'how long' question is met by a line giving a
  time, and a verb before its particle ('cleans them up') by the word the two make joined (`cleanup_...`;
  `answer_gate.named_otherwise`); there and in the quote's specific-term check, a percentage by the word a
  line uses for that share ('50%' by 'half': `share_words`) and a number type asked by width and kind by its
  short name ('8-bit float' by 'FP8': `width_names`, which ranking reads too);
- phrasal verbs: the verb right before a particle ('it came up', 'chips are handed out') weighs little in the
  support share when that counts for more (`answer_gate.phrasal_weights`): the pair means what a line names
  in its own word ('creation', 'allocated');
- reported figures: a figure with a ratio, share, time or size unit in the story before the asking clause
  ('only get about 1.5x; why not 2x?') weighs little in the support share when that counts for more, and
  the quote's specific-term check does not ask a line to write it (`answer_gate.reported_figures`): the
  user measured it; a figure the asking clause names is read as before;
- misspellings: a plain lower-case word that no source writes and that is no English word ('comand',
  'kernal') is read as the English word one edit away that the sources use most (`spelling.respelled`);
- lead-ins: a few plain words before a colon ('Quick question:', 'I was wondering:') frame the question
  and are left out of it (`lexical.strip_preamble`); the reply still echoes the question as asked;
- sections: the lines retrieved from the quote's own section within `SECTION_NEAR` lines of it count
  together for support (`section_support`): a fact sheet keeps one fact a line, and a reworded question
  often shares its words between the fact and the line before it that sets its scene;
- causes: for a 'why' question, a line stating a cause ('because', 'so', 'due to') ranks higher as the
  quote than one sharing as many words that only says what happens (`REASON_BONUS`);
- conditions: for a 'when does / when is' question, a line stating a condition ('when', 'if', 'unless')
  ranks higher as the quote than one sharing as many words that states none (`CONDITION_BONUS`); a
  numeric bound ('fewer than 4096 chips') counts as a condition, and for 'at what scale / when is X
  better than Y' a line giving one ranks higher again (`THRESHOLD_BONUS`, `asks_threshold`);
- units: for a question asking an amount per a unit ('int8 ops per byte'), a line writing an amount per
  that unit ('operations per byte', 'FLOP/byte') ranks higher as the quote (`UNIT_BONUS`, `units_asked`);
- procedures: for a 'how do I' question, a line whose code span names the action or a specific term of
  the question ranks higher than one sharing as many words that only describes the thing
  (`PROCEDURE_BONUS`, `gives_procedure`); for 'how do I tell / make / get X ...', whose verb no code names, a
  line assigning a value does (`SETTING_BONUS`, `asks_behaviour`);
- why a default: 'why is X 1024 by default' is not answered by a line that lists the default and gives
  no cause, purpose or trade-off (`default_reason_fault`; judged on the first quote, `gate_faults`);
- a sibling's default: 'what is the default of X' / 'is X on by default' is not answered by a line that
  names X among settings whose defaults it gives, none beside X (`setting_default_fault`);
- who: 'who maintains / wrote X', 'which vendor makes X' is not answered by a line naming no one ('by X',
  'X's', a maker's noun or verb; `agent_fault`);
- the first release: 'which version first supported X' is not answered by a line on a release that says
  nothing of a start (first, added, since, needs, at least; `first_release_fault`);
- per a thing: 'what is the bandwidth per port' is not answered from a passage that never names ports
  (its figure is per chip, or a total; time units and 'per-' adjectives aside; `per_fault`);
- a price: 'what does X cost / is X cheaper in zone Z' is not answered by a line naming no price, cost,
  discount, charge or currency ('at the cost of' is an idiom; `price_fault`);
- a tool asked of: 'which tpu-tune subcommand', 'with kubectl', 'a GKE machine type' is not answered by a
  first line that, with its heading and retrieved neighbours, never names the program or service ('on
  GKE', 'without XPK', a leading 'Using xpk,' and a tool named only in the story before the asking clause
  aside; `tool_fault`);
- a flag asked about: a `--flag` the question asks about (not one only its story writes) must be named by
  the quoted passage in some spelling ('--spare-slices', `spare_slices`, `spareSlices`): a flags overview
  of one tool does not answer for a flag another tool's sheet names (`flag_passage_fault`);
- the smallest value: 'what is the lowest X' is not answered by a line giving only X's default, as 'what
  is the largest X' is not (`lower_bound_fault`, beside `bound_fault`);
- advice: 'is it recommended to raise X', 'which tier should I pick' is not answered by a line giving no
  advice word or way, only what X does or which tiers there are (`recommended_fault`; judged on the first
  quote);
- a size of storage: 'how much disk space does X take', 'what boot disk size' is not answered by a line
  giving no figure in bytes, share or multiple (`storage_size_fault`; judged on the first quote);
- a shape: 'what tile shape does X use' is not answered by a line writing the word but no sizes ('8x128',
  '(8, 128)'; `shape_value_fault`; judged on the first quote); a score ('what pass@1 score') is named by the
  word or a share or fraction, not a setting's '=0.9' (`ATTRIBUTE_UNITS`);
- JAX or torch: a question on JAX is not answered by a line naming only a torch stack ('PyTorch/XLA records
  stack frames with `XLA_IR_DEBUG=1`'), nor a PyTorch/XLA or TorchTPU question by a line on JAX from
  another sheet: the torch stacks do not build on JAX (`jax_torch_fault`; judged on the first quote);
- one of a unit: a question held to one host, slice, VM or node ('on one slice only', 'a single-host job') is
  not answered by a line about several ('Multislice workloads', 'multi-host') that never says one
  (`single_scope_fault`; judged on the first quote);
- a stack and another's code: a question naming a stack and a code name ('jax.shard_map', with '_' or '.')
  that the sources write but no passage about that stack does ('call jax.shard_map from inside a TensorFlow
  tf.function') is not covered: no line says how the two go together (`stack_fault`; plain words are
  left to the support share);
- a quote is checked to occur in its passage.

The rules live by concern, so each is found in one place, and data flows one way: `question_reading`
(what the question asks; it imports neither of the others), `answer_gate` (the checks that refuse a quote)
and `quote_choice` (the ranking of lines, the next line of a sheet taking the first one's place when that one
restates the question's names in code and the question asks a name (`next_line_answer`), and the runner-ups,
held to the gate's checks); `spelling` rewrites misspelt words before any of them reads the question. This
module keeps `read_gate`, which measures the support share and runs the gate's checks of the whole
retrieval (`cosine_fault`, `support_fault`, `unknown_fault`, `asked_fault`, `action_fault`,
`elsewhere_fault`, `stack_fault`) and of the quote into one `GateReading`, and `compose`, which judges from
that reading, chooses the quotes and assembles the reply.

Thresholds were set on the dev half of `tests/data/kb_eval.yaml` only (see `benchmarks/kb_eval.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tpu_runtime.knowledge.answer_gate import (
    Span,
    action_fault,
    asked_fault,
    capability_fault,
    cosine_fault,
    elsewhere_fault,
    figure_weights,
    gate_faults,
    named_otherwise,
    needed_support,
    phrasal_weights,
    quote_faults,
    section_support,
    stack_fault,
    support,
    support_fault,
    unknown_fault,
    unknown_names,
)
from tpu_runtime.knowledge.corpus import urls_in
from tpu_runtime.knowledge.lexical import strip_preamble
from tpu_runtime.knowledge.models import Answer, Citation, Passage
from tpu_runtime.knowledge.question_reading import (
    ASIDE_WEIGHT,
    _df,
    _weights,
    clause_asides,
    generation_names,
    is_specific,
    name_terms,
    target_weights,
    value_units,
)
from tpu_runtime.knowledge.quote_choice import (
    RUNNER_UP_SHARE,
    SUPPORT_PASSAGES,
    next_line_answer,
    ranked_spans,
    runner_ups,
)
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult
from tpu_runtime.knowledge.spelling import respelled

FALLBACK_PAGES = {
    "curated": "https://docs.cloud.google.com/tpu/docs",
    "package": "https://docs.jax.dev/en/latest/pallas/index.html",
    "folder": "https://docs.cloud.google.com/tpu/docs",
}


def _url_near(passage: Passage, quote: str) -> str | None:
    """The source URL written closest after the quote in the passage (fact sheets cite per line)."""
    start = passage.text.find(quote)
    after = [url for offset, url in urls_in(passage.text) if offset >= start]
    return after[0] if after else passage.url


def closest_page(passages: list[Passage]) -> str:
    for passage in passages:
        if passage.url:
            return passage.url
    kind = passages[0].kind if passages else "curated"
    return FALLBACK_PAGES[kind]


def listed_passages(reply: Answer, k: int) -> list[Passage]:
    """The top k passages, plus the cited one when it ranks below them, so that a citation always
    points at a listed passage."""
    cited = {c.chunk_id for c in reply.citations}
    return reply.passages[:k] + [p for p in reply.passages[k:] if p.chunk_id in cited]


def prepared(question: str, index: KnowledgeIndex) -> str:
    """The question as the gate reads it: after a preamble's colon, generations by their names, misspelt
    words as the sources write them ('comand', 'kernal')."""
    return respelled(index, generation_names(strip_preamble(question)))


@dataclass
class GateReading:
    """The measures `compose` judges coverage by, kept whole so that a benchmark can record them
    (benchmarks/fit_answer_gate.py) instead of computing them a second time."""

    question: str
    weights: dict[str, float]
    cos_best: float | None
    top: list[Passage]
    best: Passage
    best_support: float
    need: float
    specific: list[str]
    ranked: list[Span]
    names: list[str]
    # the checks of the whole retrieval by name, in the order their reasons are given
    faults: dict[str, str | None]
    quote_reasons: list[str] = field(default_factory=list)
    first_quote_reasons: list[str] = field(default_factory=list)

    @property
    def span(self) -> Span | None:
        return self.ranked[0] if self.ranked else None

    @property
    def quotable(self) -> bool:
        return self.span is not None and self.span.text in self.span.passage.text

    def reasons(self) -> list[str]:
        """Why the question is not covered; empty when every check passes."""
        found = [fault for fault in self.faults.values() if fault]
        if not self.quotable:
            return [*found, "no quotable span"]
        return [*found, *self.quote_reasons, *self.first_quote_reasons]

    def runner_ups(self, index: KnowledgeIndex) -> list[Span]:
        """Lines scored close to the quote, quoted too when they pass the quote's checks."""
        return runner_ups(
            index, self.question, self.ranked, self.specific, list(self.weights), self.names, self.top
        )


def read_gate(question: str, index: KnowledgeIndex, result: SearchResult) -> GateReading:
    """Measure the retrieval for a prepared question (`prepared`) with at least one passage."""
    passages = result.passages
    weights = _weights(index, question)
    cos_best = max((p.cosine for p in passages if p.cosine is not None), default=None)
    top = passages[:SUPPORT_PASSAGES]
    # the story before the asking clause counts when a passage holds it and is let off when it does not
    # (the gate's share only: ranking still weighs the story's words)
    told = clause_asides(question)
    shares = [weights] + (
        [{t: w * ASIDE_WEIGHT if t in told else w for t, w in weights.items()}] if told else []
    )
    # the verb of a phrasal verb ('came up') let off as the story is, the larger share counting
    shares += [w for w in (phrasal_weights(question, s) for s in shares) if w is not None]
    # a figure the user reports in the story ('only get about 1.5x; why not 2x?') let off the same way
    shares += [w for w in (figure_weights(question, s) for s in shares) if w is not None]
    otherwise = named_otherwise(question)
    supports = [max(support(w, p, otherwise) for w in shares) for p in top]
    best_at = max(range(len(top)), key=lambda i: supports[i])
    best_support = supports[best_at]
    specific = [t for t in weights if is_specific(t) and _df(index, t) > 0]
    units = value_units(question)
    ranked = ranked_spans(target_weights(question, weights), passages, specific, units, question)
    ranked = next_line_answer(index, question, ranked)
    span = ranked[0] if ranked else None
    if span is not None:  # the quote's own section, its retrieved lines taken together
        best_support = max(best_support, *(section_support(w, span.passage, top, otherwise) for w in shares))
    need = needed_support(result.mode, cos_best, span)
    names = [t for t in name_terms(question) if t in weights]
    unknown = unknown_names(index, question, weights, names, top[best_at])
    reading = GateReading(
        question=question,
        weights=weights,
        cos_best=cos_best,
        top=top,
        best=top[best_at],
        best_support=best_support,
        need=need,
        specific=specific,
        ranked=ranked,
        names=names,
        faults={
            "cosine": cosine_fault(cos_best),
            "support": support_fault(weights, top[best_at], best_support, need),
            "unknown": unknown_fault(unknown),
            "asked": asked_fault(index, question, unknown),
            "action": action_fault(index, question, unknown),
            "elsewhere": elsewhere_fault(names, unknown, top, index, question),
            "stack": stack_fault(index, question, weights),
            "capability": capability_fault(question, top),
        },
    )
    if span is not None and reading.quotable:
        reading.quote_reasons = quote_faults(index, question, span, specific, list(weights), names, top)
        reading.first_quote_reasons = gate_faults(question, span, top)
    return reading


def compose(question: str, index: KnowledgeIndex, result: SearchResult) -> Answer:
    """Judge coverage from the ranked passages and, when covered, quote and cite the best span."""
    as_asked = question
    question = prepared(question, index)
    passages = result.passages
    base: dict[str, Any] = {
        "question": as_asked,
        "passages": passages,
        "mode": result.mode,
        "notes": result.notes,
    }
    if not passages:
        page = FALLBACK_PAGES["curated"]
        return Answer(
            covered=False,
            answer=f"Not covered: no indexed passage matches this question. Closest page to read: {page}",
            closest=page,
            reason="no passage retrieved",
            **base,
        )
    reading = read_gate(question, index, result)
    reasons = reading.reasons()
    if reasons:
        page = closest_page(passages)
        return Answer(
            covered=False,
            answer=f"Not covered by the indexed sources. Closest page to read: {page}",
            closest=page,
            reason="; ".join(reasons),
            **base,
        )
    span = reading.span
    assert span is not None
    also = reading.runner_ups(index)
    quoted = [span, *also]
    answer = f"{span.text} [{span.passage.source}]"
    signal = f"best cosine {reading.cos_best:.2f}, " if reading.cos_best is not None else ""
    reason = (
        f"{signal}best passage supports {reading.best_support:.2f}, quote checked in {span.passage.source}"
    )
    for close in also:
        answer += f" Also close: {close.text} [{close.passage.source}]"
    if also:
        lines = "a second line" if len(also) == 1 else f"{len(also)} more lines"
        reason += f"; {lines} scored within {1 - RUNNER_UP_SHARE:.0%} of it, quoted too"
    return Answer(covered=True, answer=answer, citations=[_cite(sp) for sp in quoted], reason=reason, **base)


def _cite(span: Span) -> Citation:
    return Citation(
        source=span.passage.source,
        url=_url_near(span.passage, span.text),
        quote=span.text,
        chunk_id=span.passage.chunk_id,
        checked=span.passage.checked,
    )
