"""Splitting text into units and putting it back together.

A unit is what a mechanism replaces: a word (word-level spaces) or a
tokenizer token (subword spaces). Leading whitespace is kept beside the unit,
not inside it (docs/algorithms.md), so that a replacement keeps the original's
spacing and ``join_units(split) == text`` always holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

# English clitics, split off as their own units the way GloVe's (Stanford) tokenizer did: "don't" -> "do" +
# "n't", "I'm" -> "I" + "'m", "Google's" -> "Google" + "'s". Kept as one unit they are out of every word-level
# vocabulary, and a dropped "n't" would turn a negation into its opposite.
_CLITIC_BODY = r"(?:[sSmMdD]|[rR][eE]|[lL][lL]|[vV][eE])(?![^\W\d_])"
_CLITIC = r"(?:[nN]'[tT](?![^\W\d_])|'" + _CLITIC_BODY + ")"
_CLITIC_RE = re.compile(_CLITIC)
# a word unit: a letter run (any script) before a clitic; a clitic; a letter run with at most one inner
# apostrophe that does not start a clitic ("o'brien"); or a digit run
_UNIT = (r"[^\W\d_]+(?=" + _CLITIC + r")|" + _CLITIC + r"|[^\W\d_]+(?:'(?!" + _CLITIC_BODY + r")[^\W\d_]+)?"
         r"|\d+")
_UNIT_RE = re.compile(_UNIT)
# a word unit, or one other non-space character, with its leading whitespace
_WORD_RE = re.compile(r"(\s*)(" + _UNIT + r"|[^\w\s]|_)", re.UNICODE)


class Piece(NamedTuple):
    ws: str  # leading whitespace
    text: str  # the unit, never empty, never starting or ending with whitespace


@dataclass(frozen=True, slots=True)
class Segmentation:
    pieces: tuple[Piece, ...]
    trailing: str = ""
    clitics: bool = False  # word segmentation: a clitic replaced by a whole word is set apart by a space

    def join(self, outputs: list[str] | None = None) -> str:
        """Rebuild text; ``outputs[i]`` replaces piece i (``None`` = dropped with its whitespace).

        Line structure survives drops: when dropped units' whitespace held line breaks, the
        next surviving unit is preceded by that whitespace up to its last line break, then by
        the line's indentation (its own whitespace if that holds a line break, else the
        dropped unit's); line breaks before dropped units at the end are kept too. Otherwise the first surviving
        unit takes the text's original leading whitespace, so output never gains a stray leading space, and a
        later one keeps its own whitespace, or the dropped run's first whitespace when it has none (units that
        were apart in the input stay apart).

        In a word segmentation (``clitics``), a clitic such as ``n't`` or ``'s`` that was replaced by a word that
        is not a clitic gets one space before it, so ``do`` + ``n't`` -> ``do`` + ``never`` reads ``do never``,
        not ``donever``.
        """
        pieces = self.pieces
        if outputs is None:
            outs = [p.text for p in pieces]
        else:
            outs = outputs
            if self.clitics:
                pieces = _space_replaced_clitics(pieces, outs)
        if None not in outs:
            return "".join([p.ws + o for p, o in zip(pieces, outs)]) + self.trailing
        parts = []
        pending = ""
        gap = ""  # the first whitespace inside a run of dropped units
        for piece, out in zip(pieces, outs):
            if out is None:
                pending += piece.ws
                gap = gap or piece.ws
                continue
            if pending:
                nl = pending.rfind("\n")
                if nl >= 0:
                    ws = pending[: nl + 1] + (piece.ws if "\n" in piece.ws else pending[nl + 1 :])
                elif parts or "\n" in piece.ws:
                    # whitespace between surviving units is always kept: "naï|ve" dropping "naï" (which
                    # carried the space) must not glue "ve" to the unit before it
                    ws = piece.ws or gap
                else:
                    ws = pieces[0].ws
                pending = gap = ""
            else:
                ws = piece.ws
            parts.append(ws)
            parts.append(out)
        nl = pending.rfind("\n")
        if nl >= 0:
            parts.append(pending[: nl + 1])
        parts.append(self.trailing)
        return "".join(parts)


def _space_replaced_clitics(pieces: tuple[Piece, ...], outs: list) -> tuple[Piece, ...]:
    fix = [i for i, p in enumerate(pieces) if i and not p.ws and outs[i] is not None and outs[i] != p.text
           and _CLITIC_RE.fullmatch(p.text) and not _CLITIC_RE.fullmatch(outs[i])]
    if not fix:
        return pieces
    out = list(pieces)
    for i in fix:
        out[i] = Piece(" ", pieces[i].text)
    return tuple(out)


def is_word_unit(word: str) -> bool:
    """Whether :func:`split_words` turns ``word`` into exactly one unit that is not punctuation (the first
    alternative that matches, as the tokenizer takes it: ``don't`` is not one unit, ``o'brien`` is)."""
    m = _UNIT_RE.match(word)
    return m is not None and m.end() == len(word)


def split_words(text: str) -> Segmentation:
    """Word-level segmentation: letter runs (with one inner apostrophe), digit runs, single marks."""
    pieces = tuple(map(tuple.__new__, repeat(Piece), _WORD_RE.findall(text)))  # (ws, unit) pairs, no per-piece frame
    # the regex covers every non-space character, so only trailing whitespace is left over
    return Segmentation(pieces, text[len(text.rstrip()):], clitics=True)


_WS_SPLIT: dict[str, tuple[str, str, str]] = {}  # piece -> (leading ws, core, trailing ws)


def _split3(s: str) -> tuple[str, str, str]:
    stripped = s.lstrip()
    core = stripped.rstrip()
    parts = (s[: len(s) - len(stripped)], core, stripped[len(core):])
    if len(_WS_SPLIT) < 1_000_000:
        _WS_SPLIT[s] = parts
    return parts


def split_leading_ws(piece_texts: list[str]) -> Segmentation:
    """Turn decoded tokenizer pieces into units: whitespace-only pieces join the next unit's ws."""
    pieces = []
    pending = ""
    get = _WS_SPLIT.get
    new = tuple.__new__  # Piece(ws, core) without the namedtuple's Python-level __new__ frame per unit
    for s in piece_texts:
        lead, core, trail = get(s) or _split3(s)
        if not core:
            pending += s
            continue
        ws = pending + lead if pending else lead
        pending = trail  # trailing whitespace (e.g. ".\n") goes to the next unit
        if not ws and pieces and core.isdigit() and pieces[-1].text.isdigit():
            pieces[-1] = Piece(pieces[-1].ws, pieces[-1].text + core)  # "202"+"4" is one number
        else:
            pieces.append(new(Piece, (ws, core)))
    return Segmentation(tuple(pieces), pending)


def match_case(template: str, word: str) -> str:
    """Give ``word`` the capitalisation pattern of ``template`` (for case-folded vocabularies)."""
    if not template or not word:
        return word
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[0].isupper():
        return word[:1].upper() + word[1:]
    return word


def decode_text(data: bytes, *, source: str = "input") -> str:
    """Decode UTF-8 input strictly, with a one-line error naming the source."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from dptext.errors import DPTextError

        raise DPTextError(
            f"{source} is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None
