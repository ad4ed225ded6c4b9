"""``dptext playground``: the web playground on loopback (see the README's playground section)."""

from __future__ import annotations

import ipaddress
import logging
import sys

import typer

from dptext.cli._common import listen_socket, run_uvicorn
from dptext.errors import DPTextError


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def playground(
    host: str = typer.Option("127.0.0.1", "--host", help="Listen address (loopback unless --public)."),
    port: int = typer.Option(8090, "--port", help="Listen port (0 = any free)."),
    public: bool = typer.Option(False, "--public", help="Allow a non-loopback --host: anyone who can reach "
                                                        "it can use the playground; text is still never logged."),
):
    """Open a web playground: perturb text, see each unit's Pr(y|x), the privacy report and retention vs ε."""
    if not 0 <= port <= 65535:
        raise DPTextError(f"invalid --port {port}: must be in 0..65535")
    if not is_loopback(host) and not public:
        raise DPTextError(f"--host {host} is not a loopback address; the playground serves anyone who can "
                          "reach it, so add --public to mean it")
    try:
        import uvicorn  # noqa: F401 (checked here: the server extras)

        from dptext.web.app import create_app
    except ModuleNotFoundError as exc:
        raise DPTextError(f"dptext playground needs the server extras ({exc.name} missing): "
                          "pip install 'dptext[server]'") from None
    sock = listen_socket(host, port)  # a busy port: one line, exit 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    # uvicorn's start-up line names the address (and the port picked for --port 0); no access log
    run_uvicorn(create_app(), sock, host=host, port=port, log_level="info", access_log=False)


def register(app: typer.Typer) -> None:
    app.command("playground")(playground)
