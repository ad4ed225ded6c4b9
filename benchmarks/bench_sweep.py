"""Wall time of a sweep and of its slowest cells.

    python benchmarks/bench_sweep.py                       # sweeps/paper.yaml into a fresh temp folder
    python benchmarks/bench_sweep.py sweeps/smoke.yaml
    python benchmarks/bench_sweep.py --report results/paper  # timings of a finished run, no re-run

Target: the whole paper sweep in under 60 minutes on a 2-core machine.
Prints the sweep's wall time, the slowest cell, seconds per experiment and
the five slowest cells (their setup / perturbation / metric / attack split).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd


def report(results: Path, wall: float | None) -> None:
    df = pd.read_parquet(results)
    tot = df["time.total"].fillna(0)
    print(f"cells: {len(df)}  status: {df['status'].value_counts().to_dict()}")
    if wall is not None:
        print(f"sweep wall time: {wall:.1f} s ({wall / 60:.1f} min); target < 3600 s")
    print(f"sum of cell times: {tot.sum():.1f} s; slowest cell: {tot.max():.1f} s")
    print("\nseconds per experiment (sum / max cell):")
    for exp, e in df.groupby("experiment"):
        print(f"  {exp:22s} {e['time.total'].sum():8.1f} {e['time.total'].max():8.1f}  ({len(e)} cells)")
    print("\nslowest cells:")
    parts = [c for c in df.columns if c.startswith("time.") and c != "time.total"]
    for _, r in df.loc[tot.sort_values(ascending=False).index[:5]].iterrows():
        split = ", ".join(f"{c[5:]} {r[c]:.1f}" for c in parts if pd.notna(r[c]) and r[c] >= 0.5)
        print(f"  {r['time.total']:7.1f} s  {r['experiment']}/{r['variant']} ε={r['epsilon']}: {split}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", nargs="?", default="sweeps/paper.yaml")
    ap.add_argument("--out", help="output folder (default: a fresh temporary folder)")
    ap.add_argument("--report", help="only report the timings of a finished run in this folder")
    args = ap.parse_args(argv)
    if args.report:
        meta = Path(args.report) / "sweep.json"
        wall = None
        if meta.is_file():
            import json

            s = json.loads(meta.read_text())
            wall = s["wall_seconds"] if s.get("reused", 0) == 0 else None
        report(Path(args.report) / "results.parquet", wall)
        return 0
    from dptext.bench import run_sweep

    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    t0 = time.perf_counter()
    summary = run_sweep(args.sweep, out, progress=sys.stderr.isatty())
    wall = time.perf_counter() - t0
    print(f"sweep {summary['sweep']}: {summary['computed']} computed, {summary['reused']} reused -> {out}")
    report(Path(summary["results"]), wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
