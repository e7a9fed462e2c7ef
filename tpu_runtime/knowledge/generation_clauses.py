"""Which TPU generation each clause of a fact line is about.

A line often lists several generations' figures at once ('50 Gbps on TPU v5p and 100 Gbps on TPU v6e and
TPU7x; for TPU v5e ...'); a question about one generation is answered by that generation's clause, not by
a figure another one owns. The names of a generation are one word family (`words.family`), so 'Trillium'
and 'v6e' are the same generation here as in the gate.
"""

from __future__ import annotations

import re

from tpu_runtime.knowledge.words import family

__all__ = ["generation_parts", "generations_named"]


# A TPU generation under any of its names; the family (`words.family`) makes 'Trillium' and 'v6e' one.
_GENERATION_RE = re.compile(
    r"(?<![\d.])\b(v[2-7][a-z]?|v5litepod|tpu\s?v?[2-7][a-z]?|7x|ironwood|trillium)\b(?!\.\d)", re.I
)
# where a line listing several generations moves from one's figure to the next's: top-level ';', ',',
# ':', a sentence end, and 'and' / 'while' / 'whereas' joining clauses
_PIECE_RE = re.compile(r";|,|:\s|\.\s|\s(?:and|while|whereas|but)\s", re.I)
_GENERATION_ONLY_RE = re.compile(r"^(?:\W|\b(?:tpu|tpus|on|for|the|of|in|and|or)\b)*$", re.I)


def _generation(token: str) -> str:
    """One name per generation ('TPU v6e', 'Trillium' -> '=v6e'; 'TPU v4' -> 'v4')."""
    word = re.sub(r"^tpu\s?(?=v)", "", token.lower().replace(" ", ""))
    word = re.sub(r"^tpu(?=[2-7])", "tpu", word)
    if word == "7x":
        word = "tpu7x"
    return family(word) or word


def generations_named(text: str) -> set[str]:
    """The TPU generations a text names, one mark per generation."""
    return {_generation(m.group(1)) for m in _GENERATION_RE.finditer(text)}


def _pieces(text: str) -> list[tuple[str, str]]:
    """The text cut at its top-level clause breaks (not inside parentheses or backticks), each piece
    with the break before it ('' for the first)."""
    pieces: list[tuple[str, str]] = []
    depth, start, brk = 0, 0, ""
    tick = False
    for i, char in enumerate(text):
        if char == "`":
            tick = not tick
        elif char in "([" and not tick:
            depth += 1
        elif char in ")]" and not tick:
            depth = max(0, depth - 1)
        elif depth == 0 and not tick and i >= start:
            match = _PIECE_RE.match(text, i)
            if match:
                pieces.append((brk, text[start:i]))
                brk, start = match.group(0).strip().lower(), match.end()
    pieces.append((brk, text[start:]))
    return [(b, x) for b, x in pieces if x.strip()]


# a clause holding nothing but a generation and its figure ('229 on v4'): its unit is the first one's
_BARE_FIGURE_RE = re.compile(r"^(?:\W|\d[\d.,]*|\b(?:on|for|in|at|about|with|tpu|and|or|the)\b)*$", re.I)


def generation_parts(span: str) -> tuple[str, dict[str, list[str]]]:
    """A line listing several generations split by whose figure each clause gives: the lead before the
    first figure or generation is everyone's ('DCN bandwidth per chip by generation:'); a clause naming
    generations is theirs; one naming none continues the clause before after a ',', ':' or 'and', but
    after a ';' or a sentence end it is everyone's again; a bare name ('and TPU7x' after '100 Gbps on
    TPU v6e') shares the clause before it; and when a later clause is a bare figure ('229 on v4'), the
    words of the first clause (its unit, '137 FLOPs per byte on TPU v3') are everyone's."""
    lead: list[str] = []
    owned: dict[str, list[str]] = {}
    owners: set[str] = set()
    last: str | None = None
    first: str | None = None
    bare = False
    for brk, piece in _pieces(span):
        named = generations_named(piece)
        rest = _GENERATION_RE.sub(" ", piece)
        if not named:
            if owners and brk not in (";", "."):
                for g in owners:
                    owned.setdefault(g, []).append(piece)
            else:
                lead.append(piece)
                owners = set()
            continue
        if owners and last is not None and _GENERATION_ONLY_RE.match(rest):
            for g in named:  # 'and TPU7x': the clause before holds for it too
                owned.setdefault(g, []).append(last)
            owners |= named
            continue
        if not owned:  # the words before its first figure or generation are the lead's too
            masked = _GENERATION_RE.sub(lambda m: "\0" * len(m.group(0)), piece)
            found = re.search(r"(?<![\w.])\d|\0", masked)  # a figure, not 'bf16'
            cut = found.start() if found else 0
            lead.append(piece[:cut])
            piece = piece[cut:]
            first = piece
        elif _BARE_FIGURE_RE.match(rest):
            bare = True
        owners = named
        last = piece
        for g in named:
            owned.setdefault(g, []).append(piece)
    if bare and first is not None:
        lead.append(_GENERATION_RE.sub(" ", first))
    return " ".join(lead), owned
