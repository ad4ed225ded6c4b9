"""Given names that are seldom given and English words, spaCy's lone readings of uncased words, and hashtags that
name a person; on sentences written for these tests.

* A word that only the long given-name list holds, seldom given anywhere, and that is an English word (``visa``,
  ``vice``) is no name beside frequent or ambiguous words only (``visa card``); alone it stays a name (``VISA`` is
  a Finnish given name).
* In lower- or upper-case text, spaCy reads the recased copy, which title-cases listed surnames that are English
  words: a one-word spaCy PERSON that is such a word (``VIGIL``) is dropped; a two-word one stays.
* A hashtag is a person's name when it is one distinctive listed name (``#Hernandez``), or a given name and a
  surname in camel case that are not both frequent words (``#TimCook``).
"""

import pytest

from dptext.privacy.gazetteers import lexicon
from dptext.privacy.lexical import NameDetector
from dptext.privacy.policy import get_policy


@pytest.fixture(scope="module")
def names():
    return NameDetector()


@pytest.fixture(scope="module")
def policy():
    return get_policy("entities")


def _persons(policy, text):
    return [text[s.start:s.end] for s in policy.detect(text) if s.label == "PERSON"]


def test_seldom_names_are_english_words_no_census_list_holds():
    lex = lexicon()
    assert {"visa", "vice"} <= lex.seldom
    # given often somewhere, a census given name, or a census surname that is not rare: never seldom
    assert not {"maria", "rose", "grace", "mark", "harper", "lambert"} & lex.seldom


@pytest.mark.parametrize("text,word", [
    ("she paid for the tickets with her visa card", "visa"),
    ("do you need a visa card for the deposit", "visa"),  # beside a frequent or ambiguous word only
    ("DO YOU NEED A VISA CARD FOR THE DEPOSIT", "VISA"),
])
def test_a_seldom_name_beside_frequent_words_only_is_no_name(policy, text, word):
    assert not any(word in p for p in _persons(policy, text))


@pytest.mark.parametrize("text,name", [
    ("we had lunch with visa virtanen on friday", "visa virtanen"),    # beside a surname
    ("minutes taken by mr vice, the new clerk", "vice"),               # after a title
    ("MINUTES TAKEN BY MR VICE, THE NEW CLERK", "VICE"),
    ("We hiked with Visa in the hills.", "Visa"),                      # a proper noun in cased text
    ("THE KEYS ARE WITH VISA NOW", "VISA"),                            # alone
    ("SAID VISA KOWALCZYK, THE MINISTER", "VISA KOWALCZYK"),
])
def test_a_seldom_name_beside_a_name_or_capitalized_stays(names, text, name):
    found = [text[d.start:d.end] for d in names.detect(text)]
    assert any(name in p for p in found), found


@pytest.mark.parametrize("text,word", [
    ("GROWING CONCERNS OVER REGIONAL BIAS IN THE SAMPLE", "BIAS"),
    ("THE LOS ANGELES TIMES ANNOUNCED THE WINNERS BEFORE THE CEREMONY", "WINNERS"),
])
def test_spacy_alone_on_an_uncased_english_word_is_no_name(policy, text, word):
    assert word not in " ".join(_persons(policy, text))


def test_spacy_alone_on_a_frequent_surname_stays(policy):
    # "bates" is also an English word, but one of the census's most frequent surnames
    text = "THE MUSIC WAS COMBINED WITH THE BATES POEM AND PUBLISHED IN 1910"
    assert "BATES" in " ".join(_persons(policy, text))


def test_spacy_two_word_person_in_upper_case_stays(policy):
    text = "I'M WRITING ON BEHALF OF MR. DAS NEVES REGARDING ACCOUNT 5313273."
    assert "DAS NEVES" in " ".join(_persons(policy, text))


@pytest.mark.parametrize("text,tag", [
    ("#Hernandez to the rescue again", "#Hernandez"),
    ("#hernandez to the rescue again", "#hernandez"),
    ("#HERNANDEZ TO THE RESCUE AGAIN", "#HERNANDEZ"),
    ("watching #TimCook on stage tonight", "#TimCook"),
    ("can't wait for #KatyPerry at halftime", "#KatyPerry"),
])
def test_a_hashtag_that_names_a_person(policy, text, tag):
    assert any(tag in p or tag[1:] in p for p in _persons(policy, text)), _persons(policy, text)


@pytest.mark.parametrize("text,tag", [
    ("stay safe out there #WinterWeather", "WinterWeather"),   # a given name and a surname, both frequent words
    ("new phone in #RoseGold finally", "RoseGold"),
    ("best speech of the year #OscarNight", "OscarNight"),      # a rare surname that is a frequent word
    ("brunch plans for #Sunday anyone?", "Sunday"),             # a weekday
    ("News about #ISIS again today.", "ISIS"),                   # capitals in cased text: an acronym
    ("flying over #Sydney right now", "Sydney"),                # a place
])
def test_a_hashtag_that_names_no_person(names, text, tag):
    assert not any(tag in text[d.start:d.end] for d in names.detect(text))


def test_me_and_x_at_the_end_of_a_text_is_read_without_error(policy):
    # "me and I" closes the text: the "X and his/her" test once looked two words past the end, and the policy
    # refused the whole text
    text = "my app says you're not following me and I can't."
    assert policy.detect(text) is not None


def test_a_listed_name_inside_a_spacy_place_takes_its_label(policy):
    # "india" is a listed given name; in cased text spaCy reads a place, and its span keeps the word covered
    text = "The squads had been tasked to carry out hits on India's parliament."
    spans = [(text[s.start:s.end], s.label) for s in policy.detect(text)]
    assert ("India", "GPE") in spans and not any(label == "PERSON" for _, label in spans)


def test_without_the_place_label_the_name_stays_covered():
    # a policy that protects persons only has no spaCy place to yield to: the word stays a PERSON span
    from dptext.privacy.policy import EntitiesPolicy

    text = "The squads had been tasked to carry out hits on India's parliament."
    spans = [(text[s.start:s.end], s.label) for s in EntitiesPolicy(entity_types=("PERSON",)).detect(text)]
    assert ("India's", "PERSON") in spans


@pytest.mark.parametrize("text", ["she attended classes at an art school.", "it takes will power to quit",
                                  "TO PROTECT TERRAIN, URBAN CENTERS AND ROADS",
                                  # spaCy alone, on a lone listed word in lower case in cased text: no name either
                                  "Judo derives mainly from the martial art of Jujutsu, but began to diverge."])
def test_a_two_word_common_noun_is_no_name(policy, text):
    assert _persons(policy, text) == []


@pytest.mark.parametrize("text,name", [("lunch with grace hill tomorrow", "grace hill"),
                                       ("LUNCH WITH JACK WHITE TOMORROW", "JACK WHITE")])
def test_a_pair_that_is_no_common_noun_stays(names, text, name):
    assert name in [text[d.start:d.end] for d in names.detect(text)]


@pytest.mark.parametrize("text,name", [("Mr Maguire says activity is centred on housing.", "Maguire"),
                                       ("MR MAGUIRE SAYS IT IS CENTRED ON HOUSING", "MAGUIRE")])
def test_a_title_stays_public(policy, text, name):
    assert _persons(policy, text) == [name]
