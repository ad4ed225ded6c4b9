"""The last wire leaks found by the outside probe, through the real proxy on loopback.

Client: raw httpx (the SDK cannot send duplicate keys or odd types). Upstream:
a recording server on loopback answering as a chat model (or with a fixed
status), which keeps every request it received.
"""

import json
from contextlib import contextmanager

import httpx
import pytest
from llama_server import recording_server, serve_app
from test_server_limits import AUTH, config

from dptext.server import create_app

MSG = [{"role": "user", "content": "Margaret has a cold"}]


@contextmanager
def proxy(**kw):
    with recording_server(**kw) as rec:
        with serve_app(create_app(config(rec.url))) as url:
            yield url, rec


@pytest.fixture(scope="module")
def live():
    with proxy(reply="Noted.") as pair:
        yield pair


def post(url, body, path="/chat/completions"):
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(url + path, content=content, headers=AUTH, trust_env=False, timeout=30)


def refused(live, body, param, code=None):
    url, rec = live
    before = len(rec.chat_requests())
    r = post(url, body)
    assert r.status_code == 400, (param, r.text)
    err = r.json()["error"]
    assert err["param"] == param, err
    assert code is None or err["code"] == code, err
    assert len(rec.chat_requests()) == before  # nothing went upstream
    return err


# ----- leak 1: stop strings with letter-like characters ------------------------------------------------------------
LETTER_LIKE = {"circled": "ⓜⓐⓡⓖ", "squared": "🄼🄰", "parenthesised": "⒨⒜", "regional indicators": "🇲🇦",
               "tag characters": "\U000E004D\U000E0041", "fullwidth": "Ｍａｒｇ", "negative circled": "🅜🅐",
               "circled digits": "①②", "circled ideograph": "㊙", "combining mark": "#\u0301"}


@pytest.mark.parametrize("name", LETTER_LIKE)
def test_stop_with_letter_like_symbols_is_refused(live, name):
    err = refused(live, {"model": "x", "messages": MSG, "stop": ["###", LETTER_LIKE[name]]}, "stop",
                  "unsupported_parameter")
    assert LETTER_LIKE[name] not in err["message"]


def test_punctuation_and_plain_symbol_stops_still_pass(live):
    url, rec = live
    stops = ["\n\n", "###", "—>", "🛑"]
    assert post(url, {"model": "x", "messages": MSG, "stop": stops}).status_code == 200
    assert rec.chat_requests()[-1]["stop"] == stops


# ----- leak 2: duplicate keys -----------------------------------------------------------------------------------------
DUPLICATES = {
    "role in a message": b'{"model": "x", "messages": [{"role": "user", "content": "Margaret has a cold", '
                         b'"role": "system"}]}',
    "messages at the top": b'{"model": "x", "messages": [{"role": "user", "content": "Margaret"}], '
                           b'"messages": [{"role": "system", "content": "Margaret"}]}',
    "deep in a content part": b'{"model": "x", "messages": [{"role": "user", "content": [{"type": "text", '
                              b'"text": "Margaret", "text": "x"}]}]}',
    "a private-looking key": b'{"model": "x", "metadata": {"Margaret Hale": 1, "Margaret Hale": 2}, '
                             b'"messages": [{"role": "user", "content": "hi"}]}',
}


@pytest.mark.parametrize("name", DUPLICATES)
def test_duplicate_keys_are_400(live, name):
    url, rec = live
    before = len(rec.chat_requests())
    r = post(url, DUPLICATES[name])
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", r.text
    assert "repeats the key" in r.json()["error"]["message"] and "Margaret" not in r.text
    assert len(rec.chat_requests()) == before


# ----- leak 3: numeric parameters by type and range -------------------------------------------------------------------
BAD_NUMBERS = [("temperature", 2.5), ("temperature", "0.7"), ("temperature", True), ("top_p", 1.01),
               ("top_p", -0.1), ("presence_penalty", -2.5), ("frequency_penalty", 31415926), ("n", 0),
               ("n", 1.0), ("max_tokens", 0), ("max_completion_tokens", -5), ("top_logprobs", 21),
               ("top_logprobs", 3.5), ("seed", 2**64 + 12345), ("seed", 1.5), ("seed", "12345"), ("logprobs", 1),
               ("logprobs", "yes")]


@pytest.mark.parametrize("param, value", BAD_NUMBERS)
def test_numeric_parameters_out_of_type_or_range_are_400(live, param, value):
    refused(live, {"model": "x", "messages": MSG, param: value}, param)


