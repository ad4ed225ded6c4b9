"""Casing-independent detectors from the word lists of :mod:`dptext.privacy.gazetteers`.

Person names are found by :class:`~dptext.privacy.names.NameDetector` (in :mod:`dptext.privacy.names`,
imported here too); this module holds the rest:

* :class:`~dptext.privacy.medical.MedicalDetector` (label ``MEDICAL``, in :mod:`dptext.privacy.medical`,
  imported here too);
* :class:`PlaceDetector` (label ``GPE``): places no English word list knows, from WordNet;
* :func:`refine`: spaCy's DATE and PERSON spans cut to what identifies (a
  count, a range, a duration or an amount such as ``10``, ``12 to 18``, ``24hr``, ``1999 dollars`` is no
  date; a handle, hashtag or ``RT`` no person), person names widened over
  adjacent unlisted words, and a name word no English list knows marked
  wherever the text repeats it.
* :func:`recase`: a copy of the text, same length, with lower- and upper-case
  words written as a proper noun would be when they are name-like, so spaCy's
  case-sensitive model sees ``Maria Lopez`` in ``maria lopez``.
"""

from __future__ import annotations

import re

from dptext.privacy.gazetteers import lexicon
from dptext.privacy.medical import MedicalDetector  # noqa: F401 - re-exported
from dptext.privacy.name_bridge import NOT_PERSONS, bridge
from dptext.privacy.name_cues import _CUE_WORDS, field_label
from dptext.privacy.name_words import CALENDAR, adjacent, chat_form, has_ordinary_casing, proper_mid, tokens
from dptext.privacy.names import _PARTICLES, TITLES, NameDetector, account_word  # noqa: F401 - re-exported
from dptext.privacy.recognizers import Detection

_DURATION = re.compile(r"(?:(?:about|over|almost|nearly|around|more than|less than|the|a|an|past|last|next)\s+)*"
                       r"\d+(?:\+|-?plus)?(?:\s*(?:to|-|–)\s*\d+)?[\s-]*(?:years?|months?|weeks?|days?|hours?|minutes?|decades?|"
                       r"yrs?|mos?|wks?|hrs?|h|mins?|secs?)(?:\s+(?:old|ago|later|long))?",
                       re.IGNORECASE)
# what is left of a spaCy date that names no day: a count ("10", "30+", "20-plus") or a range ("12 to 18")
_BARE = re.compile(r"\d{1,3}(?:\+|-?plus)?(?:\s*(?:to|-|–)\s*\d{1,3})?", re.IGNORECASE)

# an amount after a number: "1999 dollars", "2500 people" (a count, no year)
_UNIT_AFTER = re.compile(r"(?i)\s{0,2}(?:dollars?|euros?|pounds?|usd|eur|gbp|people|persons|users|miles?|km|"
                         r"kilomet(?:er|re)s?|met(?:er|re)s?|feet|ft|points?|votes?|copies|units|items|words|pages|"
                         r"calories|kg|lbs?|members|employees|students|times|followers)\b")


def _not_a_year(text, d):
    """A spaCy DATE that is only a number followed by what it counts (``1999 dollars``). Other bare numbers stay
    covered: a postcode or a house number that spaCy calls a date is still private."""
    s = text[d.start:d.end]
    return s.isdigit() and _UNIT_AFTER.match(text, d.end) is not None


def _trim(text, d, keep):
    """``d`` without the words at its edges that fail ``keep`` (None when no word is left)."""
    words = [m for m in re.finditer(r"[^\s,;:()\[\]\"]+", text[d.start:d.end])]
    while words and not keep(words[0].group(0)):
        words.pop(0)
    while words and not keep(words[-1].group(0)):
        words.pop()
    if not words:
        return None
    return Detection(d.start + words[0].start(), d.start + words[-1].end(), d.label, d.detector)


