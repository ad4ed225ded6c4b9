"""Cape (Wu et al. 2025; docs/algorithms.md, "Cape"): hybrid utility and bucketized exponential mechanism.

For the unit ``x`` at position ``i`` of the prompt and every candidate ``t ∈ V``:

* ``L_t``: the device model's logit of ``t`` at ``i`` given the context
  (:mod:`dptext.mechanisms._device`; SmolLM2 causal LM by default);
* ``L̃_t = (clip(L_t, −B, B) + B) / (2B)``, ``d̃(x,t) = d(x,t) / d_max``;
* ``u(x,t) = λ_L·L̃_t − λ_D·d̃(x,t)``, sensitivity ``Δu = λ_L + λ_D``;
* ``[min u, max u]`` is cut into ``N_b`` equal-width buckets (bucket
  ``⌊(u − min u)/w⌋``, the maximum in the last); empty buckets are dropped;
  bucket ``k`` has score ``ū_k`` (mean utility of its members) and is chosen
  with probability ``∝ exp(ε·ū_k / (2Δu))``; the output is uniform in it, so
  ``Pr(t | x) = Pr(b(t)) / |b(t)|``.

Stopwords and punctuation are kept. ``privacy().bound`` is the proven worst
case of this mechanism between any two inputs in the same context,
``−ln(1 + e^{−ε/2}) + max_m [ln(1 + Σ_{i=N_b−m+1}^{N_b} e^{ε·i/(2N_b)}) + ln(|V| − m)]``
(derivation in :mod:`dptext.mechanisms.cape_bounds` and docs/algorithms.md). The perturb
report lists, per perturbed unit, the proven loss of that unit's actual row
against any other input (``unit_epsilon_proven``) beside the paper's statement
``ε + ln(max_k |b_k| / min_k |b_k|)`` (``unit_epsilon_cape_thm41``), which is not a
bound of this mechanism: the normaliser runs over each input's own non-empty
buckets.

The clip bound ``B`` is calibrated on sample text unless given
(:func:`calibrate_clip`: the ``quantile`` of ``|L_t|`` over every candidate at
every position; default the maximum, as the paper does). ``dptext
cape-calibrate FILE --save`` makes a calibration on the user's own sample the
default (``FILE`` is a path, or ``-`` for stdin; at least 200 units to save); the
value used is stored in :meth:`Cape.settings`.
"""

from __future__ import annotations

import hashlib

import numpy as np

from dptext import cache
from dptext.errors import DPTextError, check_epsilon
from dptext.mechanisms._contextual import ContextualMechanism
from dptext.mechanisms._device import CausalLlamaDevice, DeviceModel
from dptext.mechanisms.base import PrivacyClaim
from dptext.mechanisms.registry import register
from dptext.mechanisms.cape_bounds import cape_bound, cape_thm41, cape_unit_bound
from dptext.resources import is_stopword

CHUNK = 64  # positions per utility matrix (bounds memory at CHUNK x |V|)
CLIP_VERSION = 1  # bump when the clip calibration changes (cache entries)
CALIBRATION_TEXT = (
    "The committee met on Tuesday to review the budget for the new hospital wing. "
    "Several members raised concerns about rising construction costs and delays. "
    "My doctor said the test results were normal, but she wants to see me again in March. "
    "We walked along the river after dinner and talked about moving to a smaller town. "
    "The film was slow at first, yet the final scenes were beautiful and surprisingly moving. "
    "Please send the signed contract to our office before Friday so payment can be processed."
)
_DEVICES: dict = {}


def default_device() -> DeviceModel:
    if "smollm2" not in _DEVICES:
        _DEVICES["smollm2"] = CausalLlamaDevice()
    return _DEVICES["smollm2"]


def calibration_units(space, texts=None) -> int:
    """Units of the space's vocabulary in the calibration texts (the positions :func:`calibrate_clip` scores)."""
    texts = [CALIBRATION_TEXT] if texts is None else list(texts)
    return int(sum((space.lookup_many([p.text for p in space.segment(t).pieces]) >= 0).sum() for t in texts))


