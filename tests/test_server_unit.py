"""The privacy proxy's parts without an LLM: config, keys, limits, private spans, perturbation, errors.

The app-level checks run the real FastAPI app (Starlette's TestClient) with a
recording server on loopback as the upstream, to prove that requests refused
before perturbation (401, 413, 429, 400) never reach it.
"""

import hashlib
import json
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from fastapi.testclient import TestClient
from llama_server import recording_server

from dptext.errors import DPTextError
from dptext.server import config_from_dict, create_app, hash_key, load_config
from dptext.server.auth import KeyStore, RateLimiter
from dptext.server.errors import ApiError
from dptext.server.metrics import Metrics
from dptext.server.privacy import Perturber
from dptext.server.request import parse_request, split_private
from dptext.server.scheduler import ungated

KEY = "sk-unit-test-key"


def make_cfg(**over):
    data = {"upstream": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "retries": 0, "timeout_s": 5},
            "privacy": {"mechanism": "rantext", "epsilon": 1, "seed": 3},
            "auth": {"keys": [{"id": "alice", "sha256": hash_key(KEY)}]},
            "state_dir": tempfile.mkdtemp(prefix="dptext-unit-")}
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v} if isinstance(v, dict) else v
    return config_from_dict(data)


@pytest.fixture(scope="module")
def perturber():
    return Perturber(make_cfg())


