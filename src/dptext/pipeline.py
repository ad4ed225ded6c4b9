"""InferDPT: private inference through a black-box LLM (SPEC section 2).

1. perturb the private document with a DP mechanism (locally);
2. send ``instruction + perturbed document`` to the remote chat model and
   receive the perturbed generation (the only step that may leave the machine);
3. a local model reads the raw document and the perturbed generation and writes
   the final output (extraction).

Fail closed: if step 1 fails for any reason a :class:`PrivacyError` is raised
before any backend is called, so the raw document reaches no endpoint. The
remote messages are built from the public instruction, the prompt templates
and the perturbed text only; the local model must run on this machine
(in-process, or an HTTP server on loopback).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from dptext.errors import DPTextError, PrivacyError
from dptext.llm import get_backend
from dptext.llm.prompts import Prompts, messages, render

TASKS = ("continue", "answer")
STAGES = ("perturb", "remote", "extract")

SAMPLE_DOCUMENT = (
    "Dear Dr. Patel, my name is Maria Gonzalez and I live on Elm Street in Springfield. "
    "Last week my blood tests showed type 2 diabetes, and I am worried about keeping my job "
    "as a school bus driver while I start the new"
)


@dataclass
class InferResult:
    """Everything one pipeline run produced, in order (see SPEC 2)."""

    task: str
    instruction: str
    document: str  # raw, never sent
    perturbed_document: str
    remote_messages: list[dict]  # exactly what was given to the remote backend
    remote_output: str
    local_messages: list[dict]
    output: str  # the rebuilt answer
    privacy: dict
    timings: dict  # seconds per stage, plus total and overhead
    units: list[dict] = field(default_factory=list)
    remote: dict = field(default_factory=dict)
    local: dict = field(default_factory=dict)
    generation: dict = field(default_factory=dict)

    @property
    def perturbed_prompt(self) -> str:
        """The user content sent to the remote model (instruction + perturbed document)."""
        return self.remote_messages[-1]["content"]

    def to_dict(self) -> dict:
        d = asdict(self)
        d["perturbed_prompt"] = self.perturbed_prompt
        return d


def _clean(text: str, label: str) -> str:
    """Strip whitespace and a repeated field label (``Extended Text:``) from a model reply."""
    out = text.strip()
    if out.lower().startswith(label.lower()):
        out = out[len(label):].lstrip(" :\n")
    return out


class InferDPT:
    """``InferDPT(mechanism, remote, local)``; backends are ChatModel objects or specs for ``get_backend``."""

    def __init__(self, mechanism, remote=None, local=None, *, prompts: Prompts | None = None,
                 max_tokens: int = 100, temperature: float = 0.7, extract_max_tokens: int | None = None,
                 extract_temperature: float = 0.3) -> None:
        if not callable(getattr(mechanism, "perturb", None)):
            raise DPTextError("mechanism must be a Mechanism object (see dptext.mechanisms.get_mechanism)")
        self.mechanism = mechanism
        self.remote = get_backend(remote)
        self.local = get_backend(local)
        if not getattr(self.local, "is_local", False):
            raise PrivacyError(f"the local model must run on this machine (in-process or on loopback); "
                               f"{self.local!r} would receive the raw document")
        self.prompts = prompts or Prompts()
        self.max_tokens = int(max_tokens)
        self.extract_max_tokens = int(extract_max_tokens or max_tokens)
        if self.max_tokens < 1 or self.extract_max_tokens < 1:
            raise DPTextError("max_tokens must be >= 1")
        self.temperature, self.extract_temperature = float(temperature), float(extract_temperature)

    @classmethod
    def from_options(cls, *, mechanism: str = "rantext", epsilon=3, space: str | None = None,
                     remote=None, remote_model: str | None = None, remote_options: dict | None = None,
                     local=None, seed: int | None = None, progress=None, **kwargs) -> "InferDPT":
        """Build the mechanism by name, then the pipeline (the CLI's path)."""
        from dptext.mechanisms import get_mechanism

        mech = get_mechanism(mechanism, epsilon=epsilon, space=space, seed=seed, progress=progress)
        if remote_model is not None and (remote is None or "://" not in str(remote)):
            raise DPTextError("--remote-model applies to an http(s):// remote endpoint only")
        remote_backend = get_backend(remote, model=remote_model, **(remote_options or {}))
        return cls(mech, remote_backend, local, **kwargs)

    # ----- stages ---------------------------------------------------------------------------------
    def _perturb(self, document: str, rng):
        """Stage 1. Any failure becomes a PrivacyError: nothing is sent (fail closed)."""
        try:
            result = self.mechanism.perturb(document, rng=rng)
            text = result.text
            if not isinstance(text, str):
                raise TypeError(f"mechanism returned {type(text).__name__}, not text")
        except Exception as exc:  # noqa: BLE001 - fail closed on anything
            raise PrivacyError(f"perturbation failed ({type(exc).__name__}: {exc}); "
                               "nothing was sent to the remote model") from exc
        if not text.strip():
            raise PrivacyError("perturbation left no text to send (every unit was dropped); "
                               "nothing was sent to the remote model")
        return result, text

    def remote_messages(self, task: str, instruction: str, perturbed: str) -> list[dict]:
        """Stage 2 input: built from the public instruction and the PERTURBED document only."""
        template = self.prompts.remote_continue if task == "continue" else self.prompts.remote_answer
        return messages(self.prompts.remote_system, render(template, instruction=instruction, document=perturbed))

    def local_messages(self, task: str, instruction: str, document: str, generation: str) -> list[dict]:
        template = self.prompts.extract_continue if task == "continue" else self.prompts.extract_answer
        return messages(self.prompts.local_system,
                        render(template, instruction=instruction, document=document, generation=generation))

    # ----- the run --------------------------------------------------------------------------------
    def run(self, document: str, *, task: str = "continue", instruction: str | None = None,
            seed: int | None = None) -> InferResult:
        if not isinstance(document, str) or not document.strip():
            raise DPTextError("the document is empty")
        if task not in TASKS:
            raise DPTextError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
        if instruction is not None and not instruction.strip():
            raise DPTextError("the instruction is empty")
        if task == "answer" and instruction is None:
            raise DPTextError("task 'answer' needs an instruction (the public question or request)")
        instruction = instruction if instruction is not None else self.prompts.continue_instruction
        rng = np.random.default_rng(seed) if seed is not None else None
        timings: dict[str, float] = {}
        t_start = time.perf_counter()

        t0 = time.perf_counter()
        perturbed, ptext = self._perturb(document, rng)
        timings["perturb"] = time.perf_counter() - t0

        remote_msgs = self.remote_messages(task, instruction, ptext)
        t0 = time.perf_counter()
        remote_out = self.remote.complete(remote_msgs, max_tokens=self.max_tokens,
                                          temperature=self.temperature, seed=seed)
        timings["remote"] = time.perf_counter() - t0
        generation = _clean(remote_out.text, "")

        local_msgs = self.local_messages(task, instruction, document, generation)
        t0 = time.perf_counter()
        local_out = self.local.complete(local_msgs, max_tokens=self.extract_max_tokens,
                                        temperature=self.extract_temperature, seed=seed)
        timings["extract"] = time.perf_counter() - t0
        timings["total"] = time.perf_counter() - t_start
        timings["overhead"] = max(0.0, timings["total"] - sum(timings[s] for s in STAGES))

        label = "Extended Text" if task == "continue" else "Final Answer"
        privacy = dict(perturbed.privacy)
        privacy["sent_to_remote"] = "public instruction + perturbed document" if task == "answer" else \
            "instruction + perturbed document"
        privacy["remote_location"] = self.remote.describe().get("location", "unknown")
        return InferResult(
            task=task, instruction=instruction, document=document, perturbed_document=ptext,
            remote_messages=remote_msgs, remote_output=generation, local_messages=local_msgs,
            output=_clean(local_out.text, label), privacy=privacy, timings=timings,
            units=perturbed.to_dict()["units"] if hasattr(perturbed, "to_dict") else [],
            remote={**self.remote.describe(), **_usage(remote_out)},
            local={**self.local.describe(), **_usage(local_out)},
            generation={"max_tokens": self.max_tokens, "temperature": self.temperature,
                        "extract_max_tokens": self.extract_max_tokens,
                        "extract_temperature": self.extract_temperature, "seed": seed},
        )


def _usage(c) -> dict:
    return {"finish_reason": c.finish_reason, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens}
