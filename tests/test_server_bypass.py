"""Raw private text never goes upstream through a config, a tag or a tool turn.

Real parts only: the proxy app under uvicorn on loopback, the official openai
SDK as the client, a recording upstream on loopback that answers as a chat
model and keeps every byte it received.
"""

import json
import tempfile
from contextlib import contextmanager

import openai
import pytest
from llama_server import recording_server, serve_app

from dptext.errors import DPTextError
from dptext.server import config_from_dict, create_app, hash_key
from dptext.server.config import ServerConfig

KEY = "sk-bypass-test"
# the proxies' state folders live under one folder that is removed when the test session ends
_STATE = tempfile.TemporaryDirectory(prefix="dptext-bypass-")
# a 12-word private sentence: under RANTEXT ε = 3 each unit survives with probability ~0.15, so the whole
# sentence survives verbatim with probability ~1e-10
SENTENCE = "Margaret Thompson from Leeds was admitted with chest pain and severe diabetes yesterday"


def config(upstream: str, **over) -> ServerConfig:
    data = {"upstream": {"base_url": upstream, "model": "up", "retries": 0, "timeout_s": 30},
            "privacy": {"mechanism": "rantext", "epsilon": 3},
            "auth": {"keys": [{"id": "bypass", "sha256": hash_key(KEY)}]},
            "limits": {"requests_per_minute": 1e6, "burst": 10**6}}
    if "state_dir" in ServerConfig.model_fields:
        data["state_dir"] = tempfile.mkdtemp(dir=_STATE.name)
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v} if isinstance(v, dict) else v
    return config_from_dict(data)


@contextmanager
def proxy(**over):
    with recording_server(reply="Noted.") as rec:
        with serve_app(create_app(config(rec.url, **over))) as url:
            yield openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, timeout=60), rec


def sent_messages(rec) -> list[dict]:
    (body,) = rec.chat_requests()
    return body["messages"]


@pytest.mark.parametrize("roles, match", [
    (["User"], r"privacy.private_roles.*unknown role 'User'"),
    (["users"], r"privacy.private_roles.*unknown role 'users'"),
    ([], r"privacy.*allow_no_private_roles"),
])
def test_private_roles_are_validated_at_start_up(roles, match):
    with pytest.raises(DPTextError, match=match) as e:
        config("http://127.0.0.1:9/v1", privacy={"private_roles": roles})
    assert "\n" not in str(e.value)


def test_no_private_roles_only_on_purpose_and_the_report_says_so():
    with proxy(privacy={"private_roles": [], "allow_no_private_roles": True}) as (client, rec):
        raw = client.chat.completions.with_raw_response.create(
            model="x", messages=[{"role": "user", "content": SENTENCE}])
    assert sent_messages(rec)[0]["content"] == SENTENCE  # allowed on purpose: sent as is...
    report = raw.parse().model_extra["dptext"]
    assert report["messages_in_clear"] == {"user": 1}  # ...and said so in the body and the header
    assert any("user message(s) sent upstream partly or fully unperturbed" in w for w in report["warnings"])
    assert json.loads(raw.headers["x-dptext-privacy"])["warnings"] == 1


@pytest.mark.parametrize("tags", ["<private></private>", "<private>x</private>", "<PRIVATE >yes</private>"])
def test_tags_never_make_a_private_role_public(tags):
    # a fixed seed: under OS entropy a substitute can be "private" by chance (one CI run drew one)
    with proxy(privacy={"seed": 0}) as (client, rec):
        r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": f"{tags} {SENTENCE}"}])
    out = sent_messages(rec)[0]["content"]
    assert SENTENCE not in out and "private" not in out.lower()
    assert r.model_extra["dptext"]["units"]["perturbed"] + r.model_extra["dptext"]["units"]["dropped"] >= 12
    assert r.model_extra["dptext"]["messages_in_clear"] == {}


def test_tags_narrow_a_private_role_only_on_purpose():
    with proxy(privacy={"tags_narrow_private_roles": True}) as (client, rec):
        client.chat.completions.create(model="x", messages=[
            {"role": "user", "content": f"{SENTENCE} <private>Thompson</private>"}])
    assert sent_messages(rec)[0]["content"].startswith(SENTENCE + " ")


