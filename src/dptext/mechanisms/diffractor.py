"""1-Diffractor (Meisenbacher, Chevli, Matthes, IWSPA 2024; docs/algorithms.md).

Each embedding model lays the vocabulary ``V`` out as one 1-D list ``π_l`` (a permutation of
``V``) by the greedy nearest-neighbour chain of :mod:`dptext.mechanisms._chain`, started at the
space's first (most frequent) unit. Per unit ``x``: one list ``l`` uniform among the ``m`` lists
(the paper's multi-embedding choice: it perturbs on every list and picks one candidate
uniformly, the same law), then a move along it from position ``i = π_l(x)``:

* ``method="geometric"`` (the paper's default): ``j = clamp(i + Z, 0, n−1)`` with ``Z`` two-sided
  geometric, ``Pr(Z = z) = ((1 − α)/(1 + α))·α^|z|``, ``α = e^{−ε}`` (the truncated geometric
  mechanism: mass beyond an end sits on that end). Closed form:
  ``Pr(j|i) = ((1 − α)/(1 + α))·α^|j−i|`` inside, ``α^i/(1 + α)`` at ``j = 0``,
  ``α^{n−1−i}/(1 + α)`` at ``j = n−1``;
* ``method="tem"``: the truncated exponential mechanism over list positions with the radius
  ``gamma`` (an integer, default 5): ``Pr(j|i) ∝ exp(−ε·min(|j − i|, γ)/2)``.

Output: the unit at position ``j`` of list ``l``. ``Pr(y|x) = (1/m)·Σ_l Pr_l(π_l(y)|π_l(x))``, exact.

Claim (proof in docs/algorithms.md): each list is ``ε·|π_l(x) − π_l(x')|``-metric DP (TEM:
``ε·min(|·|, γ)``), and a fixed-weight mixture's ratio is at most the largest ratio of its
parts, so the mechanism is ``ε·D``-metric DP with ``D(x,x') = max_l |π_l(x) − π_l(x')|``;
``bound = ε·(n − 1)`` (TEM: ``ε·min(n − 1, γ)``).

Lists (``lists``, comma-separated): ``glove-50d`` (the space's own vectors) and ``minilm``
(all-MiniLM-L6-v2's input token embeddings, a word's vector the mean over its WordPiece
pieces, so every unit of ``V`` has one).
"""

from __future__ import annotations

import math

import numpy as np

from dptext import cache
from dptext.errors import DPTextError
from dptext.mechanisms._chain import greedy_chain
from dptext.mechanisms.base import Mechanism, PrivacyClaim
from dptext.mechanisms.registry import register

CHAIN_VERSION = 1  # bump with any change to what the chain builder computes
MODELS = ("glove-50d", "minilm")
METHODS = ("geometric", "tem")
LOG_TINY = math.log(1e-300)
BUILD_ESTIMATE_S = {"glove-50d": 10.0, "minilm": 60.0}


def model_vectors(space, model: str) -> np.ndarray:
    """The vectors of ``space``'s units under embedding model ``model`` (rows in unit order)."""
    if model == "glove-50d":
        if space.name != "glove-50d":
            raise DPTextError(f"diffractor: list 'glove-50d' needs the glove-50d space, not {space.name}")
        return np.asarray(space.embeddings)
    if model == "minilm":
        from safetensors.numpy import load_file

        from dptext.spaces.minilm import model_dir, wordpiece_tokenizer

        path = model_dir()
        table = load_file(path + "/model.safetensors")["embeddings.word_embeddings.weight"]
        enc = wordpiece_tokenizer(path).encode_batch([str(u) for u in space.units], add_special_tokens=False)
        lens = np.fromiter((len(e.ids) for e in enc), dtype=np.int64, count=len(enc))
        ids = np.fromiter((i for e in enc for i in e.ids), dtype=np.int64, count=int(lens.sum()))
        if (lens == 0).any():
            raise DPTextError("diffractor: a unit has no WordPiece encoding")
        sums = np.add.reduceat(table[ids].astype(np.float64), np.concatenate(([0], np.cumsum(lens)[:-1])))
        return (sums / lens[:, None]).astype(np.float32)
    raise DPTextError(f"diffractor: unknown list {model!r}; choose from {', '.join(MODELS)}")


def model_inputs(model: str) -> dict:
    if model == "minilm":
        from dptext.spaces.minilm import model_dir

        return {"weights": cache.file_fingerprint(model_dir() + "/model.safetensors"),
                "tokenizer": cache.file_fingerprint(model_dir() + "/tokenizer.json")}
    return {}


