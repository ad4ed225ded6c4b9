"""The word-level metric-DP mechanisms' path (import, build, perturb) in a fresh process loads none of the
heavy libraries other parts of dptext use: their import would dominate a cold start (0.5-3 s each). The
one-time build of a cached table may use them; the fresh processes after it may not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "transformers", "tokenizers", "huggingface_hub", "sentence_transformers", "spacy", "scipy",
         "sklearn", "pandas", "pydantic", "gensim", "nltk", "faiss", "onnxruntime")
FAMILY = ("multivariate", "mahalanobis", "vickrey", "tem", "truncated-gumbel", "syntf", "diffractor")
CHILD = """
import json, sys
heavy, seen = json.loads(sys.argv[1]), {}
start = set(sys.modules)
from dptext.mechanisms import get_mechanism
seen["import"] = sorted({m.split(".")[0] for m in set(sys.modules) - start} & set(heavy))
for name in json.loads(sys.argv[2]):
    before = set(sys.modules)
    get_mechanism(name, epsilon=10.0, seed=0).perturb("the good doctor is at the house")
    seen[name] = sorted({m.split(".")[0] for m in set(sys.modules) - before} & set(heavy))
print(json.dumps(seen))
"""


def run_family() -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(HEAVY), json.dumps(FAMILY)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_the_family_loads_no_heavy_library():
    # A first start on a cold cache builds the tables once (1-Diffractor embeds its word lists with MiniLM
    # and faiss, for example); the claim is about every start after that one.
    run_family()
    seen = run_family()
    loaded = {name: mods for name, mods in seen.items() if mods}
    assert set(seen) == {*FAMILY, "import"} and not loaded, f"heavy modules loaded: {loaded}"


def test_only_the_nearest_unit_search_starts_a_thread_pool():
    # concurrent.futures (with logging and queue) costs a cold start 5-20 ms; the exact k-nearest search of
    # MultivariateCalibrated, Mahalanobis and Vickrey is its only user, so it is imported when that runs
    child = ("import sys\nfrom dptext.mechanisms import get_mechanism\n"
             "get_mechanism('truncated-gumbel', epsilon=10.0, seed=0).perturb('the good doctor')\n"
             "before = 'concurrent.futures' in sys.modules\n"
             "get_mechanism('multivariate', epsilon=10.0, seed=0).perturb('the good doctor is at the house')\n"
             "print(before, 'concurrent.futures' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    res = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["False", "True"]
