"""Recall and precision of the policy detectors on a labelled set generated with Faker.

1,000 sentences (seeded) from varied templates carry names, street
addresses, emails, phones, dates and diagnoses at known character offsets.
The ``entities`` policy's plan is compared with the gold spans:

* recall (full): share of gold entities whose every character lies in a
  private span (a partly covered name still leaks its uncovered part);
* recall (any): share with at least one covered character;
* precision per detected label: share of merged detected spans that overlap
  a gold entity (the templates hold no other sensitive text);
* characters: share of gold characters covered / of detected characters that are gold.

Diagnoses are matched by the word list and, since issue 24, by the WordNet
medical terms of the default ``MEDICAL`` type. The word list holds 30 of the 40
conditions the generator uses, so the 10 held-out conditions show what the
list alone would miss. ``--leak`` also perturbs the sentences under ``all``,
``entities`` and ``tiered`` and counts gold names that reach the output
verbatim: what a missed detection costs.

    python benchmarks/eval_detector.py [--n 1000] [--seed 17] [--leak 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

CONDITIONS = [
    "type 2 diabetes", "hypertension", "asthma", "major depressive disorder", "HIV", "hepatitis C",
    "multiple sclerosis", "Parkinson's disease", "epilepsy", "breast cancer", "lung cancer", "leukemia",
    "schizophrenia", "bipolar disorder", "anorexia nervosa", "chronic kidney disease", "cirrhosis",
    "rheumatoid arthritis", "lupus", "Crohn's disease", "COPD", "heart failure", "atrial fibrillation",
    "Alzheimer's disease", "celiac disease", "psoriasis", "tuberculosis", "hypothyroidism", "glaucoma",
    "sickle cell anemia",
    # held out of the word list
    "endometriosis", "gout", "migraine", "osteoporosis", "pancreatitis", "sarcoidosis", "shingles",
    "vertigo", "fibromyalgia", "anemia",
]
IN_LIST = 30
TEMPLATES = [
    "{NAME} was diagnosed with {DIAG} on {DATE}.",
    "Please call {NAME} at {PHONE} before {DATE}.",
    "My name is {NAME} and my email is {EMAIL}.",
    "Patient {NAME}, born {DATE}, lives at {ADDRESS}.",
    "Send the lab results for {DIAG} to {EMAIL} or fax {PHONE}.",
    "{NAME}'s new address is {ADDRESS}.",
    "Hi, this is {NAME}. You can reach me on {PHONE} any time.",
    "The referral letter dated {DATE} says that {NAME} has {DIAG}.",
    "Contact: {NAME} | {EMAIL} | {PHONE}",
    "I moved to {ADDRESS} on {DATE} after my {DIAG} got worse.",
    "Dr. {NAME} confirmed {DIAG} and booked a follow-up for {DATE}.",
    "please forward this to {EMAIL}, thanks {NAME}",
    "we met {NAME} yesterday and she told us about her {DIAG}",
    "Invoice for {NAME}, {ADDRESS}, due {DATE}.",
    "Emergency contact {NAME} ({PHONE}), relation: sister.",
    "According to {NAME}, the package was left at {ADDRESS}.",
    "{NAME} and {NAME} signed the lease on {DATE}.",
    "My doctor says my {DIAG} is stable; questions go to {EMAIL}.",
    "Appointment with {NAME} on {DATE}, phone {PHONE}.",
    "Ms. {NAME} reported symptoms of {DIAG} since {DATE}.",
    "I'm {NAME}, I have {DIAG}, and I live at {ADDRESS}.",
    "Reply to {EMAIL} if {NAME} misses the {DATE} session.",
    "Shipping label: {NAME}, {ADDRESS}, tel. {PHONE}",
    "The insurer rejected the {DIAG} claim filed by {NAME}.",
    "Mr. {NAME} can be reached at {PHONE} or {EMAIL}.",
    "On {DATE}, {NAME} wrote from {EMAIL} about the rent.",
    "{NAME} works nights and lives alone at {ADDRESS}.",
    "Her son {NAME} found out about the {DIAG} on {DATE}.",
    "Text {PHONE} to confirm; ask for {NAME}.",
    "Dear {NAME}, your results from {DATE} show no sign of {DIAG}.",
]
DATE_FORMATS = ["%B %d, %Y", "%m/%d/%Y", "%Y-%m-%d", "%d %B %Y", "%b %d, %Y", "%B %Y", "%d/%m/%Y"]
TYPES = ("NAME", "ADDRESS", "EMAIL", "PHONE", "DATE", "DIAG")


def generate(n: int, seed: int):
    """``n`` (sentence, gold) pairs; gold = list of (start, end, type, diagnosis_in_list)."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    rnd = random.Random(seed)
    values = {
        "NAME": lambda: f"{fake.first_name()} {fake.last_name()}",
        "ADDRESS": lambda: fake.address().replace("\n", ", "),
        "EMAIL": lambda: rnd.choice([fake.email, fake.free_email, fake.company_email])(),
        "PHONE": fake.phone_number,
        "DATE": lambda: fake.date_between("-60y", "+1y").strftime(rnd.choice(DATE_FORMATS)),
    }
    out = []
    for _ in range(n):
        tpl = rnd.choice(TEMPLATES)
        text, gold, pos = "", [], 0
        for part in _split(tpl):
            if part.startswith("{"):
                kind = part[1:-1]
                if kind == "DIAG":
                    k = rnd.randrange(len(CONDITIONS))
                    val, in_list = CONDITIONS[k], k < IN_LIST
                else:
                    val, in_list = values[kind](), None
                gold.append((len(text), len(text) + len(val), kind, in_list))
                text += val
            else:
                text += part
            pos += 1
        out.append((text, gold))
    return out


