"""``dptext cape-calibrate`` and ``dptext context-transition`` (SPEC 1.4, 1.5).

``dptext perturb`` and ``dptext transition`` work for every mechanism of this
area with its defaults (``transition`` treats the unit as a one-unit prompt).
``context-transition`` shows the row of a context-dependent mechanism (Cape,
Stencil) for a unit inside a prompt, and takes mechanism parameters as
``--param name=value``.
"""

from __future__ import annotations

from typing import List, Optional

import numpy as np
import typer

from dptext.commands._common import parse_params, print_json, print_top, progress_bar, read_text_arg
from dptext.errors import DPTextError


def cape_calibrate(
    text: Optional[str] = typer.Argument(None, help="Sample text, or - for stdin (default: built-in sample)."),
    space: str = typer.Option("smollm2", "--space", help="Space Cape will run on."),
    quantile: float = typer.Option(1.0, "--quantile", help="Quantile of |logit| used as B (1 = maximum)."),
    save: bool = typer.Option(False, "--save", help="Make this B Cape's default for this device and space."),
    as_json: bool = typer.Option(False, "--json"),
):
    """Calibrate Cape's logit clip bound B on sample text (SPEC 1.4)."""
    from dptext import cache
    from dptext.mechanisms.cape import calibrate_clip, default_device, saved_clip_path
    from dptext.spaces import get_space

    if not 0 < quantile <= 1:
        raise DPTextError(f"invalid --quantile {quantile}: must be in (0, 1]")
    sample = None if text is None else [read_text_arg(text, what="sample text")]
    with progress_bar() as prog:
        sp = get_space(space, progress=prog)
    device = default_device()
    b = calibrate_clip(device, sp, sample, quantile=quantile)
    if save:
        cache.save_npy(saved_clip_path(device, sp), np.asarray(b))
    if as_json:
        print_json({"clip": b, "space": sp.name, "device": device.name, "quantile": quantile, "saved": save})
    else:
        typer.echo(f"{b:.6f}")


def context_transition(
    unit: str = typer.Argument(..., help="The unit, as it appears in the context."),
    context: str = typer.Option(..., "--context", "-c", help="The prompt holding the unit (- for stdin)."),
    position: Optional[int] = typer.Option(None, "--position", help="Piece index of the unit (default: first)."),
    mechanism: str = typer.Option("cape", "--mechanism", "-m"),
    epsilon: str = typer.Option("3", "--epsilon", "-e"),
    space: Optional[str] = typer.Option(None, "--space"),
    param: List[str] = typer.Option([], "--param", "-p", help="Mechanism parameter name=value (repeatable)."),
    top: int = typer.Option(10, "--top", "-k"),
    as_json: bool = typer.Option(False, "--json"),
):
    """The K most likely outputs of UNIT inside a prompt, Pr(y | x, context)."""
    from dptext.commands.core import _mechanism

    ctx = read_text_arg(context, what="context")
    mech = _mechanism(mechanism, epsilon, space, None, **parse_params(param))
    import inspect

    if "context" not in inspect.signature(mech.transition).parameters:
        raise DPTextError(f"mechanism {mechanism!r} does not depend on context; use `dptext transition`")
    row = mech.transition(unit, context=ctx, position=position)
    print_top(row, mech.space.units, top, as_json)


def register(app: typer.Typer) -> None:
    app.command("cape-calibrate")(cape_calibrate)
    app.command("context-transition")(context_transition)
