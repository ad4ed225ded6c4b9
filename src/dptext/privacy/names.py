"""Person names from word lists, word shapes, casing and cue words (used through :mod:`dptext.privacy.lexical`).

* :class:`NameDetector` (label ``PERSON``): runs of name-like words, looked up
  case-folded, so ``maria lopez``, ``MARIA LOPEZ`` and ``Maria Lopez`` are
  found alike. A word is *name-like* when it is a known given name or surname,
  an initial (``J.``), or, next to a name or after a title, a word no English
  word list knows (``kowalczyk``). A run is a name when it holds a
  *distinctive* name (a listed name that is not a frequent English word), or a
  given name followed by a surname, or follows a title (``Mr``, ``Dr.``,
  ``Prof`` …; the title itself stays public) or a cue (``my name is``,
  ``dear``, ``patient``, ``kid``, ``cc``, ``delivery for`` …), or is two or three unlisted words or one
  in the possessive (capitalized, in ordinary casing). A surname that is also
  an English word (``maiden``) is ambiguous. Frequent words at the edges of a
  run (``call maria``) are trimmed unless they pair with a name
  (``mark lopez``). Beyond the lists:

  - word shape: an unlisted word with a surname ending of many languages
    (``-wicz``, ``-akis``, ``-oğlu``, ``-sson``, ``-elli`` …) or with letters
    English does not use (``ørjasæter``) is a surname in any casing;
  - particles (``van der``, ``de la``) join a name to the word after them, and an unlisted word before
    them (``lukasz van der elst``); an unlisted word before a listed surname that is an infrequent English
    word is a full name (``thiago martins``);
    after a distinctive given name an infrequent word is the surname, and
    before a distinctive surname an infrequent word is the given name;
  - position: a word after a title, a speaker at the start of a line
    (``Okonjo: "…"``), and in cased text a proper noun no list knows inside
    a sentence (``Delivery for Ngubane at``);
  - chat text: the pronoun ``I``, negations (``didn't``), contractions,
    greetings and interjections (``oh``, ``ok``, ``lol``) are no name words;
    in cased text a lone listed word in lower case (``app``) and a pair with
    no distinctive name and a word in lower case (``min Late``) are no names;
    census surnames of a handful of families (``gotta``) count as weak there;
    handles, hashtags and e-mail local parts are never name words.
* the subject of a person's verb (``kowalczyk lives at``), a word after ``ask`` / ``tell`` / ``met``,
  and a list of three or more given names (``june, hope and grace``) are names in any casing; in cased
  text so is a listed name that is an infrequent English word, capitalized between lower-case words
  (``for Fowler at``).
* a run of letters of a script other than Latin (``渡辺``, ``Лена``) is a name (:mod:`dptext.privacy.scripts`).
* where casing says nothing (lower- or upper-case text, the first word of a sentence), a word no list knows
  counts as a surname when GloVe reads it as a name or does not know it (``has anyone seen prasetyo``,
  ``OLAWALE WON``, ``Lebedev won``), and so does a rare census surname GloVe reads as a name
  (:mod:`dptext.privacy.name_vectors`); words joined by hyphens (``tear-gas``) are no name words. A capital
  says nothing after a colon, a dash or a quotation mark either (``Reminder: Chidimma collects``).
* a place no name list holds (WordNet's geographic instances: ``Perth``, ``Andorra's``) is no unlisted name word.
* no names either: a field name before a code (``IBAN: CH26…``), a spelled-out month or weekday that is no given
  name (``December``, ``Monday's``), a word of two to four letters in capitals in text that is not all capitals,
  when it is a weak name word or an English word (``CEO``, ``LA``), a military title (``Capt``) and a cue word
  before its name (``Student Oyenike``); a frequent word in lower case ends a capitalized name (``an Adelaide
  man``).
* a hashtag that runs a given name into a surname (``#TomBrady``, ``#TimCook``) or is one distinctive listed
  name (``#Hernandez``) is a name; handles name accounts and are left to their own recognizer.
* a given name seldom given anywhere that is also an English word (``visa``, ``vice``;
  :attr:`~dptext.privacy.gazetteers.Lexicon.seldom`) is no name beside frequent or ambiguous words only
  (``visa card``).

Word shapes, tokens and casing tests live in :mod:`dptext.privacy.name_words`.
"""

