"""``sanitize_corpus``: reader -> engine -> writer, with rejects and a summary.

One pass over the input: good records go to the engine as (index, text)
while the driver keeps their other fields in a queue; results come back in
input order and are merged with their rows. Malformed records (and documents
the mechanism refuses, e.g. too long) are reported on stderr with their line
number, written to the rejects file and counted; they never reach the
output, and no record is dropped without being counted. On any other error
the partial output is deleted (fail closed: no half-sanitized corpus); the
leftovers of a run that was killed outright are removed by the next run
into the same output, which says so.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque

from dptext.batch.corpus import CorpusReader, Reject
from dptext.batch.output import RejectsFile, UnwritableRecord, check_destination, open_writer, remove_stale
from dptext.batch.sanitize import BatchJob, root_entropy
from dptext.errors import ParameterError, check_epsilon
from dptext.mechanisms.spec import MechanismSpec

ENGINES = ("local", "ray")
SHOW_REJECTS = 20  # reject messages printed on stderr; the rest only go to the rejects file


def make_engine(name: str, job: BatchJob, entropy: int, *, workers: int | None, ray_address: str | None,
                shard_size: int | None = None, verbose: bool = False):
    """Engine ``name``; ``shard_size`` None takes the engine's own default (Ray's tasks carry fixed costs,
    so it sends larger shards)."""
    kw = {} if shard_size is None else {"shard_size": shard_size}
    if name == "local":
        from dptext.batch.engines import LocalEngine

        return LocalEngine(job, entropy, workers=workers or os.cpu_count() or 1, **kw)
    if name == "ray":
        from dptext.batch.ray_engine import RayEngine

        if workers is None and not ray_address:
            workers = os.cpu_count() or 1
        return RayEngine(job, entropy, workers=workers, address=ray_address, verbose=verbose, **kw)
    raise ParameterError("engine", f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")


def make_job(mechanism: str, epsilon, space: str | None, options: dict | None, policy: dict | None) -> BatchJob:
    """The validated job: mechanism spec (unknown names and bad values are ParameterErrors) and policy settings."""
    from dptext.spaces.registry import SPACES

    opts = dict(options or {})
    common = {k: opts.pop(k) for k in ("oov", "digits", "punctuation") if k in opts}
    spec = MechanismSpec(mechanism=mechanism, epsilon=check_epsilon(epsilon), space=space, **common, options=opts)
    job = BatchJob(spec, None if policy is None else dict(policy))
    if job.space_name not in SPACES:
        raise ParameterError("space", f"unknown space {job.space_name!r}; known spaces: {', '.join(sorted(SPACES))}")
    if policy is not None:
        from dptext.privacy.policy import get_policy

        kw = dict(policy)
        get_policy(kw.pop("name"), **kw)  # unknown name / type / option: an error before any work starts
    return job


def sanitize_corpus(input_path, output_path, *, mechanism: str, epsilon: float, space: str | None = None,
                    options: dict | None = None, text_field: str = "text", report_field: str = "privacy_report",
                    engine: str = "local", workers: int | None = None, ray_address: str | None = None,
                    seed: int | None = None, rejects: str | None = None, shard_size: int | None = None,
                    policy: dict | None = None, progress=None, log=None, verbose: bool = False) -> dict:
    """Sanitize every document of a JSONL/Parquet corpus; return the run summary.

    ``options``: ``oov``, ``digits``, ``punctuation`` and mechanism-specific options; ``policy``: None
    (every unit private) or ``get_policy`` settings (``{"name": "entities", ...}``); ``progress``: a
    rich-style progress object (or None); ``log(msg)``: where reject messages go (default stderr);
    ``verbose``: let the engine print its own start-up messages.
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    job = make_job(mechanism, epsilon, space, options, policy)
    if workers is not None and workers < 1:
        raise ParameterError("workers", f"invalid workers {workers}: must be >= 1")
    if shard_size is not None and shard_size < 1:
        raise ParameterError("shard_size", f"invalid shard size {shard_size}: must be >= 1")
    entropy = root_entropy(seed)
    reader = CorpusReader(input_path, text_field, report_field)
    rejects = rejects or f"{output_path}.rejects.jsonl"
    check_destination(output_path, "output")
    check_destination(rejects, "rejects file")
    for path in (output_path, rejects):
        for stale in remove_stale(path):
            log(f"dptext: removed {stale}, the partial output of an earlier run that was killed")
    total = reader.count()
    eng = make_engine(engine, job, entropy, workers=workers, ray_address=ray_address, shard_size=shard_size,
                      verbose=verbose)
    writer = open_writer(output_path, reader)
    rej = RejectsFile(rejects)
    task = progress.add_task(f"sanitizing ({engine})", total=total) if progress is not None else None
    pending: deque = deque()
    stats = {"documents": 0, "units": 0}

    def reject(line: int, index: int, error: str, raw: str) -> None:
        rej.add(line, index, error, raw)
        if rej.count <= SHOW_REJECTS:
            where = "line" if reader.format == "jsonl" else "row"
            log(f"dptext: {where} {line}: rejected: {error}")
        if task is not None:
            progress.advance(task)

    def feed():
        for rec in reader:
            if isinstance(rec, Reject):
                reject(rec.line, rec.index, rec.error, rec.raw)
                continue
            pending.append(rec)
            yield rec.index, rec.text

    t0 = time.perf_counter()
    try:
        eng.start()
        t_ready = time.perf_counter()
        for res in eng.run(feed()):
            rec = pending.popleft()
            if rec.index != res.index:
                raise RuntimeError(f"engine returned document {res.index} where {rec.index} was expected")
            if res.error is not None:
                reject(rec.line, rec.index, res.error, json.dumps(rec.row, default=str))
                continue
            row = dict(rec.row)
            row[text_field] = res.text
            try:
                writer.write(row, res.report)
            except UnwritableRecord as exc:
                reject(rec.line, rec.index, str(exc), json.dumps(rec.row, default=str))
                continue
            stats["documents"] += 1
            stats["units"] += res.units
            if task is not None:
                progress.advance(task)
        if pending:
            raise RuntimeError(f"engine lost {len(pending)} documents")
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        rej.close()
        eng.close()
    t_end = time.perf_counter()
    if rej.count:
        more = f"{rej.count - SHOW_REJECTS} more not shown; " if rej.count > SHOW_REJECTS else ""
        log(f"dptext: {rej.count} records rejected ({more}they are in {rej.path} as raw, UNSANITIZED text: "
            "keep that file private)")
    work = max(t_end - t_ready, 1e-9)
    return {
        "input": str(input_path), "output": str(output_path), "format": reader.format,
        "engine": engine, "workers": getattr(eng, "workers", None), "mechanism": job.spec.mechanism,
        "epsilon": job.spec.epsilon, "space": job.space_name, "seed": seed,
        "policy": None if policy is None else dict(policy),
        "records": stats["documents"] + rej.count, "documents": stats["documents"], "rejected": rej.count,
        "blank_lines": reader.blank_lines, "rejects_file": str(rej.path) if rej.count else None,
        "units": stats["units"],
        "seconds": round(t_end - t0, 3), "startup_seconds": round(t_ready - t0, 3),
        "units_per_s": round(stats["units"] / work, 1),
        "documents_per_s": round(stats["documents"] / work, 1),
    }
