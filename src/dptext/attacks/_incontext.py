"""``Pr(y | x, c)`` for contextual mechanisms (Cape, Stencil): rows in the unit's real context.

A contextual mechanism's row for input ``x`` at position ``i`` depends on the
other units of the prompt ``c``. The Bayesian attacks and bounds need, for an
observed ``y`` at position ``i`` of private sentence ``c``, the column
``Pr(y | x, c)`` over every candidate ``x`` (``c`` with ``x`` substituted at
``i``; docs/algorithms.md). Each mechanism provides its own column through
``ContextualMechanism.column_in_context`` (:func:`column_in_context` only calls it),
fastest first:

* Cape: the device model's logits at ``i`` see only the prefix (causal) or mask
  ``i`` (masked), so they are computed once per target; the utility
  ``u(x,t) = λ_L·L̃_t − λ_D·d̃(x,t)`` and the bucket law are then vectorised over
  candidates in chunks, and only column ``y`` is kept:
  ``Pr(y | x) = Pr(bucket b_x(y)) / |b_x(y)|``;
* Stencil: ``v(x) = v(c) + f_i·(φ(x) − φ(c_i))`` (linear in the centre unit), the
  output is the cosine-nearest unit of ``V \\ {x}``, so ``Pr(y | x) = 1[NN(v(x)) = y]``,
  one batched nearest-neighbour search per chunk of candidates (``Stencil.column_in_context``,
  in ``dptext.mechanisms.stencil``);
* any other contextual mechanism (the default): its exact ``_row_in_context`` once per candidate.

Cost per target is ``|candidates| × |V|`` utility entries (Cape) or a
``|candidates| × |V| × N`` product (Stencil): restrict candidates (``candidates="shadow"``)
and the number of targets for these mechanisms.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms._contextual import substitute
from dptext.text import Segmentation

__all__ = ["column_in_context", "is_contextual", "observed_columns", "substitute"]


def is_contextual(mechanism) -> bool:
    """Whether rows depend on the prompt (declared ``contextual`` flag, else the contextual base class)."""
    flag = getattr(type(mechanism), "contextual", None)
    if isinstance(flag, bool):
        return flag
    from dptext.mechanisms._contextual import ContextualMechanism

    return isinstance(mechanism, ContextualMechanism)


def column_in_context(mech, seg: Segmentation, i: int, cand: np.ndarray, y: int, *, chunk: int = 256) -> np.ndarray:
    """``Pr(y | x, seg with x at piece i)`` for every candidate index ``x`` in ``cand`` (float64)."""
    cand = np.asarray(cand, dtype=np.int64)
    if not len(cand):
        return np.zeros(0)
    return np.asarray(mech.column_in_context(seg, i, cand, y, chunk=chunk), dtype=np.float64)


def observed_columns(mech, obs, cand: np.ndarray, ys: np.ndarray, progress=None) -> np.ndarray:
    """``[n_targets, |cand|]`` float32 columns, each in its target's private sentence.

    A target whose sentence cannot be re-segmented to the same pieces (or whose
    observed unit is outside the space) gets a zero column: it is unrepresentable.
    """
    from dptext.mechanisms.base import Mechanism

    out = np.zeros((obs.n_targets, len(cand)), dtype=np.float32)
    task = progress.add_task("rows in context", total=obs.n_targets) if progress is not None else None
    segs: dict[int, Segmentation | None] = {}
    for t, (s, p) in enumerate(zip(obs.sent.tolist(), obs.pos.tolist())):
        if s not in segs:
            seg = Mechanism.segment(mech, obs.sources[s])
            want = [obs.originals[s][q] for q in range(len(obs.originals[s]))]
            got = [seg.pieces[j].text if j < len(seg.pieces) else None for j in obs.piece_pos[s]]
            segs[s] = seg if got == want else None
        seg, y = segs[s], int(ys[t])
        if seg is not None and y >= 0:
            out[t] = column_in_context(mech, seg, obs.piece_pos[s][p], cand, y)
        if task is not None:
            progress.advance(task, 1)
    return out
