"""One perturbation as the page shows it: units with a class and their place, and a privacy report.

With an entity policy (:mod:`dptext.privacy.policy`, when installed) the text
is planned into spans first: private spans are perturbed at their own ε (the
request's ε unless the policy sets one), public spans pass unchanged and their
units are ``kept`` with reason ``public``. Each unit carries its span and its
piece position inside that span, which is what ``/api/transition`` needs to
compute the unit's row in context.
"""

from __future__ import annotations

import numpy as np

from dptext.errors import DPTextError
from dptext.web.engine import MechanismCache, Settings, WebError, classify, sampled_positions, segment_units

CLASSES = ("perturbed", "self", "kept", "dropped")

PLAIN = {
    "metric-dp": "Each word is protected on its own: an observer of the output can hardly tell it from words "
                 "close to it in the {space} embedding space, and more easily from distant ones.",
    "dp-within-set": "Each word is protected on its own, and only against the other words of its candidate set: "
                     "words from different sets can be told apart.",
    "none": "No differential-privacy guarantee: the output can reveal the original words.",
}
# a mechanism whose protected set is not one "candidate set" says what its proof covers (see its claim's scope)
PLAIN_BY_MECHANISM = {
    "cape": "Each sampled word is protected on its own against every other sampled word at the same place in the "
            "same context, up to the proven worst case below (not ε itself, which is the mechanism's parameter). "
            "Stopwords, punctuation and unknown words are kept as they are and are not protected.",
}


def policy_module():
    """:mod:`dptext.privacy.policy`, or None where it is not installed."""
    try:
        from dptext.privacy import policy
    except ImportError:
        return None
    return policy


def make_policy(body: dict, epsilon: float):
    """The entity policy a request names (None without the policies module), checked against ε."""
    name = body.get("policy") or "all"
    mod = policy_module()
    if mod is None:
        if name != "all":
            raise WebError("entity policies are not installed here", field="policy")
        return None
    kwargs = {}
    if body.get("entity_epsilon") not in (None, ""):
        kwargs["entity_epsilon"] = body["entity_epsilon"]
    try:
        policy = mod.get_policy(name, **kwargs)
        policy.validate(epsilon)
        return policy
    except DPTextError as exc:
        raise WebError(str(exc), field=getattr(exc, "param", None) or "policy") from None


def plan(policy, text: str, mechanism) -> list[dict]:
    """Spans tiling ``text``: ``{"text", "private", "epsilon", "detector", "label"}``
    (:func:`dptext.privacy.policy.plan_for`: under ``all``, entities are detected spans for a mechanism with a
    keep rule)."""
    from dptext.privacy.policy import plan_for

    if policy is None and not text:
        return [{"text": text, "private": True, "epsilon": None, "detector": None, "label": None}]
    return [{"text": text[s.start : s.end], "private": bool(s.private), "epsilon": s.epsilon,
             "detector": s.detector, "label": getattr(s, "label", None)} for s in plan_for(policy, text, mechanism)]


def perturb_view(cache: MechanismCache, settings: Settings, text: str, rng: np.random.Generator,
                 policy=None) -> dict:
    mech = cache.get(settings)
    units, outputs, counts = [], [], dict.fromkeys(CLASSES, 0)
    unit_eps_max, proven = None, False
    spans = plan(policy, text, mech)
    for s, span in enumerate(spans):
        eps = settings.epsilon if span["epsilon"] is None else float(span["epsilon"])
        if not span["private"]:
            pieces = mech.segment(span["text"]) if span["text"].strip() else None
            for pos, p in enumerate(pieces.pieces if pieces else ()):
                units.append({"original": p.text, "output": p.text, "ws": p.ws, "class": "kept",
                              "reason": "public", "span": s, "pos": pos, "epsilon": None, "sampled": False})
                counts["kept"] += 1
            outputs.append(span["text"])
            continue
        m = mech if eps == settings.epsilon else cache.get(settings.at(eps))
        detected = span["detector"] is not None  # a detected span: DP branch only, no keep rule
        res = m.perturb(span["text"], rng=rng, dp_only=detected)
        outputs.append(res.text)
        sampled = {pos for pos, r in enumerate(res.units) if r.action == "perturbed" and r.reason not in
                   ("digits", "oov")} if detected else \
            set(sampled_positions(m, [r.original for r in res.units])[0].tolist())
        # per-unit ε where the mechanism reports one (in sampling order; the proven value where there
        # are two), else the span's ε
        proven = proven or "unit_epsilon_proven" in res.privacy  # each unit's proven loss (Cape), not ε
        per_unit = res.privacy.get("unit_epsilon_proven", res.privacy.get("unit_epsilon"))
        per_unit = iter(per_unit) if per_unit is not None and len(per_unit) == len(sampled) else None
        for pos, r in enumerate(res.units):
            cls = "kept" if r.outcome == "kept" else classify(m, r.original, r.output, r.action)
            counts[cls] += 1
            unit_eps = None
            if pos in sampled and m.privacy().kind != "none":
                unit_eps = float(next(per_unit)) if per_unit else m.epsilon
                unit_eps_max = unit_eps if unit_eps_max is None else max(unit_eps_max, unit_eps)
            units.append({"original": r.original, "output": r.output, "ws": r.ws, "class": cls,
                          "reason": r.reason, "span": s, "pos": pos, "epsilon": unit_eps,
                          "sampled": pos in sampled})
    for s in spans:
        s["epsilon"] = settings.epsilon if s["private"] and s["epsilon"] is None else s["epsilon"]
    return {"text": "".join(outputs), "units": units, "spans": spans,
            "privacy": report(mech, settings, counts, unit_eps_max, policy, proven)}  # as `perturb --json`


def report(mech, settings: Settings, counts: dict, unit_eps_max, policy, proven: bool = False) -> dict:
    claim = mech.privacy().to_dict()
    sampled = counts["perturbed"] + counts["self"]
    plain = PLAIN_BY_MECHANISM.get(mech.name) or PLAIN.get(claim["kind"], "").format(space=mech.space.name)
    if claim["kind"] != "none" and sampled:
        plain = plain[:-1] + f"; over the {sampled} sampled words of this text the guarantees add up " \
                             f"(basic composition)."
    rep = {"mechanism": mech.name, "epsilon": settings.epsilon, "space": mech.space.name,
           "claim": claim, "scope": plain, "counts": counts, "no_dp_guarantee": claim["kind"] == "none",
           "unit_epsilon_max": unit_eps_max, "unit_epsilon_is_proven_loss": proven}
    if policy is not None:
        rep["policy"] = policy.describe()
    return rep


def transition_context(cache: MechanismCache, settings: Settings, body: dict) -> tuple:
    """(mechanism at the unit's ε, context text, position) named by a transition request."""
    context = body.get("context")
    if not isinstance(context, str) or not context.strip():
        raise WebError("the context is empty: perturb a text first, then hover a unit", field="context")
    position = body.get("position")
    if isinstance(position, bool) or not isinstance(position, int):
        raise WebError(f"position must be an integer piece index (got {position!r})", field="position")
    mech = cache.get(settings)
    segment_units(mech, context)  # size check
    return mech, context, position
