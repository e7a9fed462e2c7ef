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
  about a neighbour sharing the other words does not answer it, and ranks lower (`subject_fault`);
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
- lead-ins: a few plain words before a colon ('Quick question:', 'I was wondering:') frame the question
  and are left out of it (`lexical.strip_preamble`); the reply still echoes the question as asked;
- sections: the lines retrieved from the quote's own section within `SECTION_NEAR` lines of it count
  together for support (`section_support`): a fact sheet keeps one fact a line, and a reworded question
  often shares its words between the fact and the line before it that sets its scene;
- causes: for a 'why' question, a line stating a cause ('because', 'so', 'due to') ranks higher as the
  quote than one sharing as many words that only says what happens (`REASON_BONUS`);
- conditions: for a 'when does / when is' question, a line stating a condition ('when', 'if', 'unless')
  ranks higher as the quote than one sharing as many words that states none (`CONDITION_BONUS`);
- procedures: for a 'how do I' question, a line whose code span names the action or a specific term of
  the question ranks higher than one sharing as many words that only describes the thing
  (`PROCEDURE_BONUS`, `gives_procedure`);
- why a default: 'why is X 1024 by default' is not answered by a line that lists the default and gives
  no cause, purpose or trade-off (`default_reason_fault`; judged on the first quote, `gate_faults`);
- a sibling's default: 'what is the default of X' / 'is X on by default' is not answered by a line that
  names X among settings whose defaults it gives, none beside X (`setting_default_fault`);
- who: 'who maintains / wrote X' is not answered by a line naming no one ('by X', 'X's', a maker's noun
  or verb; `agent_fault`);
- the first release: 'which version first supported X' is not answered by a line on a release that says
  nothing of a start (first, added, since, needs, at least; `first_release_fault`);
- a quote is checked to occur in its passage.

Thresholds were set on the dev half of `tests/data/kb_eval.yaml` only (see `benchmarks/kb_eval.py`).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from typing import Any

from tpu_runtime.knowledge.corpus import urls_in
from tpu_runtime.knowledge.generation_clauses import generation_parts, generations_named
from tpu_runtime.knowledge.lexical import (
    STOPWORDS,
    defines,
    definition_subject,
    is_identifier,
    strip_preamble,
    tokenize,
)
from tpu_runtime.knowledge.models import Answer, Citation, Passage
from tpu_runtime.knowledge.products import SHEET_PRODUCTS, products_named
from tpu_runtime.knowledge.retrieve import KnowledgeIndex, SearchResult
from tpu_runtime.knowledge.words import family, family_words, stem
from tpu_runtime.knowledge.words import unprefixed as _unprefixed

