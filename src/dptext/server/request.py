"""Decode a chat-completions request and split it into public and private segments.

Which text is private (the proxy's contract):

* The whole content of a message whose role is in ``privacy.private_roles``
  (default: ``user``) is private. ``tool`` results are private too
  (``privacy.tool_messages: private``, the default) or refused with 400
  (``refuse``). In ``mode: inferdpt`` assistant turns are private as well:
  the proxy wrote them locally from the raw text.
* ``<private>...</private>`` spans (the tag name is configurable) only *add*
  privacy: in a public role (``system``, ``developer``, ``assistant``) they
  mark the private parts; in a private role the message stays private in full
  and the tags are removed. Only ``privacy.tags_narrow_private_roles: true``
  makes the text outside the tags of a private role public.
* Tags match ASCII letters only, in any ASCII case: ``<PRIVATE>`` is a tag,
  ``<prıvate>`` (dotless ı) or ``<PRİVATE>`` (dotted İ) are plain text. Tags
  must balance and never nest; anything else is a 400 (fail closed: an
  unclosed tag would otherwise leave its text unmarked).

Only an allowlist of sampling parameters is forwarded; fields that can carry
free text upstream (``tools``, ``functions``, ``tool_calls``, non-text content
parts, ``stop`` strings with letters or digits) are refused with 400, and
identifiers (``user``, ``metadata``, message ``name``) are dropped, so
nothing leaves the machine unexamined. The body itself must be strict JSON:
no ``NaN``/``Infinity``, no lone surrogates, nesting at most ``MAX_DEPTH``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from dptext.server.config import ROLES, ServerConfig
from dptext.server.errors import bad_request

MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")
REFUSED = ("tools", "tool_choice", "functions", "function_call", "parallel_tool_calls", "audio",
           "prediction", "web_search_options")
NUMBER_PARAMS = ("temperature", "top_p", "presence_penalty", "frequency_penalty")
INT_PARAMS = ("max_tokens", "max_completion_tokens", "n", "seed", "top_logprobs")


@dataclass
class Segment:
    text: str
    private: bool


@dataclass
class Message:
    role: str
    segments: list[Segment]

    @property
    def private_chars(self) -> int:
        return sum(len(s.text) for s in self.segments if s.private)


@dataclass
class ChatRequest:
    messages: list[Message]
    params: dict = field(default_factory=dict)  # forwarded sampling parameters
    stream: bool = False
    include_usage: bool = False

    @property
    def private_spans(self) -> int:
        return sum(1 for m in self.messages for s in m.segments if s.private)


def _reject_constant(name: str):
    raise bad_request(f"request body is not strict JSON ({name} is not a number)", code="invalid_json")


def _check_tree(obj, depth: int = 0) -> None:
    """400 for nesting deeper than MAX_DEPTH or strings holding lone surrogates (not encodable as UTF-8)."""
    if depth > MAX_DEPTH:
        raise bad_request(f"request body is nested deeper than {MAX_DEPTH} levels", code="invalid_json")
    if isinstance(obj, str):
        if not obj.isascii() and _SURROGATE.search(obj):
            raise bad_request("request body holds a lone surrogate (\\ud800-\\udfff), which is not text",
                              code="invalid_json")
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _check_tree(k, depth + 1)
            _check_tree(v, depth + 1)
    elif isinstance(obj, list):
        for v in obj:
            _check_tree(v, depth + 1)


def decode_body(raw: bytes):
    """Strict JSON decoding: every malformed body is a 400 with code ``invalid_json``."""
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise bad_request(f"request body is nested deeper than {MAX_DEPTH} levels", code="invalid_json") from None
    except ValueError:  # includes UnicodeDecodeError
        raise bad_request("request body is not valid JSON", code="invalid_json") from None
    _check_tree(body)
    return body


def split_private(text: str, tag: str, default_private: bool, where: str,
                  narrow: bool = False) -> list[Segment]:
    """Split ``text`` at ``<tag>``/``</tag>`` (ASCII-only, any ASCII case).

    Without tags the whole text gets ``default_private``. With tags, the tagged spans are private; the text
    around them keeps ``default_private`` unless ``narrow`` is set (then it is public).
    """
    pattern = re.compile(rf"<(/?){re.escape(tag)}\s*>", re.IGNORECASE | re.ASCII)
    outside = default_private and not narrow
    pieces: list[Segment] = []
    pos, inside, seen = 0, False, False
    for m in pattern.finditer(text):
        seen = True
        closing = bool(m.group(1))
        if closing != inside:
            what = "closing" if closing else "nested opening"
            raise bad_request(f"{where}: unbalanced <{tag}> tags ({what} tag at character {m.start()})",
                              param=where, code="unbalanced_private_tag")
        if m.start() > pos:
            pieces.append(Segment(text[pos:m.start()], inside or outside))
        inside = not closing
        pos = m.end()
    if inside:
        raise bad_request(f"{where}: <{tag}> tag is never closed", param=where, code="unbalanced_private_tag")
    if not seen:
        return [Segment(text, default_private)] if text else []
    if pos < len(text):
        pieces.append(Segment(text[pos:], outside))
    merged: list[Segment] = []  # neighbours of equal privacy become one segment (tags removed)
    for seg in pieces:
        if merged and merged[-1].private == seg.private:
            merged[-1] = Segment(merged[-1].text + seg.text, seg.private)
        else:
            merged.append(seg)
    return merged


def _content_text(content, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise bad_request(f"{where}[{j}]: content parts of type {kind!r} are not supported "
                                  "(only text can be perturbed)", param=where, code="unsupported_content")
            texts.append(part["text"])
        return "\n".join(texts)
    raise bad_request(f"{where} must be a string or a list of text parts", param=where)


def _params(body: dict, cfg: ServerConfig) -> dict:
    out = {}
    for k in NUMBER_PARAMS:
        if body.get(k) is not None:
            v = body[k]
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise bad_request(f"{k} must be a number", param=k)
            out[k] = v
    for k in INT_PARAMS:
        if body.get(k) is not None:
            v = body[k]
            if isinstance(v, bool) or not isinstance(v, int) or (k != "seed" and v < 1 and k != "top_logprobs"):
                raise bad_request(f"{k} must be a positive integer", param=k)
            out[k] = v
    if out.get("n", 1) > cfg.limits.max_n:
        raise bad_request(f"n = {out['n']} is above this proxy's limit of {cfg.limits.max_n}", param="n",
                          code="limit_exceeded")
    cap = cfg.limits.max_tokens
    for k in ("max_tokens", "max_completion_tokens"):
        if k in out:
            out[k] = min(out[k], cap)
    if "max_tokens" not in out and "max_completion_tokens" not in out:
        out["max_tokens"] = cap
    if body.get("stop") is not None:
        stop = body["stop"]
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, list) or len(stop) > 4 or not all(isinstance(s, str) for s in stop):
            raise bad_request("stop must be a string or a list of at most 4 strings", param="stop")
        if any(c.isalnum() for s in stop for c in s):  # free text would go upstream unperturbed
            raise bad_request("stop strings with letters or digits are not supported by the privacy proxy "
                              "(they would go upstream unperturbed); use punctuation or whitespace only",
                              param="stop", code="unsupported_parameter")
        out["stop"] = stop
    if body.get("logprobs") is not None:
        out["logprobs"] = bool(body["logprobs"])
    rf = body.get("response_format")
    if rf is not None:
        if not isinstance(rf, dict) or rf.get("type") not in ("text", "json_object"):
            raise bad_request("response_format: only {'type': 'text'} or {'type': 'json_object'} are supported",
                              param="response_format")
        out["response_format"] = {"type": rf["type"]}
    return out


def parse_request(body, cfg: ServerConfig) -> ChatRequest:
    """Validate a decoded JSON body and split every message into public/private segments."""
    if not isinstance(body, dict):
        raise bad_request("request body must be a JSON object")
    for k in REFUSED:
        if body.get(k) is not None:
            raise bad_request(f"'{k}' is not supported by the privacy proxy (its text could not be perturbed)",
                              param=k, code="unsupported_parameter")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise bad_request("'model' is required", param="model")
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        raise bad_request("'messages' must be a non-empty list", param="messages")
    if len(msgs) > cfg.limits.max_messages:
        raise bad_request(f"too many messages ({len(msgs)} > {cfg.limits.max_messages})", param="messages")
    p = cfg.privacy
    priv = set(p.private_roles) | {"tool"}
    if cfg.mode == "inferdpt":  # earlier answers were rebuilt locally from raw text: private too
        priv.add("assistant")
    out = []
    for i, m in enumerate(msgs):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise bad_request(f"{where} must be an object", param=where)
        role = m.get("role")
        if role not in ROLES:
            raise bad_request(f"{where}.role must be one of {', '.join(ROLES)}", param=f"{where}.role")
        if m.get("tool_calls") or m.get("function_call"):
            raise bad_request(f"{where}: tool calls are not supported by the privacy proxy", param=where,
                              code="unsupported_parameter")
        if role == "tool" and p.tool_messages == "refuse":
            raise bad_request(f"{where}: tool messages are refused by this proxy (privacy.tool_messages: refuse)",
                              param=f"{where}.role", code="unsupported_role")
        text = _content_text(m.get("content"), f"{where}.content")
        segments = split_private(text, p.tag, role in priv, f"{where}.content", p.tags_narrow_private_roles)
        out.append(Message(role, segments))
    stream = body.get("stream") or False
    if not isinstance(stream, bool):
        raise bad_request("stream must be true or false", param="stream")
    so = body.get("stream_options") or {}
    include_usage = bool(isinstance(so, dict) and so.get("include_usage"))
    return ChatRequest(out, _params(body, cfg), stream, include_usage)
