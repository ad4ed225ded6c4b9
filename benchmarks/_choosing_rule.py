"""The selection rule of the choosing sweep (benchmarks/make_choosing.py's docstring states it): which entity ε
and rest ε a mechanism's measured rows allow, which rest ε are re-measured, and what each rejected one misses."""

from __future__ import annotations


def entity_pick(m: dict, below, targets: dict) -> float | None:
    """The largest entity ε of row ``m`` below ``below`` whose KNN and Bayesian ASR@1 both meet attack_max."""
    ok = [e for e in sorted(m["entity"], key=float) if float(e) < float(below)
          and m["entity"][e]["knn"] <= targets["attack_max"]
          and m["entity"][e].get("bayes", float("inf")) <= targets["attack_max"]]
    return float(ok[-1]) if ok else None


def drops(m: dict, cell: dict) -> dict:
    """Per classifier task, clean accuracy minus the cell's."""
    return {t: c - cell["accuracy"][t] for t, c in m["clean_accuracy"].items()}


def accuracy_ok(m: dict, cell: dict, targets: dict, slack: float = 0.0) -> bool:
    """Every task's drop from clean within accuracy_drop_max (+ ``slack``)."""
    return all(d <= targets["accuracy_drop_max"] + slack + 1e-9 for d in drops(m, cell).values())


def judged(m: dict, e: str) -> dict:
    """The accuracy a rest ε is judged on: its confirmation where one was measured, else its grid cell."""
    return (m.get("confirm") or {}).get(e) or m["rest"][e]


def candidate(m: dict, e: str, targets: dict) -> float | None:
    """entity ε(r) for rest ε ``e`` when ``e`` meets the retention target and an entity ε below it meets the attack
    target, else None (``e`` cannot be chosen, whatever its accuracy)."""
    if m["rest"][e]["content_retention"] < targets["retention_min"]:
        return None
    return entity_pick(m, e, targets)


def select(rows: dict, targets: dict) -> dict:
    """Apply the selection rule (module docstring) to the measured rows."""
    picks = {}
    for mech, m in rows.items():
        for e in sorted(m["rest"], key=float):
            ee = candidate(m, e, targets)
            if ee is not None and accuracy_ok(m, judged(m, e), targets):
                picks[mech] = {"epsilon": float(e), "entity_epsilon": ee,
                               "content_retention": m["rest"][e]["content_retention"],
                               "confirmed": e in (m.get("confirm") or {})}
                break
    if not picks:
        return {}
    best = min(picks, key=lambda k: (picks[k]["epsilon"], -picks[k]["content_retention"]))
    return {"mechanism": best, "name": rows[best]["name"], "params": rows[best]["params"], **picks[best],
            "candidates": picks}


def grid_key(m: dict, eps: float) -> str:
    """The grid key of rest ε ``eps`` in row ``m`` (keys are the sweep file's spelling: '8', '0.5')."""
    return next(e for e in m["rest"] if float(e) == float(eps))


def confirm(rows: dict, targets: dict, margin: float, draws: int, measure_cell) -> None:
    """Per mechanism, re-measure rest ε in increasing order (retention met, one-draw drop within ``margin`` of the
    target, an entity ε below it) at ``draws`` draws with entities at entity ε(r), until one meets the accuracy
    target; ``measure_cell(label, r, entity ε)`` returns the accuracy cell. Stored as ``rows[label]["confirm"]``."""
    for label, m in rows.items():
        m["confirm"] = {}
        for e in sorted(m["rest"], key=float):
            ee = candidate(m, e, targets)
            if ee is None or not accuracy_ok(m, m["rest"][e], targets, margin):
                continue
            m["confirm"][e] = {"entity_epsilon": ee, "draws": draws, **measure_cell(label, e, ee)}
            if accuracy_ok(m, m["confirm"][e], targets):
                break


def rejected(rows: dict, targets: dict) -> dict:
    """Per mechanism the rule did not accept, which target each rest ε misses (for the guide)."""
    out = {}
    for mech, m in rows.items():
        why = []
        for e in sorted(m["rest"], key=float):
            ret, conf, c = m["rest"][e]["content_retention"], (m.get("confirm") or {}).get(e), judged(m, e)
            miss = [f"retention {ret:.3f}"] if ret < targets["retention_min"] else []
            se = c.get("accuracy_drop_se") or {}
            miss += [f"{t} {c['accuracy'][t]:.3f} (clean {m['clean_accuracy'][t]:.3f}, drop {d * 100:.1f}"
                     + (f" ± {se[t] * 100:.1f}" if t in se else "") + " points)"
                     for t, d in drops(m, c).items() if d > targets["accuracy_drop_max"] + 1e-9]
            how = (f" (confirmed: mean of {conf['draws']} draws, entities at ε={conf['entity_epsilon']:g})"
                   if conf else "")
            why.append(f"ε={float(e):g}{how}: " + (", ".join(miss) if miss else "utility targets met"))
        if entity_pick(m, float("inf"), targets) is None:
            why.append("no entity ε meets the attack target" + ("" if m.get("bayes", True) else
                                                                  " (Bayesian attack not measured)"))
        out[mech] = "; ".join(why)
    return out
