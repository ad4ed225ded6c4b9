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
parts, ``logit_bias``, ``stop`` strings with letter- or digit-like characters)
are refused with 400, and identifiers (``user``, ``metadata``, message
``name``) are dropped, so nothing leaves the machine unexamined. The body
itself must be strict JSON: no ``NaN``/``Infinity``, no lone surrogates, no
duplicate keys in any object (a later ``"role"`` would silently win over an
earlier one), nesting at most ``MAX_DEPTH``.

Numeric parameters are checked against their documented OpenAI type and
range (see :mod:`dptext.server.params`); a wrong type or a value out of range
is a 400 naming the parameter. ``logit_bias`` is refused: its keys are token
ids, so a map of them spells text in the upstream's tokenizer. ``seed`` is
forwarded (a 64-bit integer chosen by the client, like ``temperature``): the
proxy perturbs text, not numbers the client sets itself, so a client must not
derive a seed from private data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from dptext.server.config import ROLES, ServerConfig
from dptext.server.errors import bad_request
from dptext.server.params import RANGES, check_stop, numeric_params

MAX_DEPTH = 32
_SURROGATE = re.compile("[\ud800-\udfff]")
REFUSED = ("tools", "tool_choice", "functions", "function_call", "parallel_tool_calls", "audio",
           "prediction", "web_search_options", "logit_bias")


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


_KNOWN_KEYS = frozenset(("model", "messages", "role", "content", "name", "type", "text", "stream", "stream_options",
                         "include_usage", "stop", "logprobs", "response_format", "user", "metadata", *REFUSED))


def _unique_keys(pairs: list) -> dict:
    """An object's pairs as a dict; a key given twice is a 400 (the last one would win silently). The key is
    named only when it is a known field name (an arbitrary key could be private text)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))
        known = dup in _KNOWN_KEYS or dup in RANGES
        raise bad_request("request body repeats the key " + (repr(dup) if known else "(not shown)")
                          + " in one object", param=dup if known else None, code="invalid_json")
    return out


def decode_body(raw: bytes):
    """Strict JSON decoding: every malformed body is a 400 with code ``invalid_json``."""
    try:
        body = json.loads(raw, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
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


def _params(body: dict, cfg: ServerConfig, stream: bool) -> dict:
    out = numeric_params(body)
    if out.get("n", 1) > cfg.limits.max_n:
        raise bad_request(f"n = {out['n']} is above this proxy's limit of {cfg.limits.max_n}", param="n",
                          code="limit_exceeded")
    cap = cfg.limits.max_tokens  # a cap on what the client asks; no limit asked, none forwarded
    for k in ("max_tokens", "max_completion_tokens"):
        if k in out:
            out[k] = min(out[k], cap)
    if body.get("stop") is not None:
        out["stop"] = check_stop(body["stop"])
    if body.get("logprobs") is not None:
        if not isinstance(body["logprobs"], bool):
            raise bad_request("logprobs must be true or false", param="logprobs")
        out["logprobs"] = body["logprobs"]
    so = body.get("stream_options")
    if so is not None:
        if not isinstance(so, dict) or set(so) - {"include_usage"} or \
                not isinstance(so.get("include_usage", False), bool):
            raise bad_request("stream_options must be {'include_usage': true|false}", param="stream_options")
        if stream and cfg.mode == "perturb" and "include_usage" in so:  # the upstream's stream is relayed
            out["stream_options"] = {"include_usage": so["include_usage"]}
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
    params = _params(body, cfg, stream)
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return ChatRequest(out, params, stream, include_usage)
