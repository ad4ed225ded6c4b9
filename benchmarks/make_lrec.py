"""Run the LREC-COLING 2024 comparative-analysis sweep and write its table into docs/RESULTS.md.

    python benchmarks/make_lrec.py sweeps/lrec.yaml                 # run (finished cells reused), write table
    python benchmarks/make_lrec.py sweeps/lrec.yaml --only tem      # run one mechanism's cells, then the table
    python benchmarks/make_lrec.py sweeps/lrec.yaml --table-only    # rewrite the table from the results

``--only NAME`` (repeatable) selects a mechanism name or variant label in every experiment of the sweep;
the new rows merge with the cells already in OUT/results.parquet (the bench keeps one part per cell).
The table (one row per mechanism variant and ε) goes between ``<!-- lrec:begin -->`` and
``<!-- lrec:end -->`` of ``--doc``; the hand-written text around the markers stays.
Measures: docs/algorithms.md ("LREC-COLING 2024 measures") and dptext.metrics.deniability.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

BEGIN, END = "<!-- lrec:begin -->", "<!-- lrec:end -->"
SENT, TOPIC = "lrec-sentiment", "lrec-topic"
# (header, experiment, column); PD and PP come from the sentiment cells' documents
COLUMNS = [
    ("PP sent.", SENT, "metric.perturbation_percentage"),
    ("PP topic", TOPIC, "metric.perturbation_percentage"),
    ("N_w/n", SENT, "metric.plausible_deniability.n_w_rate"),
    ("S_w", SENT, "metric.plausible_deniability.s_w_mean"),
    ("CS sent.", SENT, "metric.downstream.cosine"),
    ("CS topic", TOPIC, "metric.downstream.cosine"),
    ("Acc sent. (all)", SENT, "metric.downstream.all"),
    ("Acc sent. (test)", SENT, "metric.downstream.test"),
    ("Acc topic (all)", TOPIC, "metric.downstream.all"),
    ("Acc topic (test)", TOPIC, "metric.downstream.test"),
]


# The paper's published numbers (Meisenbacher et al., LREC-COLING 2024), printed in a table of their own
# below ours: rows of (mechanism, ε, {header from COLUMNS or the paper's own: value}). Empty: this offline
# session could not read the paper's tables (docs/RESULTS.md says so); fill from the paper, never guess.
PAPER_SOURCE = "Meisenbacher et al., LREC-COLING 2024 (IMDb sentiment, AG News topic, GloVe)"
PAPER_ROWS: list[tuple[str, float, dict]] = []


def paper_table() -> str:
    if not PAPER_ROWS:
        return (f"The paper's table ({PAPER_SOURCE}): not reproduced here; its numbers could not be read "
                "offline. Fill `PAPER_ROWS` in benchmarks/make_lrec.py from the paper.")
    heads = list(dict.fromkeys(h for _, _, vals in PAPER_ROWS for h in vals))
    lines = [f"The paper's numbers ({PAPER_SOURCE}), as published:", "",
             "| mechanism (paper) | ε | " + " | ".join(heads) + " |", "|---" * (len(heads) + 2) + "|"]
    for mech, eps, vals in PAPER_ROWS:
        lines.append(f"| {mech} | {eps:g} | " + " | ".join(_fmt(vals.get(h)) for h in heads) + " |")
    return "\n".join(lines)


def _fmt(v) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.3f}"


def table(df) -> str:
    """Markdown: one row per (variant, ε) in the sweep's order, means over seeds; a clean reference row."""
    import pandas as pd

    df = df[df["status"].isin(["ok", "partial"])].copy()
    df["eps"] = pd.to_numeric(df["epsilon"], errors="coerce")
    keys = list(dict.fromkeys(zip(df["variant"], df["eps"].fillna(-1.0))))
    heads = ["mechanism", "ε"] + [h for h, _, _ in COLUMNS]
    lines = ["| " + " | ".join(heads) + " |", "|---" * len(heads) + "|"]
    clean = {exp: df.loc[df["experiment"] == exp, "metric.downstream.clean"].mean()
             if "metric.downstream.clean" in df else float("nan") for exp in (SENT, TOPIC)}
    row = ["none (clean text)", "–", "0.000", "0.000", "1.000", "1.000", "1.000", "1.000",
           _fmt(clean[SENT]), _fmt(clean[SENT]), _fmt(clean[TOPIC]), _fmt(clean[TOPIC])]
    lines.append("| " + " | ".join(row) + " |")
    for variant, eps in keys:
        cells = [variant, "–" if eps < 0 else f"{eps:g}"]
        for _, exp, col in COLUMNS:
            sel = df[(df["experiment"] == exp) & (df["variant"] == variant) & (df["eps"].fillna(-1.0) == eps)]
            cells.append(_fmt(float(sel[col].mean())) if col in sel and len(sel) else "–")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def splice(doc: Path, body: str) -> None:
    from dptext.errors import DPTextError

    text = doc.read_text(encoding="utf-8") if doc.is_file() else ""
    if BEGIN not in text or END not in text:
        raise DPTextError(f"{doc}: markers {BEGIN} / {END} not found; add them where the table goes")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    doc.write_text(f"{head}{BEGIN}\n{body}\n{END}{tail}", encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--out", type=Path, default=None, help="results folder (default results/<sweep name>)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="run only this mechanism (name or variant label) in every experiment; repeatable")
    ap.add_argument("--doc", type=Path, default=Path("docs/RESULTS.md"))
    ap.add_argument("--table-only", action="store_true", help="do not run; rewrite the table from the results")
    args = ap.parse_args(argv)

    from dptext.bench import run_sweep
    from dptext.bench.engine import merge_parts, part_path
    from dptext.bench.spec import load_sweep
    from dptext.errors import DPTextError

    try:
        sweep = load_sweep(args.sweep)
        out = args.out or Path("results") / sweep.name
        if not args.table_only:
            only = [f"{e}/{n}" for e in dict.fromkeys(c["experiment"] for c in sweep.cells) for n in args.only]
            summary = run_sweep(sweep, out, only=only or None, progress=True)
            print(f"{summary['cells']} cells: {summary['reused']} reused, {summary['computed']} computed "
                  f"(ok {summary['ok']}, partial {summary['partial']}, error {summary['error']}); "
                  f"wall {summary['wall_seconds']:.1f} s", file=sys.stderr)
        # the finished cells of this sweep file (also while a run is still going)
        df = merge_parts([part_path(out, c["cell_id"]) for c in sweep.cells]).to_pandas()
        if df.empty:
            raise DPTextError(f"no finished cell of {args.sweep} under {out}; run without --table-only first")
        body = table(df)
        wall = df["time.total"].sum() if "time.total" in df else float("nan")
        body += (f"\n\n{len(df)} of {len(sweep.cells)} cells; cell time {wall:.0f} s in all (sum over cells)."
                 "\n\n" + paper_table())
        splice(args.doc, body)
    except DPTextError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