# passages whose support is judged and whose spans may be quoted (dev: 8 and 10 tie; 12 and 16 answer one
# fewer once the kb20 facts are in; 10 is also the evaluation's ranking depth: both weigh the same ones)
SUPPORT_PASSAGES = 10
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
SPECIFIC_WEIGHT = 2.0  # weight multiplier of specific terms (with a digit, or identifier-like)
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
# lines of the quote's section at most this many lines away count together for the gate's support
SECTION_NEAR = 2
DEFINITION_BONUS = 1.5  # span score factor of a line opening with the X of "what is X" as its subject
TARGET_WEIGHT = 2.0  # weight factor, when ranking spans, of the word naming what is asked for
SUMMARY_BONUS = 2.5  # span score factor of a symbol's docstring summary when the question asks what it is
REASON_BONUS = 1.5  # span score factor of a line stating a cause when the question asks why
# span score factor of a line stating a condition ('when', 'if', 'unless') when the question asks under
# which condition something happens ('when does X ...'), as `REASON_BONUS` is for 'why'
CONDITION_BONUS = 1.5
PROCEDURE_BONUS = 1.25  # span score factor of a line whose code names the action or term a "how do I" asks
LIST_BONUS = 1.5  # span score factor of a line listing several items when the question asks which kinds
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
FALLBACK_PAGES = {
    "curated": "https://docs.cloud.google.com/tpu/docs",
    "package": "https://docs.jax.dev/en/latest/pallas/index.html",
    "folder": "https://docs.cloud.google.com/tpu/docs",
}
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
_PER_RE = re.compile(r"\bper[\s-]+(chip|host|pod|slice|vm|tensorcore|core)\b", re.I)
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
_GIVES_COUNT_RE = re.compile(
    r"(?<![A-Za-z_\d])\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|sixteen|hundred|thousand|"
    r"dozens?|single|twice|double|half|none|unlimited)\b",
    re.I,
)
# a line's source note ('([source](https://...), checked 2026-12-04)') holds digits that state no
# value: a count, time or limit is looked for in the line with its notes taken out
_NOTE_RE = re.compile(r"\]\([^)]*\)|https?://\S+|\bchecked\s+\d{4}-\d\d-\d\d\b", re.I)
# "How long does X take": the question asks for a time, so the quoted line must give one (a number with
# a time unit, or a span of time in words); a line that only names X does not say how long it takes.
# "How long can a prompt be" asks for a length, which any number answers.
_ASKS_TIME_RE = re.compile(r"\bhow\s+long\b(?![^?]*\b(?:can|may|must|should|could)\b[^?]*\bbe\b)", re.I)
_GIVES_TIME_RE = re.compile(
    r"(?<![A-Za-z_\d])\d[\d.,]*\s*(?:ms|us|µs|ns|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|days?|"
    r"weeks?|months?)\b|\b(?:seconds|minutes|hours|days|weeks|months|instantly|immediately)\b",
    re.I,
)
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
_GIVES_DEFAULT_RE = re.compile(
    r"\bdefaults?\b|\bdefaulting\b|\bunless\b|\botherwise\b|\bomit|\bunset\b|\bnot\s+(?:set|given)\b|"
    r"\bwithout\b|\bif\s+no\b",
    re.I,
)
# "Which flag ...", "what environment variable ...": the question asks for a name; the quoted line must
# give one (a code span or an identifier), not only talk about flags
_NAME_KINDS = r"(flags?|variables?|env\s+vars?|functions?|commands?|annotations?|decorators?)"
_JOINED_NAME_RE = re.compile(r"[A-Za-z0-9][._][A-Za-z]")
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
_CODE_RE = re.compile(r"`[^`]+`")
# "What is X (for)", "what does X do": the question asks for a definition
_ASKS_DEFINITION_RE = re.compile(r"^\s*what\s+(?:is|are|does|do)\b", re.I)
_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\[*])")
_LEAD_RE = re.compile(r"^\s*(?:[-*+>]\s+|\d+[.)]\s+|\|\s*)*")
# a source note that ends a line: "([source](URL), checked DATE)", "(source: URL, ...)", "(see ...)"
_TRAIL_RE = re.compile(r"\s*\((?=\[?source\]?[:(]|see |https?://)(?:[^()]|\([^()]*\))*\)[.;]?\s*$", re.I)
_WORD_RE = re.compile(r"[A-Za-z]{2,}")


@dataclass
class Span:
    text: str
    passage: Passage
    overlap: float


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


_NUMBER_UNIT_RE = re.compile(r"^(\d+(?:\.\d+)?)([a-z]{1,5})$")


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


def _lead_words(phrase: str) -> list[str]:
    """The first words of `phrase` up to a function word or question word (at most four)."""
    words: list[str] = []
    for raw in phrase.split()[:4]:
        word = raw.strip(",.;:()'\"").lower()
        if not word or word in _FOCUS_STOP or word in QUESTION_WORDS:
            break
        words.append(word)
    return words


def focus_term(question: str) -> str | None:
    """The head word of the quantity or attribute a 'how many / what is the' question asks for; for a
    'which X / what X' question only when X is an attribute with a unit ('which Windows version', 'which
    bandwidth', 'what timeout does X use', 'what tile shape'), since 'which tool' or 'which flag' is
    answered by a line naming one, not the word. None for 'what is the X (used) for?', which asks
    what X serves."""
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
    heads = [w for w in words if w not in QUANTITY_WORDS and not is_specific(w)]
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


def procedure_terms(question: str, terms: list[str]) -> list[str]:
    """What the code of a line answering a "how do I" question names: the action ('install' in 'how do I
    install X') and the question's specific terms (`torch.compile`, `v5e`). Empty for other questions."""
    if not _PROCEDURAL_RE.search(question):
        return []
    verb = asked_action(question)
    return ([verb] if verb else []) + [t for t in terms if is_specific(t)]


