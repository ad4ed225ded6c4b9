"""Everything the request path uses, built once at start-up (mechanism, stores, upstream client, limits)."""

from __future__ import annotations

from dataclasses import dataclass

from dptext.errors import DPTextError
from dptext.privacy.accounting import Accountant
from dptext.server.auth import KeyStore, RateLimiter
from dptext.server.config import ServerConfig
from dptext.server.metrics import Metrics
from dptext.server.privacy import Perturber
from dptext.server.scheduler import Scheduler
from dptext.server.state import open_state
from dptext.server.upstream import Upstream


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
