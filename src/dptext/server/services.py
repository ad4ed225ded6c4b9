"""Everything the request path uses, built once at start-up (mechanism, stores, upstream client, limits)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from dptext.privacy.accounting import Accountant
from dptext.server.auth import KeyStore, RateLimiter
from dptext.server.config import ServerConfig
from dptext.server.metrics import Metrics
from dptext.server.privacy import Perturber
from dptext.server.scheduler import Scheduler
from dptext.server.upstream import Upstream


def state_dir(cfg: ServerConfig) -> Path:
    """Where the memo and the accounting databases live (``state_dir``, else the cache's ``serve/``)."""
    if cfg.state_dir:
        return Path(cfg.state_dir).expanduser()
    from dptext.cache import cache_dir

    return cache_dir() / "serve"


@dataclass
class Services:
    cfg: ServerConfig
    keys: KeyStore
    limiter: RateLimiter
    metrics: Metrics
    perturber: Perturber
    extractor: object
    upstream: Upstream
    scheduler: Scheduler
    accountant: Accountant
    memo: object

    @classmethod
    def build(cls, cfg: ServerConfig, *, perturber: Perturber | None = None, extractor=None) -> Services:
        """Load the mechanism (and in ``mode: inferdpt`` the local model) now: a bad setting stops start-up."""
        memo = perturber.memo if perturber is not None else None
        state = state_dir(cfg)
        p = cfg.privacy
        if perturber is None and p.memo.enabled:
            from dptext.privacy.memo import Memo, load_secret

            secret = p.memo.secret.encode() if p.memo.secret else load_secret(state / "memo.secret")
            memo = Memo(state / "memo.sqlite", secret, max_entries=p.memo.max_entries, max_age_s=p.memo.max_age_s)
        accountant = Accountant(state / "accounting.sqlite", window_s=p.budget.window_s,
                                budgets={k.id: k.epsilon_budget for k in cfg.auth.keys if k.epsilon_budget},
                                default_budget=p.budget.epsilon)
        perturber = perturber or Perturber(cfg, memo=memo)
        if cfg.mode == "inferdpt" and extractor is None:
            from dptext.server.extract import Extractor

            extractor = Extractor(cfg)
        return cls(cfg, KeyStore(cfg), RateLimiter(cfg), Metrics(), perturber, extractor, Upstream(cfg),
                   Scheduler(cfg.limits.perturb_concurrency, cfg.limits.max_queue), accountant, memo)

    async def aclose(self) -> None:
        await self.upstream.aclose()
        self.scheduler.close()
        self.accountant.close()
        if self.memo is not None:
            self.memo.close()
