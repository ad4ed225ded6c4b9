"""Exact exponential-mechanism draws from a sorted neighbour table (no per-unit dense rows).

RANTEXT and SANTEXT(+) both draw ``y`` with

    Pr(y | x) ∝ exp(−c·d(x, y))   over   S(x) = {y ∈ M : d(x, y) < r}

(RANTEXT: ``M = V``, ``r = d*``, ``c = ε/(2·d*)`` per occurrence; SANTEXT:
``M = V_s``, ``r = ∞``, ``c = ε/2``). The space's neighbour table
(``dptext.spaces.neighbours``) splits ``V`` by value at ``edge(x)``: the *near
part* (the first ``near(x)`` table entries, ``d < edge``) and the *far part*
(everything else, ``d ≥ edge``). Each draw is rejection sampling from an
envelope that dominates the target everywhere:

* near part: blocks of consecutive sorted entries (sizes 1, 1, 1, 2, 3, ...
  up to ``block``); every entry of block ``b`` gets weight
  ``exp(−c·max(s_b − s_ref, 0))``, ``s_b`` the block's first (smallest)
  distance;
* far part: every unit of the pool ``M`` gets ``exp(−c·max(edge − s_ref, 0))``.

A proposal picks a block (or the far part) by envelope mass, then an entry
uniformly (the far part proposes a uniform unit of ``M``, rejected when it
lies in the near part or outside ``S(x)``), and is accepted with probability
``exp(−c·(d − max(s_b, s_ref)))``. ``s_ref`` is the distance of the nearest
member of ``M`` (0 for RANTEXT, where ``x`` itself is in ``S(x)``): every
exponent is ≤ 0, so nothing overflows at any ε. Accepted draws follow the
target law exactly; the cost is a few gathers per proposal, and the far
part's distances come from ``EmbeddingSpace.pair_distances``, the function
that built the table.
"""

from __future__ import annotations

import numpy as np

MAX_REPS = 512  # proposals per remaining occurrence and round
PROPOSALS = {"n": 0}  # proposals made (diagnostics for benchmarks)


def block_bounds(width: int, block: int = 128) -> tuple[np.ndarray, np.ndarray]:
    """Envelope blocks over sorted positions ``[0, width)``: x alone, then geometric growth to ``block``."""
    starts, s, w = [0, 1], 1, 1.0
    while s < width:
        w = min(w * 1.5, block)
        s += max(1, int(w))
        starts.append(s)
    st = np.asarray([b for b in starts if b < width], dtype=np.int64)
    return st, np.append(st[1:], width)


class TableDraws:
    """For a mechanism that draws from its space's neighbour table: the table, loaded on first use."""

    _table = None
    _bounds = None  # envelope blocks over the table's width, built with the first draw
    _progress = None  # shown while a missing table is built

    @property
    def table(self):
        if self._table is None:
            self._table = self.space.neighbours(progress=self._progress)
        return self._table

    def use_table(self, table) -> None:
        """Sample from ``table`` (e.g. a narrow one in tests) instead of the space's cached table."""
        self._table, self._bounds = table, None


def gather_searchsorted(slab: np.ndarray, rows: np.ndarray, values: np.ndarray, n: np.ndarray | int,
                        side: str = "left") -> np.ndarray:
    """Vectorised ``searchsorted(slab[rows[i], :n[i]], values[i])`` over many rows at once."""
    lo = np.zeros(len(rows), dtype=np.int64)
    hi = np.broadcast_to(np.asarray(n, dtype=np.int64), lo.shape).copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        midc = np.minimum(mid, slab.shape[1] - 1)
        v = slab[rows, midc]
        go_right = (v < values) if side == "left" else (v <= values)
        go_right &= active
        lo = np.where(go_right, mid + 1, lo)
        hi = np.where(active & ~go_right, mid, hi)


def _neg_exp(c: np.ndarray, diff: np.ndarray) -> np.ndarray:
    """``exp(−c·diff)`` for ``diff ≥ 0``, with ``0·∞`` read as 0 (huge ε, tiny d*)."""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.where(diff > 0, -c * diff, 0.0)
    return np.exp(e)


