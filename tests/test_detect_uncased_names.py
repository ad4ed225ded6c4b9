"""Lower- and upper-case text, where casing says nothing: a given name that is also an English word before a
lone name, and a name-list word inside a place spaCy reads from the recased copy."""

import pytest

from dptext.privacy.policy import EntitiesPolicy, get_policy


@pytest.fixture(scope="module")
def policy():
    return get_policy("entities")


def _spans(policy, text):
    return [(text[s.start:s.end], s.label) for s in policy.detect(text)]


@pytest.mark.parametrize("text,name", [
    ("is malaria covered by the plan for guy gilles?", "guy gilles"),
    ("have detained top-flight tennis player drew graham over visa disputes.", "drew graham"),
    ("IS AIDS COVERED BY THE PLAN FOR MADS VAN HENEGOUWEN?", "MADS VAN HENEGOUWEN"),  # a surname with a particle
    ("GUY GILLES'S CAR WAS TOWED", "GUY GILLES'S"),
])
def test_a_given_name_that_is_an_english_word_completes_a_lone_name(policy, text, name):
    assert (name, "PERSON") in _spans(policy, text)


@pytest.mark.parametrize("text,name,word", [
    ("She drew Graham a map of the town.", "Graham", "drew"),             # cased text: the lower-case verb stays
    ('"we will not suspend expulsions," said lambert mende on monday', "lambert mende", "said"),  # a full name
    ("johnston was unrelated to confederate general joseph e. of virginia", "joseph e", "general"),  # it goes on
])
def test_a_word_before_a_name_it_does_not_complete_stays_public(policy, text, name, word):
    persons = [v for v, label in _spans(policy, text) if label == "PERSON"]
    assert any(name in v for v in persons) and not any(word in v for v in persons)


@pytest.mark.parametrize("text,place", [
    ("razzak told police four suicide squads had been tasked to carry out hits on india's parliament.", "india"),
    ("traveland's wholly-owned travel centres have ceased operating from today, leaving more than 550 staff "
     "seeking other jobs.", "traveland"),
])
def test_in_uncased_text_a_listed_word_inside_a_spacy_place_takes_its_label(policy, text, place):
    spans = _spans(policy, text)
    assert (place, "GPE") in spans and not any(label == "PERSON" and place in v for v, label in spans)


def test_in_uncased_text_an_organisation_does_not_outrank_a_name(policy):
    # spaCy's ORG from a recased copy is no better reading than the name lists: ueshiba stays a person
    text = "aikido grew in the late 1920s, partly due to ueshiba's involvement with the omoto-kyo religion."
    assert any(label == "PERSON" and "ueshiba" in v for v, label in _spans(policy, text))


def test_without_the_place_label_the_uncased_name_stays_covered():
    text = "razzak told police four suicide squads had been tasked to carry out hits on india's parliament."
    assert ("india's", "PERSON") in _spans(EntitiesPolicy(entity_types=("PERSON",)), text)


def test_a_lone_particle_is_no_name_to_complete(policy):
    # "van" is a particle and a listed given name; alone it is no surname that "chase" would complete
    text = "we sat in the front seat of the chase van all day"
    assert not any("chase" in v for v, label in _spans(policy, text) if label == "PERSON")


@pytest.mark.parametrize("text,word", [
    ("links to osama bin laden's al qaeda network.", "qaeda"),   # a possessive ends a name
    ("our founder anna van #goals", "goals"),                    # a hashtag is no surname after a particle
])
def test_a_name_does_not_reach_past_a_possessive_or_into_a_hashtag(policy, text, word):
    assert not any(word in v for v, label in _spans(policy, text) if label == "PERSON")


@pytest.mark.parametrize("text,word", [
    ("a film directed by sophia potter and starring potter", "potter"),      # a surname that is an English word
    ("A FILM DIRECTED BY ERIN BOOTH AND STARRING BOOTH", "BOOTH"),
    ("A film directed by Roderick Grant and starring Grant.", "Grant"),      # cased: written as a proper noun
])
def test_the_surname_of_a_full_name_is_a_name_where_the_text_repeats_it(policy, text, word):
    i = text.rindex(word)
    assert any(label == "PERSON" and s.start <= i < s.end for s in policy.detect(text)
               for label in [s.label])


def test_a_repeated_surname_in_lower_case_in_cased_text_stays_a_word(policy):
    text = "A film directed by Roderick Grant, paid for by a grant from the city."
    i = text.index("grant")
    assert not any(s.start <= i < s.end for s in policy.detect(text))


def test_a_lone_name_lends_no_word_to_its_repeats(policy):
    # only the surname of a full name is repeated: a lone word may be a cue's guess ("tell ward")
    text = "tell ward the news, the ward was full"
    i = text.rindex("ward")
    assert not any(s.start <= i < s.end and s.label == "PERSON" for s in policy.detect(text))


def test_only_the_surname_after_a_distinctive_given_name_is_repeated(policy):
    # "min delay" is read as a name (a weak given name and a census surname); "delay" is not repeated from it
    text = "@united 3 hour 45 min delay so far..... would love to round to 4 hours. the delay is bad"
    i = text.rindex("delay")
    assert not any(s.start <= i < s.end for s in policy.detect(text))
