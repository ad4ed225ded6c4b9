"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
import sys
from pathlib import Path

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


def _names_file(value: str) -> bool:
    """Whether a TEXT argument is the path of an existing file (the user meant its contents)."""
    if not value or len(value) > 4096 or "\n" in value or "\x00" in value:
        return False
    try:
        return Path(value).is_file()
    except OSError:  # a name the OS cannot even look up is text
        return False


def read_file_arg(path: str, *, what: str = "input") -> str:
    """The contents of ``--file PATH``: strict UTF-8, at most :data:`MAX_INPUT_BYTES`, not empty."""
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"--file {path}: no such file")
    with p.open("rb") as fh:
        data = fh.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise DPTextError(f"--file {path} is larger than {MAX_INPUT_BYTES // 2**20} MiB")
    return read_text_arg(decode_text(data, source=path), what=f"file {path}")


def read_text_or_file(value: str | None, file: str | None, *, what: str = "text") -> str:
    """TEXT argument, ``-`` (stdin) or ``--file PATH``. A TEXT that names an existing file is refused
    with a hint: perturbing the words "note.txt" when the file was meant would send its name, not its text."""
    if file is not None:
        if value not in (None, "-"):
            raise DPTextError(f"give the {what} either as an argument or with --file, not both")
        return read_file_arg(file, what=what)
    if value is not None and value != "-" and _names_file(value):
        raise DPTextError(f"{value!r} is a file; to use its contents give --file {value} (or - and redirect "
                          f"it: < {value}); to use the words themselves, pipe them in with -")
    return read_text_arg(value, what=what)


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


def unrelated_output_warning(mech) -> str | None:
    """A warning line when the mechanism's output cannot be about the input at this ε, else None.

    DP-Prompt samples each output token from ``Pr(t) ∝ exp(u_t / T)`` with clipped logits, so no token is
    more than ``exp(ε_token / 2)`` times as likely as any other (docs/algorithms.md). Below a factor of 2 the
    language model has no say: the output is a string of random tokens, which a user should be told."""
    eps_token, temperature = getattr(mech, "epsilon_token", None), getattr(mech, "temperature", None)
    if eps_token is None or temperature is None:
        return None
    import math

    ratio = math.exp(eps_token / 2)
    if ratio >= 2:
        return None
    return (f"dptext: warning: {mech.name} at epsilon {mech.epsilon:g} spends {eps_token:.3g} per token "
            f"({getattr(mech, 'max_tokens', '?')} tokens, temperature {temperature:.4g}): no token is more than "
            f"{ratio:.3g}x as likely as any other, so the output is random words unrelated to the text; a "
            f"paraphrase needs epsilon of at least {getattr(mech, 'max_tokens', 1) * 2 * math.log(2):.3g} "
            "(the likeliest token then 2x as likely as the least; readable text needs far more)")


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


def listen_socket(host: str, port: int):
    """A socket bound to ``host:port`` for uvicorn (``Server.run(sockets=[...])``), bound before anything
    is loaded or logged: a busy port or a bad address is one line and exit 2, never "startup complete"
    followed by a server error. Options as uvicorn's own (SO_REUSEADDR, IPv6 when the host has a colon)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family=family)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        where = f"{host}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise DPTextError(f"port {port} on {host} is already in use (another server?); choose "
                              f"another with --port, or --port 0 for any free one") from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise DPTextError(f"not allowed to listen on {where} (ports below 1024 need root); "
                              "choose another --port") from None
        raise DPTextError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    except (socket.gaierror, UnicodeError) as exc:
        sock.close()
        raise DPTextError(f"cannot listen on {host}:{port}: unknown address ({exc})") from None
    return sock


def run_uvicorn(app, sock, *, host: str, port: int, **config) -> None:
    """Serve ``app`` on the already-bound ``sock`` (see :func:`listen_socket`).

    uvicorn logs its "Uvicorn running on URL" line only for sockets it bound itself; it is logged here,
    once the server has started, with the port actually bound (the one picked for ``--port 0``)."""
    import logging

    import uvicorn

    bound = sock.getsockname()[1]
    url = f"http://[{host}]:{bound}" if ":" in host else f"http://{host}:{bound}"

    class _Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if self.started:
                logging.getLogger("uvicorn.error").info("Uvicorn running on %s (Press CTRL+C to quit)", url)

    _Server(uvicorn.Config(app, host=host, port=bound, **config)).run(sockets=[sock])
