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
  one batched nearest-neighbour search per chunk of candidates (:func:`stencil_column`, which
  Stencil's override calls);
* any other contextual mechanism (the default): its exact ``_row_in_context`` once per candidate.

Cost per target is ``|candidates| × |V|`` utility entries (Cape) or a
``|candidates| × |V| × N`` product (Stencil): restrict candidates (``candidates="shadow"``)
and the number of targets for these mechanisms.
"""

from __future__ import annotations

import numpy as np

from dptext.mechanisms._contextual import substitute
from dptext.text import Segmentation

__all__ = ["column_in_context", "is_contextual", "observed_columns", "stencil_column", "substitute"]


def is_contextual(mechanism) -> bool:
    """Whether rows depend on the prompt (declared ``contextual`` flag, else the contextual base class)."""
    flag = getattr(type(mechanism), "contextual", None)
    if isinstance(flag, bool):
        return flag
    from dptext.mechanisms._contextual import ContextualMechanism

    return isinstance(mechanism, ContextualMechanism)


def stencil_column(mech, seg, i: int, cand: np.ndarray, y: int, chunk: int = 256) -> np.ndarray:
    """Stencil's exact column: ``1[NN(v(c) + f_i·(φ(x) − φ(c_i))) = y]`` per candidate ``x`` (module doc)."""
    cand = np.asarray(cand, dtype=np.int64)
    space = mech.space
    v0, defined = mech.quasi_embeddings(seg, np.asarray([i], dtype=np.int64))
    if not defined[0]:  # no weight anywhere: uniform over V \ {x}
        return np.where(cand == y, 0.0, 1.0 / (space.size - 1))
    x0 = space.lookup(seg.pieces[i].text)
    # the centre weight f_i, from linearity: substitute a probe unit and compare
    probe = int(cand[0]) if int(cand[0]) != x0 else int(cand[-1])
    v1, _ = mech.quasi_embeddings(substitute(seg, i, space.units[probe]), np.asarray([i], dtype=np.int64))
    diff = space.embeddings[probe].astype(np.float64) - space.embeddings[x0]
    f_i = float(np.dot(v1[0] - v0[0], diff) / max(np.dot(diff, diff), 1e-30)) if probe != x0 else 0.0
    out = np.empty(len(cand), dtype=np.float64)
    emb = space.embeddings
    for s in range(0, len(cand), chunk):
        c = cand[s : s + chunk]
        v = v0 + np.float32(f_i) * (emb[c].astype(np.float32) - emb[x0].astype(np.float32))
        out[s : s + len(c)] = mech.best_cosine(v.astype(np.float32), c) == y
    return out


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