def gives_procedure(wanted: list[str], span: str) -> bool:
    """A line whose code span (a call, command or setting) names one of `wanted`: it shows how, where a
    line sharing as many words may only describe the thing ('the backend is implemented in ...')."""
    code = " ".join(_CODE_RE.findall(span))
    if not code:
        return False
    terms = _terms(code)
    return any(_present(terms, w) for w in wanted)


def asks_name(question: str) -> str | None:
    """The kind of name a 'which flag / what environment variable / which function' question asks for
    ('flag'), or None: such a question is answered by a line that names one, not one about flags."""
    match = _ASKS_NAME_RE.search(question)
    return match.group(1).lower() if match else None


def gives_name(span: str) -> bool:
    """Whether the span names a flag, variable, command or API: a code span, a `--flag` or a word
    joined by '_' or '.' ('PJRT_DEVICE', 'jax.jit', 'xla_tpu_enable_x'); a hyphenated word is prose
    ('per-chip', 'multi-host') unless it starts with a dash, and a CamelCase product name
    ('SparseCore') names no setting."""
    if _CODE_RE.search(span):
        return True
    words = (raw.strip(".,;:()'\"") for raw in span.split())
    return any((len(w) > 2 and w.startswith("-")) or _JOINED_NAME_RE.search(w) for w in words)


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


def asks_main_count(question: str) -> bool:
    """Whether the question itself asks how many or how much at most ('how many X', 'what is the largest
    X'), rather than for a name in a clause about a count."""
    return bool(_MAIN_COUNT_RE.search(question)) or asks_limit(question)


def asks_limit(question: str) -> bool:
    """Whether the question asks for a limit ('what is the largest priority Shardy accepts'): only a
    number answers it."""
    return bool(_ASKS_LIMIT_RE.search(question))


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


def asks_time(question: str) -> bool:
    """Whether the question asks how long something takes ('how long does the export take'), not how
    long a thing may be."""
    return bool(_ASKS_TIME_RE.search(question)) and not asks_by_clause(question)


def asks_default(question: str) -> bool:
    """Whether a what/which question asks for the value used when nothing is set ('what is the default
    X', 'what rate does it use when --rate is not given')."""
    return bool(_ASKS_DEFAULT_RE.search(question))


def names_attribute(attribute: str, text: str) -> bool:
    """Whether `text` names the attribute, as a word, as the head of a compound written as one word
    ('RAM disk' asks about a disk, and a 'ramdisk' is one), or as a value in the attribute's unit."""
    unit = ATTRIBUTE_UNITS.get(attribute)
    return _present(_terms(text), attribute) or headed_by(attribute, text) or bool(unit and unit.search(text))


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


def support(weights: dict[str, float], passage: Passage) -> float:
    """How much of the question one passage (text and heading) supports."""
    return _coverage(weights, f"{_heading(passage)}\n{passage.text}")


def section_support(weights: dict[str, float], passage: Passage, passages: list[Passage]) -> float:
    """How much of the question the lines retrieved with `passage` from its own section, within
    `SECTION_NEAR` lines of it, support together (their heading included): a fact sheet keeps one fact
    a line, so the line answering a question and the line before it that sets its scene ('elastic
    training keeps a job running when slices fail'; 'launch it with --elastic-slices') each carry part
    of a reworded question's words."""
    near = [
        p.text
        for p in passages
        if p.path == passage.path
        and p.section == passage.section
        and abs((p.line or 0) - (passage.line or 0)) <= SECTION_NEAR
    ]
    return _coverage(weights, "\n".join([_heading(passage), *near]))


def _density(weights: dict[str, float], span: str) -> float:
    """Share of the span's distinct words that are question terms."""
    words = {t for t in tokenize(span) if t not in QUESTION_WORDS}
    if not words:
        return 0.0
    marks = {family(t) for t in weights} - {None}
    return sum(
        1 for w in words if family(w) in marks or any(w == t or stem(w) == stem(t) for t in weights)
    ) / len(words)


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


# 'a TPU type like v6e-8', 'such as TPU-V6E': a value the question gives as an example of its input
_EXAMPLE_RE = re.compile(
    r"\b(?:like|such\s+as|e\.g\.,?|for\s+(?:example|instance),?)\s+([\w.\-/\"'`]+)", re.I
)


def example_terms(question: str) -> set[str]:
    """Terms the question gives after 'like', 'such as' or 'e.g.' as an example of what it passes in: a line
    saying what happens to any such input answers it without repeating the example."""
    return {t for m in _EXAMPLE_RE.finditer(question) for t in tokenize(m.group(1))}


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


