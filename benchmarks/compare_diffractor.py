"""dptext's 1-Diffractor side by side with the peer package ``dp-diffractor`` 0.2.1.

    python benchmarks/compare_diffractor.py [--units 10000] [--draws 5000] [--epsilon 1] [--method geometric]

Uses :mod:`compare_peers`'s helpers: the peers' own virtual environment under ``$DPTEXT_CACHE_DIR/peers``
(never the project's ``.venv``), the project's GloVe-50d vectors written as word2vec text, the same real
``tweets`` units and the same KNN-5 attack. ``dp-diffractor`` reads its vectors from
``$HOME/.cache/diffractor/<model>.txt`` and would download them; the peer runs with ``HOME`` under the
cache and our GloVe-50d file in place of its ``glove-wiki-gigaword-300``, so both sides use one list built
from the same 50,000 vectors (dptext with ``lists=glove-50d``).

The peer's start-up (reading the file and building its sorted list, at every start) counts in its cold
rate. Its ``rewrite`` (the package's API; a process-pool call per token) needs NLTK data that is not
available offline: the worker replaces NLTK's tokenizer by a split on spaces (the units are single words)
and its stopword list by an empty one (``replace_stopwords=True`` anyway: every unit is perturbed, as in
dptext). The warm rate of the peer's per-token function called in-process (no pool, its fastest path)
is printed beside it.

Equality in distribution: 5 input words × ``--draws`` draws per side, chi-square test of homogeneity,
**threshold fixed in advance: equal when p ≥ 0.001/5 for every word**, plus the total-variation distance.
The peer's list is not the paper's greedy list (it looks only at each word's 50 nearest neighbours and,
when all are listed, continues from an arbitrary unlisted word rather than the nearest), so the law is
compared with dptext run on the peer's own list (the mechanism proper); how far the two lists agree is
printed beside it. dptext follows the paper.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_peers import WORDS, embeddings_file, equality, knn_success, peers_python, real_text  # noqa: E402

PEER_MODEL = "glove-wiki-gigaword-300"  # the name the peer accepts; the file holds our GloVe-50d vectors
DEPARTS = ("peer departs from the paper's greedy list: it scans only the 50 nearest neighbours and, when all are "
           "listed, jumps to an arbitrary unlisted word (not the nearest); equality is tested on the peer's list")

WORKER = textwrap.dedent('''
    import json, sys, time
    from types import SimpleNamespace
    t0 = time.perf_counter()
    import nltk
    import numpy as np
    # no NLTK data offline: its tokenizer and stopword list are replaced (the units are single words already,
    # and replace_stopwords=True perturbs every unit, as dptext does)
    nltk.word_tokenize = lambda s: s.split()
    nltk.corpus.stopwords = SimpleNamespace(words=lambda *a: [])
    from diffractor import Diffractor, DiffractorConfig, core
    eps, method, gamma, inp, out, budget = float(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], \\
        sys.argv[5], float(sys.argv[6])
    cfg = DiffractorConfig(gamma=gamma, epsilon=eps, method=method, replace_stopwords=True, verbose=False)
    df = Diffractor(cfg, model_names=[sys.argv[7]])
    df.start()
    job = json.load(open(inp))
    res = {"setup_s": time.perf_counter() - t0}
    chunks = [" ".join(job["text"][s:s + 100]) for s in range(0, len(job["text"]), 100)]
    def rewrite(cap):  # the package's API: a process pool call per token
        outs, t = [], time.perf_counter()
        for c in chunks:
            outs += df.rewrite([c])[0].split()
            if time.perf_counter() - t > cap:
                break
        return outs, time.perf_counter() - t
    outs, _ = rewrite(budget)
    res.update(cold_units=len(outs), cold_s=time.perf_counter() - t0, text_out=outs)
    outs2, secs2 = rewrite(budget)
    res.update(warm_units=len(outs2), warm_s=secs2)
    df.close()
    # the per-token function in this process (no pool): the peer's fastest path
    core._RESOURCES = {"list": df.mgr.lists[0], "mapping": df.mgr.word_to_idx[0], "config": cfg,
                       "rng": np.random.default_rng(cfg.seed)}
    def run(words, cap):
        outs, t = [], time.perf_counter()
        for w in words:
            c = core.apply_privacy_mechanism(w, eps)
            outs.append(w if c is None else c)
            if time.perf_counter() - t > cap:
                break
        return outs, time.perf_counter() - t
    outs3, secs3 = run(job["text"], budget)
    res.update(core_units=len(outs3), core_s=secs3, core_out=outs3)
    res["draws"] = {w: run([w] * job["draws"], budget)[0] for w in job["words"]}
    res["list"] = list(df.mgr.lists[0])
    res["rss_mb"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    json.dump(res, open(out, "w"))
''')

OURS_WORKER = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    from dptext.mechanisms import get_mechanism
    eps, inp, out, opts = float(sys.argv[1]), sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
    job = json.load(open(inp))
    mech = get_mechanism("diffractor", epsilon=eps, **opts)
    res = mech.perturb(job["text"])
    res = {"cold_s": time.perf_counter() - t0, "text_out": [u.output for u in res.units]}
    t = time.perf_counter()
    mech.perturb(job["text"])
    res["warm_s"] = time.perf_counter() - t
    res["rss_mb"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    json.dump(res, open(out, "w"))
''')


def peer_home(root: Path, emb: Path) -> Path:
    """``HOME`` for the peer: ``.cache/diffractor/<PEER_MODEL>.txt`` links to our GloVe-50d word2vec file."""
    home = root / "home"
    target = home / ".cache" / "diffractor" / f"{PEER_MODEL}.txt"
    target.parent.mkdir(parents=True, exist_ok=True)
    if not target.exists():
        target.symlink_to(emb)
    return home


def with_list(mech, space, words: list[str]):
    """``mech`` with its lists replaced by one list given as words (the peer's), mapped to our unit ids."""
    order = space.lookup_many(words)
    if (order < 0).any() or len(np.unique(order)) != space.size:
        raise SystemExit("the peer's list is not a permutation of the glove-50d vocabulary")
    mech.orders = order[None, :]
    mech.positions = np.argsort(mech.orders, axis=1)
    return mech


def rows(space, texts, args) -> list[dict]:
    """One row (compare_peers' shape) for 1-Diffractor at ``args.epsilon`` / ``args.method``."""
    from dptext import cache
    from dptext.mechanisms import get_mechanism

    root = cache.cache_dir() / "peers"
    py = peers_python(root)
    emb = embeddings_file(space, root)
    home = peer_home(root, emb)
    job = root / "job-diffractor.json"
    json.dump({"text": texts, "words": WORDS, "draws": args.draws}, open(job, "w"))
    (root / "worker_diffractor.py").write_text(WORKER)
    (root / "ours_diffractor.py").write_text(OURS_WORKER)
    env = {**os.environ, "HOME": str(home)}
    gamma = int(getattr(args, "gamma", 5))
    method = getattr(args, "method", "geometric")
    t = time.perf_counter()
    out = root / "out-diffractor.json"
    subprocess.run([str(py), str(root / "worker_diffractor.py"), str(args.epsilon), method if method == "geometric"
                    else "TEM", str(gamma), str(job), str(out), str(args.peer_seconds), PEER_MODEL],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peer = json.load(open(out))
    opts = {"method": method, "gamma": gamma, "lists": "glove-50d"}
    ours_out = root / "ours-diffractor.json"
    subprocess.run([sys.executable, str(root / "ours_diffractor.py"), str(args.epsilon), str(job), str(ours_out),
                    json.dumps(opts)], check=True, stderr=subprocess.DEVNULL)
    ours = json.load(open(ours_out))
    mine = get_mechanism("diffractor", epsilon=args.epsilon, **opts)
    own_list = np.asarray(mine.orders[0])
    peer_list = space.lookup_many(peer["list"])
    eq, eq_rows = equality(space, with_list(mine, space, peer["list"]), peer["draws"])
    n_p = len(peer["core_out"])
    return [{
        "mechanism": "diffractor", "peer": f"dp-diffractor 0.2.1 ({method})", "seconds": time.perf_counter() - t,
        "equal": bool(eq), "equality": [{"word": w, "n": n, "p": p, "tv": tv} for w, n, p, tv in eq_rows],
        "departs": DEPARTS,
        "list_agreement": {"same_position": float(np.mean(own_list == peer_list)),
                           "first_difference": int(np.argmax(own_list != peer_list)) if (own_list != peer_list).any()
                           else None},
        "peer_setup_s": peer["setup_s"],
        "peer_cold": peer["cold_units"] / peer["cold_s"], "peer_cold_units": peer["cold_units"],
        "ours_cold": len(texts) / ours["cold_s"],
        "peer_warm": peer["warm_units"] / peer["warm_s"], "ours_warm": len(texts) / ours["warm_s"],
        "peer_core_warm": peer["core_units"] / peer["core_s"],
        "peer_rss_mb": peer["rss_mb"], "ours_rss_mb": ours["rss_mb"],
        # retention and KNN from the per-token outputs (one per unit; rewrite's detokenised text can merge units)
        "retention_peer": float(np.mean([a == b for a, b in zip(texts, peer["core_out"])])),
        "retention_ours": float(np.mean([a == (b or "").lower() for a, b in zip(texts, ours["text_out"])])),
        "knn_peer": knn_success(space, texts[:n_p], peer["core_out"]),
        "knn_ours": knn_success(space, texts, [(o or "").lower() for o in ours["text_out"]]),
    }]


def print_row(r: dict) -> None:
    print(f"\n== {r['mechanism']} (peer {r['peer']}; {r['seconds']:.0f} s)")
    print("  equality (p ≥ 0.001/5 per word): " + ("EQUAL" if r["equal"] else "DIFFERENT") + "; " +
          ", ".join(f"{e['word']}: n={e['n']} p={e['p']:.3g} TV={e['tv']:.3f}" for e in r["equality"]))
    la = r["list_agreement"]
    print(f"  note: {r['departs']}; the lists agree at {la['same_position']:.1%} of positions "
          f"(first difference at position {la['first_difference']})")
    print(f"  units/s cold: peer {r['peer_cold']:,.0f} ({r['peer_cold_units']} units; set-up "
          f"{r['peer_setup_s']:.0f} s), dptext {r['ours_cold']:,.0f} -> x{r['ours_cold'] / r['peer_cold']:,.1f} "
          "(target ≥ 50)")
    print(f"  units/s warm: peer {r['peer_warm']:,.0f}, dptext {r['ours_warm']:,.0f} -> "
          f"x{r['ours_warm'] / r['peer_warm']:,.1f} (target ≥ 20); the peer's per-token function in-process "
          f"(no pool) {r['peer_core_warm']:,.0f} -> x{r['ours_warm'] / r['peer_core_warm']:,.1f}")
    print(f"  peak RSS MB: peer {r['peer_rss_mb']:.0f}, dptext {r['ours_rss_mb']:.0f} (target ≤ 800)")
    print(f"  retention: peer {r['retention_peer']:.3f}, dptext {r['retention_ours']:.3f}")
    print(f"  KNN-5 attack success: peer {r['knn_peer']:.3f}, dptext {r['knn_ours']:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--method", choices=["geometric", "tem"], default="geometric")
    ap.add_argument("--gamma", type=int, default=5)
    ap.add_argument("--peer-seconds", type=float, default=60.0)
    args = ap.parse_args()
    from dptext.spaces import get_space

    space = get_space("glove-50d")
    texts = real_text(space, args.units)
    print(f"text: {len(texts)} units of tweets; ε = {args.epsilon}; method {args.method}; "
          "peer dp-diffractor 0.2.1 (one GloVe-50d list)")
    for r in rows(space, texts, args):
        print_row(r)


if __name__ == "__main__":
    main()