@pytest.mark.parametrize("tag", ["prıvate", "PRİVATE"])  # dotless ı, dotted İ: not the ASCII tag
def test_tags_match_ascii_only(tag):
    system = f"Be brief with <{tag}>Margaret</{tag}> please."
    with proxy() as (client, rec):
        client.chat.completions.create(model="x", messages=[{"role": "system", "content": system},
                                                            {"role": "user", "content": "Hello there"}])
    assert sent_messages(rec)[0]["content"] == system  # not a tag: the public system text is unchanged


def test_tags_add_privacy_to_public_roles():
    system = "Address <private>Margaret Thompson from Leeds</private> formally."
    with proxy() as (client, rec):
        client.chat.completions.create(model="x", messages=[{"role": "system", "content": system}])
    out = sent_messages(rec)[0]["content"]
    assert out.startswith("Address ") and out.endswith(" formally.") and "Margaret Thompson from Leeds" not in out


def test_tool_turns_are_private_by_default_or_refused():
    msgs = [{"role": "user", "content": "Look up the patient."},
            {"role": "tool", "tool_call_id": "call_1", "content": SENTENCE}]
    with proxy() as (client, rec):
        r = client.chat.completions.create(model="x", messages=msgs)
    tool = sent_messages(rec)[1]
    assert tool["role"] == "tool" and SENTENCE not in tool["content"]
    assert r.model_extra["dptext"]["private_messages"] == 2
    with proxy(privacy={"tool_messages": "refuse"}) as (client, rec):
        with pytest.raises(openai.BadRequestError) as e:
            client.chat.completions.create(model="x", messages=msgs)
        assert e.value.body["code"] == "unsupported_role" and "privacy.tool_messages" in e.value.message
        assert rec.chat_requests() == []


def test_mechanisms_without_a_dp_claim_need_consent_and_every_report_says_so():
    with pytest.raises(DPTextError, match="allow_no_dp_claim"):
        create_app(config("http://127.0.0.1:9/v1", privacy={"mechanism": "high-freq"}))
    with proxy(privacy={"mechanism": "high-freq", "allow_no_dp_claim": True}) as (client, rec):
        raw = client.chat.completions.with_raw_response.create(model="x",
                                                               messages=[{"role": "user", "content": SENTENCE}])
        chunks = list(client.chat.completions.create(model="x", stream=True,
                                                     messages=[{"role": "user", "content": SENTENCE}]))
    for report in (raw.parse().model_extra["dptext"], chunks[0].model_extra["dptext"]):
        assert report["no_dp_guarantee"] is True and report["epsilon_spent"] is None
        assert any(w.startswith("no DP guarantee") for w in report["warnings"])
    assert json.loads(raw.headers["x-dptext-privacy"])["no_dp_guarantee"] is True
    assert raw.headers["x-dptext-epsilon-spent"] == "none"


def test_entity_policy_is_stated_in_every_report_or_refused():
    try:
        import dptext.privacy.policy  # noqa: F401
    except ModuleNotFoundError:  # the policy layer is not installed: asking for it must stop start-up
        with pytest.raises(DPTextError, match="config privacy.policy: 'entities' needs dptext.privacy.policy"):
            create_app(config("http://127.0.0.1:9/v1", privacy={"policy": "entities"}))
        return
    with pytest.raises(DPTextError, match="config privacy.policy"):
        create_app(config("http://127.0.0.1:9/v1", privacy={"policy": "most"}))
    text = "Please write to anna.berg@example.com about the meeting tomorrow morning"
    with proxy(privacy={"policy": "entities", "policy_options": {"detectors": ["regex"]}}) as (client, rec):
        r = client.chat.completions.create(model="x", messages=[{"role": "user", "content": text}])
    out = sent_messages(rec)[0]["content"]
    assert "anna.berg@example.com" not in out and out.endswith("about the meeting tomorrow morning")
    assert any("sent in clear by policy entities" in w for w in r.model_extra["dptext"]["warnings"])