def calibrate_clip(device: DeviceModel, space, texts=None, *, quantile: float = 1.0) -> float:
    """``B``: the ``quantile`` of ``|L_t|`` over all candidates at all unit positions of ``texts``."""
    texts = [CALIBRATION_TEXT] if texts is None else list(texts)
    if not texts or not 0 < quantile <= 1:
        raise DPTextError("calibration needs at least one text and a quantile in (0, 1]")
    vals = []
    for text in texts:
        seg = space.segment(text)
        pos = np.flatnonzero(space.lookup_many([p.text for p in seg.pieces]) >= 0)
        if len(pos):
            vals.append(np.abs(device.unit_logits(seg, pos, space)).ravel())
    if not vals:
        raise DPTextError("calibration text has no unit of the space's vocabulary")
    allv = np.concatenate(vals)
    b = float(allv.max() if quantile == 1 else np.quantile(allv, quantile))
    if not b > 0:
        raise DPTextError("calibrated clip bound is 0; give --clip explicitly")
    return b


def saved_clip_path(device: DeviceModel, space):
    """Where ``dptext cape-calibrate --save`` stores the default ``B`` for a device and space."""
    return cache.entry_path("cape", "clip-saved", cache.key_of(device.fingerprint(), space.cache_key), ".npy",
                            version=CLIP_VERSION)


def cached_clip(device: DeviceModel, space, *, quantile: float = 1.0) -> float:
    """The default ``B``: a saved calibration if any, else :func:`calibrate_clip` on the built-in text (cached)."""
    saved = saved_clip_path(device, space)
    if saved.exists():
        return float(np.load(saved))
    key = cache.key_of(device.fingerprint(), space.cache_key, quantile,
                       hashlib.sha256(CALIBRATION_TEXT.encode()).hexdigest())
    path = cache.entry_path("cape", "clip", key, ".npy", version=CLIP_VERSION)
    if path.exists():
        return float(np.load(path))
    b = calibrate_clip(device, space, quantile=quantile)
    cache.save_npy(path, np.asarray(b))
    return b


def bucketize(u: np.ndarray, n_buckets: int) -> np.ndarray:
    """Equal-width bucket of every entry of each row of ``u`` [P, V] (int16, 0..n_buckets-1)."""
    lo = u.min(axis=1, keepdims=True)
    width = (u.max(axis=1, keepdims=True) - lo) / n_buckets
    b = np.floor((u - lo) / np.where(width > 0, width, 1.0))
    return np.clip(b, 0, n_buckets - 1).astype(np.int16)


def bucket_law(u: np.ndarray, epsilon: float, sensitivity: float, n_buckets: int):
    """``(bucket [P,V], counts [P,N_b], Pr(bucket) [P,N_b])`` of the bucketized EM (docs/algorithms.md, "Cape")."""
    p_rows = u.shape[0]
    b = bucketize(u, n_buckets)
    flat = (np.arange(p_rows)[:, None] * n_buckets + b).ravel()
    counts = np.bincount(flat, minlength=p_rows * n_buckets).reshape(p_rows, n_buckets)
    sums = np.bincount(flat, weights=u.ravel().astype(np.float64), minlength=p_rows * n_buckets)
    mean = sums.reshape(p_rows, n_buckets) / np.maximum(counts, 1)
    score = np.where(counts > 0, epsilon * mean / (2.0 * sensitivity), -np.inf)
    w = np.exp(score - score.max(axis=1, keepdims=True))
    return b, counts, w / w.sum(axis=1, keepdims=True)


