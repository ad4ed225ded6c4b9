"""Downstream classification tasks of the choosing sweep (benchmarks/make_choosing.py).

Each task of ``classifier:`` in sweeps/presets.yaml is one labelled dataset and a way to split it:

* ``{task: sentiment, dataset: tweets, n_train: 300, n_test: 200}``: one fold, ``n_train`` items of the
  dataset's ``train`` split against ``n_test`` of its ``test`` split (sampled at the sweep's seed);
* ``{task: topic, dataset: newsgroups, folds: 4}``: k-fold cross-validation over every item of a small set
  (shuffled at the sweep's seed), so each item is tested exactly once and the accuracy is over the whole set;
* ``{task: sentiment, dataset: tweets, sample: 1500, folds: 5}``: k-fold cross-validation over a fixed
  stratified sample of ``sample`` items of the whole dataset (each label drawn in proportion to its share, at the
  sweep's seed); the folds are stratified too, so every fold has the sample's label shares.

Accuracy is MiniLM + linear head (:class:`dptext.metrics.classify.LinearHead`), correct test predictions over
all folds divided by the number of test items. Clean: embeddings of the original texts. Perturbed (the "All"
setting of Harel et al.): every text perturbed once, the head trained and tested on perturbed text, same folds,
so the clean and perturbed numbers score the same items.

Uncertainty (what the guide prints): with n test items (every item tested once) and accuracy p, the binomial
standard error sqrt(p (1 - p) / n); for the drop from clean, the paired standard error sd(c_i - q_i) / sqrt(n) over
the items' clean and perturbed correctness c_i, q_i in {0, 1} (the same items are scored both ways). The
perturbation draw is part of each item's outcome, so both include the mechanism's randomness once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KEYS = {"task", "dataset", "n_train", "n_test", "folds", "sample"}


@dataclass
class Task:
    name: str
    dataset: str
    texts: list[str]
    labels: list[str]
    folds: list[tuple[np.ndarray, np.ndarray]]  # (train indices, test indices) into texts
    clean_correct: np.ndarray | None = None  # per test item (fold order), set by clean_accuracy
    stratified: bool = False

    @property
    def n_test(self) -> int:
        return sum(len(te) for _, te in self.folds)

    def describe(self) -> str:
        if len(self.folds) == 1:
            return f"{len(self.folds[0][0])} train / {len(self.folds[0][1])} test {self.dataset}"
        strat = "stratified sample of " if self.stratified else ""
        return f"{strat}{len(self.texts)} items of {self.dataset}, {len(self.folds)}-fold cross-validation"


def load_tasks(conf, seed: int) -> list[Task]:
    """The ``classifier:`` section (one mapping or a list of them) as tasks; a typo is a start-up error."""
    from dptext.data import get_dataset

    items = conf if isinstance(conf, list) else [conf]
    tasks = []
    for c in items:
        if not isinstance(c, dict) or set(c) - KEYS or "dataset" not in c:
            raise SystemExit(f"classifier: each task is a mapping with dataset and keys among {sorted(KEYS)}, "
                             f"got {c!r}")
        name = str(c.get("task") or c["dataset"])
        ds = get_dataset(c["dataset"])
        if ds.labels is None:
            raise SystemExit(f"classifier: dataset {c['dataset']} has no labels")
        if "sample" in c:
            if "n_train" in c or "n_test" in c or "folds" not in c:
                raise SystemExit(f"classifier task {name}: sample goes with folds, not n_train/n_test")
            n, k = int(c["sample"]), int(c["folds"])
            if not 2 <= k <= n <= len(ds):
                raise SystemExit(f"classifier task {name}: need 2 <= folds <= sample <= {len(ds)}, got "
                                 f"folds {k}, sample {n}")
            idx, folds = stratified_folds(list(ds.labels), n, k, seed)
            tasks.append(Task(name, c["dataset"], [ds.texts[i] for i in idx], [ds.labels[i] for i in idx], folds,
                              stratified=True))
        elif "folds" in c:
            if "n_train" in c or "n_test" in c:
                raise SystemExit(f"classifier task {name}: give folds or n_train/n_test, not both")
            k = int(c["folds"])
            if not 2 <= k <= len(ds):
                raise SystemExit(f"classifier task {name}: folds must be between 2 and {len(ds)}, got {k}")
            parts = np.array_split(np.random.default_rng(seed).permutation(len(ds)), k)
            folds = [(np.sort(np.concatenate([p for j, p in enumerate(parts) if j != i])), np.sort(parts[i]))
                     for i in range(k)]
            tasks.append(Task(name, c["dataset"], list(ds.texts), list(ds.labels), folds))
        else:
            if "n_train" not in c or "n_test" not in c:
                raise SystemExit(f"classifier task {name}: give n_train and n_test (or folds)")
            tr = ds.split("train", seed=seed).sample(int(c["n_train"]), seed=seed)
            te = ds.split("test", seed=seed).sample(int(c["n_test"]), seed=seed)
            n = len(tr.texts)
            tasks.append(Task(name, c["dataset"], list(tr.texts) + list(te.texts), list(tr.labels) + list(te.labels),
                              [(np.arange(n), np.arange(n, n + len(te.texts)))]))
    if len({t.name for t in tasks}) != len(tasks):
        raise SystemExit("classifier: task names must differ")
    return tasks


def stratified_folds(labels: list, n: int, k: int, seed: int) -> tuple[list[int], list]:
    """A stratified sample of ``n`` indices into ``labels`` and k stratified folds over it.

    Each label gets round(n x its share) items (largest remainders, so the total is n), drawn without replacement
    at ``seed``; within each label the sampled items are dealt to the k folds in turn after a shuffle. Returns the
    sampled indices (sorted) and (train, test) index pairs into that sample."""
    rng = np.random.default_rng(seed)
    lab = np.asarray(labels, dtype=object)
    classes = sorted(set(labels))
    share = np.array([np.sum(lab == c) for c in classes], dtype=float) * n / len(lab)
    take = np.floor(share).astype(int)
    take[np.argsort(-(share - take), kind="stable")[: n - take.sum()]] += 1
    picked = np.sort(np.concatenate([rng.choice(np.flatnonzero(lab == c), size=m, replace=False)
                                     for c, m in zip(classes, take)]))
    fold_of = np.empty(n, dtype=int)
    for c in classes:
        pos = rng.permutation(np.flatnonzero(lab[picked] == c))
        fold_of[pos] = (np.arange(len(pos)) + rng.integers(k)) % k
    folds = [(np.flatnonzero(fold_of != i), np.flatnonzero(fold_of == i)) for i in range(k)]
    return [int(i) for i in picked], folds


def fold_correct(x: np.ndarray, task: Task, seed: int = 0) -> np.ndarray:
    """Per test item (folds in order), whether the head trained on that fold's train rows of ``x`` is right."""
    from dptext.metrics.classify import LinearHead

    y = np.asarray(task.labels, dtype=object)
    out = []
    for tr, te in task.folds:
        pred = LinearHead(seed=seed).fit(x[tr], list(y[tr])).predict(x[te])
        out.append(np.asarray(pred, dtype=object) == y[te])
    return np.concatenate(out).astype(bool)


