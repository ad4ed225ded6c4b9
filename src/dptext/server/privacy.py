"""The proxy's side of perturbation: chat messages in, :class:`dptext.pipeline.Sanitizer` on their segments.

The work itself (perturb private segments, replay repeats from the memo, fail
closed, the privacy report) is the core's :class:`~dptext.pipeline.Sanitizer`,
built once from a :class:`~dptext.mechanisms.spec.MechanismSpec` at start-up,
so a bad mechanism name, ε or option stops the server before it listens. This
module adds what only a chat proxy needs:

* cutting long private segments into chunks, each sanitised under the
  scheduler's gate, so a heavy request cannot hold the mechanism for long
  (:mod:`dptext.server.scheduler`);
* the per-request unit limit (413) and the per-request memo staging: each
  request's Sanitizer calls get its own staged memo (``sanitize(..., memo=)``),
  whose writes are kept back until the request has been charged
  (:mod:`dptext.privacy.memo`), so a request refused over its ε budget leaves
  nothing that could later be released for free;
* the chat-level report: which user or tool messages went upstream in clear,
  and a ``warnings`` line for each way private-looking text went unperturbed.

Each request draws from its own ``numpy.random.Generator``: OS entropy, or
``default_rng(privacy.seed)`` when a seed is configured (tests only).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError, ParameterError
from dptext.pipeline import Sanitizer, Segment
from dptext.privacy.accounting import BudgetExceeded
from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError
from dptext.server.request import ChatRequest
from dptext.server.scheduler import CHUNK_CHARS, chunks

HEADER = "x-dptext-privacy"
CLEAR_ROLES = ("user", "tool")  # roles whose clear text the report points out
SUMMED = ("memo_hits", "kept_by_policy", "clear_private_chars", "private_segments", "sent_unchanged")


@dataclass
class Perturbed:
    messages: list[dict]  # what goes upstream: {"role", "content"} with private parts perturbed
    report: dict  # full privacy report (JSON body extension field)
    memo: object = None  # staged memo writes and single-flight claims: commit() once charged, else abort()

    def header(self) -> str:
        """Compact ASCII JSON for the response header."""
        r = self.report
        keys = ("mode", "mechanism", "epsilon", "space", "units", "private_spans", "memo_hits", "epsilon_spent",
                "epsilon_total", "no_dp_guarantee", "unperturbed_private")
        compact = {k: r[k] for k in keys if k in r}
        compact["claim"] = {"kind": r["claim"]["kind"], "bound": r["claim"]["bound"]}
        compact["warnings"] = len(r["warnings"])
        return json.dumps(compact, separators=(",", ":"), ensure_ascii=True)


@dataclass
class Prepared:
    """A request between :meth:`Perturber.prepare` and :meth:`Perturber.complete`."""

    req: ChatRequest
    plan: list
    private: list  # (message, piece, text) of every private piece
    staged: object  # the request's staged memo (None without a memo)
    draft: object  # the Sanitizer's Draft: its jobs are the mechanism calls still to make


def charge_and_commit(accountant, perturbed, key: str):
    """Charge ``key`` for ``perturbed``'s fresh units (429 over budget: its claims and writes are dropped),
    then commit its memo writes, so nothing is stored or replayed that was not paid for."""
    spent = perturbed.report["epsilon_spent"]
    try:
        charge = accountant.charge(key, spent or 0.0)
    except BaseException as exc:
        if perturbed.memo is not None:  # end this request's single-flight claims: a waiter perturbs next
            perturbed.memo.abort()
        if isinstance(exc, BudgetExceeded):
            raise ApiError(429, f"{exc}; nothing was sent upstream", type="rate_limit_error",
                           code="privacy_budget_exceeded",
                           headers={"retry-after": str(max(1, int(exc.retry_after + 0.999)))}) from None
        raise
    if perturbed.memo is not None:  # charged (committed) before anything goes upstream
        perturbed.memo.commit()
    return charge


def spec_of(cfg: ServerConfig):
    from dptext.mechanisms.spec import MechanismSpec

    p = cfg.privacy
    try:
        return MechanismSpec.from_dict({"mechanism": p.mechanism, "epsilon": p.epsilon, "space": p.space,
                                        "oov": p.oov, "digits": p.digits, "punctuation": p.punctuation,
                                        "seed": p.seed, "options": dict(p.options)})
    except ParameterError as exc:
        raise DPTextError(f"config privacy.{exc.param}: {exc}") from None


def policy_of(cfg: ServerConfig):
    """The entity policy of ``privacy.policy`` (None for ``all`` without options: every private unit)."""
    p = cfg.privacy
    if p.policy == "all" and not p.policy_options:
        return None
    try:
        from dptext.privacy.policy import get_policy
    except ModuleNotFoundError as exc:
        raise DPTextError(f"config privacy.policy: {p.policy!r} needs dptext.privacy.policy ({exc.name} missing)"
                          ) from None
    try:
        return get_policy(p.policy, **p.policy_options)
    except ParameterError as exc:
        where = "policy" if exc.param == "policy" else f"policy_options.{exc.param}"
        raise DPTextError(f"config privacy.{where}: {exc}") from None


class Perturber:
    def __init__(self, cfg: ServerConfig, memo=None) -> None:
        p = cfg.privacy
        self.mode = cfg.mode
        self.seed = p.seed
        self.max_units = cfg.limits.max_units
        self.memo = memo
        spec = spec_of(cfg)
        self.policy = policy_of(cfg)
        try:
            self.sanitizer = Sanitizer(spec, policy=self.policy)
        except ParameterError as exc:
            where = "policy" if exc.param == "policy" else exc.param
            raise DPTextError(f"config privacy.{where}: {exc}") from None
        self.mech = self.sanitizer.mechanism
        self.claim = self.sanitizer.claim
        self.no_dp = self.sanitizer.no_dp_guarantee
        if self.no_dp and not p.allow_no_dp_claim:
            raise DPTextError(f"config privacy.mechanism: {self.mech.name!r} makes no differential-privacy claim "
                              "(frequent words such as names may pass unchanged); set "
                              "privacy.allow_no_dp_claim: true to serve it anyway")
        self.contextual = bool(getattr(type(self.mech), "contextual", False))
        self.clear_note = {r: r not in p.private_roles for r in CLEAR_ROLES}
        self._rngs = threading.local()
        self.mech.perturb("warm up")  # first call builds lazy tables before traffic arrives

    def rng(self) -> np.random.Generator:
        """``default_rng(seed)`` when seeded; else this worker thread's generator (OS entropy, drawn once)."""
        if self.seed is not None:
            return np.random.default_rng(self.seed)
        gen = getattr(self._rngs, "gen", None)
        if gen is None:
            gen = self._rngs.gen = np.random.default_rng()
        return gen

    def plan(self, req: ChatRequest) -> list[list[tuple[str, bool]]]:
        """Per message, ``(text, private)`` pieces; long private segments cut into chunks."""
        out = []
        for m in req.messages:
            pieces = []
            for seg in m.segments:
                if not seg.private or not seg.text.strip() or self.contextual:
                    pieces.append((seg.text, seg.private))
                else:
                    pieces.extend((c, True) for c in chunks(seg.text))
            out.append(pieces)
        return out

    def perturb(self, gate, req: ChatRequest, scope: str = "-", rng: np.random.Generator | None = None
                ) -> Perturbed:
        """Upstream messages (public parts unchanged, private ones perturbed or replayed) and the report.

        ``gate(priority)`` is entered around each Sanitizer call (see :mod:`dptext.server.scheduler`).
        """
        rng = rng or self.rng()
        plan, private, staged = self._open(req, scope, wait=True)
        try:
            outputs: dict[tuple[int, int], str] = {}
            reports = []
            left = sum(len(t) for _, _, t in private)
            for batch in _batches(private):
                with gate(left):
                    out = self.sanitizer.sanitize([Segment(t, True) for _, _, t in batch], rng=rng, scope=scope,
                                                  memo=staged)
                left -= sum(len(t) for _, _, t in batch)
                reports.append(out.report)
                for (i, j, _), text in zip(batch, out.texts):
                    outputs[i, j] = text
        except BaseException:
            if staged is not None:
                staged.abort()
            raise
        return self._close(req, plan, outputs, reports, staged)

    def prepare(self, req: ChatRequest, scope: str = "-") -> Prepared | None:
        """:meth:`perturb`'s first half for a batch driver (the caller holds the Sanitizer's lock): the
        request's plan, claims and Sanitizer draft, or None when another request is perturbing one of its
        texts now (nothing is held then; the caller sends it down the waiting path)."""
        opened = self._open(req, scope, wait=False)
        if opened is None:
            return None
        plan, private, staged = opened
        try:
            draft = self.sanitizer.prepare([Segment(t, True) for _, _, t in private], scope=scope, memo=staged)
        except BaseException:
            if staged is not None:
                staged.abort()
            raise
        return Prepared(req, plan, private, staged, draft)

    def complete(self, prep: Prepared, results: list) -> Perturbed:
        """:meth:`perturb`'s second half: ``results`` are the PerturbResults of ``prep.draft.jobs``."""
        try:
            out = self.sanitizer.finish(prep.draft, results, memo=prep.staged)
        except BaseException:
            if prep.staged is not None:
                prep.staged.abort()
            raise
        outputs = {(i, j): text for (i, j, _), text in zip(prep.private, out.texts)}
        return self._close(prep.req, prep.plan, outputs, [out.report], prep.staged)

    def _open(self, req: ChatRequest, scope: str, wait: bool):
        """Plan, unit limit, memo staging and single-flight claims (``wait=False``: None when one is busy)."""
        staged = self.memo.staged() if self.memo is not None else None
        plan = self.plan(req)
        private = [(i, j, text) for i, pieces in enumerate(plan) for j, (text, priv) in enumerate(pieces) if priv]
        self.check_units([t for _, _, t in private], scope, staged)
        if staged is not None:  # single-flight: claim (or wait for) each private text before taking the gate
            settings = self.sanitizer.settings
            keys = [staged.key(scope, settings, t) for _, _, t in private if t.strip()]
            if not staged.acquire(keys, wait=wait):
                return None
        return plan, private, staged

    def _close(self, req: ChatRequest, plan, outputs: dict, reports: list[dict], staged) -> Perturbed:
        messages = [{"role": m.role, "content": "".join(outputs.get((i, j), text)
                                                         for j, (text, _) in enumerate(plan[i]))}
                    for i, m in enumerate(req.messages)]
        return Perturbed(messages, self.report(req, reports), staged)

    def check_units(self, texts: list[str], scope: str, staged) -> None:
        """413 when the texts that are not memo replays hold more units than ``limits.max_units``."""
        if sum(len(t) for t in texts) <= self.max_units:  # a unit has at least one character
            return
        settings = self.sanitizer.settings
        fresh = [t for t in texts if t.strip() and (
            staged is None or staged.memo.get(staged.key(scope, settings, t)) is None)]
        n_units = sum(len(self.mech.segment(t).pieces) for t in fresh)
        if n_units > self.max_units:
            raise ApiError(413, f"the private text has {n_units} units to perturb, above this proxy's limit of "
                           f"{self.max_units} per request (limits.max_units); nothing was sent upstream",
                           code="too_many_units")

    def report(self, req: ChatRequest, reports: list[dict]) -> dict:
        """The core's report summed over this request's Sanitizer calls, plus the chat-level fields."""
        if reports:
            rep = dict(reports[0])
            rep["units"] = {k: sum(r["units"][k] for r in reports) for k in rep["units"]}
            for k in SUMMED:
                rep[k] = sum(r.get(k, 0) for r in reports)
            rep["unperturbed_private"] = sum(r["unperturbed_private"] for r in reports)
            spent = [r["epsilon_spent"] for r in reports if r["epsilon_spent"] is not None]
            rep["epsilon_spent"] = max(spent) if spent else None
        else:  # nothing private in this request
            rep = {"mechanism": self.mech.name, "epsilon": self.mech.epsilon, "space": self.mech.space.name,
                   "claim": self.claim, "units": {"perturbed": 0, "kept": 0, "self": 0, "dropped": 0},
                   "sent_unchanged": 0, "memo_hits": 0, "kept_by_policy": 0, "private_segments": 0,
                   "epsilon_spent": 0.0, "unperturbed_private": 0, "no_dp_guarantee": self.no_dp}
        if self.no_dp:
            rep["epsilon_spent"] = None
        rep.pop("public_segments", None)
        clear: dict[str, int] = {}
        for m in req.messages:
            if m.role in CLEAR_ROLES and any(not s.private and s.text.strip() for s in m.segments):
                clear[m.role] = clear.get(m.role, 0) + 1
        warnings = []
        if self.no_dp:
            warnings.append(f"no DP guarantee: mechanism {self.mech.name} makes no differential-privacy claim")
        for role, n in clear.items():
            why = "is not in privacy.private_roles" if self.clear_note[role] else "holds text outside <private> tags"
            warnings.append(f"{n} {role} message(s) sent upstream partly or fully unperturbed: the role {why}")
        if rep.get("clear_private_chars"):
            from dptext.privacy.policy import policy_name

            name = policy_name(self.policy)
            warnings.append(f"{rep['clear_private_chars']} private character(s) sent in clear by policy {name}: "
                            "the claim covers the detected spans only")
        if rep["kept_by_policy"]:
            warnings.append(f"{rep['kept_by_policy']} private unit(s) sent unchanged by policy (oov/digits: keep)")
        if rep.get("unperturbed_private"):
            warnings.append(f"{rep['unperturbed_private']} private segment(s) sent without perturbation")
        return {"mode": self.mode, **rep, "private_spans": req.private_spans,
                "private_messages": sum(1 for m in req.messages if m.private_chars),
                "messages_in_clear": clear, "warnings": warnings}


def _batches(private: list[tuple[int, int, str]]) -> list[list[tuple[int, int, str]]]:
    """Consecutive private pieces grouped into Sanitizer calls of at most about ``CHUNK_CHARS`` characters."""
    out, size = [], 0
    for item in private:
        if out and size + len(item[2]) <= CHUNK_CHARS:
            out[-1].append(item)
            size += len(item[2])
        else:
            out.append([item])
            size = len(item[2])
    return out
