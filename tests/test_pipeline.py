"""InferDPT end to end with real models; what the remote received is read on the receiving side."""

from __future__ import annotations

import copy
import json

import pytest

from dptext.cli import main
from dptext.errors import DPTextError, PrivacyError
from dptext.llm import Prompts, get_backend
from dptext.mechanisms import get_mechanism
from dptext.mechanisms.rantext import RanText
from dptext.inferdpt import SAMPLE_DOCUMENT, InferDPT
from dptext.privacy.presets import PRESETS
from llama_server import free_port, llama_server, recording_server

DOC = ("Maria Gonzalez from Springfield told her doctor that the new insulin plan makes her tired "
       "before her early shift at the bus depot.")
TOKENS = 32


class RecordingChat:
    """The real in-process model, plus a record of exactly what it was given (the receiving side)."""

    def __init__(self, inner):
        self.inner, self.received = inner, []
        self.name, self.is_local = inner.name, inner.is_local

    def complete(self, messages, **kw):
        self.received.append(copy.deepcopy(list(messages)))
        return self.inner.complete(messages, **kw)

    def stream(self, messages, **kw):
        self.received.append(copy.deepcopy(list(messages)))
        return self.inner.stream(messages, **kw)

    def describe(self):
        return self.inner.describe()


@pytest.fixture(scope="module")
def model():
    return get_backend("local")


@pytest.fixture(scope="module")
def mech():
    return get_mechanism("rantext", epsilon=3, space="cl100k-11k")


def make(mech, model, **kw):
    remote, local = RecordingChat(model), RecordingChat(model)
    return InferDPT(mech, remote, local, max_tokens=TOKENS, **kw), remote, local


def test_end_to_end_remote_receives_only_the_perturbed_prompt(mech, model):
    pipe, remote, local = make(mech, model)
    r = pipe.run(DOC, seed=3)
    assert r.output.strip() and r.remote_output.strip()
    assert len(remote.received) == 1
    sent = remote.received[0]
    assert sent == r.remote_messages
    assert sent[-1]["content"].encode("utf-8") == r.perturbed_prompt.encode("utf-8")
    assert r.perturbed_document in r.perturbed_prompt and r.perturbed_document != DOC
    assert DOC not in json.dumps(sent, ensure_ascii=False)
    # the local model, and only it, saw the raw document and the remote's generation
    assert DOC in local.received[0][-1]["content"] and r.remote_output in local.received[0][-1]["content"]
    for stage in ("perturb", "remote", "extract", "total"):
        assert r.timings[stage] > 0
    assert r.timings["total"] >= r.timings["remote"] + r.timings["extract"]
    p = r.privacy
    assert p["mechanism"] == "rantext" and p["epsilon"] == 3 and p["claim"]["epsilon"] == 3 and p["claim"]["bound"] == "inf"
    assert p["perturbed"] + p["kept"] + p["dropped"] == len(r.units) > 10
    assert p["perturbed"] > p["kept"]
    d = r.to_dict()
    assert json.loads(json.dumps(d))["perturbed_prompt"] == r.perturbed_prompt


def test_seeded_runs_are_reproducible(mech, model):
    pipe, remote, _ = make(mech, model)
    a, b = pipe.run(DOC, seed=11), pipe.run(DOC, seed=11)
    assert a.perturbed_prompt == b.perturbed_prompt
    assert a.remote_output == b.remote_output and a.output == b.output
    c = pipe.run(DOC, seed=12)
    assert c.perturbed_prompt != a.perturbed_prompt
    assert remote.received[0] == remote.received[1]


class BrokenRanText(RanText):
    """RANTEXT whose sampler fails (a fault injected into a real mechanism)."""

    def _sample(self, idx, rng):
        raise RuntimeError("sampler exploded")


def test_fail_closed_nothing_is_sent(mech, model):
    broken = BrokenRanText(epsilon=3, space=mech.space)
    with recording_server(status=200) as rec:
        remote_http = get_backend(rec.url, model="m", max_retries=0)
        for m, doc in ((broken, DOC), (mech, "你好，世界。我的秘密。")):  # a failing sampler; every unit dropped
            recording = RecordingChat(model)
            for remote in (recording, remote_http):
                pipe = InferDPT(m, remote, model, max_tokens=TOKENS)
                with pytest.raises(PrivacyError, match="nothing was sent"):
                    pipe.run(doc, seed=1)
            assert recording.received == []
        assert rec.requests == []


