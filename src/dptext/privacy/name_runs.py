"""Which words of a run of name words make a person's name (used by :class:`dptext.privacy.names.NameDetector`).

A run is a stretch of adjacent words that each have a name *kind* (``first``, ``last``, ``unknown``, ``initial``,
``particle``, the ``-common`` and ``-rare`` weak forms). :func:`accept` trims the edge words that pair with no
neighbour and says whether what is left is a name; :func:`untitled_keep` drops what casing or a determiner says is
no name where no title comes first; :func:`lone_proper` is a capitalized listed word inside a cased sentence.
"""

from __future__ import annotations

from dptext.privacy.name_cues import _DETERMINERS
from dptext.privacy.name_words import adjacent, opens


def accept(run, kinds, titled, common):
    """The words of ``run`` (token indices) that make a name, edge words that pair with no neighbour trimmed;
    None when no name is left. ``titled``: a title opens the run."""
    ks = [kinds[r] for r in run]
    common = [common[r] for r in run]
    strong = [k in ("first", "last", "last-rare") for k in ks]

    lo, hi = 0, len(run) - 1
    # trim edge words that are not a name on their own and do not pair with their neighbour
    # a given name or unlisted word pairs with a surname or a particle ("lukasz van der elst"); an unlisted
    # word with a listed surname that is an infrequent English word ("thiago martins")
    while not titled and lo < hi and not strong[lo] and not (
            ks[lo] == "initial" or ks[lo].startswith("first") and ks[lo + 1].startswith(
                ("last", "initial", "unknown", "particle"))
            or ks[lo] == "unknown" and (ks[lo + 1] in ("last", "last-rare", "unknown", "particle")
                                        or ks[lo + 1] == "last-common" and not common[lo + 1])):
        lo += 1
    while hi > lo and not strong[hi] and not (
            (strong[hi - 1] or ks[hi - 1].startswith("first")) and ks[hi].startswith(("last", "first-common"))
            or ks[hi] == "unknown" and ks[hi - 1].startswith(("first", "initial", "unknown"))
            or ks[hi] == "last-common" and not common[hi] and ks[hi - 1] == "unknown"):
        hi -= 1
    if titled:
        return None if all(k == "unknown" for k in ks[lo : hi + 1]) and hi - lo > 2 else run[lo : hi + 1]
    if lo == hi and not strong[lo] or all(k == "unknown" for k in ks[lo : hi + 1]) and hi - lo > 2:
        return None  # a lone ambiguous word; four unlisted words in a row are more likely a foreign phrase
    if not any(strong[lo : hi + 1]) and not (
            hi > lo and ks[lo].startswith(("first", "initial", "unknown")) and ks[hi].startswith(("last", "unknown"))):
        return None
    return run[lo : hi + 1]


def untitled_keep(text, toks, kinds, keep, ordinary, frequent, lex):
    """``keep`` (a run's name words, no title before them) without what casing or a determiner says is no name;
    None when nothing is left."""
    lower = [k for k in keep if not text[toks[k][0]].isupper()]
    if len(lower) < len(keep):  # a frequent word in lower case ends a capitalized name: "an Adelaide man", "LA flight"
        while len(keep) > 1 and frequent[keep[-1]] and keep[-1] in lower:
            keep = keep[:-1]
            lower = lower[:-1]
    if ordinary and lower and (
            all(kinds[k] == "unknown" for k in keep)  # unlisted words: only as proper nouns
            or len(keep) == 1  # "ok", "app": a lone listed name in lower case in cased text
            # no distinctive name ("min Late", "Gotta love"): a rare surname is weak here
            or not any(kinds[k] in ("first", "last") for k in keep)):
        return None
    if len(keep) > 1:
        return keep
    k = keep[0]
    if k and toks[k - 1][2] in _DETERMINERS and kinds[k].endswith(("-rare", "-common")):
        return None  # "the app", "your app": a weak name word after a determiner is a noun
    word = text[toks[k][0]:toks[k][1]]
    if 1 < len(word) < 5 and word.isupper() and not text.isupper() and (
            kinds[k].endswith(("-rare", "-common")) or lex.is_word(toks[k][2])):
        return None  # "CEO", "ORD", "LA": a short word in capitals, in text that is not all capitals, is an acronym
    return keep


def seldom(w, lex):
    """A given name seldom given anywhere that is also an English word (``visa``, ``vice``): no name beside
    frequent or ambiguous words only (``visa card``)."""
    return w.removesuffix("'s") in lex.seldom


def run_ends(text, toks, kinds, k):
    """No name word joins ``toks[k]`` from the right."""
    return k + 1 == len(toks) or kinds[k + 1] is None or not adjacent(text, toks[k], toks[k + 1])


def lone_proper(text, toks, kinds, k, lex):
    """A listed name that is also an infrequent English word, or a given name that is also a frequent one,
    capitalized between lower-case words or after a sentence's first word (``for Fowler at``, ``Without Min we``);
    other frequent words (``Late Flight``, ``Customer Service``) and a handful of census families are left out."""
    w = toks[k][2]
    return (kinds[k] or "").endswith("-common") and (not lex.common(w) or kinds[k] == "first-common") \
        and (w not in lex.rare or kinds[k] == "first-common") and (
        k == 0 or text[toks[k - 1][0]].islower() or opens(text, toks[k - 1])) and (
        k + 1 == len(toks) or text[toks[k + 1][0]].islower() or text[toks[k][1]:toks[k + 1][0]].strip() != "")
