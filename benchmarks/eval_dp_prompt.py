"""DP-Prompt against RANTEXT, SANTEXT+ and CUSTEXT+ at matched document-level ε on the `wiki` set.

Document-level ε: a token mechanism perturbing ``n`` units of a document at
``ε_unit`` spends ``n·ε_unit`` on it (basic composition), so for a target
``ε_doc`` each document is perturbed at ``ε_unit = ε_doc / n`` (``n`` = its
non-punctuation units). DP-Prompt spends ``max_tokens · ε_token = ε_doc``.
The claims differ in kind (RANTEXT and CUSTEXT+: ε within a candidate set;
SANTEXT+: metric DP, ε·d; DP-Prompt: any two documents), so "matched" means
equal nominal ε per document.

Per mechanism and ε_doc, over the documents:

* utility: cosine of MiniLM sentence embeddings of the raw and the sanitized
  document, and Rouge-L F1 between them;
* verbatim recovery: share of the document's distinct content words
  (alphabetic, not stopwords) present anywhere in the sanitized text: what a
  nearest-neighbour attacker gets at K = 1 without alignment (a paraphrase has
  no unit positions, so the positional KNN attack does not apply);
* LLM attack (``--llm-attack``): SmolLM2 is asked to restore the original from
  the sanitized text; recovery of content words in its answer.

    python benchmarks/eval_dp_prompt.py [--docs 5] [--eps-doc 100 500 2000 5000] [--llm-attack] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

WORD = re.compile(r"[A-Za-z]+")
ATTACK = ("The text below was produced by a privacy tool that rewrote or replaced words of an original text. "
          "Reconstruct the original text as well as you can. Reply with the reconstruction only.\n\n{text}")


def content_words(text: str) -> set[str]:
    from dptext.resources import is_stopword

    return {w.casefold() for w in WORD.findall(text) if len(w) > 2 and not is_stopword(w.casefold())}


def recovery(doc: str, text: str) -> float:
    want = content_words(doc)
    return len(want & {w.casefold() for w in WORD.findall(text)}) / max(len(want), 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=5)
    ap.add_argument("--eps-doc", type=float, nargs="+", default=[100.0, 500.0, 2000.0, 5000.0])
    ap.add_argument("--max-tokens", type=int, default=72)
    ap.add_argument("--mechanisms", nargs="+", default=["rantext", "santext+", "custext+", "dp-prompt-raw",
                                                        "dp-prompt-logprob"])
    ap.add_argument("--llm-attack", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    import dptext.mechanisms.dp_prompt  # noqa: F401  (registers dp-prompt)
    from dptext.data import get_dataset
    from dptext.llm import get_backend
    from dptext.mechanisms import get_mechanism
    from dptext.metrics import rouge_l_f1
    from dptext.metrics.quality import pairwise_cosine
    from dptext.resources import is_punctuation

    docs = list(get_dataset("wiki").split("private", seed=0).texts[: args.docs])
    attacker = get_backend("local") if args.llm_attack else None
    dp_modes = {"dp-prompt-raw": dict(logits="raw", clip_min=-10.0, clip_max=40.0),
                "dp-prompt-logprob": dict(logits="logprob", clip_min=-5.0, clip_max=0.0)}
    print(f"{len(docs)} wiki documents, ε_doc {args.eps_doc}, DP-Prompt max_tokens {args.max_tokens}; "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    rows, examples = [], {}
    for name in args.mechanisms:
        for eps_doc in args.eps_doc:
            t0 = time.perf_counter()
            rng = np.random.default_rng(args.seed)
            outs = []
            if name in dp_modes:
                mech = get_mechanism("dp-prompt", epsilon=eps_doc, max_tokens=args.max_tokens, **dp_modes[name])
                outs = [mech.perturb(d, rng=rng).text for d in docs]
                note = f"ε_token {mech.epsilon_token:.3g}, T {mech.temperature:.3g}"
            else:
                base = get_mechanism(name, epsilon=1.0)
                # one ε_unit for all documents: ε_doc over the largest unit count, so no document exceeds ε_doc
                n = max(sum(1 for p in base.segment(d).pieces if not is_punctuation(p.text)) for d in docs)
                mech = type(base)(epsilon=eps_doc / n, space=base.space)
                outs = [mech.perturb(d, rng=rng).text for d in docs]
                note = f"ε_unit {eps_doc / n:.3g} (n ≤ {n} units)"
            cos = pairwise_cosine(docs, [o if o.strip() else "." for o in outs])
            row = {"mechanism": name, "eps_doc": eps_doc, "note": note,
                   "cosine": float(cos.mean()), "rouge_l": float(np.mean([rouge_l_f1(d, o) for d, o in zip(docs, outs)])),
                   "verbatim_recovery": float(np.mean([recovery(d, o) for d, o in zip(docs, outs)]))}
            if attacker is not None:
                guesses = [attacker.complete([{"role": "user", "content": ATTACK.format(text=o)}], max_tokens=80,
                                             temperature=0.0, seed=args.seed).text for o in outs]
                row["llm_recovery"] = float(np.mean([recovery(d, g) for d, g in zip(docs, guesses)]))
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            examples[f"{name} @ {eps_doc:g}"] = outs[0]
            print(f"{name:<18} ε_doc {eps_doc:>6g}  {note:<34} cosine {row['cosine']:.3f}  Rouge-L {row['rouge_l']:.3f}  "
                  f"verbatim recovery {row['verbatim_recovery']:.3f}"
                  + (f"  LLM recovery {row['llm_recovery']:.3f}" if "llm_recovery" in row else "")
                  + f"  [{row['seconds']} s]", flush=True)
    print("document 0:", docs[0])
    for k, v in examples.items():
        print(f"  {k}: {v[:160]!r}")
    if args.json:
        args.json.write_text(json.dumps({"docs": docs, "rows": rows, "examples": examples,
                                         "load_average": os.getloadavg()[0]}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
