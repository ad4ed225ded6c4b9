"""Mutation testing of the privacy core: does the suite catch the bugs a real change could make?

Each mutant is (file under src/, exact old text, new text, the tests to run, what the bug is). For each,
the script copies ``src/`` to a temporary directory, applies the one edit, runs the mapped tests there
(``PYTHONPATH`` pointing at the copy, so the copy shadows the installed package) with a time limit, and
prints ``killed`` (a mapped test failed), ``SURVIVED`` (all passed), ``timeout`` (counted as killed: the
tests did not pass) or ``STALE`` (the old text is no longer in the file exactly once: update the entry).

    python benchmarks/mutants.py                 # all mutants
    python benchmarks/mutants.py --list          # the list, and a check that every old text applies
    python benchmarks/mutants.py -k cape -k memo # mutants whose name contains any of these
    python benchmarks/mutants.py --timeout 300

Kill rate = killed / (killed + survived), timeouts counted as killed, stale entries excluded and listed.
Add a mutant with every fix of a privacy bug (the mutant re-introduces the bug). Run it on an idle machine:
it runs one pytest after another; each is a few seconds to a minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
T = "tests/"


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # relative to src/dptext
    old: str
    new: str
    tests: tuple[str, ...]  # pytest arguments: files, then at most one -k (pytest keeps only the last)
    fresh: tuple[str, ...] = ()  # cache kinds the mutant's builder writes: an empty one per run, never shared


def m(name, file, old, new, *tests, fresh=()) -> Mutant:
    assert list(tests).count("-k") <= 1, name
    return Mutant(name, file, old, new, tuple(tests), tuple(fresh))


MUTANTS = [
    # ----- mechanism samplers and constants ---------------------------------------------------------------
    m("santext: exponent without the 1/2", "mechanisms/santext.py",
      "-0.5 * self.epsilon * d, 0.0)", "-1.0 * self.epsilon * d, 0.0)",
      T + "test_mechanisms.py", "-k", "santext_row_equals_closed_form"),
    m("santext: sign of the exponent", "mechanisms/santext.py",
      "-0.5 * self.epsilon * d, 0.0)", "0.5 * self.epsilon * d, 0.0)",
      T + "test_mechanisms.py", "-k", "santext_row_equals_closed_form or large_epsilon_concentrates"),
    m("santext+: keep probability 1-p read as p", "mechanisms/santext.py",
      "rows[np.flatnonzero(keep), ids[keep]] += 1.0 - self.p", "rows[np.flatnonzero(keep), ids[keep]] += self.p",
      T + "test_mechanisms.py", "-k", "santext_plus"),
    m("santext: metric claim scaled by d_max dropped", "mechanisms/santext.py",
      "bound=self.epsilon * d_max, scope=scope,", "bound=self.epsilon, scope=scope,",
      T + "test_audit.py", "-k", "real_mechanisms_pass and santext"),
    m("custext: logit without the 1/2", "mechanisms/custext.py",
      "logit = 0.5 * self.epsilon * s_hat", "logit = self.epsilon * s_hat",
      T + "test_mechanisms.py", "-k", "custext_probabilities_closed_form"),
    m("custext: sampler reads the CDF one step late", "mechanisms/custext.py",
      "j = (cdf < u[:, None]).sum(axis=1)", "j = (cdf <= u[:, None]).sum(axis=1) + 1",
      T + "test_mechanisms.py", "-k", "rows_sum_to_one_and_sampler_matches"),
    m("custext: conservative lists seeded least frequent first", "mechanisms/custext.py",
      "members[np.lexsort((members, -freq[members]))]", "members[np.lexsort((members, freq[members]))]",
      T + "test_mechanisms.py", T + "test_cache_version.py", "-k", "custext_lists", fresh=("custext",)),
    m("custext: conservative clusters one unit short", "mechanisms/custext.py",
      "        kk = min(k, len(pool))", "        kk = min(k - 1, len(pool))",
      T + "test_mechanisms.py", "-k", "custext_lists_conservative", fresh=("custext",)),
    m("rantext: c = eps/dstar instead of eps/(2 dstar)", "mechanisms/rantext.py",
      "            c = self.epsilon / (2.0 * dstar)", "            c = self.epsilon / dstar",
      T + "test_mechanisms.py", "-k", "rows_sum_to_one_and_sampler_matches"),
    m("rantext: list radius 1.5 d*", "mechanisms/rantext.py",
      "return sample_ball(self.space, tab, idx, c, rng, radius=dstar,",
      "return sample_ball(self.space, tab, idx, c, rng, radius=1.5 * dstar,",
      T + "test_mechanisms.py", "-k", "rows_sum_to_one_and_sampler_matches or rantext"),
    m("calibration: list-size ratio 5 % read as 50 %", "mechanisms/calibration.py",
      "RATIO = 0.05", "RATIO = 0.5",
      T + "test_calibration.py", "-k", "calibrated_noise_hits_targets"),
    m("calibration: cached curve ignores its targets", "mechanisms/calibration.py",
      "TARGETS = ((2.0, 0.015), (6.0, 0.09), (10.0, 0.10), (14.0, 0.105))",
      "TARGETS = ((2.0, 0.015), (6.0, 0.09), (10.0, 0.10), (14.0, 0.2))",
      T + "test_calibration.py", "-k", "calibrated_noise_hits_targets or cached_and_reported"),
    m("mdp noise: gamma scale eta instead of 1/eta", "mechanisms/noise.py",
      "r = rng.gamma(shape=dim, scale=1.0 / self.eta, size=n)", "r = rng.gamma(shape=dim, scale=self.eta, size=n)",
      T + "test_mutant_survivors.py", T + "test_ann.py", "-k", "noise"),
    m("mdp noise: pruning test without the radius", "mechanisms/noise.py",
      "ok = d[rows, j] <= nb_d[near, -1] - radius[near] - slack[near]", "ok = d[rows, j] <= nb_d[near, -1]",
      T + "test_mutant_survivors.py", T + "test_ann.py", "-k", "table_shortcut or exact_option"),
    m("rows: envelope weights exp(-c d / 2)", "mechanisms/_rows.py",
      "        e = np.where(diff > 0, -c * diff, 0.0)", "        e = np.where(diff > 0, -0.5 * c * diff, 0.0)",
      T + "test_mechanisms.py", "-k", "rows_sum_to_one_and_sampler_matches or table_sampler"),
    # ----- Cape ----------------------------------------------------------------------------------------
    m("cape: logits not clipped to +-B", "mechanisms/cape.py",
      "u = np.clip(logits, -B, B)", "u = logits.copy()",
      T + "test_mutant_survivors.py", "-k", "cape"),
    m("cape: sampler ignores n_buckets", "mechanisms/cape.py",
      "b, counts, probs = bucket_law(u, self.epsilon, self.sensitivity, self.n_buckets)\n            unit_eps[w]",
      "b, counts, probs = bucket_law(u, self.epsilon, self.sensitivity, 50)\n            unit_eps[w]",
      T + "test_mutant_survivors.py", "-k", "cape"),
    m("cape: bucket score without the 1/2", "mechanisms/cape.py",
      "score = np.where(counts > 0, epsilon * mean / (2.0 * sensitivity), -np.inf)",
      "score = np.where(counts > 0, epsilon * mean / sensitivity, -np.inf)",
      T + "test_cape.py", "-k", "closed_form"),
    m("cape: empty buckets kept", "mechanisms/cape.py",
      "score = np.where(counts > 0, epsilon * mean / (2.0 * sensitivity), -np.inf)",
      "score = epsilon * mean / (2.0 * sensitivity)",
      T + "test_cape.py", "-k", "closed_form"),
    m("cape bound: per-unit bound drops its second term", "mechanisms/cape_bounds.py",
      "return np.maximum(hi + fl, up - lo)", "return hi + fl",
      T + "test_mutant_survivors.py", "-k", "unit_bound"),
    m("cape bound: per-unit bound drops its first term", "mechanisms/cape_bounds.py",
      "return np.maximum(hi + fl, up - lo)", "return up - lo",
      T + "test_mutant_survivors.py", "-k", "unit_bound"),
    m("cape bound: total bound without the upper side", "mechanisms/cape_bounds.py",
      "return cape_upper_log(epsilon, n_buckets, vocab_size) + cape_floor_log(epsilon, n_buckets, vocab_size)",
      "return cape_floor_log(epsilon, n_buckets, vocab_size)",
      T + "test_cape.py", "-k", "bound or extreme"),
    m("cape thm41: min over empty buckets", "mechanisms/cape_bounds.py",
      "small = np.where(counts > 0, counts, np.iinfo(np.int64).max).min(axis=1)",
      "small = np.maximum(counts, 1).min(axis=1)",
      T + "test_mutant_survivors.py", T + "test_cape.py", "-k", "thm41 or reports_proven_unit_bounds"),
    # ----- DP-Prompt --------------------------------------------------------------------------------------
    m("dp-prompt: unclipped logits in the draws", "mechanisms/dp_prompt.py",
      "p = token_probabilities(logits, self.clip_min, self.clip_max, self.temperature, self.logits)",
      "p = token_probabilities(logits, -np.inf, np.inf, self.temperature, self.logits)",
      T + "test_mutant_survivors.py", "-k", "dp_prompt"),
    m("dp-prompt: temperature without max_tokens", "mechanisms/dp_prompt.py",
      "temps[k] = 2.0 * self.sensitivity * self.max_tokens / x", "temps[k] = 2.0 * self.sensitivity / x",
      T + "test_dp_prompt.py", "-k", "parameters_and_claim or reports_the_document_bound"),
    m("dp-prompt: clip applied after the temperature", "mechanisms/dp_prompt.py",
      "z = np.clip(z, clip_min, clip_max) / temperature", "z = np.clip(z / temperature, clip_min, clip_max)",
      T + "test_dp_prompt.py", "-k", "closed_form"),
    # ----- the audit -----------------------------------------------------------------------------------
    m("audit: claim compared without the tolerance sign", "privacy/audit_result.py",
      "ok = self.audited <= self.claimed + self.tolerance", "ok = self.audited <= self.claimed * 2 + self.tolerance",
      T + "test_audit.py", "-k", "true_epsilon_above_claim_fails or metric_claim_smaller"),
    m("audit: unrestricted side not judged", "privacy/audit_result.py",
      "            ok = ok and self.unrestricted <= self.unrestricted_bound + self.tolerance\n", "            pass\n",
      T + "test_mutant_survivors.py", T + "test_audit.py", "-k", "unrestricted or random_list_claim_smaller"),
    m("audit: passes without the goodness of fit", "privacy/audit_result.py",
      "return self.claim_holds and self.gof_passed and self.fidelity_passed",
      "return self.claim_holds and self.fidelity_passed",
      T + "test_audit.py", "-k", "disagreeing_with_transition_fails or wrong_sampler"),
    # ----- memo keying, the accountant -----------------------------------------------------------------
    m("memo: key ignores the settings", "privacy/memo.py",
      'msg = "[" + _canonical(scope) + "," + cached[1] + "," + _canonical(text) + "]"',
      'msg = "[" + _canonical(scope) + "," + _canonical(text) + "]"',
      T + "test_mutant_survivors.py", T + "test_server_repeats.py", "-k", "memo or repeat or resend or voting"),
    m("memo: key ignores the scope", "privacy/memo.py",
      'msg = "[" + _canonical(scope) + "," + cached[1] + "," + _canonical(text) + "]"',
      'msg = "[" + cached[1] + "," + _canonical(text) + "]"',
      T + "test_server_repeats.py"),
    m("memo: entries never expire", "privacy/memo.py",
      "if row is None or row[1] < self.clock() - self.max_age_s:", "if row is None:",
      T + "test_server_repeats.py", "-k", "memo_bounds"),
    m("accountant: budget check off by the request's cost", "privacy/accounting.py",
      "if budget is not None and epsilon > 0 and spent + epsilon > budget + 1e-9:",
      "if budget is not None and epsilon > 0 and spent > budget + 1e-9:",
      T + "test_server_repeats.py", T + "test_proxy_accounting.py", "-k", "accountant or budget or window"),
    m("accountant: total not accumulated", "privacy/accounting.py",
      "total = self.totals.get(key, 0.0) + epsilon", "total = epsilon",
      T + "test_server_repeats.py", "-k", "accountant or accounting or restart"),
    m("proxy: epsilon_spent of the last batch", "server/privacy.py",
      "rep[\"epsilon_spent\"] = max(spent) if spent else None", "rep[\"epsilon_spent\"] = spent[-1] if spent else None",
      T + "test_mutant_survivors.py", "-k", "proxy_epsilon_spent"),
    m("core: epsilon_spent of the last span", "pipeline.py",
      "spent = max(spent, float(mech.epsilon))", "spent = float(mech.epsilon)",
      T + "test_mutant_survivors.py", "-k", "core_epsilon_spent"),
    # ----- roles, tags, the fail-closed path --------------------------------------------------------------
    m("tags: text around tags in a private role goes public", "server/request.py",
      "outside = default_private and not narrow", "outside = False",
      T + "test_server_bypass.py", T + "test_server_unit.py", "-k", "tags or split_private or private_part"),
    m("tags: tagged spans not private", "server/request.py",
      "pieces.append(Segment(text[pos:m.start()], inside or outside))",
      "pieces.append(Segment(text[pos:m.start()], outside))",
      T + "test_server_bypass.py", T + "test_server_unit.py", "-k", "tags or split_private or private_part"),
    m("roles: tool messages not private by default", "server/request.py",
      "priv = set(p.private_roles) | {\"tool\"}", "priv = set(p.private_roles)",
      T + "test_server_bypass.py", T + "test_server_unit.py", "-k", "tool or roles or private_part"),
    m("fail closed: a mechanism error passes the text through", "pipeline.py",
      "        with _fail_closed(), self._lock:\n"
      "            return self._sanitize(list(segments), rng, scope, memo if memo is not None else self.memo)\n",
      "        try:\n            with self._lock:\n"
      "                return self._sanitize(list(segments), rng, scope, memo if memo is not None else self.memo)\n"
      "        except Exception:\n            return Sanitized([s.text for s in segments], [], {})\n",
      T + "test_pipeline.py", T + "test_policy.py", "-k", "fail_closed or fails_closed"),
    m("fail closed: policy spans that leave a gap accepted", "pipeline.py",
      "            if sp.start != pos or sp.end < sp.start:", "            if sp.end < sp.start:",
      T + "test_mutant_survivors.py", T + "test_policy_sanitizer.py", "-k", "fail_closed or fails_closed or tile"),
    # ----- policies and detectors ------------------------------------------------------------------------
    m("policy: ID not a default type", "privacy/policy.py",
      "\"EMAIL\", \"URL\", \"PHONE\", \"CARD\", \"IBAN\", \"ID\", \"IP\",",
      "\"EMAIL\", \"URL\", \"PHONE\", \"CARD\", \"IBAN\", \"IP\",",
      T + "test_mutant_survivors.py", "-k", "default_type"),
    m("policy: tiered leaves the gaps in clear", "privacy/policy.py",
      "    def _gap(self, start: int, end: int) -> Span:\n        return Span(start, end, True)",
      "    def _gap(self, start: int, end: int) -> Span:\n        return Span(start, end, False)",
      T + "test_policy.py", "-k", "tiered"),
    m("policy: tiered allows entity_epsilon above the mechanism's", "privacy/policy.py",
      "if not self.entity_epsilon < float(epsilon):", "if self.entity_epsilon > 2 * float(epsilon):",
      T + "test_policy.py", "-k", "tiered"),
    m("policy: overlapping detections of different labels merged into one (an email inside a date loses EMAIL)",
      "privacy/policy.py",
      "        if cur is not None and c == cur[1] and lab == cur[2]:", "        if cur is not None and c == cur[1]:",
      T + "test_detect.py", "-k", "email"),
    m("recognizers: Luhn doubling on the wrong digits", "privacy/recognizers.py",
      "        if i % 2:\n            d = d * 2 - 9", "        if not i % 2:\n            d = d * 2 - 9",
      T + "test_policy.py", "-k", "checksums"),
    # ----- batch writers ----------------------------------------------------------------------------------
    m("parquet writer: rows kept after a flush", "batch/output.py",
      "            self.rows = []\n", "",
      T + "test_mutant_survivors.py", T + "test_batch.py", "-k", "parquet"),
    m("parquet writer: last partial batch not flushed", "batch/output.py",
      "    def commit(self) -> None:\n        self._flush()\n", "    def commit(self) -> None:\n",
      T + "test_batch.py", "-k", "parquet"),
    m("jsonl writer: report field replaced by the row's", "batch/output.py",
      "        if not row or self.report_field in row:", "        if not row:",
      T + "test_batch.py", "-k", "jsonl_lines_are_exactly or rows_fields_order"),
    # ----- the cache ------------------------------------------------------------------------------------------
    m("cache: entry path without the builder version", "cache.py",
      "f\"{name}-v{version}-{key}{suffix}\"", "f\"{name}-{key}{suffix}\"",
      T + "test_cache_version.py"),
]


# Where a mutant's mapped tests are all excluded (--exclude, e.g. to measure the suite before a test file
# existed), its source file's whole test files run instead.
FALLBACK = {
    "mechanisms/cape": ["test_cape.py"], "mechanisms/dp_prompt": ["test_dp_prompt.py"],
    "mechanisms/custext": ["test_mechanisms.py", "test_audit.py"], "privacy/policy": ["test_policy.py",
    "test_policy_sanitizer.py"], "pipeline": ["test_pipeline.py", "test_policy_sanitizer.py"],
    "server/privacy": ["test_server_unit.py", "test_server_repeats.py"], "batch/output": ["test_batch.py"],
    "cache": ["test_spaces.py"],
}


def excluding(mutant: Mutant, excluded: set[str]) -> Mutant:
    kept = tuple(t for t in mutant.tests if t not in excluded)
    if not excluded or any(t.startswith(T) for t in kept):
        return Mutant(mutant.name, mutant.file, mutant.old, mutant.new, kept, mutant.fresh)
    stem = mutant.file[:-3]
    files = next((v for k, v in FALLBACK.items() if stem.startswith(k)), [])
    return Mutant(mutant.name, mutant.file, mutant.old, mutant.new, tuple(T + f for f in files), mutant.fresh)


def check(mutant: Mutant) -> str | None:
    """None when the old text occurs exactly once in the file, else why not."""
    path = ROOT / "src" / "dptext" / mutant.file
    if not path.exists():
        return f"no file {mutant.file}"
    n = path.read_text(encoding="utf-8").count(mutant.old)
    return None if n == 1 else f"old text found {n} times in {mutant.file}"


def overlay_cache(path: Path, fresh: tuple[str, ...]) -> str:
    """The shared cache with the kinds in ``fresh`` replaced by empty folders (a mutant's builder must not
    leave wrong entries behind where the unmutated code would find them under the same key)."""
    shared = Path(os.environ.get("DPTEXT_CACHE_DIR") or ROOT / ".dptext-cache")
    if not fresh:
        return str(shared)
    path.mkdir()
    if shared.is_dir():
        for entry in shared.iterdir():
            if entry.name not in fresh:
                (path / entry.name).symlink_to(entry)
    return str(path)


def run(mutant: Mutant, timeout: float, python: str) -> tuple[str, float, str]:
    with tempfile.TemporaryDirectory(prefix="dptext-mutant-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        path = src / "dptext" / mutant.file
        text = path.read_text(encoding="utf-8").replace(mutant.old, mutant.new, 1)
        try:  # a mutant that does not compile is a broken entry, not a kill
            compile(text, str(path), "exec")
        except SyntaxError as exc:
            return "BROKEN", 0.0, f"does not compile: {exc.msg} (line {exc.lineno})"
        path.write_text(text, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1",
               "DPTEXT_CACHE_DIR": overlay_cache(Path(tmp) / "cache", mutant.fresh)}
        cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *mutant.tests]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "timeout", time.perf_counter() - t0, ""
        dt = time.perf_counter() - t0
        lines = proc.stdout.strip().splitlines()
        if proc.returncode == 0:
            return "SURVIVED", dt, ""
        if proc.returncode in (4, 5):  # usage error / no tests collected: the mapping is wrong, not a kill
            return "NO-TESTS", dt, (lines[-1:] or [""])[0][:100]
        by = next((ln.split(" - ")[0] for ln in lines if ln.startswith(("FAILED ", "ERROR "))), "")
        return "killed", dt, by


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", action="append", default=[], help="run mutants whose name contains this (repeatable)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per mutant's tests (default 240)")
    ap.add_argument("--list", action="store_true", help="list the mutants and check that each applies")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--exclude", action="append", default=[], metavar="TEST_FILE",
                    help="drop this test file from every mapping (e.g. tests/test_mutant_survivors.py, to measure "
                         "the suite without it); a mutant left without tests runs its area's files (FALLBACK)")
    args = ap.parse_args(argv)
    chosen = [excluding(mu, set(args.exclude)) for mu in MUTANTS if not args.k or any(k in mu.name for k in args.k)]
    if args.list:
        bad = 0
        for mu in chosen:
            why = check(mu)
            bad += why is not None
            print(f"{'ok   ' if why is None else 'STALE'} {mu.name}  [{mu.file}]" + (f": {why}" if why else ""))
        print(f"{len(chosen)} mutants, {bad} stale")
        return 1 if bad else 0
    t_all = time.perf_counter()
    results = []
    for i, mu in enumerate(chosen, 1):
        why = check(mu)
        if why is not None:
            status, dt, by = "STALE", 0.0, why
        else:
            status, dt, by = run(mu, args.timeout, args.python)
        results.append((mu, status))
        print(f"[{i:2d}/{len(chosen)}] {status:9s} {dt:6.1f}s  {mu.name}" + (f"  ({by})" if by else ""), flush=True)
    killed = sum(s in ("killed", "timeout") for _, s in results)
    survived = [mu.name for mu, s in results if s == "SURVIVED"]
    other = [f"{mu.name}: {s}" for mu, s in results if s not in ("killed", "timeout", "SURVIVED")]
    judged = killed + len(survived)
    rate = killed / judged if judged else float("nan")
    print(f"\nkilled {killed}/{judged} = {100 * rate:.1f}%  ({time.perf_counter() - t_all:.0f} s)")
    for name in survived:
        print(f"  survived: {name}")
    for line in other:
        print(f"  not judged: {line}")
    return 0 if not survived and not other else 1


if __name__ == "__main__":
    sys.exit(main())
