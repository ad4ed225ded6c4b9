"""User-facing errors: one line that names the problem, never a traceback.

``ParameterError`` names the setting at fault (``.param``, e.g. ``"epsilon"``
or ``"options.n_buckets"``) so that each front end can point at its own
spelling of it: the CLI at a flag (``--epsilon``, ``--param n_buckets``), the
proxy at a config field. Library code raises it and never formats flags.
"""

from __future__ import annotations


class DPTextError(Exception):
    """An error caused by the user's input or environment (bad epsilon, unknown name...).

    The CLI prints ``str(err)`` on one line and exits 2.
    """


class PrivacyError(DPTextError):
    """Raised when a privacy path cannot proceed; nothing has left the machine."""


class ParameterError(DPTextError):
    """A bad setting, named: ``param`` is the setting's name (``epsilon``, ``options.n_buckets``...).

    ``message`` is the whole sentence in the library's terms
    (``invalid epsilon 'abc': must be a number > 0``). The CLI maps ``param``
    to its flag and the proxy to its config field, so the message a user sees
    names what they typed.
    """

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param

    def __reduce__(self):  # picklable across worker processes (two constructor arguments)
        return (type(self), (self.param, str(self)))


def check_epsilon(epsilon, *, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a finite number > 0."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(name, f"invalid {name} {epsilon!r}: must be a number > 0") from None
    if not value > 0 or value != value or value == float("inf"):
        raise ParameterError(name, f"invalid {name} {epsilon!r}: must be a finite number > 0")
    return value


def check_in_range(x, *, name: str, lo: float, hi: float) -> float:
    """Validate a number in the closed interval ``[lo, hi]``."""
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise ParameterError(name, f"invalid {name} {x!r}: must be a number in [{lo:g}, {hi:g}]") from None
    if not lo <= value <= hi:
        raise ParameterError(name, f"invalid {name} {x!r}: must be in [{lo:g}, {hi:g}]")
    return value


def check_probability(p, *, name: str) -> float:
    return check_in_range(p, name=name, lo=0.0, hi=1.0)


def check_seed(seed, *, name: str = "seed") -> int | None:
    """Validate an optional fixed seed: None (OS entropy) or an integer >= 0."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            seed = int(str(seed), 10)
        except ValueError:
            raise ParameterError(name, f"invalid {name} {seed!r}: must be an integer >= 0") from None
    if seed < 0:
        raise ParameterError(name, f"invalid {name} {seed!r}: must be an integer >= 0")
    return seed