from __future__ import annotations

import re

from dptext.privacy.gazetteers import lexicon
from dptext.privacy.name_cues import _CUE_WORDS, _ROLES, _cued, _strengthen, field_label, tagged
from dptext.privacy.name_vectors import THRESHOLD, name_like, score, table
from dptext.privacy.name_runs import accept, lone_proper, run_ends, seldom, untitled_keep
from dptext.privacy.name_words import (  # noqa: F401 - tokens is re-exported
    CALENDAR, GREETINGS, OPENERS, SURNAME_SHAPE, adjacent, chat_form, compound, derived, has_ordinary_casing,
    no_name_word, opens, person_hashtag, proper_mid, title_case, tokens)
from dptext.privacy.recognizers import Detection
from dptext.privacy.scripts import foreign_words

# holidays are no one's name ("before Christmas")
_HOLIDAYS = frozenset("christmas xmas easter thanksgiving halloween hanukkah ramadan diwali".split())
_PARTICLES = frozenset("van der den de del della la le di da dos das du von zu ter ten bin ibn d' l' 't".split())
# the rest of an e-mail local part after a word ("kathy" in "kathy2071@yandex.com", "maria" in "maria.l@x.org")
_LOCAL_PART = re.compile(r"[\w.%+-]*@[A-Za-z0-9]")
_GENERATIONAL = frozenset("jr sr ii iii iv".split())
# field names that are also listed given names: before a code they label it ("IBAN: CH26 7556", "VIN 1HGCM82633")
_DAYS_MONTHS = frozenset("january february march april may june july august september october november december "
                         "monday tuesday wednesday thursday friday saturday sunday".split())
_FIELDS = frozenset("iban nino vin reg".split())
_CODE = re.compile(r"[\s:#.]{0,3}[A-Za-z]{0,4}\d")
# elided particles are tokens of their own, apostrophe kept: "Lara d' Heripon", "van 't Riet"
_ELIDED = frozenset(("d'", "l'", "'t"))
_ABBREVIATED = frozenset("mr mrs ms mx dr prof mme mlle sra dott".split())  # titles that are no English word
TITLES = frozenset("mr mrs ms miss mx dr prof professor sir dame lady lord rev reverend madam mme mlle herr frau "
                   "señor señora sr sra dott capt cpt sgt lt col cpl cmdr supt insp".split())


def account_word(text, tok) -> bool:
    """The first word of a handle or a hashtag, or a word of an e-mail local part (``@united``, ``#deflategate``,
    ``kathy`` in ``kathy2071@yandex.com``): it names an account, which its own recognizer takes whole. A later
    word of a handle (``mangham`` in ``@katie_mangham``) may be a person's surname and is looked up."""
    return tagged(text, tok) or _LOCAL_PART.match(text, tok[1]) is not None