def fold_accuracy(x: np.ndarray, task: Task, seed: int = 0) -> float:
    """Share of test items predicted right over all folds."""
    return float(fold_correct(x, task, seed).mean())


def binomial_se(p: float, n: int) -> float:
    return float(np.sqrt(p * (1 - p) / n)) if n else float("nan")


def clean_accuracy(tasks: list[Task], seed: int = 0) -> dict[str, float]:
    """Clean accuracy per task; keeps each item's correctness on the task for the paired standard errors."""
    from dptext.metrics.quality import embed

    out = {}
    for t in tasks:
        t.clean_correct = fold_correct(embed(t.texts), t, seed)
        out[t.name] = float(t.clean_correct.mean())
    return out


def clean_se(tasks: list[Task]) -> dict[str, float]:
    """Binomial standard error of each task's clean accuracy (after :func:`clean_accuracy`)."""
    return {t.name: binomial_se(float(t.clean_correct.mean()), len(t.clean_correct)) for t in tasks}


def perturbed_accuracy(tasks: list[Task], perturb, seed: int = 0, draws: int = 1) -> dict[str, dict[str, float]]:
    """``perturb`` maps a list of texts to their perturbed versions; each text is perturbed ``draws`` times (the
    head is trained and tested on each draw, same folds) and an item's correctness is its mean over the draws.

    Returns ``accuracy`` (task -> share right), ``accuracy_se`` (standard error: binomial for one draw, else the
    items' standard deviation over sqrt(n)) and, when the clean correctness is known, ``accuracy_drop_se`` (paired
    standard error of clean minus perturbed). More draws shrink the mechanism's share of the noise, not the
    items'."""
    from dptext.metrics.quality import embed

    acc, se, drop = {}, {}, {}
    for t in tasks:
        q = np.mean([fold_correct(embed(perturb(t.texts)), t, seed) for _ in range(draws)], axis=0)
        acc[t.name] = float(q.mean())
        se[t.name] = (binomial_se(acc[t.name], len(q)) if draws == 1
                      else float(q.std(ddof=1) / np.sqrt(len(q))) if len(q) > 1 else float("nan"))
        if t.clean_correct is not None:
            d = t.clean_correct.astype(float) - q.astype(float)
            drop[t.name] = float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")
    return {"accuracy": acc, "accuracy_se": se, "accuracy_drop_se": drop}


def marked_words(policy, texts: list[str], top: int = 15) -> dict:
    """What a policy's detectors mark in ``texts``: share of whitespace words and of content words (letters, not
    a stopword) that overlap a detected span, words per entity label, and the most frequent marked spans per
    label (lower-cased). Explains an accuracy loss under ``tiered`` that ``all`` does not have."""
    import re
    from collections import Counter, defaultdict

    from dptext.resources import is_stopword

    words = content = marked = content_marked = 0
    per_label, spans = Counter(), defaultdict(Counter)
    for text in texts:
        det = [s for s in policy.plan(text) if s.detector is not None]
        for m in re.finditer(r"\S+", text):
            w = m.group().strip(".,;:!?()[]\"'<>")
            is_content = bool(w) and any(ch.isalpha() for ch in w) and not is_stopword(w.lower())
            hit = any(s.start < m.end() and s.end > m.start() for s in det)
            words += 1
            content += is_content
            marked += hit
            content_marked += hit and is_content
        for s in det:
            frag = text[s.start:s.end]
            per_label[s.label] += len(frag.split())
            spans[s.label][" ".join(frag.lower().split())] += 1
    return {"texts": len(texts), "words": words, "marked_share": marked / words if words else float("nan"),
            "content_words": content,
            "content_marked_share": content_marked / content if content else float("nan"),
            "words_per_label": dict(per_label.most_common()),
            "top": {lab: spans[lab].most_common(top) for lab, _ in per_label.most_common()}}