def gives_command(question: str, span: str) -> bool:
    """Whether the span gives a command, call or setting in a code span; one that only repeats a
    message the question quotes is the symptom, not what to do about it."""
    asked = " ".join(question.lower().split())
    for match in _CODE_RE.finditer(span):
        code = " ".join(match.group(0).strip("`").lower().strip(". ").split())
        if not (" " in code and code in asked):
            return True
    return False


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
_GIVES_WHEN_RE = re.compile(
    r"\b(?:19|20)\d\d\b|(?<![\d.])\d+\.\d+(?:\.\d+)?(?![.\d]|x\b|\s*%)|\bv\d+\.\d|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d|"
    r"\b(?:since|until|release[sd]?|version|preview|GA)\s+\d",
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
            if word in _PATH_END:
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
    that the sources never write there is a made-up subcommand ('xpk workload migrate')."""
    for words in path_forms(path):
        if index.writes(" ".join(words)):
            return True
        lead = 2 if words[1:2] and words[1] in GCLOUD_TRACKS else 1
        for end in range(len(words) - 1, lead, -1):
            start = " ".join(words[:end])
            if index.writes(start):
                if not index.continued(start):
                    return True
                break
    return False


# 'MODEL_IMPL=onnx', 'load_format="onnx"': a word value assigned to a name (a number is a setting's
# amount, which no source need repeat)
_ASSIGNED_RE = re.compile(r"(?<![\w-])[A-Za-z_][\w.-]*\s*=\s*[\"'`]?([A-Za-z][\w.-]*)")


def assigned_values(question: str) -> list[str]:
    """Word values the question assigns to a name ('onnx' in 'what does MODEL_IMPL=onnx select'),
    lowercased: like a flag, such a value is a name, so one that no source mentions in any form makes
    the question not covered, however well the option's own line matches ('auto, vllm or flax_nnx'
    says nothing about an onnx value)."""
    return list(dict.fromkeys(m.group(1).lower() for m in _ASSIGNED_RE.finditer(question)))


# "on what date", "which year": a calendar date, not a release number
_ASKS_DATE_RE = re.compile(r"\b(?:what|which)\s+(?:date|day|year|month)\b", re.I)
_GIVES_DATE_RE = re.compile(
    r"\b(?:19|20)\d\d\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d", re.I
)


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
_PLATFORM_RE = re.compile(rf"\b({'|'.join(PLATFORMS)})\b", re.I)


def platforms_asked(question: str) -> set[str]:
    """The processor kinds a question asks about ('gpu' in 'which is fastest on GPU')."""
    return {PLATFORMS[m.group(1).lower()] for m in _ON_PLATFORM_RE.finditer(question)}


def platforms_named(span: str) -> set[str]:
    """The processor kinds a line names anywhere (its source note's URL aside)."""
    return {PLATFORMS[m.group(1).lower()] for m in _PLATFORM_RE.finditer(_NOTE_RE.sub(" ", span))}


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


def subject_fault(question: str, passage: Passage, passages: list[Passage]) -> str | None:
    """A quote from a passage that never names the question's subject while another retrieved passage
    does: the quote is about a neighbour ('llguidance' asked, an SGL-JAX benchmark line quoted while the
    llguidance passage was retrieved too). A subject no retrieved passage names is left to the support
    share, since sources may call it otherwise ('an entire Pod' for a line's 'whole Pod')."""
    subject = question_subject(question)
    if not subject or _present(_passage_terms(passage), subject):
        return None
    if not any(_present(_passage_terms(p), subject) for p in passages):
        return None
    return f"the quoted passage never names '{subject}', the question's subject, which another passage names"


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
# a one-letter name ('an R training loop'): tokenising drops it, so the
# support share never sees it; 'I' and 'A' open sentences and are left out, as is 'C' of 'C++'
_LETTER_NAME_RE = re.compile(r"(?<![\w.\-/'`+])([B-HJ-Z])(?![\w.\-/'`+])")


def letter_names(text: str) -> set[str]:
    """The one-letter capital names a text uses on their own ('R' in 'an R training loop')."""
    return set(_LETTER_NAME_RE.findall(_QUOTED_RE.sub(" ", text)))


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


def whole_scope(question: str) -> str | None:
    """The Pod or slice a question asks a total of ('the combined peak across all the chips of a v4
    Pod', 'an entire Trillium pod'): the chips it names are what is summed, not the unit asked."""
    match = _WHOLE_RE.search(question)
    return SCOPES[(match.group(1) or match.group(2)).lower()] if match else None


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


# "Why does X ...", "... only 50% of the bandwidth, why?": the question asks for a cause
_ASKS_WHY_RE = re.compile(r"\bwhy\b", re.I)
# a line stating a cause or a consequence: 'because', 'since', 'so', 'due to', 'causes', 'means'
_GIVES_REASON_RE = re.compile(
    r"\b(?:because|since|due\s+to|so\s+that|so|thus|hence|therefore|as\s+a\s+result|caus(?:e|es|ed|ing)|"
    r"leads?\s+to|means|reason|results?\s+in)\b",
    re.I,
)


# "When does X ...", "when is X ...": the question asks under which condition, not at what time ('when will
# X ship' asks for a date: `asks_when`)
_ASKS_CONDITION_RE = re.compile(r"^\s*when\s+(?:does|do|is|are|can|should|would|must)\b", re.I)
_GIVES_CONDITION_RE = re.compile(r"\b(?:when|whenever|if|unless|once|as\s+long\s+as)\b", re.I)


def asks_condition(question: str) -> bool:
    """Whether the question asks under which condition something happens ('when does a v4 slice get
    wraparound links'), rather than for a date or release."""
    return bool(_ASKS_CONDITION_RE.search(question)) and not asks_when(question)


def gives_condition(span: str) -> bool:
    """Whether the line states a condition ('when', 'if', 'unless', 'once'), its source note aside."""
    return bool(_GIVES_CONDITION_RE.search(_NOTE_RE.sub(" ", span)))


def asks_why(question: str) -> bool:
    """Whether the question asks for a cause ('why does ...', '..., why?')."""
    return bool(_ASKS_WHY_RE.search(question))


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
    r"developed|authored|owns|built|leads|publishe[sd])\b",
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


# "What kinds of semaphores ...", "which semaphore types ...": the question asks for the members of a kind;
# a singular 'type' names one ('which GKE machine type', 'which TPU type') unless 'of' follows
_ASKS_KINDS_RE = re.compile(
    r"^\s*(?:what|which)\s+(?:[\w-]+\s+){0,2}?(?:(?:kinds|types|sorts|varieties)\b|(?:kind|type|sort)\s+of\b)",
    re.I,
)
# "REGULAR, DMA and BARRIER", "`a`, `b`, or `c`": three or more one-word items; items of several words
# are read in a clause joined by commas ('allocate semaphores, for barriers or for tracking copies')
_ITEM = r"[\w`.'()/-]+"
_GIVES_LIST_RE = re.compile(rf"{_ITEM},\s+{_ITEM},?\s+(?:and|or)\s+[\w`]", re.I)


def asks_kinds(question: str) -> bool:
    """Whether a what/which question asks for the kinds of something ('what kinds of semaphores can a
    kernel allocate'): a line listing them answers it, not one using a single kind."""
    return bool(_ASKS_KINDS_RE.search(question))


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


# a number standing on its own in the question: not part of a name ('v5e', 'bf16'), a shape ('2x2x4') or a
# ratio ('1.5x'); in a line, one not glued after letters ('TP2', 'v7x'), since '2 chips' or '8B' still give it
_OWN_NUMBER_RE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?!\w|\.\d)")
_LINE_NUMBER_RE = re.compile(r"(?<![A-Za-z\d.])(\d+(?:\.\d+)?)(?!\d)")


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


