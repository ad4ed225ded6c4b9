"""Privacy policies: which parts of a private text are perturbed, and at which ε.

A policy turns a text into a *plan*: spans that tile the text in order,
each marked private (perturbed by the mechanism) or public (sent as is),
with the ε for that span (``None`` = the mechanism's ε).

* ``all`` (default): one private span over the whole text; the claim covers
  every unit, as without a policy.
* ``entities``: detected spans are private at the mechanism's ε, everything
  else is public and leaves the machine in clear. The claim covers the
  detected spans only: a sensitive word the detectors miss is sent unchanged.
* ``tiered``: everything is private; detected spans at ``entity_epsilon``,
  smaller than the mechanism's ε, the rest at ε. The claim covers every unit,
  with the smaller ε on detected spans.

Detection (:mod:`dptext.privacy.detectors`) combines spaCy NER
(``en_core_web_md``), the pattern recognizers of
:mod:`dptext.privacy.recognizers` and an optional word list file; the
``detectors`` option selects among them (``"regex,wordlist"`` skips the
slower NER model, and with it names, organisations and places).
The ``gazetteer`` detector (:mod:`dptext.privacy.names`, :mod:`dptext.privacy.lexical`) adds person names,
WordNet medical conditions (``MEDICAL``) and WordNet places no English word list knows (``GPE``) in any
casing, and spaCy also reads a copy of the text with lower- and upper-case name-like words title-cased. Overlapping detections keep each label: a structured
identifier (email, URL, card, IBAN, IP, then handle, then phone and ID, then
address and date) keeps its exact range and label, and a lower-ranked detection keeps
only the characters outside it; detections of one label merge. A span's
``detector`` names every detector that found it with its label.

>>> from dptext.privacy.policy import get_policy
>>> pol = get_policy("tiered", entity_epsilon=1.0, entity_types=["EMAIL"])
>>> [(s.start, s.end, s.private, s.epsilon, s.label) for s in pol.plan("Mail ann@example.com today")]
[(0, 5, True, None, None), (5, 20, True, 1.0, 'EMAIL'), (20, 26, True, None, None)]
"""

from __future__ import annotations

import functools
import math

from dptext.errors import ParameterError, PrivacyError
from dptext.names import normalise_name
from dptext.privacy import recognizers
from dptext.privacy.detectors import (DEFAULT_SPACY_MODEL, SPACY_LABELS, WORDLIST_LABEL, SpacyDetector,
                                      WordList)
from dptext.privacy.spans import Span, merge_detections  # noqa: F401 - Span is re-exported

GAZETTEER_LABELS = ("PERSON", "MEDICAL", "GPE")
POLICIES = ("all", "entities", "tiered")
REGEX_LABELS = recognizers.LABELS
ENTITY_TYPES = tuple(dict.fromkeys(SPACY_LABELS + REGEX_LABELS + GAZETTEER_LABELS + (WORDLIST_LABEL,)))
DEFAULT_TYPES = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "DATE",
                 "EMAIL", "URL", "PHONE", "CARD", "IBAN", "ID", "IP", "ADDRESS", "MEDICAL", "HANDLE", WORDLIST_LABEL)
_OPTIONS = {
    "all": (),
    "entities": ("entity_types", "wordlist", "spacy_model", "detectors"),
    "tiered": ("entity_types", "wordlist", "spacy_model", "detectors", "entity_epsilon"),
}
DETECTORS = ("spacy", "regex", "wordlist", "gazetteer")


