"""Every prompt the InferDPT pipeline sends, in one place (docs/algorithms.md).

The wording is ours. The extraction prompt names the three fields docs/algorithms.md
asks for (prefix text, perturbed generation, extended text) and asks the
local model to extend the prefix using the perturbed generation as material.
Override any field with ``Prompts(...)`` or ``dataclasses.replace``; templates
are ``str.format`` strings whose placeholders are listed beside each field.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from dptext.errors import DPTextError


@dataclass(frozen=True)
class Prompts:
    # remote step, task "continue": {instruction} {document}  (document = the PERTURBED text)
    continue_instruction: str = "Write the next few sentences of this text."
    remote_continue: str = "Here is the beginning of a text:\n\n{document}\n\n{instruction}"
    # remote step, task "answer": {instruction} {document}  (instruction is public, document perturbed)
    remote_answer: str = "{instruction}\n\nDocument:\n{document}"
    # local extraction, task "continue": {document} (raw) {generation} (the remote's output)
    extract_continue: str = (
        "You will write the Extended Text: a continuation of the Prefix Text. "
        "The Perturbed Generation below was written from a noisy copy of the prefix. "
        "Use it as material: reuse its ideas and phrases that fit, but keep names, facts and tone "
        "consistent with the Prefix Text and ignore anything that does not fit. "
        "Reply with the Extended Text only.\n\n"
        "Prefix Text:\n{document}\n\n"
        "Perturbed Generation:\n{generation}\n\n"
        "Extended Text:"
    )
    # local extraction, task "answer": {instruction} {document} (raw) {generation}
    extract_answer: str = (
        "You will write the Final Answer to the Instruction about the Document. "
        "The Draft Answer below was written from a noisy copy of the document. "
        "Use it as material, but correct every detail so that it agrees with the Document. "
        "Reply with the Final Answer only.\n\n"
        "Instruction:\n{instruction}\n\n"
        "Document:\n{document}\n\n"
        "Draft Answer:\n{generation}\n\n"
        "Final Answer:"
    )
    # optional system messages (empty = the model's default)
    remote_system: str = ""
    local_system: str = ""

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Prompts":
        known = {f.name for f in fields(cls)}
        bad = sorted(set(data) - known)
        if bad:
            raise DPTextError(f"unknown prompt field(s) {', '.join(bad)}; known: {', '.join(sorted(known))}")
        return cls(**data)


def render(template: str, **values: str) -> str:
    """Fill a template; a missing or unknown placeholder is a clear error."""
    try:
        return template.format(**values)
    except (KeyError, IndexError, ValueError) as exc:
        raise DPTextError(f"prompt template cannot be filled ({type(exc).__name__}: {exc}); "
                          f"available placeholders: {', '.join(sorted(values))}") from None


def messages(system: str, user: str) -> list[dict]:
    out = [{"role": "system", "content": system}] if system else []
    out.append({"role": "user", "content": user})
    return out
