"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
import sys

from dptext.errors import DPTextError, ParameterError
from dptext.progress import is_terminal, progress_reporter
from dptext.text import decode_text

MAX_INPUT_BYTES = 10 * 2**20
EPSILON_HELP = "Privacy parameter ε > 0 (see docs/algorithms.md for what it bounds per mechanism)."
POLICY_HELP = ("Which units are private: all (default: every unit perturbed) | entities (detected entities only, "
               "the rest in clear) | tiered (entities at --entity-epsilon, the rest at --epsilon).")
ENTITY_TYPES_HELP = "Entity types a policy detects, comma-separated (e.g. PERSON,GPE,EMAIL; default: the policy's)."
ENTITY_EPSILON_HELP = "ε for detected entities under --policy tiered."
WORDLIST_HELP = "File of extra sensitive words or phrases, one per line (policies entities and tiered)."
PRESET_HELP = ("Named settings chosen from measurement: strict | balanced | inferdpt; sets the mechanism, ε and "
               "policy (see docs/choosing.md).")
#: flags a preset sets; giving one of them together with --preset is an error
PRESET_FLAGS = ("mechanism", "epsilon", "space", "param", "policy", "entity_types", "entity_epsilon")


def read_text_arg(value: str | None, *, what: str = "input") -> str:
    """TEXT argument or ``-`` for stdin; strict UTF-8; empty input is an error."""
    if value is None or value == "-":
        if is_terminal(sys.stdin):  # a user who typed the command alone would otherwise see nothing happen
            print(f"dptext: reading the {what} from the terminal; finish with Ctrl-D on a new line "
                  f"(or give the {what} as an argument, or pipe it in)", file=sys.stderr, flush=True)
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise DPTextError(f"{what} is larger than {MAX_INPUT_BYTES // 2**20} MiB")
        text = decode_text(data, source=what)
    else:
        text = value
    if not text.strip():
        raise DPTextError(f"{what} is empty")
    return text


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_params(items: list[str]) -> dict:
    """``["n_buckets=20", "eta=5"]`` -> ``{"n_buckets": 20, "eta": 5}`` (mechanism keyword arguments)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise DPTextError(f"invalid --param {item!r}: use name=value")
        out[name.strip().replace("-", "_")] = _value(value.strip())
    return out


def mechanism_spec(mechanism: str, epsilon, *, space=None, seed=None, oov: str = "drop", digits: str = "random",
                   params=()):
    """The validated :class:`~dptext.mechanisms.spec.MechanismSpec` of a command's flags."""
    from dptext.mechanisms.spec import MechanismSpec

    return MechanismSpec(mechanism=mechanism, epsilon=epsilon, space=space, seed=seed, oov=oov, digits=digits,
                         options=parse_params(list(params)))


def policy_settings(policy: str | None, entity_types: str | None = None, entity_epsilon: float | None = None,
                    wordlist: str | None = None) -> dict | None:
    """``--policy`` and its options as ``get_policy`` settings (``{"name": ..., ...}``); None for the default
    (every unit private). ``--entity-types`` is a comma-separated list."""
    opts = {"entity_types": None if entity_types is None else [t.strip() for t in entity_types.split(",") if t.strip()],
            "entity_epsilon": entity_epsilon, "wordlist": wordlist}
    opts = {k: v for k, v in opts.items() if v is not None}
    if (policy is None or policy == "all") and not opts:
        return None
    return {"name": policy or "all", **opts}


def privacy_policy(settings: dict | None):
    """The policy object for :func:`policy_settings`' output (built now: a missing detector model fails here)."""
    if settings is None:
        return None
    from dptext.privacy.policy import get_policy

    kw = dict(settings)
    return get_policy(kw.pop("name"), **kw)


def chosen_preset(ctx, preset: str | None, default: str | None = None):
    """The :class:`~dptext.privacy.presets.Preset` a command runs, or None for its own flags.

    ``--preset NAME`` with any flag it sets (:data:`PRESET_FLAGS`) given too is an error; with none of
    ``--preset`` and those flags, ``default`` (a preset name) applies.
    """
    from dptext.privacy.presets import get_preset

    # compared by name: typer may carry its own copy of click's ParameterSource enum
    given = [n for n in PRESET_FLAGS if n in ctx.params
             and getattr(ctx.get_parameter_source(n), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP")]
    if preset is None:
        return get_preset(default) if default is not None and not given else None
    try:
        chosen = get_preset(preset)
    except ParameterError as exc:
        raise DPTextError(f"--preset: {exc}") from None
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise DPTextError(f"--preset {chosen.name} sets the mechanism, epsilon and policy; drop {flags} "
                          "or drop --preset")
    return chosen


def unit_summary(counts: dict, oov: str) -> str:
    """One line: what happened to the units (so that dropped words never vanish without notice)."""
    kept, same = counts.get("kept", 0), counts.get("self", 0)
    line = (f"dptext: {counts.get('perturbed', 0)} units perturbed, {kept + same} sent unchanged "
            f"({kept} kept by rule, {same} drawn as themselves), {counts.get('dropped', 0)} dropped")
    if counts.get("dropped", 0) and oov == "drop":
        line += " (out of vocabulary; --oov keep or --oov random to change)"
    return line


def print_top(row, units: list[str], top: int, as_json: bool) -> None:
    """The ``top`` most likely outputs of a transition row, as text or JSON ``[{"unit", "prob"}]``."""
    import numpy as np
    import typer

    if top < 1:
        raise DPTextError(f"invalid --top {top}: must be >= 1")
    k = min(top, len(row))
    best = np.argpartition(-row, k - 1)[:k]
    best = best[np.argsort(-row[best], kind="stable")]
    items = [{"unit": units[i], "prob": float(row[i])} for i in best]
    if as_json:
        print_json(items)
    else:
        for it in items:
            typer.echo(f"{it['prob']:.6f}\t{it['unit']}")


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


def progress_bar(enabled: bool = True):
    """A progress bar on a terminal, periodic log lines otherwise, None when disabled (see dptext.progress)."""
    return progress_reporter(enabled)
