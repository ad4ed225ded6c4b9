"""Masked-token inference (docs/algorithms.md; InferDPT's BERT inference attack, Cape's MTI).

Each attacked position of the sanitized text is masked in turn (the other
units stay as sanitized) and a language model predicts what belongs there.

* ``model=<directory>``: any local Hugging Face masked LM (``config.json``
  with a masked-LM head): top predictions at the ``[MASK]`` position;
* default (offline): causal-LM fill with SmolLM2 (``model=None`` or a
  ``.gguf`` path): candidates are the most likely next *word-start* tokens
  after the left context; each candidate is re-ranked by the likelihood of
  the sentence with it in place, ``log p(ws + cand + right | left)`` (the left
  part is common to all candidates; ``right_window`` units of right context
  are scored).

Candidates must be units of the mechanism's space (``vocab_only``). The
report adds Rouge-L F1 of the rebuilt text (each attacked unit replaced by
its top guess) against the private text, and of the sanitized text itself.
"""

from __future__ import annotations

import os

import numpy as np

from dptext.attacks.base import Attack, Observed, register_attack
from dptext.attacks.scoring import rouge_l_f1
from dptext.errors import DPTextError


def _is_word(s: str) -> bool:
    return s.isalpha()


@register_attack("masked")
class MaskedInference(Attack):
    model_option = "model"

    def __init__(self, mechanism, *, k: int = 5, model=None, n_candidates: int = 10, right_window: int = 4,
                 vocab_only: bool = True, progress=None) -> None:
        super().__init__(mechanism, k=k, progress=progress)
        self.model_spec = model
        self.n_candidates = max(int(n_candidates), self.k)
        self.right_window = int(right_window)
        self.vocab_only = bool(vocab_only)
        self.hf = model is not None and os.path.isdir(str(model))
        self._lm = None
        self._hf = None

    # ----- candidate filters ----------------------------------------------------------------------
    def _ok(self, word: str) -> bool:
        return bool(word) and _is_word(word) and (not self.vocab_only or self.space.lookup(word) >= 0)

    # ----- causal fill ----------------------------------------------------------------------------
    @property
    def lm(self):
        if self._lm is None:
            from dptext.attacks._lm import CausalLM

            self._lm = CausalLM(self.model_spec)
            pieces = self._lm.pieces
            self._spaced = np.asarray([len(p) > 1 and p[0] == " " and _is_word(p[1:]) for p in pieces])
            self._bare = np.asarray([_is_word(p) for p in pieces])
        return self._lm

    def _causal(self, obs: Observed, s: int, p: int) -> list[str]:
        lm = self.lm
        outs, ws = obs.outputs[s], obs.ws[s]
        left = "".join(w + u for w, u in zip(ws[:p], outs[:p])).lstrip()
        lead = " " if (p > 0 and ws[p]) else ""
        right = "".join(w + u for w, u in zip(ws[p + 1 : p + 1 + self.right_window],
                                               outs[p + 1 : p + 1 + self.right_window]))
        prefix = lm.tokens(left)[-(lm.n_ctx // 2) :]  # long texts: the nearest left context only
        lp = lm.next_logprobs(prefix)
        mask = self._spaced if lead else self._bare
        lp = np.where(mask, lp, -np.inf)
        top = np.argsort(-lp)[: 5 * self.n_candidates]
        cands, seen = [], set()
        for t in top.tolist():
            w = lm.pieces[t].strip()
            if w.casefold() in seen or not self._ok(w):
                continue
            seen.add(w.casefold())
            cands.append(w)
            if len(cands) == self.n_candidates:
                break
        scores = [lm.logprob(prefix, lm.tokens(lead + c + right)) for c in cands]
        order = np.argsort(-np.asarray(scores), kind="stable")
        return [cands[i] for i in order]

    # ----- Hugging Face masked LM ------------------------------------------------------------------
    def _hf_batch(self, texts: list[str]) -> list[list[str]]:
        import torch

        if self._hf is None:
            from transformers import AutoModelForMaskedLM, AutoTokenizer

            try:
                tok = AutoTokenizer.from_pretrained(str(self.model_spec), local_files_only=True)
                mdl = AutoModelForMaskedLM.from_pretrained(str(self.model_spec), local_files_only=True).eval()
            except (OSError, ValueError) as exc:
                raise DPTextError(f"cannot load a masked LM from {self.model_spec}: {exc}") from None
            if tok.mask_token is None:
                raise DPTextError(f"{self.model_spec} has no mask token; it is not a masked LM")
            self._hf = (tok, mdl)
        tok, mdl = self._hf
        enc = tok([t.replace("\x00", tok.mask_token) for t in texts], return_tensors="pt", padding=True,
                  truncation=True, max_length=256)
        with torch.inference_mode():
            logits = mdl(**enc).logits
        out = []
        for i in range(len(texts)):
            where = (enc["input_ids"][i] == tok.mask_token_id).nonzero()
            if not len(where):
                out.append([])
                continue
            top = torch.topk(logits[i, int(where[0])], 5 * self.n_candidates).indices.tolist()
            words = [tok.convert_ids_to_tokens(t).lstrip("#").lstrip("\u0120\u2581") for t in top]
            uniq = list(dict.fromkeys(w for w in words if self._ok(w)))
            out.append(uniq[: self.n_candidates])
        return out

    # ----- attack ------------------------------------------------------------------------------------
    def rank(self, obs: Observed):
        n = obs.n_targets
        task = self.progress.add_task("masked-token inference", total=n) if self.progress is not None else None
        out: list = [None] * n
        if self.hf:
            for start in range(0, n, 32):
                idx = range(start, min(n, start + 32))
                texts = [obs.text(int(obs.sent[t]), {int(obs.pos[t]): "\x00"}) for t in idx]
                for t, cands in zip(idx, self._hf_batch(texts)):
                    out[t] = cands
                if task is not None:
                    self.progress.advance(task, len(texts))
            return out
        for t in range(n):
            out[t] = self._causal(obs, int(obs.sent[t]), int(obs.pos[t]))
            if task is not None:
                self.progress.advance(task, 1)
        return out

    def details(self, obs: Observed, ranking) -> dict:
        rebuilt: dict[int, dict[int, str]] = {}
        for t, cands in enumerate(ranking):
            if cands:
                rebuilt.setdefault(int(obs.sent[t]), {})[int(obs.pos[t])] = cands[0]
        attacked = sorted(set(obs.sent.tolist()))
        r_attack, r_sanitized = [], []
        for s in attacked:
            outs = [rebuilt.get(s, {}).get(i, u) for i, u in enumerate(obs.outputs[s])]
            r_attack.append(rouge_l_f1(outs, obs.originals[s]))
            r_sanitized.append(rouge_l_f1(obs.outputs[s], obs.originals[s]))
        return {"rouge_l_f1": float(np.mean(r_attack)) if attacked else 0.0,
                "rouge_l_f1_sanitized": float(np.mean(r_sanitized)) if attacked else 0.0,
                "model": "hf-masked-lm" if self.hf else "causal-fill"}
