"""Word shapes and casing for person names (used by :class:`dptext.privacy.names.NameDetector`).

* tokens: words with their combining marks and inner apostrophes, case-folded and composed (:func:`tokens`);
* shape: surname endings of many languages, English derivational endings, hyphenated English compounds, a
  given name run into a surname in a hashtag (``tombrady``);
* casing: whether a text has ordinary casing at all, whether a word is written as a proper noun inside a
  sentence or opens one (after which a capital says nothing).
"""

from __future__ import annotations

import functools
import re
import unicodedata

from dptext.privacy.name_cues import _DETERMINERS

# surname endings of many languages (Slavic, Baltic, Turkish, Italian, Nordic, Dutch, Greek, Armenian, Georgian,
# Romanian, Finnish, Spanish): an unlisted word that no English word list knows and ends so is a surname
SURNAME_SHAPE = re.compile(
    r"(?:[sc]ki|[sc]ka|[sc]ky|[sc]ká|[sc]ký|wicz|owicz|czyk|czak|[ijy]ak|chuk|czuk|enko|vić|vic|[čćc]ić|ová|ov|ova|"
    r"aitis|auskas|avičius|ienė|ytė|oğlu|oglu|elli|[ie]ni|etti|otti|ucci|acci|azzi|ello|sson|ssen|[^s]sen|ström|"
    r"strom|qvist|quist|gren|lund|stra|[ei]ma|inga|opoulos|akis|[ia]dis|[ia]des|[iy]an|shvili|dze|escu|eanu|nen|"
    r"[aeiou]z|[ae]rek|[aá]lek|czek|ček|ák|ink|huis|ijk|mann|hofer|inger|"
    # German and Nordic place-name surnames: "falkenrath", "blomkvist", "rosenfeld", "lindenau"
    r"kvist|rath|bach|berg|stein|feld|dorf|hardt|meier|meyer|huber|bauer|brink|holm|dahl|strand|au)$")
# an English word with a derivational ending ("driverless", "bookishness"): no name, though no list holds it
_DERIVED = re.compile(r"(?:less|ness|ful|fully|able|ably|ship|hood|ment|ments|wise|ish|ly)$")
# greetings, interjections and chat forms: closed classes of English that WordNet does not list, while some of
# them are also listed names ("Oh", "Ok", "Ur", "Til")
GREETINGS = frozenset("hi hello hey hiya dear thanks thx cheers regards sincerely oh ohh ok okay yeah yea ya yep "
                       "yup nah nope aw aww ah ahh uh um hmm ha haha lol omg wtf btw idk imo tbh smh pls plz ur im "
                       "til gonna gotta wanna aint ya'll y'all yall lemme gimme dunno kinda sorta fwiw imho afaik fyi ngl tmrw "
                       "tmr tho rn sike prev congrats congratulations".split())
CALENDAR = frozenset("january february march april may june july august september october november december "
                     "jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday "
                     "saturday sunday mon tue tues wed thu thur thurs fri sat sun".split())
# marks after which a capital says nothing: the end of a sentence, a colon, a quotation, a dash, a list mark
OPENERS = ".!?:;\"'(“‘-–—*#@|/>"
# a letter may carry combining marks ("i̇" in "i̇brahim", Turkish İ lower-cased); inside a word an apostrophe may be
# a left quotation mark, as in Uzbek names ("ulug‘bek")
_LETTERS = r"(?:[^\W\d_][\u0300-\u036f]*)+"
_TOKEN = re.compile(r"(?<![\w'’])[dDlL]['’](?=[ \t])|(?<=[vV][aA][nN] )['’][tT](?=[ \t])"
                    rf"|{_LETTERS}(?:['’‘]{_LETTERS}|-{_LETTERS})*")


def tokens(text):
    """(start, end, word) of each word, a tuple; the word case-folded, composed, its apostrophes plain (a dotted
    capital I lower-cased, ``i̇``, is looked up as ``i``). One detection reads a text's tokens several times, so
    those of the last few texts up to 20,000 characters are kept."""
    return _tokens_kept(text) if len(text) <= 20_000 else _tokens(text)


def _tokens(text):
    return tuple((m.start(), m.end(), unicodedata.normalize("NFC", m.group(0)).casefold().replace("’", "'")
                  .replace("‘", "'").replace("i\u0307", "i")) for m in _TOKEN.finditer(text))


_tokens_kept = functools.lru_cache(maxsize=16)(_tokens)


_CAMEL = re.compile(r"([A-Z][a-z]{2,})([A-Z][a-z]{2,})")  # "#TimCook": two words, each capitalized


def run_together(w, lex):
    """``w`` is a given name run into a surname that is no frequent English word (``tombrady``), the whole no English
    word, no place (``sydney`` is no ``syd`` + ``ney``) and no cut of it holds a place (``virginamerica``,
    ``americanair``)."""
    cuts = range(3, len(w) - 2)
    if not w.isalpha() or lex.is_word(w) or w in lex.places \
            or any(w[:i] in lex.places or w[i:] in lex.places for i in cuts):
        return False
    return any(w[:i] in lex.first and w[i:] in lex.last and not lex.common(w[i:]) for i in cuts)


