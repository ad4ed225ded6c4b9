"""The ``dptext`` command.

Each area registers its sub-commands from its own module in
``dptext/commands/`` (a ``register(app)`` function), so the command line
grows without one file growing with it. User errors (``DPTextError``) print
one line on stderr and exit 2; there is never a traceback for bad input.
"""

from __future__ import annotations

import importlib
import sys

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Differentially private text for black-box LLMs (InferDPT and friends), offline.")

COMMAND_MODULES = ("core", "infer", "tokenmanip", "attack", "evaluate", "bench", "serve", "batch")


def _load_commands() -> None:
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"dptext.commands.{name}")
        except ModuleNotFoundError as exc:  # an area not written yet
            if exc.name != f"dptext.commands.{name}":
                raise
            continue
        mod.register(app)


_load_commands()


def main(argv: list[str] | None = None) -> int:
    from dptext.errors import DPTextError

    try:
        app(args=argv, standalone_mode=False)
    except DPTextError as exc:
        print(f"dptext: error: {exc}", file=sys.stderr)
        return 2
    except (typer.Abort, KeyboardInterrupt):
        print("dptext: aborted", file=sys.stderr)
        return 130
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            return exc.exit_code
        if isinstance(exc, click.exceptions.Exit):
            return exc.exit_code
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