def _preselection(space, model: str):
    """The space's cached neighbour table when the list is over the space's own vectors: its rows
    are each unit's nearest units by Euclidean distance, so the chain needs no search of its own."""
    if model != "glove-50d":
        return None
    from dptext.spaces.neighbours import cached_table

    table = cached_table(space)
    return None if table is None else table.order


def chain_for(space, model: str, progress=None) -> np.ndarray:
    """The cached chain ``order`` (list position -> unit id) for ``space`` under ``model`` (memory-mapped)."""
    key = cache.key_of(space.cache_key, "diffractor-chain", model, model_inputs(model))
    path = cache.entry_path("diffractor", f"{space.name}-{model}", key, ".npy", version=CHAIN_VERSION)
    if not path.exists():
        from dptext.progress import build_stage

        with build_stage(progress, f"1-Diffractor list {model} over {space.name}", BUILD_ESTIMATE_S.get(model, 60.0),
                         path):
            order = greedy_chain(model_vectors(space, model), start=0, preselected=_preselection(space, model))
        cache.save_npy(path, order)
    return cache.load_npy(path)



def geometric_row(i: np.ndarray, n: int, epsilon: float) -> np.ndarray:
    """``[len(i), n]`` exact truncated-geometric rows over positions (closed form, module docstring)."""
    i = np.atleast_1d(np.asarray(i, dtype=np.int64))
    j = np.arange(n)
    alpha = math.exp(-epsilon)
    logc = math.log1p(-alpha) - math.log1p(alpha)
    lr = logc - epsilon * np.abs(j[None, :] - i[:, None]).astype(np.float64)
    lr[:, 0] = -epsilon * i - math.log1p(alpha)
    lr[:, n - 1] = -epsilon * (n - 1 - i) - math.log1p(alpha)
    if n == 1:
        lr[:, 0] = 0.0
    lr[lr < LOG_TINY] = -np.inf  # below 1e-300: 0, not a subnormal (those lose their relative precision)
    return np.exp(lr)


def tem_row(i: np.ndarray, n: int, epsilon: float, gamma: int) -> np.ndarray:
    """``[len(i), n]`` exact TEM rows over positions: ``∝ exp(−ε·min(|j − i|, γ)/2)``."""
    i = np.atleast_1d(np.asarray(i, dtype=np.int64))
    d = np.minimum(np.abs(np.arange(n)[None, :] - i[:, None]), gamma).astype(np.float64)
    w = np.exp(-epsilon * d / 2.0)
    return w / w.sum(axis=1, keepdims=True)


