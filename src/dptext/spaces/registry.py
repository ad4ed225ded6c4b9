"""Name -> embedding space. Spaces are built lazily and shared per process."""

from __future__ import annotations

from typing import Callable

from dptext.errors import DPTextError
from dptext.spaces.base import EmbeddingSpace

SPACES: dict[str, Callable[[], EmbeddingSpace]] = {}
_INSTANCES: dict[str, EmbeddingSpace] = {}


def register_space(name: str, factory: Callable[[], EmbeddingSpace]) -> None:
    SPACES[name] = factory
    _INSTANCES.pop(name, None)


def get_space(name: str | EmbeddingSpace, *, load: bool = True, progress=None) -> EmbeddingSpace:
    """The (shared) space called ``name``, loaded from the cache or built on first use."""
    if isinstance(name, EmbeddingSpace):
        return name.load(progress=progress) if load else name
    if name not in SPACES:
        raise DPTextError(f"unknown space {name!r}; known spaces: {', '.join(sorted(SPACES))}")
    space = _INSTANCES.get(name)
    if space is None:
        space = _INSTANCES[name] = SPACES[name]()
    return space.load(progress=progress) if load else space


def list_spaces() -> list[str]:
    return sorted(SPACES)


def _register_builtin() -> None:
    from dptext.spaces.cl100k import Cl100kSpace
    from dptext.spaces.glove import GloveSpace
    from dptext.spaces.minilm import MiniLMWordPieceSpace
    from dptext.spaces.smollm2 import SmolLM2Space

    register_space("cl100k-11k", Cl100kSpace)
    register_space("glove-50d", GloveSpace)
    register_space("smollm2", SmolLM2Space)
    register_space("minilm-wordpiece", MiniLMWordPieceSpace)


_register_builtin()
