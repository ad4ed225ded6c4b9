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
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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
    timeout_s: float = Field(60.0, gt=0)  # read timeout, and total deadline of one attempt
    connect_timeout_s: float = Field(5.0, gt=0)
    retries: int = Field(2, ge=0, le=10)  # extra attempts on connect errors / 5xx before answering
    backoff_s: float = Field(0.2, ge=0)
    max_connections: int = Field(100, ge=1)

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return v.rstrip("/")


class Privacy(_Strict):
    mechanism: str = "rantext"
    epsilon: float = 3.0
    space: str | None = None
    oov: Literal["drop", "random", "keep"] = "drop"
    digits: Literal["random", "keep", "vocab"] = "random"
    punctuation: Literal["keep", "perturb"] = "keep"
    options: dict = Field(default_factory=dict)  # extra mechanism keyword arguments
    private_roles: tuple[str, ...] = ("user",)
    tag: str = "private"  # <private>...</private> marks the private parts explicitly
    seed: int | None = None  # tests only: every request perturbed with default_rng(seed)

    @field_validator("epsilon", mode="before")
    @classmethod
    def _eps(cls, v):
        return check_epsilon(v)

    @field_validator("tag")
    @classmethod
    def _tag(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", v):
            raise ValueError("must be a plain tag name like 'private'")
        return v


class Extraction(_Strict):
    """The local model of ``mode: inferdpt`` (SPEC 2, step 3); it reads raw text, so it must be local.

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
    max_tokens: int | None = Field(None, ge=1)  # cap on max_tokens forwarded upstream


class ServerConfig(_Strict):
    mode: Literal["perturb", "inferdpt"] = "perturb"
    model_name: str = "dptext"  # the id /v1/models lists
    listen: Listen = Listen()
    upstream: Upstream
    privacy: Privacy = Privacy()
    extraction: Extraction = Extraction()
    auth: Auth = Auth()
    limits: Limits = Limits()
    log_level: Literal["debug", "info", "warning", "error"] = "info"


def expand_env(value, env=None, where: str = ""):
    """Expand ``${NAME}`` / ``${NAME:-default}`` inside every string of a parsed YAML tree."""
    env = os.environ if env is None else env
    if isinstance(value, dict):
        return {k: expand_env(v, env, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, env, f"{where}[{i}]") for i, v in enumerate(value)]
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
        raise DPTextError(f"config {where or 'value'}: environment variable {name} is not set")

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