class NameDetector:
    """Person names from given-name and surname lists, in any casing (label ``PERSON``)."""

    name = "gazetteer"
    label = "PERSON"

    def __init__(self) -> None:
        self.lex = lexicon()
        table(self.lex)  # GloVe's reading, built or mapped now: a missing package stops start-up, not a request

    def _kind(self, text, tok):
        s, e, w = tok
        lex = self.lex
        if w in _ELIDED:
            return None  # a particle: joins a name to its surname, no name word itself
        stem, _, clitic = w.partition("'")
        if clitic in ("s", "m", "t", "re", "ve", "ll", "d") and stem in lex.stop:
            return None  # "i'm", "it's", "we'll": a contraction of a stop word (and "im" is a listed name)
        first, last = w in lex.first, w in lex.last
        if not first and w.removesuffix("'s") in _DAYS_MONTHS:
            return None  # "December", "Monday's": a rare surname, but a date here ("April", "June" stay given names)
        if not (first or last) and w.endswith("'s"):  # a possessive: "anne's" is looked up as anne
            first, last = w[:-2] in lex.first, w[:-2] in lex.last
        if not (first or last) and "'" in w:  # o'brien is listed as obrien
            first, last = w.replace("'", "") in lex.first, w.replace("'", "") in lex.last
        # a capital letter is an initial, but the pronoun "I" and the article "A" only with a full stop
        initial = len(w) == 1 and w.isalpha() and (
            e < len(text) and text[e] == "." or text[s].isupper() and w not in lex.stop)
        if initial:
            return "initial"
        if w in lex.stop or len(w) < 2 or w.endswith("n't") or w in GREETINGS or w in _HOLIDAYS \
                or field_label(text, s, e):  # "Attn:", "TEL:": a field's label
            return None  # "didn't", "hi": no name
        # a surname ending, or letters English does not use ("métivier", "ertaş"), in a word no word list knows
        shaped = len(w) > 4 and SURNAME_SHAPE.search(w) is not None or not w.isascii() and len(w) > 3
        if first or last:
            base = w[:-2] if w.endswith("'s") else w.replace("'", "")  # "smith's" -> smith, "o'connor" -> oconnor
            # a surname that is also an English word ("maiden", "lingo", "guardian") is ambiguous like a frequent
            # word; a given-name list is curated, so "maria" (also a plural of "mare") stays a name
            # and so is a place: never a given name's ("berlin"), or one named often ("london", "paris")
            ambiguous = lex.common(base) or not first and (lex.is_word(base) or base in lex.places) \
                or lex.frequent_place(base)
            if not first and not ambiguous and w in lex.rare and not shaped:
                return "last-rare"  # a handful of census families ("gotta", "app"): weak against casing
            return ("first" if first else "last") + ("-common" if ambiguous else "")
        stem, _, clitic = w.partition("'")
        if clitic in ("s", "m", "t", "re", "ve", "ll", "d") and (stem in lex.stop or lex.is_word(stem)):
            return None  # a contraction or possessive of a word: "it's", "can't", "i'm"
        if not lex.is_word(w) and not derived(w, lex) and not compound(w, lex) and not chat_form(text, tok, lex):
            if shaped:
                return "last"
            # a place no name list holds is no unknown name word: "Perth", "Andorra's"
            return None if lex.is_place(w) else "unknown"
        return None

    def detect(self, text: str) -> list[Detection]:
        toks = tokens(text)
        kinds = [None if account_word(text, t) or t[2] in _FIELDS and _CODE.match(text, t[1])
                 else self._kind(text, t) for t in toks]
        ordinary = has_ordinary_casing(text)
        read = set()  # unlisted words GloVe reads as names
        for k, (_, _, w) in enumerate(toks):
            # where casing says nothing (uncased text, the first word of a sentence), a word no list knows that
            # GloVe reads as a name, or a rare census surname it does, counts as a listed surname ("has anyone
            # seen prasetyo", "OLAWALE WON", "Lebedev won", "Asamoah won"); elsewhere its capital says more
            if kinds[k] in ("unknown", "last-rare") and len(w) > 3 and w not in CALENDAR and (
                    not ordinary or opens(text, toks[k], OPENERS) and title_case(text, toks[k])) and (
                    name_like(w.removesuffix("'s"), self.lex) if kinds[k] == "unknown"
                    else (score(w.removesuffix("'s"), self.lex) or 0) >= THRESHOLD):
                if kinds[k] == "unknown":
                    read.add(k)
                kinds[k] = "last"
        out = []
        i, n = 0, len(toks)
        cued = _cued(text, toks, self.lex)
        for k in cued:  # the cue itself is no name ("student", "driver" are listed given names; a role may be)
            if k and toks[k - 1][2] in _CUE_WORDS and toks[k - 1][2] not in _ROLES:
                kinds[k - 1] = None
        # after a distinctive given name, an unlisted word that is no frequent English word, or one written as a
        # proper noun in cased text, is a surname: "gerald drub", "Maria Camps"; before a distinctive surname, an
        # unlisted word no word list knows is a given name: "iwo mateusiak"
        for k in range(len(toks) - 1):
            if kinds[k + 1] == "last" and kinds[k] is None and adjacent(text, toks[k], toks[k + 1]) \
                    and not tagged(text, toks[k]):
                w = toks[k][2]
                if not (no_name_word(w, self.lex) or self.lex.common(w)):
                    kinds[k] = "first-common"
            if kinds[k] in ("first-common", "last-common") and adjacent(text, toks[k], toks[k + 1]) \
                    and title_case(text, toks[k]) and title_case(text, toks[k + 1]) and (
                    kinds[k + 1] in ("first", "last") or kinds[k + 1] == "unknown" and (
                        proper_mid(text, toks[k]) or opens(text, toks[k], OPENERS)
                        and name_like(toks[k + 1][2].removesuffix("'s"), self.lex))
                    and not self.lex.is_word(toks[k + 1][2][:-1])) \
                    and run_ends(text, toks, kinds, k + 1) and ordinary:
                # "Peace Ibrahim", ", Blessing Olawale": a listed word in title case before a one-word name (a full
                # name after it has its title: "Minister Ariel Sharon"; nor before a word one letter longer than an
                # English word: "Late Flightr")
                kinds[k] = "first"
            # a word with letters English does not use is as good as a given name here: "trīne salami", and so is
            # a name after a cue and an unlisted word GloVe reads as a name: "student oyenike salami", "mojisola salami"
            if (kinds[k] == "first" or kinds[k] == "last" and (not toks[k][2].isascii() or k in cued or k in read)) \
                    and kinds[k + 1] is None \
                    and adjacent(text, toks[k], toks[k + 1]):
                w = toks[k + 1][2]
                if no_name_word(w, self.lex):
                    continue
                proper = text[toks[k + 1][0]].isupper() and not text[toks[k + 1][0]:toks[k + 1][1]].isupper()
                if not self.lex.common(w) or proper and ordinary:
                    kinds[k + 1] = "last-common"
            if not ordinary and kinds[k] in ("first-common", "last-common") and kinds[k + 1] in ("first", "last") \
                    and opens(text, toks[k], OPENERS + ",") and adjacent(text, toks[k], toks[k + 1]) \
                    and toks[k + 1][2] not in CALENDAR and run_ends(text, toks, kinds, k + 1):
                kinds[k] = "first"  # uncased, a listed word opening a sentence or an item before a name: "TEA VUK"
            if ordinary and kinds[k] == "unknown" and kinds[k + 1] is None and proper_mid(text, toks[k]) \
                    and title_case(text, toks[k + 1]) and adjacent(text, toks[k], toks[k + 1]):
                w = toks[k + 1][2]
                if not (no_name_word(w, self.lex) or w in CALENDAR):
                    # a proper noun after an unlisted one: "to Siti Ramadan for" (a frequent word, "Ngubane Power",
                    # is trimmed off the run's end as ever)
                    kinds[k + 1] = "last-common"
        _strengthen(text, toks, kinds, self.lex)
        frequent = [self.lex.common(t[2]) for t in toks]
        while i < n:
            titled = toks[i][2] in TITLES and i + 1 < n and adjacent(text, toks[i], toks[i + 1], title=True)
            start = i + 1 if titled else i
            if titled and kinds[start] is None and toks[start][2] not in self.lex.stop and (
                    text[toks[i][1]] == "." or toks[i][2] in _ABBREVIATED or not self.lex.common(toks[start][2])):
                # "dr. moraes", "prof. die pelser", "Ms Seven": after "Dr." or an abbreviated title any word is a
                # name; after "miss" or "lady", also English words, only an infrequent one
                kinds[start] = "unknown"
            if i in cued and not titled:  # "my name is kowalczyk": a name even if unlisted
                titled, start = True, i
                kinds[i] = kinds[i] or "unknown"
            if kinds[start] is None if start < n else True:
                i += 1
                continue
            j = start
            # a cued word starts its own run; a possessive ends one ("Anne's car")
            while j + 1 < n and j + 1 not in cued and not toks[j][2].endswith("'s"):
                if kinds[j + 1] is not None and adjacent(text, toks[j], toks[j + 1]):
                    j += 1
                    continue
                p = j + 1  # particles reach over to the surname after them, whatever word that is
                while p < n and toks[p][2] in _PARTICLES and adjacent(text, toks[p - 1], toks[p]) and p - j < 3:
                    p += 1
                if p == j + 1 or p >= n or not adjacent(text, toks[p - 1], toks[p]) or toks[p][2] in self.lex.stop:
                    break
                j = p
            if j > start and toks[j][2] in _PARTICLES and j + 1 < n and adjacent(text, toks[j], toks[j + 1]) \
                    and toks[j + 1][2] not in self.lex.stop:
                j += 1  # a particle that is also a listed name never ends one: "van der Rest"
            # inside a run, particles join a name to the word after them, which is then a surname whatever else
            # it is: "inaya van der brink", "maria de la cruz"
            k = start + 1
            while k < j:
                if toks[k][2] in _PARTICLES and kinds[k - 1] in ("first", "last", "unknown", "initial"):
                    q = k
                    while q < j and toks[q][2] in _PARTICLES:
                        kinds[q] = "particle"
                        q += 1
                    if kinds[q] is None or kinds[q].endswith(("-common", "-rare")) or kinds[q] == "unknown":
                        kinds[q] = "last"
                    k = q
                k += 1
            run = list(range(start, j + 1))
            for k in run:  # particles after a weak name word ("king ibn cc") were reached over but not joined
                if kinds[k] is None:
                    kinds[k] = "particle" if toks[k][2] in _PARTICLES else "last-common"
            keep = accept(run, kinds, titled, frequent)
            rarely = [seldom(toks[k][2], self.lex) for k in keep or ()]
            if len(rarely) > 1 and not titled and any(rarely) and all(
                    rare or (kinds[k] or "").endswith("-common") for k, rare in zip(keep, rarely)):
                keep = None  # a seldom name with only frequent or ambiguous words beside it is no name: "visa card"
            if keep and len(keep) == 2 and not titled and self.lex.is_pair(toks[keep[0]][2], toks[keep[1]][2]):
                keep = None  # a two-word common noun: "art school", "urban centers", "will power"
            if keep is None and kinds[j] == "unknown" and toks[j][2].endswith("'s"):
                keep = [j]  # an unlisted word in the possessive: "Tiia Holappa's", "Yakha's daughter"
            if keep and not titled:
                keep = untitled_keep(text, toks, kinds, keep, ordinary, frequent, self.lex)
            if keep is None:
                # in cased text, a proper noun inside a sentence that no list knows or only a rare surname is:
                # "Delivery for Folch at", "early Holappa", "Holtzer music"; not "Late Flightr" (a capitalized pair)
                for k in range(start, j + 1) if ordinary else ():
                    if (kinds[k] in ("unknown", "last-rare") or lone_proper(text, toks, kinds, k, self.lex)) \
                            and proper_mid(text, toks[k]) and (k == start or text[toks[k - 1][0]].islower()):
                        out.append(Detection(toks[k][0], toks[k][1], self.label, self.name))
            if keep:
                begin, k0 = toks[keep[0]][0], keep[0]
                if k0 in cued and k0 and toks[k0 - 1][2] in _ROLES and kinds[k0 - 1] in ("first", "first-common") \
                        and adjacent(text, toks[k0 - 1], toks[k0]):
                    begin = toks[k0 - 1][0]  # a role word that is also a given name may be the first name: "pastor valero"
                end, nx = toks[keep[-1]][1], keep[-1] + 1
                # a generational suffix belongs to the name: "Koch II", "JOHN SMITH JR."
                if nx < n and toks[nx][2] in _GENERATIONAL and text[end:toks[nx][0]] in (" ", ", "):
                    end = toks[nx][1] + (text[toks[nx][1]:toks[nx][1] + 1] == ".")
                out.append(Detection(begin, end, self.label, self.name))
            i = j + 1
        out.extend(Detection(s, e, self.label, self.name) for s, e in foreign_words(text))
        # a hashtag that is a person's name (a handle names an account, often a company's)
        out.extend(Detection(s, e, self.label, self.name) for s, e, w in toks
                   if text[s - 1:s] == "#" and person_hashtag(text[s:e], w, ordinary, self.lex, self._kind))
        return out
