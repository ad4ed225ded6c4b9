"""``dptext perturb``, ``dptext transition``, ``dptext spaces``, ``dptext mechanisms``."""

from __future__ import annotations

from typing import List, Optional

import typer

from dptext.cli._common import (
    ENTITY_EPSILON_HELP,
    ENTITY_TYPES_HELP,
    EPSILON_HELP,
    POLICY_HELP,
    PRESET_HELP,
    WORDLIST_HELP,
    chosen_preset,
    mechanism_spec,
    policy_settings,
    print_json,
    print_top,
    privacy_policy,
    progress_bar,
    read_text_or_file,
    unit_summary,
    unrelated_output_warning,
)


def perturb(
    ctx: typer.Context,
    text: Optional[str] = typer.Argument(None, help="Text to perturb, or - for stdin (default); a file: --file."),
    file: Optional[str] = typer.Option(None, "--file", "-f", help="Perturb the contents of this UTF-8 file."),
    preset: Optional[str] = typer.Option(None, "--preset", help=PRESET_HELP),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m", help="Mechanism name (see `dptext mechanisms`)."),
    epsilon: float = typer.Option(3.0, "--epsilon", "-e", help=EPSILON_HELP),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0,
                                       help="Fixed seed >= 0 (experiments only; default OS entropy)."),
    oov: str = typer.Option("drop", "--oov", help="Out-of-vocabulary units: drop | random | keep."),
    digits: str = typer.Option("random", "--digits", help="Digit-only units: random | keep | vocab."),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    policy: Optional[str] = typer.Option(None, "--policy", help=POLICY_HELP),
    entity_types: Optional[str] = typer.Option(None, "--entity-types", help=ENTITY_TYPES_HELP),
    entity_epsilon: Optional[float] = typer.Option(None, "--entity-epsilon", help=ENTITY_EPSILON_HELP),
    wordlist: Optional[str] = typer.Option(None, "--wordlist", help=WORDLIST_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the full result as JSON."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No summary line on stderr."),
):
    """Perturb every unit of TEXT with a DP mechanism and print the result.

    A one-line summary goes to stderr: units perturbed (sent changed), sent unchanged (kept by a rule
    or drawn as themselves) and dropped.
    """
    chosen = chosen_preset(ctx, preset)
    if chosen is not None:  # the preset's spec and policy; seed, OOV and digit handling stay this command's
        spec, pol = chosen.spec.replace(seed=seed, oov=oov, digits=digits), chosen.build_policy(wordlist)
    else:
        spec = mechanism_spec(mechanism, epsilon, space=space, seed=seed, oov=oov, digits=digits, params=param)
        pol = privacy_policy(policy_settings(policy, entity_types, entity_epsilon, wordlist))
    doc = read_text_or_file(text, file, what="text")
    if pol is None:
        with progress_bar() as prog:
            mech = spec.build(progress=prog)
        warning = unrelated_output_warning(mech)
        if warning and not quiet:  # before the (slow) generation, so it is read first
            typer.echo(warning, err=True)
    if pol is None and not mech.has_keep_rule:
        result = mech.perturb(doc)
        out_text, counts, payload = result.text, result.counts(), result.to_dict()
    else:  # a policy, or a keep rule that must not keep a detected entity (policy.plan_for)
        from dptext.pipeline import Sanitizer, Segment

        if pol is None:
            san = Sanitizer(mech)
        else:
            with progress_bar() as prog:
                san = Sanitizer(spec, policy=pol, progress=prog)
        out = san.sanitize([Segment(doc, private=True)])
        out_text, counts = out.texts[0], dict(out.report.get("units", {}))
        payload = {"text": out_text, "units": out.units(0), "privacy": out.report}
    if chosen is not None:
        payload["preset"] = chosen.describe()
    if as_json:
        print_json(payload)
    else:
        typer.echo(out_text)
    if not quiet and not as_json:
        typer.echo(unit_summary(counts, oov), err=True)
        if chosen is not None:
            typer.echo(f"dptext: {chosen.line()}", err=True)


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
        rows = []
        for name in list_spaces():
            s = SPACES[name]()
            rows.append((name, "cached" if s.is_cached() else "not built", s.description))
        width = max(len(r[0]) for r in rows)  # the widest name sets the column (names outgrew a fixed 14)
        for name, mark, description in rows:
            typer.echo(f"{name:{width}s}  {mark:9s}  {description}")
        return
    with progress_bar() as prog:
        s = get_space(build, progress=prog)
        from dptext.mechanisms.calibration import describe_space

        calibration = describe_space(s, calibrate=True).get("calibration")  # a first calibration is announced too
    how = f"built in {s.build_seconds:.1f}s" if s.build_seconds is not None else f"loaded in {s.load_seconds:.2f}s"
    typer.echo(f"{s.name}: {s.size} units x {s.dim} dims, {how}, cache {s.cache_path}")
    typer.echo(calibration_line(calibration))


def calibration_line(cal: dict | None) -> str:
    """RANTEXT's noise curve for this space: Z(ε) = a·ln(b·ε + c) + g, and the achieved list-size targets."""
    if not cal:
        return "rantext noise: not calibrated"
    if "error" in cal:
        return f"rantext noise: not available ({cal['error']})"
    eps = "/".join(f"{t['epsilon']:g}" for t in cal.get("targets", []))
    got = "/".join(f"{100 * t['achieved']:.1f}" for t in cal.get("targets", []))
    want = "/".join(f"{100 * t['target']:.1f}" for t in cal.get("targets", []))
    c, g = cal["c"], cal["g"]
    return (f"rantext noise (calibrated on {cal.get('unit')!r}): Z(eps) = {cal['a']:.4g}*ln({cal['b']:.4g}*eps "
            f"{'-' if c < 0 else '+'} {abs(c):.4g}) {'-' if g < 0 else '+'} {abs(g):.4g}; "
            f"P(|C_r|/|V| <= {cal.get('ratio', 0.05):g}) at eps {eps}: {got} % (targets {want} %)")


def mechanisms():
    """List registered mechanisms (name, default embedding space, one line of description)."""
    from dptext.mechanisms import MECHANISMS

    rows = []
    for name in sorted(MECHANISMS):
        cls = MECHANISMS[name]
        doc = (cls.__doc__ or "").strip() or (__import__(cls.__module__, fromlist=["x"]).__doc__ or "").strip()
        # a mechanism without a default space (DP-Prompt rewrites with a language model) says so
        rows.append((name, cls.default_space or "none", doc.splitlines()[0] if doc else ""))
    width = max(len(r[0]) for r in rows)
    swidth = max(len(r[1]) for r in rows)
    for name, space, doc in rows:
        typer.echo(f"{name:{width}s}  space={space:{swidth}s}  {doc}".rstrip())


def register(app: typer.Typer) -> None:
    app.command()(perturb)
    app.command()(transition)
    app.command()(spaces)
    app.command()(mechanisms)
