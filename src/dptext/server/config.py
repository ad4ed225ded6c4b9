"""Server configuration: one YAML file, ``${ENV}`` references for secrets.

Every string value may contain ``${NAME}`` (the environment variable, which
must be set) or ``${NAME:-default}`` (the default when unset or empty).
References are expanded after YAML parsing, inside strings only, so a secret
never has to be quoted for YAML. ``$${`` writes a literal ``${``.

Validation happens once at start-up; any problem is one :class:`DPTextError`
line naming the field, so a misconfigured proxy never starts (fail closed).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from dptext.errors import DPTextError, check_epsilon

_ENV_RE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*?))?\}")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Listen(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)


class Upstream(_Strict):
    base_url: str  # e.g. https://api.openai.com/v1 (the part before /chat/completions)
    api_key: str = ""
    model: str
    timeout_s: float = Field(60.0, gt=0)  # read timeout, and total deadline of one non-streaming attempt
    stream_deadline_s: float = Field(300.0, gt=0)  # a whole stream, first byte to last
    connect_timeout_s: float = Field(5.0, gt=0)
    retries: int = Field(2, ge=0, le=10)  # extra attempts on connect errors / 5xx / 429 before answering
    backoff_s: float = Field(0.2, ge=0)
    max_retry_after_s: float = Field(10.0, ge=0)  # an upstream 429 asking for a longer wait is passed through
    max_connections: int = Field(100, ge=1)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


ROLES = ("system", "developer", "user", "assistant", "tool")


class MemoSettings(_Strict):
    """Consistent perturbation: a repeated private segment of one key is sent as its first perturbation."""

    enabled: bool = True
    secret: str = ""  # HMAC key (>= 16 bytes); empty = random, created once in state_dir/memo.secret
    max_entries: int = Field(100_000, ge=1)
    max_age_s: float = Field(30 * 86400, gt=0)


class Budget(_Strict):
    """Optional ε budget per key over a sliding window (basic composition per unit)."""

    epsilon: float | None = Field(None, gt=0)  # default budget of every key; null = account, never refuse
    window_s: float = Field(86400.0, gt=0)


class Privacy(_Strict):
    # strict | balanced | inferdpt (dptext.privacy.presets, docs/choosing.md): sets mechanism, epsilon, options,
    # policy and policy_options, which must then not be given
    preset: str | None = None
    mechanism: str = "rantext"
    epsilon: float = 3.0
    space: str | None = None
    oov: Literal["drop", "random", "keep"] = "drop"
    digits: Literal["random", "keep", "vocab"] = "random"
    punctuation: Literal["keep", "perturb"] = "keep"
    options: dict = Field(default_factory=dict)  # extra mechanism keyword arguments
    policy: str = "all"  # which parts of private text are perturbed: all | entities | tiered
    policy_options: dict = Field(default_factory=dict)  # e.g. entity_types, wordlist, entity_epsilon
    private_roles: tuple[str, ...] = ("user",)  # whole content of these roles is private
    allow_no_private_roles: bool = False  # required for private_roles: [] (then only <private> tags are private)
    allow_public_user: bool = False  # required for a non-empty private_roles without user (user turns in clear)
    tags_narrow_private_roles: bool = False  # true: in a private role, only the tagged spans are private
    tool_messages: Literal["private", "refuse"] = "private"  # role "tool": perturbed like user text, or 400
    allow_no_dp_claim: bool = False  # required for mechanisms without a DP claim (high-freq, 2-random...)
    tag: str = "private"  # <private>...</private> marks private spans (ASCII letters, any case)
    seed: int | None = None  # tests only: every request perturbed with default_rng(seed)
    memo: MemoSettings = MemoSettings()
    budget: Budget = Budget()

    @model_validator(mode="before")
    @classmethod
    def _preset(cls, data):
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        from dptext.errors import ParameterError
        from dptext.privacy.presets import get_preset

        try:
            p = get_preset(data["preset"])
        except ParameterError as exc:
            raise ValueError(str(exc)) from None
        clash = [k for k in ("mechanism", "epsilon", "space", "options", "policy", "policy_options") if k in data]
        if clash:
            raise ValueError(f"preset {p.name!r} sets {', '.join(clash)}; remove them or remove the preset")
        pol = dict(p.policy or {"name": "all"})
        return {**data, "preset": p.name, "mechanism": p.spec.mechanism, "epsilon": p.spec.epsilon,
                "options": dict(p.spec.options), "policy": pol.pop("name"), "policy_options": pol}

    @field_validator("epsilon", mode="before")
    @classmethod
    def _eps(cls, v):
        return check_epsilon(v)

    @field_validator("private_roles")
    @classmethod
    def _roles(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [r for r in v if r not in ROLES]
        if bad:
            raise ValueError(f"unknown role {bad[0]!r}; roles are {', '.join(ROLES)} (lower case)")
        if "system" in v or "developer" in v:  # developer is the newer name of system: one privacy class
            v = (*v, "system", "developer")
        return tuple(dict.fromkeys(v))

    @model_validator(mode="after")
    def _some_private(self):
        if not self.private_roles and not self.allow_no_private_roles:
            raise ValueError("private_roles is empty, so no message would be perturbed unless it carries "
                             "<private> tags; set privacy.allow_no_private_roles: true if that is intended")
        if self.private_roles and "user" not in self.private_roles and not self.allow_public_user:
            raise ValueError(f"private_roles {list(self.private_roles)} leaves user messages in clear; add user, "
                             "or set privacy.allow_public_user: true if that is intended")
        return self

    @field_validator("tag")
    @classmethod
    def _tag(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", v):
            raise ValueError("must be a plain tag name like 'private'")
        return v


class Extraction(_Strict):
    """The local model of ``mode: inferdpt`` (docs/algorithms.md, step 3); it reads raw text, so it must be local.

    ``model``: ``local`` (SmolLM2, in process), a ``.gguf`` path, an installed model package, or an
    ``http://127.0.0.1:PORT/v1`` loopback endpoint (``options`` go to ``dptext.llm.get_backend``).
    """

    model: str = "local"
    max_tokens: int = Field(256, ge=1)
    temperature: float = Field(0.0, ge=0, le=2)
    options: dict = Field(default_factory=dict)


class ApiKey(_Strict):
    id: str  # shown in logs and metrics; never the key itself
    sha256: str  # hex digest of the bearer key (``dptext hash-key``)
    requests_per_minute: float | None = Field(None, gt=0)  # overrides limits.requests_per_minute
    burst: int | None = Field(None, ge=1)
    epsilon_budget: float | None = Field(None, gt=0)  # overrides privacy.budget.epsilon for this key

    @field_validator("sha256")
    @classmethod
    def _hex(cls, v: str) -> str:
        v = v.strip().lower()
        if not _HEX64.match(v):
            raise ValueError("must be the 64-character sha256 hex digest of the key (see `dptext hash-key`)")
        return v


class Auth(_Strict):
    keys: tuple[ApiKey, ...] = ()
    allow_anonymous: bool = False  # only for loopback experiments; keys are required otherwise


class Limits(_Strict):
    max_body_bytes: int = Field(1_048_576, ge=1024)
    max_messages: int = Field(256, ge=1)
    requests_per_minute: float = Field(600, gt=0)  # per key, token bucket
    burst: int = Field(60, ge=1)
    max_tokens: int = Field(4096, ge=1)  # max_tokens / max_completion_tokens forwarded upstream are capped here
    max_n: int = Field(4, ge=1)  # requests asking for more choices get 400
    max_units: int = Field(20_000, ge=1)  # private units per request (as the mechanism segments them); 413
    perturb_concurrency: int = Field(1, ge=1)  # requests perturbing at once (worker threads, off the event loop)
    max_queue: int = Field(64, ge=1)  # requests perturbing or waiting to; beyond it 503 + Retry-After
    perturb_process: bool = False  # perturbation, memo and ε ledger in one child process (a second core)
    read_timeout_s: float = Field(10.0, gt=0)  # the whole body must arrive within this (408 otherwise)


class Metrics(_Strict):
    require_key: bool = True  # GET /metrics needs a bearer key (its labels name key ids)


class ServerConfig(_Strict):
    mode: Literal["perturb", "inferdpt"] = "perturb"
    model_name: str = "dptext"  # the id /v1/models lists
    listen: Listen = Listen()
    upstream: Upstream
    privacy: Privacy = Privacy()
    extraction: Extraction = Extraction()
    auth: Auth = Auth()
    limits: Limits = Limits()
    metrics: Metrics = Metrics()
    dashboard: bool = False  # GET /dashboard (behind the keys) shows requests, latency and ε per key
    state: str | None = None  # memo + ε ledger: a directory (SQLite files) or postgresql://... (shared by replicas)
    state_dir: str | None = None  # older name of a state directory; null (both) = $DPTEXT_CACHE_DIR/serve
    log_level: Literal["debug", "info", "warning", "error"] = "info"


def expand_env(value, env=None, where: str = ""):
    """Expand ``${NAME}`` / ``${NAME:-default}`` inside every string of a parsed YAML tree.

    Every unset variable is named in one error, with the settings that use it.
    """
    missing: dict[str, list[str]] = {}
    out = _expand(value, os.environ if env is None else env, where, missing)
    if missing:
        names = ", ".join(f"{n} (for {', '.join(w)})" for n, w in missing.items())
        raise DPTextError(f"config: environment variable{'s' if len(missing) > 1 else ''} not set: {names}")
    return out


def _expand(value, env, where: str, missing: dict):
    if isinstance(value, dict):
        return {k: _expand(v, env, f"{where}.{k}" if where else str(k), missing) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, env, f"{where}[{i}]", missing) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        if m.group(0) == "$${":
            return "${"
        name, default = m.group(1), m.group(2)
        got = env.get(name)
        if got:
            return got
        if default is not None:
            return default
        missing.setdefault(name, []).append(where or "value")
        return ""

    return _ENV_RE.sub(sub, value)


def _one_line(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "config"
    msg = err["msg"].removeprefix("Value error, ")
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"config {loc}: {msg}{more}"


def config_from_dict(data: dict, env=None) -> ServerConfig:
    if not isinstance(data, dict):
        raise DPTextError("config must be a YAML mapping")
    try:
        cfg = ServerConfig.model_validate(expand_env(data, env))
    except ValidationError as exc:
        raise DPTextError(_one_line(exc)) from None
    if not cfg.auth.keys and not cfg.auth.allow_anonymous:
        raise DPTextError("config auth.keys is empty: add a key hash (`dptext hash-key`) "
                          "or set auth.allow_anonymous: true for loopback experiments")
    ids = [k.id for k in cfg.auth.keys]
    if len(set(ids)) != len(ids):
        raise DPTextError("config auth.keys: key ids must be unique")
    if cfg.privacy.memo.secret and len(cfg.privacy.memo.secret.encode()) < 16:
        raise DPTextError("config privacy.memo.secret: must be at least 16 bytes (or empty: generated once)")
    if cfg.state and cfg.state_dir:
        raise DPTextError("config state and state_dir are both set: keep one (state_dir is the older name)")
    if cfg.state and cfg.state.startswith(("postgresql://", "postgres://")):
        if cfg.privacy.memo.enabled and not cfg.privacy.memo.secret:
            raise DPTextError("config privacy.memo.secret: must be set when state is a PostgreSQL database, so that "
                              "every replica computes the same memo keys (e.g. ${DPTEXT_MEMO_SECRET})")
    elif cfg.state and "://" in cfg.state:
        raise DPTextError("config state: must be a directory or a postgresql:// URL")
    return cfg


def load_config(path: str | os.PathLike, env=None) -> ServerConfig:
    """Read and validate a YAML config file (see ``examples/dptext.yaml``)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DPTextError(f"config file {p} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DPTextError(f"cannot read config file {p}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise DPTextError(f"config file {p} is not valid YAML{where}") from None
    if data is None:
        raise DPTextError(f"config file {p} is empty")
    return config_from_dict(data, env)
