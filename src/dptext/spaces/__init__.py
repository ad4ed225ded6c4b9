"""Embedding spaces: tokenizer + vocabulary + embedding matrix, cached on disk (SPEC 0)."""

from dptext.spaces.base import EmbeddingSpace
from dptext.spaces.registry import SPACES, get_space, list_spaces, register_space

__all__ = ["EmbeddingSpace", "SPACES", "get_space", "list_spaces", "register_space"]
