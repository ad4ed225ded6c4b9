"""Downstream classification accuracy (docs/algorithms.md): zero-shot with a chat model, and MiniLM + linear head.

* **Zero-shot**: each text goes to a chat model (:func:`dptext.llm.get_backend`, default the
  local SmolLM2-135M-Instruct) with a fixed instruction naming the labels; greedy decoding;
  the prediction is the label name that occurs first in the answer (case-folded, whole
  word). Answers naming no label count as wrong and are reported as ``invalid``.
* **Linear head** (Harel et al., "Test" / "All" settings): texts are embedded with
  all-MiniLM-L6-v2 (frozen) and a multinomial logistic regression (softmax layer with L2
  penalty ``l2``, full-batch L-BFGS, fixed seed) is trained on top. ``"test"``: train on
  clean text, test on perturbed text; ``"all"``: train and test on perturbed text;
  ``"clean"``: the non-private reference.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dptext.errors import DPTextError

ZERO_SHOT_SYSTEM = "You are a careful annotator. You answer with a single label."
ZERO_SHOT_USER = ("Text: {text}\n\nWhich {task} does this text express: {labels}? "
                  "Answer with exactly one of these words.")


@dataclass
class ZeroShotResult:
    accuracy: float
    n: int
    invalid: int
    predictions: list[str | None] = field(repr=False)
    answers: list[str] = field(repr=False)


def parse_label(answer: str, label_names: Sequence[str]) -> str | None:
    """The label whose name occurs first (whole word, case-folded) in ``answer``, else None."""
    text = answer.casefold()
    best, best_pos = None, len(text) + 1
    for lab in label_names:
        m = re.search(rf"\b{re.escape(lab.casefold())}\b", text)
        if m and m.start() < best_pos:
            best, best_pos = lab, m.start()
    return best


def zero_shot_accuracy(texts: Sequence[str], labels: Sequence[str], *, label_names: Sequence[str] | None = None,
                       model=None, task: str = "sentiment", max_tokens: int = 8, seed: int = 0,
                       progress=None) -> ZeroShotResult:
    """Accuracy of a chat model labelling ``texts`` zero-shot (greedy, one request per text).

    ``model`` is anything :func:`dptext.llm.get_backend` accepts (None = the local default).
    """
    from dptext.llm import get_backend

    if len(texts) != len(labels):
        raise DPTextError(f"{len(texts)} texts but {len(labels)} labels")
    names = list(label_names or sorted(set(labels)))
    if len(names) < 2:
        raise DPTextError("zero-shot classification needs at least two label names")
    chat = get_backend(model)
    task_id = progress.add_task("zero-shot", total=len(texts)) if progress is not None else None
    preds, answers = [], []
    for text in texts:
        msgs = [{"role": "system", "content": ZERO_SHOT_SYSTEM},
                {"role": "user", "content": ZERO_SHOT_USER.format(text=text, task=task, labels=", ".join(names))}]
        ans = chat.complete(msgs, max_tokens=max_tokens, temperature=0.0, seed=seed).text
        answers.append(ans)
        preds.append(parse_label(ans, names))
        if task_id is not None:
            progress.advance(task_id, 1)
    correct = sum(p == y for p, y in zip(preds, labels))
    return ZeroShotResult(correct / len(texts) if texts else float("nan"), len(texts),
                          sum(p is None for p in preds), preds, answers)


# ----- MiniLM + linear head ------------------------------------------------------------------------------------
class LinearHead:
    """Multinomial logistic regression on fixed features (torch, full-batch L-BFGS)."""

    def __init__(self, l2: float = 1e-3, max_iter: int = 200, seed: int = 0) -> None:
        self.l2, self.max_iter, self.seed = float(l2), int(max_iter), int(seed)
        self.classes: list[str] = []
        self.weight = self.bias = None

    def fit(self, x: np.ndarray, y: Sequence[str]) -> "LinearHead":
        import torch

        self.classes = sorted(set(y))
        if len(self.classes) < 2:
            raise DPTextError("the classifier needs at least two classes in the training labels")
        lookup = {c: i for i, c in enumerate(self.classes)}
        xt = torch.as_tensor(np.asarray(x, dtype=np.float32))
        yt = torch.as_tensor([lookup[v] for v in y], dtype=torch.long)
        gen = torch.Generator().manual_seed(self.seed)
        w = (0.01 * torch.randn(xt.shape[1], len(self.classes), generator=gen)).requires_grad_()
        b = torch.zeros(len(self.classes), requires_grad=True)
        opt = torch.optim.LBFGS([w, b], max_iter=self.max_iter, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(xt @ w + b, yt) + self.l2 * (w * w).sum()
            loss.backward()
            return loss

        opt.step(closure)
        self.weight, self.bias = w.detach().numpy(), b.detach().numpy()
        return self

    def predict(self, x: np.ndarray) -> list[str]:
        if self.weight is None:
            raise DPTextError("the classifier is not trained")
        scores = np.asarray(x, dtype=np.float32) @ self.weight + self.bias
        return [self.classes[i] for i in scores.argmax(axis=1)]

    def accuracy(self, x: np.ndarray, y: Sequence[str]) -> float:
        pred = self.predict(x)
        return float(np.mean([p == t for p, t in zip(pred, y)])) if len(y) else float("nan")


def linear_head_accuracy(train_texts: Sequence[str], train_labels: Sequence[str], test_texts: Sequence[str],
                         test_labels: Sequence[str], *, perturb: Callable[[list[str]], list[str]] | None = None,
                         settings: Sequence[str] = ("clean", "test", "all"), l2: float = 1e-3, seed: int = 0,
                         progress=None) -> dict[str, float]:
    """Accuracy of MiniLM + linear head in each setting (``clean``, ``test``, ``all``).

    ``perturb`` maps a list of texts to their perturbed versions (e.g.
    ``lambda ts: [mech.perturb(t).text for t in ts]``); it is needed for ``test`` and ``all``.
    """
    from dptext.metrics.quality import embed

    bad = set(settings) - {"clean", "test", "all"}
    if bad:
        raise DPTextError(f"unknown setting(s) {', '.join(sorted(bad))}; use clean, test, all")
    if len(train_texts) != len(train_labels) or len(test_texts) != len(test_labels):
        raise DPTextError("texts and labels differ in length")
    if perturb is None and set(settings) & {"test", "all"}:
        raise DPTextError("the test and all settings need a perturb function")
    out: dict[str, float] = {}
    x_train = embed(list(train_texts), progress) if set(settings) & {"clean", "test"} else None
    x_test_p = embed(perturb(list(test_texts)), progress) if set(settings) & {"test", "all"} else None
    if x_train is not None:
        head = LinearHead(l2=l2, seed=seed).fit(x_train, train_labels)
        if "clean" in settings:
            out["clean"] = head.accuracy(embed(list(test_texts), progress), test_labels)
        if "test" in settings:
            out["test"] = head.accuracy(x_test_p, test_labels)
    if "all" in settings:
        head_p = LinearHead(l2=l2, seed=seed).fit(embed(perturb(list(train_texts)), progress), train_labels)
        out["all"] = head_p.accuracy(x_test_p, test_labels)
    return out
