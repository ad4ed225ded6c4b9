"""Markdown tables from a results table, and splicing them into a document.

One table per (experiment, value column): rows are mechanism variants,
columns the ε grid (mean over seeds; ``± std`` when there are several), the
layout of the papers' tables. Where the sweep file lists a paper's published
numbers for that table (``papers:`` entries with ``experiment``, ``column``,
``source``, ``rows: {variant: {ε: value}}``), they are printed as rows
"variant: paper (source)" in the same table; a paper whose ε grid is unknown
gives ``columns: [labels]`` and ``rows: {variant: [values]}`` and gets its own
table right below ours. ``update_document`` replaces, between
``<!-- bench:tables:begin -->`` and ``<!-- bench:tables:end -->``, the sections
(``### experiment``) of the experiments in the results and keeps the others, so
a partial re-run updates only what it ran and the hand-written discussion
around the markers survives.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from dptext.bench.plots import value_columns
from dptext.errors import DPTextError

BEGIN, END = "<!-- bench:tables:begin -->", "<!-- bench:tables:end -->"


def _fmt(mean: float, std: float, n: int) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "–"
    digits = 1 if abs(mean) >= 100 else 3
    s = f"{mean:.{digits}f}"
    if n > 1 and std == std and std > 0:
        s += f" ± {std:.{digits}f}"
    return s


def _paper_rows(papers, exp: str, col: str) -> list[dict]:
    return [p for p in papers or [] if p.get("experiment") == exp and p.get("column") == col]


def table(df: pd.DataFrame, col: str, papers: list | None = None) -> str:
    d = df[df[col].notna()]
    if d.empty:
        return ""
    g = d.groupby(["variant", "epsilon"], dropna=False)[col].agg(["mean", "std", "count"]).reset_index()
    aligned = [p for p in papers or [] if isinstance(next(iter(p["rows"].values()), None), dict)]
    paper_eps = {float(e) for p in aligned for r in p["rows"].values() for e in r}
    eps = sorted({e for e in g["epsilon"] if e == e} | paper_eps)
    has_none = g["epsilon"].isna().any()
    heads = [f"ε={e:g}" for e in eps] + (["no ε"] if has_none else [])
    lines = ["| variant | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    for variant, sub in g.groupby("variant"):
        cells = []
        for e in eps:
            r = sub[sub["epsilon"] == e]
            cells.append(_fmt(*r[["mean", "std", "count"]].iloc[0]) if len(r) else "–")
        if has_none:
            r = sub[sub["epsilon"].isna()]
            cells.append(_fmt(*r[["mean", "std", "count"]].iloc[0]) if len(r) else "–")
        lines.append(f"| {variant} | " + " | ".join(cells) + " |")
    for p in aligned:
        for variant, vals in p["rows"].items():
            got = {float(k): v for k, v in vals.items()}
            cells = [_fmt(float(got[e]), float("nan"), 1) if e in got else "–" for e in eps]
            cells += ["–"] if has_none else []
            lines.append(f"| {variant}: paper ({p['source']}) | " + " | ".join(cells) + " |")
    out = "\n".join(lines)
    for p in papers or []:
        if p in aligned:
            continue
        heads = list(p.get("columns") or [])
        extra = ["| paper row | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
        for variant, vals in p["rows"].items():
            extra.append(f"| {variant} | " + " | ".join(_fmt(float(v), float("nan"), 1) for v in vals) + " |")
        out += f"\n\n{p['source']}" + (f" ({p['note']})" if p.get("note") else "") + ":\n\n" + "\n".join(extra)
    return out


def wide_table(df: pd.DataFrame, cols: list[str]) -> str:
    """Mechanisms without ε: one row per variant, one column per value column."""
    if not cols:
        return ""
    g = df.groupby("variant", sort=False)[cols].agg(["mean", "std", "count"])
    lines = ["| variant | " + " | ".join(f"`{c}`" for c in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for variant, r in g.iterrows():
        lines.append(f"| {variant} | " + " | ".join(_fmt(r[(c, 'mean')], r[(c, 'std')], r[(c, 'count')])
                                                   for c in cols) + " |")
    return "\n".join(lines)


def tables_markdown(results, figures: list[Path] | None = None, rel_to: Path | None = None,
                    papers: list | None = None) -> str:
    df = pd.read_parquet(results) if not isinstance(results, pd.DataFrame) else results
    df = df.copy()
    df["epsilon"] = pd.to_numeric(df["epsilon"], errors="coerce")
    parts = []
    for exp in df["experiment"].unique():  # in the sweep's order
        e = df[df["experiment"] == exp]
        parts.append(f"### {exp}\n")
        status = e["status"].value_counts().to_dict()
        parts.append("cells: " + ", ".join(f"{k} {v}" for k, v in sorted(status.items())) + "\n")
        missing = sorted({m for ms in e["missing"].fillna("") for m in ms.split("; ") if m})
        if missing:
            parts.append("not run (part missing): " + "; ".join(missing) + "\n")
        if e["epsilon"].isna().all():
            t = wide_table(e, value_columns(e))
            parts.append(f"{t}\n" if t else "")
        else:
            for col in value_columns(e):
                t = table(e, col, _paper_rows(papers, exp, col))
                if t:
                    parts.append(f"**{col}**\n\n{t}\n")
        timing = e["time.total"].agg(["sum", "max"]) if "time.total" in e else None
        if timing is not None:
            parts.append(f"time: {timing['sum']:.1f} s in all, slowest cell {timing['max']:.1f} s\n")
        if figures:
            for f in figures:
                if f"-{_exp_slug(exp)}-" in f.name:
                    rel = f.relative_to(rel_to) if rel_to else f
                    parts.append(f"![{f.stem}]({rel.as_posix()})\n")
    return "\n".join(parts)


def _exp_slug(exp: str) -> str:
    from dptext.bench.plots import _slug

    return _slug(exp)


def _sections(text: str) -> list[tuple[str | None, str]]:
    """``(experiment, text)`` blocks split at ``### `` headers (``None`` for text before the first)."""
    out: list[tuple[str | None, str]] = []
    name, buf = None, []
    for line in text.splitlines(keepends=True):
        if line.startswith("### "):
            if buf:
                out.append((name, "".join(buf)))
            name, buf = line[4:].strip(), [line]
        else:
            buf.append(line)
    if buf:
        out.append((name, "".join(buf)))
    return out


def update_document(doc: str | Path, tables: str) -> None:
    p = Path(doc)
    text = p.read_text(encoding="utf-8") if p.exists() else f"# Results\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text or END not in text:
        raise DPTextError(f"{p}: markers {BEGIN} / {END} not found; add them where the tables go")
    head, rest = text.split(BEGIN, 1)
    old, tail = rest.split(END, 1)
    new = dict(s for s in _sections(tables) if s[0] is not None)
    merged, done = [], set()
    for name, block in _sections(old.strip("\n") + "\n"):
        if name is None:
            continue
        merged.append(new.get(name, block).rstrip("\n") + "\n")
        done.add(name)
    merged += [block.rstrip("\n") + "\n" for name, block in _sections(tables) if name is not None and name not in done]
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(f"{head}{BEGIN}\n" + "\n".join(merged) + f"{END}{tail}", encoding="utf-8")
