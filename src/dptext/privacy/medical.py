"""Medical conditions in any casing (label ``MEDICAL``), from the WordNet lists of :mod:`dptext.privacy.gazetteers`.

:class:`MedicalDetector` takes the longest WordNet medical term at each position (``type 2 diabetes``,
``Parkinson's disease``, ``migraines``, ``head injuries``), extended over the body part before it (``knee
injury``), a leading ``type 1`` / ``chronic`` / ``stage IV`` … and over up to three words before a head noun
(``disease``, ``disorder``, ``syndrome``, ``cancer`` …); a condition whose word is mostly used otherwise
(``depression``, ``cold``, ``stroke``) counts after a word of illness or right after a degree (``a slight
stroke``).
"""

from __future__ import annotations

import re

from dptext.privacy.gazetteers import lexicon
from dptext.privacy.recognizers import Detection

_HEADS = frozenset("disease diseases disorder disorders syndrome cancer carcinoma infection tumor tumour deficiency "
                   "failure palsy fever".split())
# a head alone names no condition ("treated as a disorder"); "cancer", "fever" alone do
_GENERIC = frozenset("disease diseases disorder disorders syndrome syndromes illness illnesses".split())
_LEAD = frozenset("type chronic acute severe mild moderate stage early-onset late-stage metastatic advanced "
                  "recurrent juvenile adult-onset".split())
_LEAD_NUM = re.compile(r"(?i)(?:[0-4]|i{1,3}|iv|[1-4][ab]?)\b")


# words of illness before a condition: "diagnosed with", "suffered (from)", "caught a", "treated for"
_ILLNESS = re.compile(r"suffer(?:s|ed|ing)?|diagnos(?:ed|is)|treat(?:ed|ing|ment)|died|dying|recover(?:ing|ed|y)|"
                      r"hospitali[sz]ed|battl(?:ing|ed|es?)|symptoms?|caught|complain(?:ed|s|ing)?|"
                      r"prescribed|medication|therapy")
# conditions too vague to name one ("treating a variety of conditions", "caught the mechanical failure")
_VAGUE = frozenset("condition complaint complication effect aftereffect break breakdown failure harm hurt dose growth "
                   "passion fury craze collapse disturbance distress affliction abnormality anomaly suffering pathology "
                   "syndrome upset shock mouse nebula mosaic founder chestnut corn rust smart pull twist leak "
                   "attack touch spot flare fit".split())
# a degree of illness right before such a condition names it: "a slight stroke", "severe depression"
_DEGREE = frozenset("slight mild severe massive minor major acute chronic bad terrible nasty".split())


class MedicalDetector:
    """Medical conditions from WordNet's disease and disorder hyponyms, in any casing (label ``MEDICAL``)."""

    name = "gazetteer"
    label = "MEDICAL"

    def __init__(self) -> None:
        self.lex = lexicon()
        self.terms = self.lex.medical
        self.longest: dict[str, int] = {}  # a term's first word -> the most words a term opening with it has
        for t in self.terms:
            self.longest[t[0]] = max(self.longest.get(t[0], 0), len(t))

    def _term_at(self, words, i):
        """The number of words of the longest term at ``words[i]`` (its last word may be plural), else 0."""
        w = words[i]
        # only a term's last word is made singular, so a term starts with the word itself, or is one word that the
        # singular of the word is
        top = max([self.longest.get(w, 0)] + [self.longest.get(f, 0) for f in _singular(w)])
        for k in range(min(top, len(words) - i), 0, -1):
            key = tuple(words[i : i + k])
            # a place is no plural ("Wales" is no more than one "wale")
            if key in self.terms or key[-1] not in self.lex.places and any(
                    key[:-1] + (f,) in self.terms for f in _singular(key[-1])):
                return k
        return 0

    def detect(self, text: str) -> list[Detection]:
        toks = [(m.start(), m.end(), m.group(0).casefold().replace("’", "'"))
                for m in re.finditer(r"\w+(?:['’-]\w+)*", text)]
        words = [t[2] for t in toks]
        out, i, n = [], 0, len(toks)
        while i < n:
            k = self._term_at(words, i)
            if not k and words[i] in _HEADS:
                k = 1
            if not k:
                i += 1
                continue
            s, e = i, i + k - 1
            while e + 1 < n and words[e + 1] in _HEADS:
                e += 1
            back = 0
            if s > 0 and words[s - 1] in self.lex.body:  # the part of the body it is in: "knee injury"
                s -= 1
            while s > 0 and back < 3 and (words[s - 1] in _LEAD or _LEAD_NUM.fullmatch(words[s - 1])
                                          or (words[e] in _HEADS and words[s - 1] not in self.lex.stop
                                              and not words[s - 1].isdigit())):
                s -= 1
                back += 1
            if s == e and k == 1 and (words[s] in _HEADS and (words[s],) not in self.terms or words[s] in _GENERIC):
                i = e + 1
                continue
            out.append(Detection(toks[s][0], toks[e][1], self.label, self.name))
            i = e + 1
        return out + self._after_illness(text, toks, words, out)

    def _after_illness(self, text, toks, words, found):
        """A condition whose word is mostly used otherwise (``depression``, ``headache``, ``cold``), after a word of
        illness in the same clause, at most four words before it (``diagnosed with depression``, ``caught a
        cold``, ``suffered a bad headache``), or right after a degree of illness (``a slight stroke``)."""
        out = []
        for i, w in enumerate(words):
            if not (w in self.lex.medical_weak or any(f in self.lex.medical_weak for f in _singular(w))) \
                    or w in _VAGUE or any(f in _VAGUE for f in _singular(w)) \
                    or any(d.start <= toks[i][0] < d.end for d in found):
                continue
            if i and words[i - 1] in _DEGREE and text[toks[i - 1][1]:toks[i][0]].isspace():
                out.append(Detection(toks[i - 1][0], toks[i][1], self.label, self.name))
                continue
            for k in range(max(0, i - 5), i):
                if _ILLNESS.fullmatch(words[k]) and not re.search(r"[.,;:!?()]", text[toks[k][1]:toks[i][0]]):
                    start = toks[i - 1][0] if i > k + 1 and words[i - 1] in self.lex.body else toks[i][0]
                    out.append(Detection(start, toks[i][1], self.label, self.name))  # with its place: "hip fracture"
                    break
        return out


def _singular(w):
    """Singular forms of an English plural: ``injuries`` -> injury, ``abscesses`` -> abscess, ``burns`` -> burn."""
    if w.endswith("ies") and len(w) > 4:
        yield w[:-3] + "y"
    if w.endswith(("ses", "xes", "ches", "shes")):
        yield w[:-2]
    if w.endswith("s") and not w.endswith("ss"):
        yield w[:-1]
