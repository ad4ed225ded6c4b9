"""The contextual detector ``h`` of paper 003 (Sec. 4.3), small and CPU-trainable.

``h(f(c, x'), f(c, y)) ≈ Pr(label 1)``: a cross-encoder over the sentence
pair ``a = f(c, x')`` (sanitized sentence with the candidate in place of
``y``) and ``b = f(c, y)`` (the sanitized sentence). Encoder: all-MiniLM-L6-v2
(bundled, offline); head: one linear layer to two classes, trained with
Adam and cross-entropy on CPU with torch. Two modes:

* ``frozen`` (default): the encoder is fixed; features are the sentence
  embeddings ``[u_a, u_b, u_a − u_b, u_a ⊙ u_b]`` and only the head is
  trained (each distinct sentence is encoded once; fast on a small CPU);
* ``finetune``: a cross-encoder over the pair, mean-pooled, with the whole
  encoder fine-tuned (paper 003 fine-tunes BERT this way; much slower on CPU).

Trained weights are cached on disk as safetensors, keyed by everything the
training data depends on. Torch runs on ``$DPTEXT_TORCH_THREADS`` threads
(default 1: on a shared small CPU, more threads oversubscribe and crawl).
"""

from __future__ import annotations

import copy
import os
import time
from contextlib import contextmanager

import numpy as np

from dptext import cache
from dptext.errors import DPTextError

MAX_LEN = 128
DETECTOR_VERSION = 1  # bump when training or the saved layout changes (cache entries)


MODES = ("frozen", "finetune")


@contextmanager
def torch_threads():
    import torch

    want = int(os.environ.get("DPTEXT_TORCH_THREADS", "1"))
    old = torch.get_num_threads()
    torch.set_num_threads(max(1, want))
    try:
        yield
    finally:
        torch.set_num_threads(old)


