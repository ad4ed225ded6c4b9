"""``dptext infer``: the InferDPT pipeline end to end (SPEC section 2).

With no arguments it runs fully offline on an embedded sample document:
RANTEXT ε=3 on ``cl100k-11k``, SmolLM2-135M in-process standing in for the
remote LLM and serving as the local extraction model.
"""

from __future__ import annotations

from typing import Optional

import typer

from dptext.commands._common import print_json, progress_bar, read_text_arg
from dptext.errors import DPTextError


def infer(
    document: Optional[str] = typer.Argument(
        None, help="Private document, or - for stdin (default: an embedded sample document)."),
    task: str = typer.Option("continue", "--task", help="continue (open-ended continuation) | answer."),
    instruction: Optional[str] = typer.Option(
        None, "--instruction", "-i", help="Public instruction sent as is (required for --task answer)."),
    mechanism: str = typer.Option("rantext", "--mechanism", "-m", help="Perturbation mechanism."),
    epsilon: str = typer.Option("3", "--epsilon", "-e", help="Privacy parameter ε > 0."),
    space: Optional[str] = typer.Option(None, "--space", help="Embedding space (default: the mechanism's)."),
    remote: str = typer.Option("local", "--remote",
                               help="Remote LLM: local (in-process SmolLM2 stand-in) or an OpenAI-compatible URL."),
    remote_model: Optional[str] = typer.Option(None, "--remote-model", help="Model name at the remote endpoint."),
    api_key_env: str = typer.Option("OPENAI_API_KEY", "--api-key-env",
                                    help="Environment variable holding the remote API key."),
    timeout: float = typer.Option(120.0, "--timeout", help="Seconds to wait for the remote reply."),
    local: str = typer.Option("local", "--local", help="Local model: local (SmolLM2), a .gguf path or a package."),
    max_tokens: int = typer.Option(100, "--max-tokens", help="Tokens to generate at each model."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Fixed seed (experiments only; default OS entropy)."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole result object as JSON."),
):
    """Private inference: perturb DOCUMENT, query the remote LLM, rebuild the answer locally."""
    from dptext.pipeline import SAMPLE_DOCUMENT, TASKS, InferDPT

    if task not in TASKS:
        raise DPTextError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    if max_tokens < 1:
        raise DPTextError(f"invalid --max-tokens {max_tokens}: must be >= 1")
    sample = document is None
    doc = SAMPLE_DOCUMENT if sample else read_text_arg(document, what="document")
    is_url = "://" in remote
    with progress_bar(not as_json) as prog:
        pipe = InferDPT.from_options(
            mechanism=mechanism, epsilon=epsilon, space=space, remote=remote, remote_model=remote_model,
            local=local, progress=prog, max_tokens=max_tokens,
            **({"remote_options": {"api_key_env": api_key_env, "timeout": timeout}} if is_url else {}))
    if task == "answer" and instruction is None and sample:
        instruction = "What is the writer worried about? Answer in one sentence."
    result = pipe.run(doc, task=task, instruction=instruction, seed=seed)
    if as_json:
        print_json({"sample_document": sample, **result.to_dict()})
        return
    _print_human(result, sample=sample, stand_in=not is_url)


def _print_human(result, *, sample: bool, stand_in: bool) -> None:
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
    echo(f"Privacy: {p['mechanism']} ε={p['epsilon']:g} on {p['space']}: {p['perturbed']} units perturbed, "
         f"{p['kept']} kept, {p['dropped']} dropped.")
    for title, text in (("Private document (stays local)", result.document),
                        ("Perturbed prompt (sent to the remote LLM)", result.perturbed_prompt),
                        ("Remote answer (perturbed generation)", result.remote_output),
                        ("Rebuilt answer (local extraction)", result.output)):
        echo(f"\n== {title} ==\n{text.strip()}")
    echo(f"\nTimings: perturb {t['perturb'] * 1000:.0f} ms, remote {t['remote']:.1f} s, "
         f"extract {t['extract']:.1f} s, total {t['total']:.1f} s")


def register(app: typer.Typer) -> None:
    app.command()(infer)
