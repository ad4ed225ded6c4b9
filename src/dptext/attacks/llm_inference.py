"""LLM inference attack (docs/algorithms.md; InferDPT's GPT inference attack, prompt of its Appendix C).

Any chat backend is asked to restore each perturbed unit of a sentence to
its most likely original; the answer should be a list of lists, one inner
list of predictions per input. Parsing is robust: smart quotes are
normalised, ``#`` comments dropped, the outermost ``[...]`` block is read as
JSON or a Python literal, and as a last resort the quoted strings are taken
in order. A malformed or short answer never crashes: the units it fails to
cover count as failures (``unparsed_units`` in the report).

Backends: ``dptext.llm.get_backend(spec)`` (in-process SmolLM2 by default, or
any OpenAI-compatible URL), or any object with ``complete(messages, *,
max_tokens, temperature, stop)`` returning text or an object with ``.text``.
"""

from __future__ import annotations

import ast
import json
import re

from dptext.attacks.base import Attack, Observed, register_attack

PROMPT = """Given a list of tokens, denoted as "INPUTS," which have been subjected to text perturbation \
through differential privacy techniques, your task is to recover each token in the list to its most likely \
original one.
As an example, consider the list "INPUTS":
["Privacy", "LLM", "Text"].
The expected output format should be:
[
["Prediction"], # Corresponding to "Privacy"
["Prediction"], # Corresponding to "LLM"
["Prediction"] # Corresponding to "Text"
]
"Prediction" represents the most plausible original tokens before perturbation.
For the given list of "INPUTS":
{inputs}
Generate predictions for each token in the list."""

_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2018": "'", "\u2019": "'"})


def _as_cands(item) -> list[str]:
    if isinstance(item, str):
        return [item.strip()] if item.strip() else []
    if isinstance(item, (list, tuple)):
        return [str(x).strip() for x in item if isinstance(x, (str, int, float)) and str(x).strip()]
    return []


def parse_predictions(text: str, n: int) -> tuple[list[list[str]], int]:
    """(``n`` candidate lists, how many of them the answer failed to give)."""
    text = (text or "").translate(_QUOTES)
    text = re.sub(r"#[^\n]*", "", text)
    parsed = None
    lo, hi = text.find("["), text.rfind("]")
    if 0 <= lo < hi:
        block = text[lo : hi + 1]
        for loader in (json.loads, ast.literal_eval):
            try:
                value = loader(block)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                continue
            if isinstance(value, (list, tuple)):
                parsed = [_as_cands(v) for v in value]
                if n == 1 and parsed and all(isinstance(v, str) for v in value):
                    parsed = [[str(v).strip() for v in value if str(v).strip()]]
                break
    if parsed is None:
        rows = [re.findall(r'"([^"\n]+)"', ln) for ln in text.splitlines()]
        rows = [r for r in rows if r]
        if len(rows) >= n:
            parsed = [[w.strip() for w in r] for r in rows]
        else:
            parsed = [[w.strip()] for w in re.findall(r'"([^"\n]+)"', text)]
    parsed = parsed[:n]
    out = parsed + [[] for _ in range(n - len(parsed))]
    return out, sum(1 for c in out if not c)


def _text_of(answer) -> str:
    return answer if isinstance(answer, str) else getattr(answer, "text", "") or ""


@register_attack("llm")
class LLMInference(Attack):
    model_option = "backend"

    def __init__(self, mechanism, *, k: int = 5, backend=None, chunk: int = 16, max_tokens_per_unit: int = 12,
                 progress=None) -> None:
        super().__init__(mechanism, k=k, progress=progress)
        self.backend_spec = backend
        self._backend = None
        self.chunk = max(1, int(chunk))
        self.max_tokens_per_unit = int(max_tokens_per_unit)
        self.unparsed = 0
        self.calls = 0

    @property
    def backend(self):
        if self._backend is None:
            spec = self.backend_spec
            if spec is not None and not isinstance(spec, str) and hasattr(spec, "complete"):
                self._backend = spec
            else:
                from dptext.llm import get_backend

                self._backend = get_backend(spec)
        return self._backend

    def ask(self, units: list[str]) -> list[list[str]]:
        inputs = json.dumps(units, ensure_ascii=False)
        messages = [{"role": "user", "content": PROMPT.format(inputs=inputs)}]
        answer = self.backend.complete(messages, max_tokens=self.max_tokens_per_unit * len(units) + 16,
                                       temperature=0.0, stop=None)
        self.calls += 1
        cands, missing = parse_predictions(_text_of(answer), len(units))
        self.unparsed += missing
        return [c[: self.k] for c in cands]

    def rank(self, obs: Observed):
        self.unparsed = 0
        out: list = [[] for _ in range(obs.n_targets)]
        by_sent: dict[int, list[int]] = {}
        for t, s in enumerate(obs.sent.tolist()):
            by_sent.setdefault(s, []).append(t)
        observed = obs.observed
        task = self.progress.add_task("LLM inference", total=obs.n_targets) if self.progress is not None else None
        for targets in by_sent.values():
            for start in range(0, len(targets), self.chunk):
                part = targets[start : start + self.chunk]
                for t, cands in zip(part, self.ask([observed[t] for t in part])):
                    out[t] = cands
                if task is not None:
                    self.progress.advance(task, len(part))
        return out

    def details(self, obs, ranking) -> dict:
        return {"unparsed_units": self.unparsed, "llm_calls": self.calls}