def refine(text: str, detections: list, names: "NameDetector") -> list:
    """spaCy's entities cut to what identifies someone, and person names widened over adjacent name-like words.

    * A spaCy ``DATE`` / ``TIME`` keeps the words that hold a digit, a month or a weekday: ``next week``,
      ``a few months ago`` and ``the year`` name no date and go; ``Member 92817139`` loses ``Member``.
    * A spaCy ``PERSON`` loses edge words that are English words and no listed name (``passport``, ``Tales``),
      places no name list holds (``Perth``), unlisted words in lower case in cased text (``checkin``),
      and listed names that are frequent English words unless ordinary casing marks them (``Rose`` stays;
      ``SAID``, ``SONG`` go: the recased copy of upper-case text reads such words as names).
    * Every ``PERSON`` span grows over up to two adjacent name-like words on each side (an unlisted given name
      before a found surname: ``Şuayp Ertaş``, ``ISAQUE NASCIMENTO``); a listed name that is also an
      English word is not taken this way.
    """
    lex = names.lex
    ordinary = has_ordinary_casing(text)  # computed once: the person rules below all ask it
    out = []
    for d in detections:
        if d.detector == "spacy" and d.label in ("DATE", "TIME") and _DURATION.fullmatch(text[d.start:d.end]):
            d = None  # "8+ years", "three days ago": a length of time, no date
        elif d.detector == "spacy" and d.label in ("DATE", "TIME"):
            d = _trim(text, d, lambda w: any(c.isdigit() for c in w) or w.casefold().strip(".") in CALENDAR)
            if d is not None and (_BARE.fullmatch(text[d.start:d.end]) or _DURATION.fullmatch(text[d.start:d.end])
                                  or _not_a_year(text, d)):
                d = None  # "the next 10 hrs" leaves "10", "a 12 TO 18 MONTH freeze" leaves "12 TO 18"
        elif d.detector == "spacy" and d.label == "PERSON" and field_label(text, d.start, d.end):
            d = None  # "Tel:", "FAX:": a field's label, no name
        elif d.detector == "spacy" and d.label == "PERSON":

            def keep(w):  # a listed name that is a frequent word counts only when casing marks it ("Rose")
                if w[:1] in "@#" or w.casefold() == "rt":
                    return False  # a handle, hashtag or retweet mark names an account or topic, no person
                if w.casefold().rstrip(".") in TITLES:
                    return False  # a title stays public, as the name lists keep it: "Mr Maguire" -> "Maguire"
                f = w.casefold().replace("’", "'").strip(".'-")
                f = f[:-2] if f.endswith("'s") else f
                listed = f in lex.first or f in lex.last
                if not listed and chat_form(w, (0, len(w), f), lex):
                    return False  # a chat form: "shouldnt"
                if not any(c.isalnum() for c in f) or f in lex.places and not listed:
                    # a sign ("&", "-") names no one, nor a place no name list holds ("Perth": the places detector
                    # takes it); a number stays (a house number spaCy took in)
                    return False
                if ordinary and w.islower() and (not listed or lone):
                    return False  # in cased text an unlisted or lone word in lower case is no name: "checkin", "martial"
                # alone, an English word no casing marks is ambiguous as in the name lists ("BIAS", "WINNERS": spaCy
                # read them from the recased copy, which title-cases listed surnames), unless a frequent surname
                ambiguous = lex.common(f) or lone and f not in lex.first and lex.is_word(f) \
                    and f not in lex.frequent_last
                return (not f.isalpha() or not lex.is_word(f)
                        or listed and (not ambiguous or ordinary and w[:1].isupper() and not w.isupper()))
            if d.start and text[d.start - 1] in "@#":  # spaCy leaves the sign out of "#DeflateGate"
                d = Detection(d.start - 1, d.end, d.label, d.detector)
            lone = len(text[d.start:d.end].split()) == 1
            d = _trim(text, d, keep)
        if d is not None:
            out.append(d)
    out = _yield_to_spacy(text, _repeat(text, _widen(text, out, names, ordinary), names, ordinary), ordinary)
    return bridge(text, out)


# the labels spaCy reads well enough from the recased copy of lower- or upper-case text to outrank the name lists
_PLACES = frozenset("NORP FAC GPE LOC".split())


