"""Bench adapters: feed the cell context to ``dptext.metrics`` functions whose
argument names differ from the context's, and say what each column means.

Each adapter is a few lines of glue around a real metric (no metric is
re-implemented here). Names a sweep may use as ``metrics:``:

* ``synonym_proportion``: WordNet synonyms among (raw, perturbed) unit pairs (InferDPT Table IV);
* ``embedding_distance``: mean ``‖φ(x) − φ(y)‖₂`` over the pairs (InferDPT Table V);
* ``retention``: share of units left unchanged (Cape B.3);
* ``rouge_l``: Rouge-L F1 between each raw and perturbed document (Cape Table 3);
* ``mapping_set_size``: distinct outputs over ``n_draws`` perturbations of each of up to
  ``n_units`` distinct units of the documents (Cape Figure 7); keeps the distribution;
* ``cr_ratio``: RANTEXT ``|C_r|/|V|`` draws, ``n_per_unit`` per unit (InferDPT); keeps the distribution,
  its quartiles and ``p_le_5pct = Pr(|C_r|/|V| ≤ 0.05)`` (the calibration target of InferDPT's Table VII);
* ``classifier``: MiniLM + linear head accuracy, ``clean`` / ``test`` / ``all`` settings
  (token-manipulation Table 4), on ``n_train`` / ``n_test`` items of the dataset's train/test splits;
* ``inferdpt``: the whole pipeline per document: n-gram leakage of the remote generation
  (InferDPT Table VI), diversity, coherence, and with ``non_private`` the raw-prompt baseline and alignment;
* ``perturbation_percentage``, ``plausible_deniability`` (``N_w`` / ``S_w`` over ``n_draws`` draws of up to
  ``n_units`` distinct units of the documents), ``cosine_similarity`` (MiniLM, raw vs perturbed document):
  the LREC-COLING 2024 comparative analysis's measures (``dptext.metrics.deniability``).

Attacks need no adapter: ``dptext.attacks`` classes are called directly.
"""

from __future__ import annotations

import numpy as np

from dptext.bench.registry import register_measure


def _summary(values: np.ndarray) -> dict:
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return {"mean": float("nan")}
    q25, q50, q75 = np.quantile(v, [0.25, 0.5, 0.75])
    return {"mean": float(v.mean()), "median": float(q50), "q25": float(q25), "q75": float(q75), "values": v}


@register_measure("synonym_proportion")
def synonym_proportion(pairs):
    from dptext.metrics import synonym_proportion as metric

    return metric(pairs)


@register_measure("embedding_distance")
def embedding_distance(space, pairs):
    from dptext.metrics import mean_embedding_distance

    return mean_embedding_distance(space, pairs)


@register_measure("retention")
def retention(results):
    from dptext.metrics import retention_ratio

    return retention_ratio(results)


@register_measure("rouge_l")
def rouge_l(documents, perturbed):
    from dptext.metrics import mean_rouge_l_f1

    return mean_rouge_l_f1(documents, perturbed)


def _probe_units(units: list[str], n_units: int, rng: np.random.Generator) -> list[str]:
    if len(units) <= n_units:
        return units
    pick = np.sort(rng.choice(len(units), size=n_units, replace=False))
    return [units[i] for i in pick]


@register_measure("mapping_set_size")
def mapping_set_size(mechanism, units, rng, n_units: int = 200, n_draws: int = 100):
    from dptext.metrics import effective_mapping_set_size

    probe = _probe_units(units, int(n_units), rng)
    return _summary(effective_mapping_set_size(mechanism, probe, n_draws=int(n_draws), rng=rng))


@register_measure("cr_ratio")
def cr_ratio(mechanism, units, rng, n_units: int = 50, n_per_unit: int = 20):
    from dptext.metrics import candidate_set_ratios

    probe = _probe_units(units, int(n_units), rng)
    ratios = np.asarray(candidate_set_ratios(mechanism, probe, n_per_unit=int(n_per_unit), rng=rng))
    # InferDPT's calibration target (its Appendix B, Table VII): Pr(|C_r|/|V| <= 0.05)
    return {**_summary(ratios), "p_le_5pct": float((ratios <= 0.05).mean()) if len(ratios) else float("nan")}


