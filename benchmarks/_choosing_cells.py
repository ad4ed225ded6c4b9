"""The measurements of one cell of the choosing sweep (benchmarks/make_choosing.py): attacks on entity units and
on whole documents, content retention outside detected spans, downstream accuracy and InferDPT answer quality."""

from __future__ import annotations

import numpy as np

from _choosing_tasks import perturbed_accuracy


def _cached_detect(policy, cache: dict):
    """Run the policy's detectors once per text (the same texts are planned at every ε)."""
    detect = policy.detect

    def cached(text):
        if text not in cache:
            cache[text] = detect(text)
        return cache[text]

    policy.detect = cached
    return policy


def sanitize(spec, policy, docs, seed):
    """Per document: (policy plan's non-blank private spans, their PerturbResults), through the core."""
    from dptext.pipeline import Sanitizer, Segment

    san = Sanitizer(spec, policy=policy)
    rng = np.random.default_rng(seed)
    out = []
    for doc in docs:
        res = san.sanitize([Segment(doc, True)], rng=rng)
        spans = [None]
        if policy is not None:
            plan = [s for s in policy.plan(doc) if doc[s.start:s.end].strip()]
            private = [s for s in plan if s.private]
            # public spans have a record too where the core counts them (as kept)
            spans = private if len(private) == len(res.results[0]) else plan
        if len(spans) != len(res.results[0]):
            raise RuntimeError("plan and sanitizer results disagree")
        out.append((spans, res.results[0], res.texts[0]))
    return san, out


def _is_content(unit: str) -> bool:
    from dptext.resources import is_punctuation, is_stopword

    w = unit.strip()
    return bool(w) and not is_punctuation(w) and not is_stopword(w.lower()) and any(c.isalpha() for c in w)


def attacks(mech, results, shadow, seed, bayes=True) -> dict:
    """KNN and context-free Bayesian ASR@1. Targets: every emitted unit of ``results`` (units sent unchanged
    included); ``knn`` / ``bayes`` score the content units (not stopwords, punctuation or numbers: what names
    the person or place), ``knn_all`` / ``bayes_all`` every unit."""
    from dataclasses import replace

    from dptext.attacks.base import get_attack, observed_from_results

    obs = observed_from_results(results, targets="all")
    if obs.n_targets == 0:
        return {"knn": float("nan"), "bayes": float("nan"), "units": 0}
    keep = np.asarray([_is_content(t) for t in obs.truth], dtype=bool)
    sub = replace(obs, sent=obs.sent[keep], pos=obs.pos[keep])
    out = {"units": int(sub.n_targets), "units_all": int(obs.n_targets)}
    atts = [("knn", get_attack("knn", mech, k=1).fit())]
    if bayes:  # RANTEXT's likelihood table over the shadow vocabulary takes minutes at large ε on 2 cores
        atts.append(("bayes", get_attack("bayes", mech, k=1, candidates="shadow").fit(
            shadow, rng=np.random.default_rng(seed))))
    for name, att in atts:
        out[name + "_all"] = float(att.evaluate(obs).asr_at_1)
        out[name] = float(att.evaluate(sub).asr_at_1) if sub.n_targets else float("nan")
    return out


def content_retention(results) -> float:
    """Share of content units (see :func:`_is_content`) sent unchanged; dropped units count as changed."""
    kept = n = 0
    for r in results:
        for u in r.units:
            if not _is_content(u.original):
                continue
            n += 1
            kept += u.output is not None and u.output.strip().casefold() == u.original.strip().casefold()
    return kept / n if n else float("nan")


def entity_cell(spec, docs, shadow, seed, cache, bayes=True) -> dict:
    from dptext.privacy.policy import get_policy

    pol = _cached_detect(get_policy("entities"), cache)
    san, runs = sanitize(spec, pol, docs, seed)
    results = [r for spans, rs, _ in runs for s, r in zip(spans, rs) if s.detector is not None]
    return attacks(san.mechanism, results, shadow, seed, bayes)


