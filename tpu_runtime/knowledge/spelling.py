"""Misspelt words of a question read as the word the sources write, before the question is weighed.

Users type 'comand', 'kernal' or 'whats'; as written, such a word is one no source uses, so it weighs the
most a word can in the support share and no line can hold it: the gate refused 'whats the comand to install
vllm for tpus' although the install line answers it. A plain lower-case word that no source writes in any
form is read as the English word one edit away (a letter dropped, added, changed, or two swapped; the first
kept) that the most passages use, or as the function word it misspells. Only a word that is no English word
is respelt: the embedding model's WordPiece vocabulary (`english_words`) holds 'threw' and 'colour' whole,
which the sources may lack but the user meant ('threw' is not 'three'); without the model nothing is
respelt. Names are left as typed (capitalised words, words with digits, '_' or '.', code spans, a value
after '='), so a made-up name still counts as unknown to the gate.
"""

from __future__ import annotations

import functools
import json
import re
import string

from tpu_runtime.knowledge.lexical import STOPWORDS
from tpu_runtime.knowledge.model_files import ModelUnavailable, locate_model
from tpu_runtime.knowledge.question_reading import QUESTION_WORDS, _family_df
from tpu_runtime.knowledge.retrieve import KnowledgeIndex

MIN_TYPO_LEN = 4  # shorter words are one edit from too many others ('tpu', 'vm', 'ici')
# passages a respelling must be used by: a typo misspells a word the sources use, not a rare one
MIN_RESPELLED_DF = 3
# a plain lower-case word, not part of a name ('foo_bar', 'a.b', '--flag', 'v5e', 'path/to') nor a value
# assigned to one ('MODEL_IMPL_TYPE=onnx')
_PLAIN_RE = re.compile(r"(?<![\w.`/\-=])[a-z]+(?![\w`/\-]|\.\w)")
_FUNCTION_WORDS = STOPWORDS | QUESTION_WORDS


@functools.cache
def english_words() -> frozenset[str]:
    """The whole words of the embedding model's vocabulary (uncased WordPiece: some 22,000 English words as
    users spell them), or none when the model is not installed."""
    try:
        vocab = json.loads(locate_model().tokenizer.read_text())["model"]["vocab"]
    except (ModelUnavailable, OSError, ValueError, KeyError):
        return frozenset()
    return frozenset(w for w in vocab if w.isalpha() and w.islower())


def one_edit(word: str) -> list[str]:
    """The spellings one edit from `word` that keep its first letter: a letter dropped, two neighbours
    swapped, a letter changed or one added (sorted, so the choice among equal counts does not depend on set
    order). Typing slips rarely hit the first letter, while a name the sources lack often is a known word
    with one letter before it ('sbatch', 'onnx')."""
    splits = [(word[:i], word[i:]) for i in range(1, len(word) + 1)]
    dropped = [a + b[1:] for a, b in splits if b]
    swapped = [a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1]
    changed = [a + c + b[1:] for a, b in splits if b for c in string.ascii_lowercase if c != b[0]]
    added = [a + c + b for a, b in splits for c in string.ascii_lowercase]
    return sorted(set(dropped + swapped + changed + added) - {word})


# endings that derive a word from another ('installer' from 'install', 'autotunes' from 'autotune')
DERIVING_ENDINGS = ("s", "es", "ed", "d", "ing", "er", "ers", "or", "ors", "ly")


def derived(index: KnowledgeIndex, word: str) -> bool:
    """Whether `word` is a word the sources use with an ending added: a form the user meant ('what
    installer'), where its one-edit neighbour ('installed') is another word."""
    return any(
        word.endswith(end)
        and len(word) - len(end) >= MIN_TYPO_LEN - 1
        and _family_df(index, word[: -len(end)]) > 0
        for end in DERIVING_ENDINGS
    )


def respelling(index: KnowledgeIndex, word: str) -> str | None:
    """The word `word` misspells, or None when the sources know it or nothing close is common enough."""
    words = english_words()
    if not words or len(word) < MIN_TYPO_LEN or word in words or word in _FUNCTION_WORDS:
        return None
    if _family_df(index, word) > 0 or derived(index, word):
        return None
    edits = one_edit(word)
    function = [w for w in edits if w in _FUNCTION_WORDS]
    if function:  # 'whats' is 'what' misspelt: a function word weighs nothing, so it is simply dropped
        return function[0]
    counted = [(index.document_frequency(w), w) for w in edits if w in words]
    df, best = max(counted, key=lambda pair: pair[0], default=(0, word))
    return best if df >= MIN_RESPELLED_DF else None


def respelled(index: KnowledgeIndex, question: str) -> str:
    """The question with each misspelt plain word (`respelling`) written as the sources write it; code
    spans are left as typed."""
    parts = question.split("`")
    for i in range(0, len(parts), 2):  # even parts lie outside code spans

        def fix(match: re.Match[str]) -> str:
            return respelling(index, match.group(0)) or match.group(0)

        parts[i] = _PLAIN_RE.sub(fix, parts[i])
    return "`".join(parts)