def test_logit_bias_is_refused(live):
    # token ids as keys spell text in the upstream's tokenizer
    refused(live, {"model": "x", "messages": MSG, "logit_bias": {"44": 1, "12866": 1}}, "logit_bias",
            "unsupported_parameter")


def test_numeric_parameters_in_range_are_forwarded_unchanged(live):
    url, rec = live
    good = {"temperature": 2, "top_p": 0.0, "presence_penalty": -2.0, "frequency_penalty": 1.5, "n": 1,
            "max_completion_tokens": 7, "top_logprobs": 20, "logprobs": True, "seed": -(2**63)}
    assert post(url, {"model": "x", "messages": MSG, **good}).status_code == 200
    sent = rec.chat_requests()[-1]
    assert {k: sent[k] for k in good} == good


# ----- issue 25: no max_tokens invented ---------------------------------------------------------------------------
def test_no_max_tokens_is_sent_when_the_client_set_none(live):
    url, rec = live
    assert post(url, {"model": "x", "messages": MSG}).status_code == 200
    sent = rec.chat_requests()[-1]
    assert "max_tokens" not in sent and "max_completion_tokens" not in sent


# ----- leak 5: a non-SSE 200 answer to a stream ---------------------------------------------------------------------
def test_a_non_sse_answer_to_a_stream_is_an_sse_error():
    with proxy(status=200) as (url, rec):  # answers 200 with a JSON body, whatever was asked
        with httpx.stream("POST", url + "/chat/completions", headers=AUTH, trust_env=False, timeout=30,
                          content=json.dumps({"model": "x", "messages": MSG, "stream": True})) as r:
            assert r.status_code == 200
            events = [line[5:].strip() for line in r.iter_lines() if line.startswith("data:")]
    assert len(rec.chat_requests()) == 1
    assert events and "[DONE]" not in events  # not a successful (empty) stream
    err = json.loads(events[-1])["error"]
    assert err["code"] == "upstream_error" and "not an event stream" in err["message"]


# ----- leak 7: stream_options.include_usage -------------------------------------------------------------------------
def test_stream_options_include_usage_is_forwarded(live):
    url, rec = live
    body = {"model": "x", "messages": MSG, "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", url + "/chat/completions", headers=AUTH, trust_env=False, timeout=30,
                      content=json.dumps(body)) as r:
        assert r.status_code == 200 and list(r.iter_lines())
    sent = rec.chat_requests()[-1]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}
    refused(live, {**body, "stream_options": {"include_usage": "yes"}}, "stream_options")


# ----- leak 6: the trailing-slash form is never redirected ------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example", None])
def test_trailing_slash_is_never_redirected(live, host):
    url, rec = live
    before = len(rec.chat_requests())
    headers = {**AUTH, **({"host": host} if host else {})}
    r = httpx.post(url + "/chat/completions/", content=json.dumps({"model": "x", "messages": MSG}),
                   headers=headers, trust_env=False, timeout=30, follow_redirects=False)
    assert not 300 <= r.status_code < 400 and "location" not in r.headers, (r.status_code, r.headers)
    assert r.status_code in (200, 404)
    if r.status_code == 200:  # routed: the same checks and perturbation as the plain path
        assert len(rec.chat_requests()) == before + 1
        assert "Margaret has a cold" not in json.dumps(rec.chat_requests()[-1])


def test_a_stream_cut_before_done_is_an_sse_error():
    """An upstream event stream that ends without ``[DONE]`` (cut off) is an error event, not a success."""
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "up",
             "choices": [{"index": 0, "delta": {"content": "No"}, "finish_reason": None}]}

    async def cut(scope, receive, send):  # an upstream whose stream stops after one event
        if scope["type"] != "http":
            return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"data: " + json.dumps(chunk).encode() + b"\n\n"})

    with serve_app(cut) as up, serve_app(create_app(config(up))) as url:
        with httpx.stream("POST", url + "/chat/completions", headers=AUTH, trust_env=False, timeout=30,
                          content=json.dumps({"model": "x", "messages": MSG, "stream": True})) as r:
            events = [line[5:].strip() for line in r.iter_lines() if line.startswith("data:")]
    assert json.loads(events[0])["choices"][0]["delta"]["content"] == "No" and "[DONE]" not in events
    assert json.loads(events[-1])["error"]["message"] == "upstream stream ended without [DONE]"
