"""``dptext serve`` (the OpenAI-compatible privacy proxy) and ``dptext hash-key``."""

from __future__ import annotations

import logging
import sys
from typing import Optional

import typer

from dptext.errors import DPTextError


def serve(
    config: str = typer.Option(..., "--config", "-c", help="YAML config file (see examples/dptext.yaml)."),
    host: Optional[str] = typer.Option(None, "--host", help="Listen address (overrides listen.host)."),
    port: Optional[int] = typer.Option(None, "--port", help="Listen port (overrides listen.port; 0 = any free)."),
):
    """Serve /v1/chat/completions: private text is perturbed locally before it goes upstream."""
    try:
        import uvicorn

        from dptext.server import create_app, load_config
    except ModuleNotFoundError as exc:
        raise DPTextError(f"dptext serve needs the server extras ({exc.name} missing): "
                          "pip install 'dptext[server]'") from None
    cfg = load_config(config)
    host = host or cfg.listen.host
    port = cfg.listen.port if port is None else port
    if not 0 <= port <= 65535:
        raise DPTextError(f"invalid --port {port}: must be in 0..65535")
    logging.basicConfig(level=cfg.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if cfg.log_level != "debug":  # one line per request from dptext.server is enough
        logging.getLogger("httpx").setLevel(logging.WARNING)
    app = create_app(cfg)
    uvicorn.run(app, host=host, port=port, log_level=cfg.log_level, access_log=False,
                timeout_graceful_shutdown=5)


def hash_key(
    key: Optional[str] = typer.Argument(None, help="A bearer key to hash, - for stdin (keeps it out of shell "
                                                   "history); omit to generate a new random key."),
):
    """Print the sha256 hash of a bearer key for auth.keys[].sha256 (and the key, when generated)."""
    from dptext.server.auth import hash_key as _hash, new_key

    if key == "-":
        key = sys.stdin.readline().strip()
    if key is not None and not key.strip():
        raise DPTextError("the key is empty")
    if key is None:
        key = new_key()
        typer.echo(f"key:    {key}")
        typer.echo(f"sha256: {_hash(key)}")
    else:
        typer.echo(_hash(key))


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("hash-key")(hash_key)