def repeats_number(numbers: set[str], span: str) -> bool:
    """Whether the line gives one of `numbers` as a number of its own, its source note aside."""
    return bool(numbers & set(_LINE_NUMBER_RE.findall(_NOTE_RE.sub(" ", span))))


COUNT_WORDS = {"one": 1, "single": 1, "two": 2, "three": 3, "four": 4, "eight": 8, "sixteen": 16}
# a spelled count and the next words up to a stop word ('one Trillium chip'); not a compound's first part
# ('single-host' is a kind of slice, not a count) nor 'one of / one or / one another'
_SPELLED_COUNT_RE = re.compile(
    rf"\b({'|'.join(COUNT_WORDS)})\b(?![-\w])((?:\s+(?!of\b|or\b|another\b|by\b)[A-Za-z][\w-]*){{1,3}})", re.I
)
_DIGIT_COUNT_RE = re.compile(r"(?<![\w.])(\d+)(?:\s+|-)([A-Za-z]+)")


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


def gives_count(counted: set[tuple[int, str]], span: str) -> bool:
    """Whether the line writes one of `counted` in digits before the same noun ('1 chip', '2-host'),
    its source note aside."""
    text = _NOTE_RE.sub(" ", span)
    return any((int(n), stem(w.lower())) in counted for n, w in _DIGIT_COUNT_RE.findall(text))


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
    weighed = passages[:SUPPORT_PASSAGES]
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
            if specific and _missing_specific(specific, f"{heading}\n{span}"):
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


