"""Chat-model backends (docs/algorithms.md): one protocol, two backends, one factory.

``get_backend(spec)``:

* ``None`` / ``"local"`` / a ``.gguf`` path / an installed model package name
  -> :class:`LlamaCppChat` (in-process llama.cpp; default SmolLM2-135M-Instruct);
* ``"http://..."`` / ``"https://..."`` -> :class:`OpenAIChat` (any
  OpenAI-compatible endpoint; ``model``, ``api_key_env``, timeouts and
  retries as keyword options);
* an object that already implements :class:`ChatModel` is returned as is.
"""

from __future__ import annotations

from dptext.errors import DPTextError
from dptext.llm.base import ChatModel, Completion, Message, check_generation, check_messages
from dptext.llm.prompts import Prompts

HTTP_OPTIONS = ("model", "api_key_env", "timeout", "connect_timeout", "max_retries", "backoff", "max_backoff")
LOCAL_OPTIONS = ("n_ctx", "n_threads", "repeat_penalty", "generate_options")


def get_backend(spec=None, **options) -> ChatModel:
    """A chat model from a short spec (see the module docstring).

    Options set to ``None`` are ignored; an option that does not apply to the
    chosen backend is an error.
    """
    if spec is not None and not isinstance(spec, str) and hasattr(spec, "complete"):
        if options:
            raise DPTextError("options cannot be applied to an existing chat model object")
        return spec
    options = {k: v for k, v in options.items() if v is not None}
    s = "local" if spec is None else str(spec).strip()
    if not s:
        raise DPTextError("empty model backend; use 'local', a .gguf path, a model package or an http(s):// URL")
    if "://" in s:
        if not s.lower().startswith(("http://", "https://")):
            raise DPTextError(f"unknown backend {s!r}: URLs must start with http:// or https://")
        _check_options(options, HTTP_OPTIONS, "an HTTP endpoint")
        from dptext.llm.openai_http import OpenAIChat

        return OpenAIChat(s, **options)
    if "model" in options:
        raise DPTextError("a model name applies to HTTP endpoints only; name the GGUF file or package instead")
    _check_options(options, LOCAL_OPTIONS, "an in-process model")
    from dptext.llm.llamacpp import LlamaCppChat

    return LlamaCppChat(s, **options)


def _check_options(options: dict, allowed: tuple, what: str) -> None:
    bad = sorted(set(options) - set(allowed))
    if bad:
        raise DPTextError(f"option(s) {', '.join(bad)} do not apply to {what}")


__all__ = ["ChatModel", "Completion", "Message", "Prompts", "check_generation", "check_messages", "get_backend"]
