"""``dptext infer``: the InferDPT pipeline end to end (docs/algorithms.md, InferDPT).

With no arguments it runs fully offline on an embedded sample document with
the ``balanced`` preset (dptext.privacy.presets: detected personal data at a
small ε, the rest readable), SmolLM2-135M in-process standing in for the
remote LLM and serving as the local extraction model. ``--preset strict`` is
the former default (RANTEXT ε=3 on every unit); giving ``--mechanism``,
``--epsilon`` or ``--policy`` instead runs those settings (RANTEXT ε=3 where
unset).
"""

from __future__ import annotations

from typing import Optional

import typer

from dptext.cli._common import (
    ENTITY_EPSILON_HELP,
    ENTITY_TYPES_HELP,
    EPSILON_HELP,
    POLICY_HELP,
    PRESET_HELP,
    WORDLIST_HELP,
    chosen_preset,
    policy_settings,
    print_json,
    privacy_policy,
    progress_bar,
    read_text_or_file,
)
from dptext.errors import DPTextError, ParameterError


def check_remote(remote: str) -> str:
    """``local``, an http(s) URL with a host, or an existing ``.gguf`` file; anything else names --remote."""
    from pathlib import Path
    from urllib.parse import urlsplit

    if remote == "local" or remote.endswith(".gguf") and Path(remote).is_file():
        return remote
    url = urlsplit(remote)
    if url.scheme in ("http", "https") and url.hostname:
        return remote
    why = ("no host" if url.scheme in ("http", "https")
           else f"unsupported scheme {url.scheme!r}" if url.scheme and "://" in remote else "not a URL")
    raise ParameterError("remote", f"invalid remote {remote!r}: {why}; give the http(s):// URL of an "
                                   "OpenAI-compatible endpoint (e.g. http://127.0.0.1:8000/v1) or 'local' "
                                   "(the in-process stand-in)")


