"""Final hidden states of a llama.cpp causal LM at chosen positions, without the LM head.

``HiddenStates(llm).run(tokens, rows)`` evaluates ``tokens`` in one pass on a
second context of the already loaded model (its own KV cache; weights shared)
and returns ``h[r]`` for each ``r`` in ``rows``: the output of the final RMS
norm (llama.cpp's ``result_norm`` tensor), i.e. exactly what the LM head
multiplies, so ``logits[r] = W_out · h[r]``.

How: only ``rows`` are marked as outputs, so llama.cpp gathers those rows
before the last layer's feed-forward block; the scheduler's evaluation callback
(``cb_eval``) asks for ``result_norm``, copies it out, and returns ``False``,
which ggml documents as "cancel the graph compute": the LM head (``n_vocab x
n_embd`` per output row) is never evaluated. The caller computes only the
logits it needs (:func:`q8_0_round` reproduces the activation rounding of a
``Q8_0`` LM head, so a float32 GEMM against the dequantized rows agrees with
llama.cpp's logits to float rounding). Fails closed: if the tensor is not seen,
or has the wrong size, :class:`~dptext.errors.DPTextError` is raised.
"""

from __future__ import annotations

import ctypes
import threading
from pathlib import Path

import numpy as np

from dptext.errors import DPTextError

NODE = b"result_norm"
QK8_0 = 32


def q8_0_round(x: np.ndarray) -> np.ndarray:
    """``x`` [P, n] as ggml's ``Q8_0`` activation quantizer leaves it, dequantized to float32.

    Per block of 32: ``d = fp16(max|x| / 127)``, ``q = rint(x · 127 / max|x|)`` (ties to
    even, as the AVX2 kernel), value ``d · q``. The LM head's integer dot products then
    equal the float32 dot product of these values with the dequantized weights.
    """
    x = np.asarray(x, dtype=np.float32)
    p, n = x.shape
    if n % QK8_0:
        raise DPTextError(f"hidden size {n} is not a multiple of {QK8_0}")
    b = x.reshape(p, n // QK8_0, QK8_0)
    amax = np.abs(b).max(axis=2, keepdims=True)
    inv = np.divide(np.float32(127.0), amax, out=np.zeros_like(amax), where=amax > 0)
    q = np.rint(b * inv)
    d = (amax / np.float32(127.0)).astype(np.float16).astype(np.float32)
    return (q * d).reshape(p, n)


def _ggml_base():
    import llama_cpp

    lib_dir = Path(llama_cpp.__file__).parent / "lib"
    names = sorted(lib_dir.glob("libggml-base.*")) or sorted(lib_dir.glob("ggml-base.*"))
    if not names:
        raise DPTextError(f"libggml-base not found in {lib_dir}")
    lib = ctypes.CDLL(str(names[0]))
    lib.ggml_get_name.restype = ctypes.c_char_p
    lib.ggml_get_name.argtypes = [ctypes.c_void_p]
    lib.ggml_nelements.restype = ctypes.c_int64
    lib.ggml_nelements.argtypes = [ctypes.c_void_p]
    lib.ggml_backend_tensor_get.restype = None
    lib.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t]
    return lib


class HiddenStates:
    """A second llama.cpp context on ``llm`` that returns final-norm hidden states and skips the LM head."""

    def __init__(self, llm, *, n_ctx: int, n_threads: int) -> None:
        import llama_cpp
        from llama_cpp import _internals

        self._llama_cpp = llama_cpp
        self._lib = _ggml_base()
        self.n_ctx = int(n_ctx)
        self.n_embd = int(llm.n_embd())
        self._parts: list[np.ndarray] = []
        self._error: str | None = None
        self._cb = llama_cpp.ggml_backend_sched_eval_callback(self._on_node)  # kept alive with self
        p = llama_cpp.llama_context_params()  # the model's own settings (attention kernel, RoPE, KV type) ...
        ctypes.memmove(ctypes.byref(p), ctypes.byref(llm.context_params), ctypes.sizeof(p))
        p.n_ctx = p.n_batch = p.n_ubatch = self.n_ctx  # ... with one micro-batch per prompt
        p.n_threads = p.n_threads_batch = int(n_threads)
        p.embeddings = False
        p.cb_eval = self._cb
        p.cb_eval_user_data = None
        self._ctx = _internals.LlamaContext(model=llm._model, params=p, verbose=False)
        self._batch = _internals.LlamaBatch(n_tokens=self.n_ctx, embd=0, n_seq_max=1, verbose=False)
        self.lock = threading.Lock()

    def _on_node(self, tensor, ask, _user) -> bool:
        try:
            if self._lib.ggml_get_name(tensor) != NODE:
                return not ask  # not wanted; when observing, keep computing
            if ask:
                return True
            n = int(self._lib.ggml_nelements(tensor))
            buf = np.empty(n, dtype=np.float32)
            self._lib.ggml_backend_tensor_get(tensor, buf.ctypes.data, 0, n * 4)
            self._parts.append(buf)
            return False  # cancel the rest of the graph: the LM head
        except Exception as exc:  # noqa: BLE001 - an exception must not cross the C callback
            self._error = repr(exc)
            return False

    def run(self, tokens, rows) -> np.ndarray:
        """``[len(rows), n_embd]`` float32 hidden states after ``tokens[: r + 1]`` for each sorted row ``r``."""
        tokens = [int(t) for t in tokens]
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return np.zeros((0, self.n_embd), dtype=np.float32)
        if len(tokens) > self.n_ctx or np.any(np.diff(rows) <= 0) or rows[0] < 0 or rows[-1] >= len(tokens):
            raise DPTextError("hidden states: rows must be sorted, distinct and inside a prompt of at most n_ctx")
        with self.lock:
            self._parts, self._error = [], None
            lc = self._llama_cpp
            lc.llama_memory_clear(lc.llama_get_memory(self._ctx.ctx), True)
            b = self._batch.batch
            b.n_tokens = len(tokens)
            want = np.zeros(len(tokens), dtype=bool)
            want[rows] = True
            for k, t in enumerate(tokens):
                b.token[k] = t
                b.pos[k] = k
                b.seq_id[k][0] = 0
                b.n_seq_id[k] = 1
                b.logits[k] = bool(want[k])
            rc = lc.llama_decode(self._ctx.ctx, b)
            parts, err = self._parts, self._error
            self._parts = []
        if rc != 0 or err is not None:
            raise DPTextError(f"hidden-state pass failed (llama_decode {rc}; {err})")
        h = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
        if h.size != len(rows) * self.n_embd:
            raise DPTextError(f"hidden-state pass returned {h.size} values, expected {len(rows)} x {self.n_embd}")
        return h.reshape(len(rows), self.n_embd)
