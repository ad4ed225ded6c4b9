"""Corpus output: atomic writers (JSONL / Parquet), the rejects file, leftovers of killed runs.

Every file is first written to a hidden temporary file in the destination
folder, created with mode 0600 (the output holds sanitized text, the rejects
file raw private text), and renamed into place when the run ends. Its name,
``.<name>.<pid>.<random><suffix>``, carries the writing process's id, so a
later run into the same folder can tell the leftovers of a process that died
without cleaning up (``kill -9``, power loss) from a run still in progress, and
removes them (:func:`remove_stale`), saying so.

The destination folder must exist: a mistyped path is an error, never a
silently created tree of folders.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from dptext.errors import DPTextError

TMP_SUFFIXES = (".tmp.jsonl", ".tmp.parquet", ".tmp.rejects")


def check_destination(path: str | os.PathLike, what: str) -> Path:
    """``path`` as a Path whose folder exists and which is not itself a folder."""
    p = Path(path)
    if p.is_dir():
        raise DPTextError(f"{what} {str(path)!r} is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise DPTextError(f"{what} folder {str(parent)!r} does not exist (create it first)")
    return p


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def remove_stale(path: str | os.PathLike) -> list[Path]:
    """Delete temporary files next to ``path`` left by dead processes writing ``path``; return them."""
    p = Path(path)
    pattern = re.compile(r"^\." + re.escape(p.name) + r"\.(\d+)\.[^.]+(" +
                         "|".join(re.escape(s) for s in TMP_SUFFIXES) + r")$")
    removed = []
    folder = p.parent if str(p.parent) else Path(".")
    for entry in folder.iterdir():
        m = pattern.match(entry.name)
        if m and int(m.group(1)) != os.getpid() and not _pid_alive(int(m.group(1))):
            try:
                entry.unlink()
            except FileNotFoundError:  # another run removed it first
                continue
            removed.append(entry)
    return removed


def _private_tmp(path: Path, suffix: str) -> tuple[int, str]:
    import tempfile

    # mkstemp creates the file with mode 0600
    return tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.{os.getpid()}.",
                            suffix=suffix)


class _AtomicFile:
    def __init__(self, path: str | os.PathLike, suffix: str, what: str = "output"):
        self.path = check_destination(path, what)
        fd, self.tmp = _private_tmp(self.path, suffix)
        os.close(fd)

    def _replace(self) -> None:
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


class UnwritableRecord(DPTextError):
    """A record that cannot be stored as UTF-8 (a lone surrogate in some field); it goes to the rejects."""


def _bad_field(row: dict) -> str:
    for key, value in row.items():
        try:
            json.dumps({key: value}, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return f"field {key.encode('utf-8', 'backslashreplace').decode()!r}"
    return "a field"


def finite(obj):
    """``obj`` with every NaN or infinite float replaced by None (dicts and lists copied, the rest as is)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [finite(v) for v in obj]
    return obj


class ReportJSON:
    """``json.dumps(report)`` with the report's claim (one dict shared by every record of a run, about
    1 kB of JSON) encoded once instead of once per record."""

    MARK = "\x00dptext-claim\x00"

    def __init__(self) -> None:
        self._claim, self._claim_json = None, ""

    def __call__(self, report) -> str:
        claim = report.get("claim") if isinstance(report, dict) else None
        if not isinstance(claim, dict):
            return json.dumps(report, ensure_ascii=False)
        if claim is not self._claim:
            self._claim, self._claim_json = claim, json.dumps(claim, ensure_ascii=False)
        # the claim is the report's first value that can hold the marker (the ones before it are the
        # mechanism's name, ε and space), so the first match is the claim's
        return json.dumps({**report, "claim": self.MARK}, ensure_ascii=False).replace(
            json.dumps(self.MARK), self._claim_json, 1)


