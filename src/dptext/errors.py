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


def check_probability(p, *, name: str) -> float:
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise DPTextError(f"invalid {name} {p!r}: must be a number in [0, 1]") from None
    if not 0.0 <= value <= 1.0:
        raise DPTextError(f"invalid {name} {p!r}: must be in [0, 1]")
    return value
