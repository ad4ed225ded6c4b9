"""``dptext policy detect``: show what a privacy policy would detect in a text (coverage check)."""

from __future__ import annotations

from typing import List, Optional

import typer

from dptext.cli._common import print_json, read_text_arg

policy_app = typer.Typer(no_args_is_help=True, help="Privacy policies: which spans of private text are perturbed.")


@policy_app.command("detect")
def detect(
    file: str = typer.Argument("-", help="Text file to scan, or - for stdin."),
    types: Optional[List[str]] = typer.Option(None, "--entity-types", "--type", "-t", help="Entity type to detect (repeat; default: "
                                              "the entities policy's types)."),
    wordlist: Optional[str] = typer.Option(None, "--wordlist", help="File of extra terms to detect, one per line."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: the spans and the policy description."),
):
    """Print each detected span: position, entity type, detector(s) and text."""
    from pathlib import Path

    from dptext.errors import DPTextError
    from dptext.privacy.detectors import WORDLIST_LABEL
    from dptext.privacy.policy import DEFAULT_TYPES, get_policy

    if file == "-":
        text = read_text_arg("-", what="standard input")
    else:
        try:
            text = read_text_arg(Path(file).read_text(encoding="utf-8"), what=file)
        except (OSError, UnicodeDecodeError) as exc:
            raise DPTextError(f"cannot read {file}: {getattr(exc, 'strerror', None) or exc}") from None
    chosen = list(types) if types else [t for t in DEFAULT_TYPES if t != WORDLIST_LABEL or wordlist]
    if wordlist and WORDLIST_LABEL not in chosen:
        chosen.append(WORDLIST_LABEL)
    pol = get_policy("entities", entity_types=chosen, wordlist=wordlist)
    spans = pol.detect(text)
    if as_json:
        print_json({"policy": pol.describe(),
                    "spans": [{"start": s.start, "end": s.end, "type": s.label, "detector": s.detector,
                               "text": text[s.start:s.end]} for s in spans]})
        return
    for s in spans:
        typer.echo(f"{s.start}-{s.end}\t{s.label}\t{s.detector}\t{text[s.start:s.end]!r}")
    covered = sum(len(text[s.start:s.end].strip()) for s in spans)
    typer.echo(f"{len(spans)} spans, {covered} of {len(text.strip())} characters; under the 'entities' policy "
               "everything else is sent in clear", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
