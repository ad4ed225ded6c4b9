"""``dptext perturb``, ``dptext transition``, ``dptext spaces``, ``dptext mechanisms``."""

from __future__ import annotations

from typing import List, Optional

import typer

from dptext.commands._common import parse_params, print_json, print_top, progress_bar, read_text_arg
from dptext.errors import DPTextError, check_epsilon


def _mechanism(name: str, epsilon: str, space: Optional[str], seed: Optional[int], **kw):
    from dptext.mechanisms import get_mechanism

    eps = check_epsilon(epsilon)
    with progress_bar() as prog:
        return get_mechanism(name, epsilon=eps, space=space, seed=seed, progress=prog, **kw)


def perturb(
    text: Optional[str] = typer.Argument(None, help="Text to perturb, or - for stdin (default)."),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m", help="Mechanism name (see `dptext mechanisms`)."),
    epsilon: str = typer.Option("3", "--epsilon", "-e", help="Privacy parameter ε > 0."),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Fixed seed (experiments only; default OS entropy)."),
    oov: str = typer.Option("drop", "--oov", help="Out-of-vocabulary units: drop | random | keep."),
    digits: str = typer.Option("random", "--digits", help="Digit-only units: random | keep | vocab."),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
):
    """Perturb every unit of TEXT with a DP mechanism and print the result."""
    doc = read_text_arg(text, what="text")
    mech = _mechanism(mechanism, epsilon, space, seed, oov=oov, digits=digits, **parse_params(param))
    result = mech.perturb(doc)
    if as_json:
        print_json(result.to_dict())
    else:
        typer.echo(result.text)


def transition(
    unit: str = typer.Argument(..., help="An input unit of the mechanism's vocabulary."),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m"),
    epsilon: str = typer.Option("3", "--epsilon", "-e"),
    space: Optional[str] = typer.Option(None, "--space"),
    top: int = typer.Option(10, "--top", "-k", help="How many outputs to list."),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    as_json: bool = typer.Option(False, "--json"),
):
    """The K most likely outputs of UNIT with their probabilities Pr(y|x)."""
    if top < 1:
        raise DPTextError(f"invalid --top {top}: must be >= 1")
    mech = _mechanism(mechanism, epsilon, space, None, **parse_params(param))
    print_top(mech.transition(unit), mech.space.units, top, as_json)


def spaces(
    build: Optional[str] = typer.Argument(None, help="Build (or load) this space and report on it."),
):
    """List embedding spaces, or build/cache one with a progress bar."""
    from dptext.spaces import get_space, list_spaces
    from dptext.spaces.registry import SPACES

    if build is None:
        for name in list_spaces():
            s = SPACES[name]()
            mark = "cached" if s.is_cached() else "not built"
            typer.echo(f"{name:14s} {mark:10s} {s.description}")
        return
    with progress_bar() as prog:
        s = get_space(build, progress=prog)
    how = f"built in {s.build_seconds:.1f}s" if s.build_seconds is not None else f"loaded in {s.load_seconds:.2f}s"
    typer.echo(f"{s.name}: {s.size} units x {s.dim} dims, {how}, cache {s.cache_path}")


def mechanisms():
    """List registered mechanisms."""
    from dptext.mechanisms import MECHANISMS

    for name in sorted(MECHANISMS):
        cls = MECHANISMS[name]
        doc = (cls.__doc__ or cls.__module__ and __import__(cls.__module__, fromlist=["x"]).__doc__ or "").strip()
        typer.echo(f"{name:18s} space={cls.default_space:17s} {doc.splitlines()[0] if doc else ''}")


def register(app: typer.Typer) -> None:
    app.command()(perturb)
    app.command()(transition)
    app.command()(spaces)
    app.command()(mechanisms)
