"""Local extraction for ``mode: inferdpt`` (see ``docs/algorithms.md``, "InferDPT"), on the core's prompts.

The upstream answered the *perturbed* conversation. The local model (in
process, on this machine) then reads the raw conversation and that perturbed
answer and writes the final reply with :func:`dptext.inferdpt.extraction_messages`
(task ``answer``): ``instruction`` = the public system/developer instructions,
``document`` = the raw conversation (every non-system turn, ``role: text``),
``generation`` = the upstream's answer. :func:`dptext.inferdpt.require_local`
refuses a model that is not on this machine. Nothing here goes over the network.
"""

from __future__ import annotations

from collections.abc import Iterator

from dptext.inferdpt import extraction_messages, require_local
from dptext.server.config import ServerConfig
from dptext.server.request import ChatRequest

DEFAULT_INSTRUCTION = "Reply to the last user message of the conversation."


class Extractor:
    def __init__(self, cfg: ServerConfig) -> None:
        from dptext.llm import Prompts, get_backend

        e = cfg.extraction
        self.model = get_backend(e.model, **e.options)
        require_local(self.model, "extraction.model (it reads the raw private text)")
        self.prompts = Prompts()
        self.max_tokens = e.max_tokens
        self.temperature = e.temperature
        self.model.complete([{"role": "user", "content": "Hi"}], max_tokens=1, temperature=0.0)  # load now

    def describe(self) -> dict:
        d = self.model.describe()
        return {"backend": d.get("backend"), "model": d.get("model"), "location": d.get("location")}

    def messages(self, req: ChatRequest, generation: str) -> list[dict]:
        public = [s.text for m in req.messages if m.role in ("system", "developer") for s in m.segments]
        instruction = "\n".join(t for t in public if t.strip()) or DEFAULT_INSTRUCTION
        turns = []
        for m in req.messages:
            if m.role in ("system", "developer"):
                continue
            turns.append(f"{m.role}: " + "".join(s.text for s in m.segments))
        return extraction_messages(self.prompts, "answer", instruction, "\n".join(turns), generation.strip())

    def _gen(self, max_tokens: int | None) -> dict:
        return {"max_tokens": min(max_tokens or self.max_tokens, self.max_tokens), "temperature": self.temperature}

    def complete(self, req: ChatRequest, generation: str, max_tokens: int | None = None):
        return self.model.complete(self.messages(req, generation), **self._gen(max_tokens))

    def stream(self, req: ChatRequest, generation: str, max_tokens: int | None = None) -> Iterator[str]:
        return self.model.stream(self.messages(req, generation), **self._gen(max_tokens))