def nearest_member_distance(table, x: np.ndarray, member: np.ndarray, chunk: int = 32) -> np.ndarray:
    """Per row ``x[i]``: the distance of its nearest unit in ``member`` within the near part, else ``edge``."""
    out = table.edge[x].astype(np.float64)
    todo = np.arange(len(x))
    near = table.near[x]
    for j0 in range(0, table.width, chunk):
        if not len(todo):
            break
        j1 = min(j0 + chunk, table.width)
        cols = np.arange(j0, j1)
        hit = member[table.order[x[todo, None], cols[None, :]]] & (cols[None, :] < near[todo, None])
        found = hit.any(axis=1)
        first = j0 + hit.argmax(axis=1)
        done = todo[found]
        out[done] = table.dist[x[done], first[found]]
        todo = todo[~found]
    return out


def sample_ball(space, table, x: np.ndarray, c: np.ndarray, rng: np.random.Generator, *,
                radius: np.ndarray | None = None, member: np.ndarray | None = None,
                pool: np.ndarray | None = None, s_ref: np.ndarray | None = None,
                bounds: tuple[np.ndarray, np.ndarray] | None = None, exact=None,
                max_rounds: int = 24) -> np.ndarray:
    """Exact draws ``y ~ Pr(y | x) ∝ exp(−c·d(x, y))`` over ``{y ∈ member : d(x, y) < radius}``.

    ``x``, ``c`` (and ``radius``, ``s_ref``) are per-occurrence arrays; ``pool`` lists the
    indices of ``member`` (all of V when ``member`` is None). The caller guarantees the
    support is non-empty and that ``s_ref`` is at most the nearest member's distance.
    Occurrences still rejected after ``max_rounds`` rounds (an envelope far above the target,
    e.g. a unit whose members all lie beyond a narrow table at large ε) are drawn by
    ``exact(positions, rng)`` from their dense rows; an accepted proposal follows the target
    whatever the round, so the mixture is still exact.
    """
    x = np.asarray(x, dtype=np.int64)
    n = len(x)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    c = np.asarray(c, dtype=np.float64)
    starts, ends = bounds if bounds is not None else block_bounds(table.width)
    uniq, inv = np.unique(x, return_inverse=True)  # row data is gathered once per distinct unit
    near = table.near[uniq].astype(np.int64)[inv]
    edge = table.edge[uniq].astype(np.float64)[inv]
    if radius is None:
        k_in = near
        far_on = np.full(n, not table.full)
    else:
        r32 = np.asarray(radius, dtype=np.float32)
        k_in = near.copy()  # a radius at or beyond the edge holds the whole near part (every entry is < edge)
        short = np.flatnonzero(r32 < table.edge[x])
        k_in[short] = gather_searchsorted(table.dist, x[short], r32[short], near[short])
        radius = r32.astype(np.float64)  # one comparison value for the near and far parts
        far_on = radius > edge
    s_ref = np.zeros(n) if s_ref is None else s_ref
    n_pool = space.size if pool is None else len(pool)
    used = max(1, int(np.searchsorted(starts, max(int(k_in.max()), 1), side="left")))
    st, en = starts[:used], ends[:used]
    nb = np.clip(np.minimum(k_in[:, None], en[None, :]) - st[None, :], 0, None)
    s0 = table.dist[uniq[:, None], st[None, :]].astype(np.float64)[inv]
    if member is not None:  # blocks whose last entry is nearer than the nearest member hold no member
        s_last = table.dist[uniq[:, None], np.minimum(en, table.width)[None, :] - 1][inv]
        nb = np.where(s_last < s_ref[:, None], 0, nb)
    base = np.maximum(s0, s_ref[:, None])  # the envelope's exponent reference per block
    w = nb * _neg_exp(c[:, None], base - s_ref[:, None])
    far_base = np.maximum(edge, s_ref)
    w_far = np.where(far_on, n_pool * _neg_exp(c, far_base - s_ref), 0.0)
    cum = np.cumsum(w, axis=1)
    total = cum[:, -1] + w_far
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    rounds = 0
    while len(todo):
        if rounds == max_rounds and exact is not None:
            out[todo] = exact(todo, rng)
            break
        rounds += 1
        # once few occurrences are left, give each several proposals per round and keep the first
        # accepted one (a prefix of the same i.i.d. proposal sequence, so the law is unchanged)
        reps = int(min(MAX_REPS, max(1, n // (2 * len(todo)))))
        occ = np.repeat(todo, reps)
        m = len(occ)
        PROPOSALS["n"] += m
        u = rng.random(m) * total[occ]
        in_near = u < cum[occ, -1]
        b = np.minimum((cum[occ] < u[:, None]).sum(axis=1), used - 1)
        nb_b = nb[occ, b]
        j = st[b] + np.minimum((rng.random(m) * nb_b).astype(np.int64), np.maximum(nb_b - 1, 0))
        j = np.minimum(j, table.width - 1)
        xo = x[occ]
        y_near = table.order[xo, j].astype(np.int64)
        d = table.dist[xo, j].astype(np.float64)
        y_far = rng.integers(0, n_pool, size=m)
        if pool is not None:
            y_far = pool[y_far]
        y = np.where(in_near, y_near, y_far)
        far = np.flatnonzero(~in_near)
        ref = base[occ, b]
        ok = in_near & (nb_b > 0)
        if len(far):
            df = space.pair_distances(xo[far], y[far]).astype(np.float64)
            d[far] = df
            ref[far] = far_base[occ[far]]
            r_far = np.inf if radius is None else radius[occ[far]]
            ok[far] = (df >= edge[occ[far]]) & (df < r_far)
        if member is not None:
            ok &= member[y]
        ok &= rng.random(m) < _neg_exp(c[occ], np.maximum(d - ref, 0.0))
        if reps > 1:
            okr = ok.reshape(-1, reps)
            hit = okr.any(axis=1)
            first = okr.argmax(axis=1)
            out[todo[hit]] = y.reshape(-1, reps)[hit, first[hit]]
            todo = todo[~hit]
        else:
            out[todo[ok]] = y[ok]
            todo = todo[~ok]
    return out


def segmented_cumsum(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """``np.cumsum`` restarted at each row ``values[ptr[i]:ptr[i+1]]`` (the same sums, in the same order, as a
    per-row ``np.cumsum``): rows are grouped by length into power-of-two widths, padded after their values
    (at most doubling them) and summed along the second axis."""
    values = np.asarray(values)
    out = np.empty(len(values), dtype=np.result_type(values.dtype, np.float64))
    lens = np.diff(ptr)
    width = np.zeros(len(lens), dtype=np.int64)
    has = lens > 0
    width[has] = 1 << np.ceil(np.log2(lens[has])).astype(np.int64)
    for w in sorted(set(width[has].tolist())):
        rows = np.flatnonzero(width == w)
        cols = np.arange(w)
        take = cols[None, :] < lens[rows][:, None]
        src = (ptr[rows][:, None] + cols[None, :])[take]
        block = np.zeros((len(rows), w), dtype=out.dtype)
        block[take] = values[src]
        out[src] = np.cumsum(block, axis=1)[take]
    return out


def flatten_tables(tables: dict, size: int) -> tuple:
    """Per-input sampling tables ``{x: (ids, cdf, p)}`` as flat arrays for vectorised draws.

    Returns ``(keys, sizes, seg, ids, cdf, starts, ends, p)``: ``seg[x]`` is input ``x``'s segment
    (−1 when unprepared), segment ``k`` holds ``ids[starts[k]:ends[k]]`` with cumulative shares
    ``cdf - k`` (stored as ``k + cdf`` so that one ``searchsorted`` serves every segment), and ``p[k]``
    is the segment's own probability (e.g. TEM's ⊥, SynTF's excess part).
    """
    keys = np.fromiter(tables, dtype=np.int64, count=len(tables))
    tabs = [tables[int(k)] for k in keys]
    sizes = np.array([len(t[0]) for t in tabs], dtype=np.int64)
    seg = np.full(size, -1, dtype=np.int64)
    seg[keys] = np.arange(len(keys))
    ends = np.cumsum(sizes)
    ids = np.concatenate([t[0] for t in tabs]) if tabs else np.zeros(0, np.int64)
    cdf = np.concatenate([k + t[1] for k, t in enumerate(tabs)]) if tabs else np.zeros(0)
    return keys, sizes, seg, ids, cdf, ends - sizes, ends, np.array([t[2] for t in tabs])
