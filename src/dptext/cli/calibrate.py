"""``dptext calibrate-rantext SPACE``: fit RANTEXT's noise curve Z(ε) for a space (docs/algorithms.md).

Prints the fitted ``a, b, c, g``, then per target ε the target probability
``Pr(|C_r|/|V| ≤ 0.05)`` for the calibration unit, the Z that meets it exactly
and the probability the fitted curve achieves. The fit is cached with the
space; RANTEXT with ``noise="calibrated"`` (the default) uses the fit for the
unit "happy" (``-p noise_unit=WORD`` selects another calibrated unit).
"""

from __future__ import annotations

import typer

from dptext.cli._common import print_json, progress_bar


def calibrate_rantext(
    space: str = typer.Argument(..., help="Embedding space to calibrate (see `dptext spaces`)."),
    unit: str = typer.Option("happy", "--unit", help="Unit whose |C_r|/|V| the targets are about."),
    as_json: bool = typer.Option(False, "--json", help="Print the calibration as JSON."),
):
    """Fit RANTEXT's noise divisor Z(ε) = a·ln(b·ε + c) + g for SPACE (InferDPT's targets)."""
    from dptext.mechanisms.calibration import noise_calibration
    from dptext.spaces import get_space

    with progress_bar() as prog:
        sp = get_space(space, progress=prog)
    cal = noise_calibration(sp, unit).to_dict()
    if as_json:
        print_json(cal)
        return
    typer.echo(f"{cal['space']}: unit {cal['unit']!r}, |C_r|/|V| <= {cal['ratio']} when d* <= {cal['threshold']:.6g}")
    typer.echo(f"Z(eps) = {cal['a']:.6g} * ln({cal['b']:.6g} * eps + {cal['c']:.6g}) + {cal['g']:.6g}"
               f"   (Z = eps where b*eps + c <= 0)")
    typer.echo(f"{'eps':>6s} {'target':>8s} {'Z exact':>9s} {'achieved':>9s}")
    for t in cal["targets"]:
        typer.echo(f"{t['epsilon']:6g} {100 * t['target']:7.2f}% {t['Z']:9.4f} {100 * t['achieved']:8.2f}%")


def register(app: typer.Typer) -> None:
    app.command("calibrate-rantext")(calibrate_rantext)
