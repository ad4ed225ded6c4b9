"""Cape's device model (docs/algorithms.md, "Cape"): a local LM scores every candidate at every position.

:class:`DeviceModel` is the interface Cape uses: ``unit_logits(seg, pos,
space)`` returns ``L[p, t]``, the logit of vocabulary unit ``t`` at piece
position ``pos[p]`` of the prompt given its context.

* :class:`CausalLlamaDevice` (default): SmolLM2-135M through llama.cpp. The
  whole prompt is evaluated in ONE pass with logits for every position
  (``Llama(..., logits_all=True)``); the row that predicts the token holding
  a unit scores all candidates given the prefix. Candidates are device token
  ids: on the ``smollm2`` space a unit's own token (the leading-space form when
  the original token had a leading space, else the bare form); on any other
  space the first SmolLM2 token of the unit's text (``"##"`` pieces scored as
  bare continuations), so Cape also runs on ``minilm-wordpiece``. A piece that
  starts inside a device token is scored at that token's row. Prompts longer
  than ``n_ctx`` are evaluated in windows that carry ``overlap`` tokens of
  preceding context. The LM head is restricted to the space's units
  (``head="restricted"``, default): llama.cpp returns the final hidden states
  of the scored positions only and stops before its LM head, and
  :mod:`dptext.mechanisms._lmhead` computes ``L = W[c] · ĥ`` for the ``|V|``
  candidate rows in one GEMM (equal to llama.cpp's logits to float32
  rounding). ``head="full"`` keeps llama.cpp's full-vocabulary logits for
  every position (``logits_all=True``) and gathers the candidates.
* :class:`MaskedLMDevice`: the extension point for a masked LM (BERT-style,
  position masked, both sides of context). Subclass it and implement
  :meth:`MaskedLMDevice.masked_logits`; pieces are mapped to device ids with
  ``space.token_ids`` (the ``minilm-wordpiece`` space carries WordPiece ids).
  :class:`TransformersMaskedLM` implements it for a local Hugging Face masked
  LM directory: ``get_mechanism("cape", space="minilm-wordpiece",
  device=TransformersMaskedLM("/path/to/bert-base-uncased"), epsilon=...)``.

The model comes from the one local-model runtime (:func:`dptext.llm.runtime.load_llama`:
model resolution, threads, batch policy, shared per process) and is evaluated
under its :func:`~dptext.llm.runtime.model_lock`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.text import Piece, Segmentation

CANDIDATES_VERSION = 1  # bump when the unit -> device token mapping changes (cache entries)


def piece_byte_starts(seg: Segmentation) -> np.ndarray:
    """Byte offset, in ``seg.join()``, where each piece's unit text starts."""
    render = type(seg)
    starts = np.empty(len(seg.pieces), dtype=np.int64)
    off = 0
    for i, p in enumerate(seg.pieces):
        off += len(p.ws.encode("utf-8"))
        starts[i] = off
        off += len(render((Piece("", p.text),)).join().encode("utf-8"))
    return starts


class DeviceModel(ABC):
    name: str = ""

    @abstractmethod
    def fingerprint(self) -> dict:
        """What the logits depend on (for caching the calibrated clip bound)."""

    @abstractmethod
    def unit_logits(self, seg: Segmentation, pos: np.ndarray, space) -> np.ndarray:
        """``[len(pos), |V|]`` float32: logit of every unit of ``space`` at each position."""

    def iter_unit_logits(self, seg: Segmentation, pos: np.ndarray, space, chunk: int = 64):
        """``(indices into pos, logits)`` in chunks of at most ``chunk`` positions (bounded memory)."""
        pos = np.asarray(pos, dtype=np.int64)
        for s in range(0, len(pos), chunk):
            w = np.arange(s, min(s + chunk, len(pos)))
            yield w, self.unit_logits(seg, pos[w], space)

    def iter_unit_scores(self, seg: Segmentation, pos: np.ndarray, space, queries: np.ndarray | None,
                         chunk: int = 64):
        """``(indices into pos, logits, queries[w] · Eᵀ)`` chunks; ``E`` = ``space.embeddings``.

        Cape's distances need ``e_x · e_t`` for its input units; a device whose LM head rows are
        the space's embeddings computes both products in one GEMM (:class:`CausalLlamaDevice`).
        """
        for w, logits in self.iter_unit_logits(seg, pos, space, chunk=chunk):
            yield w, logits, None if queries is None else np.asarray(queries)[w] @ space.embeddings.T


