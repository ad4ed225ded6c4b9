"""``dptext serve`` (the OpenAI-compatible privacy proxy) and ``dptext hash-key``."""

from __future__ import annotations

import logging
import sys
from typing import Optional

import typer

from dptext.cli._common import listen_socket, run_uvicorn
from dptext.errors import DPTextError

log = logging.getLogger("dptext.server")


def _server_modules():
    try:
        import uvicorn

        from dptext.server import create_app, load_config
    except ModuleNotFoundError as exc:
        raise DPTextError(f"dptext serve needs the server extras ({exc.name} missing): "
                          "pip install 'dptext[server]'") from None
    return uvicorn, create_app, load_config


def check_upstream(cfg) -> str:
    """GET the upstream's /models with the configured key; a one-line verdict, DPTextError when unusable."""
    import httpx

    u = cfg.upstream
    headers = {"authorization": f"Bearer {u.api_key}"} if u.api_key else {}
    try:
        r = httpx.get(u.base_url + "/models", headers=headers, timeout=u.connect_timeout_s + 5, trust_env=False)
    except httpx.HTTPError as exc:
        raise DPTextError(f"upstream {u.base_url} is unreachable ({type(exc).__name__})") from None
    if r.status_code in (401, 403):
        raise DPTextError(f"upstream {u.base_url} refused upstream.api_key (HTTP {r.status_code})")
    if r.status_code >= 500:
        raise DPTextError(f"upstream {u.base_url} answered HTTP {r.status_code} on GET /models")
    return f"reachable (GET /models: HTTP {r.status_code})"


def serve(
    config: str = typer.Option(..., "--config", "-c", help="YAML config file (see examples/dptext.yaml)."),
    host: Optional[str] = typer.Option(None, "--host", help="Listen address (overrides listen.host)."),
    port: Optional[int] = typer.Option(None, "--port", help="Listen port (overrides listen.port; 0 = any free)."),
    check: bool = typer.Option(False, "--check", help="Validate the config, load the mechanism, reach the "
                                                      "upstream, print what would be served, and exit."),
):
    """Serve /v1/chat/completions: private text is perturbed locally before it goes upstream."""
    uvicorn, create_app, load_config = _server_modules()
    cfg = load_config(config)
    host = host or cfg.listen.host
    port = cfg.listen.port if port is None else port
    if not 0 <= port <= 65535:
        raise DPTextError(f"invalid --port {port}: must be in 0..65535")
    # the port is taken before the mechanism loads, so a busy one is an error before anything claims to serve
    sock = None if check else listen_socket(host, port)
    logging.basicConfig(level=cfg.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if cfg.log_level != "debug":  # one line per request from dptext.server is enough
        logging.getLogger("httpx").setLevel(logging.WARNING)
    from dptext.server.app import summary

    try:
        app = create_app(cfg)
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    line = summary(app.state.services)
    if check:
        verdict = check_upstream(cfg)
        typer.echo(f"config {config}: ok")
        typer.echo(line)
        typer.echo(f"upstream {cfg.upstream.base_url}: {verdict}")
        return
    port = sock.getsockname()[1]  # the one picked for --port 0
    log.info("dptext serve on http://%s:%d %s", host, port, line)
    run_uvicorn(app, sock, host=host, port=port, log_level=cfg.log_level, access_log=False,
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