@register_measure("classifier")
def classifier(dataset, mechanism, rng, n_train: int = 1000, n_test: int = 500,
               settings: tuple = ("clean", "test", "all")):
    from dptext.metrics.classify import linear_head_accuracy

    ds = dataset.full
    train = ds.split("train", seed=dataset.split_seed).sample(int(n_train), seed=dataset.split_seed)
    test = ds.split("test", seed=dataset.split_seed).sample(int(n_test), seed=dataset.split_seed)
    return linear_head_accuracy(list(train.texts), list(train.labels), list(test.texts), list(test.labels),
                                perturb=lambda ts: [mechanism.perturb(t, rng=rng).text for t in ts],
                                settings=tuple(settings))


@register_measure("inferdpt")
def inferdpt(mechanism, documents, seed, non_private: bool = True, max_tokens: int = 100,
             remote=None, local=None):
    """The InferDPT pipeline on every document (docs/algorithms.md): n-gram leakage of the remote's
    generation (InferDPT Table VI), diversity and coherence of the final output, and with
    ``non_private`` the same leakage when the raw document is sent, plus alignment
    (cosine of the final output and the non-private generation). Seeded per document."""
    from dptext.metrics import alignment, coherence, mean_diversity, ngram_leakage
    from dptext.inferdpt import InferDPT, remote_messages

    pipe = InferDPT(mechanism, remote, local, max_tokens=int(max_tokens))
    runs = [pipe.run(d, seed=int(seed) * 1000 + i) for i, d in enumerate(documents)]
    gens, outs = [r.remote_output for r in runs], [r.output for r in runs]
    out = {f"leakage_{n}": v for n, v in ngram_leakage(documents, gens).items()}
    out.update(diversity=mean_diversity(outs), coherence=coherence(documents, outs),
               remote_seconds=float(np.mean([r.timings["remote"] for r in runs])),
               extract_seconds=float(np.mean([r.timings["extract"] for r in runs])))
    if non_private:
        instr = pipe.prompts.continue_instruction
        # the baseline sends the raw document through the same remote prompt (what InferDPT avoids)
        plain = [pipe.remote.complete(remote_messages(pipe.prompts, "continue", instr, d), max_tokens=pipe.max_tokens,
                                      temperature=pipe.temperature, seed=int(seed) * 1000 + i).text
                 for i, d in enumerate(documents)]
        out.update({f"nonprivate_leakage_{n}": v for n, v in ngram_leakage(documents, plain).items()})
        out["alignment"] = alignment(outs, plain)
    return out


@register_measure("perturbation_percentage")
def perturbation_percentage(pairs):
    from dptext.metrics.deniability import perturbation_percentage as metric

    return metric(pairs)


@register_measure("plausible_deniability")
def plausible_deniability(mechanism, units, rng, n_units: int = 50, n_draws: int = 200):
    from dptext.metrics.deniability import plausible_deniability as metric

    return metric(mechanism, _probe_units(units, int(n_units), rng), n_draws=int(n_draws), rng=rng)


@register_measure("cosine_similarity")
def cosine_similarity(documents, perturbed):
    from dptext.metrics.deniability import cosine_similarity as metric

    return metric(documents, perturbed)


@register_measure("downstream")
def downstream(dataset, mechanism, rng, n_train: int = 200, n_test: int = 100):
    """The LREC analysis's accuracy (MiniLM + linear head: ``all``, ``test``, ``clean``) and the cosine
    similarity of the perturbed test texts, from one perturbation of the dataset's train/test splits."""
    from dptext.metrics.deniability import downstream as metric

    ds = dataset.full
    train = ds.split("train", seed=dataset.split_seed).sample(int(n_train), seed=dataset.split_seed)
    test = ds.split("test", seed=dataset.split_seed).sample(int(n_test), seed=dataset.split_seed)
    return metric(list(train.texts), list(train.labels), list(test.texts), list(test.labels),
                  perturb=lambda ts: [r.text for r in mechanism.perturb_many(ts, rng=rng)])
