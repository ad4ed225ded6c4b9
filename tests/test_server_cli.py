"""``dptext serve`` as a user meets it: the real command in a subprocess, its exit code, output and logs."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager

import httpx
import openai
import pytest
from llama_server import free_port, recording_server, stop_process

from dptext.server import hash_key

KEY = "sk-cli-test"


def write_config(path, upstream="${T_UPSTREAM}", extra=""):
    path.write_text(f"upstream:\n  base_url: {upstream}\n  model: up-model\n  api_key: ${{T_UPSTREAM_KEY:-}}\n"
                    f"privacy: {{mechanism: rantext, epsilon: 3}}\nstate_dir: {path.parent / 'state'}\n"
                    f"auth:\n  keys:\n    - {{id: cli-user, sha256: '${{T_KEY_HASH}}'}}\n{extra}")
    return path


def dptext(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "dptext.cli", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def test_missing_environment_variables_are_named_together(tmp_path):
    cfg = write_config(tmp_path / "c.yaml")
    env = {k: v for k, v in os.environ.items() if k not in ("T_UPSTREAM", "T_KEY_HASH")}
    p = subprocess.run([sys.executable, "-m", "dptext.cli", "serve", "--check", "-c", str(cfg)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == ("dptext: error: config: environment variables not set: "
                                "T_UPSTREAM (for upstream.base_url), T_KEY_HASH (for auth.keys[0].sha256)")


@pytest.mark.parametrize("extra, message", [
    ("privacy:\n  private_roles: [User]\n", "privacy.private_roles: unknown role 'User'"),
    ("privacy:\n  mechanism: high-freq\n", "privacy.allow_no_dp_claim"),
    ("limits: {max_unit: 5}\n", "limits.max_unit: Extra inputs are not permitted"),
])
def test_check_refuses_bad_settings_in_one_line(tmp_path, extra, message):
    cfg = tmp_path / "c.yaml"
    write_config(cfg, upstream="http://127.0.0.1:9/v1")
    text = cfg.read_text().replace("privacy: {mechanism: rantext, epsilon: 3}\n", "")
    cfg.write_text(text + extra)
    p = dptext("serve", "--check", "-c", str(cfg), env={"T_KEY_HASH": hash_key(KEY)})
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and message in p.stderr, p.stderr


def test_check_reports_what_would_be_served(tmp_path):
    cfg = write_config(tmp_path / "c.yaml")
    with recording_server(reply="ok") as rec:
        p = dptext("serve", "--check", "-c", str(cfg), env={"T_UPSTREAM": rec.url, "T_KEY_HASH": hash_key(KEY)})
    assert p.returncode == 0, p.stderr
    assert "mode=perturb mechanism=rantext epsilon=3 space=cl100k-11k claim=dp-within-set:inf" in p.stdout
    assert f"upstream {rec.url}: reachable (GET /models: HTTP 200)" in p.stdout
    assert rec.chat_requests() == []  # a check sends no chat
    p = dptext("serve", "--check", "-c", str(cfg),
               env={"T_UPSTREAM": f"http://127.0.0.1:{free_port()}/v1", "T_KEY_HASH": hash_key(KEY)})
    assert p.returncode == 2 and "is unreachable (ConnectError)" in p.stderr and "Traceback" not in p.stderr


@contextmanager
def serving(cfg, env):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dptext.cli", "serve", "-c", str(cfg), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, **env})
    base = f"http://127.0.0.1:{port}"
    log = []
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, proc.stdout.read().decode()
            try:
                if httpx.get(base + "/healthz", trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "dptext serve did not start"
            time.sleep(0.2)
        yield base, log
    finally:
        stop_process(proc, 20)
        log.append(proc.stdout.read().decode("utf-8", "replace"))


def test_serve_logs_its_settings_and_reason_codes_and_guards_metrics(tmp_path):
    cfg = write_config(tmp_path / "c.yaml")
    with recording_server(reply="ok") as rec:
        env = {"T_UPSTREAM": rec.url, "T_KEY_HASH": hash_key(KEY)}
        with serving(cfg, env) as (base, log):
            auth = {"authorization": f"Bearer {KEY}"}
            r = httpx.post(base + "/v1/chat/completions", content=b'{"model": "x", "temperature": NaN}',
                           headers=auth, trust_env=False)
            assert r.status_code == 400
            c = openai.OpenAI(base_url=base + "/v1", api_key=KEY, max_retries=0)
            models = [m.id for m in c.models.list()]
            answer = c.chat.completions.create(model="x", messages=[{"role": "user", "content": "Margaret"}])
            assert models == [answer.model] == ["dptext"]  # one name, whatever the upstream calls itself
            assert httpx.get(base + "/metrics", trust_env=False).status_code == 401
            metrics = httpx.get(base + "/metrics", headers=auth, trust_env=False)
            assert metrics.status_code == 200 and 'key="cli-user"' in metrics.text
    out = log[0]
    assert (f"dptext serve on http://127.0.0.1:{base.rsplit(':', 1)[1]} mode=perturb mechanism=rantext epsilon=3 "
            f"space=cl100k-11k claim=dp-within-set:inf upstream={rec.url} upstream_model=up-model") in out
    assert "status=400 code=invalid_json" in out and "status=200 code=-" in out
    assert "Margaret" not in out


def test_metrics_can_be_opened_on_purpose(tmp_path):
    cfg = write_config(tmp_path / "c.yaml", upstream="http://127.0.0.1:9/v1", extra="metrics: {require_key: false}\n")
    with serving(cfg, {"T_KEY_HASH": hash_key(KEY)}) as (base, log):
        assert httpx.get(base + "/metrics", trust_env=False).status_code == 200
    assert "metrics_auth=off" in log[0]
