"""docs/choosing.md and its plots from the results of benchmarks/make_choosing.py (no measuring here)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MARKERS = {"strict": "X", "balanced": "*", "inferdpt": "P"}


def _f(v, nd=3) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{nd}f}"


def _acc(cell: dict, task: str) -> str:
    """Accuracy with its standard error over the test items, e.g. ``0.655 ± 0.012``."""
    se = (cell.get("accuracy_se") or {}).get(task)
    return _f(cell["accuracy"][task]) + (f" ± {_f(se)}" if se is not None else "")


def _marked(data: dict) -> list[str]:
    """A paragraph on what the balanced preset's detectors mark in the classifier texts and what the entity
    tier costs in accuracy (the same spec under policy ``all``)."""
    b = data["presets"].get("balanced") or {}
    marked, alt = data.get("marked") or {}, b.get("accuracy_policy_all")
    if not marked or not alt:
        return []
    L = ["### What the entity tier costs in accuracy", "",
         "`balanced` against the same mechanism and rest ε with every unit at that ε (policy `all`), and what its "
         "detectors mark in the classifier texts (words overlapping a detected span; content words: letters, not "
         "a stopword). Marked words go through the DP branch at the entity ε, so a topic word the detectors take "
         "for a name or an organisation (a false positive) is replaced with a random word.", "",
         "| task | tiered (balanced) | policy all | content words marked | marked words by type |",
         "|---|---:|---:|---:|---|"]
    for task, m in marked.items():
        kinds = ", ".join(f"{k} {v}" for k, v in list(m["words_per_label"].items())[:6])
        L.append(f"| {task} | {_acc(b, task)} | {_f(alt.get(task))} | {_f(m['content_marked_share'])} of "
                 f"{m['content_words']} | {kinds} |")
    cost = "; ".join(f"{task}: {(alt[task] - b['accuracy'][task]) * 100:+.1f} points for policy `all` over `tiered`"
                     for task in marked if task in alt)
    L += ["", f"Measured cost of the entity tier (policy `all` minus `tiered`, same draw seed): {cost}. Both runs "
          "score the same items with the same folds; the difference still includes the noise of one perturbation "
          "draw per item in each run.",
          "", "Most frequent marked spans (count), per type:", ""]
    for task, m in marked.items():
        for lab, top in list(m["top"].items())[:5]:
            L.append(f"- {task}, {lab}: " + ", ".join(f"{w} ({n})" for w, n in top[:12]))
    return L + [""]


def _balanced_misses(data: dict) -> str:
    """Each target the balanced preset row misses, by how much, with the standard errors (or that it meets all)."""
    b, t = data["presets"].get("balanced"), data["targets"]
    if not b:
        return ""
    miss = []
    for task, c in data["clean_accuracy"].items():
        drop = c - b["accuracy"][task]
        if drop > t["accuracy_drop_max"] + 1e-9:
            se = (b.get("accuracy_drop_se") or {}).get(task)
            cse = (data.get("clean_accuracy_se") or {}).get(task)
            miss.append(f"{task} accuracy {_acc(b, task)} against clean {_f(c)}" + (f" ± {_f(cse)}" if cse else "")
                        + f": {drop * 100:.1f}" + (f" ± {se * 100:.1f}" if se is not None else "")
                        + f" points below clean, {(drop - t['accuracy_drop_max']) * 100:.1f} points beyond the "
                        f"{t['accuracy_drop_max'] * 100:g}-point target")
    if b["content_retention"] < t["retention_min"]:
        miss.append(f"content retention {_f(b['content_retention'])} (target {t['retention_min']})")
    for k in ("knn", "bayes"):
        v = b["entity_heldout"].get(k)
        if v is not None and v > t["attack_max"]:
            miss.append(f"held-out entity {k} ASR {_f(v)} (target {t['attack_max']})")
    nd = b.get("draws", 1)
    draw = "its own perturbation draw" if nd == 1 else f"the mean of {nd} perturbation draws of every text"
    head = (f" Re-measured as the preset ({draw}, entities at the chosen entity ε rather than "
            "the grid's smallest), `balanced`" if data.get("chosen") else " As measured, `balanced`")
    tail = (" This is the same measurement as the confirmation that chose it (same configuration, draws and seed)."
            if (data.get("chosen") or {}).get("confirmed") else
            " The grid cell that passed is one perturbation draw (entities at the grid's smallest ε), and the "
            "smallest ε that passes on one draw is, on average, a lucky one; the re-measurement is the better "
            "estimate of this configuration." if data.get("chosen") and nd > 1 else
            " The sweep cell that passed and this re-measurement are two draws of nearly the same configuration: "
            "where they disagree, the configuration sits at the edge of the "
            f"{t['accuracy_drop_max'] * 100:g}-point target within the measurement's noise."
            if data.get("chosen") else "")
    return (head + " misses: " + "; ".join(miss) + " (standard errors over the test items: for a drop, paired over "
            "the same items)." + tail) if miss else head + " meets every target."


def _mark_presets(ax, presets: dict, key) -> None:
    for name, p in presets.items():
        x, y = key(p)
        if y is not None and not (isinstance(y, float) and math.isnan(y)):
            ax.scatter([x], [y], marker=MARKERS.get(name, "o"), s=160, color="black", zorder=5)
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(6, 6))


def _plots(data: dict, figures: Path) -> list[str]:
    figures.mkdir(parents=True, exist_ok=True)
    rows, presets, t = data["rows"], data["presets"], data["targets"]
    eps_of = lambda p: p["describe"]["mechanism"]["epsilon"]  # noqa: E731
    ent_eps = lambda p: p["describe"]["policy"].get("entity_epsilon", eps_of(p))  # noqa: E731
    names = []

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for label, m in rows.items():
        xs = sorted(m["rest"], key=float)
        ax.plot([float(x) for x in xs], [m["rest"][x]["content_retention"] for x in xs], "o-", label=label)
    ax.axhline(t["retention_min"], ls="--", color="grey", lw=1)
    _mark_presets(ax, presets, lambda p: (eps_of(p), p["content_retention"]))
    ax.set(xlabel="ε (rest of the text)", ylabel="content-word retention outside entities", ylim=(-0.02, 1.02),
           title="Retention")
    ax.legend(fontsize=8)
    names.append(_save(fig, figures / "choosing-retention.png"))

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for label, m in rows.items():
        xs = sorted(m["entity"], key=float)
        line, = axes[0].plot([float(x) for x in xs], [m["entity"][x]["knn"] for x in xs], "o-", label=f"{label} KNN")
        axes[0].plot([float(x) for x in xs], [m["entity"][x].get("bayes", math.nan) for x in xs], "s--",
                     color=line.get_color(), label=f"{label} Bayes")
        xs = sorted(m["rest"], key=float)
        axes[1].plot([float(x) for x in xs], [m["rest"][x]["all_units"]["knn_all"] for x in xs], "o-",
                     color=line.get_color(), label=f"{label} KNN")
        axes[1].plot([float(x) for x in xs], [m["rest"][x]["all_units"].get("bayes_all", math.nan) for x in xs],
                     "s--", color=line.get_color(), label=f"{label} Bayes")
    for ax in axes:
        ax.axhline(t["attack_max"], ls="--", color="grey", lw=1)
    _mark_presets(axes[0], presets, lambda p: (ent_eps(p), p["entity"]["knn"]))
    axes[0].set(xlabel="ε on detected entities", ylabel="attack success (ASR@1)",
                title="Entity units (content words of detected spans)")
    axes[1].set(xlabel="ε (policy all: every unit)", title="All units")
    axes[0].legend(fontsize=7)
    names.append(_save(fig, figures / "choosing-attacks.png"))

    clean = data["clean_accuracy"]
    fig, axes = plt.subplots(1, len(clean), figsize=(5.5 * len(clean), 4), squeeze=False)
    for ax, task in zip(axes[0], clean):
        for label, m in rows.items():
            xs = sorted(m["rest"], key=float)
            ax.plot([float(x) for x in xs], [m["rest"][x]["accuracy"][task] for x in xs], "o-", label=label)
        ax.axhline(clean[task], color="black", lw=1, label="clean")
        ax.axhline(clean[task] - t["accuracy_drop_max"], ls="--", color="grey", lw=1,
                   label=f"clean − {t['accuracy_drop_max'] * 100:g} points")
        _mark_presets(ax, presets, lambda p: (eps_of(p), p["accuracy"][task]))
        ax.set(xlabel="ε (rest of the text; entities tiered)", ylabel="accuracy (train and test perturbed)",
               title=f"{task} ({(data.get('tasks') or {}).get(task, {}).get('dataset', '')}), MiniLM + linear head")
    axes[0][0].legend(fontsize=8)
    names.append(_save(fig, figures / "choosing-accuracy.png"))
    return names


def _save(fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path.name


def write_doc(data: dict, conf: dict, doc: Path, figures: Path, *, source: str) -> None:
    figs = _plots(data, figures)
    rel = Path("figures")
    t, ch, pr, sz = data["targets"], data.get("chosen") or {}, data["presets"], data["sizes"]
    clean, tasks = data["clean_accuracy"], data.get("tasks") or {}
    cse = data.get("clean_accuracy_se") or {}
    acc_head = " | ".join(f"{k} accuracy (clean {_f(v)}" + (f" ± {_f(cse[k])}" if k in cse else "") + ")"
                          for k, v in clean.items())
    ans_n = max([(p.get("answer") or {}).get("documents", 0) for p in pr.values()] + [0])
    L = ["# Choosing a preset and an ε", "",
         "<!-- generated by: python benchmarks/make_choosing.py " + source + " (do not edit by hand) -->", "",
         "dptext offers three presets (`--preset` on `dptext infer` and `dptext perturb`, `preset:` in the proxy's "
         "config, the playground's preset menu). A preset is a mechanism spec plus a policy, printed in full in "
         "every report. This page shows what each costs and protects, measured by one command, and how "
         "`balanced` was chosen.", "",
         "## The presets, measured", "",
         "| preset | mechanism, ε, policy | charge per fresh request | entity KNN / Bayes ASR@1 (held-out) | "
         "content retention outside entities | " + acc_head + " | InferDPT answer Rouge-L, mean ± sd |",
         "|---|---|---:|---|---:|" + "---:|" * len(clean) + "---:|"]
    for name, p in pr.items():
        d = p["describe"]
        pol = d["policy"]
        opts = ", ".join(f"{k}={v}" for k, v in d["mechanism"]["options"].items())
        what = (f"`{d['mechanism']['mechanism']}` ε={d['mechanism']['epsilon']:g}" + (f" ({opts})" if opts else "")
                + f", policy `{pol['name']}`" + (f", entities ε={pol['entity_epsilon']:g}" if "entity_epsilon" in pol else ""))
        e, eh = p["entity"], p["entity_heldout"]
        a = p.get("answer") or {}
        L.append(f"| `{name}` | {what} | {d['charge_per_request']:g} | {_f(e['knn'])} / {_f(e.get('bayes'))} "
                 f"({_f(eh['knn'])} / {_f(eh.get('bayes'))}) | {_f(p['content_retention'])} | "
                 + " | ".join(_acc(p, k) for k in clean) + f" | {_f(a.get('rouge_l'))} ± "
                 f"{_f(a.get('rouge_l_sd'))} ({_f(a.get('rouge_l_min'), 2)}–{_f(a.get('rouge_l_max'), 2)}) |")
    L += ["", f"Data: entity and retention numbers on {sz['select_docs']} `wiki` documents (Bayesian prior from "
          f"{sz['shadow_docs']} shadow documents), held-out entity numbers on {sz['heldout_docs']} `news` documents "
          "the choice never saw; accuracy: MiniLM + linear head trained and tested on perturbed text (the \"All\" "
          "setting), " + "; ".join(f"{k}: {v['items']}" for k, v in tasks.items()) + "; a preset's accuracy is the "
          f"mean over {max(p.get('draws', 1) for p in data['presets'].values())} perturbation draws of every text, "
          "each item's correctness averaged over them, given ± its standard error over the test items (binomial "
          "for one draw; the drop from clean has a paired standard error, in the list of misses below). Entity ASR scores the content words of detected spans (names, places, "
          "conditions); stopwords and numbers inside spans are in the tables below. The answer Rouge-L compares the "
          "rebuilt InferDPT continuation with the non-private one (SmolLM2-135M in-process as both models, "
          f"{ans_n} held-out `{(conf.get('answers') or {}).get('dataset', 'news')}` documents, one draw each: "
          "mean ± sample standard deviation over documents, range in brackets; a 135M model's continuations vary a "
          "lot, so this is weak evidence). Detected spans go through "
          "the mechanism's DP branch only (no keep rule inside a span, issue 24); a mechanism whose Bayesian "
          "attack is not measured (`–`, too slow here) is not eligible.", ""]
    if any("example_prompt" in (p.get("answer") or {}) for p in pr.values()):
        L += ["What the remote model receives for the embedded sample document, per preset (one draw):", ""]
        for name, p in pr.items():
            if (p.get("answer") or {}).get("example_prompt"):
                L += [f"- `{name}`: {p['answer']['example_prompt'].strip()}"]
        L.append("")
    L += ["## How `balanced` was chosen", "",
          f"Targets: on entity units, KNN and Bayesian ASR@1 ≤ {t['attack_max']}; outside entities, content-word "
          f"retention ≥ {t['retention_min']}; accuracy within {t['accuracy_drop_max'] * 100:.0f} points of clean on "
          f"every task ({', '.join(clean)}). "
          "Rule: per mechanism, the smallest rest ε meeting the two utility targets with entities at the largest "
          "entity ε below it that meets the attack target; among mechanisms, the smallest rest ε (the per-request "
          "charge). The grid measures accuracy on one perturbation draw with entities at the grid's smallest "
          "entity ε, which only screens: each rest ε that meets retention and whose one-draw drop is within "
          f"{conf.get('confirm_margin', 0) * 100:g} points of the target is re-measured, in increasing order, as "
          f"the preset it would become (its entity ε, the mean of {conf.get('preset_draws', 1)} draws of every "
          "text), until one passes; the rule judges the re-measurement.", ""]
    if ch:
        L.append(f"**Chosen: `{ch['mechanism']}`, rest ε = {ch['epsilon']:g}, entity ε = {ch['entity_epsilon']:g}.** "
                 "Candidates per mechanism: " + "; ".join(
                     f"`{k}` ε={v['epsilon']:g} / entities {v['entity_epsilon']:g}" for k, v in ch["candidates"].items())
                 + "." + _balanced_misses(data))
    else:
        L.append("**No configuration met every target**; `balanced` keeps its previous numbers (the preset row "
                 "above measures them as they are)." + _balanced_misses(data))
    if data.get("rejected"):
        L += ["", "What each mechanism misses (per rest ε: the grid's one draw with entity units at the grid's "
                  "smallest entity ε, or the re-measurement where it says *confirmed*):", ""]
        L += [f"- `{k}`: {v}" for k, v in data["rejected"].items()]
    L.append("")
    L += _marked(data)
    for label, m in data["rows"].items():
        L += [f"### {label}", "", "| entity ε | KNN | Bayes | KNN, all span units | Bayes, all span units | units |",
              "|---:|---:|---:|---:|---:|---:|"]
        for e in sorted(m["entity"], key=float):
            c = m["entity"][e]
            L.append(f"| {float(e):g} | {_f(c['knn'])} | {_f(c.get('bayes'))} | {_f(c.get('knn_all'))} | "
                     f"{_f(c.get('bayes_all'))} | {c.get('units')} / {c.get('units_all')} |")
        L += ["", "| ε | content retention (tiered) | Rouge-L (tiered) | retention (all) | KNN all units | "
              "Bayes all units | " + " | ".join(f"{k} accuracy" for k in clean) + " |",
              "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(clean)]
        for e in sorted(m["rest"], key=float):
            c = m["rest"][e]
            L.append(f"| {float(e):g} | {_f(c['content_retention'])} | {_f(c['tiered_rouge_l'])} | "
                     f"{_f(c['all_retention'])} | {_f(c['all_units'].get('knn_all'))} | "
                     f"{_f(c['all_units'].get('bayes_all'))} | "
                     + " | ".join(_acc(c, k) for k in clean) + " |")
        L.append("")
    L += ["## Plots (presets marked)", ""] + [f"![{f}]({rel / f})" for f in figs] + [""]
    L += ["## What to use", "",
          "- **Chat with a remote LLM** (`dptext infer`, the proxy): `balanced`. Names, places and other detected "
          "personal data go through the mechanism's DP branch at the small entity ε; the rest stays readable, so "
          "the remote answer is about the document. The claim on undetected text is the rest ε, which is large: "
          "a sensitive word the detectors miss is protected only weakly. Add a `--wordlist` for terms you know are "
          "sensitive.",
          "- **Corpus release** (`dptext sanitize-corpus`): `strict` or a small ε with policy `all`. Every unit is "
          "covered by the same small ε and no detector has to be right; the text is not readable, but "
          "classifiers trained on it keep part of the signal (see the accuracy columns). Each record is released "
          "once, so the charge does not compound.",
          "- **Research and comparison with the papers**: `inferdpt` (the InferDPT paper's configuration), or any "
          "mechanism and ε from the tables above; `dptext bench run sweeps/paper.yaml` reproduces the papers' "
          "tables (docs/RESULTS.md).", "",
          "## What a charge means", "",
          "The proxy charges each request that freshly perturbs private text **ε per request: the largest unit ε "
          "freshly spent** (`epsilon_spent` in the report, computed in `dptext.pipeline.Sanitizer` and summed per "
          "key by `dptext.privacy.accounting`), not units × ε. Under `balanced` that is the rest ε, since every "
          "unit of the text is perturbed and the undetected ones at the larger ε. A request replayed from the memo "
          "is charged 0. Charges add up per key (basic composition): a unit sent in k fresh requests has spent kε, "
          "so a key's running total bounds the loss of any one unit present in every request.", "",
          "## Reproduce", "", "```", f"python benchmarks/make_choosing.py {source}", "```", "",
          f"Run time {data['seconds']:.0f} s on the shared 2-core machine (load average "
          f"{data['load_average']:.1f}); results in `docs/choosing.json`.", ""]
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text("\n".join(L), encoding="utf-8")
    (doc.parent / "choosing.json").write_text(json.dumps(
        {"chosen": data.get("chosen"), "rejected": data.get("rejected", {}), "targets": t, "presets": {k: v for k, v in pr.items()},
         "clean_accuracy": clean, "clean_accuracy_se": data.get("clean_accuracy_se", {}),
         "marked": data.get("marked", {}), "tasks": tasks, "rows": data["rows"]}, indent=1, default=float), encoding="utf-8")
