"""The privacy layer around the mechanisms.

* :mod:`.policy`, :mod:`.detectors`, :mod:`.recognizers`: which spans of private text are perturbed, at which ε;
* :mod:`.memo`, :mod:`.accounting`: consistent perturbation of repeats and ε spent per key;
* :mod:`.audit`, :mod:`.fidelity`, :mod:`.reference`: how what each mechanism claims is checked (Cape's proven
  bounds live with the mechanism, in :mod:`dptext.mechanisms.cape_bounds`).

Submodules are imported on use, so ``import dptext.privacy`` loads neither spaCy nor a model.
"""
