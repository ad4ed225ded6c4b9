"""The one core: private segments in, perturbed segments plus one privacy report out.

Every path that sends text somewhere (``dptext infer``, the proxy, batch jobs,
sweeps) calls this module:

* :class:`Sanitizer` perturbs the private segments of a request with one
  mechanism (built once from a :class:`~dptext.mechanisms.spec.MechanismSpec`),
  optionally through a policy (which parts of a private segment are perturbed,
  at which ε) and a memo (the same private text from the same scope gets the
  same perturbation, so repeats do not compose). It fails closed: any error
  becomes a :class:`~dptext.errors.PrivacyError` and no output at all.
* The InferDPT chain around it (remote step, local extraction) lives in
  :mod:`dptext.inferdpt`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from dptext.errors import DPTextError, ParameterError, PrivacyError

@dataclass(frozen=True)
class Segment:
    """A piece of a request: its text and whether it is private."""

    text: str
    private: bool


@dataclass
class Sanitized:
    """What :meth:`Sanitizer.sanitize` returns: one output text per input segment, and the report."""

    texts: list[str]
    # per segment: one PerturbResult per non-blank span of the plan, in order (a public span of an
    # `entities` plan gets a record whose units are kept with reason "public"); empty for public segments
    results: list[list]
    report: dict

    def units(self, i: int = 0) -> list[dict]:
        """Per-unit records of segment ``i`` (``original``, ``output``, ``action``, ``reason``...)."""
        return [u for r in self.results[i] for u in r.to_dict()["units"]]


@dataclass
class Draft:
    """A :meth:`Sanitizer.prepare` result: what is known before the mechanism runs, and its calls."""

    counts: dict
    rep: dict
    texts: list = field(default_factory=list)  # per segment: its output, None until finish
    results: list = field(default_factory=list)
    jobs: list = field(default_factory=list)  # (mechanism, text, dp_only), one mechanism call each
    segments: list = field(default_factory=list)  # (index, memo key, spans) of the segments to perturb
    repeats: list = field(default_factory=list)  # (index, index of the same text earlier in the call)


class Sanitizer:
    """Perturb the private segments of requests with one mechanism; thread-safe, fail closed.

    ``spec``: a :class:`~dptext.mechanisms.spec.MechanismSpec` or a mechanism object.
    ``policy``: ``None`` (every private unit is perturbed) or a policy from
    :func:`dptext.privacy.policy.get_policy` (which spans of private text are perturbed, at which ε).
    ``memo``: an object with ``key(scope, settings, text) -> bytes``, ``get(key) -> str | None`` and
    ``put(key, text)``: the same private text in the same scope is then sent the same way every time.

    Detected spans (a policy's spans with a ``detector``) are perturbed with ``dp_only=True``: no keep
    rule applies inside them. ``report["units"]`` counts outcomes (perturbed, kept, self, dropped) and
    ``report["sent_unchanged"]`` the units that left unchanged (kept by a rule or drawn as themselves).

    Accounting (``report["epsilon_spent"]``): the unit-level ε this call spent, i.e. the largest ε at
    which any unit was freshly drawn, and 0 when every private segment came from the memo. Repeats
    compose (basic composition): a unit sent in k fresh calls has spent the sum of those calls'
    ``epsilon_spent``, so a running sum per scope is the worst case for a unit present in every call.
    For a document-level mechanism (DP-Prompt) the ε is the mechanism's document-level bound.
    """

    def __init__(self, spec, *, policy=None, memo=None, progress=None) -> None:
        from dptext.mechanisms.spec import MechanismSpec

        if isinstance(spec, MechanismSpec):
            self.spec, self.mechanism = spec, spec.build(progress=progress)
        elif callable(getattr(spec, "perturb", None)):
            self.spec, self.mechanism = None, spec
        else:
            raise DPTextError("Sanitizer needs a MechanismSpec or a mechanism object")
        self.policy, self.memo = policy, memo
        self.claim = self.mechanism.privacy().to_dict()
        from dptext.privacy.policy import policy_name

        name = policy_name(policy)
        guarded = name != "all" or self.mechanism.has_keep_rule
        if guarded:
            # inside a detected span no keep rule applies (perturb(dp_only=True)): the bound covers its units
            self.claim = {**self.claim, "scope": self.claim.get("scope", "") + "; every unit of every detected "
                          "span is drawn by the mechanism's DP branch (no keep rule applies inside a span), so "
                          "the claim covers all of them"}
        if policy is not None:
            if self.claim.get("kind") == "document-dp" and name != "all":
                raise ParameterError("policy", f"policy {name!r} perturbs spans one by "
                                               f"one; {self.mechanism.name} rewrites whole documents (use 'all')")
            if hasattr(policy, "validate"):
                policy.validate(self.mechanism.epsilon)
        self.no_dp_guarantee = self.claim.get("bound") is None
        self._by_epsilon = {self.mechanism.epsilon: self.mechanism}
        self._lock = threading.Lock()
        settings = self.spec.to_dict() if self.spec is not None else self.mechanism.settings()
        self.settings = {**settings, "seed": None, "policy": self.policy.describe() if self.policy else "all"}
        if guarded:
            # part of the memo key: a perturbation memoized before spans were drawn by the DP branch only
            # (when a detected name could be kept) is never replayed
            self.settings["detected_spans"] = "dp-branch"

    def _mechanism_at(self, epsilon):
        """The mechanism at ``epsilon`` (a policy may spend a different ε on some spans)."""
        if epsilon is None or epsilon == self.mechanism.epsilon:
            return self.mechanism
        if epsilon not in self._by_epsilon:
            if self.spec is None:
                raise PrivacyError("a policy asked for another epsilon; build the Sanitizer from a MechanismSpec")
            self._by_epsilon[epsilon] = self.spec.replace(epsilon=epsilon).build()
        return self._by_epsilon[epsilon]

    def sanitize(self, segments: Sequence[Segment], *, rng: np.random.Generator | None = None,
                 scope: str = "", memo=None) -> Sanitized:
        """Public segments unchanged, private ones perturbed; any failure raises PrivacyError.

        ``memo`` overrides the Sanitizer's memo for this call (e.g. one that holds its writes back
        until the caller has charged the request).
        """
        with _fail_closed(), self._lock:
            return self._sanitize(list(segments), rng, scope, memo if memo is not None else self.memo)

    def _sanitize(self, segments: list[Segment], rng, scope: str, memo) -> Sanitized:
        draft = self._prepare(segments, scope, memo)
        results = [mech.perturb(piece, rng=rng, dp_only=True) if dp_only else mech.perturb(piece, rng=rng)
                   for mech, piece, dp_only in draft.jobs]
        return self._finish(draft, results, memo)

    def prepare(self, segments: Sequence[Segment], *, scope: str = "", memo=None) -> "Draft":
        """The first half of :meth:`sanitize`: plans, memo replays and the mechanism calls still to make
        (``draft.jobs``: ``(mechanism, text, dp_only)``). A caller that batches the calls of several drafts
        (the proxy's perturbation process) holds :attr:`_lock` around prepare, its calls and :meth:`finish`,
        and draws the calls from a generator of its own. Any failure is a PrivacyError."""
        with _fail_closed():
            return self._prepare(list(segments), scope, memo if memo is not None else self.memo)

    def finish(self, draft: "Draft", results: list, *, memo=None) -> Sanitized:
        """The second half of :meth:`sanitize`: ``results[i]`` is the PerturbResult of ``draft.jobs[i]``."""
        if len(results) != len(draft.jobs):
            raise PrivacyError("a batched perturbation returned a different number of results")
        with _fail_closed():
            return self._finish(draft, results, memo if memo is not None else self.memo)

    def _prepare(self, segments: list[Segment], scope: str, memo) -> "Draft":
        from dptext.mechanisms.base import OUTCOMES  # perturbed, kept (by a rule), self (drawn as itself), dropped

        d = Draft(counts=dict.fromkeys(OUTCOMES, 0),
                  rep={"private_segments": 0, "public_segments": 0, "memo_hits": 0, "kept_by_policy": 0,
                       "clear_private_chars": 0, "spans": []})
        first: dict = {}  # memo key -> index of its first segment in this call (repeats replay it)
        for seg in segments:
            if not isinstance(seg.text, str):
                raise DPTextError(f"segment text must be str, not {type(seg.text).__name__}")
            idx = len(d.texts)
            d.results.append([])
            if not seg.private:
                d.rep["public_segments"] += 1
                d.texts.append(seg.text)
                continue
            d.rep["private_segments"] += 1
            if not seg.text.strip():
                d.texts.append(seg.text)
                continue
            key = memo.key(scope, self.settings, seg.text) if memo is not None else None
            if key is not None and key in first:  # a repeat inside this call: the first one's output
                d.rep["memo_hits"] += 1
                d.texts.append(None)
                d.repeats.append((idx, first[key]))
                continue
            hit = memo.get(key) if key is not None else None
            if hit is not None:
                d.rep["memo_hits"] += 1
                d.texts.append(hit)
                continue
            d.texts.append(None)
            if key is not None:
                first[key] = idx
            items = []
            for start, end, private, epsilon, detector, label in self._plan(seg.text):
                piece = seg.text[start:end]
                if not private or not piece.strip():
                    res = None
                    if not private and piece.strip():  # sent in clear by the policy: its units count as kept
                        d.rep["clear_private_chars"] += len(piece.strip())
                        res = _public(self.mechanism, piece)
                        d.counts["kept"] += len(res.outcomes)
                    items.append((piece, res))
                    continue
                # a detected span: every unit through the DP branch, no keep rule (SPEC 5, policies)
                items.append((len(d.jobs), detector, label))
                d.jobs.append((self._mechanism_at(epsilon), piece, detector is not None))
            d.segments.append((idx, key, items))
        return d

    def _finish(self, d: "Draft", results: list, memo) -> Sanitized:
        counts, rep, texts = d.counts, d.rep, d.texts
        spent = 0.0
        for idx, key, items in d.segments:
            out, seg_results = [], []
            for item in items:
                if len(item) == 2:  # a blank or public span: as it was
                    out.append(item[0])
                    if item[1] is not None:
                        seg_results.append(item[1])
                    continue
                j, detector, label = item
                mech, res = d.jobs[j][0], results[j]
                if not isinstance(res.text, str):
                    raise TypeError(f"mechanism returned {type(res.text).__name__}, not text")
                c = res.counts()
                for k in counts:
                    counts[k] += c[k]
                rep["kept_by_policy"] += len(res.kept_units())
                if res.n_sampled() and mech.epsilon is not None:  # a draw spends ε whatever it returned
                    spent = max(spent, float(mech.epsilon))
                if detector is not None:
                    rep["spans"].append({"detector": detector, "label": label, "epsilon": mech.epsilon,
                                         "units": sum(c.values()), "sent_unchanged": c["kept"] + c["self"],
                                         "kept_by_rule": c["kept"]})
                out.append(res.text)
                seg_results.append(res)
            texts[idx] = "".join(out)
            if key is not None:
                memo.put(key, texts[idx])
            d.results[idx] = seg_results
        for idx, src in d.repeats:
            texts[idx] = texts[src]
        report = {"mechanism": self.mechanism.name, "epsilon": self.mechanism.epsilon,
                  "space": getattr(self.mechanism.space, "name", None), "claim": self.claim, "units": counts,
                  "sent_unchanged": counts["kept"] + counts["self"], **rep,
                  "epsilon_spent": spent, "composition": "basic, per unit: a unit sent in k fresh requests "
                                                         "has spent k times its epsilon",
                  "unperturbed_private": 0, "no_dp_guarantee": self.no_dp_guarantee,
                  "policy": self.policy.describe() if self.policy is not None else {"name": "all"}}
        if not rep["spans"]:
            del report["spans"]
        if self.no_dp_guarantee:
            report["warnings"] = ["no DP guarantee: this mechanism makes no differential-privacy claim"]
        return Sanitized(texts, d.results, report)

    def _plan(self, text: str):
        """(start, end, private, epsilon, detector, label) spans tiling ``text``."""
        from dptext.privacy.policy import plan_for, policy_name

        spans = plan_for(self.policy, text, self.mechanism)
        pos = 0
        out = []
        for sp in spans:
            if sp.start != pos or sp.end < sp.start:
                raise PrivacyError(f"policy {policy_name(self.policy)!r} returned spans that do not "
                                   f"tile the text (gap or overlap at character {pos})")
            out.append((sp.start, sp.end, sp.private, sp.epsilon, sp.detector, getattr(sp, "label", None)))
            pos = sp.end
        if pos != len(text):
            raise PrivacyError("policy spans do not cover the whole text")
        return out


@contextmanager
def _fail_closed():
    """Any failure inside becomes a PrivacyError naming it: nothing is sent."""
    try:
        yield
    except PrivacyError:
        raise
    except Exception as exc:  # noqa: BLE001 - fail closed on anything
        raise PrivacyError(f"perturbation failed ({type(exc).__name__}: {exc}); nothing was sent") from exc


def _public(mech, piece: str):
    """A record of a public span of private text: every unit sent as is (action kept, reason public)."""
    from dptext.mechanisms.base import PerturbResult

    pieces = mech.segment(piece).pieces
    n = len(pieces)
    return PerturbResult(piece, pieces, [p.text for p in pieces], ["kept"] * n, ["public"] * n,
                         outcomes=["kept"] * n)
