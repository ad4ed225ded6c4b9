"""dptext: use black-box LLMs without handing them your private text.

Each unit (word or token) of a private document is replaced locally by a
differentially private substitute (see ``dptext.mechanisms``); only the
perturbed text leaves the machine (see ``dptext.pipeline``).
"""

__version__ = "0.1.0"

from dptext.errors import DPTextError  # noqa: E402

__all__ = ["DPTextError", "__version__"]
