"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
import sys

from dptext.errors import DPTextError
from dptext.progress import progress_reporter
from dptext.text import decode_text

MAX_INPUT_BYTES = 10 * 2**20


def read_text_arg(value: str | None, *, what: str = "input") -> str:
    """TEXT argument or ``-`` for stdin; strict UTF-8; empty input is an error."""
    if value is None or value == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        if len(data) > MAX_INPUT_BYTES:
            raise DPTextError(f"{what} is larger than {MAX_INPUT_BYTES // 2**20} MiB")
        text = decode_text(data, source=what)
    else:
        text = value
    if not text.strip():
        raise DPTextError(f"{what} is empty")
    return text


def _value(text: str):
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def parse_params(items: list[str]) -> dict:
    """``["n_buckets=20", "eta=5"]`` -> ``{"n_buckets": 20, "eta": 5}`` (mechanism keyword arguments)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise DPTextError(f"invalid --param {item!r}: use name=value")
        out[name.strip().replace("-", "_")] = _value(value.strip())
    return out


def print_top(row, units: list[str], top: int, as_json: bool) -> None:
    """The ``top`` most likely outputs of a transition row, as text or JSON ``[{"unit", "prob"}]``."""
    import numpy as np
    import typer

    if top < 1:
        raise DPTextError(f"invalid --top {top}: must be >= 1")
    k = min(top, len(row))
    best = np.argpartition(-row, k - 1)[:k]
    best = best[np.argsort(-row[best], kind="stable")]
    items = [{"unit": units[i], "prob": float(row[i])} for i in best]
    if as_json:
        print_json(items)
    else:
        for it in items:
            typer.echo(f"{it['prob']:.6f}\t{it['unit']}")


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


def progress_bar(enabled: bool = True):
    """A progress bar on a terminal, periodic log lines otherwise, None when disabled (see dptext.progress)."""
    return progress_reporter(enabled)
