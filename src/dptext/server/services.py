"""Everything the request path uses, built once at start-up (mechanism, stores, upstream client, limits)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from dptext.errors import DPTextError
from dptext.privacy.flight import StateError
from dptext.server.pgstate import is_postgres_url

from dptext.privacy.accounting import Accountant
from dptext.server.auth import KeyStore, RateLimiter
from dptext.server.config import ServerConfig
from dptext.server.metrics import Metrics
from dptext.server.privacy import Perturber
from dptext.server.scheduler import Scheduler
from dptext.server.upstream import Upstream


def state_dir(cfg: ServerConfig) -> Path:
    """Where the memo and the accounting databases live (``state`` / ``state_dir``, else the cache's ``serve/``)."""
    if cfg.state or cfg.state_dir:
        return Path(cfg.state or cfg.state_dir).expanduser()
    from dptext.cache import cache_dir

    return cache_dir() / "serve"


def open_state(cfg: ServerConfig, memo, *, build_memo: bool):
    """The memo (when enabled and not given) and the ε ledger: SQLite files in a directory, or PostgreSQL.

    Any problem is one start-up line (DPTextError): an unusable directory, an unreachable database, a schema
    of another version.
    """
    p = cfg.privacy
    budgets = {k.id: k.epsilon_budget for k in cfg.auth.keys if k.epsilon_budget}
    if is_postgres_url(cfg.state):
        from dptext.server.pgstate import PgLedger, PgMemo, open_pool

        pool = open_pool(cfg.state)
        try:
            if build_memo and p.memo.enabled:
                memo = PgMemo(pool, p.memo.secret.encode(), max_entries=p.memo.max_entries,
                              max_age_s=p.memo.max_age_s)
        except StateError as exc:
            pool.close()
            raise DPTextError(f"config state: cannot use the PostgreSQL database: {exc}") from None
        return memo, PgLedger(pool, window_s=p.budget.window_s, budgets=budgets, default_budget=p.budget.epsilon)
    state = state_dir(cfg)
    try:
        if build_memo and p.memo.enabled:
            from dptext.privacy.memo import Memo, load_secret

            secret = p.memo.secret.encode() if p.memo.secret else load_secret(state / "memo.secret")
            memo = Memo(state / "memo.sqlite", secret, max_entries=p.memo.max_entries, max_age_s=p.memo.max_age_s)
        accountant = Accountant(state / "accounting.sqlite", window_s=p.budget.window_s, budgets=budgets,
                                default_budget=p.budget.epsilon)
    except (OSError, sqlite3.Error, StateError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DPTextError(f"config state: cannot use the state directory {state}: {why}") from None
    return memo, accountant


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
    accountant: Accountant | None  # None with limits.perturb_process: the child process holds it
    memo: object

    @classmethod
    def build(cls, cfg: ServerConfig, *, perturber: Perturber | None = None, extractor=None) -> Services:
        """Load the mechanism (and in ``mode: inferdpt`` the local model) now: a bad setting stops start-up."""
        remote = None
        if cfg.limits.perturb_process and perturber is None:  # the child alone opens the memo and the ledger
            if cfg.dashboard:
                raise DPTextError("config limits.perturb_process: true cannot be combined with dashboard: true "
                                  "(the dashboard reads the ledger in the server process)")
            from dptext.server.worker import PerturbProcess

            remote = PerturbProcess(cfg)  # starts loading in its own process while this one loads below
            memo = accountant = None
        else:
            memo = perturber.memo if perturber is not None else None
            memo, accountant = open_state(cfg, memo, build_memo=perturber is None)
        try:
            perturber = perturber or Perturber(cfg, memo=memo)
        except BaseException:
            if remote is not None:
                remote.close()
            raise
        if cfg.mode == "inferdpt" and extractor is None:
            from dptext.server.extract import Extractor

            extractor = Extractor(cfg)
        scheduler = Scheduler(cfg.limits.perturb_concurrency, cfg.limits.max_queue)
        if remote is not None:
            scheduler.remote = remote
        elif hasattr(perturber, "sanitizer"):  # test doubles without a core are not batched
            scheduler.attach(perturber)
        return cls(cfg, KeyStore(cfg), RateLimiter(cfg), Metrics(), perturber, extractor, Upstream(cfg),
                   scheduler, accountant, memo)

    async def aclose(self) -> None:
        await self.upstream.aclose()
        self.scheduler.close()
        if self.memo is not None:
            self.memo.close()
        if self.accountant is not None:  # None with limits.perturb_process (the child closes its own)
            self.accountant.close()