class Policy:
    """Base policy: the whole text is one private span (``all``)."""

    name = "all"

    def plan(self, text: str) -> list[Span]:
        return [Span(0, len(text), True)] if text else []

    def detect(self, text: str) -> list[Span]:
        """Detected spans only (empty for ``all``)."""
        return []

    def validate(self, epsilon: float) -> None:
        """Check the policy against the mechanism's ε (ParameterError when they conflict)."""

    def describe(self) -> dict:
        return {"name": self.name, "types": [], "detectors": [],
                "scope": "Every unit of the private text is perturbed; the claim covers all of it."}

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class EntitiesPolicy(Policy):
    """Perturb detected spans only; the rest of the text is public."""

    name = "entities"

    def __init__(self, *, entity_types=None, wordlist=None, spacy_model: str | None = None,
                 detectors=None) -> None:
        types = _check_types(entity_types)
        if entity_types is None and wordlist is None:  # the default types name TERM only for a word list
            types = tuple(t for t in types if t != WORDLIST_LABEL)
        use = _check_detectors(detectors)
        self.types = types
        spacy_labels = [t for t in types if t in SPACY_LABELS] if "spacy" in use else []
        self.regex_labels = tuple(t for t in types if t in REGEX_LABELS) if "regex" in use else ()
        gaz = [t for t in types if t in GAZETTEER_LABELS] if "gazetteer" in use else []
        if "wordlist" not in use and wordlist is not None:
            raise ParameterError("detectors", "a word list was given but the wordlist detector is not selected")
        if not spacy_labels and not self.regex_labels and not gaz and wordlist is None:
            raise ParameterError("entity_types", f"no selected detector finds any of {', '.join(types)}")
        self.spacy_model = spacy_model or DEFAULT_SPACY_MODEL
        # fail closed at construction: a detector that cannot load stops the run before any text moves
        self.spacy = SpacyDetector(spacy_labels, self.spacy_model) if spacy_labels else None
        from dptext.privacy.lexical import MedicalDetector, NameDetector, PlaceDetector

        # the name lists also recase text for spaCy, so they load whenever PERSON is wanted from either detector
        self.names = NameDetector() if "PERSON" in gaz or "PERSON" in spacy_labels else None
        self.name_spans = "PERSON" in gaz
        self.medical = MedicalDetector() if "MEDICAL" in gaz else None
        self.places = PlaceDetector() if "GPE" in gaz else None
        self.wordlist = _load_wordlist(wordlist) if WORDLIST_LABEL in types or wordlist is not None else None
        if wordlist is not None and WORDLIST_LABEL not in types:
            raise ParameterError("entity_types", f"a word list was given but entity type {WORDLIST_LABEL} "
                                 "is not selected")

    def detect(self, text: str) -> list[Span]:
        try:
            from dptext.privacy.lexical import has_ordinary_casing, recase

            found = recognizers.recognize(text, self.regex_labels)
            if self.names is not None and self.name_spans:
                found.extend(self.names.detect(text))
            if self.medical is not None:
                found.extend(self.medical.detect(text))
            if self.places is not None:  # after the names: a listed name the name lists took stays a PERSON
                found.extend(self.places.detect(text))
            if self.spacy is not None and self.names is not None and not has_ordinary_casing(text):
                copy = recase(text, self.names)  # lower- or upper-case text: spaCy reads only the recased copy
                found.extend(self.spacy.detect(copy if len(copy) == len(text) else text))
            elif self.spacy is not None:
                found.extend(self.spacy.detect(text, recase(text, self.names) if self.names is not None else None))
            if self.names is not None:  # spaCy's spans cut to what identifies, names widened over name-like words
                from dptext.privacy.lexical import refine

                found = refine(text, found, self.names)
            if self.wordlist is not None:
                found.extend(self.wordlist.detect(text))
        except Exception as exc:  # noqa: BLE001 - a failing detector must not let text pass in clear
            raise PrivacyError(f"entity detection failed ({type(exc).__name__}: {exc}); nothing was sent") from exc
        return merge_detections(found, text)

    def _span_epsilon(self) -> float | None:
        return None

    def _gap(self, start: int, end: int) -> Span:
        return Span(start, end, False)

    def plan(self, text: str) -> list[Span]:
        out: list[Span] = []
        pos = 0
        eps = self._span_epsilon()
        for s in self.detect(text):
            if s.start > pos:
                out.append(self._gap(pos, s.start))
            out.append(Span(s.start, s.end, True, eps, s.detector, s.label))
            pos = s.end
        if pos < len(text):
            out.append(self._gap(pos, len(text)))
        return out

    def _detectors(self) -> list[str]:
        names = []
        if self.spacy is not None:
            names.append(f"spacy ({self.spacy_model})")
        if self.regex_labels:
            names.append("regex")
        if self.name_spans or self.medical is not None or self.places is not None:
            names.append("gazetteer (given names: gender-guesser, US census; surnames: US census; "
                         "medical and places: WordNet 3.0)")
        if self.wordlist is not None:
            names.append(f"wordlist ({self.wordlist.source or 'in memory'}, {len(self.wordlist.terms)} terms)")
        return names

    def describe(self) -> dict:
        return {"name": self.name, "types": list(self.types), "detectors": self._detectors(),
                "scope": "Only the detected spans are perturbed and covered by the claim; the rest of the "
                         "text, including any sensitive word the detectors miss, is sent in clear."}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(types={list(self.types)})"


class TieredPolicy(EntitiesPolicy):
    """Perturb everything; detected spans at the smaller ``entity_epsilon``."""

    name = "tiered"

    def __init__(self, *, entity_epsilon=None, **kwargs) -> None:
        if entity_epsilon is None:
            raise ParameterError("entity_epsilon", "policy 'tiered' needs entity_epsilon (the ε for detected "
                                 "spans, smaller than the mechanism's ε)")
        try:
            value = float(entity_epsilon)
        except (TypeError, ValueError):
            value = float("nan")
        if not (value > 0 and math.isfinite(value)):
            raise ParameterError("entity_epsilon", f"invalid entity_epsilon {entity_epsilon!r}: "
                                 "must be a finite number > 0")
        self.entity_epsilon = value
        super().__init__(**kwargs)

    def _span_epsilon(self) -> float | None:
        return self.entity_epsilon

    def _gap(self, start: int, end: int) -> Span:
        return Span(start, end, True)

    def validate(self, epsilon: float) -> None:
        if not self.entity_epsilon < float(epsilon):
            raise ParameterError("entity_epsilon", f"entity_epsilon {self.entity_epsilon:g} must be smaller "
                                 f"than the mechanism's epsilon {float(epsilon):g}")

    def describe(self) -> dict:
        d = super().describe()
        d["entity_epsilon"] = self.entity_epsilon
        d["scope"] = (f"Every unit is perturbed and covered by the claim; detected spans get the smaller "
                      f"ε = {self.entity_epsilon:g}, the rest the mechanism's ε.")
        return d


