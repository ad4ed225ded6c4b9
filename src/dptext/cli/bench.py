"""``dptext bench run SWEEP.yaml`` and ``dptext bench plot RESULTS``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from dptext.cli._common import print_json
from dptext.errors import DPTextError

bench_app = typer.Typer(no_args_is_help=True, help="Privacy-utility sweeps: run a sweep file, plot its results.")


@bench_app.command("run")
def run(
    sweep: Path = typer.Argument(..., help="Sweep file (YAML), e.g. sweeps/smoke.yaml."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Output folder (default results/<sweep name>)."),
    engine: str = typer.Option("local", "--engine", help="Where cells run: local (more engines may register)."),
    retry: bool = typer.Option(True, "--retry/--no-retry",
                               help="Re-run skipped/partial/failed cells (finished cells are always reused)."),
    progress: bool = typer.Option(True, "--progress/--no-progress",
                                  help="Progress on stderr: a bar on a terminal, periodic log lines otherwise."),
    only: Optional[list[str]] = typer.Option(None, "--only",
                                             help="Run only EXPERIMENT or EXPERIMENT/MECHANISM (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
):
    """Run (or resume) SWEEP; finished cells are never recomputed."""
    from dptext.bench import run_sweep

    summary = run_sweep(sweep, out, engine=engine, progress=progress, retry=retry, only=only or None)
    if as_json:
        print_json(summary)
        return
    typer.echo(f"{summary['sweep']}: {summary['cells']} cells, {summary['reused']} reused, {summary['computed']} "
               f"computed (ok {summary['ok']}, partial {summary['partial']}, skipped {summary['skipped']}, "
               f"error {summary['error']})")
    if summary["computed"]:
        typer.echo(f"wall {summary['wall_seconds']:.1f} s; slowest cell {summary['slowest_cell_seconds']:.1f} s "
                   f"({summary['slowest_cell']})")
    else:
        typer.echo(f"wall {summary['wall_seconds']:.1f} s; every cell reused, nothing computed")
    typer.echo(f"results: {summary['results']}")


@bench_app.command("plot")
def plot(
    results: Path = typer.Argument(..., help="results.parquet written by `dptext bench run` (or its folder)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", help="Folder for the PNG files (default: beside RESULTS)."),
    sweep: Optional[Path] = typer.Option(None, "--sweep", help="Sweep file whose `plots` section picks the pairs."),
    doc: Optional[Path] = typer.Option(None, "--doc", help="Markdown file whose bench:tables markers get the tables."),
):
    """Write privacy-utility curves, ASR-vs-ε plots, metric curves and histograms as PNG."""
    from dptext.bench.plots import plot_results
    from dptext.bench.report import tables_markdown, update_document
    from dptext.bench.spec import load_sweep

    if results.is_dir():
        results = results / "results.parquet"
    if not results.is_file():
        raise DPTextError(f"results file {str(results)!r} not found")
    spec = load_sweep(sweep) if sweep else _sweep_beside(results)
    plots = spec.plots if spec else None
    out = out or results.parent / "figures"
    try:
        paths = plot_results(results, out, plots)
    except (OSError, ValueError) as exc:
        raise DPTextError(f"cannot read {results}: {exc}") from None
    for p in paths:
        typer.echo(str(p))
    if doc is not None:
        update_document(doc, tables_markdown(results, paths, rel_to=doc.parent, papers=spec.papers if spec else None))
        typer.echo(f"tables written into {doc}")


def _sweep_beside(results: Path):
    """The sweep file recorded beside RESULTS (its plots and paper numbers), if it still exists."""
    meta = results.parent / "sweep.json"
    if meta.is_file():
        src = json.loads(meta.read_text()).get("source")
        if src and Path(src).is_file():
            from dptext.bench.spec import load_sweep

            return load_sweep(src)
    return None


def register(app: typer.Typer) -> None:
    app.add_typer(bench_app, name="bench")
