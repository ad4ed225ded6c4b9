"""Cold and warm perturbation speed, peak RSS and cache size per space.

Usage: python benchmarks/bench_cold.py [--units 10000] [--before PATH_TO_OLD_SRC] [--repeat 3]

Each "cold" figure is a fresh Python process: after the interpreter has
started and ``dptext.mechanisms`` is imported (``import s``, printed apart),
it builds the mechanism, loading its space and memory-mapping its tables
(``load``), and perturbs a 10,000-unit document cut from the Lee news corpus
once (``first``). ``cold u/s`` counts the first perturbation only; ``incl. load``
counts the mechanism's construction too. ``warm u/s`` is the median of 5
further perturbations in the same process. ``RSS`` is the process's peak
resident set. Spaces and their caches must exist already (run once to build).
Wall-clock figures depend on the machine's load (printed first); the
per-CPU-second figures (``time.process_time``) are less sensitive to it.
``--before`` runs the same measurement against another source tree (e.g. a
``git worktree`` of the previous version) in the same run, for a side-by-side
table. Figures are medians over ``--repeat`` fresh processes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CONFIGS = [("rantext", "cl100k-11k"), ("santext+", "glove-50d"), ("custext+", "glove-50d")]

CHILD = r"""
import json, resource, statistics, sys, time
t_imp = time.perf_counter()
from dptext.mechanisms import get_mechanism
import_s = time.perf_counter() - t_imp
name, space, path = sys.argv[1], sys.argv[2], sys.argv[3]
doc = open(path, encoding="utf-8").read()
t0, c0 = time.perf_counter(), time.process_time()
m = get_mechanism(name, epsilon=3.0, space=space, seed=0)  # loads the space (memory-mapped tables) too
t1, c1 = time.perf_counter(), time.process_time()
res = m.perturb(doc)
t2, c2 = time.perf_counter(), time.process_time()
n = len(res.units)
warm, warm_cpu = [], []
for _ in range(5):
    a, b = time.perf_counter(), time.process_time()
    m.perturb(doc)
    warm.append(n / (time.perf_counter() - a))
    warm_cpu.append(n / max(time.process_time() - b, 1e-9))
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"units": n, "import_s": import_s, "load_s": t1 - t0, "first_s": t2 - t1,
                  "warm": statistics.median(warm), "rss": rss, "first_cpu": c2 - c1, "load_cpu": c1 - c0,
                  "warm_cpu": statistics.median(warm_cpu)}))
"""


def document(space: str, n_units: int) -> str:
    """``n_units`` units of the Lee news corpus as segmented by ``space`` (cycled), as text."""
    import gensim

    from dptext.spaces import get_space

    sp = get_space(space)
    text = (Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor").read_text(
        "utf-8", errors="replace")
    pieces = sp.segment(text).pieces
    while len(pieces) < n_units:
        pieces = pieces + pieces
    return "".join(p.ws + p.text for p in pieces[:n_units])


def run(src: str, name: str, space: str, n_units: int) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    path = Path(tempfile.gettempdir()) / f"dptext-bench-cold-{space}-{n_units}.txt"
    if not path.exists():
        path.write_text(document(space, n_units), encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", CHILD, name, space, str(path)], env=env, capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise SystemExit(f"{name} on {src} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(src: str, name: str, space: str, n_units: int, repeat: int) -> dict:
    runs = [run(src, name, space, n_units) for _ in range(repeat)]
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "units"}
    n = runs[0]["units"]
    return {"import_s": med["import_s"], "cold": n / med["first_s"], "incl_load": n / (med["first_s"] + med["load_s"]), "load_s": med["load_s"],
            "warm": med["warm"], "rss": med["rss"], "cold_cpu": n / max(med["first_cpu"], 1e-9),
            "incl_load_cpu": n / max(med["first_cpu"] + med["load_cpu"], 1e-9), "warm_cpu": med["warm_cpu"]}


def cache_sizes() -> dict:
    """Bytes on disk per space, live entries only: the space's arrays and its neighbour table (entries
    left by other versions or settings under other keys are not counted)."""
    from dptext.spaces import get_space
    from dptext.spaces.neighbours import table_paths

    sizes: dict = {}
    for name in ("cl100k-11k", "glove-50d", "smollm2", "minilm-wordpiece"):
        space = get_space(name)
        if not space.is_cached():
            continue
        files = list(space.cache_path.iterdir()) + table_paths(space)
        sizes[name] = sum(f.stat().st_size for f in files)
    return sizes


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--units", type=int, default=10_000)
    ap.add_argument("--before", default=None, help="source tree of the version to compare with")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default=None, help="comma-separated mechanisms to run (default: all)")
    a = ap.parse_args()
    here = str(Path(__file__).resolve().parents[1] / "src")
    trees = [("after", here)] + ([("before", a.before)] if a.before else [])
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average, 2 cores shared)")
    hdr = f"{'mechanism':9s} {'space':11s} {'tree':6s} {'import s':>8s} {'load s':>7s} {'cold u/s':>10s} {'incl. load':>10s} " \
          f"{'warm u/s':>10s} {'RSS MiB':>8s} | per CPU-second: {'cold':>8s} {'incl.load':>9s} {'warm':>8s}"
    print(hdr)
    for name, space in CONFIGS:
        if a.only and name not in a.only.split(","):
            continue
        for label, src in trees:
            r = measure(src, name, space, a.units, a.repeat)
            print(f"{name:9s} {space:11s} {label:6s} {r['import_s']:8.3f} {r['load_s']:7.3f} {r['cold']:10.0f} {r['incl_load']:10.0f} "
                  f"{r['warm']:10.0f} {r['rss']:8.0f} |                 {r['cold_cpu']:8.0f} "
                  f"{r['incl_load_cpu']:9.0f} {r['warm_cpu']:8.0f}", flush=True)
    for space, size in sorted(cache_sizes().items()):
        print(f"cache {space}: {size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
