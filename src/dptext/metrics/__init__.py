"""Evaluation metrics (docs/algorithms.md), split by concept.

* :mod:`~dptext.metrics.text`: diversity, Rouge-L, retention ratio, n-gram leakage;
* :mod:`~dptext.metrics.mapping`: effective mapping set size, embedding distance, synonym proportion, |C_r|/|V|;
* :mod:`~dptext.metrics.quality`: MAUVE, coherence, alignment (all-MiniLM-L6-v2 features);
* :mod:`~dptext.metrics.classify`: zero-shot LLM accuracy, MiniLM + linear head ("Test" / "All").

The light metrics are re-exported here; the model-backed ones load on first use.
"""

from dptext.metrics.mapping import (
    candidate_set_ratios,
    effective_mapping_set_size,
    embedding_distances,
    mapping_set_sizes,
    mean_embedding_distance,
    synonym_proportion,
)
from dptext.metrics.quality import alignment, coherence, mauve_score
from dptext.metrics.text import (
    diversity,
    lcs_length,
    mean_diversity,
    mean_rouge_l_f1,
    ngram_leakage,
    retention_ratio,
    rouge_l,
    rouge_l_f1,
    unit_pairs,
    units,
)

__all__ = [
    "alignment", "coherence", "mauve_score",
    "candidate_set_ratios", "diversity", "effective_mapping_set_size", "embedding_distances", "lcs_length",
    "mapping_set_sizes", "mean_diversity", "mean_embedding_distance", "mean_rouge_l_f1", "ngram_leakage",
    "retention_ratio", "rouge_l", "rouge_l_f1", "synonym_proportion", "unit_pairs", "units",
]