def _check_types(entity_types) -> tuple[str, ...]:
    if entity_types is None:
        return DEFAULT_TYPES
    if isinstance(entity_types, str):
        entity_types = [t for t in entity_types.replace(";", ",").split(",")]
    types = tuple(dict.fromkeys(str(t).strip().upper() for t in entity_types if str(t).strip()))
    if not types:
        raise ParameterError("entity_types", "entity_types is empty; name at least one type")
    bad = [t for t in types if t not in ENTITY_TYPES]
    if bad:
        raise ParameterError("entity_types", f"unknown entity type {bad[0]!r}; known types: "
                             f"{', '.join(ENTITY_TYPES)}")
    return types


def _check_detectors(detectors) -> tuple[str, ...]:
    if detectors is None:
        return DETECTORS
    if isinstance(detectors, str):
        detectors = detectors.replace(";", ",").split(",")
    use = tuple(dict.fromkeys(str(d).strip().lower() for d in detectors if str(d).strip()))
    bad = [d for d in use if d not in DETECTORS]
    if bad or not use:
        raise ParameterError("detectors", f"unknown detector {bad[0]!r}; choose from {', '.join(DETECTORS)}"
                             if bad else "detectors is empty; name at least one of " + ", ".join(DETECTORS))
    return use


def _load_wordlist(wordlist) -> WordList | None:
    if wordlist is None:
        return None
    if isinstance(wordlist, WordList):
        return wordlist
    try:
        if isinstance(wordlist, (list, tuple, set, frozenset)):
            return WordList(wordlist)
        return WordList.from_file(wordlist)
    except ParameterError:
        raise
    except Exception as exc:  # noqa: BLE001 - name the setting
        raise ParameterError("wordlist", str(exc)) from None


_CLASSES = {"all": Policy, "entities": EntitiesPolicy, "tiered": TieredPolicy}


def get_policy(name="all", **options) -> Policy:
    """Build a policy by name (``all``, ``entities``, ``tiered``); ``None`` options are ignored.

    Unknown names and options are a :class:`ParameterError`; a detector that
    cannot load is a :class:`PrivacyError`.
    """
    if isinstance(name, Policy):
        if any(v is not None for v in options.values()):
            raise ParameterError("policy", "options apply to a policy name, not to a Policy object")
        return name
    key = normalise_name("all" if name is None else name)
    if key not in _CLASSES:
        raise ParameterError("policy", f"unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    opts = {k: v for k, v in options.items() if v is not None}
    for k in opts:
        if k not in _OPTIONS[key]:
            allowed = ", ".join(_OPTIONS[key]) or "none"
            raise ParameterError(k, f"policy {key!r} takes no option {k!r} (options: {allowed})")
    return _CLASSES[key](**opts)


def list_policies() -> list[str]:
    return list(POLICIES)


class _KeepGuard(EntitiesPolicy):
    """The ``entities`` detectors with the text around their spans kept private: what :func:`plan_for` plans
    under ``all`` for a mechanism with a keep rule."""

    def _gap(self, start: int, end: int) -> Span:
        return Span(start, end, True)


@functools.lru_cache(maxsize=1)
def _keep_guard() -> _KeepGuard:
    return _KeepGuard()  # loads the detectors once per process; a failed load is retried on the next call


def policy_name(policy) -> str:
    """The name ``policy`` reports in ``describe()`` (a user's policy object implements only ``describe`` and
    ``plan``); ``None`` is ``all``."""
    return "all" if policy is None else policy.describe().get("name")


def plan_for(policy, text: str, mechanism) -> list[Span]:
    """``policy``'s spans of ``text`` (``None``: ``all``) as ``mechanism`` perturbs them.

    Under ``all`` every unit is perturbed, but a mechanism with a keep rule (SANTEXT+'s frequent words,
    stopwords, ``digits="keep"``) would still send some units unchanged, a frequent given name among them. So
    for such a mechanism the ``entities`` detectors run under ``all`` too: the entities they find become
    detected spans (drawn by the DP branch, no keep rule), the rest stays private with the mechanism's rules.
    Should the detectors fail, the whole text is one detected span: no keep rule applies anywhere."""
    if policy_name(policy) != "all":
        return policy.plan(text)
    if not text:
        return []
    if not mechanism.has_keep_rule:
        return [Span(0, len(text), True)]
    try:
        return _keep_guard().plan(text)
    except PrivacyError:
        return [Span(0, len(text), True, None, "all (detectors unavailable)", None)]
