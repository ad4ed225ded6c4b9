"""``sanitize_corpus``: reader -> engine -> writer, with rejects and a summary.

One pass over the input: good records go to the engine as (index, text)
while the driver keeps their other fields in a queue; results come back in
input order and are merged with their rows. Malformed records (and documents
the mechanism refuses, e.g. too long) are reported on stderr with their line
number, written to the rejects file and counted; they never reach the
output, and no record is dropped without being counted. On any other error
the partial output is deleted (fail closed: no half-sanitized corpus).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque

from dptext.batch.corpus import CorpusReader, RejectsFile, Reject, open_writer
from dptext.batch.sanitize import MechanismSpec, root_entropy
from dptext.errors import DPTextError, check_epsilon

ENGINES = ("local", "ray")
SHOW_REJECTS = 20  # reject messages printed on stderr; the rest only go to the rejects file


def make_engine(name: str, spec: MechanismSpec, entropy: int, *, workers: int | None, ray_address: str | None,
                shard_size: int):
    if name == "local":
        from dptext.batch.engines import LocalEngine

        return LocalEngine(spec, entropy, workers=workers or os.cpu_count() or 1, shard_size=shard_size)
    if name == "ray":
        from dptext.batch.ray_engine import RayEngine

        if workers is None and not ray_address:
            workers = os.cpu_count() or 1
        return RayEngine(spec, entropy, workers=workers, address=ray_address, shard_size=shard_size)
    raise DPTextError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")


def validate_spec(spec: MechanismSpec) -> None:
    from dptext.mechanisms.base import DIGITS_POLICIES, OOV_POLICIES

    check_epsilon(spec.epsilon)
    spec.space_name()  # unknown mechanism -> DPTextError
    from dptext.spaces.registry import SPACES

    if spec.space_name() not in SPACES:
        raise DPTextError(f"unknown space {spec.space_name()!r}; known spaces: {', '.join(sorted(SPACES))}")
    if spec.options.get("oov", "drop") not in OOV_POLICIES:
        raise DPTextError(f"unknown OOV policy {spec.options['oov']!r}; choose one of {', '.join(OOV_POLICIES)}")
    if spec.options.get("digits", "random") not in DIGITS_POLICIES:
        raise DPTextError(f"unknown digits policy {spec.options['digits']!r}; "
                          f"choose one of {', '.join(DIGITS_POLICIES)}")


def sanitize_corpus(input_path, output_path, *, mechanism: str, epsilon: float, space: str | None = None,
                    options: dict | None = None, text_field: str = "text", report_field: str = "privacy_report",
                    engine: str = "local", workers: int | None = None, ray_address: str | None = None,
                    seed: int | None = None, rejects: str | None = None, shard_size: int = 256,
                    progress=None, log=None) -> dict:
    """Sanitize every document of a JSONL/Parquet corpus; return the run summary.

    ``progress``: a rich ``Progress`` (or None); ``log(msg)``: where reject messages go (default stderr).
    """
    log = log or (lambda msg: print(msg, file=sys.stderr))
    spec = MechanismSpec(mechanism, check_epsilon(epsilon), space, dict(options or {}))
    validate_spec(spec)
    if workers is not None and workers < 1:
        raise DPTextError(f"invalid --workers {workers}: must be >= 1")
    if shard_size < 1:
        raise DPTextError(f"invalid --shard-size {shard_size}: must be >= 1")
    entropy = root_entropy(seed)
    reader = CorpusReader(input_path, text_field, report_field)
    total = reader.count()
    eng = make_engine(engine, spec, entropy, workers=workers, ray_address=ray_address, shard_size=shard_size)
    writer = open_writer(output_path, reader)
    rej = RejectsFile(rejects or f"{output_path}.rejects.jsonl")
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
                reject(rec.line, rec.index, res.error, json.dumps(rec.row, ensure_ascii=False, default=str))
                continue
            row = dict(rec.row)
            row[text_field] = res.text
            writer.write(row, res.report)
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
        "engine": engine, "workers": getattr(eng, "workers", None), "mechanism": spec.name,
        "epsilon": spec.epsilon, "space": spec.space_name(), "seed": seed,
        "records": stats["documents"] + rej.count, "documents": stats["documents"], "rejected": rej.count,
        "blank_lines": reader.blank_lines, "rejects_file": str(rej.path), "units": stats["units"],
        "seconds": round(t_end - t0, 3), "startup_seconds": round(t_ready - t0, 3),
        "units_per_s": round(stats["units"] / work, 1),
        "documents_per_s": round(stats["documents"] / work, 1),
    }
