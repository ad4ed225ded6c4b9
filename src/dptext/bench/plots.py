"""Figures from a results table (matplotlib, Agg backend; PNG files).

* ``curve-<exp>-<col>.png``: a metric or attack column against ε, one line
  per mechanism variant (mean over seeds, error bars = std when several);
  mechanisms without ε are drawn as dashed horizontal lines;
* ``asr-<exp>-<attack>.png``: every ASR field of one attack against ε;
* ``pu-<exp>-<utility>.png``: privacy-utility curves, protection level
  ``1 − ASR`` on x, a utility metric on y, one line per variant, each point
  labelled with its ε (docs/algorithms.md: protection = 1 − ASR);
* ``hist-<exp>-<col>.png``: distributions stored as list columns (e.g. the
  RANTEXT ``|C_r|/|V|`` samples), one panel per variant, one histogram per ε.

Which pairs go into privacy-utility plots comes from the sweep's ``plots``
section (``privacy_utility: [{experiment, protection, utility}]``); without
it every (first ASR column, utility-like metric) pair of an experiment is drawn.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

UTILITY_HINTS = ("rouge", "mauve", "coherence", "diversity", "accuracy", "alignment", "retention", "bleu")
_ASR = re.compile(r"asr", re.I)
#: per-cell bookkeeping fields of a result, not worth a curve or a table
_BOOKKEEPING = re.compile(r"\.(n_units|k|n|success\w*|unrepresentable|dropped_units|attack|median|protection\w*"
                          r"|pool|detector_\w+|\w*seconds|\w*_per_unit|keep_mass|max_beam|sentences"
                          r"|non_target_units|candidates|q25|q75|mrr)$")


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", s).strip("_")


def value_columns(df: pd.DataFrame) -> list[str]:
    """Numeric metric/attack columns that have at least one value."""
    cols = []
    for c in df.columns:
        if (c.startswith("metric.") or c.startswith("attack.")) and pd.api.types.is_numeric_dtype(df[c]) \
                and not _BOOKKEEPING.search(c):
            if df[c].notna().any():
                cols.append(c)
    return cols


def list_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in df.columns if (c.startswith("metric.") or c.startswith("attack."))
            and df[c].map(lambda v: isinstance(v, (list, np.ndarray)) and len(v) > 0).any()]


def asr_columns(df: pd.DataFrame) -> list[str]:
    return [c for c in value_columns(df) if c.startswith("attack.") and _ASR.search(c.rsplit(".", 1)[-1])]


def _agg(df: pd.DataFrame, col: str) -> pd.DataFrame:
    g = df.groupby(["variant", "epsilon"], dropna=False)[col].agg(["mean", "std", "count"]).reset_index()
    return g.sort_values(["variant", "epsilon"])


def _finish(fig, ax, path: Path, title: str, xlabel: str, ylabel: str) -> Path:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_bars(df: pd.DataFrame, cols: list[str], path: Path, title: str, ylabel: str) -> Path | None:
    """Mechanisms without ε: one group of bars per variant, one bar per column."""
    g = df.groupby("variant")[cols].mean()
    if g.dropna(how="all").empty:
        return None
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    width = 0.8 / len(cols)
    for j, col in enumerate(cols):
        ax.bar(np.arange(len(g)) + j * width, g[col].to_numpy(), width, label=col.rsplit(".", 1)[-1])
    ax.set_xticks(np.arange(len(g)) + 0.4 - width / 2, g.index, fontsize=8, rotation=15)
    return _finish(fig, ax, path, title, "", ylabel)


def plot_vs_epsilon(df: pd.DataFrame, cols: list[str], path: Path, title: str, ylabel: str) -> Path | None:
    if df["epsilon"].isna().all():
        return plot_bars(df, cols, path, title, ylabel)
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    drawn = False
    for col in cols:
        g = _agg(df[df[col].notna()], col)
        for variant, sub in g.groupby("variant"):
            name = variant if len(cols) == 1 else f"{variant} {col.rsplit('.', 1)[-1]}"
            eps = sub[sub["epsilon"].notna()]
            if len(eps):
                ax.errorbar(eps["epsilon"], eps["mean"], yerr=eps["std"].fillna(0) if (eps["count"] > 1).any()
                            else None, marker="o", ms=4, capsize=2, label=name)
                drawn = True
            for _, r in sub[sub["epsilon"].isna()].iterrows():
                ax.axhline(r["mean"], ls="--", lw=1, color=f"C{abs(hash(name)) % 10}", label=f"{name} (no ε)")
                drawn = True
    if not drawn:
        plt.close(fig)
        return None
    return _finish(fig, ax, path, title, "ε", ylabel)


def plot_privacy_utility(df: pd.DataFrame, prot_col: str, util_col: str, path: Path, title: str) -> Path | None:
    d = df[df[prot_col].notna() & df[util_col].notna()]
    if d.empty:
        return None
    g = d.groupby(["variant", "epsilon"], dropna=False)[[prot_col, util_col]].mean().reset_index()
    fig, ax = plt.subplots(figsize=(5.5, 4.0))
    for variant, sub in g.groupby("variant"):
        sub = sub.sort_values("epsilon")
        v = sub[prot_col].to_numpy()
        x = v if "protection" in prot_col.lower() else 1.0 - v
        y = sub[util_col].to_numpy()
        ax.plot(x, y, marker="o", ms=4, label=variant)
        for xi, yi, e in zip(x, y, sub["epsilon"]):
            ax.annotate("" if e is None or (isinstance(e, float) and math.isnan(e)) else f"ε={e:g}",
                        (xi, yi), fontsize=6, xytext=(3, 3), textcoords="offset points")
    xlabel = prot_col if "protection" in prot_col.lower() else f"protection = 1 − {prot_col.split('.', 1)[1]}"
    return _finish(fig, ax, path, title, xlabel, util_col)


def plot_histograms(df: pd.DataFrame, col: str, path: Path, title: str) -> Path | None:
    d = df[df[col].map(lambda v: isinstance(v, (list, np.ndarray)) and len(v) > 0)]
    if d.empty:
        return None
    variants = sorted(d["variant"].unique())
    fig, axes = plt.subplots(1, len(variants), figsize=(4.2 * len(variants), 3.4), squeeze=False)
    for ax, variant in zip(axes[0], variants):
        sub = d[d["variant"] == variant].sort_values("epsilon")
        for eps, rows in sub.groupby("epsilon", dropna=False):
            vals = np.concatenate([np.asarray(v, dtype=float) for v in rows[col]])
            ax.hist(vals, bins=40, histtype="step", density=True, label=f"ε={eps:g}")
        ax.set_title(f"{variant}", fontsize=9)
        ax.set_xlabel(col.split(".", 1)[1])
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_results(results, out_dir: str | Path, plots: dict | None = None) -> list[Path]:
    """Write every figure for a results table (a path or a DataFrame); returns the PNG paths."""
    df = pd.read_parquet(results) if not isinstance(results, pd.DataFrame) else results
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if df.empty or "variant" not in df.columns:
        return written
    df = df.copy()
    df["epsilon"] = pd.to_numeric(df["epsilon"], errors="coerce")
    pu_specs = (plots or {}).get("privacy_utility")
    for exp, e in df.groupby("experiment"):
        cols = value_columns(e)
        for col in [c for c in cols if c.startswith("metric.")]:
            p = plot_vs_epsilon(e, [col], out / f"curve-{_slug(exp)}-{_slug(col)}.png", f"{exp}: {col}", col)
            written += [p] if p else []
        attacks = sorted({c.split(".")[1] for c in asr_columns(e)})
        for att in attacks:
            acols = [c for c in asr_columns(e) if c.split(".")[1] == att]
            p = plot_vs_epsilon(e, acols, out / f"asr-{_slug(exp)}-{_slug(att)}.png", f"{exp}: ASR of {att}", "ASR")
            written += [p] if p else []
        if pu_specs is not None:
            pairs = [(s["protection"], s["utility"]) for s in pu_specs if s.get("experiment", exp) == exp]
        else:
            asr = asr_columns(e)
            utils = [c for c in cols if c.startswith("metric.") and any(h in c.lower() for h in UTILITY_HINTS)]
            pairs = [(asr[0], u) for u in utils] if asr else []
        for prot, util in pairs:
            if prot in e.columns and util in e.columns:
                p = plot_privacy_utility(e, prot, util, out / f"pu-{_slug(exp)}-{_slug(util)}.png",
                                         f"{exp}: privacy-utility")
                written += [p] if p else []
        for col in list_columns(e):
            p = plot_histograms(e, col, out / f"hist-{_slug(exp)}-{_slug(col)}.png", f"{exp}: {col}")
            written += [p] if p else []
    return written
