"""What the gazetteers read from WordNet 3.0's noun data (used by :mod:`dptext.privacy.gazetteers`).

One pass over ``data.noun`` and ``index.sense`` gives the medical conditions (the hyponym closure of the
medical roots in noun.state, care and events of health filed elsewhere), the conditions a one-word lemma names
only beside a word of illness, per-lemma sense-tagged counts, the noun words written in lower case, body
parts, geographic instances and two-word common nouns. :func:`_forms` gives the inflected forms under which a
word is looked up.
"""

from __future__ import annotations

import re
from pathlib import Path

COMMON_COUNT = 8  # a lemma with at least this many sense-tagged occurrences in WordNet counts as a frequent word
_MEDICAL_ROOTS = {"disease", "disorder", "illness", "ill_health", "infection", "injury", "symptom", "syndrome",
                  "pathology", "abnormality", "malignancy", "cancer", "tumor", "addiction", "allergy",
                  "mental_disorder", "mental_illness", "infirmity"}
# a medical root's hypernyms reach one of these (not the public-order "disorder", nor "disorderliness")
_HEALTH_ANCESTORS = {"physical_condition", "psychological_state", "symptom", "hypersensitivity"}
_CARE_ROOTS = {("medical_procedure", 4), ("therapy", 4), ("abortion", 4), ("pregnancy", 26), ("injury", 11)}
_JOINERS = {"and", "of", "the", "in", "out", "a"}
_NOUN_STATE = 26  # WordNet lexicographer file noun.state
_NOUN_BODY = 8    # noun.body (tumours, lesions)
_NOUN_LOCATION = 15  # noun.location (cities, countries, rivers)


def _forms(w: str):
    yield w
    if len(w) > 3:
        if w.endswith("ies"):
            yield w[:-3] + "y"
        if w.endswith(("ses", "xes", "zes", "ches", "shes", "oes")):
            yield w[:-2]  # English adds -es only after a sibilant or an -o: "boxes", "heroes"; not "novaes", "mendes"
        if w.endswith("s") and not w.endswith("aes"):  # a Latin plural in -ae takes no -s: "novaes", "moraes"
            yield w[:-1]
        if w.endswith("ed"):
            yield w[:-2]
            yield w[:-1]
            yield w[:-3]  # admitted -> admit
        if w.endswith("ing"):
            yield w[:-3]
            yield w[:-3] + "e"
            yield w[:-4]  # running -> run
        if w.endswith("men"):
            yield w[:-3] + "man"  # gunmen -> gunman, women -> woman
        if w.endswith("est") and len(w) > 5:  # superlatives: largest -> large, biggest -> big, happiest -> happy
            yield w[:-3]
            yield w[:-2]
            yield w[:-4]
            yield w[:-4] + "y"


def _closure(roots, hypo, skip=frozenset()) -> set:
    """``roots`` and every synset below them (hyponyms and instances), less those in ``skip`` and below them."""
    out, stack = set(), list(roots)
    while stack:
        o = stack.pop()
        if o not in out and o not in skip:
            out.add(o)
            stack.extend(hypo.get(o, ()))
    return out


