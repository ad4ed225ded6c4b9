"""RANTEXT's noise divisor ``Z(ε)``, published and calibrated per space (docs/algorithms.md, RANTEXT).

RANTEXT draws ``Y_j ~ Laplace(0, Δφ_j / Z(ε))`` and keeps the units closer to
``x`` than ``d* = ‖Y‖₂``. InferDPT fitted

    Z(ε) = a·ln(b·ε + c) + g      (Z(ε) = ε where b·ε + c < 0)

in its own embedding space so that, for the unit "happy",
``Pr(|C_r|/|V| ≤ 0.05)`` is 1.5 %, 9 %, 10 %, 10.5 % at ε = 2, 6, 10, 14.
Those constants do not transfer to other spaces, so ``calibrate`` repeats the
procedure for a space:

1. ``d* = D / Z`` where ``D = ‖Y‖₂`` for ``Z = 1`` (``|Y_j| ~ Exp(Δφ_j)``) has a
   law that depends neither on ``x`` nor on ε: draw ``D`` once (``N_DRAWS``
   draws, fixed internal seed).
2. ``|C_r(x)| = #{t : d(x, t) < d*} ≤ m`` (``m = ⌊0.05·|V|⌋``) exactly when
   ``d* ≤ s_m``, the ``(m+1)``-th smallest distance from the unit. So the
   target ``p_k`` at ``ε_k`` needs ``Z_k = Q_D(p_k) / s_m`` (``Q_D`` the quantile
   function of ``D``).
3. Fit the curve to the points ``(ε_k, Z_k)``, minimising the error in
   probability ``F_D(Z(ε_k)·s_m) − p_k``. ``b`` and ``g`` are redundant
   (``a·ln(b·ε + c) = a·ln b + a·ln(ε + c/b)``), so ``b = 1`` is fixed and
   ``(a, c, g)`` are fitted, with ``c > −ε_min`` so the curve is defined on the
   fitted range; a grid over ``c`` with a weighted linear solve for ``(a, g)``
   starts a least-squares refinement.

Below the fitted range the calibrated curve is ``Z = ε`` where ``b·ε + c ≤ 0``,
and ``max(ε, a·ln(b·ε + c) + g)`` between there and ``ε_min = 2``. Z does not
enter RANTEXT's ε claim (the exponential mechanism inside ``C_r``), only the
size of ``C_r``. Fits are cached with the space (binary ``.npz``).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import asdict, dataclass, field

import numpy as np

from dptext import cache
from dptext.errors import DPTextError, ParameterError

PAPER = (0.01658160142016071, 19.064721649556482, -38.1294334077209, 9.311083811697406)  # a, b, c, g
TARGETS = ((2.0, 0.015), (6.0, 0.09), (10.0, 0.10), (14.0, 0.105))
RATIO = 0.05
UNIT = "happy"
N_DRAWS = 200_000
SEED = 0x5A4C1B
VERSION = 1
NOISE_MODES = ("calibrated", "paper")


@dataclass(frozen=True)
class NoiseCurve:
    """``Z(ε)``: ``kind`` "paper" (InferDPT's constants) or "calibrated" (fitted for a space)."""

    kind: str
    a: float
    b: float
    c: float
    g: float
    eps_min: float = 2.0

    def z(self, epsilon: float) -> float:
        eps = float(epsilon)
        if self.kind == "paper":
            return eps if eps < self.eps_min else self.a * math.log(self.b * eps + self.c) + self.g
        arg = self.b * eps + self.c
        if arg <= 0:
            return eps
        v = self.a * math.log(arg) + self.g
        return max(eps, v) if eps < self.eps_min else v

    def to_dict(self) -> dict:
        return asdict(self)


PAPER_CURVE = NoiseCurve("paper", *PAPER)


@dataclass
class Calibration:
    space: str
    unit: str
    ratio: float
    curve: NoiseCurve
    threshold: float  # s_m: |C_r| ≤ ratio·|V| iff d* ≤ threshold
    targets: list = field(default_factory=list)  # [(ε, p)]
    solved_z: list = field(default_factory=list)  # Z_k hitting each target exactly
    achieved: list = field(default_factory=list)  # Pr(|C_r|/|V| ≤ ratio) under the fitted curve

    def to_dict(self) -> dict:
        return {"space": self.space, "unit": self.unit, "ratio": self.ratio, **self.curve.to_dict(),
                "threshold": self.threshold,
                "targets": [{"epsilon": e, "target": p, "Z": z, "achieved": q}
                            for (e, p), z, q in zip(self.targets, self.solved_z, self.achieved)]}


PARALLEL_ROWS = 1024  # rows per independent chunk of d* draws (fixed: results do not depend on thread count)


def _norms(scales: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    y = rng.standard_exponential((m, len(scales)), dtype=np.float32)
    y *= scales
    return np.sqrt(np.einsum("ij,ij->i", y, y, dtype=np.float64))


def draw_norms(scales: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of ``‖Y‖₂`` with ``|Y_j| ~ Exp(scale_j)`` (the Laplace magnitudes), float64.

    Large requests are cut into chunks of :data:`PARALLEL_ROWS` rows, each drawn from its own
    child generator (``rng.spawn``), on a small thread pool (numpy fills arrays without the
    GIL). The chunking is fixed, so a seeded ``rng`` gives the same draws on any machine.
    """
    scales = np.asarray(scales, dtype=np.float32)
    if n <= PARALLEL_ROWS:
        return _norms(scales, n, rng) if n else np.empty(0)
    sizes = [min(PARALLEL_ROWS, n - s) for s in range(0, n, PARALLEL_ROWS)]
    futures = [_pool().submit(_norms, scales, m, g) for m, g in zip(sizes, rng.spawn(len(sizes)))]
    try:
        return np.concatenate([f.result() for f in futures])
    except BaseException:  # e.g. Ctrl-C: drop the queued chunks so that exit does not wait for them
        for f in futures:
            f.cancel()
        raise


@functools.lru_cache(maxsize=1)
def _pool():
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)), thread_name_prefix="dptext-dstar")


def _cdf(sorted_draws: np.ndarray):
    """A continuous, piecewise-linear empirical CDF of ``sorted_draws``."""
    probs = (np.arange(len(sorted_draws)) + 0.5) / len(sorted_draws)
    return lambda v: np.interp(v, sorted_draws, probs, left=0.0, right=1.0)


def fit_curve(eps: np.ndarray, probs: np.ndarray, draws: np.ndarray, threshold: float) -> NoiseCurve:
    """Least-squares fit of ``Z(ε) = a·ln(ε + c) + g`` (``b = 1``) in probability space."""
    from scipy.optimize import least_squares

    eps = np.asarray(eps, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    cdf = _cdf(draws)
    eps_min = float(eps.min())
    z_target = np.quantile(draws, probs) / threshold
    # density of Z at the targets: weights turning Z errors into probability errors
    h = 0.01 * z_target
    dens = (cdf((z_target + h) * threshold) - cdf((z_target - h) * threshold)) / (2 * h)
    w = np.maximum(dens, 1e-12)

    def curve(x):
        a, g, theta = x
        return a * np.log(eps - eps_min + np.exp(theta)) + g

    def resid(x):
        return cdf(curve(x) * threshold) - probs

    best = None
    for theta in np.linspace(math.log(1e-9), math.log(1e3), 121):
        feat = np.stack([np.log(eps - eps_min + math.exp(theta)), np.ones_like(eps)], axis=1)
        sol, *_ = np.linalg.lstsq(feat * w[:, None], z_target * w, rcond=None)
        x = np.array([sol[0], sol[1], theta])
        r = float(np.sum(resid(x) ** 2))
        if best is None or r < best[0]:
            best = (r, x)
    fit = least_squares(resid, best[1], x_scale=np.array([abs(best[1][0]) + 1e-6, abs(best[1][1]) + 1e-6, 1.0]),
                        diff_step=1e-4)
    x = fit.x if np.sum(fit.fun ** 2) <= best[0] else best[1]
    a, g, theta = (float(v) for v in x)
    out = NoiseCurve("calibrated", a=a, b=1.0, c=math.exp(theta) - eps_min, g=g, eps_min=eps_min)
    if not (a > 0 and out.z(eps_min) > 0):
        raise DPTextError("RANTEXT noise calibration failed: the fitted Z(ε) is not positive and increasing")
    return out


def calibrate(space, unit: str = UNIT, targets=TARGETS, ratio: float = RATIO, n_draws: int = N_DRAWS,
              seed: int = SEED) -> Calibration:
    """Fit ``Z(ε)`` for ``space`` by the procedure above (no cache)."""
    x = space.lookup(unit)
    if x < 0:
        raise ParameterError("options.noise_unit",
                             f"calibration unit {unit!r} is not in the vocabulary of space {space.name}")
    row = np.sort(space.exact_distances([x])[0])
    m = int(math.floor(ratio * space.size))
    threshold = float(row[min(m, space.size - 1)])
    draws = np.sort(draw_norms(space.dim_range, n_draws, np.random.default_rng(seed)))
    eps = np.asarray([e for e, _ in targets], dtype=np.float64)
    probs = np.asarray([p for _, p in targets], dtype=np.float64)
    curve = fit_curve(eps, probs, draws, threshold)
    solved = (np.quantile(draws, probs) / threshold).tolist()
    achieved = [float(np.searchsorted(draws, curve.z(e) * threshold, side="right") / len(draws)) for e in eps]
    return Calibration(space.name, unit, ratio, curve, threshold, [tuple(map(float, t)) for t in targets],
                       solved, achieved)


def _path(space, unit: str):
    key = cache.key_of(space.cache_key, unit, TARGETS, RATIO, N_DRAWS, SEED)
    return cache.entry_path("spaces", f"{space.name}-rantext-noise", key, ".npz", version=VERSION)


def noise_calibration(space, unit: str = UNIT, *, compute: bool = True) -> Calibration | None:
    """The cached calibration of ``space`` for ``unit`` (computed and cached when missing and ``compute``)."""
    path = _path(space, unit)
    if path.exists():
        a = cache.load_npz(path)
        c = a["curve"].tolist()
        return Calibration(space.name, unit, float(a["ratio"]), NoiseCurve("calibrated", *c),
                           float(a["threshold"]), [tuple(t) for t in a["targets"].tolist()],
                           a["solved"].tolist(), a["achieved"].tolist())
    if not compute:
        return None
    from dptext.progress import build_stage

    with build_stage(None, f"RANTEXT noise calibration for {space.name}", 8.0, path.parent):
        cal = calibrate(space, unit)
    cv = cal.curve
    cache.save_npz(path, curve=np.asarray([cv.a, cv.b, cv.c, cv.g, cv.eps_min]), ratio=np.asarray(cal.ratio),
                   threshold=np.asarray(cal.threshold), targets=np.asarray(cal.targets),
                   solved=np.asarray(cal.solved_z), achieved=np.asarray(cal.achieved))
    return cal


def describe_space(space, *, calibrate: bool = False) -> dict:
    """``space.describe()`` plus RANTEXT's noise curve for it: the cached calibration, computed here when
    ``calibrate`` is true, else None (``{"error": ...}`` for a space without the calibration unit)."""
    out = space.describe()
    try:
        cal = noise_calibration(space, compute=calibrate)
    except Exception as exc:  # a space without the calibration unit
        out["calibration"] = {"error": str(exc)}
    else:
        out["calibration"] = cal.to_dict() if cal is not None else None
    return out


def noise_curve(space, noise: str = "calibrated", unit: str = UNIT) -> tuple[NoiseCurve, Calibration | None]:
    """``(curve, calibration)`` for RANTEXT's ``noise`` option."""
    if noise == "paper":
        return PAPER_CURVE, None
    if noise != "calibrated":
        raise ParameterError("options.noise", f"unknown RANTEXT noise {noise!r}; choose one of {', '.join(NOISE_MODES)}")
    cal = noise_calibration(space, unit)
    return cal.curve, cal
