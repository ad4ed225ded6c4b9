"""``dptext data`` (evaluation datasets) and ``dptext audit`` (privacy audit, docs/algorithms.md "Audit")."""

from __future__ import annotations

import math
from typing import List, Optional

import click
import typer

from dptext.cli._common import print_json, progress_bar
from dptext.errors import DPTextError, check_epsilon


class AuditFailed(click.ClickException):
    """The audit found the claim violated or the sampler off its transition (exit status 1)."""

    exit_code = 1


def data(
    name: Optional[str] = typer.Argument(None, help="Show one dataset (a name, or a .txt / .jsonl file)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the private/shadow/train/test split."),
    show: int = typer.Option(0, "--show", help="Also print the first N items of the private split."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
):
    """List the evaluation datasets with their sizes and split sizes."""
    from dptext.data import DESCRIPTIONS, get_dataset, list_datasets

    if show < 0:
        raise DPTextError(f"invalid --show {show}: must be >= 0")
    names = [name] if name else list_datasets()
    infos = []
    for n in names:
        ds = get_dataset(n)
        info = ds.info(seed)
        info["description"] = DESCRIPTIONS.get(n.lower(), info["source"])
        if show:
            priv = ds.split("private", seed=seed)
            info["examples"] = [{"text": priv.texts[i],
                                 **({"label": priv.labels[i]} if priv.labels else {}),
                                 **({"reference": priv.references[i]} if priv.references else {})}
                                for i in range(min(show, len(priv)))]
        infos.append(info)
    if as_json:
        print_json(infos if name is None else infos[0])
        return
    for info in infos:
        sp = " ".join(f"{k}={v}" for k, v in info["splits"].items())
        typer.echo(f"{info['name']:8s} {info['kind']:15s} {info['size']:6d} items  ({sp})  {info['description']}")
        if "labels" in info:
            typer.echo("         labels: " + ", ".join(f"{k}={v}" for k, v in info["labels"].items()))
        for ex in info.get("examples", []):
            typer.echo("         - " + " | ".join(str(v) for v in ex.values()))


def audit(
    mechanism: str = typer.Option(..., "--mechanism", "-m", help="Mechanism name (see `dptext mechanisms`)."),
    epsilon: str = typer.Option(..., "--epsilon", "-e", help="Privacy parameter ε > 0."),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    pairs: int = typer.Option(200, "--pairs", help="Input pairs to compare (per scope)."),
    samples: int = typer.Option(20000, "--samples", help="Sampler draws per unit for the goodness-of-fit test."),
    gof_units: int = typer.Option(3, "--gof-units", help="Units whose sampler is checked against transition."),
    tolerance: float = typer.Option(1e-6, "--tolerance", help="Allowed excess of the audited value over the claim."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Fixed seed (default OS entropy)."),
    reference: bool = typer.Option(False, "--reference",
                                   help="Also compare the sampler with the literal reference sampler of the paper "
                                        "(two-sample chi-square on the checked units)."),
    reference_samples: int = typer.Option(3000, "--reference-samples", help="Draws per unit for --reference."),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    as_json: bool = typer.Option(False, "--json", help="Print the full report as JSON."),
):
    """Audit a mechanism's privacy claim from its own rows; exit 1 when it fails (docs/algorithms.md, "Audit").

    Checks the in-scope log-ratio against the claim, the unrestricted worst case where the claim is
    finite over all inputs, the sampler against its rows, and with --reference the sampler against
    the paper's algorithm transcribed literally."""
    from dptext.cli._common import mechanism_spec
    from dptext.privacy.audit import audit_mechanism, require_per_unit

    eps = check_epsilon(epsilon)
    if pairs < 1 or samples < 1 or gof_units < 0 or reference_samples < 1:
        raise DPTextError("--pairs, --samples and --reference-samples must be >= 1 and --gof-units >= 0")
    spec = mechanism_spec(mechanism, eps, space=space, seed=seed, params=param)
    if not tolerance >= 0 or math.isinf(tolerance):
        raise DPTextError(f"invalid --tolerance {tolerance}: must be a finite number >= 0")
    require_per_unit(spec.cls)  # checked before building (which may load a model)
    with progress_bar() as prog:
        mech = spec.build(progress=prog)
        if reference:
            from dptext.privacy.fidelity import has_reference

            if not has_reference(mech):
                raise DPTextError(f"--reference: {mechanism} has no reference sampler (it is deterministic or has "
                                  "no published stochastic algorithm)")
        result = audit_mechanism(mech, pairs=pairs, samples=samples, gof_units=gof_units, tolerance=tolerance,
                                 seed=seed, progress=prog, reference=reference,
                                 reference_samples=reference_samples)
    if as_json:
        print_json(result.to_dict())
    else:
        typer.echo(result.summary())
    if not result.passed:
        why = [w for ok, w in ((result.claim_holds, "the claim is violated"),
                               (result.gof_passed, "sampler disagrees with transition"),
                               (result.fidelity_passed, "sampler disagrees with the reference algorithm")) if not ok]
        raise AuditFailed("audit failed: " + "; ".join(why))


def register(app: typer.Typer) -> None:
    app.command("data")(data)
    app.command("audit")(audit)
