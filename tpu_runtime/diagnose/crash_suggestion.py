"""The remedy an error message states itself: "Try setting ...", "consider increasing vmem_limit_bytes".

Many TPU errors carry their own fix, written by the people who wrote the check: Pallas asks to raise
`vmem_limit_bytes`, vLLM to lower `--max-model-len` or raise `gpu_memory_utilization`, jax to upgrade
jaxlib to a named version, torch_xla to set an environment variable. Such a sentence is the most specific
advice a log can hold, for logs nobody here has seen as well as for known ones, so when no cause-specific
sub-rule of the category applies, the fix quotes it (sub-rule `<category>/message_suggestion`) and names
what it names: the flag, the environment variable, the API or parameter, the version.

Only a sentence that starts like advice (an imperative or "you should/can ...") and names something
concrete counts, or one that addresses the reader directly ("Please remove the hosts from the fleet",
"You must restart the runtime"): the people who wrote the check chose that action for this very failure,
even when it names no flag. Advice to file a bug or share a reproducer is not a remedy and is skipped, and
so is advice the message gives for another accelerator (a GPU) beside the TPU's.

A check that states a condition without advice words names its remedy too: two settings it compared
("a_b is greater than c_d", `name=value` pairs on a mismatch line), what it expected of its arguments
("expected the size of dimension 1 of `x` to be equal to ...") or what one named setting must be
("x_ratio must be positive, got 0.0") or two named settings it refuses together ("Cannot specify both a_b and
c_d"), settings of which it needs one ("At least one of `a` or `b` must be set"), a setting it lets be set
once only ("... not expected to be changed after initialization"), quantities it compared in words ("Batch
size (24) must be divisible by ... (16)", or `expr=value` lines listed below a mismatch line) and the dtype it
expected ("x is expected to be float32, but got bfloat16"), counts it set side by side ("8 files vs 16 shards
requested") or labelled values listed below a mismatch line ("worker count in checkpoint: 32"), a value a
feature requires be given ("Shuffling requires specifying a seed") and a feature it refuses in one mode
("During evaluation, packing can't be used"). These are kept apart (`Suggestion.kind`) and
tried after the fallbacks that name the log's facts, since they say what must hold rather than what to do (a
fallback chosen keeps them as an addendum, `stated_addendum`); what a setting must be, settings refused
together, settings of which one is needed and a setting set once only also come before the library catch-all
(crashlog.LIBRARY_CHECK).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from tpu_runtime.diagnose.crash_facts import clip

__all__ = [
    "DIVISIBILITY_HINT",
    "RERUN",
    "SETTING_KINDS",
    "STATED_KINDS",
    "Suggestion",
    "choices_fix",
    "divisibility_hint",
    "find_suggestions",
    "reformatted_value",
    "stated_addendum",
    "suggestion_addendum",
    "suggestion_fix",
]

# A character of the sentence a suggestion runs to: anything but an end mark, or an end mark inside a token
# (a version "2.4.1", a path "a.b.c", a URL), so a suggestion is not cut at the first dot.
_SENTENCE_CHAR = r"(?:[^.!?\n]|[.!?](?=\S))"
MAX_SUGGESTIONS = 2
MAX_TEXT = 300
ERROR_TAIL = 3
# A log this short is the error message itself (a fragment pasted into a thread): every line of it is the
# error, even one that words its failure without an error word ("XLA compilation requires ...").
WHOLE_MESSAGE_LINES = 3
# Python's warnings line ("/path/x.py:23: DeprecationWarning: ..."), the message of a log without errors.
_WARNING_LINE = re.compile(r"\b[A-Z]\w*Warning: ")
_ERRORISH = re.compile(
    r"\b(?:error|fatal|failed|failure|exception|abort(?:ed)?|unable|cannot|could not|not supported|"
    r"unsupported|not implemented|unimplemented|invalid|incompatible|exceed\w*|exhausted|timed out|"
    r"mismatch|out of memory|OOM|already in use|not found|crashed|hangs?|hung|deadlock(?:ed)?)\b|"
    r"(?-i:\b[A-Z][A-Z_]{3,}: )|"
    r"\w+(?:Error|Exception)\b",
    re.IGNORECASE,
)
_ADVICE = (
    r"try|consider|please|you (?:can|could|may|might|should|need to|must|will need to|have to)|"
    r"to (?:fix|avoid|resolve|work around|silence|suppress) (?:this|it|that)|set|use|increase|raise|reduce|"
    r"setting|lower|decrease|upgrade|downgrade|install|reinstall|pass|add|enable|disable|specify|make sure|"
    r"ensure|rerun|re-run|call|switch to|did you mean|hint|suggestion|recommended|"
    # "Perhaps you meant X", "maybe try X"; not a guess at what happened ("Perhaps the worker was restarted")
    r"(?:perhaps|maybe)(?= (?:you|try|use|set|pass|add|call|increase|reduce|install|upgrade|downgrade)\b)|"
    r"it is recommended to|either|run(?! time)|kill|unset|remove|restart|replace|wrap|cast|move|"
    # advice put as a question ("Have you applied the `jaxtyped` decorator?", "Did you forget to call X?"):
    # the check names what it found missing (diag82, jaxtyping/_array_types.py)
    r"have you (?:applied|called|set|installed|enabled|added|passed|used|imported|initiali[sz]ed|registered|"
    r"wrapped|specified|defined|decorated)|did you forget to|"
    # advice after a connective that ties it to the case just stated ("... can only be jnp.int32 when both
    # inputs are int8. Otherwise it is recommended to be None ...", diag82, aqt/jax/v2/aqt_dot_general.py)
    r"(?:otherwise|instead|alternatively),? (?=it is recommended to|you (?:can|should|may|must)|"
    r"(?:use|set|pass|try|consider|call)\b)|"
    # layout and version actions a check words as an order ("Pad head_dim to a multiple of 128.")
    r"pad|choose|pick|align|round|shard|split|replicate|update|pin|convert|"
    # a check that asks for a value ("Provide dcn_mesh_shape to ...") or a match ("verify that its wheel ...")
    r"provide|supply|define|verify that|check that|confirm that|"
    # negative advice: "Do not use the XLA device before calling xmp.spawn."
    r"(?:do not|don't|never) (?:use|call|set|pass|mix|import|run|create|access|touch|initiali[sz]e|install|"
    r"move|load|put|send|combine|change|modify|reuse)|avoid"
)
# Advice begins a line or a sentence (after . : ; ! ? or an opening bracket), or opens a parenthesis. A
# sentence glued to the one before it ("...within the torchax environment.Please wrap ...", adjacent string
# literals in the raise site without a space) also begins one: a lower-case word, its full stop, a capital
# (but not a method call such as "session.Run(...)").
_SUGGESTION = re.compile(
    rf"(?:^|(?<=[.:;!?(\[]\s)|(?<=[.:;!?]\s\s)|(?<=^[\s>*-])|(?<=\w: )|(?<=\s\()|"
    rf"(?-i:(?<=[a-z]{{3}}[.!?])(?=[A-Z][a-z])(?![A-Z]\w*\()))"
    rf"(?P<text>(?:{_ADVICE})\b(?!-){_SENTENCE_CHAR}*[.!?]?)",
    re.IGNORECASE,
)
# ... or, for the words that only advise, follows a comma ("Guard failed on a parameter, consider using X").
_AFTER_COMMA = re.compile(
    r"(?<=,\s)(?P<text>(?:consider|try|please|you (?:should|could|may want to|might want to|need to|must))\b"
    + _SENTENCE_CHAR
    + r"*[.!?]?)",
    re.IGNORECASE,
)
# ... or, for an order whose object is a setting spelled as one sets it (a --flag, an UPPER_SNAKE variable,
# name=value), follows a comma after the refusal it answers ("Cannot combine --fp16 and --tpu, use --bf16 on
# TPUs", diag80): the clause before the comma must word a failure (_ERRORISH), so a list of what ran is no
# refusal answered.
_ORDER_AFTER_REFUSAL = re.compile(
    r"(?<=,\s)(?P<text>(?i:use|set|pass|add|unset|remove|drop|enable|disable|export|switch to)\s+"
    r"(?-i:--[A-Za-z][\w-]*(?:=[^\s,;]+)?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=[^\s,;]+)?|[a-z][\w.]*=[^\s,;]+)"
    # a setting that is the subject of a statement ("widget failed, set WIDGET_POOL_MAX=64 was ignored") is
    # what happened, not an order
    r"(?![\w=-])(?!\s+(?:was|were|is|are|has|have|had|got|did|does|do|could|would|will)\b)"
    + _SENTENCE_CHAR
    + r"*[.!?]?)"
)
# ... or follows a purpose clause ("To use Pallas on TPU, install jaxlib TPU and libtpu.", or one without an
# object: "dynamic shape operator: aten.nonzero.default; to enable, set torch._dynamo.config.X = True") ...
_PURPOSE = re.compile(
    rf"(?:^|(?<=[.:;!?]\s))To (?:use|run|enable|get|fix|avoid|resolve|support|see)(?: [^.,;\n]{{1,80}})?, "
    rf"(?P<text>(?:{_ADVICE})\b(?!-){_SENTENCE_CHAR}*[.!?]?)",
    re.IGNORECASE,
)
# ... or follows the condition it applies under ("If every key is unique on all axes, set policy='x', else
# ..."): the check names the case and the setting for it. Not a symptom the reader may be seeing ("if you
# are seeing memory errors, try ..."), which _NOT_A_REMEDY refuses as a hint printed for every failure.
_CONDITIONAL = re.compile(
    rf"(?:^|(?<=[.:;!?]\s))If (?!you (?:are )?(?:seeing|see|hit|get|run into)\b)[^.,;:\n]{{3,160}}, "
    rf"(?:then )?(?P<text>(?:{_ADVICE})\b(?!-){_SENTENCE_CHAR}*[.!?]?)",
    re.IGNORECASE,
)
# An order of two words is advice when its object is a setting spelled as one sets it ("remove FOO_BAR=0",
# "pass --no-cache", "unset XLA_FLAGS"); other two-word sentences ("Try again.", "Use it") name too little.
_SHORT_ORDER = re.compile(
    r"(?i:set|unset|remove|pass|add|use|enable|disable|export|drop|raise|increase|lower|reduce)\s+"
    r"(?-i:--[A-Za-z][\w-]*(?:=\S+)?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=\S+)?|[a-z][\w.]*=\S+?)[.!?]?"
)
# ... or says that something would help ("Setting X=... may help", "... is recommended").
# A match can only begin where a sentence does (the line's start or just after its full stop): tried from
# every position, the lazy run made a long error line with no full stop quadratic (seconds for 4,000
# characters).
_HELPS = re.compile(
    r"(?:^|(?<=[.!?]))(?P<text>" + _SENTENCE_CHAR + r"*?\b(?:may|might|could|can|should|would|will) "
    r"(?:help|fix|resolve|avoid|work around)\b[^.!?\n]*|" + _SENTENCE_CHAR + r"*?"
    # the passive form ("This can typically be fixed by setting X = None in your configuration", diag82,
    # flaxformer/activation_partitioning.py)
    r"\b(?:may|might|could|can) (?:typically |usually |often |generally |easily )?be "
    r"(?:fixed|resolved|avoided|solved|worked around) by\b[^.!?\n]*|" + _SENTENCE_CHAR + r"*?"
    r"\bis (?:recommended|strongly recommended)\b[^.!?\n]*)",
    re.IGNORECASE,
)
# ... or states what the check requires of a setting or a call: "server_port should be defined", "expected
# NODE_RANK env variable to be defined", "the cache requires mode=tpu", "runtime.start should only be called
# once", "cache dtype must match compute_dtype". The check names the setting (or call) and what it must be,
# which is the remedy even though it is not worded as an order; the setting's name is kept as named.
_REQUIRED = re.compile(
    r"(?:^|(?<=[.:;!?]\s)|(?<=\w: ))(?P<text>(?:expected |the )?"
    r"(?:env(?:ironment)? variable |argument |option )?`?(?P<name>[A-Za-z_][\w.-]*)`?"
    r"(?: env(?:ironment)? variable| argument| option| flag)? "
    r"(?:(?:(?:should|must|needs? to) be|to be) (?:defined|set|specified|provided|passed)|"
    r"(?:should|must|can) (?:only )?be called (?:once|before|after|first)|"
    # a required call the check found missing ("embedding.prepare_feature_specs_for_training was not called")
    r"(?:was|has|had) not (?:yet )?(?:been )?called)\b[^.!?\n]*[.!?]?|"
    r"[A-Za-z_][\w.-]*(?: [A-Za-z_][\w.-]*){0,3} (?:must|should) (?:match|equal) "
    r"`?(?P<other>[a-z]\w*_\w+)`?[.!?]?|"
    r"[A-Za-z_][\w.-]*(?: [A-Za-z_][\w.-]*){0,3} requires? "
    r"(?P<setting>(?:--)?[A-Za-z_][\w.-]*=[^\s,;)'\"`]+)[.!?]?|"
    # a feature allowed under one setting value only ("SPLIT mode only works on use_fast=True")
    # (diag74: also flags as the subject, and the clipped "X and Y only supported with --mode=decode")
    r"(?:--)?[A-Za-z_][\w.-]*(?: (?:--)?[A-Za-z_][\w.-]*){0,3} (?:only works|works only|(?:(?:is|are) )?only "
    r"(?:supported|available|allowed|valid)|can only be (?:used|enabled)) (?:on|with|when|if|for) "
    r"(?P<only_setting>(?:--)?[A-Za-z_][\w.-]*\s?=\s?[^\s,;)'\"`]+)[.!?]?)",
)
# ... or compares two named settings ("prompt_budget is greater than cache_capacity", "block_q must not
# exceed seq_len"): the check names both settings and the order they must keep, which is the remedy.
# Both sides must be settings (snake_case names), so "loss_scale is greater than 1000" is no comparison. A
# setting may carry its value in brackets or after a space ("cache_sequence_length 1000 should divide
# paged_attention_page_size 64").
_SNAKE_SETTING = r"`?(?P<{}>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`?"
"""A snake_case setting name, its group named by `.format`: what a comparison or a length check names."""
_SETTING = _SNAKE_SETTING + r"(?: \([^()\n]{{1,24}}\)| -?\d+(?:\.\d+)?\b)?"
_COMPARED = re.compile(
    r"(?:^|(?<=[.:;!?]\s)|(?<=\w: ))(?P<text>(?:the )?"
    + _SETTING.format("a")
    + r" (?:is (?:not )?(?:greater|larger|bigger|higher|smaller|less|lower) than(?: or equal to)?|"
    r"exceeds|(?:must|should|cannot|can't|may) (?:not )?(?:be )?(?:exceed|(?:greater|larger|bigger|higher|"
    r"smaller|less|lower) than(?: or equal to)?|at (?:most|least)|(?:evenly )?divisible by|divide))"
    r" (?:the )?" + _SETTING.format("b") + r"(?![\w(])[^.!?\n]*[.!?]?)",
)
# ... or states what one named setting must be ("hicache_ratio must be positive, got 0.0", "X_TIMEOUT_S must
# be non-negative", "lora_scaling is required when enable-static-lora is enabled", "--use-x requires
# --page-size > 1"): a library's check of its own configuration names the setting and the value it refuses,
# which is the remedy whatever the library. The name must look like a setting (snake_case, a --flag, an
# UPPER_SNAKE variable or a backticked name), so "the input must be positive" names nothing.
# A name may carry its value the way Python's f"{x=}" prints it ("bkv_compute=64 must be a multiple of 128",
# diag83): kernels print their block sizes so, and the setting is still the one to change.
_SETTING_NAME = (
    r"(?:--[A-Za-z][\w-]*|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9.]*_[a-z0-9_.]*[a-z0-9]|"
    r"`[A-Za-z_][\w.-]*`)"
)
# what the value must be: a sign, a bound, a type, a set of values, a boolean, or given at all
_VALUE_WORD = (
    r"(?:positive|non-?negative|negative|non-?zero|zero|greater|larger|bigger|smaller|less|lower|higher|"
    r"at (?:least|most)|between|in the range|within|one of|either|"
    r"an? (?:integer|int|float|number|bool|boolean|string|list|tuple|dict|multiple|power)|"
    r"true|false|none|null|empty|enabled|disabled|set|specified|provided|given|[<>=!]=?|\d)"
)
_CONSTRAINED = re.compile(
    r"(?:^|(?<=[.:;!?,]\s)|(?<=\w: )|(?<=\bwhen )|(?<=\bif ))(?P<text>(?:the )?"
    r"(?:value of |option |argument |setting |flag )?(?P<name>" + _SETTING_NAME + r")(?:=[^\s,;]{1,40})?"
    r"(?: \([^()\n]{1,40}\))? "
    r"(?:(?:must|should|needs? to|has to) (?:not )?be|(?:cannot|can't|can not|may not) be) "
    r"(?:(?:a |an )?" + _VALUE_WORD + r"\b|[<>=!]=?)" + _SENTENCE_CHAR + r"*[.!?]?|"
    r"(?:the )?(?P<needed>" + _SETTING_NAME + r") (?:is|are) (?:required|mandatory|needed)"
    r"(?: (?:when|if|for|with|by)\b" + _SENTENCE_CHAR + r"*)?[.!?]?|"
    r"[A-Za-z_`-][\w.`-]*(?: [A-Za-z_`-][\w.`-]*){0,3} requires? (?P<bound>" + _SETTING_NAME + r") ?"
    r"(?:[<>]=?|==|!=) ?[\w.'\"-]+" + _SENTENCE_CHAR + r"*[.!?]?)",
)
# Two named settings the check refuses together ("Cannot specify both init_from and init_from_hf", "--a and
# --b are mutually exclusive", "use_x cannot be combined with use_y", "`a` is incompatible with `b`"): the
# remedy is to keep one of them. Both sides must look like settings (as
# _SETTING_NAME), so "cannot both read and write" or "both inputs" name nothing.
_REFUSE = r"(?:cannot|can't|can not|may not|must not|should not)"
_EXCLUDED = re.compile(
    "|".join(
        (
            rf"\b{_REFUSE} (?:specify|use|set|pass|enable|provide|give|have|combine) both "
            rf"(?P<a1>{_SETTING_NAME}) and (?P<b1>{_SETTING_NAME})",
            rf"(?<![\w`-])(?P<a2>{_SETTING_NAME}) and (?P<b2>{_SETTING_NAME}) (?:are mutually exclusive|"
            rf"{_REFUSE} (?:both )?be (?:used|set|specified|enabled|given|passed|combined)"
            r"(?: together| at the same time| simultaneously)?|"
            r"are (?:not compatible|incompatible)(?: with each other)?|conflict with each other)",
            rf"(?<![\w`-])(?P<a3>{_SETTING_NAME}) {_REFUSE} be (?:used|combined|set|specified|enabled) "
            rf"(?:together )?with (?P<b3>{_SETTING_NAME})",
            rf"(?<![\w`-])(?P<a4>{_SETTING_NAME}) (?:is|are) "
            rf"(?:incompatible|not compatible|mutually exclusive) with (?P<b4>{_SETTING_NAME})",
        )
    ),
    re.IGNORECASE,
)
# A setting the check lets be set once only ("Value of jax.config.x not expected to be changed after
# initialization", "`mesh` cannot be modified once the backend is initialized"): the remedy is to set it
# before start-up and leave it. Adjacent string literals without a space ("to bechanged") are read too.
_FROZEN = re.compile(
    r"(?P<text>(?:(?:[Tt]he )?[Vv]alue of )?(?P<name>" + _SETTING_NAME + r")[^.!?\n]{0,40}? "
    r"(?:cannot|can't|can not|must not|should not|may not|is not allowed to|(?:is )?not expected to) "
    r"be ?(?:changed|modified|updated|reset|altered|overridden|set again) (?:after|once)\b[^.!?\n]*[.!?]?)"
)
# Settings of which the check needs one ("At least one of `num_partitions` or `model_parallel_submesh` must
# be set", "one of --a, --b is required"): set one of them.
_ONE_OF_NEEDED = re.compile(
    r"(?P<text>\b(?i:at least|exactly) one of (?P<names>(?:"
    + _SETTING_NAME
    + r"(?:,? (?:or|and) |, )){1,4}"
    + _SETTING_NAME
    + r") (?:must|should|needs? to|has to) be (?:set|specified|provided|given|passed|defined)"
    r"\b[^.!?\n]*[.!?]?)"
)
_ONE_NAME = re.compile(_SETTING_NAME)
# A check's condition with its value named the way Python's f"{x=}" prints it ("..., but got scale=0.02"):
# the setting the check refused is the name before the `=`.
_GOT_SETTING = re.compile(
    r"(?:^|(?<=[.:;!?]\s)|(?<=\w: ))(?P<text>[^.!?\n]*\b(?:must|should|needs? to|has to|is required|expected)"
    r"\b[^.!?\n]*?,? "
    r"(?:but )?got `?(?P<name>[a-z_][\w.]*)=[^\s,;)`]+`?[.!?]?)"
)
# A dtype a check expected ("per_example_xent is expected to be float32, but got bfloat16", "expected x to be
# of dtype int32"): the name and the dtype to cast it to. Adjacent literals without a space ("gotbfloat16")
# are read too.
_DTYPE_NAME = r"(?:jnp\.|np\.|torch\.)?(?:b?float(?:8|16|32|64)|u?int(?:4|8|16|32|64)|bf16|f16|f32|f64)\b"
_DTYPE_EXPECTED = re.compile(
    r"(?P<text>`?(?P<name>[A-Za-z_][\w.]*)`? (?:is|was|are) expected to (?:be|have) (?:of )?(?:dtype |type )?"
    r"(?P<dtype>"
    + _DTYPE_NAME
    + r")[^.!?\n]*[.!?]?|[Ee]xpected `?(?P<name2>[A-Za-z_][\w.]*)`? to (?:be|have) "
    r"(?:of )?(?:dtype |type )?(?P<dtype2>" + _DTYPE_NAME + r")[^.!?\n]*[.!?]?)"
)
# A feature a check says needs a value given ("Shuffling requires specifying a seed", "Resuming requires
# passing a `run_id`"): the thing to give is the noun after the verb (diag76).
_NEEDS_GIVEN = re.compile(
    r"(?P<text>\b[A-Za-z][\w-]*(?: [\w-]+){0,3} requires? (?:specifying|setting|passing|providing|giving) "
    r"(?:an? |the )?(?:explicit )?`?(?P<name>[A-Za-z_][\w.-]*[A-Za-z0-9_])`?[^.!?\n]*[.!?]?)"
)
_NOT_A_NAME = frozenset({"value", "values", "it", "them", "one", "this", "that", "valid", "either", "both"})
# Two counts a check set side by side with "vs" ("8 files vs 16 shards requested", "3 hosts vs. 4 slices"):
# the counted things are what to change (diag76).
_COUNTS_VERSUS = re.compile(
    r"(?<![\w.])(?P<va>\d+) (?P<a>[A-Za-z][\w-]*) vs\.? (?P<vb>\d+) (?P<b>[A-Za-z][\w-]*)"
)
# The lengths of two list settings a check found unequal ("length of vocab_sizes: 26 is not equal to the
# length of embedding_dim: 13", "len(`a_list`) != len(`b_list`)"): one entry of each per table, layer or
# feature, so the lists are what to change (diag79). Both must be settings (snake_case), with their lengths.
_LENGTHS_COMPARED = re.compile(
    r"(?P<text>\b(?:the )?(?:length|len|number of (?:entries|elements|items)) of "
    + _SNAKE_SETTING.format("a")
    + r"(?::? ?\(?(?P<va>\d+)\)?)? (?:is not equal to|does not match|doesn't match|differs from|must (?:be "
    r"equal to|equal|match)) (?:the )?(?:length|len|number of (?:entries|elements|items)) of "
    + _SNAKE_SETTING.format("b")
    + r"(?::? ?\(?(?P<vb>\d+)\)?)?[^.!?\n]*[.!?]?)"
)
# The labelled values a mismatch line lists below it, one "label: value" a line ("worker count in
# checkpoint: 32", "worker count in dataloader: 16"), the labels sharing their first word (diag76).
_LABEL_LINE = re.compile(r"^\s*(?P<name>[A-Za-z][\w-]*(?: [\w.-]+){0,5}): (?P<value>\S[^\n]{0,80})$")
# A feature a check refuses in one mode or stage of the run ("During evaluation, packing can't be used",
# "Dropout cannot be used during inference"): turn that feature off for that mode (diag76).
_REFUSED_IN_MODE = re.compile(
    r"(?P<text>\b(?:During|While|When|In) (?:the )?\w+(?: \w+){0,2}, (?:the )?(?P<name>[\w-]+(?: [\w-]+)?) "
    r"(?:can't|cannot|can not|may not|must not) be used\b[^.!?\n]*[.!?]?|"
    r"\b(?P<name2>[A-Za-z][\w-]*) (?:can't|cannot|can not|may not|must not) be used (?:during|while) "
    r"(?:the )?\w+(?: \w+){0,2}[.!?]?)"
)
# A bound a check refuses in words ("Per-device batch size < 1 not supported for auto sharding", "num_slices
# > 1 is not allowed with ..."): the quantity is what to change, the opposite bound what it must meet.
_BOUND_REFUSED = re.compile(
    r"(?P<text>(?P<name>[A-Za-z][\w-]*(?: [A-Za-z][\w-]*){0,3}) (?:<=?|>=?|==|!=) ?\d+(?:\.\d+)? "
    r"(?:is |are )?not (?:supported|allowed|permitted)\b[^.!?\n]*[.!?]?)"
)
# Two quantities a check compared, named in words with their values in brackets ("Batch size (24) must be
# divisible by entire data mesh size (16)", "The number of available devices (8) do not match the expected
# number of devices ... (4)", "Total TPU resources (16) not divisible by TPUs requested per worker (3)", a
# value with its unit, "(16 TPU devices) do not divide evenly into"): the quantities are what to change.
_QUANTITY = r"[A-Za-z][\w-]*(?: [A-Za-z\"][\w\"-]*){{0,{}}}"
_QUANTITY_VALUE = r"\((?P<{}>\d+)(?: [A-Za-z][\w-]*){{0,3}}\)"
_COMPARED_QUANTITIES = re.compile(
    r"(?P<text>(?:the )?(?P<a>" + _QUANTITY.format(5) + r") " + _QUANTITY_VALUE.format("va") + " "
    r"(?:(?:must|should|does|do) (?:not )?(?:be )?(?:(?:evenly )?divisible by|exceed|(?:greater|larger|"
    r"bigger|smaller|less|lower|higher) than(?: or equal to)?|at (?:most|least)|equal(?: to)?|match|"
    r"divide(?: evenly)?(?: into)?)|"
    r"(?:is |are )?not (?:evenly )?divisible by|"
    r"(?:is|are) (?:divisible by|greater than|larger than|smaller than|less than)|"
    r"exceeds?|do(?:es)? not match|differs? from) "
    r"(?:the )?(?P<b>" + _QUANTITY.format(8) + r"?) " + _QUANTITY_VALUE.format("vb") + r"[^.!?\n]*[.!?]?)"
)
# A value a check refuses for how it is written, with the form it expects ("Invalid TPU name format: v6e_8.
# Expected format: <type>-<size> (e.g. v4-128)", diag78): the remedy is the value rewritten in that form.
_FORMAT_REFUSED = re.compile(
    r"(?P<text>\b(?i:invalid|malformed|bad|unrecogni[sz]ed|unparsable|unparseable) [\w ]{0,40}?format"
    r"(?: for [^:\n]{1,40})?: ?[`'\"]?(?P<value>[^\s`'\"]{1,80}?)[`'\"]?[.,;]? (?:[^\n]{0,40}?)"
    r"(?i:expected|required|valid|correct) (?i:format|form)(?: is)?:? [`'\"]?(?P<form>[^\s`'\"]{1,80}?)"
    r"[`'\"]?(?: \((?i:e\.g\.|for example|such as|like),? (?P<example>[^()\n]{1,60})\))?[.!?]?(?=\s|$))"
)
# The same refusal with the value quoted after "in" and the form quoted before the word "format" ("Invalid
# profile option format in 'host_tracer_level=3'. Expected 'key:value' format.", tpu-inference's profiler
# options; round diag104, fold A).
_FORMAT_REFUSED_QUOTED = re.compile(
    r"(?P<text>\b(?i:invalid|malformed|bad|unrecogni[sz]ed) [\w ]{0,40}?format (?:in|of|for) "
    r"[`'\"](?P<value>[^`'\"\n]{1,80})[`'\"][.,;]? (?i:expected|required) (?:the )?"
    r"[`'\"](?P<form>[^`'\"\s]{1,40})[`'\"] (?i:format|form)[.!?]?(?=\s|$))"
)
# a literal form of two words and one separator ("key:value", "name=value") and a value written as such a pair
_PAIR_FORM = re.compile(r"[A-Za-z]+(?P<sep>[:=])[A-Za-z]+")
_PAIR_VALUE = re.compile(r"(?P<name>[A-Za-z_][\w.-]*)\s*(?P<sep>[:=])\s*(?P<value>[^\s:=]+)")
# a form spelt as placeholders and the literal separators between them ("<type>-<size>", "{x}x{y}")
_PLACEHOLDER = re.compile(r"<\w+>|\{\w+\}")
# A setting a check refuses for one case ("Cannot specify instance type (got 'n2-standard-8') for TPU VM",
# "`--num-gpus` cannot be set when using a TPU", diag78): leave it out there, or change the case. A setting
# named in words is also spelt as a config key ("instance type", `instance_type`).
_REFUSED_FOR = re.compile(
    r"(?P<text>\b(?i:cannot|can't|can not|may not|must not) (?i:specify|set|pass|provide|give) "
    r"(?!(?i:both)\b)"
    r"(?:the )?`?(?P<name>" + _SETTING_NAME + r"|[a-z]+(?: [a-z]+){0,2}?)`?"
    r"(?: \((?i:got|given|was|value) [^()\n]{1,60}\))? (?i:for|with|when using|on) "
    r"(?P<case>[^.!?\n]{1,60})[.!?]?(?=\s|$)|"
    r"(?<![\w`-])(?:the )?`?(?P<name2>"
    + _SETTING_NAME
    + r"|[a-z]+(?: [a-z]+){0,2}?)`?(?: \((?i:got|given|was|value) [^()\n]{1,60}\))? "
    r"(?i:cannot|can't|can not|may not|must not) be (?i:specified|set|passed|provided|given) "
    r"(?i:for|with|when using|on) (?P<case2>[^.!?\n]{1,60})[.!?]?(?=\s|$))"
)
_NOT_A_SETTING_WORD = frozenset(
    {"it", "this", "that", "them", "these", "those", "anything", "a", "an", "the"}
)


# A comparison about divisibility: its fix says which way round the two must divide.
_DIVISIBILITY = re.compile(r"\bdivisible by\b|\bdivides?\b|\bmultiple of\b", re.IGNORECASE)
DIVISIBILITY_HINT = (
    " For a divisibility check, make the larger a multiple of the smaller (the smaller a divisor of it)."
)
# A mismatch line that ends in a colon and lists the compared values below it, one `expr=value` a line (the
# way Python's f"{expr=}" prints them): the expressions are the settings to change.
# A block of fixes the message computed itself, a heading then one assignment a line ("Suggested fixes:" /
# "  batch = 16", torch.export's constraint violations, diag84: torch/fx/experimental/symbolic_shapes.py at
# https://github.com/pytorch/pytorch/blob/cf30153c4c131c8164ee7798e5022d810682e2cb/torch/fx/experimental/symbolic_shapes.py#L3761).
_FIXES_HEADING = re.compile(r"^\s*(?:Suggested|Proposed|Possible) fix(?:es)?:\s*$", re.IGNORECASE)
_FIX_ASSIGNMENT = re.compile(
    r"^\s+(?P<name>[A-Za-z_][\w.]*(?:\[[^\]]{1,20}\])?) ?=(?!=) ?(?P<value>\S[^\n]{0,80})$"
)
MAX_FIX_LINES = 6
_VALUE_LINE = re.compile(r"^\s*(?P<name>[A-Za-z_][\w.]*(?:\[[^\]]{1,20}\])?)=(?P<value>\S.*)$")
MAX_VALUE_LINES = 8
# The named shape of each argument a check lists below its error line, one a line ("  args[0].named_shape ==
# {'batch': 8, 'seq': 1024}", "x: {'seq': 2048}"): an axis name whose size differs between two arguments is
# what to fix (diag80, penzai's nmap: penzai/core/named_axes.py, https://github.com/google-deepmind/penzai).
_SHAPE_MAP_LINE = re.compile(r"^\s*(?P<label>[^\s:=]{1,80}?)\s*(?:==|=|:)\s*(?P<map>\{[^{}\n]*\})\s*$")
_AXIS_SIZE = re.compile(r"['\"](?P<axis>[A-Za-z_][\w.-]*)['\"]\s*:\s*(?P<size>\d+)\b")
_EXCEPTION_PREFIX = re.compile(r"^\s*(?:[\w.]+(?:Error|Exception)\b:\s*)")
# A boolean setting the message refuses at the value it was given ("Option `create=True` with
# `active_processes` set is not supported"): the other value is the one to use.
_REFUSED_BOOL = re.compile(
    r"`?(?P<name>[a-z][\w.]*)\s?=\s?(?P<value>True|False)`?(?:[^.!?\n]{0,80}?) (?:is|are) not "
    r"(?:supported|allowed|permitted|compatible)|"
    # diag76: the value said with "is" ("drop_remainder is False not supported yet")
    r"`?(?P<name2>[a-z][a-z0-9]*(?:_[a-z0-9]+)+)`? is (?P<value2>True|False)\b[^.!?\n]{0,40}? "
    r"(?:is )?not (?:supported|allowed|permitted|implemented)"
)
# ... or prints the values it compared as `name=value` pairs on a mismatch line ("stage count does not match
# schedule count. len(stages)=4, len(schedules)=3"): the names are the remedy.
_MISMATCH = re.compile(
    r"\b(?:does not match|do not match|mismatch(?:ed)?|must (?:match|equal)|differ)\b", re.IGNORECASE
)
_PAIR = re.compile(r"(?<![\w.])(?:len\()?(?P<name>[a-z][a-z0-9_]*)\)?=(?P<value>\d+)\b")
# ... or states what it expected of the arguments ("foo(): expected the size of dimension 1 of `a` (6) to be
# equal to the size of dimension 0 of `b` (5)", "Expected all inputs to have the same rank"): the condition
# the call must meet, which is the remedy when no advice is given. Not "Expected: x; got: y" (no condition).
_EXPECTED = re.compile(
    r"(?<![\w-])(?<!\b(?:is|be) )(?<!\b(?:was|are) )(?<!\bwere )"
    r"(?P<text>(?-i:[Ee])xpected (?!one of\b)(?:[^\n]{2,240}?) to "
    r"(?:be|have|match|equal|agree|contain)\b[^\n]*?)(?:[.!?](?=\s|$)|$)"
)
# ... or states an order two kinds of items must keep in a list ("operand sharding at index 0 must have all
# manual axes come before free axes", "positional arguments must come before keyword arguments", "X must
# precede Y"): the two things it names are what to reorder, the first named first (diag86). Up to six words
# before the match are quoted too (_LEAD_WORDS) so the quote names whose list it is.
_WORDS = r"[A-Za-z][\w-]*(?: [A-Za-z][\w-]*){0,2}?"
_STOP = r"(?!(?:in|of|at|for|on|with|and|or|to|than|when|if|but|so|is|are|was)\b)"
_OBJECT = r"[A-Za-z][\w-]*(?: " + _STOP + r"[A-Za-z][\w-]*){0,2}"
_LEAD_WORDS = re.compile(r"(?:[\w-]+ ){1,6}$")
_ORDERED = re.compile(
    r"(?P<text>(?:"
    r"(?P<a>" + _WORDS + r") (?:must|should|needs? to|has to) (?:always )?"
    r"(?:come|appear|go|be (?:placed|listed|ordered|specified|given)) before|"
    r"(?P<a2>" + _WORDS + r") (?:must|should) precede|"
    r"(?:must|should|needs? to|has to) (?:have (?:all |the )?(?P<a3>" + _WORDS + r") (?:come|appear|go)|"
    r"(?:list|put|place) (?:all |the )?(?P<a4>" + _WORDS + r")) before"
    r") (?:any |all |the )?(?P<b>" + _OBJECT + r")(?![\w-])[^.!?\n]*[.!?]?)"
)
# ... or names the likely cause in a sentence of its own ("This typically means that a jit-wrapped function
# was called with a non-array argument ... not marked as static using static_argnums", "This can happen if
# the body does not modify any Refs"): the people who wrote the check say what usually leads to it, and the
# things the sentence names are what to change. Like a stated condition it says what holds, not what to do.
_CAUSE = re.compile(
    r"(?:^|(?<=[.:;!?]\s)|(?<=[.:;!?]\s\s))(?P<text>(?:This|That|It|This error|The error|This failure) "
    r"(?:(?:typically|usually|often|commonly|generally|probably|most likely|likely) )?"
    r"(?:means|indicates|suggests|happens|occurs|(?:can|may|might|could|will) (?:happen|occur|be caused)|"
    r"is (?:(?:typically|usually|often|commonly|probably|most likely|likely) )?(?:because|due to|caused by)|"
    r"(?:can|may|might|could) be (?:because|due to))\b[^\n]*?)(?:[.!?](?=\s|$)|$)|"
    r"(?:^|(?<=[.:;!?]\s))(?P<common>(?:A|The) (?:common|usual|likely|typical|frequent) (?:cause|reason) "
    r"(?:of this (?:error |failure )?)?is\b[^\n]*?)(?:[.!?](?=\s|$)|$)",
    re.IGNORECASE,
)
# A pointer to documentation ("please read https://...", "see the guide") sends the reader elsewhere; it is
# no remedy, whatever the URL's words look like.
_DOCS_POINTER = re.compile(
    r"(?:please\s+)?(?:(?:go\s+)?read|see|refer to|visit|consult|check out|look at)\s+"
    r"(?:the\s+|our\s+|this\s+)?(?:https?://|docs?\b|documentation|guide|page|tutorial|faq)",
    re.IGNORECASE,
)
# A message a terminal or a pager wrapped at a fixed width ("It's ve" / "ry important"): runs of lines of one
# length, at least one broken inside a word, are read as the single line they were.
WRAP_MIN_WIDTH = 40
WRAP_MIN_LINES = 3
# "You can only use one of --a, --b at a time", "only one of x, y may be set": options that exclude each other
_ONLY_ONE_OF = re.compile(r"\bonly (?:(?:use|set|pass|specify|choose|enable) )?one of\b", re.IGNORECASE)
_TPU_OPTION = re.compile(r"(?:--)?(?:use_)?tpus?", re.IGNORECASE)
_INFO_LEVEL = re.compile(r"\s*(?:INFO|DEBUG|NOTICE|TRACE)\b")
# Advice addressed to the reader with an action that changes something, kept even when it names nothing the
# _NAMED patterns know ("please inspect the digest below" points at evidence; it is no remedy).
_DIRECT = re.compile(
    r"^(?:please|you (?:should|must|need to|have to|will need to))\s+(?:also |first |then )?"
    r"(?:remove|restart|reboot|recreate|delete|replace|upgrade|downgrade|install|reinstall|update|set|unset|"
    r"use|switch|reduce|increase|lower|raise|disable|enable|pass|add|specify|move|rerun|re-run|make sure|"
    r"ensure|change|pin|kill|stop|free|release|close|call|wrap|avoid|do not|don't|drain|exclude|shrink)\b"
    r"(?:\s+\S+){2,}",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[^\s.\d])[.!?](?=\s|$)")
_NOT_A_REMEDY = re.compile(
    r"file (?:a|an) (?:bug|issue)|report (?:this|it|the|a bug)|open an issue|contact|let us know|"
    r"github\.com/[\w.-]+/[\w.-]+/issues|reproducer|minimal (?:repro|example)|stack ?trace|"
    r"see (?:above|below)|for more (?:info|details|information)|try again later|please wait|"
    r"JAX_TRACEBACK_FILTERING|include these|traceback|stack frames|verbose|disable this warning|"
    r"to (?:see|get|print|show) (?:more|the full|a full)|TF_CPP_\w+|TORCH_SHOW_CPP_STACKTRACES|"
    # jax's backend-selection and service notices: advice to skip the TPU, not to fix it
    # (jax/_src/xla_bridge.py, jax/_src/distributed.py, https://github.com/jax-ml/jax).
    r"JAX_PLATFORMS|skip this backend|uninstall the failing plugin|feature request|preemption service|"
    # a hint printed for every failure of a step, conditional on a symptom ("if you are seeing memory
    # errors ..., try lowering NUM_PRECOMPILE_WORKERS": tpu_inference/runner/compilation_manager.py)
    r"if you (?:are )?(?:seeing|see|hit|get|run into)|"
    # XLA's hint for every unknown flag in XLA_FLAGS points TensorFlow users to TF_XLA_FLAGS; TPU flags belong
    # in LIBTPU_INIT_ARGS instead (xla/parse_flags_from_env.cc, https://github.com/openxla/xla)
    r"specify these on the TF_XLA_FLAGS",
    re.IGNORECASE,
)
# Advice a message gives for another accelerator ("To use Pallas on GPU, install jaxlib GPU ..."): a message
# that lists one remedy per platform holds the TPU's beside it, and only that one fits a TPU log.
_OTHER_PLATFORM = re.compile(
    r"\b(?:on|for|with|using) (?:an? )?(?:NVIDIA |AMD )?(?:GPU|CUDA|ROCm|Metal|XPU|NPU)s?\b"
)
# a limit named in words with the direction to move it ("a longer initialization timeout")
_LIMIT_IN_WORDS = re.compile(
    r"\b(?:longer|shorter|larger|smaller|higher|lower|bigger) (?:[a-z_]+ ){0,2}"
    r"(?:timeout|deadline|limit|size|fraction|threshold|interval|budget)\b"
)
_NAMED = (
    ("command", re.compile(r"(?<=\")\$\s*[^\"]{2,80}(?=\")|(?<=`)\$\s*[^`]{2,80}(?=`)")),
    ("flag", re.compile(r"(?<![\w-])--[A-Za-z][\w-]*(?:=[^\s,;)'\"`]+)?")),
    ("environment variable", re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b(?:=[^\s,;)'\"`]+)?")),
    (
        "package version",
        re.compile(
            r"\b(?:jax|jaxlib|libtpu(?:-nightly)?|torch|torch_xla|torch-xla|tensorflow|tpu-inference|vllm|"
            r"flax|numpy|protobuf)\s*(?:==|>=|<=|~=|\bversion\b|\bto\b)?\s*v?\d+\.\d+[\w.+-]*",
            re.IGNORECASE,
        ),
    ),
    (
        "package",
        re.compile(
            r"\b(?:jaxlib|jax|libtpu(?:-nightly)?|torch_xla|torch-xla|torchvision|tensorflow|tpu-inference)\b"
        ),
    ),
    # the replacement in "use float32 or bfloat16 instead": what to use, even when it is a plain word
    (
        "replacement",
        re.compile(
            r"(?<=\buse )[A-Za-z_][\w.]*(?= instead\b| or [\w.]+ instead\b)|"
            r"(?<= or )[A-Za-z_][\w.]*(?= instead\b)|"
            # a replacement in a few plain words ("Use a regular tensor instead.")
            r"(?:(?<=\b[Uu]se a )|(?<=\b[Uu]se an ))[A-Za-z_][\w.]*(?: [A-Za-z_][\w.]*){0,2}(?= instead\b)"
        ),
    ),
    ("API", re.compile(r"`[^`\s][^`]{0,60}`|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\([^()\s]{0,40}\))?")),
    ("parameter", re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b(?:=[^\s,;)'\"`]+)?")),
    ("setting", re.compile(r"\b[a-z][a-z0-9]*=[^\s,;)'\"`]+")),
    ("limit", _LIMIT_IN_WORDS),
)


@dataclass(frozen=True)
class Suggestion:
    """One piece of advice the log states, where it was, and the things it names."""

    text: str
    line: int
    named: tuple[str, ...]
    # "advice"; "comparison": a check that names two settings and the order they must keep; "expectation":
    # the condition a check states its arguments must meet; "cause": what the message says usually leads to
    # it; "constraint": what one named setting must be (its value refused by the library's own check);
    # "exclusion": two named settings the check refuses together; "mode_refusal": a feature the check refuses
    # in one mode or stage of the run; "format": a value refused for how it is written, named with the form
    # expected; "refused_for": a setting refused for one case, named with it; "axis_sizes": an axis name the
    # arguments of one call give different sizes; "order": two kinds of items a check wants in a given order
    kind: str = "advice"


def _sentence(text: str) -> str:
    end = _SENTENCE_END.search(text)
    sentence = text[: end.end()] if end is not None else text
    sentence = sentence.strip().rstrip(",;:")
    return clip(sentence, MAX_TEXT)


def _named(text: str) -> tuple[str, ...]:
    found: dict[str, None] = {}
    taken: list[tuple[int, int]] = []
    for kind, pattern in _NAMED:
        for m in pattern.finditer(text):
            if any(m.start() < end and start < m.end() for start, end in taken):
                continue
            value = m.group(0).strip("`'\".,").removeprefix("$").strip()
            if kind == "limit":  # the setting, without the direction the sentence gives it
                value = value.split(" ", 1)[1]
            if len(value) < 3 or value.lower() in {"e.g", "i.e", "etc"} or re.fullmatch(r"[\d.]+", value):
                continue
            taken.append((m.start(), m.end()))
            found.setdefault(value, None)
    return tuple(found)


def _rejoined(lines: Sequence[str]) -> list[str]:
    """`lines` with each hard-wrapped run joined into its first line (the others left empty, so indices keep).

    A run is at least WRAP_MIN_LINES lines of one length (WRAP_MIN_WIDTH or more) followed by its shorter
    last line, with at least one break between two letters: a width a program chose never splits a word."""
    out = list(lines)
    i = 0
    while i < len(lines):
        width = len(lines[i])
        j = i
        while j + 1 < len(lines) and len(lines[j + 1]) == width:
            j += 1
        end = j + 1 if j + 1 < len(lines) and 0 < len(lines[j + 1]) < width else j
        mid_word = any(
            lines[k][-1:].isalpha() and lines[k + 1][:1].isalpha() for k in range(i, end) if lines[k + 1]
        )
        if width >= WRAP_MIN_WIDTH and end - i + 1 >= WRAP_MIN_LINES and j > i and mid_word:
            out[i] = "".join(lines[i : end + 1])
            for k in range(i + 1, end + 1):
                out[k] = ""
            i = end + 1
        else:
            i = j + 1 if j > i else i + 1
    return out


def _near_errors(lines: Sequence[str]) -> set[int]:
    """An error line and the few lines after it (a message's advice often ends a multi-line error)."""
    near: set[int] = set()
    if sum(1 for line in lines if line.strip()) <= WHOLE_MESSAGE_LINES:
        return set(range(len(lines)))
    for i, line in enumerate(lines):
        if _ERRORISH.search(line):
            near.update(range(i, min(len(lines), i + 1 + ERROR_TAIL)))
    if not near:
        # a log of warnings only (a paste of Python's "file:line: XWarning: ..." lines, diag110): each warning
        # is the message, with its advice, whatever else (progress output) surrounds it
        for i, line in enumerate(lines):
            if _WARNING_LINE.search(line):
                near.update(range(i, min(len(lines), i + 1 + ERROR_TAIL)))
    return near


def find_suggestions(lines: Sequence[str], limit: int = MAX_SUGGESTIONS) -> list[Suggestion]:
    """The advice sentences in the log that name something, the last (nearest the fatal error) first."""
    found: list[Suggestion] = []
    seen: set[str] = set()
    near_errors = _near_errors(lines)
    lines = _rejoined(lines)
    for index in range(len(lines) - 1, -1, -1):
        line = lines[index]
        if index not in near_errors:
            continue
        if len(line) > 4000 or line.lstrip().startswith(('File "', "#", "//")):
            continue
        matches = [
            *_SUGGESTION.finditer(line),
            *_PURPOSE.finditer(line),
            *_AFTER_COMMA.finditer(line),
            *(m for m in _ORDER_AFTER_REFUSAL.finditer(line) if _ERRORISH.search(line[: m.start()])),
            *_CONDITIONAL.finditer(line),
        ]
        for m in [*matches, *_HELPS.finditer(line), *_REQUIRED.finditer(line)]:
            text = _sentence(_with_indented_object(m["text"], lines, index))
            if line[m.start("text") - 1 : m.start("text")] == "(":  # "(use float32 instead)"
                text = text.split(")", 1)[0].strip()
            # the clause that leads into the advice counts too ("if you are seeing X, try Y" is conditional)
            lead = re.split(r"[.!?]\s", line[: m.start()])[-1]
            short = len(text.split()) < 3 and not _SHORT_ORDER.fullmatch(text)
            if short or _NOT_A_REMEDY.search(lead + text) or _DOCS_POINTER.match(text):
                continue
            if _OTHER_PLATFORM.search(lead + line[m.start() : m.start("text")]):
                continue
            named = _named(text)
            if m.re is _REQUIRED:  # the setting the check requires, even one no _NAMED pattern knows
                required = (m["setting"] or m["only_setting"] or m["other"] or m["name"]).rstrip(".!?")
                named = tuple(dict.fromkeys([required, *named]))
            if (not named and not _DIRECT.match(text)) or text.lower() in seen:
                continue
            seen.add(text.lower())
            found.append(Suggestion(text=text, line=index, named=named))
            break
        else:
            stated = (
                _suggested_fixes(line, index, lines)
                or _refused_in_mode(line, index)
                or _excluded(line, index)
                or _refused_for(line, index)
                or _format_refused(line, index)
                or _one_of_needed(line, index)
                or _frozen(line, index)
                or _axis_sizes(line, index, lines)
                or _compared(line, index, lines)
                or _constrained(line, index)
                or _ordered(line, index)
                or _expected(line, index)
                or _stated_cause(line, index)
            )
            if stated is not None and stated.text.lower() not in seen:
                seen.add(stated.text.lower())
                found.append(stated)
        if len(found) >= limit:
            break
    return found


def _suggested_fixes(line: str, index: int, lines: Sequence[str]) -> Suggestion | None:
    """The assignments a message lists under a "Suggested fixes:" heading: fixes the library computed for
    this run, so each names the value to set (the heading alone, with nothing under it, is no remedy)."""
    if not _FIXES_HEADING.match(line):
        return None
    fixes: list[str] = []
    for following in lines[index + 1 : index + 1 + MAX_FIX_LINES]:
        m = _FIX_ASSIGNMENT.match(following)
        if m is None:
            break
        fixes.append(f"{m['name']} = {m['value'].strip()}")
    if not fixes:
        return None
    return Suggestion(text="Suggested fixes: " + "; ".join(fixes), line=index, named=tuple(fixes))


def _with_indented_object(text: str, lines: Sequence[str], index: int) -> str:
    """Advice that ends in a colon with what to do indented on the next line ("Graph break from
    `Tensor.item()`, consider setting:" then "    torch._dynamo.config.capture_scalar_outputs = True"), as one
    sentence; other advice as it is."""
    if not text.rstrip().endswith(":") or index + 1 >= len(lines):
        return text
    following = lines[index + 1]
    if not following[:1].isspace() or not following.strip() or _ERRORISH.search(following):
        return text
    return f"{text.rstrip()} {following.strip()}"


def _is_error_line(line: str) -> bool:
    """Whether a line reads as an error and not as an info-level log line: only an error line states the
    condition of the check that raised it."""
    return _ERRORISH.search(line) is not None and not _INFO_LEVEL.match(line)


def _error_match(pattern: re.Pattern[str], line: str) -> re.Match[str] | None:
    """`pattern`'s match in an error line (None in any other line)."""
    return pattern.search(line) if _is_error_line(line) else None


def _expected(line: str, index: int) -> Suggestion | None:
    """The condition an error line says the check expected of its arguments."""
    if not _is_error_line(line):
        return None
    m = _EXPECTED.search(line)
    if m is None or len(m["text"]) > MAX_TEXT or _NOT_A_REMEDY.search(m["text"]):
        d = _DTYPE_EXPECTED.search(line)
        if d is None:
            return None
        named = (d["name"] or d["name2"], d["dtype"] or d["dtype2"])
        return Suggestion(text=_sentence(d["text"]), line=index, named=named, kind="expectation")
    return Suggestion(text=m["text"].strip(), line=index, named=_named(m["text"]), kind="expectation")


def _ordered(line: str, index: int) -> Suggestion | None:
    """The order an error line says two kinds of items must keep, with the two named (first, then second)."""
    if " before " not in line and " precede " not in line:  # the pattern's verbs; long lines stay fast
        return None
    m = _error_match(_ORDERED, line)
    if m is None or _NOT_A_REMEDY.search(m["text"]):
        return None
    first = re.sub(r"^(?:the|all|any) ", "", (m["a"] or m["a2"] or m["a3"] or m["a4"]).strip(), flags=re.I)
    second = m["b"].strip()
    if first.lower() in _NOT_A_NAME or second.lower() in _NOT_A_NAME or first.lower() == second.lower():
        return None
    lead = _LEAD_WORDS.search(line[max(0, m.start() - 200) : m.start()])
    text = (lead.group(0) if lead else "") + m["text"]
    return Suggestion(text=_sentence(text), line=index, named=(first, second), kind="order")


def _stated_cause(line: str, index: int) -> Suggestion | None:
    """The cause a message names in a sentence of its own, when that sentence names something to change."""
    for m in _CAUSE.finditer(line):
        text = _sentence(m["text"] or m["common"])
        named = _named(text)
        if named and len(text.split()) >= 5 and not _NOT_A_REMEDY.search(text):
            return Suggestion(text=text, line=index, named=named, kind="cause")
    return None


def _constrained(line: str, index: int) -> Suggestion | None:
    """What one named setting must be, from an error line of a check of the program's own configuration."""
    if not _is_error_line(line):
        return None
    refused = _REFUSED_BOOL.search(line)
    if refused is not None:
        other = "False" if (refused["value"] or refused["value2"]) == "True" else "True"
        return Suggestion(
            text=_sentence(line[refused.start() :]),
            line=index,
            named=(f"{refused['name'] or refused['name2']}={other}",),
            kind="constraint",
        )
    needs = _NEEDS_GIVEN.search(line)
    if needs is not None and needs["name"].lower() not in _NOT_A_NAME:
        return Suggestion(
            text=_sentence(needs["text"]), line=index, named=(needs["name"],), kind="constraint"
        )
    m = _CONSTRAINED.search(line)
    if m is None or _NOT_A_REMEDY.search(m["text"]):
        bound = _BOUND_REFUSED.search(line) or _GOT_SETTING.search(line)
        if bound is None or _NOT_A_REMEDY.search(bound["text"]):
            return None
        text = _sentence(_EXCEPTION_PREFIX.sub("", bound["text"]))
        return Suggestion(text=text, line=index, named=(bound["name"].strip(),), kind="constraint")
    name = (m["name"] or m["needed"] or m["bound"]).strip("`")
    return Suggestion(
        text=_sentence(m["text"]),
        line=index,
        named=tuple(dict.fromkeys([name, *_named(m["text"])])),
        kind="constraint",
    )


def _refused_in_mode(line: str, index: int) -> Suggestion | None:
    """A feature an error line says cannot be used in one mode or stage of the run."""
    m = _error_match(_REFUSED_IN_MODE, line)
    if m is None:
        return None
    name = (m["name"] or m["name2"]).strip()
    if name.lower() in _NOT_A_NAME:
        return None
    return Suggestion(text=_sentence(m["text"]), line=index, named=(name,), kind="mode_refusal")


def reformatted_value(value: str, form: str) -> str:
    """`value` rewritten in a placeholder form ("v6e_8" in "<type>-<size>" is "v6e-8"), or "" when its parts
    do not line up one to one with the form's placeholders or it is already in that form."""
    holders = list(_PLACEHOLDER.finditer(form))
    if not holders:
        return _pair_reformatted(value, form)
    if len(holders) < 2 or holders[0].start() != 0 or holders[-1].end() != len(form):
        return ""
    separators = [form[a.end() : b.start()] for a, b in itertools.pairwise(holders)]
    if any(not s or (re.search(r"[\w<>{}]", s) and not re.fullmatch(r"[a-z]", s)) for s in separators):
        return ""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", value) if p]
    if len(parts) != len(holders):
        return ""
    rebuilt = parts[0] + "".join(s + p for s, p in zip(separators, parts[1:], strict=True))
    return "" if rebuilt == value else rebuilt


def _pair_reformatted(value: str, form: str) -> str:
    """A `name<sep>value` pair rewritten with the separator of a literal two-word form ("host_tracer_level=3"
    in "key:value" is "host_tracer_level:3"), or "" when either is no such pair or the separators agree."""
    shape = _PAIR_FORM.fullmatch(form)
    parts = _PAIR_VALUE.fullmatch(value)
    if shape is None or parts is None or parts["sep"] == shape["sep"]:
        return ""
    return parts["name"] + shape["sep"] + parts["value"]


def _format_refused(line: str, index: int) -> Suggestion | None:
    """A value an error line refuses for its format, with the form it expects (and that value in it)."""
    if _INFO_LEVEL.match(line):
        return None
    m = _FORMAT_REFUSED.search(line) or _FORMAT_REFUSED_QUOTED.search(line)
    if m is None:
        return None
    form = m["form"].rstrip(".,;")
    rebuilt = reformatted_value(m["value"].rstrip(".,;"), form)
    named = (form, rebuilt) if rebuilt else (form,)
    text = m["text"].strip()  # whole: its example ("e.g. v4-128") is no sentence end
    return Suggestion(
        text=clip(text, MAX_TEXT),
        line=index,
        named=named,
        kind="format",
    )


def _refused_for(line: str, index: int) -> Suggestion | None:
    """A setting an error line refuses for one case, and its config-key spelling when named in words."""
    m = _error_match(_REFUSED_FOR, line)
    if m is None:
        return None
    name = (m["name"] or m["name2"]).strip("`")
    case = (m["case"] or m["case2"]).strip()
    if name.lower() in _NOT_A_SETTING_WORD or name.split()[0].lower() in _NOT_A_SETTING_WORD:
        return None
    named = [name]
    if " " in name:
        named.append(name.replace(" ", "_"))
    return Suggestion(text=_sentence(m["text"]), line=index, named=(*named, case), kind="refused_for")


def _one_of_needed(line: str, index: int) -> Suggestion | None:
    """Settings an error line says at least one of must be given."""
    if _ERRORISH.search(line) is None and not line.lstrip().startswith(("ValueError", "AssertionError")):
        return None
    m = _ONE_OF_NEEDED.search(line)
    if m is None:
        return None
    names = tuple(dict.fromkeys(n.group(0).strip("`") for n in _ONE_NAME.finditer(m["names"])))
    if len(names) < 2:
        return None
    return Suggestion(text=_sentence(m["text"]), line=index, named=names, kind="one_of")


def _frozen(line: str, index: int) -> Suggestion | None:
    """A setting an error line says may not change after start-up."""
    m = _FROZEN.search(line)
    if m is None or _INFO_LEVEL.match(line):
        return None
    return Suggestion(text=_sentence(m["text"]), line=index, named=(m["name"].strip("`"),), kind="frozen")


def _excluded(line: str, index: int) -> Suggestion | None:
    """Two named settings an error line says may not be given together."""
    m = _error_match(_EXCLUDED, line)
    if m is None:
        return None
    a, b = (next(v for k, v in m.groupdict().items() if k.startswith(side) and v) for side in ("a", "b"))
    a, b = a.strip("`"), b.strip("`")
    if a.lower() == b.lower():
        return None
    return Suggestion(text=_sentence(line[m.start() :]), line=index, named=(a, b), kind="exclusion")


def _compared(line: str, index: int, lines: Sequence[str] = ()) -> Suggestion | None:
    """Two settings a check compared, from its sentence, the `expr=value` lines a mismatch line lists below
    it, two quantities it names with their values, or the `name=value` pairs of a mismatch line."""
    m = _COMPARED.search(line)
    if m is not None and m["a"] != m["b"]:
        return Suggestion(text=_sentence(m["text"]), line=index, named=(m["a"], m["b"]), kind="comparison")
    listed = _listed_values(line, lines[index + 1 : index + 1 + MAX_VALUE_LINES])
    if listed:
        head = _EXCEPTION_PREFIX.sub("", line.strip().rstrip(":"))
        shown = (f"{n}: {v}" if " " in n else f"{n}={v}" for n, v in listed.items())
        text = _sentence(head).rstrip(".") + ": " + ", ".join(shown)
        return Suggestion(text=text, line=index, named=tuple(listed), kind="comparison")
    lengths = _LENGTHS_COMPARED.search(line)
    if (
        lengths is not None
        and lengths["a"] != lengths["b"]
        and (lengths["va"] is None or lengths["va"] != lengths["vb"])
    ):
        named = (lengths["a"], lengths["b"])
        return Suggestion(text=_sentence(lengths["text"]), line=index, named=named, kind="comparison")
    q = _COMPARED_QUANTITIES.search(line) if _ERRORISH.search(line) else None
    if q is not None and q["va"] != q["vb"]:
        named = (_quantity(q["a"]), _quantity(q["b"]))
        return Suggestion(text=_sentence(q["text"]), line=index, named=named, kind="comparison")
    v = _COUNTS_VERSUS.search(line) if _ERRORISH.search(line) else None
    if v is not None and v["va"] != v["vb"] and v["a"].lower() != v["b"].lower():
        head = _EXCEPTION_PREFIX.sub("", line.strip())
        text = head if len(head) <= MAX_TEXT else _sentence(line[v.start() :])
        return Suggestion(text=text, line=index, named=(v["a"], v["b"]), kind="comparison")
    if _MISMATCH.search(line) is None:
        return None
    pairs = {p["name"]: p for p in _PAIR.finditer(line)}
    if len(pairs) < 2 or len({p["value"] for p in pairs.values()}) < 2:
        return None
    text = ", ".join(p.group(0) for p in pairs.values())
    return Suggestion(text=text, line=index, named=tuple(pairs), kind="comparison")


def _axis_sizes(line: str, index: int, lines: Sequence[str]) -> Suggestion | None:
    """The axis names whose size differs between the arguments' named shapes an error line lists below it
    (at least two lines of `label == {'axis': size, ...}`), with each size and where it was read."""
    if not _ERRORISH.search(line) or not line.rstrip().endswith(":"):
        return None
    shapes: dict[str, dict[str, int]] = {}
    for text in lines[index + 1 : index + 1 + MAX_VALUE_LINES]:
        m = _SHAPE_MAP_LINE.match(text)
        if m is None:
            break
        shapes[m["label"]] = {a["axis"]: int(a["size"]) for a in _AXIS_SIZE.finditer(m["map"])}
    if len(shapes) < 2:
        return None
    axes = {axis for sizes in shapes.values() for axis in sizes}
    differing = [
        axis for axis in sorted(axes) if len({sizes[axis] for sizes in shapes.values() if axis in sizes}) >= 2
    ]
    if not differing:
        return None
    said = "; ".join(
        f"'{axis}' is "
        + " and ".join(f"{sizes[axis]} in {label}" for label, sizes in shapes.items() if axis in sizes)
        for axis in differing[:3]
    )
    head = _EXCEPTION_PREFIX.sub("", line.strip().rstrip(":"))
    text = clip(head, MAX_TEXT // 2) + ": " + said
    return Suggestion(text=text, line=index, named=tuple(differing[:3]), kind="axis_sizes")


def _listed_values(line: str, following: Sequence[str]) -> dict[str, str]:
    """The `expr=value` lines below a mismatch line that ends in a colon (at least two), by expression; or
    the "label: value" lines below a mismatch line, when the labels share their first word and the values
    differ (the same quantity read from two places)."""
    if _MISMATCH.search(line) is None:
        return {}
    listed: dict[str, str] = {}
    if line.rstrip().endswith(":"):
        for text in following:
            m = _VALUE_LINE.match(text)
            if m is None:
                break
            listed[m["name"]] = m["value"].strip()
        if len(listed) >= 2:
            return listed
    labelled: dict[str, str] = {}
    for text in following:
        m = _LABEL_LINE.match(text)
        if m is None:
            break
        labelled[m["name"]] = m["value"].strip()
    heads = {name.split()[0].lower() for name in labelled}
    if len(labelled) >= 2 and len(heads) == 1 and len(set(labelled.values())) >= 2:
        return labelled
    return {}


def _quantity(words: str) -> str:
    """A quantity a check named in words, without its article ("The number of devices")."""
    return re.sub(r"^(?:the|a|an)\s+", "", words.strip(), flags=re.IGNORECASE)


def choices_fix(values: str) -> str:
    """The fix for a refusal that lists what it accepts ("Supported methods are [None, 'fp8']")."""
    return (
        f"The message lists what it accepts: {values}. Switch the refused setting to one of those (the "
        "option, argument or checkpoint format the error names), then rerun; if none fits the job, the facts "
        "below and the category's general advice apply."
    )


RERUN = "then rerun; if the same error comes back, the facts below and the category's general advice apply."
"""How every fix built from the log's own words ends: what to do when acting on them was not enough."""


def suggestion_fix(suggestions: Sequence[Suggestion]) -> str:
    """The fix that follows the log's own advice, naming what it names."""
    quoted = " and ".join(f'"{s.text}"' for s in suggestions)
    names = list(dict.fromkeys(n for s in suggestions for n in s.named))
    things = ", ".join(f"`{n}`" for n in names[:6])
    kinds = {s.kind for s in suggestions}
    kind = kinds.pop() if len(kinds) == 1 else "advice"
    if kind == "comparison":
        return (
            f"The check compared settings the message names: {quoted}. Change {things} so the comparison "
            "holds (lower the one that is too large or raise its limit; make counts that must agree equal), "
            f"{RERUN}" + divisibility_hint(suggestions)
        )
    if kind == "expectation":
        head = (
            f"The check states what it expected: {quoted}. Change the call or the values that feed it so "
            "that holds (a shape: reshape, transpose or slice the operand whose dimension differs; a dtype: "
            "cast it; a setting: give it the value named)"
        )
    elif kind == "constraint":
        head = (
            f"The check states what a setting must be: {quoted}. Give {things} a value that meets it (or "
            "turn off the feature that needs it)"
        )
    elif kind == "one_of":
        either = " or ".join(f"`{n}`" for n in names[:4])
        head = (
            f"The check needs one of these settings: {quoted}. Set {either} (in the config or on the command "
            "line)"
        )
    elif kind == "frozen":
        head = (
            f"The check refuses a setting changed after start-up: {quoted}. Set {things} once, before the "
            "program initializes (on the command line, in the environment or at the top of the script), and "
            "do not change it afterwards"
        )
    elif kind == "mode_refusal":
        head = (
            f"The check refuses a feature in this mode or stage: {quoted}. Turn {things} off for that mode "
            "(its option in the config or the call that builds this stage) and keep it where it is allowed"
        )
    elif kind == "exclusion":
        either = " or ".join(f"`{n}`" for n in names[:2])
        head = (
            f"The check refuses settings given together: {quoted}. Keep only one of {either} "
            "(remove the other from the command line and from any config file the program also reads)"
        )
    elif kind == "format":
        rebuilt = [s.named[1] for s in suggestions if len(s.named) > 1]
        here = f" (here `{rebuilt[0]}`)" if rebuilt else ""
        form = " or ".join(f"`{s.named[0]}`" for s in suggestions)
        head = (
            f"The check refuses how a value is written: {quoted}. Write it in the form it expects, "
            f"{form}{here}, where the program reads it (the config file, the command line or the call)"
        )
    elif kind == "refused_for":
        setting = " or ".join(f"`{n}`" for n in names[:-1][:2]) or things
        case = suggestions[0].named[-1]
        head = (
            f"The check refuses a setting for this case: {quoted}. Leave {setting} out when using {case} "
            "(remove it from the command line and from any config file or resource spec the program reads), "
            f"or, if you need it, use a set-up other than {case}"
        )
    elif kind == "axis_sizes":
        head = (
            f"The arguments give one axis name different sizes: {quoted}. Make the sizes of {things} agree "
            "(slice or pad the argument whose size is wrong, or fix the config or data step that built it), "
            "or, when they are different axes that happen to share a name, rename one before the call (in "
            "penzai: untag it and tag it again under another name)"
        )
    elif kind == "order":
        first, second = suggestions[0].named[:2]
        head = (
            f"The check states an order to keep: {quoted}. Reorder that list so the {first} go first, "
            f"before the {second}"
        )
    elif kind == "cause":
        head = (
            f"The message names the likely cause: {quoted}. Change what it names ({things}) so that no "
            "longer holds"
        )
    else:
        act = f"change {things} as it says" if names else "act on it as written"
        # options the message says exclude one another, one of them the TPU's: keep that one on a TPU
        exclusive = [s for s in suggestions if _ONLY_ONE_OF.search(s.text)]
        tpu_option = next((n for s in exclusive for n in s.named if _TPU_OPTION.fullmatch(n)), None)
        if tpu_option is not None:
            act = f"keep only {tpu_option} (the TPU's option) and drop the others it lists"
        head = f"The error message states its own remedy: {quoted}. Do that first: {act}"
    return f"{head}, {RERUN}"


SETTING_KINDS = frozenset(
    {"constraint", "exclusion", "one_of", "frozen", "mode_refusal", "format", "refused_for"}
)
"""The stated kinds that name a setting of the library's own to change (what it must be, which to drop, which
to give): a fix that names the setting beats the library catch-all's advice to upgrade."""
STATED_KINDS = SETTING_KINDS | {"comparison", "expectation", "axis_sizes", "order"}
"""The kinds of Suggestion that state a condition of this very check rather than advise an action."""


def stated_addendum(fix: str, suggestions: Sequence[Suggestion]) -> str:
    """What to add to a `from_facts_*` fallback's fix so it keeps the condition the check states ("" when the
    fix names all it names). A fallback gives the category's remedy for this log's facts; the check's own
    condition ("Batch size (24) must be divisible by ... (16)") names the setting or quantity to change."""
    lowered = fix.lower()
    missing = [
        s
        for s in suggestions
        if s.kind in STATED_KINDS and s.named and not all(n.lower() in lowered for n in s.named)
    ]
    if not missing:
        return ""
    quoted = " and ".join(f'"{s.text}"' for s in missing)
    things = ", ".join(f"`{n}`" for n in dict.fromkeys(n for s in missing for n in s.named))
    return (
        f" The check itself states: {quoted}; change {things} so that it holds."
        + divisibility_hint(missing)
        + order_hint(missing)
    )


def divisibility_hint(suggestions: Sequence[Suggestion]) -> str:
    """The way round a divisibility comparison must hold ("" for any other): a check's wording of it ("A
    should divide B" where B must divide A) is often backwards, so the hint names the relation by size."""
    if any(s.kind == "comparison" and _DIVISIBILITY.search(s.text) for s in suggestions):
        return DIVISIBILITY_HINT
    return ""


def order_hint(suggestions: Sequence[Suggestion]) -> str:
    """How to meet an order a check states ("" for any other kind): the item it names first goes first, which
    a fallback written for the category's other causes does not say."""
    ordered = [s for s in suggestions if s.kind == "order"]
    if not ordered:
        return ""
    first, second = ordered[0].named[:2]
    return f" Reorder so the {first} go first, before the {second}."


def suggestion_addendum(fix: str, suggestions: Sequence[Suggestion]) -> str:
    """What to add to a cause-specific fix so it keeps the message's own advice ("" when the fix has it).

    A sub-rule is written for the cause; the message's sentence is written for this very check. When the
    sentence names something the fix does not (a parameter, flag or variable), both belong in the answer."""
    lowered = fix.lower()
    missing = [
        s
        for s in suggestions
        if s.kind == "advice"
        and not any(n.lower() in lowered for n in s.named)
        and (s.named or s.text.lower() not in lowered)
    ]
    if not missing:
        return ""
    quoted = " and ".join(f'"{s.text}"' for s in missing)
    return f" The error message also states its own remedy: {quoted}."
