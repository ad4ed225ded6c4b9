"""The InferDPT chain: perturb the document locally, ask the remote model, rebuild the answer locally.

* :func:`remote_messages` and :func:`extraction_messages` are the one home of
  the InferDPT prompts (instruction + perturbed document for the remote model;
  raw document + remote generation for the local one), and
  :func:`require_local` the one check that the local model runs here.
* :class:`InferDPT` chains them around the core, :class:`dptext.pipeline.Sanitizer`
  (see ``docs/algorithms.md``, "InferDPT").
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numpy as np

from dptext.errors import DPTextError, PrivacyError
from dptext.llm import get_backend
from dptext.llm.prompts import Prompts, messages, render
from dptext.pipeline import Sanitized, Sanitizer, Segment


def require_local(backend, what: str = "the local model") -> None:
    """Refuse a backend that would take raw private text off this machine."""
    if not getattr(backend, "is_local", False):
        raise PrivacyError(f"{what} must run on this machine (in process, or an http:// endpoint on loopback); "
                           f"{backend!r} would receive the raw document")


def remote_messages(prompts: Prompts, task: str, instruction: str, perturbed: str) -> list[dict]:
    """Remote step input: the public instruction and the PERTURBED document only."""
    template = prompts.remote_continue if task == "continue" else prompts.remote_answer
    return messages(prompts.remote_system, render(template, instruction=instruction, document=perturbed))


def extraction_messages(prompts: Prompts, task: str, instruction: str, document: str,
                        generation: str) -> list[dict]:
    """Local step input: the raw document and the remote's (perturbed) generation."""
    template = prompts.extract_continue if task == "continue" else prompts.extract_answer
    return messages(prompts.local_system,
                    render(template, instruction=instruction, document=document, generation=generation))


TASKS = ("continue", "answer")
STAGES = ("perturb", "remote", "extract")

SAMPLE_DOCUMENT = (
    "Dear Dr. Patel, my name is Maria Gonzalez and I live on Elm Street in Springfield. "
    "Last week my blood tests showed type 2 diabetes, and I am worried about keeping my job "
    "as a school bus driver while I start the new"
)


@dataclass
class InferResult:
    """Everything one pipeline run produced, in order (see docs/algorithms.md)."""

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
    """``InferDPT(mechanism, remote, local)``; backends are ChatModel objects or specs for ``get_backend``.

    ``mechanism`` is a mechanism object, a :class:`~dptext.mechanisms.spec.MechanismSpec` or a
    :class:`Sanitizer` (to add a policy); perturbation goes through :class:`Sanitizer` either way.
    """

    def __init__(self, mechanism, remote=None, local=None, *, prompts: Prompts | None = None,
                 max_tokens: int = 100, temperature: float = 0.7, extract_max_tokens: int | None = None,
                 extract_temperature: float = 0.3) -> None:
        from dptext.mechanisms.spec import MechanismSpec

        if isinstance(mechanism, Sanitizer):
            self.sanitizer = mechanism
        elif isinstance(mechanism, MechanismSpec) or callable(getattr(mechanism, "perturb", None)):
            self.sanitizer = Sanitizer(mechanism)
        else:
            raise DPTextError("mechanism must be a Mechanism object (see dptext.mechanisms.get_mechanism)")
        self.mechanism = self.sanitizer.mechanism
        self.remote = get_backend(remote)
        self.local = get_backend(local)
        require_local(self.local)
        self.prompts = prompts or Prompts()
        self.max_tokens = int(max_tokens)
        self.extract_max_tokens = int(extract_max_tokens or max_tokens)
        if self.max_tokens < 1 or self.extract_max_tokens < 1:
            raise DPTextError("max_tokens must be >= 1")
        self.temperature, self.extract_temperature = float(temperature), float(extract_temperature)

    @classmethod
    def from_options(cls, *, mechanism: str = "rantext", epsilon=3, space: str | None = None,
                     remote=None, remote_model: str | None = None, remote_options: dict | None = None,
                     local=None, seed: int | None = None, progress=None, policy=None, **kwargs) -> "InferDPT":
        """Build the mechanism from its settings, then the pipeline (the CLI's path)."""
        from dptext.mechanisms.spec import MechanismSpec

        spec = MechanismSpec(mechanism=mechanism, epsilon=epsilon, space=space, seed=seed)
        if remote_model is not None and (remote is None or "://" not in str(remote)):
            raise DPTextError("--remote-model applies to an http(s):// remote endpoint only")
        remote_backend = get_backend(remote, model=remote_model, **(remote_options or {}))
        return cls(Sanitizer(spec, policy=policy, progress=progress), remote_backend, local, **kwargs)

    # ----- stages ---------------------------------------------------------------------------------
    def _perturb(self, document: str, rng) -> Sanitized:
        """Stage 1, through the core. Any failure is a PrivacyError: nothing is sent (fail closed)."""
        out = self.sanitizer.sanitize([Segment(document, private=True)], rng=rng)
        if not out.texts[0].strip():
            raise PrivacyError("perturbation left no text to send (every unit was dropped); "
                               "nothing was sent to the remote model")
        return out

    def remote_messages(self, task: str, instruction: str, perturbed: str) -> list[dict]:
        return remote_messages(self.prompts, task, instruction, perturbed)

    def local_messages(self, task: str, instruction: str, document: str, generation: str) -> list[dict]:
        return extraction_messages(self.prompts, task, instruction, document, generation)

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
        perturbed = self._perturb(document, rng)
        ptext = perturbed.texts[0]
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
        privacy = {**perturbed.report, **perturbed.report["units"]}
        privacy["sent_to_remote"] = "public instruction + perturbed document" if task == "answer" else \
            "instruction + perturbed document"
        privacy["remote_location"] = self.remote.describe().get("location", "unknown")
        return InferResult(
            task=task, instruction=instruction, document=document, perturbed_document=ptext,
            remote_messages=remote_msgs, remote_output=generation, local_messages=local_msgs,
            output=_clean(local_out.text, label), privacy=privacy, timings=timings,
            units=perturbed.units(0),
            remote={**self.remote.describe(), **_usage(remote_out)},
            local={**self.local.describe(), **_usage(local_out)},
            generation={"max_tokens": self.max_tokens, "temperature": self.temperature,
                        "extract_max_tokens": self.extract_max_tokens,
                        "extract_temperature": self.extract_temperature, "seed": seed},
        )


def _usage(c) -> dict:
    return {"finish_reason": c.finish_reason, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens}
