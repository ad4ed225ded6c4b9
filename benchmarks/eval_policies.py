"""Policies `all` vs `entities` vs `tiered` on the `wiki` set: utility and KNN protection.

For each ε and policy, every document goes through the core
(``dptext.pipeline.Sanitizer`` with the policy) with RANTEXT:

* KNN protection on the detected spans: 1 − ASR@1 of the embedding-inversion
  attack on the units of the spans the detectors flagged (the same spans in
  every policy; ``all`` perturbs them at ε as part of the whole text);
* clear units: share of the document's units sent unchanged (retention);
* Rouge-L of the sanitized document against the raw one;
* with ``--pipeline N``: the whole InferDPT pipeline on the first N documents
  (SmolLM2 as remote and local model), Rouge-L F1 of the rebuilt answer against
  the non-private answer (the remote model given the raw document), same seeds.

``tiered`` spends ``entity_epsilon = ε / 3`` on detected spans. ``all`` is run
as a tiered plan with ``entity_epsilon = ε`` so that its detected spans are
known; every unit is then perturbed at ε, as under ``all``.

    python benchmarks/eval_policies.py [--docs 60] [--pipeline 6] [--epsilons 2 6] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


class _AllMarked:
    """``all`` with the detected spans marked: a tiered plan at the same ε everywhere (built on first use)."""

    def __new__(cls, entity_epsilon):
        from dptext.privacy.policy import TieredPolicy

        class AllMarked(TieredPolicy):
            name = "all"

            def validate(self, epsilon):  # the same ε on every span is the point here
                pass

        return AllMarked(entity_epsilon=entity_epsilon)


def run_policy(sanitizer, policy, docs, seed):
    """(sanitized texts, PerturbResults of detected spans, of other spans)."""
    from dptext.pipeline import Segment

    rng = np.random.default_rng(seed)
    texts, detected, rest = [], [], []
    for doc in docs:
        out = sanitizer.sanitize([Segment(doc, True)], rng=rng)
        texts.append(out.texts[0])
        spans = [s for s in policy.plan(doc) if s.private and doc[s.start:s.end].strip()]
        if len(spans) != len(out.results[0]):
            raise RuntimeError("plan and sanitizer results disagree")
        for s, r in zip(spans, out.results[0]):
            (detected if s.detector else rest).append(r)
    return texts, detected, rest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=60)
    ap.add_argument("--pipeline", type=int, default=6, help="documents for the InferDPT answer Rouge-L (0: skip)")
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[2.0, 6.0])
    ap.add_argument("--mechanism", default="rantext")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    from dptext.attacks.base import observed_from_results
    from dptext.attacks.knn import KNNAttack
    from dptext.data import get_dataset
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.metrics import mean_rouge_l_f1, rouge_l_f1
    from dptext.inferdpt import InferDPT
    from dptext.pipeline import Sanitizer
    from dptext.privacy.policy import get_policy

    docs = list(get_dataset("wiki").split("private", seed=0).texts[: args.docs])
    t0 = time.perf_counter()
    base = get_policy("entities")
    print(f"{len(docs)} wiki documents; detectors loaded in {time.perf_counter() - t0:.1f} s; "
          f"load average {os.getloadavg()[0]:.1f}")
    results = {"docs": len(docs), "rows": []}
    plain = None
    pipe_docs = docs[: args.pipeline]
    if pipe_docs:
        from dptext.llm import get_backend
        from dptext.inferdpt import remote_messages

        remote = get_backend("local")
        probe = InferDPT(Sanitizer(MechanismSpec(args.mechanism, epsilon=1.0)), remote, "local",
                         max_tokens=args.max_tokens)
        instr = probe.prompts.continue_instruction
        plain = [remote.complete(remote_messages(probe.prompts, "continue", instr, d), max_tokens=args.max_tokens,
                                 temperature=probe.temperature, seed=args.seed * 1000 + i).text
                 for i, d in enumerate(pipe_docs)]
    for eps in args.epsilons:
        spec = MechanismSpec(args.mechanism, epsilon=eps)
        pols = {"all": _AllMarked(entity_epsilon=eps),
                "entities": base,
                "tiered": get_policy("tiered", entity_epsilon=round(eps / 3, 4))}
        for name, pol in pols.items():
            t1 = time.perf_counter()
            san = Sanitizer(spec, policy=pol)
            texts, detected, rest = run_policy(san, pol, docs, args.seed)
            knn = KNNAttack(san.mechanism, k=1).fit()
            obs = observed_from_results(detected)
            rep = knn.evaluate(obs)
            asr = float(rep.asr_at_1)
            units = [u for r in detected + rest for u in r.units]
            n_units = sum(1 for u in units if u.reason != "punctuation")
            n_clear_policy = 0
            if name == "entities":  # public spans count as clear units
                for d in docs:
                    for s in pol.plan(d):
                        if not s.private:
                            n_clear_policy += len(san.mechanism.segment(d[s.start:s.end]).pieces)
            same = sum(1 for u in units if u.output is not None and u.output.strip().casefold() ==
                       u.original.strip().casefold() and u.reason != "punctuation")
            row = {"epsilon": eps, "policy": name, "entity_epsilon": getattr(pol, "entity_epsilon", None),
                   "detected_targets": int(obs.n_targets), "knn_asr1": asr, "knn_protection": 1 - asr,
                   "clear_units": (same + n_clear_policy) / max(n_units + n_clear_policy, 1),
                   "rouge_l_doc": mean_rouge_l_f1(docs, texts), "seconds": None}
            if pipe_docs:
                pipe = InferDPT(san, get_backend("local"), "local", max_tokens=args.max_tokens)
                outs = [pipe.run(d, seed=args.seed * 1000 + i).output for i, d in enumerate(pipe_docs)]
                row["rouge_l_answer"] = float(np.mean([rouge_l_f1(p, o) for p, o in zip(plain, outs)]))
                row["example_answer"] = outs[0]
            row["seconds"] = round(time.perf_counter() - t1, 1)
            results["rows"].append(row)
            print(f"ε={eps:g} {name:<9} entity ε={row['entity_epsilon']} KNN protection {row['knn_protection']:.3f} "
                  f"({row['detected_targets']} detected units), clear units {row['clear_units']:.3f}, Rouge-L doc "
                  f"{row['rouge_l_doc']:.3f}" + (f", Rouge-L answer {row['rouge_l_answer']:.3f}" if pipe_docs else "")
                  + f"  [{row['seconds']} s]", flush=True)
    results["load_average"] = os.getloadavg()[0]
    if plain:
        results["example_plain"] = plain[0]
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