# 'TPU v5 lite', 'v5 lite pod', 'v5-lite': TPU v5e by the words of its accelerator type ('v5litepod') written
# apart; read as words, 'v5' names v5p (whose sheet is also called 'tpu v5') and 'lite' nothing. A 'pod'
# after it stays a word: 'a 256-chip TPU v5 lite pod' asks about the Pod
_V5_LITE_RE = re.compile(r"\bv5[\s-]?lite\b", re.I)


def generation_names(question: str) -> str:
    """The question with TPU v5e's spelled-apart names ('TPU v5 lite pod') written 'v5e', the name the
    sheets give it: as words, 'v5' matched v5p's lines and left the v5e line missing a specific term."""
    return _V5_LITE_RE.sub("v5e", question)


def compose(question: str, index: KnowledgeIndex, result: SearchResult) -> Answer:
    """Judge coverage from the ranked passages and, when covered, quote and cite the best span."""
    as_asked = question
    question = strip_preamble(question)  # 'Quick question: ...' is judged on what follows the colon
    question = generation_names(question)
    passages = result.passages
    weights = _weights(index, question)
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
    cos_best = max((p.cosine for p in passages if p.cosine is not None), default=None)
    top = passages[:SUPPORT_PASSAGES]
    # the story before the asking clause counts when a passage holds it and is let off when it does not
    # (the gate's share only: ranking still weighs the story's words)
    told = clause_asides(question)
    shares = [weights] + (
        [{t: w * ASIDE_WEIGHT if t in told else w for t, w in weights.items()}] if told else []
    )
    supports = [max(support(w, p) for w in shares) for p in top]
    best_at = max(range(len(top)), key=lambda i: supports[i])
    best_support = supports[best_at]
    specific = [t for t in weights if is_specific(t) and _df(index, t) > 0]
    units = value_units(question)
    ranked = ranked_spans(target_weights(question, weights), passages, specific, units, question)
    span = ranked[0] if ranked else None
    if span is not None:  # the quote's own section, its retrieved lines taken together
        best_support = max(best_support, *(section_support(w, span.passage, top) for w in shares))
    if result.mode != "hybrid":
        need = LEXICAL_MIN_SUPPORT
    elif cos_best is not None and cos_best >= AGREE_COSINE and span and span.passage.cosine == cos_best:
        need = AGREE_MIN_SUPPORT
    elif cos_best is not None and cos_best >= CLOSE_COSINE:
        need = CLOSE_MIN_SUPPORT
    else:
        need = MIN_SUPPORT
    reasons = []
    if cos_best is not None and cos_best < MIN_COSINE:
        reasons.append(f"best cosine {cos_best:.2f} < {MIN_COSINE}")
    if best_support < need:
        seen = _terms(f"{_heading(top[best_at])}\n{top[best_at].text}")
        missing = [t for t in weights if not _present(seen, t)]
        reasons.append(
            f"best passage supports {best_support:.2f} of the question's terms < {need} "
            f"(absent: {', '.join(missing[:5])})"
        )
    seen = _terms(f"{_heading(top[best_at])}\n{top[best_at].text}")
    names = [t for t in name_terms(question) if t in weights]
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
    if unknown:  # 'v9', 'tpu8': the question names something no source mentions
        reasons.append(f"the sources never mention {', '.join(unknown[:3])}")
    # the thing asked for ('what refund', 'how many heatsinks') in no form anywhere in the sources: no
    # line can give it, however well the question's other words match one
    asked = asked_thing(question)
    # a value in its unit names it ('900 GBps' is a bandwidth); a name given names 'the name of'
    if asked in ATTRIBUTE_UNITS or asked in NAMING_WORDS:
        asked = None
    # an agent noun is known through its verb: an 'installer' is what the sources' 'install with' names
    verb = asked[:-2] if asked and re.search(r"[a-z]{4}(?:er|or)$", asked) else None
    if (
        asked
        and asked not in unknown
        and _family_df(index, asked) == 0
        and not (verb and _family_df(index, verb))
    ):
        reasons.append(f"the sources never mention '{asked}', what the question asks for")
    # the action of a 'how do I <verb>' question in no form anywhere in the sources ('encrypt'): a line
    # giving some command for the thing acted on does not say how to do that; turning something off is
    # said by a setting that does, whatever verb the sources use ('stop ... sending' by 'send=false')
    action = asked_action(question)
    if (
        action
        and action not in NEGATING_ACTIONS | {"stop"}
        and action not in unknown
        and action != asked
        and _family_df(index, action) == 0
    ):
        reasons.append(f"the sources never mention '{action}', the action the question asks how to do")
    # a name no passage retrieved for the question mentions, though some source does: the question is
    # about something else of that name ('Ironwood Ultra' is not Ironwood)
    retrieved = [_terms(f"{_heading(p)}\n{p.text}") for p in top]
    elsewhere = [t for t in names if t not in unknown and not any(_present(terms, t) for terms in retrieved)]
    if elsewhere:
        reasons.append(f"no passage about the question mentions {', '.join(elsewhere[:3])}")
    if span is None or span.text not in span.passage.text:
        reasons.append("no quotable span")
    else:
        reasons.extend(quote_faults(index, question, span, specific, list(weights), names, top))
        reasons.extend(gate_faults(question, span))
    signal = f"best cosine {cos_best:.2f}, " if cos_best is not None else ""
    if reasons:
        page = closest_page(passages)
        return Answer(
            covered=False,
            answer=f"Not covered by the indexed sources. Closest page to read: {page}",
            closest=page,
            reason="; ".join(reasons),
            **base,
        )
    assert span is not None
    also = runner_ups(index, question, ranked, specific, list(weights), names, top)
    quoted = [span, *also]
    answer = f"{span.text} [{span.passage.source}]"
    reason = f"{signal}best passage supports {best_support:.2f}, quote checked in {span.passage.source}"
    for close in also:
        answer += f" Also close: {close.text} [{close.passage.source}]"
    if also:
        lines = "a second line" if len(also) == 1 else f"{len(also)} more lines"
        reason += f"; {lines} scored within {1 - RUNNER_UP_SHARE:.0%} of it, quoted too"
    return Answer(covered=True, answer=answer, citations=[_cite(sp) for sp in quoted], reason=reason, **base)


