"""``dptext sanitize-corpus``: sanitize a whole JSONL/Parquet corpus (engine local or ray)."""

from __future__ import annotations

from typing import Optional

import typer

from dptext.commands._common import print_json, progress_bar


def sanitize_corpus(
    input: str = typer.Argument(..., help="Input corpus: .jsonl (one JSON object per line) or .parquet."),
    output: str = typer.Argument(..., help="Output corpus, same format as the input."),
    mechanism: str = typer.Option(..., "--mechanism", "-m", help="Mechanism name (see `dptext mechanisms`)."),
    epsilon: str = typer.Option(..., "--epsilon", "-e", help="Privacy parameter ε > 0."),
    text_field: str = typer.Option("text", "--text-field", help="Field holding the document text."),
    report_field: str = typer.Option("privacy_report", "--report-field",
                                     help="New field/column for each document's privacy report."),
    engine: str = typer.Option("local", "--engine", help="local (worker processes) | ray (Ray Data)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j",
                                          help="Worker processes / Ray actors (default: CPU count)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address",
                                              help="Existing Ray cluster (default: start a local Ray)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Fixed seed (experiments only; default OS entropy)."),
    rejects: Optional[str] = typer.Option(None, "--rejects",
                                          help="Malformed records go here (default OUTPUT.rejects.jsonl)."),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    oov: str = typer.Option("drop", "--oov", help="Out-of-vocabulary units: drop | random | keep."),
    digits: str = typer.Option("random", "--digits", help="Digit-only units: random | keep | vocab."),
    shard_size: int = typer.Option(256, "--shard-size", help="Documents per task sent to a worker."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
):
    """Sanitize every document of a corpus; other fields are kept, a privacy report is added per document.

    Each document draws its noise from its own stream (child i of SeedSequence(seed)), so a seeded run gives the same output on any engine and any number of workers. Malformed records are reported with their line number and written to the rejects file (raw text: keep it private). Prints a JSON summary.
    """
    from dptext.batch import sanitize_corpus as run

    with progress_bar(not quiet) as prog:
        summary = run(input, output, mechanism=mechanism, epsilon=epsilon, space=space,
                      options={"oov": oov, "digits": digits}, text_field=text_field, report_field=report_field,
                      engine=engine, workers=workers, ray_address=ray_address, seed=seed, rejects=rejects,
                      shard_size=shard_size, progress=prog)
    print_json(summary)


def register(app: typer.Typer) -> None:
    app.command("sanitize-corpus")(sanitize_corpus)
