"""Cape's restricted LM head: logits of the space's units only, from final hidden states, in one GEMM.

A causal device LM (llama.cpp) gives the final-norm hidden state ``h_p`` at each
scored position (:class:`dptext.llm.hidden.HiddenStates`, LM head skipped). With
the output matrix ``W`` (``n_vocab × n_embd``) the logit of unit ``t`` at ``p`` is

    ``L[p, t] = W[c(p, t)] · ĥ_p``,

where ``c(p, t)`` is the device token of ``t`` (its leading-space form when the
token at ``p`` had a leading space, else its bare form) and ``ĥ_p`` is ``h_p``
as the LM head's kernel sees it: ``Q8_0`` weights make llama.cpp round the
activations to ``Q8_0`` (:func:`~dptext.llm.hidden.q8_0_round`), ``F32``
weights use them as they are. Only ``|V|`` of the ``n_vocab`` rows are touched:

* one GEMM of every position against ``W_s = W[c_space]`` (``|V| × n_embd``);
* positions whose token had no leading space then overwrite the columns of
  ``D = {t : c_bare(t) ≠ c_space(t)}`` (8,076 of 39,002 units of ``smollm2``)
  with a GEMM against ``W[c_bare[D]]``;
* when ``W_s`` is bit-identical to the space's embeddings (``smollm2``: the
  input and output embeddings are tied and the space keeps the leading-space
  row), extra query rows ``q_k`` (Cape's input units, for the distances) ride
  in the same GEMM: ``[ĥ; q] · W_sᵀ``, one pass over ``W_s`` instead of two.

The result equals llama.cpp's own logits to float32 rounding (measured max
``|ΔL|`` 4e-5 for ``|L|`` up to 30; test in tests/test_cape.py).
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.llm.hidden import q8_0_round

ROUNDERS = {"Q8_0": q8_0_round, "F32": lambda h: np.asarray(h, dtype=np.float32)}


def output_matrix(path: str) -> tuple[np.ndarray, str]:
    """``(W [n_vocab, n_embd] float32, GGUF type name)`` of the LM head (``output.weight``, else the tied
    ``token_embd.weight``), dequantized exactly."""
    import gguf

    reader = gguf.GGUFReader(path)
    tensors = {t.name: t for t in reader.tensors}
    t = tensors.get("output.weight") or tensors.get("token_embd.weight")
    if t is None:
        raise DPTextError(f"{path}: no output or token_embd tensor")
    w = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
    return w, t.tensor_type.name


class RestrictedHead:
    """``L[p, t]`` for the units of one space from hidden states (module doc)."""

    def __init__(self, weight: np.ndarray, kind: str, cand: np.ndarray, space_rows: np.ndarray | None = None):
        if kind not in ROUNDERS:
            raise DPTextError(f"no exact restricted LM head for {kind} weights (Q8_0 or F32); use head='full'")
        self.round = ROUNDERS[kind]
        cand = np.asarray(cand, dtype=np.int64)
        w_s = weight[cand[:, 0]]
        self.shares_space = space_rows is not None and space_rows.shape == w_s.shape and \
            np.array_equal(space_rows, w_s)
        self.w_s = space_rows if self.shares_space else w_s  # no second copy when they are the same rows
        self.diff = np.flatnonzero(cand[:, 1] != cand[:, 0])
        self.w_diff = np.ascontiguousarray(weight[cand[self.diff, 1]])

    def scores(self, hidden: np.ndarray, spaced: np.ndarray, queries: np.ndarray | None = None):
        """``(L [P, |V|], queries · W_sᵀ or None)`` for hidden states [P, n_embd] and leading-space flags [P]."""
        h = self.round(hidden)
        n = len(h)
        if queries is not None and self.shares_space:
            both = np.concatenate([h, np.asarray(queries, dtype=np.float32)]) @ self.w_s.T
            logits, dots = both[:n], both[n:]
        else:
            logits, dots = h @ self.w_s.T, None
        bare = np.flatnonzero(~np.asarray(spaced, dtype=bool))
        if len(bare) and len(self.diff):
            logits[np.ix_(bare, self.diff)] = h[bare] @ self.w_diff.T
        return logits, dots