class Detector:
    def __init__(self, mode: str = "frozen") -> None:
        import torch

        from dptext.encoders import minilm

        if mode not in MODES:
            raise DPTextError(f"unknown detector mode {mode!r}; choose frozen or finetune")
        self.mode = mode
        st = minilm()
        hidden = st[0].auto_model.config.hidden_size
        if mode == "finetune":
            self.tokenizer = st[0].tokenizer
            self.encoder = copy.deepcopy(st[0].auto_model)  # never modify the shared encoder
            self.head = torch.nn.Linear(hidden, 2)
        else:
            self.encoder = None
            self.head = torch.nn.Linear(4 * hidden, 2)
        self.train_seconds = 0.0
        self.history: list[float] = []

    # ----- frozen mode: sentence-embedding features ---------------------------------------------------
    def features(self, a: list[str], b: list[str], progress=None) -> np.ndarray:
        from dptext.encoders import embed_texts

        uniq = list(dict.fromkeys(a + b))
        pos = {t: i for i, t in enumerate(uniq)}
        emb = embed_texts(uniq, batch_size=64, progress=progress)
        ua = emb[[pos[t] for t in a]]
        ub = emb[[pos[t] for t in b]]
        return np.concatenate([ua, ub, ua - ub, ua * ub], axis=1)

    # ----- forward --------------------------------------------------------------------------------
    def _logits(self, a: list[str], b: list[str]):
        enc = self.tokenizer(a, b, padding=True, truncation=True, max_length=MAX_LEN, return_tensors="pt")
        out = self.encoder(**enc).last_hidden_state
        mask = enc["attention_mask"].unsqueeze(-1).to(out.dtype)
        pooled = (out * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled)

    def predict(self, a: list[str], b: list[str], *, batch_size: int = 64, progress=None) -> np.ndarray:
        """``Pr(label 1)`` for each pair (float64)."""
        import torch

        if self.mode == "frozen":
            with torch_threads(), torch.inference_mode():
                x = torch.as_tensor(self.features(a, b, progress))
                return torch.softmax(self.head(x), dim=-1)[:, 1].double().numpy() if len(a) else np.zeros(0)
        self.encoder.eval()
        out = np.empty(len(a), dtype=np.float64)
        task = progress.add_task("detector", total=len(a)) if progress is not None else None
        with torch_threads(), torch.inference_mode():
            for s in range(0, len(a), batch_size):
                logits = self._logits(a[s : s + batch_size], b[s : s + batch_size])
                out[s : s + batch_size] = torch.softmax(logits, dim=-1)[:, 1].double().numpy()
                if task is not None:
                    progress.advance(task, len(logits))
        return out

    # ----- training -----------------------------------------------------------------------------------
    def train(self, a: list[str], b: list[str], labels: np.ndarray, *, epochs: int = 1, batch_size: int = 32,
              lr: float = 5e-5, head_lr: float = 1e-3, seed: int = 0, progress=None) -> "Detector":
        """Fit on labelled pairs. Frozen mode: ``epochs`` passes of the head over cached features."""
        with torch_threads():
            if self.mode == "frozen":
                return self._train_head(a, b, labels, epochs=epochs, seed=seed, progress=progress)
            return self._train_finetune(a, b, labels, epochs=epochs, batch_size=batch_size, lr=lr,
                                        head_lr=head_lr, seed=seed, progress=progress)

    def _train_head(self, a, b, labels, *, epochs: int, seed: int, progress=None) -> "Detector":
        import torch

        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        x = torch.as_tensor(self.features(a, b, progress))
        y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        opt = torch.optim.Adam(self.head.parameters(), lr=1e-2, weight_decay=1e-4)
        loss_fn = torch.nn.CrossEntropyLoss()
        for _ in range(int(epochs)):
            order = rng.permutation(len(y))
            for s in range(0, len(y), 256):
                idx = order[s : s + 256]
                loss = loss_fn(self.head(x[idx]), y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                self.history.append(float(loss.detach()))
        self.train_seconds = time.perf_counter() - t0
        return self

    def _train_finetune(self, a, b, labels, *, epochs, batch_size, lr, head_lr, seed, progress=None):
        import torch

        torch.manual_seed(seed)
        rng = np.random.default_rng(seed)
        y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        opt = torch.optim.AdamW([{"params": self.encoder.parameters(), "lr": lr},
                                 {"params": self.head.parameters(), "lr": head_lr}])
        loss_fn = torch.nn.CrossEntropyLoss()
        n = len(a)
        steps = epochs * ((n + batch_size - 1) // batch_size)
        task = progress.add_task("training detector", total=steps) if progress is not None else None
        t0 = time.perf_counter()
        self.encoder.train()
        for _ in range(int(epochs)):
            order = rng.permutation(n)
            for s in range(0, n, batch_size):
                idx = order[s : s + batch_size]
                logits = self._logits([a[i] for i in idx], [b[i] for i in idx])
                loss = loss_fn(logits, y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
                self.history.append(float(loss.detach()))
                if task is not None:
                    progress.advance(task, 1)
        self.encoder.eval()
        self.train_seconds = time.perf_counter() - t0
        return self

    # ----- disk cache -----------------------------------------------------------------------------------
    def state(self) -> dict:
        out = {}
        if self.encoder is not None:
            out = {f"encoder.{k}": v.detach().contiguous() for k, v in self.encoder.state_dict().items()}
        out.update({f"head.{k}": v.detach().contiguous() for k, v in self.head.state_dict().items()})
        return out

    def save(self, path) -> None:
        import os
        import tempfile

        from safetensors.torch import save_file

        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp.safetensors")
        os.close(fd)
        try:
            save_file(self.state(), tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def load(self, path) -> "Detector":
        from safetensors.torch import load_file

        state = load_file(str(path))
        if self.encoder is not None:
            self.encoder.load_state_dict({k[8:]: v for k, v in state.items() if k.startswith("encoder.")})
            self.encoder.eval()
        self.head.load_state_dict({k[5:]: v for k, v in state.items() if k.startswith("head.")})
        return self


def detector_path(key: str):
    return cache.entry_path("attacks", "detector", key, ".safetensors", version=DETECTOR_VERSION)
