"""Perturb every private segment of every turn, replay repeats from the memo, and report what happened.

One mechanism instance serves the whole process (built at start-up, so a bad
mechanism name, ε or option stops the server before it listens). Each request
draws from its own ``numpy.random.Generator``: OS entropy by default, or
``default_rng(privacy.seed)`` when a seed is configured (tests only).

Repeats: a private chunk already sent for the same key (same text, same
mechanism settings) is replayed from the memo (:mod:`dptext.privacy.memo`)
instead of being perturbed again, and costs no ε. Fresh units cost ε each
(basic composition, :mod:`dptext.privacy.accounting`).

The privacy report states the mechanism's claim beside this request's counts,
and says in ``warnings`` whenever something private-looking went upstream
unperturbed: user or tool messages outside the private roles, units kept by
policy, or a mechanism without a DP claim. A compact form goes into the
``x-dptext-privacy`` header, the full form into the ``dptext`` body field.
It never contains private text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError, ParameterError
from dptext.server.config import ServerConfig
from dptext.server.errors import ApiError
from dptext.server.request import ChatRequest
from dptext.server.scheduler import chunks

HEADER = "x-dptext-privacy"
COMPOSITION = "basic composition per unit: epsilon_spent = freshly perturbed units x epsilon"
CLEAR_ROLES = ("user", "tool")  # roles whose clear text the report points out


@dataclass
class Perturbed:
    messages: list[dict]  # what goes upstream: {"role", "content"} with private parts perturbed
    report: dict  # full privacy report (JSON body extension field)
    memo: object = None  # staged memo writes, committed once the request is admitted

    def header(self) -> str:
        """Compact ASCII JSON for the response header."""
        r = self.report
        keys = ("mode", "mechanism", "epsilon", "space", "units", "private_spans", "memo_hits", "epsilon_spent",
                "epsilon_total", "no_dp_guarantee", "unperturbed_private")
        compact = {k: r[k] for k in keys if k in r}
        compact["claim"] = {"kind": r["claim"]["kind"], "bound": r["claim"]["bound"]}
        compact["warnings"] = len(r["warnings"])
        return json.dumps(compact, separators=(",", ":"), ensure_ascii=True)


def has_dp_claim(claim: dict) -> bool:
    return claim.get("kind") not in (None, "none") and claim.get("bound") is not None


class Perturber:
    def __init__(self, cfg: ServerConfig, memo=None) -> None:
        from dptext.mechanisms import get_mechanism

        p = cfg.privacy
        self.mode = cfg.mode
        self.seed = p.seed
        self.max_units = cfg.limits.max_units
        self.memo = memo
        try:
            self.mech = get_mechanism(p.mechanism, epsilon=p.epsilon, space=p.space, oov=p.oov, digits=p.digits,
                                      punctuation=p.punctuation, seed=p.seed, **p.options)
        except ParameterError as exc:
            raise DPTextError(f"config privacy.{exc.param}: {exc}") from None
        except DPTextError as exc:
            raise DPTextError(f"config privacy: {exc} (see privacy.mechanism, privacy.epsilon, privacy.options)"
                              ) from None
        self.claim = self.mech.privacy().to_dict()
        self.no_dp = not has_dp_claim(self.claim)
        if self.no_dp and not p.allow_no_dp_claim:
            raise DPTextError(f"config privacy.mechanism: {self.mech.name!r} makes no differential-privacy claim "
                              "(frequent words such as names may pass unchanged); set "
                              "privacy.allow_no_dp_claim: true to serve it anyway")
        self.contextual = bool(getattr(type(self.mech), "contextual", False)) or self.mech.name in (
            "cape", "stencil", "punctuated-stencil", "dp-prompt")
        self.settings = {**self.mech.settings(), "options": dict(p.options)}
        self.clear_note = {r: r not in p.private_roles for r in CLEAR_ROLES}
        self.mech.perturb("warm up")  # first call builds lazy tables before traffic arrives

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)

    def plan(self, req: ChatRequest) -> list[list[tuple[str, bool]]]:
        """Per message, ``(text, private)`` pieces; long private segments cut into chunks."""
        out = []
        for m in req.messages:
            pieces = []
            for seg in m.segments:
                if not seg.private or not seg.text.strip():
                    pieces.append((seg.text, False))
                elif self.contextual:
                    pieces.append((seg.text, True))
                else:
                    pieces.extend((c, True) for c in chunks(seg.text))
            out.append(pieces)
        return out

    def perturb(self, gate, req: ChatRequest, scope: str = "-", rng: np.random.Generator | None = None
                ) -> Perturbed:
        """Upstream messages (public parts unchanged, private ones perturbed or replayed) and the report.

        ``gate(priority)`` is entered around each mechanism call (see :mod:`dptext.server.scheduler`).
        """
        rng = rng or self.rng()
        memo = self.memo.staged() if self.memo is not None else None
        plan = self.plan(req)
        outputs: dict[tuple[int, int], str] = {}
        todo: list[tuple[int, int, str, bytes | None]] = []
        for i, pieces in enumerate(plan):
            for j, (text, private) in enumerate(pieces):
                if not private:
                    continue
                key = memo.key(scope, self.settings, text) if memo is not None else None
                hit = memo.get(key) if memo is not None else None
                if hit is not None:
                    outputs[i, j] = hit
                else:
                    todo.append((i, j, text, key))
        n_units = sum(len(self.mech.segment(text).pieces) for _, _, text, _ in todo)
        if n_units > self.max_units:
            raise ApiError(413, f"the private text has {n_units} units to perturb, above this proxy's limit of "
                           f"{self.max_units} per request (limits.max_units); nothing was sent upstream",
                           code="too_many_units")
        counts = {"perturbed": 0, "kept": 0, "dropped": 0}
        kept_by_policy = 0
        left = sum(len(t) for _, _, t, _ in todo)
        for i, j, text, key in todo:
            with gate(left):
                res = self.mech.perturb(text, rng=rng)
            left -= len(text)
            for k, v in res.counts().items():
                counts[k] += v
            kept_by_policy += len(res.kept_units())
            outputs[i, j] = res.text
            if memo is not None:
                memo.put(key, res.text)
        messages = [{"role": m.role, "content": "".join(outputs.get((i, j), text)
                                                         for j, (text, _) in enumerate(plan[i]))}
                    for i, m in enumerate(req.messages)]
        return Perturbed(messages, self.report(req, counts, kept_by_policy, memo), memo)

    def report(self, req: ChatRequest, counts: dict, kept_by_policy: int, memo) -> dict:
        spent = None if self.no_dp else counts["perturbed"] * self.mech.epsilon
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
        if kept_by_policy:
            warnings.append(f"{kept_by_policy} private unit(s) sent unchanged by policy (oov/digits: keep)")
        return {
            "mode": self.mode,
            "mechanism": self.mech.name,
            "epsilon": self.mech.epsilon,
            "space": self.mech.space.name,
            "claim": self.claim,
            "no_dp_guarantee": self.no_dp,
            "units": counts,
            "kept_by_policy": kept_by_policy,
            "private_spans": req.private_spans,
            "private_messages": sum(1 for m in req.messages if m.private_chars),
            "unperturbed_private": 0,  # every private segment is perturbed or replayed, or the request fails
            "messages_in_clear": clear,
            "memo_hits": memo.hits if memo is not None else 0,
            "epsilon_spent": spent,
            "composition": COMPOSITION,
            "warnings": warnings,
        }
