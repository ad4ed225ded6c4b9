"""Batch sanitization of whole corpora (JSONL / Parquet) on local worker processes or Ray.

See :func:`dptext.batch.pipeline.sanitize_corpus` and ``dptext sanitize-corpus``.
"""

from dptext.batch.pipeline import ENGINES, sanitize_corpus
from dptext.batch.sanitize import BatchJob, block_rng

__all__ = ["ENGINES", "sanitize_corpus", "BatchJob", "block_rng"]
