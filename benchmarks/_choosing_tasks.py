"""Downstream classification tasks of the choosing sweep (benchmarks/make_choosing.py).

Each task of ``classifier:`` in sweeps/presets.yaml is one labelled dataset and a way to split it:

* ``{task: sentiment, dataset: tweets, n_train: 300, n_test: 200}``: one fold, ``n_train`` items of the
  dataset's ``train`` split against ``n_test`` of its ``test`` split (sampled at the sweep's seed);
* ``{task: topic, dataset: newsgroups, folds: 4}``: k-fold cross-validation over every item of a small set
  (shuffled at the sweep's seed), so each item is tested exactly once and the accuracy is over the whole set.

Accuracy is MiniLM + linear head (:class:`dptext.metrics.classify.LinearHead`), correct test predictions over
all folds divided by the number of test items. Clean: embeddings of the original texts. Perturbed (the "All"
setting of Harel et al.): every text perturbed once, the head trained and tested on perturbed text, same folds,
so the clean and perturbed numbers score the same items.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

KEYS = {"task", "dataset", "n_train", "n_test", "folds"}


@dataclass
class Task:
    name: str
    dataset: str
    texts: list[str]
    labels: list[str]
    folds: list[tuple[np.ndarray, np.ndarray]]  # (train indices, test indices) into texts

    @property
    def n_test(self) -> int:
        return sum(len(te) for _, te in self.folds)

    def describe(self) -> str:
        if len(self.folds) == 1:
            return f"{len(self.folds[0][0])} train / {len(self.folds[0][1])} test {self.dataset}"
        return f"{len(self.texts)} {self.dataset} items, {len(self.folds)}-fold cross-validation"


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
        if "folds" in c:
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


def fold_accuracy(x: np.ndarray, task: Task, seed: int = 0) -> float:
    """Share of test items predicted right over all folds (head trained on each fold's train rows of ``x``)."""
    from dptext.metrics.classify import LinearHead

    y = np.asarray(task.labels, dtype=object)
    correct = 0
    for tr, te in task.folds:
        pred = LinearHead(seed=seed).fit(x[tr], list(y[tr])).predict(x[te])
        correct += int(np.sum(np.asarray(pred, dtype=object) == y[te]))
    return correct / task.n_test


def clean_accuracy(tasks: list[Task], seed: int = 0) -> dict[str, float]:
    from dptext.metrics.quality import embed

    return {t.name: fold_accuracy(embed(t.texts), t, seed) for t in tasks}


def perturbed_accuracy(tasks: list[Task], perturb, seed: int = 0) -> dict[str, float]:
    """``perturb`` maps a list of texts to their perturbed versions; each text is perturbed once."""
    from dptext.metrics.quality import embed

    return {t.name: fold_accuracy(embed(perturb(t.texts)), t, seed) for t in tasks}
