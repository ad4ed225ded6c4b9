"""Exact best-match search over a vocabulary with a bfloat16 prefilter (Stencil and the noise mapper).

``best(q) = argmax_t ⟨q, e_t⟩ + bias_t`` (cosine: ``e`` normalised, no bias;
Euclidean nearest: ``⟨2q, e_t⟩ − ‖e_t‖²``). Scores are first computed with a
bfloat16 GEMM (fp32 accumulation), several times faster than fp32 on CPUs
with bf16 units. Rounding both inputs to bfloat16 (unit roundoff ``u = 2⁻⁸``)
changes each product by at most ``(2u + u²)|q_j||e_tj|``, so the approximate
score ``a_t`` is within ``r_t = c·‖q‖·‖e_t‖`` of the exact one, with
``c = 2u + u² + N·2⁻²³`` (Cauchy-Schwarz; the last term covers fp32
accumulation). Let ``S`` be the ``k`` units with the largest upper bounds
``a_t + r_t``: every unit outside ``S`` scores at most the ``k``-th upper
bound, so when that is below ``max_{j∈S} (a_j − r_j)`` the winner lies in
``S`` and is found by rescoring ``S`` in float32 (as the full search). Rows where the test fails
fall back to a full float32 search. The result is the exact argmax.

The prefilter only pays on CPUs with native bfloat16 arithmetic (``avx512_bf16``
or ``amx_bf16`` in ``/proc/cpuinfo``); elsewhere bf16 GEMMs are emulated and
several times slower than float32, so the search is the plain float32 one.
"""

from __future__ import annotations

import os
import threading

import numpy as np

CHUNK = 512
NPROBE = 64  # IVF lists probed by the approximate search (exact=False)
_TABLES: dict = {}
_BF16: list = []


def bf16_native() -> bool:
    """Whether this CPU has bfloat16 arithmetic (Linux ``/proc/cpuinfo`` flags; False elsewhere)."""
    if not _BF16:
        try:
            with open("/proc/cpuinfo") as f:
                flags = f.read()
        except OSError:
            flags = ""
        _BF16.append(" avx512_bf16" in flags or " amx_bf16" in flags)
    return _BF16[0]


def _full_search(q: np.ndarray, table: np.ndarray, bias, exclude) -> np.ndarray:
    """Plain float32 ``argmax_t ⟨q_i, table_t⟩ + bias_t`` over every unit, ``t != exclude[i]``."""
    out = np.empty(len(q), dtype=np.int64)
    for s in range(0, len(q), CHUNK):
        full = q[s : s + CHUNK] @ table.T
        if bias is not None:
            full += bias[None, :]
        if exclude is not None:
            ex = np.asarray(exclude[s : s + CHUNK], dtype=np.int64)
            ok = np.flatnonzero(ex >= 0)
            full[ok, ex[ok]] = -np.inf
        out[s : s + CHUNK] = full.argmax(axis=1)
    return out


def _bf16_table(key, table: np.ndarray):
    import torch

    if key not in _TABLES:
        norms = np.sqrt((table.astype(np.float64) ** 2).sum(axis=1)).astype(np.float32)
        _TABLES[key] = (torch.from_numpy(np.ascontiguousarray(table, dtype=np.float32)).to(torch.bfloat16),
                        torch.from_numpy(norms))
    return _TABLES[key]


