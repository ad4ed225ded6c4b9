"""The privacy layer around the mechanisms.

* :mod:`.policy`, :mod:`.detectors`, :mod:`.recognizers`: which spans of private text are perturbed, at which ε;
* :mod:`.memo`, :mod:`.accounting`: consistent perturbation of repeats and ε spent per key;
* :mod:`.claims`, :mod:`.audit`, :mod:`.fidelity`, :mod:`.reference`: what each mechanism claims and how it is checked.

Submodules are imported on use, so ``import dptext.privacy`` loads neither spaCy nor a model.
"""
