"""Beam oracle attacker for lossy mappers and the nearest-neighbour attacker (docs/algorithms.md; paper 004).

Beam oracle (``oracle``). The attacker knows the mapper's partition: each
observed representative ``y_i`` could stand for any member of its group
(``mechanism.preimage(y_i)``). Starting from the empty prefix it expands
every kept prefix with every member, scores the extended prefixes with a
causal LM (SmolLM2), normalises their probabilities over the beam and drops
the least likely prefixes while the kept mass stays at least ``keep_mass``
(``π``, default 0.85), at most ``max_beam`` kept (computational cap). Units
the mapper passes through (punctuation, OOV) extend every prefix unchanged.
The complete sequences are ranked by LM log-likelihood. Reported: MRR of the
true sentence, Pr@5 (true sentence among the top 5), mean token edit distance
of the top sequence; per-unit ASR uses the top sequences' units.

Nearest-neighbour attacker (``nn``): for Stencil and the noise mapper, rank
``V \\ {y}`` by cosine similarity to ``E[y]``; Pr@5 is ASR@5.
"""

from __future__ import annotations

import numpy as np

from dptext.attacks.base import Attack, Observed, normalize_unit, register_attack
from dptext.attacks.knn import KNNAttack
from dptext.attacks.scoring import edit_distance
from dptext.errors import DPTextError


@register_attack("nn")
class NearestNeighbourAttack(KNNAttack):
    """Cosine nearest neighbours of ``E[y]`` excluding ``y`` itself (paper 004, Sec. 3.2)."""

    default_skip_self = True
    default_metric = "cosine"


@register_attack("oracle")
class BeamOracle(Attack):
    model_option = "model"

    def __init__(self, mechanism, *, k: int = 5, keep_mass: float = 0.85, max_beam: int = 32, model=None,
                 progress=None) -> None:
        from dptext.mechanisms.mappers import LossyMapper

        super().__init__(mechanism, k=k, progress=progress)
        # the partition (``preimage``) is what a LossyMapper is: the capability is the class, not an attribute
        if not isinstance(mechanism, LossyMapper):
            raise DPTextError(f"the beam oracle needs a lossy mapper (with groups); {mechanism.name} has none")
        if not 0 < float(keep_mass) <= 1:
            raise DPTextError(f"invalid keep_mass {keep_mass}: must be in (0, 1]")
        self.keep_mass, self.max_beam = float(keep_mass), int(max_beam)
        self.model = model
        self._lm = None
        self.sentence_stats: list[dict] = []

    @property
    def lm(self):
        if self._lm is None:
            from dptext.attacks._lm import CausalLM

            self._lm = CausalLM(self.model)
        return self._lm

    def options(self, obs: Observed, s: int, targets: set[int]) -> list[list[str]]:
        """Possible originals at every position of sentence ``s`` (a single option when passed through)."""
        out = []
        units = self.space.units
        for p, y in enumerate(obs.outputs[s]):
            if p in targets and self.space.lookup(y) >= 0:
                members = self.mechanism.preimage(y)
                out.append([units[i] for i in members.tolist()] or [y])
            else:
                out.append([y])
        return out

    def search(self, options: list[list[str]], ws: list[str]) -> list[tuple[float, list[str]]]:
        """Ranked complete sequences ``(log-likelihood, units)`` by the pruned beam."""
        lm = self.lm
        beam: list[tuple[float, list[int], list[str]]] = [(0.0, [], [])]
        for p, opts in enumerate(options):
            lead = ws[p] if p > 0 else ""
            conts = [lm.tokens(lead + o) for o in opts]
            grown = []
            for score, toks, units in sorted(beam, key=lambda b: b[1]):  # shared prefixes stay cached
                nxt = lm.next_logprobs(toks) if any(len(c) == 1 for c in conts) else None
                for o, c in zip(opts, conts):
                    lp = float(nxt[c[0]]) if len(c) == 1 else lm.logprob(toks, c)
                    grown.append((score + lp, toks + c, units + [o]))
            grown.sort(key=lambda b: -b[0])
            sc = np.asarray([g[0] for g in grown])
            prob = np.exp(sc - np.logaddexp.reduce(sc))
            keep = len(grown) if self.keep_mass >= 1 else int(np.searchsorted(np.cumsum(prob), self.keep_mass) + 1)
            beam = grown[: max(1, min(keep, self.max_beam))]
        return [(b[0], b[2]) for b in beam]

    def rank(self, obs: Observed):
        by_sent: dict[int, list[int]] = {}
        for t, s in enumerate(obs.sent.tolist()):
            by_sent.setdefault(s, []).append(t)
        out: list = [None] * obs.n_targets
        self.sentence_stats = []
        task = self.progress.add_task("beam oracle", total=len(by_sent)) if self.progress is not None else None
        for s, ts in by_sent.items():
            pos = [int(obs.pos[t]) for t in ts]
            ranked = self.search(self.options(obs, s, set(pos)), obs.ws[s])
            truth = [normalize_unit(u) for u in obs.originals[s]]
            seqs = [[normalize_unit(u) for u in seq] for _, seq in ranked]
            rank = next((i for i, q in enumerate(seqs) if q == truth), None)
            self.sentence_stats.append({
                "units": len(truth), "attacked": len(ts), "rank": rank,
                "edit_distance": edit_distance(seqs[0], truth) if seqs else len(truth)})
            for t, p in zip(ts, pos):
                out[t] = list(dict.fromkeys(seq[p] for _, seq in ranked[: self.k]))
            if task is not None:
                self.progress.advance(task, 1)
        return out

    def details(self, obs, ranking) -> dict:
        st = self.sentence_stats
        if not st:
            return {}
        rr = [1.0 / (x["rank"] + 1) if x["rank"] is not None else 0.0 for x in st]
        return {"sentences": len(st), "mrr_sentence": float(np.mean(rr)),
                "pr_at_5_sentence": float(np.mean([x["rank"] is not None and x["rank"] < 5 for x in st])),
                "edit_distance": float(np.mean([x["edit_distance"] for x in st])),
                "keep_mass": self.keep_mass, "max_beam": self.max_beam}
