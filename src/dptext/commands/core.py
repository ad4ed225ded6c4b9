"""``dptext perturb``, ``dptext transition``, ``dptext spaces``, ``dptext mechanisms``."""

from __future__ import annotations

from typing import List, Optional

import typer

from dptext.commands._common import (
    EPSILON_HELP,
    POLICY_HELP,
    mechanism_spec,
    print_json,
    print_top,
    privacy_policy,
    progress_bar,
    read_text_arg,
    unit_summary,
)


def perturb(
    text: Optional[str] = typer.Argument(None, help="Text to perturb, or - for stdin (default)."),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m", help="Mechanism name (see `dptext mechanisms`)."),
    epsilon: float = typer.Option(3.0, "--epsilon", "-e", help=EPSILON_HELP),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0,
                                       help="Fixed seed >= 0 (experiments only; default OS entropy)."),
    oov: str = typer.Option("drop", "--oov", help="Out-of-vocabulary units: drop | random | keep."),
    digits: str = typer.Option("random", "--digits", help="Digit-only units: random | keep | vocab."),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    policy: Optional[str] = typer.Option(None, "--policy", help=POLICY_HELP),
    entity_epsilon: Optional[float] = typer.Option(None, "--entity-epsilon",
                                                   help="ε for detected entities under --policy tiered."),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
):
    """Perturb every unit of TEXT with a DP mechanism and print the result.

    A one-line summary (units perturbed, kept, dropped) goes to stderr.
    """
    spec = mechanism_spec(mechanism, epsilon, space=space, seed=seed, oov=oov, digits=digits, params=param)
    pol = privacy_policy(policy, entity_epsilon)
    doc = read_text_arg(text, what="text")
    if pol is None:
        with progress_bar() as prog:
            mech = spec.build(progress=prog)
        result = mech.perturb(doc)
        out_text, counts, payload = result.text, result.counts(), result.to_dict()
    else:
        from dptext.pipeline import Sanitizer, Segment

        with progress_bar() as prog:
            san = Sanitizer(spec, policy=pol, progress=prog)
        out = san.sanitize([Segment(doc, private=True)])
        out_text, counts = out.texts[0], dict(out.report.get("units", {}))
        payload = {"text": out_text, "units": out.units(0), "privacy": out.report}
    if as_json:
        print_json(payload)
    else:
        typer.echo(out_text)
    if not quiet and not as_json:
        typer.echo(unit_summary(counts, oov), err=True)


def transition(
    unit: str = typer.Argument(..., help="An input unit of the mechanism's vocabulary."),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m"),
    epsilon: float = typer.Option(3.0, "--epsilon", "-e", help=EPSILON_HELP),
    space: Optional[str] = typer.Option(None, "--space"),
    top: int = typer.Option(10, "--top", "-k", min=1, help="How many outputs to list."),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    as_json: bool = typer.Option(False, "--json"),
):
    """The K most likely outputs of UNIT with their probabilities Pr(y|x)."""
    spec = mechanism_spec(mechanism, epsilon, space=space, params=param)
    with progress_bar() as prog:
        mech = spec.build(progress=prog)
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
