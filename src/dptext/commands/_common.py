"""Helpers shared by CLI command modules."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager

from dptext.errors import DPTextError
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


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2, default=str) + "\n")


@contextmanager
def progress_bar(enabled: bool = True):
    """A rich progress bar on stderr (None when disabled or not a terminal-friendly run)."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as p:
        yield p