class CausalLlamaDevice(DeviceModel):
    name = "smollm2-llama.cpp"
    HEADS = ("restricted", "full")

    def __init__(self, path: str | None = None, *, n_ctx: int = 512, overlap: int = 128,
                 n_threads: int | None = None, head: str = "restricted") -> None:
        from dptext.spaces.smollm2 import gguf_path

        self.path = path or gguf_path()
        self.n_ctx = int(n_ctx)
        if self.n_ctx < 16:
            raise DPTextError(f"invalid n_ctx {n_ctx}: must be >= 16")
        self.overlap = max(0, min(int(overlap), self.n_ctx // 4))  # windows advance by n_ctx - 1 - overlap
        self.n_threads = None if n_threads is None else int(n_threads)  # None: the runtime's thread policy
        if head not in self.HEADS:
            raise DPTextError(f"invalid head {head!r}: use {', '.join(self.HEADS)}")
        self.head = head
        self._model = None
        self._hidden = None
        self._cands: dict[str, np.ndarray] = {}
        self._heads: dict[str, object] = {}

    def fingerprint(self) -> dict:
        return {"device": self.name, "gguf": cache.file_fingerprint(self.path)}

    @property
    def model(self):
        if self._model is None:
            from dptext.llm.runtime import load_llama

            self._model = load_llama(self.path, n_ctx=self.n_ctx, logits_all=self.head == "full",
                                     n_threads=self.n_threads)
        return self._model

    @property
    def hidden(self):
        """The hidden-state context on :attr:`model` (:class:`dptext.llm.hidden.HiddenStates`)."""
        if self._hidden is None:
            from dptext.llm.hidden import HiddenStates

            m = self.model
            self._hidden = HiddenStates(m, n_ctx=self.n_ctx, n_threads=int(m.context_params.n_threads))
        return self._hidden

    def lm_head(self, space):
        """The :class:`~dptext.mechanisms._lmhead.RestrictedHead` of ``space`` (None with ``head="full"``)."""
        if self.head == "full":
            return None
        if space.cache_key not in self._heads:
            from dptext.mechanisms._lmhead import RestrictedHead, output_matrix

            w, kind = output_matrix(self.path)  # dropped once the space's rows are taken
            rows = space.embeddings if space.embeddings.shape[1] == w.shape[1] else None
            self._heads[space.cache_key] = RestrictedHead(w, kind, self.candidate_ids(space), rows)
        return self._heads[space.cache_key]

    def candidate_ids(self, space) -> np.ndarray:
        """``[|V|, 2]`` device token ids of every unit: (leading-space form, bare form)."""
        if space.cache_key not in self._cands:
            if space.name == "smollm2" and getattr(space, "path", None) == self.path:
                ids = np.asarray(space.token_ids, dtype=np.int64).copy()
                ids[ids[:, 0] < 0, 0] = ids[ids[:, 0] < 0, 1]
                ids[ids[:, 1] < 0, 1] = ids[ids[:, 1] < 0, 0]
            else:
                path = cache.entry_path("cape", f"candidates-{space.name}",
                                        cache.key_of(self.fingerprint(), space.cache_key), ".npy",
                                        version=CANDIDATES_VERSION)
                if path.exists():
                    self._cands[space.cache_key] = cache.load_npy(path, mmap=False)
                    return self._cands[space.cache_key]
                from dptext.spaces.smollm2 import vocab_model

                tok = vocab_model(self.path)
                ids = np.empty((space.size, 2), dtype=np.int64)
                for i, u in enumerate(space.units):
                    cont = u.startswith("##") and len(u) > 2
                    word = u[2:] if cont else u
                    bare = tok.tokenize(word.encode("utf-8"), add_bos=False, special=False)
                    spaced = bare if cont else tok.tokenize((" " + word).encode("utf-8"), add_bos=False,
                                                            special=False)
                    ids[i] = (spaced[0] if spaced else 0, bare[0] if bare else 0)
                cache.save_npy(path, ids)
            self._cands[space.cache_key] = ids
        return self._cands[space.cache_key]

    def align(self, seg: Segmentation, pos: np.ndarray):
        """Device tokens of the prompt, the token row of each position, and its leading-space flag."""
        from dptext.spaces.smollm2 import vocab_model

        tok = vocab_model(self.path)
        tokens = tok.tokenize(seg.join().encode("utf-8"), add_bos=False, special=False)
        pieces = [tok.detokenize([t]) for t in tokens]
        tstart = np.concatenate([[0], np.cumsum([len(b) for b in pieces])[:-1]]).astype(np.int64)
        b = piece_byte_starts(seg)[pos]
        j = np.clip(np.searchsorted(tstart, b, side="right") - 1, 0, max(0, len(tokens) - 1))
        spaced = np.asarray([pieces[k][:1] == b" " and tstart[k] + 1 == bb for k, bb in zip(j, b)], dtype=bool)
        return tokens, j, spaced

    def windows(self, n_tokens: int, j: np.ndarray):
        """``(positions scored, first context token, end)`` per window of at most ``n_ctx`` tokens."""
        step = self.n_ctx - 1 - self.overlap
        for s in range(0, max(1, n_tokens), step):
            want = np.flatnonzero((j >= s) & (j < s + step))
            if len(want):
                yield want, max(0, s - self.overlap), min(n_tokens, s + step, int(j[want].max()) + 1)

    def iter_unit_scores(self, seg: Segmentation, pos: np.ndarray, space, queries: np.ndarray | None,
                         chunk: int = 64):
        """Restricted head: one hidden-state pass per window, then logits (and query dots) per chunk."""
        head = self.lm_head(space)
        if head is None:
            yield from DeviceModel.iter_unit_scores(self, seg, pos, space, queries, chunk)
            return
        pos = np.asarray(pos, dtype=np.int64)
        if not len(pos):
            return
        tokens, j, spaced = self.align(seg, pos)
        hs = self.hidden
        bos = self.model.token_bos()
        for want, c0, end in self.windows(len(tokens), j):
            rows, inv = np.unique(j[want] - c0, return_inverse=True)  # row k predicts tokens[c0 + k]
            seq = ([bos] + [int(t) for t in tokens[c0:end]])[: int(rows[-1]) + 1]
            h = hs.run(seq, rows)[inv.ravel()]
            for a in range(0, len(want), chunk):
                w = want[a : a + chunk]
                q = None if queries is None else np.asarray(queries)[w]
                logits, dots = head.scores(h[a : a + chunk], spaced[w], q)
                if q is not None and dots is None:
                    dots = q @ space.embeddings.T
                yield w, logits, dots

    def iter_unit_logits(self, seg: Segmentation, pos: np.ndarray, space, chunk: int = 64):
        """One device pass per window of ``n_ctx`` tokens; yields ``(indices into pos, logits)`` chunks."""
        if self.head != "full":
            for w, logits, _ in self.iter_unit_scores(seg, pos, space, None, chunk):
                yield w, logits
            return
        pos = np.asarray(pos, dtype=np.int64)
        if not len(pos):
            return
        tokens, j, spaced = self.align(seg, pos)
        cand = self.candidate_ids(space)
        from dptext.llm.runtime import model_lock

        m = self.model
        lock = model_lock(m)
        for want, c0, end in self.windows(len(tokens), j):
            with lock:
                m.reset()
                m.eval([m.token_bos()] + list(tokens[c0:end]))
                scores = m.scores[: end - c0]
                parts = []
                for a in range(0, len(want), chunk):
                    w = want[a : a + chunk]
                    ids = np.where(spaced[w, None], cand[None, :, 0], cand[None, :, 1])
                    parts.append((w, np.take_along_axis(scores[j[w] - c0], ids, axis=1)))
            yield from parts

    def unit_logits(self, seg: Segmentation, pos: np.ndarray, space) -> np.ndarray:
        out = np.empty((len(pos), space.size), dtype=np.float32)
        for w, logits in self.iter_unit_logits(seg, pos, space, chunk=len(pos) or 1):
            out[w] = logits
        return out


class MaskedLMDevice(DeviceModel):
    """Extension point: a masked LM scores position ``i`` with ``i`` masked (context on both sides).

    Implement :meth:`masked_logits`; the space must carry ``token_ids`` (unit -> device
    token id, as ``minilm-wordpiece`` does) and ``unk_id``/``mask_id`` must be set.
    """

    name = "masked-lm"
    unk_id: int = 100
    mask_id: int = 103

    @abstractmethod
    def masked_logits(self, token_ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """``[len(positions), n_vocab]``: logits at each position of ``token_ids`` with it set to ``mask_id``."""

    def unit_logits(self, seg: Segmentation, pos: np.ndarray, space) -> np.ndarray:
        idx = space.lookup_many([p.text for p in seg.pieces])
        tid = np.asarray(space.token_ids)
        ids = np.where(idx >= 0, tid[np.maximum(idx, 0)], self.unk_id)
        return np.asarray(self.masked_logits(ids, np.asarray(pos)), dtype=np.float32)[:, tid]


class TransformersMaskedLM(MaskedLMDevice):
    """A local Hugging Face masked LM (``AutoModelForMaskedLM``, BERT-uncased ids) as Cape's device.

    ``model_dir`` is a local directory (nothing is downloaded). Each position is
    scored in its own copy of the prompt with that position masked, wrapped in
    ``[CLS] … [SEP]``; prompts longer than ``max_len`` are cut to a window around
    the position. Use with the ``minilm-wordpiece`` space (same WordPiece ids).
    """

    name = "hf-masked-lm"

    def __init__(self, model_dir: str, *, batch_size: int = 16, max_len: int = 512) -> None:
        from transformers import AutoModelForMaskedLM

        self.model_dir = str(model_dir)
        try:
            self.model = AutoModelForMaskedLM.from_pretrained(self.model_dir, local_files_only=True).eval()
        except (OSError, ValueError) as exc:
            raise DPTextError(f"cannot load a masked LM from {self.model_dir}: {exc}") from None
        cfg = self.model.config
        self.mask_id = int(getattr(cfg, "mask_token_id", None) or 103)
        self.cls_id, self.sep_id = 101, 102
        self.batch_size, self.max_len = int(batch_size), int(max_len)

    def fingerprint(self) -> dict:
        from pathlib import Path

        files = sorted(p for p in Path(self.model_dir).iterdir() if p.suffix in (".safetensors", ".bin", ".json"))
        return {"device": self.name, "files": [cache.file_fingerprint(p) for p in files]}

    def masked_logits(self, token_ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
        import torch

        width = self.max_len - 2
        n = len(token_ids)
        rows, where = [], []
        for p in np.asarray(positions, dtype=np.int64).tolist():
            s = min(max(0, p - width // 2), max(0, n - width))
            ids = [self.cls_id] + [int(t) for t in token_ids[s : s + width]] + [self.sep_id]
            ids[p - s + 1] = self.mask_id
            rows.append(ids)
            where.append(p - s + 1)
        out = []
        with torch.inference_mode():
            for b in range(0, len(rows), self.batch_size):
                batch = torch.tensor(rows[b : b + self.batch_size])
                logits = self.model(input_ids=batch).logits
                out.append(logits[torch.arange(len(batch)), torch.tensor(where[b : b + self.batch_size])].float())
        return torch.cat(out).numpy()
