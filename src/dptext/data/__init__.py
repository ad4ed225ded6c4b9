"""Evaluation datasets (issue 6): ``get_dataset(name)``, ``list_datasets()``, splits, user files.

>>> ds = get_dataset("tweets")                 # or "wiki", "news", or "my.jsonl"
>>> private = ds.split("private", seed=0)      # private / shadow / train / test
>>> private.texts[:2], private.labels[:2]
"""

from dptext.data.base import DEFAULT_FRACTIONS, DOC_TOKENS, REF_TOKENS, SPLITS, Dataset, continuation_items
from dptext.data.registry import (
    DESCRIPTIONS,
    get_dataset,
    list_datasets,
    load_file,
    register_dataset,
    register_file,
)

__all__ = [
    "DEFAULT_FRACTIONS", "DESCRIPTIONS", "DOC_TOKENS", "REF_TOKENS", "SPLITS", "Dataset", "continuation_items",
    "get_dataset", "list_datasets", "load_file", "register_dataset", "register_file",
]
