"""Evaluation datasets: ``get_dataset(name)``, ``list_datasets()``, splits, user files.

>>> from dptext.data import get_dataset
>>> ds = get_dataset("tweets")                 # or "wiki", "news", or "my.jsonl"
>>> ds                                         # Dataset(name='tweets', kind='classification', size=...)
>>> private = ds.split("private", seed=0)      # private / shadow / train / test
>>> for item in private.take(range(2)): print(item.text, item.label)
"""

from dptext.data.base import DEFAULT_FRACTIONS, DOC_TOKENS, REF_TOKENS, SPLITS, Dataset, Item, continuation_items
from dptext.data.registry import (
    DESCRIPTIONS,
    get_dataset,
    list_datasets,
    load_file,
    register_dataset,
    register_file,
)

__all__ = [
    "DEFAULT_FRACTIONS", "DESCRIPTIONS", "DOC_TOKENS", "REF_TOKENS", "SPLITS", "Dataset", "Item", "continuation_items",
    "get_dataset", "list_datasets", "load_file", "register_dataset", "register_file",
]
