"""Corpus input/output: JSONL and Parquet, every field other than the text preserved.

A corpus is a sequence of records (JSONL: one JSON object per line; Parquet:
one row). The reader yields :class:`Record` for good records and
:class:`Reject` for malformed ones (bad UTF-8, bad JSON, not an object, no
text field, non-string or null text, a field that would be overwritten by
the report, a text that is not valid Unicode, nesting deeper than
``MAX_DEPTH`` objects/arrays); blank JSONL lines are
counted and skipped. JSON allows lone surrogates (``"\\ud800"``), which no
UTF-8 file can hold: in the text they reject the record here, in any other
field when the record is written. ``index`` is the
0-based position among records (blank lines excluded), the key of the
per-document random stream; ``line`` is what a human looks for (JSONL line
number, or Parquet row number, 1-based).

Writing is in :mod:`dptext.batch.output`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from dptext.errors import DPTextError

MAX_DEPTH = 256  # deeper records are rejected: json (and pickling to workers) would hit the recursion limit
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
        if line.count("[") + line.count("{") > MAX_DEPTH and _depth(line) > MAX_DEPTH:
            return Reject(index, lineno, f"nested deeper than {MAX_DEPTH} levels of objects and arrays", line)
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            return Reject(index, lineno, f"invalid JSON: {exc.msg} (column {exc.colno})", line)
        except RecursionError:  # not reached after the depth check; kept so no record can abort the run
            return Reject(index, lineno, "nested too deeply to parse", line)
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
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return Reject(index, lineno, f"field {self.text_field!r} is not valid Unicode "
                                         f"({exc.reason} at position {exc.start})", raw)
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


def _depth(line: str) -> int:
    """Deepest nesting of ``[``/``{`` outside JSON strings (a scan, no recursion; malformed input is
    measured as far as it goes and then refused by the parser)."""
    depth = best = 0
    in_str = esc = False
    for c in line:
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "[{":
            depth += 1
            best = max(best, depth)
        elif c in "]}":
            depth -= 1
    return best