def rest_cell(spec, entity_eps, docs, shadow, seed, cache, bayes=True) -> dict:
    """Policy tiered at ε (content retention outside entities) and policy all at ε (retention, attacks)."""
    from dptext.metrics import mean_rouge_l_f1, retention_ratio
    from dptext.privacy.policy import get_policy

    pol = _cached_detect(get_policy("tiered", entity_epsilon=entity_eps), cache)
    _, runs = sanitize(spec, pol, docs, seed)
    rest = [r for spans, rs, _ in runs for s, r in zip(spans, rs) if s.detector is None]
    san_all, runs_all = sanitize(spec, None, docs, seed)
    all_results = [r for _, rs, _ in runs_all for r in rs]
    return {"content_retention": content_retention(rest),
            "tiered_rouge_l": mean_rouge_l_f1(docs, [t for _, _, t in runs]),
            "all_retention": retention_ratio(all_results),
            "all_units": attacks(san_all.mechanism, all_results, shadow, seed, bayes)}


def accuracy_cell(spec, policy, tasks, seed, cache=None, draws: int = 1) -> dict:
    """Per classifier task, accuracy of MiniLM + linear head trained and tested on text perturbed by ``spec``
    (``cache``: detector results per text, shared across the ε grid; ``draws``: perturbations per text, each
    item's correctness averaged over them): ``accuracy``, ``accuracy_se`` and ``accuracy_drop_se`` (task -> value;
    see _choosing_tasks.py)."""
    from dptext.pipeline import Sanitizer, Segment

    if policy is not None and cache is not None:
        _cached_detect(policy, cache)
    san = Sanitizer(spec, policy=policy)
    rng = np.random.default_rng(seed)
    perturb = lambda ts: [san.sanitize([Segment(t, True)], rng=rng).texts[0] for t in ts]  # noqa: E731
    return perturbed_accuracy(tasks, perturb, seed, draws)


def answers(preset_specs, docs, max_tokens, seed, example) -> dict:
    """Per preset, Rouge-L F1 of the rebuilt InferDPT answer against the non-private answer on each of ``docs``
    (mean, sample standard deviation, min, max, per-document list), and what the remote model receives for
    ``example`` (one draw). Document i uses seed + i for the plain answer and the private run."""
    from dptext.llm import get_backend
    from dptext.metrics import rouge_l_f1
    from dptext.inferdpt import InferDPT, remote_messages
    from dptext.pipeline import Sanitizer, Segment

    remote = get_backend("local")
    out, plain = {}, None
    for name, (spec, pol) in preset_specs.items():
        san = Sanitizer(spec, policy=pol)
        pipe = InferDPT(san, remote, "local", max_tokens=max_tokens)
        if plain is None:
            instr = pipe.prompts.continue_instruction
            plain = [remote.complete(remote_messages(pipe.prompts, "continue", instr, d), max_tokens=max_tokens,
                                     temperature=pipe.temperature, seed=seed + i).text for i, d in enumerate(docs)]
        scores = [float(rouge_l_f1(p, pipe.run(d, seed=seed + i).output))
                  for i, (p, d) in enumerate(zip(plain, docs))]
        out[name] = {"rouge_l": float(np.mean(scores)),
                     "rouge_l_sd": float(np.std(scores, ddof=1)) if len(scores) > 1 else float("nan"),
                     "rouge_l_min": min(scores), "rouge_l_max": max(scores), "rouge_l_docs": scores,
                     "documents": len(docs),
                     "example_prompt": san.sanitize([Segment(example, True)], rng=np.random.default_rng(seed)).texts[0]}
    return out


def answer_documents(ans: dict, seed: int) -> list[str]:
    """``answers: {documents: n, dataset: news, split: test, ...}``: the first n documents of that split (a split
    the selection never reads: it uses ``select``'s private and shadow splits and ``heldout``'s private split)."""
    from dptext.data import get_dataset

    bad = set(ans) - {"documents", "dataset", "split", "max_tokens"}
    if bad:
        raise SystemExit(f"answers: unknown key(s) {', '.join(sorted(bad))}")
    texts = list(get_dataset(ans.get("dataset", "news")).split(ans.get("split", "test"), seed=seed).texts)
    n = int(ans["documents"])
    if n > len(texts):
        raise SystemExit(f"answers: {n} documents asked, the split has {len(texts)}")
    return texts[:n]
