"""Perturb every private segment of every turn, and report what happened.

One mechanism instance serves the whole process (built at start-up, so a bad
mechanism name or ε stops the server before it listens). Each request draws
from its own ``numpy.random.Generator``: OS entropy by default, or
``default_rng(privacy.seed)`` when a seed is configured (tests and
experiments only: the same request is then perturbed the same way).
Mechanism calls run under a lock because their row caches are not
thread-safe; the lock is held for the perturbation only, never for I/O.

The privacy report (SPEC 5) states the mechanism's claim beside the unit
counts of this request. A compact form goes into the ``x-dptext-privacy``
response header, the full form into the ``dptext`` field of the JSON body.
It never contains private text: units kept by policy are counted, not
listed.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

import numpy as np

from dptext.errors import DPTextError
from dptext.server.config import ServerConfig
from dptext.server.request import ChatRequest

HEADER = "x-dptext-privacy"


@dataclass
class Perturbed:
    messages: list[dict]  # what goes upstream: {"role", "content"} with private parts perturbed
    report: dict  # full privacy report (JSON body extension field)

    def header(self) -> str:
        """Compact ASCII JSON for the response header."""
        r = self.report
        compact = {k: r[k] for k in ("mode", "mechanism", "epsilon", "space", "units", "private_spans")}
        compact["claim"] = {"kind": r["claim"]["kind"], "bound": r["claim"]["bound"]}
        return json.dumps(compact, separators=(",", ":"), ensure_ascii=True)


class Perturber:
    def __init__(self, cfg: ServerConfig) -> None:
        from dptext.mechanisms import get_mechanism

        p = cfg.privacy
        self.mode = cfg.mode
        self.seed = p.seed
        try:
            self.mech = get_mechanism(p.mechanism, epsilon=p.epsilon, space=p.space, oov=p.oov, digits=p.digits,
                                      punctuation=p.punctuation, seed=p.seed, **p.options)
        except DPTextError as exc:  # e.g. an option the mechanism does not take
            if p.options and "takes no parameter" in str(exc):
                raise DPTextError(f"config privacy.options do not fit mechanism {p.mechanism!r}: {exc}") from None
            raise
        self.claim = self.mech.privacy().to_dict()
        self.lock = threading.Lock()
        self.mech.perturb("warm up")  # first call builds lazy tables before traffic arrives

    def rng(self) -> np.random.Generator:
        return np.random.default_rng(self.seed)

    def perturb(self, req: ChatRequest, rng: np.random.Generator | None = None,
                blocking: bool = True) -> Perturbed | None:
        """Upstream messages (public segments unchanged, private ones perturbed) and the report.

        ``blocking=False`` returns None at once when another request holds the mechanism.
        """
        if not self.lock.acquire(blocking=blocking):
            return None
        try:
            return self._perturb(req, rng or self.rng())
        finally:
            self.lock.release()

    def _perturb(self, req: ChatRequest, rng: np.random.Generator) -> Perturbed:
        counts = {"perturbed": 0, "kept": 0, "dropped": 0}
        kept_by_policy = 0
        out = []
        for m in req.messages:
            parts = []
            for seg in m.segments:
                if not seg.private or not seg.text.strip():
                    parts.append(seg.text)
                    continue
                res = self.mech.perturb(seg.text, rng=rng)
                for k, v in res.counts().items():
                    counts[k] += v
                kept_by_policy += len(res.kept_units())
                parts.append(res.text)
            out.append({"role": m.role, "content": "".join(parts)})
        report = {
            "mode": self.mode,
            "mechanism": self.mech.name,
            "epsilon": self.mech.epsilon,
            "space": self.mech.space.name,
            "claim": self.claim,
            "units": counts,
            "kept_by_policy": kept_by_policy,
            "private_spans": req.private_spans,
            "private_messages": sum(1 for m in req.messages if m.private_chars),
        }
        return Perturbed(out, report)
