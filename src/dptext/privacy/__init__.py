"""Privacy layer around the mechanisms: policies that decide which spans are perturbed (:mod:`.policy`),
entity detectors (:mod:`.detectors`, :mod:`.recognizers`). Submodules are imported on use, so that
``import dptext.privacy`` loads neither spaCy nor a model."""