def _yield_to_spacy(text, detections, ordinary):
    """A name-list ``PERSON`` that lies inside a spaCy entity of another proper-name label (``India's``, a listed
    given name, in a ``GPE``) gives way to it: in cased text to any such label, in lower- or upper-case text to a
    place or group (``tora bora area``, ``sydney heads``), the labels spaCy still reads well from the recased
    copy there. The characters stay covered: a spaCy entity is among the detections only when the policy protects
    its label."""
    labels = NOT_PERSONS if ordinary else _PLACES
    others = [d for d in detections if d.detector == "spacy" and d.label in labels]
    if not others:
        return detections

    def inside(d):
        end = d.end - 2 if text[d.end - 2:d.end] in ("'s", "’s") else d.end  # a possessive: "India's"
        return any(o.start <= d.start and end <= o.end for o in others)
    return [d for d in detections if not (d.label == "PERSON" and d.detector != "spacy" and inside(d))]


def _repeat(text, detections, names, ordinary):
    """A word found in a person's name is a name wherever else the text repeats it (``Khasbulat Shishani's
    tales ... early Shishani``), in any casing, when no English word list knows it (listed names are found
    everywhere already); so is the listed surname of a two- or three-word name that opens with a distinctive
    given name, even an English word, where casing does not mark it as a word (``directed by sophia potter and
    starring potter``; in cased text only ``Potter``)."""
    persons = [d for d in detections if d.label == "PERSON"]
    if not persons:
        return detections
    lex = names.lex
    toks = tokens(text)
    inside = [any(d.start <= t[0] and t[1] <= d.end for d in persons) for t in toks]
    words = [t[2][:-2] if t[2].endswith("'s") else t[2] for t in toks]  # "shishani's" -> shishani
    # four letters or more ("hrs" is an abbreviation), and no negation split from its apostrophe ("doesn t")
    seen = {w for w, ins in zip(words, inside)
            if ins and len(w) > 3 and not lex.is_word(w) and not (w.endswith("n") and w[:-1] in lex.stop)}
    # the listed surname after a distinctive given name, an English word or not, where casing does not say it is a
    # word: "directed by sophia potter and starring potter"
    surnames = set()
    for d in persons:
        inner = [k for k, t in enumerate(toks) if d.start <= t[0] and t[1] <= d.end]
        if len(inner) in (2, 3) and names._kind(text, toks[inner[0]]) == "first" \
                and words[inner[-1]] in lex.last and len(words[inner[-1]]) > 3:
            surnames.add(words[inner[-1]])
    out = list(detections)
    for t, w, ins in zip(toks, words, inside):
        if not ins and (w in seen or w in surnames and (not ordinary or text[t[0]].isupper())) \
                and not account_word(text, t):
            out.append(Detection(t[0], t[1], "PERSON", "gazetteer"))
    return out


_PROPER_KINDS = ("first", "last", "last-rare", "unknown")


def _lone_name(text, toks, d, by_start, names, kinds=("first", "last")):
    """``d`` is one given name or surname of ``kinds`` (by default listed and no frequent word: ``graham``), or a
    surname that opens with a particle (``van henegouwen``): a name a given name before it would complete."""
    i = by_start.get(d.start)
    if i is None:
        return False
    if toks[i][2] in _PARTICLES:
        return toks[i][1] < d.end  # the particle and its surname
    nxt = i + 1 < len(toks) and adjacent(text, toks[i], toks[i + 1]) and names._kind(text, toks[i + 1]) in (
        "first", "last", "initial", "unknown")  # the name goes on: "general joseph e."
    return toks[i][1] >= d.end - 2 * text.endswith("'s", 0, d.end) and not nxt \
        and names._kind(text, toks[i]) in kinds


