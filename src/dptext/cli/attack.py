"""``dptext attack``: run one reconstruction attack against one mechanism (docs/algorithms.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import typer

from dptext.cli._common import print_json
from dptext.errors import DPTextError


def read_sentences(path: str, what: str) -> list[str]:
    """Non-empty lines of a UTF-8 text file."""
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"{what} file not found: {path}")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError:
        raise DPTextError(f"{what} file {path} is not valid UTF-8") from None
    out = [ln.strip() for ln in lines if ln.strip()]
    if not out:
        raise DPTextError(f"{what} file {path} has no text")
    return out


def dataset_sentences(name: str, seed: int) -> tuple[list[str], list[str]]:
    try:
        from dptext.data import get_dataset
    except ImportError:
        raise DPTextError("datasets are not available in this installation; use --private/--shadow") from None
    ds = get_dataset(name)
    split_seed = 0 if seed is None else seed
    return list(ds.split("private", seed=split_seed).texts), list(ds.split("shadow", seed=split_seed).texts)


def build_mechanism(name: str, epsilon: float, space: Optional[str], seed: Optional[int], corpus, progress):
    """The mechanism under attack; SANTEXT/CUSTEXT take their vocabulary from the defender's corpus."""
    from dptext.mechanisms.spec import MechanismSpec, declared_params, mechanism_class

    options = {"corpus": corpus} if "corpus" in declared_params(mechanism_class(name)) else {}
    return MechanismSpec(mechanism=name, epsilon=epsilon, space=space, seed=seed, options=options).build(
        progress=progress)


def _list_attacks(value: bool) -> None:
    """``--list``: every registered attack with the first line of its description, then exit."""
    if not value:
        return
    from dptext.attacks import ATTACKS

    width = max(len(name) for name in ATTACKS)
    for name in sorted(ATTACKS):
        cls = ATTACKS[name]
        doc = (cls.__doc__ or "").strip() or (__import__(cls.__module__, fromlist=["x"]).__doc__ or "").strip()
        typer.echo(f"{name:{width}s}  {doc.splitlines()[0] if doc else ''}".rstrip())
    raise typer.Exit()


def attack(
    mechanism: str = typer.Option(..., "--mechanism", "-m", help="Mechanism under attack (see `dptext mechanisms`)."),
    epsilon: str = typer.Option(..., "--epsilon", "-e", help="Privacy parameter of the mechanism."),
    attack_name: str = typer.Option("knn", "--attack", "-a", help="Attack name (see `dptext attack --list`)."),
    list_: bool = typer.Option(False, "--list", callback=_list_attacks, is_eager=True,
                               help="List the attacks and exit."),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="Dataset name: private/shadow splits."),
    private: Optional[str] = typer.Option(None, "--private", help="Text file, one private sentence per line."),
    shadow: Optional[str] = typer.Option(None, "--shadow", help="Text file, one shadow sentence per line."),
    n_units: Optional[int] = typer.Option(None, "--n-units", help="Attack at most this many units."),
    n_shadow: Optional[int] = typer.Option(None, "--n-shadow", help="Use at most this many shadow sentences."),
    targets: str = typer.Option("sampled", "--targets",
                                help="Attacked units: 'sampled' (units the mechanism sampled; for SANTEXT+ the "
                                     "sensitive ones, as paper 003) or 'all' (also units kept by policy)."),
    model: Optional[str] = typer.Option(None, "--model", help="LM for masked/llm/oracle attacks: .gguf path, "
                                        "HF masked-LM directory (masked), or chat backend spec/URL (llm)."),
    k: int = typer.Option(5, "--k", "-k", help="K of ASR@K."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Fixed seed (experiments only; default OS entropy)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
    progress: bool = typer.Option(True, "--progress/--no-progress",
                                  help="Progress on stderr: a bar on a terminal, periodic log lines otherwise."),
):
    """Attack a mechanism on private sentences; print ASR@1, ASR@K and protection level."""
    from dptext.attacks import attack_class
    from dptext.attacks.base import TARGETS
    from dptext.attacks.runner import run_attack
    from dptext.progress import progress_reporter as progress_display
    from dptext.progress import stage

    from dptext.mechanisms.spec import spec_epsilon

    eps = spec_epsilon(epsilon)
    if k < 1:
        raise DPTextError(f"invalid --k {k}: must be >= 1")
    for flag, value in (("--n-units", n_units), ("--n-shadow", n_shadow)):
        if value is not None and value < 1:
            raise DPTextError(f"invalid {flag} {value}: must be >= 1")
    if targets not in TARGETS:
        raise DPTextError(f"invalid --targets {targets!r}: choose {' or '.join(TARGETS)}")
    attack_cls = attack_class(attack_name)
    if attack_cls.needs_shadow and dataset is None and shadow is None:
        raise DPTextError(f"attack {attack_name!r} needs a shadow corpus: give --shadow FILE")
    if dataset is not None and private is not None:
        raise DPTextError("give either --dataset or --private, not both")
    if dataset is None and private is None:
        raise DPTextError("no private text: give --private FILE (and --shadow FILE) or --dataset NAME")
    options = {}
    if model is not None:
        if attack_cls.model_option is None:
            raise DPTextError(f"--model does not apply to attack {attack_name!r}")
        options[attack_cls.model_option] = model
    with progress_display(progress) as prog:
        if dataset is not None:
            with stage(prog, f"loading dataset {dataset}"):
                priv, shad = dataset_sentences(dataset, seed)
            if shadow is not None:
                shad = read_sentences(shadow, "shadow")
        else:
            priv = read_sentences(private, "private")
            shad = read_sentences(shadow, "shadow") if shadow is not None else []
        if n_shadow is not None:
            shad = shad[:n_shadow]
        rng = np.random.default_rng(seed)
        with stage(prog, f"building {mechanism} (epsilon {eps:g})"):
            mech = build_mechanism(mechanism, eps, space, seed, priv, prog)
        out = run_attack(mech, attack_name, priv, shad, k=k, n_units=n_units, targets=targets, rng=rng,
                         options=options, progress=prog)
    if as_json:
        print_json(out)
        return
    what = "bound" if out["bound"] else "attack"
    eps_text = "n/a" if out["epsilon"] is None else f"{out['epsilon']:g}"
    n = out["n_units"]
    typer.echo(f"{what} {out['attack']} vs {out['mechanism']} (epsilon={eps_text}, space={out['space']}): "
               f"{n} units attacked ({out['targets']}; {out['non_target_units']} changed units not targeted)")
    typer.echo(f"ASR@1  {out['asr_at_1']:.4f} ({out['success_at_1']}/{n})  protection {out['protection_at_1']:.4f}")
    typer.echo(f"ASR@{out['k']:<2d} {out['asr_at_k']:.4f} ({out['success_at_k']}/{n})  "
               f"protection {out['protection_at_k']:.4f}")
    skip = {"attack", "n_units", "k", "asr_at_1", "asr_at_k", "protection_at_1", "protection_at_k", "success_at_1",
            "success_at_k", "mechanism", "epsilon", "space", "bound", "targets", "non_target_units", "setup_seconds",
            "unrepresentable"}
    extra = {kk: v for kk, v in out.items() if kk not in skip}
    typer.echo(f"unrepresentable {out['unrepresentable']}  " +
               "  ".join(f"{kk} {v:.4f}" if isinstance(v, float) else f"{kk} {v}" for kk, v in extra.items()))


def register(app: typer.Typer) -> None:
    app.command("attack")(attack)