def infer(
    ctx: typer.Context,
    document: Optional[str] = typer.Argument(
        None, help="Private document, or - for stdin (default: an embedded sample document)."),
    task: str = typer.Option("continue", "--task", help="continue (open-ended continuation) | answer."),
    instruction: Optional[str] = typer.Option(
        None, "--instruction", "-i", help="Public instruction sent as is (required for --task answer)."),
    preset: Optional[str] = typer.Option(None, "--preset", help=PRESET_HELP + " Default: balanced, unless "
                                         "--mechanism, --epsilon or --policy is given."),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m", help="Perturbation mechanism (replaces the preset)."),
    epsilon: float = typer.Option(3.0, "--epsilon", "-e", help=EPSILON_HELP),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    remote: str = typer.Option("local", "--remote",
                               help="Remote LLM: local (in-process SmolLM2 stand-in) or an OpenAI-compatible URL."),
    remote_model: Optional[str] = typer.Option(None, "--remote-model", help="Model name at the remote endpoint."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                    help="Environment variable holding the remote API key."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for the remote reply."),
    local: str = typer.Option("local", "--local", help="Local model: local (SmolLM2), a .gguf path or a package."),
    max_tokens: int = typer.Option(100, "--max-tokens", min=1, help="Tokens to generate at each model."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0,
                                       help="Fixed seed >= 0 (experiments only; default OS entropy)."),
    policy: Optional[str] = typer.Option(None, "--policy", help=POLICY_HELP),
    entity_types: Optional[str] = typer.Option(None, "--entity-types", help=ENTITY_TYPES_HELP),
    entity_epsilon: Optional[float] = typer.Option(None, "--entity-epsilon", help=ENTITY_EPSILON_HELP),
    wordlist: Optional[str] = typer.Option(None, "--wordlist", help=WORDLIST_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result object as JSON."),
):
    """Private inference: perturb DOCUMENT, query the remote LLM, rebuild the answer locally."""
    from dptext.llm import get_backend
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.inferdpt import SAMPLE_DOCUMENT, TASKS, InferDPT
    from dptext.pipeline import Sanitizer
    from dptext.privacy.presets import DEFAULT_INFER_PRESET

    if task not in TASKS:
        raise DPTextError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    remote = check_remote(remote)
    chosen = chosen_preset(ctx, preset, default=DEFAULT_INFER_PRESET)
    if chosen is not None:
        spec, pol = chosen.spec, chosen.build_policy(wordlist)
    else:
        spec = MechanismSpec(mechanism=mechanism, epsilon=epsilon, space=space)
        pol = privacy_policy(policy_settings(policy, entity_types, entity_epsilon, wordlist))
    sample = document is None
    doc = SAMPLE_DOCUMENT if sample else read_text_or_file(document, None, what="document")
    is_url = "://" in remote
    if remote_model is not None and not is_url:
        raise DPTextError("--remote-model applies to an http(s):// remote endpoint only")
    remote_backend = get_backend(remote, model=remote_model,
                                 **({"api_key_env": api_key_env, "timeout": timeout} if is_url else {}))
    with progress_bar(not as_json) as prog:
        pipe = InferDPT(Sanitizer(spec, policy=pol, progress=prog), remote_backend, local, max_tokens=max_tokens)
    if task == "answer" and instruction is None and sample:
        instruction = "What is the writer worried about? Answer in one sentence."
    result = pipe.run(doc, task=task, instruction=instruction, seed=seed)
    if as_json:
        print_json({"sample_document": sample, "preset": chosen.describe() if chosen else None,
                    **result.to_dict()})
        return
    _print_human(result, sample=sample, stand_in=not is_url, preset=chosen)


def _print_human(result, *, sample: bool, stand_in: bool, preset=None) -> None:
    p, t = result.privacy, result.timings
    echo = typer.echo
    if stand_in:
        echo(f"Offline run: {result.remote['model']} runs in-process as a stand-in for the remote LLM "
             "(nothing leaves this machine); pass --remote URL to use a real endpoint.")
    else:
        echo(f"Remote LLM: {result.remote.get('model')} at {result.remote.get('base_url')} "
             "(receives the perturbed prompt only).")
    echo(f"Local model: {result.local['model']} ({result.local['location']}).")
    if sample:
        echo("Document: the embedded sample (give DOCUMENT or - for stdin to use your own).")
    if preset is not None:
        d = preset.describe()
        echo(f"Preset: {preset.name}: {preset.summary}.")
        echo(f"  settings: mechanism {d['mechanism']}, policy {d['policy']}")
    pol = p.get("policy") or {}
    tier = f", detected spans at ε={pol['entity_epsilon']:g}" if pol.get("entity_epsilon") is not None else ""
    echo(f"Privacy: {p['mechanism']} ε={p['epsilon']:g} on {p['space']}, policy {pol.get('name', 'all')}{tier}: "
         f"{p['perturbed']} units perturbed, {p.get('sent_unchanged', p['kept'])} sent unchanged "
         f"({p['kept']} kept by rule, {p.get('self', 0)} drawn as themselves), {p['dropped']} dropped"
         + (f", {len(p['spans'])} detected spans" if p.get("spans") else "") + ".")
    echo(f"Charge: this request spent ε={p['epsilon_spent']:g} per unit (the largest unit ε freshly spent); "
         "a unit sent in k fresh requests has spent k times its ε.")
    for title, text in (("Private document (stays local)", result.document),
                        ("Perturbed prompt (sent to the remote LLM)", result.perturbed_prompt),
                        ("Remote answer (perturbed generation)", result.remote_output),
                        ("Rebuilt answer (local extraction)", result.output)):
        echo(f"\n== {title} ==\n{text.strip()}")
    echo(f"\nTimings: perturb {t['perturb'] * 1000:.0f} ms, remote {t['remote']:.1f} s, "
         f"extract {t['extract']:.1f} s, total {t['total']:.1f} s")


def register(app: typer.Typer) -> None:
    app.command()(infer)
