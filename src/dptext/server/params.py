"""Checks of the sampling parameters the proxy forwards: documented type and range, and text-free ``stop``.

Numbers (OpenAI chat-completions reference): each parameter below has a type
and a closed range; anything else (a string, a bool, a float where an integer
is documented, a value outside the range) is a 400 naming the parameter, so
no out-of-contract value goes upstream.

``stop`` strings reach the upstream verbatim, so they may hold no text. A
character is allowed only when it is whitespace, punctuation or a symbol that
is not letter- or digit-like: categories ``P*``, ``Z*``, ``Sm``, ``Sc``,
``Sk``, ``So`` and the controls ``\\t \\n \\r``. Refused: letters and numbers
(``L*``, ``N*``, fullwidth forms included), marks (``M*``), format characters
such as the tag characters U+E0000-U+E007F (``Cf``), private-use and
unassigned code points, and symbols whose NFKC form holds a letter or digit
(circled, squared and parenthesised letters: ``ⓐ`` -> ``a``, ``⒜`` -> ``(a)``)
or whose Unicode name says LETTER or DIGIT (regional indicators ``🇦``,
negative circled letters ``🅐``, which NFKC leaves alone).
"""

from __future__ import annotations

import unicodedata

from dptext.server.errors import bad_request

INT64 = 2**63
# name: (integer?, low, high), both ends included
RANGES = {
    "temperature": (False, 0.0, 2.0),
    "top_p": (False, 0.0, 1.0),
    "presence_penalty": (False, -2.0, 2.0),
    "frequency_penalty": (False, -2.0, 2.0),
    "n": (True, 1, 128),
    "max_tokens": (True, 1, INT64 - 1),
    "max_completion_tokens": (True, 1, INT64 - 1),
    "top_logprobs": (True, 0, 20),
    "seed": (True, -INT64, INT64 - 1),
}
_ALLOWED = {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Zs", "Zl", "Zp", "Sm", "Sc", "Sk", "So"}
_LETTER_WORDS = ("LETTER", "DIGIT", "NUMBER", "IDEOGRAPH", "SYLLABLE")


def numeric_params(body: dict) -> dict:
    """The numeric parameters present in ``body`` (null means absent), each checked; 400 on the first bad one."""
    out = {}
    for k, (integer, lo, hi) in RANGES.items():
        v = body.get(k)
        if v is None:
            continue
        kind = "an integer" if integer else "a number"
        if isinstance(v, bool) or not isinstance(v, int if integer else (int, float)):
            raise bad_request(f"{k} must be {kind} from {lo:g} to {hi:g}", param=k)
        if not lo <= v <= hi:
            raise bad_request(f"{k} = {v!r} is out of range: it must be {kind} from {lo:g} to {hi:g}", param=k)
        out[k] = v
    return out


def textlike(c: str) -> bool:
    """Whether ``c`` could carry letters or digits upstream (see the module docstring)."""
    if c in "\t\n\r":
        return False
    cat = unicodedata.category(c)
    if cat not in _ALLOWED:
        return True
    if cat[0] != "S":
        return any(ch.isalnum() for ch in unicodedata.normalize("NFKC", c))
    if any(ch.isalnum() for ch in unicodedata.normalize("NFKC", c)):
        return True
    name = unicodedata.name(c, "")
    return any(w in name for w in _LETTER_WORDS)


def check_stop(stop) -> list[str]:
    """``stop`` as a list of at most 4 strings holding no letter- or digit-like character; else 400."""
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or len(stop) > 4 or not all(isinstance(s, str) for s in stop):
        raise bad_request("stop must be a string or a list of at most 4 strings", param="stop")
    for s in stop:
        bad = next((c for c in s if textlike(c)), None)
        if bad is not None:  # free text would go upstream unperturbed
            raise bad_request(f"stop strings may hold punctuation, symbols and whitespace only, not U+{ord(bad):04X} "
                              f"({unicodedata.category(bad)}: a letter, digit or letter-like character would go "
                              "upstream unperturbed)", param="stop", code="unsupported_parameter")
    return stop