def _split(tpl: str):
    parts, i = [], 0
    while i < len(tpl):
        j = tpl.find("{", i)
        if j < 0:
            parts.append(tpl[i:])
            break
        if j > i:
            parts.append(tpl[i:j])
        k = tpl.index("}", j)
        parts.append(tpl[j : k + 1])
        i = k + 1
    return parts


def evaluate(data, policy) -> dict:
    full, anyc, tot = defaultdict(int), defaultdict(int), defaultdict(int)
    pred_tp, pred_n = defaultdict(int), defaultdict(int)
    gold_chars = cov_chars = det_chars = det_gold_chars = 0
    misses = defaultdict(list)
    t0 = time.perf_counter()
    for text, gold in data:
        spans = [s for s in policy.plan(text) if s.private]
        covered = bytearray(len(text))
        for s in spans:
            covered[s.start : s.end] = b"\x01" * (s.end - s.start)
        is_gold = bytearray(len(text))
        for g0, g1, kind, in_list in gold:
            key = kind if kind != "DIAG" else ("DIAG (in list)" if in_list else "DIAG (held out)")
            tot[key] += 1
            c = sum(covered[g0:g1])
            # whitespace inside an entity carries nothing; count only non-space characters
            need = sum(1 for ch in text[g0:g1] if not ch.isspace())
            got = sum(1 for i in range(g0, g1) if covered[i] and not text[i].isspace())
            full[key] += got == need
            anyc[key] += c > 0
            if got < need and len(misses[key]) < 5:
                misses[key].append(text[g0:g1])
            is_gold[g0:g1] = b"\x01" * (g1 - g0)
        for s in spans:
            lab = s.label or "?"
            pred_n[lab] += 1
            pred_tp[lab] += any(is_gold[s.start : s.end])
            det_chars += s.end - s.start
            det_gold_chars += sum(is_gold[s.start : s.end])
        gold_chars += sum(is_gold)
        cov_chars += sum(a & b for a, b in zip(covered, is_gold))
    secs = time.perf_counter() - t0
    return {
        "recall": {k: {"n": tot[k], "full": full[k] / tot[k], "any": anyc[k] / tot[k]} for k in sorted(tot)},
        "precision": {k: {"n": pred_n[k], "precision": pred_tp[k] / pred_n[k]} for k in sorted(pred_n)},
        "chars": {"recall": cov_chars / max(gold_chars, 1), "precision": det_gold_chars / max(det_chars, 1)},
        "misses": dict(misses),
        "seconds": secs,
    }