def best_match(queries: np.ndarray, table: np.ndarray, key, *, bias: np.ndarray | None = None,
               exclude: np.ndarray | None = None, k: int = 32) -> np.ndarray:
    """Exact ``argmax_t ⟨q_i, table_t⟩ + bias_t`` for each query, ``t != exclude[i]`` (-1: none)."""
    import torch

    q = np.ascontiguousarray(queries, dtype=np.float32)
    if not bf16_native():
        return _full_search(q, table, None if bias is None else np.asarray(bias, dtype=np.float32), exclude)
    tb, norms = _bf16_table(key, table)
    n, dim = table.shape
    k = min(k, n)
    c = 2 * 2.0**-8 + 2.0**-16 + dim * 2.0**-23
    out = np.empty(len(q), dtype=np.int64)
    bias_t = None if bias is None else torch.from_numpy(np.asarray(bias, dtype=np.float32))
    for s in range(0, len(q), CHUNK):
        qs = q[s : s + CHUNK]
        rows = np.arange(len(qs))
        approx = (torch.from_numpy(qs).to(torch.bfloat16) @ tb.T).float()
        if bias_t is not None:
            approx += bias_t
        radq = torch.from_numpy((c * 1.001 * np.linalg.norm(qs.astype(np.float64), axis=1)).astype(np.float32))
        upper = torch.addr(approx, radq, norms).add_(1e-6)  # a_t + r_t (with a margin for fp32 rounding)
        ex = None
        if exclude is not None:
            ex = np.asarray(exclude[s : s + CHUNK], dtype=np.int64)
            has = ex >= 0
            upper[torch.from_numpy(rows[has]), torch.from_numpy(ex[has])] = -float("inf")
        ub, cand = torch.topk(upper, k, dim=1)
        lower = (torch.gather(approx, 1, cand) - radq[:, None] * norms[cand] - 1e-6).numpy()
        ub, cand = ub.numpy(), cand.numpy()
        if ex is not None:
            lower[cand == ex[:, None]] = -np.inf
        safe = (ub[:, -1] < lower.max(axis=1)) | (k == n)
        exact = np.einsum("ij,ikj->ik", qs, table[cand])  # float32, as the full search
        if bias is not None:
            exact += np.asarray(bias, dtype=np.float32)[cand]
        if ex is not None:
            exact[cand == ex[:, None]] = -np.inf
        res = cand[rows, exact.argmax(axis=1)]
        bad = np.flatnonzero(~safe)
        if len(bad):
            full = qs[bad] @ table.T
            if bias is not None:
                full += bias[None, :]
            if ex is not None:
                ok = ex[bad] >= 0
                full[np.flatnonzero(ok), ex[bad][ok]] = -np.inf
            res[bad] = full.argmax(axis=1)
        out[s : s + CHUNK] = res
    return out


def fallback_rate(queries: np.ndarray, table: np.ndarray, key, *, bias=None, k: int = 32) -> float:
    """Share of queries the prefilter cannot settle (diagnostics for benchmarks)."""
    import torch

    tb, norms = _bf16_table(key, table)
    qs = np.ascontiguousarray(queries[:CHUNK], dtype=np.float32)
    c = 2 * 2.0**-8 + 2.0**-16 + table.shape[1] * 2.0**-23
    approx = (torch.from_numpy(qs).to(torch.bfloat16) @ tb.T).float()
    if bias is not None:
        approx += torch.from_numpy(np.asarray(bias, dtype=np.float32))
    rad = torch.from_numpy((c * np.linalg.norm(qs, axis=1)).astype(np.float32))[:, None] * norms[None, :]
    ub, cand = torch.topk(approx + rad, k, dim=1)
    lower = torch.gather(approx, 1, cand) - torch.gather(rad, 1, cand)
    return float((ub[:, -1] >= lower.max(dim=1).values).float().mean())


def ann_best_match(queries: np.ndarray, space, metric: str, *, exclude: np.ndarray | None = None,
                   nprobe: int = NPROBE) -> np.ndarray:
    """Approximate best match: the best unit of the ``nprobe`` IVF lists nearest to each query.

    Scores are those of :func:`best_match` (cosine: ``⟨q, ê_t⟩``; Euclidean:
    ``⟨2q, e_t⟩ − ‖e_t‖²``), computed in float32 by one GEMM per list
    (:class:`dptext.spaces.ann.IvfIndex`); ``exclude[i]`` is never returned; a
    row whose probed lists hold no other unit falls back to :func:`best_match`.
    Equal to the exact answer whenever the exact winner lies in a probed list;
    agreement is measured in ``benchmarks/bench_tokenmanip.py``.
    """
    from dptext.spaces.ann import IvfIndex

    q = np.ascontiguousarray(queries, dtype=np.float32)
    out = IvfIndex.of(space, metric).search(q, nprobe, exclude)
    empty = np.flatnonzero(out < 0)
    if len(empty):
        ex = None if exclude is None else np.asarray(exclude)[empty]
        out[empty] = exact_best_match(q[empty], space, metric, exclude=ex)
    return out


def exact_best_match(queries: np.ndarray, space, metric: str, *, exclude: np.ndarray | None = None) -> np.ndarray:
    """Exact best match over ``space`` for ``metric`` (cosine: ``argmax cos(q, E_t)``; Euclidean:
    ``argmin ‖q − E_t‖``), in the form of :func:`dptext.spaces.ann.search_form`."""
    from dptext.spaces.ann import search_form

    scale, table, bias = search_form(space, metric)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    return best_match(q if scale == 1.0 else scale * q, table, (space.cache_key, metric), bias=bias,
                      exclude=exclude)


# ----- exact k nearest (Euclidean, k = 1, 2): a float32 screen, decided in float64 ---------------------------------
SCORE_BYTES = 256 << 20  # all workers' score buffers together (1 to 8 workers, _pool)
SCREEN_ROWS = (128, 512)  # queries per screening GEMM, fewest and most: as many as SCORE_BYTES allows
BLOCK = 1024  # units per block of the block-minimum pass
_U = 2.0**-24  # float32 unit roundoff
_SCREEN: dict = {}
_BUFFERS = threading.local()  # each thread's score buffer, kept between chunks and calls


