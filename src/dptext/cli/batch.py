"""``dptext sanitize-corpus``: sanitize a whole JSONL/Parquet corpus (engine local or ray)."""

from __future__ import annotations

from typing import Optional

import typer

from dptext.cli._common import (
    ENTITY_EPSILON_HELP,
    ENTITY_TYPES_HELP,
    EPSILON_HELP,
    POLICY_HELP,
    WORDLIST_HELP,
    policy_settings,
    print_json,
    progress_bar,
)


def sanitize_corpus(
    input: str = typer.Argument(..., help="Input corpus: .jsonl (one JSON object per line) or .parquet."),
    output: str = typer.Argument(..., help="Output corpus, same format as the input."),
    mechanism: str = typer.Option(..., "--mechanism", "-m", help="Mechanism name (see `dptext mechanisms`)."),
    epsilon: float = typer.Option(..., "--epsilon", "-e", help=EPSILON_HELP),
    text_field: str = typer.Option("text", "--text-field", help="Field holding the document text."),
    report_field: str = typer.Option("privacy_report", "--report-field",
                                     help="New field/column for each document's privacy report."),
    engine: str = typer.Option("local", "--engine", help="local (worker processes) | ray (Ray actors)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-j", min=1,
                                          help="Worker processes / Ray actors (default: CPU count)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address",
                                              help="Existing Ray cluster (default: start a local Ray)."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0,
                                       help="Fixed seed >= 0 (experiments only; default OS entropy)."),
    rejects: Optional[str] = typer.Option(None, "--rejects",
                                          help="Malformed records go here (default OUTPUT.rejects.jsonl; mode 0600, "
                                               "created only when a record is rejected)."),
    strict: bool = typer.Option(False, "--strict", help="Exit with status 1 when any record is rejected."),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    oov: str = typer.Option("drop", "--oov", help="Out-of-vocabulary units: drop | random | keep."),
    digits: str = typer.Option("random", "--digits", help="Digit-only units: random | keep | vocab."),
    shard_size: Optional[int] = typer.Option(None, "--shard-size", min=1,
                                             help="Documents per task sent to a worker (default: 256 on the "
                                                  "local engine, 2048 on Ray, whose tasks carry fixed costs)."),
    policy: Optional[str] = typer.Option(None, "--policy", help=POLICY_HELP),
    entity_types: Optional[str] = typer.Option(None, "--entity-types", help=ENTITY_TYPES_HELP),
    entity_epsilon: Optional[float] = typer.Option(None, "--entity-epsilon", help=ENTITY_EPSILON_HELP),
    wordlist: Optional[str] = typer.Option(None, "--wordlist", help=WORDLIST_HELP),
    quiet: bool = typer.Option(False, "--quiet", "-q",
                               help="No progress (a bar on a terminal, a log line every few seconds otherwise)."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show the engine's own start-up messages (Ray)."),
):
    """Sanitize every document of a corpus; other fields are kept, a privacy report is added per document.

    Records are perturbed in blocks of 64 consecutive record positions; with --seed S, block b draws its noise from child b of SeedSequence(S) (documents in record order), and shards never split a block, so a seeded run gives the same output on any engine, shard size and worker count. Malformed records are reported with their line number and written to the rejects file (raw text: keep it private). Prints a JSON summary.
    """
    from dptext.batch import sanitize_corpus as run

    pol = policy_settings(policy, entity_types, entity_epsilon, wordlist)  # checked by the run before any work
    with progress_bar(not quiet) as prog:
        summary = run(input, output, mechanism=mechanism, epsilon=epsilon, space=space,
                      options={"oov": oov, "digits": digits}, text_field=text_field, report_field=report_field,
                      engine=engine, workers=workers, ray_address=ray_address, seed=seed, rejects=rejects,
                      shard_size=shard_size, progress=prog, verbose=verbose, **({"policy": pol} if pol else {}))
    print_json(summary)
    if strict and summary["rejected"]:
        typer.echo(f"dptext: error: {summary['rejected']} records rejected (--strict); "
                   f"they are in {summary['rejects_file']}", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("sanitize-corpus")(sanitize_corpus)