def rows_from_law(b: np.ndarray, counts: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``Pr(t | x) = Pr(b(t)) / |b(t)|`` for each row."""
    per_member = probs / np.maximum(counts, 1)
    return np.take_along_axis(per_member, b.astype(np.int64), axis=1)


def draw(b: np.ndarray, counts: np.ndarray, probs: np.ndarray, r: np.ndarray, rng) -> np.ndarray:
    """One output per draw of row ``r[n]``: bucket ``k ~ Pr(bucket)``, then member ``j ~ U{0..|b_k|−1}``.

    The ``j``-th member of bucket ``k`` of row ``r`` in index order (the order of a stable
    sort by bucket) is found from the mask ``b[r] == k`` of each distinct ``(r, k)`` pair, so
    the cost is one pass over ``V`` per pair, not a sort of every row.
    """
    n_b = counts.shape[1]
    cdf = np.cumsum(probs[r], axis=1)
    k = np.minimum((cdf < rng.random(len(r))[:, None] * cdf[:, -1:]).sum(axis=1), n_b - 1)
    j = (rng.random(len(r)) * counts[r, k]).astype(np.int64)
    j = np.minimum(j, counts[r, k] - 1)
    pairs, which = np.unique(r * n_b + k, return_inverse=True)
    pr, pk = pairs // n_b, pairs % n_b
    members = np.nonzero(b[pr] == pk[:, None].astype(b.dtype))[1]  # pair-major, index order within a pair
    start = np.concatenate([[0], np.cumsum(counts[pr, pk])[:-1]])
    return members[start[which.ravel()] + j]


# What the proof covers (docs/algorithms.md, "The proven bound"), said once for every report of Cape.
CAPE_SCOPE = ("per sampled unit, between any two inputs x, x' of V that Cape samples (not stopwords, punctuation "
              "or out-of-vocabulary units, which are kept as they are and not protected: whether a unit is one "
              "of them shows in the output), at the same position of the same context: ln Pr(y|x) − "
              "ln Pr(y|x') ≤ bound for every output y (proven worst case of the bucketized exponential mechanism "
              "as implemented); ε is the mechanism's parameter, not this loss; over a text the sampled units' "
              "losses add up; the paper's per-unit ε + ln(max|b|/min|b|) (Cape Thm 4.1) is reported beside "
              "the proven per-unit value and is not a bound")


@register("cape")
class Cape(ContextualMechanism):
    """Cape: context-aware bucketized exponential mechanism (device-model logits + distance)."""

    default_space = "smollm2"
    params = {"lambda_l": 0.5, "lambda_d": 1.0, "n_buckets": 50, "clip": None, "device": None}

    def __init__(self, *, epsilon: float, lambda_l: float = 0.5, lambda_d: float = 1.0, n_buckets: int = 50,
                 clip: float | None = None, device: DeviceModel | None = None, **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        self.lambda_l = float(lambda_l)
        self.lambda_d = float(lambda_d)
        if self.lambda_l < 0 or self.lambda_d < 0 or not self.lambda_l + self.lambda_d > 0:
            raise DPTextError("lambda_l and lambda_d must be >= 0 and not both 0")
        self.n_buckets = int(n_buckets)
        if not 1 <= self.n_buckets <= 32767:
            raise DPTextError(f"invalid n_buckets {n_buckets}: must be in 1..32767")
        self.device = device or default_device()
        self.clip = check_epsilon(clip, name="clip") if clip is not None else cached_clip(self.device, self.space)
        self._unit_eps: tuple[list[float], list[float]] = ([], [])

    @property
    def sensitivity(self) -> float:
        return self.lambda_l + self.lambda_d

    def settings(self) -> dict:
        return {**super().settings(), "lambda_l": self.lambda_l, "lambda_d": self.lambda_d,
                "n_buckets": self.n_buckets, "clip": self.clip, "device": self.device.name}

    def pass_through(self, unit: str) -> str | None:
        return "stopword" if is_stopword(unit) else None

    # ----- utilities -----------------------------------------------------------------------------
    def utility(self, logits: np.ndarray, idx: np.ndarray, dots: np.ndarray | None = None) -> np.ndarray:
        """``u(x,t)`` [P, V] from device logits [P, V] and input units ``idx`` [P].

        ``d(x,t) = sqrt(max(|e_x|² + |e_t|² − 2·e_x·e_t, 0))`` with ``d(x,x) = 0`` (the space's
        formula); ``dots`` [P, V] is ``e_x · e_t`` when the device already computed it in its
        LM-head GEMM, else the space computes the distances. ``d̃`` is clipped to ``[0, 1]``
        (float32 distances may round just above ``d_max``), so every row's range is at most
        ``Δu``, which the proven bound assumes.
        """
        B = np.float32(self.clip)
        if dots is None:
            d = self.space.distances(idx)
        else:
            sq = self.space.sq_norms
            idx = np.asarray(idx, dtype=np.int64)
            d = np.multiply(dots, np.float32(-2.0))
            d += sq[idx][:, None]
            d += sq[None, :]
            np.maximum(d, 0.0, out=d)
            np.sqrt(d, out=d)
            d[np.arange(len(idx)), idx] = 0.0
        # u = λ_L·(clip(L, −B, B) + B)/(2B) − λ_D·min(d/d_max, 1), in place on float32
        u = np.clip(logits, -B, B)
        u += B
        u *= np.float32(self.lambda_l / (2.0 * float(B)))
        np.minimum(d, np.float32(self.space.d_max), out=d)
        d *= np.float32(self.lambda_d / float(self.space.d_max))
        u -= d
        return u

    def utilities(self, seg, pos: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``u`` [len(pos), V] through the same device route as sampling (:meth:`_sample_in_context`)."""
        out = np.empty((len(pos), self.space.size), dtype=np.float32)
        for w, logits, dots in self.device.iter_unit_scores(seg, pos, self.space, self.space.embeddings[idx],
                                                             chunk=CHUNK):
            out[w] = self.utility(logits, np.asarray(idx)[w], dots)
        return out

    def unit_epsilon(self, counts: np.ndarray, probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: (proven loss of this input's row against any other input, Cape Thm 4.1's statement)."""
        return (cape_unit_bound(self.epsilon, self.n_buckets, counts, probs), cape_thm41(self.epsilon, counts))

    # ----- sampling ------------------------------------------------------------------------------
    def _sample_in_context(self, seg, pos, idx, rng) -> np.ndarray:
        upos, first, inv = np.unique(pos, return_index=True, return_inverse=True)
        uidx = idx[first]
        out = np.empty(len(pos), dtype=np.int64)
        unit_eps = np.empty(len(upos))
        unit_thm = np.empty(len(upos))
        occ_of = np.argsort(inv, kind="stable")
        bounds = np.searchsorted(inv[occ_of], np.arange(len(upos) + 1))
        emb = self.space.embeddings
        for w, logits, dots in self.device.iter_unit_scores(seg, upos, self.space, emb[uidx], chunk=CHUNK):
            u = self.utility(logits, uidx[w], dots)
            b, counts, probs = bucket_law(u, self.epsilon, self.sensitivity, self.n_buckets)
            unit_eps[w], unit_thm[w] = self.unit_epsilon(counts, probs)
            local = np.full(len(upos), -1, dtype=np.int64)
            local[w] = np.arange(len(w))
            occ = np.concatenate([occ_of[bounds[g] : bounds[g + 1]] for g in w])
            r = local[inv[occ]]
            out[occ] = draw(b, counts, probs, r, rng)
        if self._active is not None:  # inside perturb: kept for the report
            self._unit_eps = (unit_eps[inv].tolist(), unit_thm[inv].tolist())
        return out

    def _row_in_context(self, seg, pos, i) -> np.ndarray:
        u = self.utilities(seg, np.asarray([pos]), np.asarray([i]))
        b, counts, probs = bucket_law(u, self.epsilon, self.sensitivity, self.n_buckets)
        return rows_from_law(b, counts, probs)[0]

    def column_in_context(self, seg, i: int, cand: np.ndarray, y: int, *, chunk: int = 256) -> np.ndarray:
        """``Pr(y | x at i) = Pr(b_x(y)) / |b_x(y)|`` for each candidate ``x`` (float64).

        The logits at ``i`` do not depend on the unit at ``i`` (causal: the prefix; masked:
        ``i`` is masked), so one device pass serves every candidate; the utility and the
        bucket law are vectorised over ``chunk`` candidates at a time.
        """
        cand = np.asarray(cand, dtype=np.int64)
        logits = self.device.unit_logits(seg, np.asarray([i], dtype=np.int64), self.space)  # [1, V]
        out = np.empty(len(cand), dtype=np.float64)
        for s in range(0, len(cand), chunk):
            c = cand[s : s + chunk]
            u = self.utility(np.broadcast_to(logits, (len(c), logits.shape[1])), c)
            b, counts, probs = bucket_law(u, self.epsilon, self.sensitivity, self.n_buckets)
            r = np.arange(len(c))
            k = b[:, y].astype(np.int64)
            out[s : s + len(c)] = probs[r, k] / np.maximum(counts[r, k], 1)
        return out

    # ----- claim -----------------------------------------------------------------------------------
    def privacy(self) -> PrivacyClaim:
        n = self.space.size
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="dp-within-set",
            bound=cape_bound(self.epsilon, self.n_buckets, n),
            scope=CAPE_SCOPE,
            details={"lambda_l": self.lambda_l, "lambda_d": self.lambda_d, "n_buckets": self.n_buckets,
                     "clip": self.clip, "sensitivity": self.sensitivity, "set": "all of V"},
        )

    def report(self, result) -> dict:
        rep = super().report(result)
        proven, thm = self._unit_eps
        if proven:
            rep["unit_epsilon_proven"] = proven
            rep["unit_epsilon_proven_max"] = max(proven)
            rep["unit_epsilon_cape_thm41"] = thm
            rep["unit_epsilon_cape_thm41_max"] = max(thm)
        self._unit_eps = ([], [])
        return rep