class JsonlWriter(_AtomicFile):
    def __init__(self, path, report_field: str):
        super().__init__(path, ".tmp.jsonl")
        self.report_field = report_field
        self.reports = ReportJSON()
        self.f = open(self.tmp, "wb")

    def write(self, row: dict, report: dict) -> None:
        try:  # encode first: a record that cannot be encoded leaves nothing half-written
            data = (self._line(row, report) + "\n").encode("utf-8")
        except UnicodeEncodeError:
            row = {**row, self.report_field: report}
            raise UnwritableRecord(f"{_bad_field(row)} is not valid Unicode (a lone surrogate); "
                                   "a UTF-8 file cannot hold it") from None
        self.f.write(data)

    def _line(self, row: dict, report: dict) -> str:
        """``json.dumps({**row, report_field: report})``, with the report from :class:`ReportJSON`.

        Strict JSON: ``NaN`` and ``±Infinity`` (which Python's json reads from an input line) are written
        as ``null``, since strict parsers refuse them."""
        if not row or self.report_field in row:
            return json.dumps(finite({**row, self.report_field: report}), ensure_ascii=False, allow_nan=False)
        try:
            head = json.dumps(row, ensure_ascii=False, allow_nan=False)[:-1]
        except ValueError:  # a non-finite float somewhere in the row
            head = json.dumps(finite(row), ensure_ascii=False, allow_nan=False)[:-1]
        return f"{head}, {json.dumps(self.report_field)}: {self.reports(report)}}}"

    def commit(self) -> None:
        self.f.close()
        self._replace()

    def abort(self) -> None:
        self.f.close()
        super().abort()


class ParquetWriter(_AtomicFile):
    FLUSH = 4096

    def __init__(self, path, schema, report_field: str):
        import pyarrow as pa
        import pyarrow.parquet as pq

        super().__init__(path, ".tmp.parquet")
        self.report_field = report_field
        self.schema = schema.append(pa.field(report_field, pa.string()))
        self.writer = pq.ParquetWriter(self.tmp, self.schema)
        self.reports = ReportJSON()
        self.rows: list[dict] = []

    def write(self, row: dict, report: dict) -> None:
        row = dict(row)
        row[self.report_field] = self.reports(report)
        self.rows.append(row)
        if len(self.rows) >= self.FLUSH:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def commit(self) -> None:
        self._flush()
        self.writer.close()
        self._replace()

    def abort(self) -> None:
        self.writer.close()
        super().abort()


def open_writer(path, reader):
    """A writer for ``path`` in the reader's format (the output format must match the input's)."""
    from dptext.batch.corpus import corpus_format

    fmt = corpus_format(path)
    if fmt != reader.format:
        raise DPTextError(f"output {str(path)!r} is {fmt} but the input is {reader.format}; keep the same format")
    if Path(path).resolve() == reader.path.resolve():
        raise DPTextError("output must differ from the input (the input is read while the output is written)")
    if fmt == "parquet":
        return ParquetWriter(path, reader.schema, reader.report_field)
    return JsonlWriter(path, reader.report_field)


class RejectsFile:
    """JSONL of malformed records: ``{"line", "index", "error", "raw"}`` (raw stays on this machine).

    Mode 0600, and created only when the first reject arrives: a clean run leaves no file. Lines
    are ASCII JSON (``\\uXXXX`` escapes), so even a record holding a lone surrogate is kept.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = check_destination(path, "rejects file")
        self.f = None
        self.tmp: str | None = None
        self.count = 0

    def add(self, line: int, index: int, error: str, raw: str) -> None:
        if self.f is None:
            fd, self.tmp = _private_tmp(self.path, ".tmp.rejects")
            self.f = os.fdopen(fd, "w", encoding="ascii")
        self.f.write(json.dumps({"line": line, "index": index, "error": error, "raw": raw}) + "\n")
        self.count += 1

    def close(self) -> None:
        """Move the rejects into place (also after a failed run: they say what was refused)."""
        if self.f is not None:
            self.f.close()
            self.f = None
            os.replace(self.tmp, self.path)
