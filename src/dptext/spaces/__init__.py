"""Embedding spaces: tokenizer + vocabulary + embedding matrix, cached on disk (docs/algorithms.md)."""

from dptext.spaces.base import EmbeddingSpace
from dptext.spaces.registry import SPACES, get_space, list_spaces, register_space

__all__ = ["EmbeddingSpace", "SPACES", "get_space", "list_spaces", "register_space"]