def leak(data, policy_builders: dict, epsilon: float, mechanism: str, seed: int) -> dict:
    """Share of gold NAMEs found verbatim (case-folded, whole) in the perturbed sentence, per policy."""
    import numpy as np

    from dptext.mechanisms import get_mechanism

    mechs: dict = {}

    def mech(eps):
        eps = float(eps if eps is not None else epsilon)
        if eps not in mechs:
            mechs[eps] = get_mechanism(mechanism, epsilon=eps)
        return mechs[eps]

    out = {}
    for name, pol in policy_builders.items():
        rng = np.random.default_rng(seed)
        leaked = names = 0
        for text, gold in data:
            parts = []
            for s in pol.plan(text):
                seg = text[s.start : s.end]
                parts.append(mech(s.epsilon).perturb(seg, rng=rng).text if s.private and seg.strip() else seg)
            sent = "".join(parts).casefold()
            for g0, g1, kind, _ in gold:
                if kind == "NAME":
                    names += 1
                    leaked += all(w.casefold() in sent for w in text[g0:g1].split())
        out[name] = {"names": names, "leaked_verbatim": leaked / max(names, 1)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--leak", type=int, default=300, help="sentences for the leak experiment (0: skip)")
    ap.add_argument("--epsilon", type=float, default=6.0)
    ap.add_argument("--entity-epsilon", type=float, default=2.0)
    ap.add_argument("--mechanism", default="rantext")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    from dptext.privacy.policy import get_policy

    data = generate(args.n, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        wl = Path(tmp) / "diagnoses.txt"
        wl.write_text("\n".join(CONDITIONS[:IN_LIST]) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        pol = get_policy("entities", wordlist=str(wl))
        load = time.perf_counter() - t0
        res = evaluate(data, pol)
        res["load_seconds"] = load
        print(f"{args.n} sentences, seed {args.seed}; detectors: {', '.join(pol.describe()['detectors'])}")
        print(f"{'gold type':<18}{'n':>6}{'recall (full)':>15}{'recall (any)':>14}")
        for k, v in res["recall"].items():
            print(f"{k:<18}{v['n']:>6}{v['full']:>15.3f}{v['any']:>14.3f}")
        print(f"{'detected label':<18}{'n':>6}{'precision':>15}")
        for k, v in res["precision"].items():
            print(f"{k:<18}{v['n']:>6}{v['precision']:>15.3f}")
        print(f"characters: recall {res['chars']['recall']:.3f}, precision {res['chars']['precision']:.3f}; "
              f"plan time {1000 * res['seconds'] / args.n:.2f} ms/sentence")
        for k, v in res["misses"].items():
            print(f"  missed {k}: {v}")
        if args.leak:
            sub = data[: args.leak]
            pols = {"all": get_policy("all"), "entities": pol,
                    "tiered": get_policy("tiered", entity_epsilon=args.entity_epsilon, wordlist=str(wl))}
            res["leak"] = leak(sub, pols, args.epsilon, args.mechanism, args.seed)
            res["leak_settings"] = {"sentences": len(sub), "mechanism": args.mechanism, "epsilon": args.epsilon,
                                    "entity_epsilon": args.entity_epsilon}
            print(f"names sent verbatim ({args.mechanism}, ε = {args.epsilon:g}, tiered entity ε = "
                  f"{args.entity_epsilon:g}, {len(sub)} sentences):")
            for k, v in res["leak"].items():
                print(f"  {k:<9} {v['leaked_verbatim']:.3f} of {v['names']}")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