def gate_faults(question: str, span: Span) -> list[str]:
    """Why the first quote cannot answer, judged on it alone: checks of what a question asks for that a
    close runner-up line quoted beside it need not pass on its own (it adds to the first line)."""
    faults = []
    cause = default_reason_fault(question, span.text)
    if cause:
        faults.append(cause)
    sibling = setting_default_fault(question, span.text)
    if sibling:
        faults.append(sibling)
    agent = agent_fault(question, span.text)
    if agent:
        faults.append(agent)
    first = first_release_fault(question, span.text)
    if first:
        faults.append(first)
    return faults


def _cite(span: Span) -> Citation:
    return Citation(
        source=span.passage.source,
        url=_url_near(span.passage, span.text),
        quote=span.text,
        chunk_id=span.passage.chunk_id,
        checked=span.passage.checked,
    )


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
    examples = example_terms(question)
    lacking = [t for t in _missing_specific(specific, f"{heading}\n{span.text}") if t not in examples]
    if lacking:
        reasons.append(f"no passage line names {', '.join(lacking[:3])}")
    reasons.extend(span_faults(question, span.text, heading))
    other = product_fault(question, span.text, span.passage)
    if other:
        reasons.append(other)
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
    amount = amount_fault(question, span.text)
    if amount:
        reasons.append(amount)
    neighbour = subject_fault(question, span.passage, passages or [])
    if neighbour:
        reasons.append(neighbour)
    return reasons


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
        kept.append(span)
    return other_sections_first(ranked[0], kept, RUNNER_UPS)


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
