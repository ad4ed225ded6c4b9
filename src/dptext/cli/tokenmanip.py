"""``dptext cape-calibrate`` and ``dptext context-transition`` (docs/algorithms.md, "Cape" and "Token manipulation").

``dptext perturb`` and ``dptext transition`` work for every mechanism of this
area with its defaults (``transition`` treats the unit as a one-unit prompt).
``context-transition`` shows the row of a context-dependent mechanism (Cape,
Stencil) for a unit inside a prompt, and takes mechanism parameters as
``--param name=value``.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
import typer

from dptext.cli._common import MAX_INPUT_BYTES, print_json, print_top, progress_bar, read_text_arg
from dptext.errors import DPTextError
from dptext.text import decode_text


MIN_SAVE_UNITS = 200  # a saved B becomes every later run's default: calibrate it on real text


def _read_sample(path: str) -> str:
    """The calibration sample: a UTF-8 text file, or ``-`` for stdin."""
    if path == "-":
        return read_text_arg("-", what="calibration sample (stdin)")
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"calibration file {path!r} does not exist or is not a file (give a path, or - for stdin)")
    if p.stat().st_size > MAX_INPUT_BYTES:
        raise DPTextError(f"calibration file {path!r} is larger than {MAX_INPUT_BYTES // 2**20} MiB")
    return read_text_arg(decode_text(p.read_bytes(), source=path), what=f"calibration file {path!r}")


def cape_calibrate(
    file: Optional[str] = typer.Argument(None, metavar="[FILE]",
                                         help="Text file to calibrate on, or - for stdin (default: built-in sample)."),
    space: str = typer.Option("smollm2", "--space", help="Space Cape will run on."),
    quantile: float = typer.Option(1.0, "--quantile", help="Quantile of |logit| used as B (1 = maximum)."),
    save: bool = typer.Option(False, "--save", help=f"Make this B Cape's default for this device and space "
                                                    f"(needs a FILE with at least {MIN_SAVE_UNITS} units)."),
    as_json: bool = typer.Option(False, "--json"),
):
    """Calibrate Cape's logit clip bound B on a sample text file (docs/algorithms.md, "Cape")."""
    from dptext import cache
    from dptext.mechanisms.cape import calibrate_clip, calibration_units, default_device, saved_clip_path
    from dptext.spaces import get_space

    if not 0 < quantile <= 1:
        raise DPTextError(f"invalid --quantile {quantile}: must be in (0, 1]")
    if save and file is None:
        raise DPTextError("--save needs a calibration FILE (or - for stdin); the built-in sample is already the "
                          "default")
    sample = None if file is None else [_read_sample(file)]
    with progress_bar() as prog:
        sp = get_space(space, progress=prog)
    n_units = calibration_units(sp, sample)
    if save and n_units < MIN_SAVE_UNITS:
        raise DPTextError(f"refusing to save: the calibration sample has {n_units} units of the {sp.name} "
                          f"vocabulary; --save needs at least {MIN_SAVE_UNITS}")
    device = default_device()
    b = calibrate_clip(device, sp, sample, quantile=quantile)
    if save:
        cache.save_npy(saved_clip_path(device, sp), np.asarray(b))
    if as_json:
        print_json({"clip": b, "space": sp.name, "device": device.name, "quantile": quantile, "units": n_units,
                    "saved": save})
    else:
        typer.echo(f"Cape clip bound B = {b:.6f} (quantile {quantile:g} of |logit| over {n_units} units of "
                   f"{sp.name}, device {device.name})")
        if save:
            typer.echo(f"saved as Cape's default clip for {device.name} on {sp.name} ({n_units} units)", err=True)


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
    from dptext.cli._common import mechanism_spec

    ctx = read_text_arg(context, what="context")
    spec = mechanism_spec(mechanism, epsilon, space=space, params=param)
    # capabilities are declared on the class: checked before building (which may load a model)
    if not spec.cls.contextual:
        raise DPTextError(f"mechanism {mechanism!r} does not depend on context; use `dptext transition`")
    if not spec.cls.per_unit:  # a document-level mechanism (DP-Prompt) has no row per unit
        raise DPTextError(f"mechanism {mechanism!r} rewrites whole documents: it has no row per unit")
    with progress_bar() as prog:
        mech = spec.build(progress=prog)
    row = mech.transition(unit, context=ctx, position=position)
    print_top(row, mech.space.units, top, as_json)


def register(app: typer.Typer) -> None:
    app.command("cape-calibrate")(cape_calibrate)
    app.command("context-transition")(context_transition)