# ----- config -----------------------------------------------------------------------------------------
def test_config_env_references(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("upstream:\n  base_url: ${UP_URL}\n  model: ${UP_MODEL:-gpt-x}\n  api_key: ${UP_KEY}\n"
                 "auth:\n  keys:\n    - id: a\n      sha256: ${KEY_HASH}\nmodel_name: 'lit $${X}'\n")
    env = {"UP_URL": "http://10.0.0.1:8000/v1/", "UP_KEY": "secret", "KEY_HASH": hash_key("k").upper()}
    cfg = load_config(p, env=env)
    assert cfg.upstream.base_url == "http://10.0.0.1:8000/v1" and cfg.upstream.model == "gpt-x"
    assert cfg.upstream.api_key == "secret" and cfg.auth.keys[0].sha256 == hash_key("k")
    assert cfg.model_name == "lit ${X}"
    with pytest.raises(DPTextError, match=r"environment variable not set: UP_KEY \(for upstream.api_key\)$"):
        load_config(p, env={k: v for k, v in env.items() if k != "UP_KEY"})
    with pytest.raises(DPTextError) as e:  # every missing variable in one message
        load_config(p, env={"UP_URL": "http://h/v1"})
    assert str(e.value) == ("config: environment variables not set: UP_KEY (for upstream.api_key), "
                            "KEY_HASH (for auth.keys[0].sha256)")


@pytest.mark.parametrize("over, match", [
    ({"privacy": {"epsilon": 0}}, "epsilon"),
    ({"privacy": {"epsilon": "nan"}}, "epsilon"),
    ({"mode": "magic"}, "mode"),
    ({"upstream": {"base_url": "ftp://x"}}, "upstream.base_url"),
    ({"auth": {"keys": [{"id": "a", "sha256": "abc"}]}}, "sha256"),
    ({"auth": {"keys": []}}, "auth.keys is empty"),
    ({"limits": {"max_body_bytes": 10}}, "max_body_bytes"),
    ({"privacy": {"typo": 1}}, "privacy.typo"),
])
def test_config_errors_are_one_line(over, match):
    with pytest.raises(DPTextError, match=match) as e:
        make_cfg(**over)
    assert "\n" not in str(e.value)


def test_bad_mechanism_settings_stop_start_up():
    with pytest.raises(DPTextError, match="unknown mechanism"):
        Perturber(make_cfg(privacy={"mechanism": "nope"}))
    with pytest.raises(DPTextError, match="privacy.options"):
        Perturber(make_cfg(privacy={"options": {"no_such_option": 1}}))


def test_config_file_errors(tmp_path):
    with pytest.raises(DPTextError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("upstream: [unclosed\n")
    with pytest.raises(DPTextError, match="not valid YAML at line"):
        load_config(bad)


def test_example_config_is_valid():
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "dptext.yaml"
    cfg = load_config(example, env={"UPSTREAM_API_KEY": "x", "DPTEXT_KEY_HASH": hash_key("k")})
    assert cfg.mode == "perturb" and cfg.privacy.mechanism == "rantext" and cfg.auth.keys


# ----- keys and rate limit -----------------------------------------------------------------------------
def test_hash_key_is_sha256_hex():
    assert hash_key("abc") == hashlib.sha256(b"abc").hexdigest()


def test_keystore_identifies_and_refuses():
    ks = KeyStore(make_cfg())
    assert ks.identify(f"Bearer {KEY}") == "alice"
    assert ks.identify(f"bearer   {KEY}  ") == "alice"
    for header in (None, "", "Bearer", f"Basic {KEY}", "Bearer wrong", f"Bearer {KEY}x"):
        with pytest.raises(ApiError) as e:
            ks.identify(header)
        assert e.value.status == 401


def test_rate_limiter_token_bucket():
    now = [100.0]
    cfg = make_cfg(auth={"keys": [{"id": "alice", "sha256": hash_key(KEY), "requests_per_minute": 60, "burst": 3}]})
    rl = RateLimiter(cfg, clock=lambda: now[0])
    for _ in range(3):
        rl.check("alice")
    with pytest.raises(ApiError) as e:
        rl.check("alice")
    assert e.value.status == 429 and e.value.headers["retry-after"] == "1"
    now[0] += 1.0  # one token back after 1 s at 60/min
    rl.check("alice")
    with pytest.raises(ApiError):
        rl.check("alice")
    now[0] += 1000  # refills to the burst, never beyond
    for _ in range(3):
        rl.check("alice")
    with pytest.raises(ApiError):
        rl.check("alice")


# ----- private spans -------------------------------------------------------------------------------------
def test_split_private_spans():
    segs = split_private("Fix: <private>Alice Smith</private> in <PRIVATE >Paris</private>.", "private", False, "m")
    assert [(s.text, s.private) for s in segs] == [("Fix: ", False), ("Alice Smith", True), (" in ", False),
                                                   ("Paris", True), (".", False)]
    assert [(s.text, s.private) for s in split_private("all of it", "private", True, "m")] == [("all of it", True)]
    assert split_private("", "private", True, "m") == []


@pytest.mark.parametrize("text", ["<private>open", "close</private>", "<private>a<private>b</private></private>",
                                  "<private>a</private></private>"])
def test_split_private_unbalanced_is_400(text):
    with pytest.raises(ApiError) as e:
        split_private(text, "private", False, "messages[0].content")
    assert e.value.status == 400 and e.value.code == "unbalanced_private_tag"


def test_parse_request_roles_and_refusals():
    cfg = make_cfg()
    req = parse_request({"model": "x", "temperature": 0.5, "user": "alice@corp", "metadata": {"a": "b"},
                         "messages": [{"role": "system", "content": "Be brief."},
                                      {"role": "user", "content": [{"type": "text", "text": "secret"}], "name": "Al"},
                                      {"role": "assistant", "content": "ok"}]}, cfg)
    assert [(m.role, [(s.text, s.private) for s in m.segments]) for m in req.messages] == [
        ("system", [("Be brief.", False)]), ("user", [("secret", True)]), ("assistant", [("ok", False)])]
    assert req.params == {"temperature": 0.5}  # no max_tokens invented; user / metadata / name never forwarded
    inferdpt = parse_request({"model": "x", "messages": [{"role": "assistant", "content": "ok"}]},
                             make_cfg(mode="inferdpt"))
    assert inferdpt.messages[0].segments[0].private  # answers rebuilt from raw text stay local
    tagged = parse_request({"model": "x", "messages": [
        {"role": "system", "content": "Address <private>Dr. Quill</private> formally."}]}, cfg)
    assert [(s.text, s.private) for s in tagged.messages[0].segments] == [
        ("Address ", False), ("Dr. Quill", True), (" formally.", False)]  # tags work in any role
    for body, code in [({"tools": [{}]}, "unsupported_parameter"),
                       ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "unsupported_content"),
                       ({"messages": [{"role": "assistant", "content": None, "tool_calls": [{}]}]},
                        "unsupported_parameter"),
                       ({"messages": []}, "invalid_request"),
                       ({"messages": [{"role": "wizard", "content": "x"}]}, "invalid_request"),
                       ({"max_tokens": -1}, "invalid_request"),
                       ({"response_format": {"type": "json_schema"}}, "invalid_request")]:
        full = {"model": "x", "messages": [{"role": "user", "content": "hi"}], **body}
        with pytest.raises(ApiError) as e:
            parse_request(full, cfg)
        assert e.value.status == 400 and e.value.code == code, body


# ----- perturbation -----------------------------------------------------------------------------------------
def test_every_private_part_of_every_turn_is_perturbed(perturber):
    cfg = make_cfg()
    body = {"model": "x", "messages": [
        {"role": "system", "content": "You are a careful assistant. Keep answers short."},
        {"role": "user", "content": "Patient Margaret Thompson reports chronic migraine and insomnia."},
        {"role": "assistant", "content": "Noted. What else?"},
        {"role": "system", "content": "Summarise for <private>Doctor Wilkinson at Riverside Clinic</private> please."}]}
    req = parse_request(body, cfg)
    out = perturber.perturb(ungated, req)
    msgs = out.messages
    assert msgs[0] == body["messages"][0] and msgs[2] == body["messages"][2]  # public turns verbatim
    assert msgs[3]["content"].startswith("Summarise for") and msgs[3]["content"].endswith(" please.")
    for word in ("Margaret", "Thompson", "migraine", "insomnia", "Wilkinson", "Riverside"):
        assert word not in json.dumps(msgs), word
    assert out.report["private_spans"] == 2 and out.report["private_messages"] == 2
    u = out.report["units"]
    assert u["perturbed"] >= 4 and u["perturbed"] + u["dropped"] == 13 and u["kept"] == 1  # 13 words, one "."
    again = perturber.perturb(ungated, req, rng=np.random.default_rng(3))
    assert again.messages == out.messages  # seed option: reproducible
    header = out.header()
    assert header.isascii() and json.loads(header)["claim"] == {"kind": "dp-within-set", "bound": "inf"}


def test_report_never_contains_private_text():
    p = Perturber(make_cfg(privacy={"oov": "keep"}))
    req = parse_request({"model": "x", "messages": [{"role": "user", "content": "Zxqvbnm Wojciechowska ☃"}]},
                        make_cfg())
    out = p.perturb(ungated, req)
    assert out.report["kept_by_policy"] >= 1  # counted...
    blob = json.dumps(out.report, ensure_ascii=False) + out.header()
    assert "☃" not in blob and "Zxqvbnm" not in blob  # ...never listed


# ----- metrics ------------------------------------------------------------------------------------------------
def test_metrics_text_format():
    m = Metrics()
    m.inc("dptext_requests_total", mode="perturb", key="a", status="200")
    m.inc("dptext_requests_total", mode="perturb", key="a", status="200")
    m.observe("dptext_request_duration_seconds", 0.003, mode="perturb")
    text = m.render()
    assert 'dptext_requests_total{key="a",mode="perturb",status="200"} 2\n' in text
    assert 'dptext_request_duration_seconds_bucket{mode="perturb",le="0.0025"} 0\n' in text
    assert 'dptext_request_duration_seconds_bucket{mode="perturb",le="0.005"} 1\n' in text
    assert 'dptext_request_duration_seconds_count{mode="perturb"} 1\n' in text
    assert "# TYPE dptext_request_duration_seconds histogram" in text


# ----- the app, refusing before any upstream call ----------------------------------------------------------
@pytest.fixture(scope="module")
def refusing_app(perturber):
    with recording_server(status=500) as rec:
        cfg = make_cfg(upstream={"base_url": rec.url, "retries": 0},
                       limits={"max_body_bytes": 4096, "burst": 4, "requests_per_minute": 0.001})
        with TestClient(create_app(cfg, perturber=perturber)) as client:
            yield client, rec


def test_refusals_never_reach_upstream(refusing_app):
    client, rec = refusing_app
    ok_headers = {"authorization": f"Bearer {KEY}"}
    msg = {"model": "x", "messages": [{"role": "user", "content": "Sensitive Hargreaves diagnosis"}]}
    r = client.post("/v1/chat/completions", json=msg)
    assert r.status_code == 401 and r.json()["error"]["code"] == "missing_api_key"
    r = client.post("/v1/chat/completions", json=msg, headers={"authorization": "Bearer nope"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    big = {"model": "x", "messages": [{"role": "user", "content": "Hargreaves " * 1000}]}
    r = client.post("/v1/chat/completions", json=big, headers=ok_headers)
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"
    r = client.post("/v1/chat/completions", content=b"{not json", headers=ok_headers)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    bad_tag = {"model": "x", "messages": [{"role": "user", "content": "a <private>Hargreaves"}]}
    r = client.post("/v1/chat/completions", json=bad_tag, headers=ok_headers)
    assert r.status_code == 400 and "never closed" in r.json()["error"]["message"]
    assert "Hargreaves" not in r.text
    r = client.post("/v1/chat/completions", json=msg, headers=ok_headers)  # 4th token of the burst of 4
    assert r.status_code == 502 and r.json()["error"]["code"] == "upstream_error"
    r = client.post("/v1/chat/completions", json=msg, headers=ok_headers)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert len(rec.chat_requests()) == 1  # only the one request that passed every check
    assert b"Hargreaves" not in b"".join(rec.bodies())
    r = client.get("/v1/models")
    assert r.status_code == 401
    r = client.get("/v1/models", headers=ok_headers)
    assert r.json()["data"][0]["id"] == "dptext"
    assert client.get("/nope").json()["error"]["code"] == "not_found"
    assert client.get("/metrics").status_code == 401  # metrics.require_key: true by default
    metrics = client.get("/metrics", headers=ok_headers).text
    assert 'dptext_requests_total{key="alice",mode="perturb",status="429"} 1' in metrics
    assert client.get("/healthz").json()["status"] == "ok"


# ----- the command line ----------------------------------------------------------------------------------------
def test_cli_hash_key_and_config_error(tmp_path):
    p = subprocess.run([sys.executable, "-m", "dptext.cli", "hash-key", "hunter2"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == hash_key("hunter2")
    p = subprocess.run([sys.executable, "-m", "dptext.cli", "hash-key", "-"], input="hunter2\n", capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == hash_key("hunter2")
    p = subprocess.run([sys.executable, "-m", "dptext.cli", "hash-key"], capture_output=True, text=True, timeout=120)
    lines = dict(line.split(":", 1) for line in p.stdout.strip().splitlines())
    assert hash_key(lines["key"].strip()) == lines["sha256"].strip()
    cfg = tmp_path / "c.yaml"
    cfg.write_text("upstream: {base_url: 'http://127.0.0.1:9/v1', model: m}\nauth: {keys: []}\n")
    p = subprocess.run([sys.executable, "-m", "dptext.cli", "serve", "--config", str(cfg)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and "auth.keys is empty" in p.stderr and "Traceback" not in p.stderr