def _medical(noun: Path, sense: Path) -> tuple[set, set, dict, set, set, set, set]:
    """WordNet lemmas in the hyponym closure of the medical roots, the one-word conditions mostly used otherwise
    (``stroke``, ``cold``), per-lemma tagged counts, the noun words
    written in lower case somewhere, the one-word names of body parts (``knee``, ``spine``) and of geographic
    instances (``perth``), and the two-word common nouns (``art school``, ``will power``)."""
    words, hypo, hyper, lex, lower, places, pairs = {}, {}, {}, {}, set(), set(), set()
    for line in noun.read_text(encoding="utf-8").splitlines():
        if line.startswith(" "):
            continue
        f = line.split(" | ")[0].split()
        off, lexfile, n = f[0], int(f[1]), int(f[3], 16)
        ws = [f[4 + 2 * i] for i in range(n)]
        k = 4 + 2 * n
        p = int(f[k])
        ptrs = [f[k + 1 + 4 * i : k + 5 + 4 * i] for i in range(p)]
        words[off], lex[off] = ws, lexfile
        lower.update(x for w in ws if not w[:1].isupper() for x in w.lower().split("_"))
        pairs.update(w.replace("_", " ") for w in ws if w.count("_") == 1 and w.islower() and "(" not in w)
        hypo[off] = [q[1] for q in ptrs if q[0] in ("~", "~i") and q[2] == "n"]
        hyper[off] = [q[1] for q in ptrs if q[0] in ("@", "@i") and q[2] == "n"]
        if lexfile == _NOUN_LOCATION and any(q[0] == "@i" for q in ptrs):  # an instance: a named place
            places.update(re.sub(r"\(.*\)$", "", w).lower() for w in ws if w[:1].isupper() and "_" not in w)
    health = {o for o, ws in words.items() if set(ws) & _HEALTH_ANCESTORS}

    def about_health(o, depth=0):  # some hypernym path reaches a health synset
        return o in health or depth < 20 and any(about_health(h, depth + 1) for h in hyper.get(o, ()))
    roots = [o for o, ws in words.items() if lex[o] == _NOUN_STATE and any(w.lower() in _MEDICAL_ROOTS for w in ws)
             and about_health(o)]
    # "a sudden occurrence of an uncontrollable condition", filed under "affliction": a stroke, a seizure, a heart
    # attack
    roots += [o for o, ws in words.items() if lex[o] == _NOUN_STATE and ws[0] == "attack"]
    seen = _closure(roots, hypo)
    kept = {o for o in seen if lex[o] in (_NOUN_STATE, _NOUN_BODY)}
    # a condition WordNet files elsewhere right under a kept one: "autism" (noun.cognition) under "syndrome",
    # "menorrhagia" (noun.process)
    seen = kept | {o for o in seen - kept if any(h in kept for h in hyper.get(o, ()))}
    # care and events of health filed outside noun.state: operations and therapies (noun.act), an abortion or a
    # miscarriage (noun.act), a pregnancy (noun.state, beside the illnesses), an injury as an event (noun.event:
    # "concussion")
    care = _closure([o for o, ws in words.items() if (ws[0].lower(), lex[o]) in _CARE_ROOTS], hypo, seen)
    med, tot = {}, {}
    for line in sense.read_text(encoding="utf-8").splitlines():
        key, off, _num, cnt = line.split()
        lemma = key.split("%")[0]
        tot[lemma] = tot.get(lemma, 0) + int(cnt) + 1  # +1: an untagged sense still counts as one reading
        if key.split("%")[1][0] == "1" and (off in seen or off in care):
            med[lemma] = med.get(lemma, 0) + int(cnt) + 1
    terms, weak = set(), set()
    for o in seen | care:
        for w in words[o]:
            lemma = re.sub(r"\(.*\)$", "", w).lower()
            if "_" not in lemma and med.get(lemma, 0) * 2 < tot.get(lemma, 1):
                if o in seen and len(lemma) > 3 and lemma.isalpha():
                    weak.add(lemma)  # a condition only after a word of illness: "suffered a slight stroke"
                continue  # a one-word lemma that is mostly something else ("cold", "stroke")
            if o in care and (len(lemma) < 5 or any(f != lemma and f in tot for f in _forms(lemma))
                              or all(x in _JOINERS or any(tot.get(f, 0) >= COMMON_COUNT for f in _forms(x))
                                     for x in lemma.split("_"))):
                continue  # "ppp", "spaying", "taking apart": words with other uses
            terms.add(lemma.replace("_", " "))
    parts = _closure([o for o, ws in words.items() if ws[0] == "body_part" and lex[o] == _NOUN_BODY], hypo)
    body = {w.lower() for o in parts for w in words[o] if "_" not in w and not w[:1].isupper() and len(w) > 2}
    return terms, weak, tot, lower, body, places, pairs
