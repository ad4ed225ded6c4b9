"""User-facing errors: one line that names the problem, never a traceback."""


class DPTextError(Exception):
    """An error caused by the user's input or environment (bad epsilon, unknown name...).

    The CLI prints ``str(err)`` on one line and exits non-zero.
    """


class PrivacyError(DPTextError):
    """Raised when a privacy path cannot proceed; nothing has left the machine."""


def check_epsilon(epsilon, *, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a finite number > 0."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise DPTextError(f"invalid {name} {epsilon!r}: must be a number > 0") from None
    if not value > 0 or value != value or value == float("inf"):
        raise DPTextError(f"invalid {name} {epsilon!r}: must be a finite number > 0")
    return value


def check_in_range(x, *, name: str, lo: float, hi: float) -> float:
    """Validate a number in the closed interval ``[lo, hi]``."""
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise DPTextError(f"invalid {name} {x!r}: must be a number in [{lo:g}, {hi:g}]") from None
    if not lo <= value <= hi:
        raise DPTextError(f"invalid {name} {x!r}: must be in [{lo:g}, {hi:g}]")
    return value


def check_probability(p, *, name: str) -> float:
    return check_in_range(p, name=name, lo=0.0, hi=1.0)


class ParameterError(DPTextError):
    """A bad setting, named: ``param`` is the setting's name (``epsilon``, ``options.n_buckets``...).

    The CLI maps ``param`` to its flag and the proxy to its config field, so the
    message a user sees names what they typed.
    """

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
