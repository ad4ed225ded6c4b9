"""Shared test set-up: one on-disk cache per checkout, so spaces build once per CI run."""

import os
from pathlib import Path

os.environ.setdefault("DPTEXT_CACHE_DIR", str(Path(__file__).resolve().parents[1] / ".dptext-cache"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
