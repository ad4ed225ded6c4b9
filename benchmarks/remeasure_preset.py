"""Re-measure one preset's downstream accuracy with more perturbation draws, for the code at one or more revisions.

    python benchmarks/remeasure_preset.py [--preset balanced] [--draws 10] [--revs bc6ca56,worktree]

The measurement is the choosing sweep's (benchmarks/make_choosing.py): the ``classifier`` tasks of
sweeps/presets.yaml at its seed, MiniLM + linear head trained and tested on perturbed text, each text perturbed
``--draws`` times and each item's correctness averaged over the draws (_choosing_tasks.perturbed_accuracy). The
sweep uses ``preset_draws`` (3): with 196 topic posts, three draws leave the mechanism's share of the noise large
enough that a change of detection elsewhere in a text moves the topic drop by 2 points; ten draws shrink it.

Each revision's ``src`` (``worktree``: this checkout's) runs in its own process with this checkout's measurement
code, so the numbers differ only by the library. Prints one row per revision and task: clean and perturbed
accuracy, the drop with its paired standard error, and the share of content words the preset's detectors mark.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def worker(preset: str, draws: int, sweep: Path) -> dict:
    import yaml

    sys.path.insert(0, str(HERE))
    from _choosing_cells import accuracy_cell
    from _choosing_tasks import clean_accuracy, load_tasks, marked_words

    from dptext.privacy.presets import get_preset

    conf = yaml.safe_load(sweep.read_text(encoding="utf-8"))
    seed = int(conf.get("seed", 0))
    t0 = time.perf_counter()
    tasks = load_tasks(conf["classifier"], seed)
    clean = clean_accuracy(tasks, seed)
    p = get_preset(preset)
    pol = p.build_policy()
    marked = {t.name: marked_words(pol, t.texts)["content_marked_share"] for t in tasks} if pol else {}
    r = accuracy_cell(p.spec, pol, tasks, seed, None, draws)
    return {"clean": clean, "accuracy": r["accuracy"], "drop_se": r["accuracy_drop_se"], "marked": marked,
            "describe": p.describe(), "seconds": round(time.perf_counter() - t0, 1)}


def run_rev(rev: str, args) -> dict:
    cmd = [sys.executable, __file__, "--worker", "--preset", args.preset, "--draws", str(args.draws),
           "--sweep", str(args.sweep)]
    from _revisions import archive_src

    with tempfile.TemporaryDirectory() as tmp:
        src = REPO / "src" if rev == "worktree" else archive_src(rev, Path(tmp))
        env = dict(os.environ, PYTHONPATH=str(src))
        out = subprocess.run(cmd, check=True, env=env, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", default="balanced")
    ap.add_argument("--draws", type=int, default=10, help="perturbation draws of every text (the sweep uses 3)")
    ap.add_argument("--revs", default="worktree", help="comma-separated git revisions; 'worktree' = this checkout")
    ap.add_argument("--sweep", type=Path, default=REPO / "sweeps" / "presets.yaml")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.draws < 1:
        ap.error(f"--draws must be at least 1 (got {args.draws})")
    if args.worker:
        print(json.dumps(worker(args.preset, args.draws, args.sweep), default=float))
        return 0
    print(f"preset {args.preset}, {args.draws} draws, tasks of {args.sweep.name}; drop = clean - perturbed "
          "(paired standard error)")
    print(f"{'revision':<12} {'task':<10} {'clean':>6} {'preset':>7} {'drop, points':>15} {'marked':>7} {'s':>6}")
    for rev in [r.strip() for r in args.revs.split(",") if r.strip()]:
        res = run_rev(rev, args)
        for task, acc in res["accuracy"].items():
            c = res["clean"][task]
            print(f"{rev:<12} {task:<10} {c:>6.3f} {acc:>7.3f} {100 * (c - acc):>8.1f} ± {100 * res['drop_se'][task]:.1f} "
                  f"{res['marked'].get(task, 0.0):>7.3f} {res['seconds']:>6.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
