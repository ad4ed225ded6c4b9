"""The proxy's state: the memo and the ε ledger, in SQLite files under a directory or in PostgreSQL.

Opened by the server process, or by the perturbation process under ``limits.perturb_process``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from dptext.errors import DPTextError
from dptext.privacy.accounting import Accountant
from dptext.privacy.flight import StateError
from dptext.server.config import ServerConfig
from dptext.server.pgstate import is_postgres_url


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
