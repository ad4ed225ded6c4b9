"""The ``src`` tree of a git revision, for benchmarks that run an earlier version of dptext beside this one."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def archive_src(rev: str, dest: Path) -> Path:
    """``git archive rev src`` extracted under ``dest`` (a fresh folder per revision); returns its ``src``."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "src"], capture_output=True, check=True).stdout
    out = Path(dest) / f"src-{rev}"
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(out, filter="data")
    return out / "src"
