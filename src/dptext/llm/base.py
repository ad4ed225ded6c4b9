"""The chat-model protocol every backend implements (docs/algorithms.md).

A chat model takes a list of chat messages (``{"role": ..., "content": ...}``,
roles ``system`` / ``user`` / ``assistant``) and returns generated text, either
all at once (``complete``) or piece by piece (``stream``). Generation knobs are
the portable ones: ``max_tokens``, ``temperature`` (0 = greedy), ``stop``
strings and an optional ``seed`` (reproducible sampling where the backend
supports it). Backends: :mod:`dptext.llm.llamacpp` (in-process GGUF) and
:mod:`dptext.llm.openai_http` (any OpenAI-compatible endpoint).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Protocol, runtime_checkable

from dptext.errors import DPTextError, check_in_range

ROLES = ("system", "user", "assistant")
Message = dict  # {"role": str, "content": str}


@dataclass
class Completion:
    """One finished generation: the text plus what the backend reported about it."""

    text: str
    model: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@runtime_checkable
class ChatModel(Protocol):
    """What the pipeline needs from a language model, local or remote."""

    name: str
    is_local: bool  # True when text given to it never leaves this machine

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7,
                 stop: Sequence[str] | None = None, seed: int | None = None) -> Completion:
        ...

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7,
               stop: Sequence[str] | None = None, seed: int | None = None) -> Iterator[str]:
        ...

    def describe(self) -> dict:
        ...


def check_messages(messages) -> list[dict]:
    """Validate chat messages and return plain ``{"role", "content"}`` dict copies."""
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        raise DPTextError("messages must be a non-empty list of {'role': ..., 'content': ...} dicts")
    out = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise DPTextError(f"message {i} must be a dict with 'role' and 'content'")
        if m["role"] not in ROLES:
            raise DPTextError(f"message {i} has unknown role {m['role']!r}; use one of {', '.join(ROLES)}")
        if not isinstance(m["content"], str):
            raise DPTextError(f"message {i} content must be text")
        out.append({"role": m["role"], "content": m["content"]})
    return out


def check_generation(max_tokens, temperature, stop) -> tuple[int, float, list[str] | None]:
    """Validate the portable generation knobs."""
    try:
        mt = int(max_tokens)
    except (TypeError, ValueError):
        raise DPTextError(f"invalid max_tokens {max_tokens!r}: must be an integer >= 1") from None
    if mt < 1:
        raise DPTextError(f"invalid max_tokens {max_tokens!r}: must be >= 1")
    t = check_in_range(temperature, name="temperature", lo=0.0, hi=2.0)
    if stop is None:
        stops = None
    elif isinstance(stop, str):
        stops = [stop]
    else:
        stops = [str(s) for s in stop]
    if stops is not None and any(not s for s in stops):
        raise DPTextError("stop strings must be non-empty")
    return mt, t, stops
