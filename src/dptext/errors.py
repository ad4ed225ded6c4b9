"""User-facing errors: one line that names the problem, never a traceback.

``ParameterError`` names the setting at fault (``.param``, e.g. ``"epsilon"``
or ``"options.n_buckets"``) so that each front end can point at its own
spelling of it: the CLI at a flag (``--epsilon``, ``--param n_buckets``), the
proxy at a config field. Library code raises it; it never formats flags.
"""

from __future__ import annotations

_MISSING = object()


class DPTextError(Exception):
    """An error caused by the user's input or environment (bad epsilon, unknown name...).

    The CLI prints ``str(err)`` on one line and exits 2.
    """


class PrivacyError(DPTextError):
    """Raised when a privacy path cannot proceed; nothing has left the machine."""


class ParameterError(DPTextError):
    """A bad value for one named setting.

    ``ParameterError("epsilon", "must be a number > 0", value="abc")`` reads
    ``invalid epsilon 'abc': must be a number > 0``; without ``value`` it reads
    ``epsilon: <reason>``. ``rename(name)`` gives the same sentence with the
    setting spelled the way a front end shows it (``--epsilon``).
    """

    def __init__(self, param: str, reason: str, *, value=_MISSING):
        self.param = str(param)
        self.reason = str(reason)
        self.value = value
        super().__init__(self.rename(self.param))

    @property
    def has_value(self) -> bool:
        return self.value is not _MISSING

    def rename(self, name: str) -> str:
        if self.has_value:
            return f"invalid {name} {self.value!r}: {self.reason}"
        return f"{name}: {self.reason}"

    def __reduce__(self):  # picklable across worker processes (keyword-only value)
        return (_rebuild_parameter_error, (self.param, self.reason, self.value if self.has_value else _MISSING_TAG))


_MISSING_TAG = "<dptext-missing>"


def _rebuild_parameter_error(param, reason, value):
    if value == _MISSING_TAG:
        return ParameterError(param, reason)
    return ParameterError(param, reason, value=value)


def check_epsilon(epsilon, *, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a finite number > 0."""
    try:
        value = float(epsilon)
    except (TypeError, ValueError):
        raise ParameterError(name, "must be a number > 0", value=epsilon) from None
    if not value > 0 or value != value or value == float("inf"):
        raise ParameterError(name, "must be a finite number > 0", value=epsilon)
    return value


def check_in_range(x, *, name: str, lo: float, hi: float) -> float:
    """Validate a number in the closed interval ``[lo, hi]``."""
    try:
        value = float(x)
    except (TypeError, ValueError):
        raise ParameterError(name, f"must be a number in [{lo:g}, {hi:g}]", value=x) from None
    if not lo <= value <= hi:
        raise ParameterError(name, f"must be in [{lo:g}, {hi:g}]", value=x)
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
            raise ParameterError(name, "must be an integer >= 0", value=seed) from None
    if seed < 0:
        raise ParameterError(name, "must be an integer >= 0", value=seed)
    return seed
