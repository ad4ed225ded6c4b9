"""Shared lexical resources (docs/algorithms.md), read from installed packages.

* English stopwords: the English list of the ``stopwords`` package (175 words,
  the Snowball list). NLTK's 179-word list is not installable offline (its
  corpus needs a download); the Snowball list covers the same function words,
  with contractions spelled out ("don't") where NLTK lists fragments ("don").
* Punctuation: the 32 ASCII marks of :data:`string.punctuation`.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import string
from pathlib import Path

PUNCTUATION = frozenset(string.punctuation)
_PUNCT_RE = re.compile("[" + re.escape(string.punctuation) + "]+")


@functools.lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    # located without importing the package (its import costs ~10 ms on a cold start for one text file)
    spec = importlib.util.find_spec("stopwords")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("the 'stopwords' package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "languages" / "english" / "default.txt"
    text = path.read_text("utf-8")
    words = {w.strip().lower() for w in text.splitlines() if w.strip()}
    return frozenset(words)


def is_punctuation(unit: str) -> bool:
    """True when the unit is non-empty and made only of ASCII punctuation marks."""
    return _PUNCT_RE.fullmatch(unit) is not None


def is_digits(unit: str) -> bool:
    return unit.isascii() and unit.isdigit()


def is_stopword(unit: str) -> bool:
    return unit.lower() in stopwords()