def test_bad_input_is_refused_before_anything_is_sent(mech, model):
    pipe, remote, _ = make(mech, model)
    for doc in ("", "   \n", None, b"bytes"):
        with pytest.raises(DPTextError):
            pipe.run(doc)
    with pytest.raises(DPTextError, match="task"):
        pipe.run(DOC, task="summarise")
    with pytest.raises(DPTextError, match="instruction"):
        pipe.run(DOC, task="answer")
    bad = InferDPT(mech, remote, model, prompts=Prompts(remote_continue="{document} {nope}"))
    with pytest.raises(DPTextError, match="placeholder"):
        bad.run(DOC, seed=1)
    assert remote.received == []
    with pytest.raises(PrivacyError, match="local model"):
        InferDPT(mech, remote, "https://api.example.com/v1")
    with pytest.raises(DPTextError):
        InferDPT.from_options(epsilon=0)


def test_answer_task_sends_public_instruction_and_perturbed_document(mech, model):
    question = "What makes the patient tired? Answer in one sentence."
    prompts = Prompts(remote_answer="Q: {instruction}\nDOC: {document}")
    pipe, remote, local = make(mech, model, prompts=prompts)
    r = pipe.run(DOC, task="answer", instruction=question, seed=4)
    sent = remote.received[0][-1]["content"]
    assert sent == f"Q: {question}\nDOC: {r.perturbed_document}"
    assert DOC not in sent and question in local.received[0][-1]["content"]
    assert r.output.strip() and r.task == "answer"


def test_http_end_to_end_through_real_server(mech, model):
    with llama_server() as url, recording_server(upstream=url) as rec:
        pipe = InferDPT(mech, get_backend(rec.url, timeout=120), model, max_tokens=TOKENS)
        r = pipe.run(DOC, seed=5)
    posts = [q for q in rec.requests if q["method"] == "POST"]
    assert len(posts) == 1
    assert posts[0]["json"]["messages"] == r.remote_messages
    assert posts[0]["json"]["messages"][-1]["content"].encode() == r.perturbed_prompt.encode()
    assert DOC.encode() not in b"".join(rec.bodies())
    served = json.loads(posts[0]["response"])["choices"][0]["message"]["content"]
    assert r.remote_output == served.strip() and r.output.strip()
    assert r.remote["backend"] == "openai-http"


def test_http_remote_failures_are_clear_and_leak_nothing(mech, model):
    for status, delay in ((500, 0.0), (200, 20.0)):
        with recording_server(status=status, delay=delay) as rec:
            remote = get_backend(rec.url, model="m", timeout=0.5, max_retries=1, backoff=0.01)
            with pytest.raises(DPTextError, match="unavailable") as err:
                InferDPT(mech, remote, model, max_tokens=TOKENS).run(DOC, seed=2)
            assert rec.url in str(err.value) and len(rec.requests) == 2
            assert all(DOC.encode() not in b for b in rec.bodies())
            assert all(b"Gonzalez from Springfield" not in b for b in rec.bodies())
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(DPTextError, match="connection failed"):
        InferDPT(mech, get_backend(url, model="m", max_retries=0), model).run(DOC)


# ----- the CLI --------------------------------------------------------------------------------------
def test_cli_default_run_and_json(capsys):
    assert main(["infer", "--max-tokens", "16", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "stand-in for the remote LLM" in out and "embedded sample" in out
    for head in ("Perturbed prompt (sent to the remote LLM)", "Remote answer", "Rebuilt answer"):
        assert head in out
    assert main(["infer", "--json", "--max-tokens", "16", "--seed", "1", DOC]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["document"] == DOC and d["sample_document"] is False
    # no options: the balanced preset (tests/test_presets.py)
    assert d["privacy"]["mechanism"] == PRESETS["balanced"].spec.mechanism
    assert set(d["timings"]) >= {"perturb", "remote", "extract"}
    assert d["perturbed_prompt"] != DOC and d["output"]
    assert SAMPLE_DOCUMENT not in d["perturbed_prompt"]


@pytest.mark.parametrize("argv, msg", [
    (["infer", "   "], "empty"),
    (["infer", "--epsilon", "-1", "x y"], "epsilon"),
    (["infer", "--remote", "ftp://host/v1", "x y"], "unsupported scheme"),
    (["infer", "--remote", "notaurl", "x y"], "--remote: invalid remote"),
    (["infer", "--local", "/nope/model.gguf", "x y"], "not found"),
    (["infer", "--task", "answer", "x y"], "instruction"),
    (["infer", "--task", "poem", "x y"], "unknown task"),
    (["infer", "--remote-model", "gpt", "x y"], "remote-model"),
])
def test_cli_bad_input_one_line_error(capsys, argv, msg):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dptext: error:") and msg in err and "\n" not in err


def test_cli_unreachable_url(capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["infer", "--remote", url, "--remote-model", "m", "--timeout", "2", "x y z"]) == 2
    err = capsys.readouterr().err
    assert url in err and "unavailable" in err
