"""Corpus input/output: JSONL and Parquet, every field other than the text preserved.

A corpus is a sequence of records (JSONL: one JSON object per line; Parquet:
one row). The reader yields :class:`Record` for good records and
:class:`Reject` for malformed ones (bad UTF-8, bad JSON, not an object, no
text field, non-string or null text, a field that would be overwritten by
the report); blank JSONL lines are counted and skipped. ``index`` is the
0-based position among records (blank lines excluded), the key of the
per-document random stream; ``line`` is what a human looks for (JSONL line
number, or Parquet row number, 1-based).

Writers write to a temporary file next to the output and rename it on
``commit()``, so a failed run never leaves a half-written corpus behind.
Parquet output keeps the input schema and appends the report column as a
JSON string; JSONL output stores the report as a nested object.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dptext.errors import DPTextError

FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "jsonl", ".parquet": "parquet", ".pq": "parquet"}


def corpus_format(path: str | os.PathLike) -> str:
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise DPTextError(f"cannot tell the format of {str(path)!r}: use .jsonl (or .ndjson) or .parquet")
    return fmt


@dataclass
class Record:
    index: int
    line: int
    row: dict
    text: str


@dataclass
class Reject:
    index: int
    line: int
    error: str
    raw: str


class CorpusReader:
    """Iterate the records of a JSONL or Parquet corpus (see module docstring)."""

    def __init__(self, path: str | os.PathLike, text_field: str = "text", report_field: str = "privacy_report"):
        self.path = Path(path)
        if not self.path.is_file():
            raise DPTextError(f"input corpus {str(path)!r} does not exist or is not a file")
        self.format = corpus_format(self.path)
        self.text_field, self.report_field = text_field, report_field
        self.blank_lines = 0
        self.schema = None
        if self.format == "parquet":
            self._open_parquet()

    def _open_parquet(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            self._pq = pq.ParquetFile(self.path)
        except Exception as exc:  # pyarrow raises several types for a broken file
            raise DPTextError(f"cannot read Parquet file {str(self.path)!r}: {exc}") from None
        self.schema = self._pq.schema_arrow
        names = self.schema.names
        if self.text_field not in names:
            raise DPTextError(f"Parquet input has no column {self.text_field!r} (columns: {', '.join(names)})")
        if not (pa.types.is_string(self.schema.field(self.text_field).type)
                or pa.types.is_large_string(self.schema.field(self.text_field).type)):
            raise DPTextError(f"Parquet column {self.text_field!r} has type "
                              f"{self.schema.field(self.text_field).type}, not string")
        if self.report_field in names:
            raise DPTextError(f"Parquet input already has a column {self.report_field!r}; "
                              "choose another --report-field")

    def count(self) -> int | None:
        """Number of records (JSONL: non-blank lines, one fast scan), for the progress bar."""
        if self.format == "parquet":
            return self._pq.metadata.num_rows
        n = 0
        with open(self.path, "rb") as f:
            for line in f:
                n += bool(line.strip())
        return n

    def __iter__(self):
        return self._iter_parquet() if self.format == "parquet" else self._iter_jsonl()

    def _iter_jsonl(self):
        index = 0
        with open(self.path, "rb") as f:
            for lineno, raw in enumerate(f, start=1):
                if not raw.strip():
                    self.blank_lines += 1
                    continue
                if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte-order mark is not data
                    raw = raw[3:]
                yield self._parse_line(index, lineno, raw.rstrip(b"\r\n"))
                index += 1

    def _parse_line(self, index: int, lineno: int, raw: bytes):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Reject(index, lineno, f"invalid UTF-8 at byte {exc.start}", raw.decode("utf-8", "backslashreplace"))
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            return Reject(index, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})", line)
        if not isinstance(row, dict):
            return Reject(index, lineno, f"not a JSON object but a {type(row).__name__}", line)
        return self._check_row(index, lineno, row, line)

    def _check_row(self, index: int, lineno: int, row: dict, raw: str):
        if self.text_field not in row:
            return Reject(index, lineno, f"no field {self.text_field!r}", raw)
        text = row[self.text_field]
        if not isinstance(text, str):
            what = "null" if text is None else type(text).__name__
            return Reject(index, lineno, f"field {self.text_field!r} is {what}, not a string", raw)
        if self.report_field in row:
            return Reject(index, lineno, f"already has a field {self.report_field!r} (would be overwritten)", raw)
        return Record(index, lineno, row, text)

    def _iter_parquet(self):
        index = 0
        for batch in self._pq.iter_batches(batch_size=4096):
            for row in batch.to_pylist():
                rec = self._check_row(index, index + 1, row, "")
                if isinstance(rec, Reject):
                    rec.raw = json.dumps(row, ensure_ascii=False, default=str)
                yield rec
                index += 1


class _AtomicFile:
    def __init__(self, path: str | os.PathLike, suffix: str):
        self.path = Path(path)
        if self.path.is_dir():
            raise DPTextError(f"output {str(path)!r} is a directory")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, self.tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=suffix)
        os.close(fd)

    def _replace(self) -> None:
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if os.path.exists(self.tmp):
            os.unlink(self.tmp)


class JsonlWriter(_AtomicFile):
    def __init__(self, path, report_field: str):
        super().__init__(path, ".tmp.jsonl")
        self.report_field = report_field
        self.f = open(self.tmp, "w", encoding="utf-8")

    def write(self, row: dict, report: dict) -> None:
        row = dict(row)
        row[self.report_field] = report
        self.f.write(json.dumps(row, ensure_ascii=False) + "\n")

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
        self.rows: list[dict] = []

    def write(self, row: dict, report: dict) -> None:
        row = dict(row)
        row[self.report_field] = json.dumps(report, ensure_ascii=False)
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


def open_writer(path, reader: CorpusReader):
    """A writer for ``path`` in the reader's format (the output format must match the input's)."""
    fmt = corpus_format(path)
    if fmt != reader.format:
        raise DPTextError(f"output {str(path)!r} is {fmt} but the input is {reader.format}; keep the same format")
    if Path(path).resolve() == reader.path.resolve():
        raise DPTextError("output must differ from the input (the input is read while the output is written)")
    if fmt == "parquet":
        return ParquetWriter(path, reader.schema, reader.report_field)
    return JsonlWriter(path, reader.report_field)


class RejectsFile:
    """JSONL of malformed records: ``{"line", "index", "error", "raw"}`` (raw stays on this machine)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.f = open(self.path, "w", encoding="utf-8")
        self.count = 0

    def add(self, line: int, index: int, error: str, raw: str) -> None:
        self.f.write(json.dumps({"line": line, "index": index, "error": error, "raw": raw}, ensure_ascii=False) + "\n")
        self.count += 1

    def close(self) -> None:
        self.f.close()
