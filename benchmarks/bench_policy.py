"""Policy overhead: ``Policy.plan`` time per 100-word prompt, after warm-up, on distinct prompts.

Prompts are consecutive 100-word windows of the ``wiki`` set (so no two are
equal and no cache can help). Each policy plans every prompt once after a
warm-up pass over 10 other prompts; the table gives wall and CPU
(``time.process_time``) milliseconds per prompt, median and 95th percentile,
and the split of the ``entities`` detectors (spaCy NER, regex recognizers,
word list). The machine's load is printed beside the numbers.

Untrusted text reaches the recognizers (the proxy), so the last table runs
them on 100,000-character adversarial strings (long runs that make an
unbounded regular expression backtrack quadratically); every pattern's
repetitions are bounded, so each should take well under a second.

    python benchmarks/bench_policy.py [--prompts 100] [--words 100]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

TARGET_MS = 2.0
TERMS = ["diabetes", "asthma", "hypertension", "cancer", "depression", "HIV", "epilepsy", "pregnancy"]


def prompts(n: int, words: int) -> list[str]:
    from dptext.data import get_dataset

    toks = " ".join(get_dataset("wiki").texts).split()
    need = (n + 10) * words
    if len(toks) < need:
        raise SystemExit(f"wiki set has {len(toks)} words, need {need}")
    return [" ".join(toks[i * words : (i + 1) * words]) for i in range(n + 10)]


def timed(fn, texts) -> tuple[np.ndarray, np.ndarray]:
    wall, cpu = [], []
    for t in texts:
        w0, c0 = time.perf_counter(), time.process_time()
        fn(t)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return 1000 * np.asarray(wall), 1000 * np.asarray(cpu)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=100)
    ap.add_argument("--words", type=int, default=100)
    args = ap.parse_args(argv)

    from dptext.privacy import recognizers
    from dptext.privacy.detectors import WordList
    from dptext.privacy.policy import get_policy

    texts = prompts(args.prompts, args.words)
    warm, run = texts[:10], texts[10:]
    t0 = time.perf_counter()
    pols = {"all": get_policy("all"), "entities": get_policy("entities", wordlist=TERMS),
            "tiered": get_policy("tiered", entity_epsilon=1.0, wordlist=TERMS),
            "entities (regex + word list only)": get_policy("entities", detectors="regex,wordlist", wordlist=TERMS)}
    load = time.perf_counter() - t0
    ent = pols["entities"]
    parts = {"spaCy NER": ent.spacy.detect, "regex recognizers": lambda t: recognizers.recognize(t, ent.regex_labels),
             "word list": WordList(TERMS).detect}
    print(f"{len(run)} distinct {args.words}-word prompts (wiki), after warm-up on 10; policies built in "
          f"{load:.1f} s; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(f"{'what':<36}{'wall p50':>10}{'wall p95':>10}{'cpu p50':>10}{'cpu p95':>10}  (ms per prompt)")
    rows = {}
    for name, fn in [*((k, p.plan) for k, p in pols.items()), *parts.items()]:
        timed(fn, warm)
        wall, cpu = timed(fn, run)
        rows[name] = (wall, cpu)
        print(f"{name:<36}{np.median(wall):>10.2f}{np.percentile(wall, 95):>10.2f}"
              f"{np.median(cpu):>10.2f}{np.percentile(cpu, 95):>10.2f}")
    print("regex recognizers on 100,000-character adversarial strings (s):")
    n = 100_000
    for name, text in {"'A-' repeated": "A-" * (n // 2), "'a.' repeated": "a." * (n // 2),
                       "'1 ' repeated": "1 " * (n // 2), "'Ab, ' repeated": "Ab, " * (n // 4),
                       "'a@b.' repeated": "a@b." * (n // 4), "'1A-' repeated": "1A-" * (n // 3)}.items():
        t0 = time.process_time()
        recognizers.recognize(text)
        print(f"  {name:<20}{time.process_time() - t0:8.3f}")
    med = np.median(rows["entities"][1])
    verdict = "meets" if med <= TARGET_MS else "misses"
    print(f"target ≤ {TARGET_MS:g} ms per 100-word prompt: entities (CPU p50 {med:.2f} ms) {verdict} it; "
          f"regex + word list only: CPU p50 {np.median(rows['entities (regex + word list only)'][1]):.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
