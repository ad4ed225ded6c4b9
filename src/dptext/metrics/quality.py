"""Generation quality (docs/algorithms.md): MAUVE, coherence, alignment, on all-MiniLM-L6-v2 sentence embeddings.

* MAUVE (Pillutla et al. 2021, via ``mauve-text``) between generated texts ``P`` and
  human references ``Q``, with features from all-MiniLM-L6-v2 (offline) instead of
  GPT-2-large: the features of both sets are jointly PCA-reduced, quantised with
  k-means into ``num_buckets`` clusters (default ``max(2, n/10)``), and MAUVE is the
  area under the divergence curve of the two cluster histograms, scaled by
  ``mauve_scaling_factor`` (5, the package default). Absolute values therefore
  differ from papers that used GPT-2 features; comparisons across mechanisms on the
  same features are meaningful.
* coherence ``= cos(emb(Doc), emb(Gen))`` (InferDPT VI-F used SimCSE; we use MiniLM);
* alignment ``= cos(emb(final output), emb(non-private generation))``.

Embeddings are L2-normalised, so cosines are dot products.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.errors import DPTextError


def embed(texts: Sequence[str], progress=None) -> np.ndarray:
    """L2-normalised MiniLM sentence embeddings (``[n, 384]``); empty texts embed as ``""``."""
    from dptext.encoders import embed_texts

    return embed_texts([t if isinstance(t, str) else " ".join(t) for t in texts], progress=progress)


def _features(x) -> np.ndarray:
    if isinstance(x, np.ndarray) and x.ndim == 2:
        return x.astype(np.float32)
    return embed(list(x))


def mauve_score(generated, references, *, num_buckets: int | str = "auto", seed: int = 25,
                scaling: float = 5.0, explained_var: float = 0.9) -> float:
    """MAUVE between two sets of texts (or precomputed ``[n, d]`` feature arrays); in (0, 1], higher is closer.

    Needs at least 2 texts per side; ``num_buckets="auto"`` uses ``max(2, round(min(|P|, |Q|)/10))``.
    """
    import mauve

    p, q = _features(generated), _features(references)
    if len(p) < 2 or len(q) < 2:
        raise DPTextError("MAUVE needs at least 2 texts on each side")
    if num_buckets == "auto":
        num_buckets = max(2, int(round(min(len(p), len(q)) / 10)))
    out = mauve.compute_mauve(p_features=p, q_features=q, num_buckets=int(num_buckets), seed=seed,
                              mauve_scaling_factor=scaling, kmeans_explained_var=explained_var,
                              kmeans_num_redo=5, verbose=False)
    return float(out.mauve)


def pairwise_cosine(a, b) -> np.ndarray:
    """``cos(emb(a_i), emb(b_i))`` for parallel lists of texts (or feature arrays)."""
    if len(a) != len(b):
        raise DPTextError(f"need parallel lists, got {len(a)} and {len(b)} texts")
    if not len(a):
        return np.zeros(0)
    ea, eb = _features(a), _features(b)
    ea = ea / np.maximum(np.linalg.norm(ea, axis=1, keepdims=True), 1e-12)
    eb = eb / np.maximum(np.linalg.norm(eb, axis=1, keepdims=True), 1e-12)
    return np.einsum("ij,ij->i", ea, eb).astype(np.float64)


def coherence(documents, generations) -> float:
    """Mean ``cos(emb(Doc_i), emb(Gen_i))`` (InferDPT's coherence, MiniLM features)."""
    c = pairwise_cosine(documents, generations)
    return float(c.mean()) if len(c) else float("nan")


def alignment(outputs, non_private) -> float:
    """Mean ``cos(emb(final output_i), emb(non-private generation_i))``."""
    c = pairwise_cosine(outputs, non_private)
    return float(c.mean()) if len(c) else float("nan")
