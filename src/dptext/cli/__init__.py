"""The ``dptext`` command.

Each area registers its sub-commands from its own module in this package,
``dptext/cli/<area>.py`` (a ``register(app)`` function), so the command line
grows without one file growing with it. ``python -m dptext.cli`` runs
:func:`main` (``__main__.py``); nothing outside this package imports it.

Exit status, whatever the typer/click version underneath:

* 0: success;
* 2: bad input or usage (unknown option, bad value, unknown name): one line
  on stderr, ``dptext: error: ...``, never a traceback;
* 130: interrupted (Ctrl-C): one line on stderr, ``dptext: interrupted``;
* a command's own status otherwise (``dptext audit`` exits 1 when it fails).

typer 0.29 and later bundle their own copy of click (``typer._click``), whose
exception classes are not click's; both are recognised here by the names in
the exception's class hierarchy, so neither copy can turn a usage mistake
into a traceback.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import signal
import sys

from dptext.errors import DPTextError, ParameterError

COMMAND_MODULES = ("core", "infer", "tokenmanip", "attack", "evaluate", "bench", "serve", "batch",
                   "calibrate", "playground", "policy")

# The one place where a library setting name (ParameterError.param) becomes the flag a user typed.
FLAGS = {
    "mechanism": "--mechanism", "epsilon": "--epsilon", "space": "--space", "seed": "--seed",
    "oov": "--oov", "digits": "--digits", "punctuation": "--punctuation", "policy": "--policy",
    "entity_epsilon": "--entity-epsilon", "entity_types": "--entity-types", "wordlist": "--wordlist",
    "workers": "--workers", "shard_size": "--shard-size", "engine": "--engine", "top": "--top",
    "max_tokens": "--max-tokens", "remote": "--remote", "local": "--local", "task": "--task",
}

INTERRUPTED = 130


def flag_for(param: str) -> str:
    """``epsilon`` -> ``--epsilon``; ``options.n_buckets`` -> ``--param n_buckets``; others unchanged."""
    if param.startswith("options."):
        return f"--param {param[len('options.'):]}"
    return FLAGS.get(param, param)


@functools.cache
def _app():
    """The typer app with every area's commands. Built once, on first use, not at import, so that the imports
    it needs (typer, numpy, ...) run inside :func:`main`, where a Ctrl-C is one line and 130."""
    import typer

    app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                      help="Differentially private text for black-box LLMs (InferDPT and friends), offline.")

    def _version(value: bool) -> None:
        if value:
            from dptext import __version__

            typer.echo(f"dptext {__version__}")
            raise typer.Exit()

    @app.callback()
    def _root(
        version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                     help="Print the version and exit."),
    ) -> None:
        """Differentially private text for black-box LLMs (InferDPT and friends), offline."""

    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"dptext.cli.{name}")
        except ModuleNotFoundError as exc:  # that area's command file is not installed
            if exc.name != f"dptext.cli.{name}":
                raise
            continue
        mod.register(app)
    _flags_without_metavar(app)
    return app


def _flags_without_metavar(app) -> None:  # noqa: ARG001 (applies to every command of the app)
    """On/off flags (``--json``, ``--help``) take no value, so their help shows no type; typer 0.29 prints
    ``<bool>`` beside every one of them. Its option class decides what goes in that column
    (``display_type_rich``); flags get nothing there, every other option keeps typer's label."""
    try:
        from typer.core import TyperOption
    except ImportError:  # an older typer: flags never showed a type
        return
    original = getattr(TyperOption, "display_type_rich", None)
    if original is None or getattr(original, "_dptext_flags", False):
        return

    def display_type_rich(self, ctx):
        if getattr(self, "is_flag", False) and self.metavar is None:
            return None
        return original(self, ctx)

    display_type_rich._dptext_flags = True
    TyperOption.display_type_rich = display_type_rich


def __getattr__(name: str):
    """``dptext.cli.app``: the typer app (for ``typer.testing.CliRunner``), built once on first access."""
    if name == "app":
        return _app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _class_names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def _error(message: str) -> None:
    print(f"dptext: error: {' '.join(str(message).split())}", file=sys.stderr)


def _interrupted() -> int:
    print("dptext: interrupted", file=sys.stderr)
    return INTERRUPTED


def _click_status(exc: BaseException) -> int | None:
    """Exit status for a click or typer._click exception (printing its one line); None if it is neither."""
    names = _class_names(exc)
    if "NoArgsIsHelpError" in names:  # `dptext` alone: the help is what was asked for
        ctx = getattr(exc, "ctx", None)
        print(ctx.get_help() if ctx is not None else exc.format_message())
        return 0
    if "UsageError" in names:
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        _error(f"{exc.format_message()}{hint}")
        return 2
    if names & {"ClickException", "TyperException"} and hasattr(exc, "format_message"):
        _error(exc.format_message())
        return int(getattr(exc, "exit_code", 1))
    if "Exit" in names and hasattr(exc, "exit_code"):
        return int(exc.exit_code)
    if "Abort" in names:  # click < 8.2 / typer < 0.29 turn Ctrl-C into Abort
        return _interrupted()
    return None


def main(argv: list[str] | None = None) -> int:
    try:
        rv = _app()(args=argv, prog_name="dptext", standalone_mode=False)
    except ParameterError as exc:
        flag = flag_for(exc.param)
        _error(f"{flag}: {exc}" if flag != exc.param else str(exc))
        return 2
    except DPTextError as exc:
        _error(str(exc))
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    except Exception as exc:
        status = _click_status(exc)
        if status is None:
            raise
        return status
    # typer >= 0.29 returns Exit's status instead of raising it; Ctrl-C arrives here as 130
    if isinstance(rv, int) and not isinstance(rv, bool):
        return _interrupted() if rv == INTERRUPTED else rv
    return 0


def _exit_interrupted(signum, frame) -> None:  # noqa: ARG001 (signal handler signature)
    """Ctrl-C once main has returned: what is printed so far stays, then the one line and 130 at once."""
    status = _interrupted()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 (a closed pipe: nothing more can be said on it)
            pass
    os._exit(status)


def run() -> None:
    """The ``dptext`` program (console script and ``python -m dptext.cli``): :func:`main`, then exit with its
    status. A Ctrl-C once main has returned (while the interpreter shuts down: worker pools, threads) ends the
    process at once with the same one line and 130, instead of a traceback from the shutdown code. After the
    last exit handler only the interpreter's own teardown is left, which resets a Python-level handler; SIGINT is
    ignored for it, so the status stays main's."""
    atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)  # registered first, so it runs last
    try:
        status = main()
        signal.signal(signal.SIGINT, _exit_interrupted)
    except KeyboardInterrupt:  # between main's return and the handler
        _exit_interrupted(signal.SIGINT, None)
    _forget_handled_interrupt()
    sys.exit(status)


def _forget_handled_interrupt() -> None:
    """CPython 3.11 marks a KeyboardInterrupt as unhandled when it passes through ``exec`` of a string (as in
    dataclasses and typer while they are imported), even when :func:`main` catches it later; run as
    ``python -m``, the interpreter then ends by killing itself with SIGINT instead of exiting with main's
    status. main has handled every interrupt by the time it returns, so the mark is cleared."""
    import ctypes

    try:
        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ValueError, AttributeError):  # another interpreter without the flag: nothing to clear
        pass