def _widen(text, detections, names, ordinary):
    persons = [d for d in detections if d.label == "PERSON"]
    if not persons:
        return detections
    toks = tokens(text)
    by_end = {t[1]: i for i, t in enumerate(toks)}
    by_start = {t[0]: i for i, t in enumerate(toks)}
    out = [d for d in detections if d.label != "PERSON"]
    others = [o for o in out if o.detector == "spacy" and o.label in NOT_PERSONS]
    for d in persons:
        s, e = d.start, d.end
        for step in range(2):
            i = by_end.get(s - 1)
            kind = None if i is None else names._kind(text, toks[i])
            # a given name that is also an English word completes a lone given name or surname right after it
            # where casing says nothing: "drew graham", "GUY GILLES", "mads van henegouwen" (not a full name:
            # "said lambert mende", "general joseph e.")
            # in cased text, a word written as a proper noun inside a sentence does the same, listed or not:
            # "including Even Olsen" (not a sentence's first word, a month, a title or a cue; nor before a month
            # that is also a given name: "Press Conference January 30")
            proper = step == 0 and ordinary and i is not None and kind in (None, "first-common", "last-common") \
                and proper_mid(text, toks[i]) and text[d.start:d.end].casefold() not in CALENDAR \
                and not any(o.start < d.end and toks[i][0] < o.end for o in others)  # "British India": a place's
            paired = step == 0 and (kind == "first-common" and not ordinary or proper) \
                and toks[i][2] not in _CUE_WORDS \
                and _lone_name(text, toks, d, by_start, names,  # a cue is never the name: "tell maria"
                               # after a proper noun, a surname no list holds completes it too ("Anasa Ochieng")
                               _PROPER_KINDS if proper else ("first", "last"))
            if i is None or text[s - 1] != " " or (kind or "-common").endswith("-common") and not paired \
                    or account_word(text, toks[i]) or toks[i][2] in TITLES:  # no handle, hashtag, e-mail local
                break  # part or title ("Mr" stays public)
            s = toks[i][0]
        for _ in range(2):
            i = by_start.get(e + 1)
            if i is None or text[e] != " " or text[e - 2:e] in ("'s", "’s") \
                    or (names._kind(text, toks[i]) or "-common").endswith("-common") \
                    or account_word(text, toks[i]):
                break
            e = toks[i][1]
        out.append(Detection(s, e, d.label, d.detector))
    return out


class PlaceDetector:
    """Places no English word list knows, from WordNet's geographic instances, in any casing (label ``GPE``):
    ``perth``, ``EDINBURGH``, ``Andorra's``. spaCy finds most places in cased text; in lower- or upper-case text
    it reads them only from the recased copy, and a town inside an address may still be missed there."""

    name = "gazetteer"
    label = "GPE"

    def __init__(self) -> None:
        self.lex = lexicon()

    def detect(self, text: str) -> list[Detection]:
        return [Detection(s, e - 2 * w.endswith("'s"), self.label, self.name) for s, e, w in tokens(text)
                if self.lex.is_place(w) and not account_word(text, (s, e, w))]


def recase(text: str, names: NameDetector) -> str:
    """A copy of ``text`` (same length, for spaCy) with name-like words written as proper nouns.

    In text with ordinary casing, listed names written in lower or upper case are title-cased (an
    unlisted lower-case word there is rarely a name). In lower- or upper-case text, every upper-case
    word is lower-cased first and every name-like word, and every place that is no English word
    (``edinburgh``), title-cased, so the copy reads like ordinary text.
    """
    chars = list(text)
    toks = tokens(text)
    ordinary = has_ordinary_casing(text)
    for s, e, w in toks:
        word = text[s:e]
        if not (word.islower() or word.isupper()) or len(word) < 2:
            continue
        kind = names._kind(text, (s, e, w))
        if not ordinary and names.lex.is_place(w):
            kind = "place"  # a place no English word list knows, written as a proper noun for spaCy: "edinburgh"
        if kind is None or kind.endswith("-common") and not word.isupper() or ordinary and kind == "unknown":
            if not ordinary and word.isupper() and len(word.lower()) == e - s:
                chars[s:e] = word.lower()
            continue
        titled = word[0].upper() + word[1:].lower()
        if len(titled) == e - s:
            chars[s:e] = titled
    return "".join(chars)