def _scores(rows: int, n: int) -> np.ndarray:
    """This pool thread's ``[rows, n]`` float32 score buffer, kept between chunks and calls: a fresh array of this
    size (over glibc's 32 MB ``mmap`` threshold) is mapped and page-faulted anew for every chunk, which cost
    more than the larger GEMM saves (the reason 128 rows, 26 MB and reused by malloc, measured fastest before)."""
    buf = getattr(_BUFFERS, "scores", None)
    if buf is None or buf.shape[1] != n or buf.shape[0] < rows:
        buf = _BUFFERS.scores = np.empty((rows, n), dtype=np.float32)
    return buf[:rows]


def _screen_table(table: np.ndarray, key):
    """``(E, A, blocks, B, e_max)``: ``A_t = [−2e_t, ‖e_t‖²]`` (float32, ``‖e_t‖²`` from float64), padded to
    ``blocks·B`` rows whose score is 1e30 (never among the best); ``e_max = max_t ‖e_t‖``."""
    if key not in _SCREEN:
        E = np.ascontiguousarray(table, dtype=np.float32)
        n, dim = E.shape
        blocks = max(3, -(-n // BLOCK))
        B = -(-n // blocks)
        sq = np.einsum("ij,ij->i", E.astype(np.float64), E.astype(np.float64))
        A = np.zeros((blocks * B, dim + 1), dtype=np.float32)
        A[:n, :-1] = -2.0 * E
        A[:n, -1] = sq
        A[n:, -1] = 1e30
        _SCREEN[key] = (E, A, blocks, B, float(np.sqrt(sq.max())))
    return _SCREEN[key]


def sq_distances(q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``Σ_j (rows_j − q_j)²`` in float64 over the last axis (the decision's distances)."""
    d = np.asarray(rows, dtype=np.float64) - q
    return (d * d).sum(axis=-1)


def order_pairs(cand: np.ndarray, d2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's two candidates ordered by (distance, index)."""
    swap = (d2[:, 1] < d2[:, 0]) | ((d2[:, 1] == d2[:, 0]) & (cand[:, 1] < cand[:, 0]))
    cand, d2 = cand.copy(), d2.copy()
    cand[swap] = cand[swap][:, ::-1]
    d2[swap] = d2[swap][:, ::-1]
    return cand, d2


def _screen_chunk(q: np.ndarray, E, A, blocks: int, B: int, e_max: float, k: int, keep: bool = False):
    r, dim = q.shape
    rr = np.arange(r)[:, None]
    qa = np.empty((r, dim + 1), dtype=np.float32)
    qa[:, :-1] = q
    qa[:, -1] = 1.0
    out = _scores(r, len(A)) if keep else None  # keep: this thread's kept buffer (SCORE_BYTES bounds them all)
    sc = np.matmul(qa, A.T, out=out).reshape(r, blocks, B)  # a_t ≈ ‖e_t‖² − 2⟨q, e_t⟩
    # the k+1 smallest a_t lie in the k+1 blocks of smallest minimum (each of those holds a value <= the
    # (k+1)-th smallest block minimum, so every value outside them is at least that large)
    near = np.argpartition(sc.min(axis=2), k, axis=1)[:, : k + 1]
    sub = sc[rr, near].reshape(r, (k + 1) * B)
    pos = np.argpartition(sub, list(range(k + 1)), axis=1)[:, : k + 1]  # sorted: a_(1) <= ... <= a_(k+1)
    vals = sub[rr, pos].astype(np.float64)
    cand = near[rr, pos // B] * B + pos % B
    slack = 2.0 * (dim + 5) * _U * (2.0 * np.sqrt((q * q).sum(axis=1)) * e_max + e_max * e_max)
    margin = 2.0 * slack  # |a_t − f_t| <= slack (module docstring), so f differs from a by < margin/2
    settled = vals[:, k] > vals[:, k - 1] + margin
    cand = np.ascontiguousarray(cand[:, :k])
    d2 = sq_distances(q[:, None, :], E[cand])
    if k == 2:
        cand, d2 = order_pairs(cand, d2)
    sc = sc.reshape(r, blocks * B)
    for b in np.flatnonzero(~settled):  # rare (about 0.1-0.3 % of rows): every unit within the margin
        cs = np.flatnonzero(sc[b] <= vals[b, k - 1] + margin[b])
        dc = sq_distances(q[b], E[cs])
        best = np.lexsort((cs, dc))[:k]
        cand[b], d2[b] = cs[best], dc[best]
    return cand, d2


def nearest_units(queries: np.ndarray, table: np.ndarray, key, k: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` (1 or 2) units of ``table`` nearest to each query, exactly: ``(index [n, k], squared distance
    [n, k])``, ordered by the float64 squared distance ``Σ_j (e_tj − q_j)²`` and, on equal distances, by index.

    *Screen.* ``f_t = ‖e_t‖² − 2⟨q, e_t⟩`` (the squared distance less ``‖q‖²``) is computed for every unit by
    one float32 GEMM of ``[q, 1]`` against ``[−2e_t, ‖e_t‖²]``: ``a_t``. Rounding ``q`` and ``‖e_t‖²`` to
    float32 and the ``N + 1``-term float32 dot product (any summation order, FMA or not) give
    ``|a_t − f_t| ≤ (N + 3)·u·(2‖q‖‖e_t‖ + ‖e_t‖²)(1 + O(u))`` with ``u = 2⁻²⁴`` (Cauchy-Schwarz); the code
    uses the larger ``s = 2(N + 5)·u·(2‖q‖·e_max + e_max²)``. *Decision.* With ``a_(1) ≤ … ≤ a_(k+1)`` the
    smallest screened values: if ``a_(k+1) > a_(k) + 2s``, every unit outside the ``k`` screened best has
    ``f > a_(k) + s``, strictly above each of those ``k`` (whose ``f ≤ a_(k) + s``), so the exact ``k``
    nearest are those ``k``; they are ordered by their float64 distances. Otherwise every unit with
    ``a_t ≤ a_(k) + 2s`` (a superset of the exact ``k`` nearest, same argument) is rescored in float64
    and the ``k`` best by (distance, index) are kept. The result equals a float64 brute-force scan with
    that order, ties included.
    """
    if k not in (1, 2):
        raise ValueError(f"k must be 1 or 2, not {k}")
    E, A, blocks, B, e_max = _screen_table(table, key)
    if len(E) <= k:
        raise ValueError(f"the table has {len(E)} units: at least {k + 1} are needed")
    q = np.asarray(queries, dtype=np.float64).reshape(-1, E.shape[1])
    pool, lock, workers = _pool()
    # rows per chunk: larger GEMMs run faster (measured single-threaded, 10,000 queries against 50,000 units:
    # 0.95 CPU-s at 128 rows, 0.83 at 256, 0.77 at 512), within SCORE_BYTES of kept score buffers
    rows = int(min(SCREEN_ROWS[1], max(SCREEN_ROWS[0], SCORE_BYTES // (4 * len(A) * workers))))
    starts = range(0, len(q), rows)
    keep = len(starts) > 1  # several chunks: each thread keeps its buffer (one chunk: a fresh array, not kept)
    run = lambda s: _screen_chunk(q[s : s + rows], E, A, blocks, B, e_max, k, keep)  # noqa: E731
    if not keep:
        pool = None
    if pool is None:
        parts = [run(s) for s in starts]
    else:
        with lock, _blas_controller().limit(limits=1, user_api="blas"):
            parts = list(pool.map(run, starts))
    if not parts:
        return np.empty((0, k), dtype=np.int64), np.empty((0, k))
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


_POOL: dict = {}


def _pool():
    """``(pool, lock, workers)``: a thread pool with one worker per usable core, at most 8 (None on one core),
    and the lock that serialises searches. Each worker runs whole screening chunks with BLAS held to one thread: numpy's
    kernels release the GIL, and BLAS's own threads would otherwise spin against the workers (measured:
    twice the CPU time on a loaded machine). Kept per process id: a forked child has none of the parent's
    worker threads, so it builds its own pool (and lock) instead of queueing work nobody runs."""
    pid = os.getpid()
    if pid not in _POOL:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = min(cores, 8)
        pool = None
        if workers > 1:  # imported here: concurrent.futures (with logging and queue) costs a cold start ~5-20 ms,
            from concurrent.futures import ThreadPoolExecutor  # and only the exact k-nearest search uses it

            pool = ThreadPoolExecutor(workers, thread_name_prefix="dptext-nn")
        _POOL.clear()
        _POOL[pid] = (pool, threading.Lock(), workers)
    return _POOL[pid]


def _blas_controller():
    """threadpoolctl's controller (found once): ``limit`` sets BLAS's threads for the block and restores them.
    The setting is process-wide, so the pool's lock keeps two searches from interleaving their restores."""
    if not _CONTROLLER:
        from threadpoolctl import ThreadpoolController

        _CONTROLLER.append(ThreadpoolController())
    return _CONTROLLER[0]


_CONTROLLER: list = []
