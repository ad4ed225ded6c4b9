"""Words written in a script other than Latin (``渡辺``, ``佐々木``, ``Лена``, ``Ζωή``, ``सीता``).

English text holds such words mostly as names of people and places. No word list or casing rule of the name
detector can judge them, so each run of them is a name: found, not guessed. A text written wholly in another script
is then detected whole, which keeps it private (the English detectors could not read it anyway).
"""

from __future__ import annotations

import re
import unicodedata

_RUN = re.compile(r"[^\s\x00-\x7f]+")  # non-ASCII, between spaces or ASCII signs


def _latin(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith("LATIN")


def foreign_letter(ch: str) -> bool:
    """``ch`` is a letter of a script other than Latin (an address in CJK, Greek, Cyrillic … is written without
    spaces between its name and its numbers)."""
    return ch.isalpha() and not ch.isascii() and not _latin(ch)


def foreign_words(text: str):
    """(start, end) of each run of letters (and their marks) of a script other than Latin."""
    if text.isascii():
        return
    for m in _RUN.finditer(text):
        s, e = m.span()
        while s < e and not text[s].isalpha():
            s += 1  # no leading punctuation ("«")
        while e > s and not (text[e - 1].isalpha() or unicodedata.category(text[e - 1]).startswith("M")):
            e -= 1  # nor trailing ("»", "、"); a closing vowel sign stays ("सीता" ends in one)
        letters = [c for c in text[s:e] if c.isalpha()]
        if letters and not any(_latin(c) for c in letters):
            yield s, e