def person_hashtag(word, w, ordinary, lex, kind):
    """A hashtag (``word`` as written, ``w`` case-folded; ``ordinary``: the text is cased) that names a person: a
    given name run into a surname that is no frequent word (``#TomBrady``, ``#tombrady``); in camel case, a given
    name and a surname that is not rare, not both frequent words (``#TimCook``; not ``#WinterWeather``,
    ``#OscarNight``); or one listed name of four letters or more that is no English word, place, month or weekday
    and that ``kind`` (the name detector's word kind) calls distinctive (``#Hernandez``; not ``#Sunday``, nor in
    capitals where the text is cased: ``#ISIS``)."""
    if run_together(w, lex):
        return True
    camel = _CAMEL.fullmatch(word)
    if camel:
        a, b = camel[1].casefold(), camel[2].casefold()
        return a in lex.first and b in lex.last and b not in lex.rare and not (lex.common(a) and lex.common(b)) \
            and not any(p in lex.places or p in lex.stop for p in (a, b))
    return len(w) > 3 and w.isalpha() and not (ordinary and word.isupper()) and (w in lex.first or w in lex.last) \
        and w not in lex.places and w not in CALENDAR and not lex.is_word(w) \
        and kind(word, (0, len(word), w)) in ("first", "last")


def opens(text, tok, marks=".!?"):
    """``tok`` opens the text, a line or a sentence (after one of ``marks``)."""
    before = text[:tok[0]].rstrip()
    return not before or before[-1] in marks or "\n" in text[len(before):tok[0]]


def proper_mid(text, tok):
    """``tok`` is written as a proper noun (``Folch``) and does not open a sentence, a line or a quotation."""
    s, e, _ = tok
    word = text[s:e]
    # one capital then lower case ("JetBlue", "Alt-J", "OH-ing" are brands or shouts); no handle or month
    if e - s < 3 or not title_case(text, tok) or word.casefold().rstrip(".") in CALENDAR \
            or text[s - 1:s] in ("_", "@", "#"):
        return False
    before = text[:s].rstrip()
    if before.rsplit(None, 1)[-1:] and before.rsplit(None, 1)[-1].casefold() in _DETERMINERS:
        return False  # "the App store", "a Coachella ticket": a determiner does not go before a name
    return not opens(text, tok, OPENERS)  # nor opens a sentence, a line or a quotation


def title_case(text, tok):
    """``tok`` is written with one capital and then lower case (``Peace``, not ``PEACE`` or ``peace``)."""
    word = text[tok[0]:tok[1]]
    return len(word) > 1 and word[0].isupper() and word[1:].replace("'", "").replace("’", "").islower()


def derived(w, lex):
    """``w`` is an English word plus a derivational ending (``driverless``, ``happily``): a stem of 4+ letters."""
    m = _DERIVED.search(w)
    if m is None or m.start() < 4:
        return False
    stem = w[:m.start()]
    return lex.is_word(stem) or stem.endswith("i") and lex.is_word(stem[:-1] + "y")


def compound(w, lex):
    """``w`` joins English words with hyphens (``tear-gas``, ``character-oriented``, ``ex-ministers``) and none of
    them is a listed name that is no frequent word (``mary-jane``, ``jean-pierre`` stay names)."""
    parts = w.split("-")
    return len(parts) > 1 and all(p and lex.is_word(p) and not (
        (p in lex.first or p in lex.last) and not lex.common(p)) for p in parts)


def adjacent(text, a, b, title=False):
    gap = text[a[1] : b[0]]
    if title:
        return gap in (" ", ". ", "  ")
    return gap == " " or (gap == ". " and a[1] - a[0] == 1)


def has_ordinary_casing(text: str) -> bool:
    """More than 10 % of the words start with a capital and go on in lower case (not all-lower, not shouting)."""
    toks = tokens(text)
    return sum(1 for s, e, _ in toks if text[s].isupper() and not text[s:e].isupper()) > 0.1 * len(toks)


def chat_form(text, tok, lex):
    """A word as chat writes it, no name: four letters or more glued to a digit before it (``#3dprinted``; not a
    postcode's letters, ``4yx``), or a negation without its apostrophe (``shouldnt``, ``didnt``).

    Not a word without a vowel (``nfl``): a name beside one (``WESTERMARCK HRS``) was found as a run of two
    name-like words and would go out alone in clear; nor a dropped g (``feelin``), which reads like the names
    ``Bravin`` and ``vestin``."""
    s, e, w = tok
    return s > 0 and text[s - 1].isdigit() and e - s > 3 or w.endswith("nt") and w[:-2] in lex.stop


def no_name_word(w, lex):
    """A stop word, a contraction, a greeting or a word of under three letters: never half of a name."""
    return w in lex.stop or "'" in w or w in GREETINGS or len(w) < 3
