"""Choose the `balanced` preset from a sweep and write docs/choosing.md (one command).

    python benchmarks/make_choosing.py sweeps/presets.yaml [--out results/presets] [--doc docs/choosing.md]

Measures every (mechanism, ε) of the sweep file (what is measured: see the file's header), applies
the selection rule below, re-measures the chosen configuration on held-out documents, measures each
preset as it is defined in dptext.privacy.presets (its accuracy averaged over ``preset_draws`` perturbation
draws of every text: one grid cell is one draw, and the smallest ε that passes on one draw is, on average, a
lucky one), and writes results JSON, plots (docs/figures/choosing-*.png)
and the guide, and the playground's copy of the curves (src/dptext/web/static/choosing-curves.json, package
data; ``--curves-only`` rewrites it from docs/choosing.json without measuring). Selection rule, per mechanism:

* entity ε(r) = the largest entity ε below r whose KNN and Bayesian ASR@1 on entity units are both <= attack_max;
* rest ε = the smallest r whose non-entity content-word retention >= retention_min and whose downstream accuracy
  (train and test on perturbed text) is within accuracy_drop_max of clean on every classifier task (sentiment and
  topic; see _choosing_tasks.py), where the accuracy is *confirmed*: measured under policy ``tiered`` with entities
  at entity ε(r), as the mean of ``preset_draws`` perturbation draws of every text. A grid cell is one draw with
  entities at the grid's smallest entity ε, and the smallest ε that passes on one draw is, on average, a lucky one,
  so the grid only screens: an r is confirmed when its one-draw drop is within ``confirm_margin`` of the target, in
  increasing order, until one passes;
* among mechanisms with both, the smallest rest ε (the proxy's per-request charge), then the higher retention.

The chosen configuration's confirmation is the same measurement as the ``balanced`` preset's accuracy (same spec,
policy, draws and seed), so it is computed once.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _choosing_doc import write_doc  # noqa: E402
from _choosing_rule import confirm, grid_key, rejected, select  # noqa: E402
from _choosing_cells import (_cached_detect, accuracy_cell, answer_documents, answers,  # noqa: E402
                             content_retention, entity_cell, rest_cell, sanitize)
from _choosing_tasks import clean_accuracy, clean_se, load_tasks, marked_words  # noqa: E402


CURVES = Path(__file__).resolve().parent.parent / "src" / "dptext" / "web" / "static" / "choosing-curves.json"


def curves(data: dict) -> dict:
    """The playground's subset of the sweep (docs/choosing.json's ``rows``): per mechanism and policy, the ε grid
    with retention, KNN / Bayes ASR@1 on all units and the accuracy of each classifier task (``accuracy``: task
    name -> list over the grid; ``clean_accuracy``: task name -> clean accuracy), and the entity-ε grid with the
    attacks on entity units. Policy ``tiered``: content retention outside entities, entities at min(smallest
    entity ε, ε/2); accuracy was measured under ``tiered`` only (``null`` for ``all``)."""
    nums = lambda cells, f: [f(cells[e]) for e in sorted(cells, key=float)]  # noqa: E731
    out = []
    for label, row in data["rows"].items():
        rest, ent = row["rest"], row["entity"]
        entity = {"entity_epsilon": [float(e) for e in sorted(ent, key=float)],
                  "entity_knn": nums(ent, lambda c: c.get("knn")), "entity_bayes": nums(ent, lambda c: c.get("bayes"))}
        for policy, ret, acc in (("tiered", "content_retention", True), ("all", "all_retention", False)):
            out.append({"label": label, "mechanism": row["name"], "params": row["params"], "policy": policy,
                        "epsilon": [float(e) for e in sorted(rest, key=float)],
                        "retention": nums(rest, lambda c: c[ret]),
                        "all_knn": nums(rest, lambda c: c["all_units"].get("knn_all")),
                        "all_bayes": nums(rest, lambda c: c["all_units"].get("bayes_all")),
                        "accuracy": {t: nums(rest, lambda c: c["accuracy"][t] if acc else None)
                                     for t in data["clean_accuracy"]}, **entity})
    return {"guide": "docs/choosing.md in the dptext repository", "clean_accuracy": data["clean_accuracy"],
            "tasks": data.get("tasks", {}), "targets": data["targets"], "curves": out}


def write_curves(data: dict, path: Path = CURVES) -> None:
    path.write_text(json.dumps(curves(data), indent=1, default=float) + "\n", encoding="utf-8")


def refresh_descriptions(presets: dict) -> None:
    """On --reuse: each measured preset's description as dptext.privacy.presets now words it, where the preset
    there has the same mechanism spec and policy as the one measured (the wording may change, the numbers not)."""
    from dptext.privacy.presets import PRESETS

    for name, p in presets.items():
        if name in PRESETS:
            now, was = PRESETS[name].describe(), p["describe"]
            if now["mechanism"] == was["mechanism"] and now["policy"] == was["policy"]:
                p["describe"] = now


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--out", type=Path, default=Path("results/presets"))
    ap.add_argument("--doc", type=Path, default=Path("docs/choosing.md"))
    ap.add_argument("--figures", type=Path, default=Path("docs/figures"))
    ap.add_argument("--reuse", action="store_true", help="re-render the guide from --out/results.json")
    ap.add_argument("--curves-only", action="store_true",
                    help="only rewrite the playground's curve file from the guide's JSON (no measurement)")
    args = ap.parse_args(argv)
    if args.curves_only:
        write_curves(json.loads(args.doc.with_suffix(".json").read_text(encoding="utf-8")))
        print(f"wrote {CURVES}")
        return 0
    conf = yaml.safe_load(args.sweep.read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "results.json"
    if args.reuse:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["chosen"] = select(data["rows"], data["targets"])  # the rule as written now, on the stored rows
        data["rejected"] = rejected(data["rows"], data["targets"])
        refresh_descriptions(data["presets"])
    else:
        data = measure(conf, args.out / "cells.json")
        path.write_text(json.dumps(data, indent=1, default=float), encoding="utf-8")
    write_doc(data, conf, args.doc, args.figures, source=str(args.sweep))
    write_curves(data)
    print(f"wrote {path}, {args.doc}, {args.figures}/choosing-*.png and {CURVES}")
    return 0


def measure(conf: dict, cells_path: Path | None = None) -> dict:
    from dptext.data import get_dataset
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.privacy.presets import PRESETS

    t_start = time.perf_counter()
    seed = int(conf.get("seed", 0))
    sel, held = conf["select"], conf["heldout"]
    tasks = load_tasks(conf["classifier"], seed)
    wiki = get_dataset(sel["dataset"])
    docs = list(wiki.split("private", seed=seed).texts[: sel["limit"]])
    shadow = list(wiki.split("shadow", seed=seed).texts[: sel["shadow_limit"]])
    held_ds = get_dataset(held["dataset"])
    held_docs = list(held_ds.split("private", seed=seed).texts[: held["limit"]])
    t0 = time.perf_counter()
    clean = clean_accuracy(tasks, seed)
    clean_err = clean_se(tasks)
    for t in tasks:
        print(f"clean accuracy {t.name}: {clean[t.name]:.3f} ± {clean_err[t.name]:.3f} ({t.describe()})", flush=True)
    print(f"[clean accuracy {time.perf_counter() - t0:.0f} s]", flush=True)
    cache: dict = {}
    rows = {}
    slow = set(conf.get("slow_bayes") or [])  # mechanisms whose Bayesian likelihood table is too slow here
    done = json.loads(cells_path.read_text(encoding="utf-8")) if cells_path and cells_path.is_file() else {}

    def cell_of(key, fn):
        """A finished cell from an earlier run of the same sweep (cells.json), else computed and stored."""
        if key not in done:
            t = time.perf_counter()
            done[key] = fn()
            print(f"{key}: {done[key]} [{time.perf_counter() - t:.0f} s]", flush=True)
            if cells_path:
                cells_path.write_text(json.dumps(done, indent=1, default=float), encoding="utf-8")
        return done[key]

    from dptext.privacy.policy import get_policy

    for m in conf["mechanisms"]:
        name, params, label = m["name"], m.get("params") or {}, m.get("label") or m["name"]
        bayes = name not in slow
        row = rows[label] = {"name": name, "params": params, "clean_accuracy": clean, "entity": {}, "rest": {},
                             "bayes": bayes}
        for ee in m["entity_epsilon"]:
            spec = MechanismSpec(name, epsilon=ee, options=params)
            row["entity"][str(ee)] = cell_of(f"{label}|entity|{ee}", lambda: entity_cell(
                spec, docs, shadow, seed, cache, bayes))
        e_min = min(m["entity_epsilon"])
        for eps in m["epsilon"]:
            spec = MechanismSpec(name, epsilon=eps, options=params)

            def rest():
                cell = rest_cell(spec, min(e_min, eps / 2), docs, shadow, seed, cache, bayes)
                cell.update(accuracy_cell(spec, get_policy("tiered", entity_epsilon=min(e_min, eps / 2)),
                                          tasks, seed, cache))
                return cell

            row["rest"][str(eps)] = cell_of(f"{label}|rest|{eps}", rest)
    draws = int(conf.get("preset_draws", 1))  # perturbation draws per text when a preset is re-measured
    if draws < 1:
        raise SystemExit(f"preset_draws must be at least 1 (got {draws})")

    def confirmed(label, eps, ee):
        m = rows[label]
        spec = MechanismSpec(m["name"], epsilon=float(eps), options=m["params"])
        return cell_of(f"{label}|confirm|{eps}|{ee:g}|{draws}", lambda: accuracy_cell(
            spec, get_policy("tiered", entity_epsilon=ee), tasks, seed, cache, draws))

    confirm(rows, conf["targets"], float(conf.get("confirm_margin", 0.0)), draws, confirmed)
    chosen = select(rows, conf["targets"])
    print(f"chosen: {chosen}", flush=True)
    for mech, why in rejected(rows, conf["targets"]).items():
        print(f"  {mech}: {why}", flush=True)
    presets = {}
    measured = dict(PRESETS)
    if chosen:  # balanced as the sweep chose it (dptext.privacy.presets must then say the same: a test checks)
        from dptext.privacy.presets import balanced_preset

        m = rows[chosen["mechanism"]]
        measured["balanced"] = balanced_preset(m["name"], chosen["epsilon"], chosen["entity_epsilon"], m["params"])
    for pname, p in measured.items():
        t = time.perf_counter()
        pol = p.build_policy()
        if pol is not None:
            _cached_detect(pol, cache)
        d = {"describe": p.describe()}
        ent_spec = p.spec.replace(epsilon=p.policy["entity_epsilon"]) if p.policy else p.spec
        bayes = p.spec.mechanism not in slow
        d["entity"] = entity_cell(ent_spec, docs, shadow, seed, cache, bayes)
        d["entity_heldout"] = entity_cell(ent_spec, held_docs, shadow, seed, {}, bayes)
        _, runs = sanitize(p.spec, pol, docs, seed)
        rest = [r for spans, rs, _ in runs for s, r in zip(spans, rs) if s is None or s.detector is None]
        d["content_retention"] = content_retention(rest)
        _, runs_h = sanitize(p.spec, pol if pol is None else _cached_detect(p.build_policy(), {}), held_docs, seed)
        d["content_retention_heldout"] = content_retention(
            [r for spans, rs, _ in runs_h for s, r in zip(spans, rs) if s is None or s.detector is None])
        if pname == "balanced" and chosen.get("confirmed"):  # the confirmation is this very measurement (its cell)
            label = chosen["mechanism"]
            d.update(confirmed(label, grid_key(rows[label], chosen["epsilon"]), p.policy["entity_epsilon"]))
        else:
            d.update(accuracy_cell(p.spec, pol, tasks, seed, cache, draws))
        d["draws"] = draws
        if pol is not None:  # the same spec with every unit at the rest ε: what the entity tier costs in accuracy
            d["accuracy_policy_all"] = accuracy_cell(p.spec, None, tasks, seed, draws=draws)["accuracy"]
        presets[pname] = d
        print(f"preset {pname}: { {k: v for k, v in d.items() if k != 'describe'} } [{time.perf_counter() - t:.0f} s]",
              flush=True)
    ans = conf.get("answers") or {}
    if ans.get("documents"):
        from dptext.inferdpt import SAMPLE_DOCUMENT

        t = time.perf_counter()
        adocs = answer_documents(ans, seed)
        specs = {n: (p.spec, p.build_policy()) for n, p in measured.items()}
        q = answers(specs, adocs, int(ans["max_tokens"]), seed, SAMPLE_DOCUMENT)
        for n, v in q.items():
            presets[n]["answer"] = v
        print(f"answers over {len(adocs)} documents: "
              f"{ {n: (round(v['rouge_l'], 3), round(v['rouge_l_sd'], 3)) for n, v in q.items()} } "
              f"[{time.perf_counter() - t:.0f} s]", flush=True)
    marked = {t.name: marked_words(_cached_detect(measured["balanced"].build_policy(), cache), t.texts)
              for t in tasks} if measured["balanced"].policy else {}
    return {"rows": rows, "chosen": chosen, "rejected": rejected(rows, conf["targets"]), "presets": presets,
            "clean_accuracy": clean, "clean_accuracy_se": clean_err, "marked": marked,
            "targets": conf["targets"], "tasks": {t.name: {"dataset": t.dataset, "items": t.describe()} for t in tasks},
            "sizes": {"select_docs": len(docs), "shadow_docs": len(shadow), "heldout_docs": len(held_docs)},
            "seconds": round(time.perf_counter() - t_start, 1), "load_average": os.getloadavg()[0]}


if __name__ == "__main__":
    raise SystemExit(main())