@register("diffractor")
class Diffractor(Mechanism):
    """1-Diffractor: a move along one greedy 1-D list per unit (truncated geometric or TEM)."""

    default_space = "glove-50d"
    contextual = False
    dp = True
    params = {"method": "geometric", "gamma": 5, "lists": ",".join(MODELS)}

    def __init__(self, *, epsilon: float, method: str = "geometric", gamma: int = 5, lists=",".join(MODELS),
                 **kwargs) -> None:
        super().__init__(epsilon=epsilon, **kwargs)
        if method not in METHODS:
            raise DPTextError(f"invalid method={method!r}: choose geometric or tem")
        self.method = method
        if isinstance(gamma, bool) or int(gamma) != gamma or int(gamma) < 0:
            raise DPTextError(f"invalid gamma={gamma!r}: must be an integer >= 0 (list positions)")
        self.gamma = int(gamma)
        names = [s.strip() for s in (lists.split(",") if isinstance(lists, str) else lists)]
        if not names or len(set(names)) != len(names) or any(s not in MODELS for s in names):
            raise DPTextError(f"invalid lists={lists!r}: distinct names from {', '.join(MODELS)}")
        self.lists = tuple(names)
        progress = kwargs.get("progress")
        self.orders = np.stack([chain_for(self.space, m, progress) for m in self.lists])  # [m, n] pos -> unit
        self.positions = np.argsort(self.orders, axis=1)  # [m, n] unit -> pos
        self._tem_cdf = None

    def settings(self) -> dict:
        return {**super().settings(), "method": self.method, "gamma": self.gamma, "lists": ",".join(self.lists)}

    # ----- exact rows ------------------------------------------------------------------------------------------
    def _position_rows(self, pos: np.ndarray) -> np.ndarray:
        n = self.space.size
        if self.method == "geometric":
            return geometric_row(pos, n, self.epsilon)
        return tem_row(pos, n, self.epsilon, self.gamma)

    def transition(self, x) -> np.ndarray:
        return self.transition_rows([self.index_of(x)])[0]

    def transition_rows(self, ids) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        out = np.zeros((len(ids), self.space.size))
        for order, pos in zip(self.orders, self.positions):
            out[:, order] += self._position_rows(pos[ids])  # position j of this list is unit order[j]
        return out / len(self.orders)

    # ----- sampling ---------------------------------------------------------------------------------------------
    def _sample(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        n, m = self.space.size, len(self.orders)
        lst = rng.integers(0, m, size=len(idx)) if m > 1 else np.zeros(len(idx), dtype=np.int64)
        i = self.positions[lst, idx]
        if self.method == "geometric":
            p = -math.expm1(-self.epsilon)  # success probability 1 − α: Geometric − Geometric is two-sided
            z = rng.geometric(p, size=len(idx)) - rng.geometric(p, size=len(idx))
            j = np.clip(i + z, 0, n - 1)
        else:
            j = self._tem_positions(i, rng)
        return self.orders[lst, j]

    def _tem_positions(self, i: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """TEM draws: near (``|j − i| < γ``) or far by their exact masses, then a position inside the branch.

        Near: ``W_N = Σ exp(−ε|j − i|/2)`` over in-range ``|j − i| < γ``; far: ``exp(−εγ/2)`` for each of
        the other ``n − |N|`` positions. Inside near, an offset from the symmetric law on ``|k| < γ``,
        redrawn while out of range (the in-range conditional); inside far, a uniform position, redrawn
        while closer than ``γ``."""
        n, g, eps = self.space.size, self.gamma, self.epsilon
        lo, hi = np.maximum(i - (g - 1), 0), np.minimum(i + (g - 1), n - 1)
        count = np.maximum(hi - lo + 1, 0) if g > 0 else np.zeros(len(i), dtype=np.int64)
        w_in = self._inner_mass(i, lo, hi) if g > 0 else np.zeros(len(i))
        w_out = math.exp(-eps * g / 2.0) * (n - count)
        far = rng.random(len(i)) * (w_in + w_out) >= w_in
        out = np.empty(len(i), dtype=np.int64)
        todo = np.flatnonzero(far)
        while len(todo):
            cand = rng.integers(0, n, size=len(todo))
            ok = np.abs(cand - i[todo]) >= g
            out[todo[ok]] = cand[ok]
            todo = todo[~ok]
        todo = np.flatnonzero(~far)
        while len(todo):
            cand = i[todo] + self._near_offsets(len(todo), rng)
            ok = (cand >= 0) & (cand < n)
            out[todo[ok]] = cand[ok]
            todo = todo[~ok]
        return out

    def _inner_mass(self, i, lo, hi) -> np.ndarray:
        """``Σ_{j=lo..hi} exp(−ε|j − i|/2)`` (two geometric sums)."""
        r = math.exp(-self.epsilon / 2.0)
        a, b = (i - lo).astype(np.float64), (hi - i).astype(np.float64)
        return (1.0 - r ** (a + 1)) / (1.0 - r) + (1.0 - r ** (b + 1)) / (1.0 - r) - 1.0

    def _near_offsets(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """Offsets ``k``, ``|k| < γ``, with ``Pr ∝ exp(−ε|k|/2)`` (inverse CDF over ``2γ − 1`` values)."""
        if self._tem_cdf is None:
            ks = np.arange(-(self.gamma - 1), self.gamma)
            w = np.exp(-self.epsilon * np.abs(ks) / 2.0)
            self._tem_cdf = (ks, np.cumsum(w) / w.sum())
        ks, cdf = self._tem_cdf
        return ks[np.minimum(np.searchsorted(cdf, rng.random(size), side="right"), len(ks) - 1)]

    # ----- the claim -------------------------------------------------------------------------------------------
    def claim_distances(self, x: int, ys) -> np.ndarray:
        """The claim's metric ``D(x, y) = max_l |π_l(x) − π_l(y)|`` for unit ``x`` against units ``ys``."""
        ys = np.asarray(ys, dtype=np.int64)
        pos = self.positions
        return np.abs(pos[:, ys] - pos[:, [int(x)]]).max(axis=0).astype(np.float64)

    def privacy(self) -> PrivacyClaim:
        dmax = float(self.space.size - 1)
        cap = dmax if self.method == "geometric" else min(dmax, float(self.gamma))
        per_list, per_list_tem = "truncated geometric", "TEM with the utility −min(|Δ|, γ)"
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="metric-dp", bound=self.epsilon * cap,
            scope=("ε·D(x,x')-metric-DP, D = max over the lists of the list-index distance |π_l(x) − π_l(x')| ("
                   + (per_list if self.method == "geometric" else per_list_tem) + " on each list; a uniform mixture "
                   "over lists); bound = ε·" + ("(|V| − 1)" if self.method == "geometric" else "min(|V| − 1, γ)")
                   + " over V"),
            details={"method": self.method, "gamma": self.gamma, "lists": list(self.lists), "d_max": dmax,
                     "metric": "list-index"},
        )
