"""A local causal LM that scores text: SmolLM2 (or any GGUF) on the shared llama.cpp runtime.

Used by the masked-token fill (candidates from the left context, re-ranked
by the likelihood of the sentence with the candidate in place) and by the
beam oracle (prefix scores). ``logprob(prefix, continuation)`` is
``Σ_t log p(c_t | prefix, c_<t)``; evaluation reuses the KV cache of the
longest common token prefix with the previous call, so scoring many
continuations of one prefix costs only their own tokens.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError


class CausalLM:
    def __init__(self, model=None, *, n_ctx: int = 512) -> None:
        from dptext.llm.runtime import load_llama, model_lock, resolve_model

        self.path = resolve_model(model)
        self.n_ctx = int(n_ctx)
        # the one llama.cpp runtime (thread and batch policy, cache per options); the scorer owns the
        # KV-cache state between its own calls, so evaluation holds the model's lock
        self.llm = load_llama(self.path, n_ctx=self.n_ctx, logits_all=True)
        self.lock = model_lock(self.llm)
        self.bos = self.llm.token_bos() if self.llm.token_bos() >= 0 else self.llm.token_eos()
        self._pieces: list[str] | None = None

    # ----- tokens -------------------------------------------------------------------------------
    def tokens(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False) if text else []

    @property
    def pieces(self) -> list[str]:
        """Decoded text of every vocabulary token (built once)."""
        if self._pieces is None:
            self._pieces = [self.llm.detokenize([i]).decode("utf-8", "replace") for i in range(self.llm.n_vocab())]
        return self._pieces

    # ----- evaluation ------------------------------------------------------------------------------
    def _scores(self, toks: list[int]) -> np.ndarray:
        """Logits after each token of ``toks`` (``[len, vocab]``), reusing the cached prefix."""
        if len(toks) > self.n_ctx:
            raise DPTextError(f"text of {len(toks)} tokens exceeds the scorer's context of {self.n_ctx}")
        llm = self.llm
        n = llm.n_tokens
        m = min(n, len(toks))
        same = np.asarray(llm.input_ids[:m]) == np.asarray(toks[:m], dtype=np.intc)
        common = int(np.argmin(same)) if not same.all() else m
        if common == len(toks):  # logits of the last position must be fresh
            common -= 1
        with self.lock:
            llm.n_tokens = common
            llm.eval(toks[common:])
            return np.array(llm.scores[: len(toks)])

    def next_logprobs(self, prefix: list[int]) -> np.ndarray:
        """``log p(· | bos, prefix)`` over the vocabulary."""
        row = self._scores([self.bos] + list(prefix))[-1].astype(np.float64)
        return row - np.logaddexp.reduce(row)

    def logprob(self, prefix: list[int], cont: list[int]) -> float:
        """``log p(cont | bos, prefix)``."""
        if not cont:
            return 0.0
        toks = [self.bos] + list(prefix) + list(cont)
        sc = self._scores(toks)[len(prefix) : len(toks) - 1].astype(np.float64)
        lse = np.logaddexp.reduce(sc, axis=1)
        return float((sc[np.arange(len(cont)), cont] - lse).sum())
