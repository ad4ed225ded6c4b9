"""Social-media handles (``HANDLE``): found in any casing, on by default, owning their characters over a name or
code read inside them, never taken out of an email or a URL, and perturbed under the default entities policy."""

import numpy as np
import pytest

from dptext.privacy.policy import DEFAULT_TYPES, ENTITY_TYPES, get_policy
from dptext.privacy.recognizers import Detection, recognize
from dptext.privacy.spans import merge_detections


@pytest.fixture(scope="module")
def entities():
    return get_policy("entities")


def _found(text, labels=None):
    return sorted((text[d.start:d.end], d.label) for d in (recognize(text) if labels is None else
                                                          recognize(text, labels)))


def _spans(pol, text):
    return [(text[s.start:s.end], s.label) for s in pol.detect(text)]


@pytest.mark.parametrize("handle", ["@rene_m_gomez", "@RENE_M_GOMEZ", "@Rene_M_Gomez", "@SusanKare", "@bradsmithjr",
                                    "@UNITED", "@jsmith42"])
@pytest.mark.parametrize("frame", ["{} thanks for the reply", "thanks {}, see you", "cc {}"])
def test_a_handle_in_any_casing_is_one_handle_span_with_its_at_sign(entities, handle, frame):
    text = frame.format(handle)
    assert [f for f in _found(text) if f[1] == "HANDLE"] == [(handle, "HANDLE")]
    start = text.index(handle)
    got = [(text[s.start:s.end], s.label) for s in entities.detect(text)
           if s.start < start + len(handle) and s.end > start]  # every span that touches the handle's characters
    assert got == [(handle, "HANDLE")], _spans(entities, text)


@pytest.mark.parametrize("text,handle", [(".@IKEA Channels @Apple in an ad", "@IKEA"),
                                         ("RT @Brett2point0: .@Marc_Bertrand revealed", "@Marc_Bertrand")])
def test_a_dot_that_opens_a_word_before_the_at_sign_still_opens_a_handle(text, handle):
    # the tweet convention that makes a reply public; the dot stays outside the span
    assert (handle, "HANDLE") in _found(text, ("HANDLE",))


def test_a_surname_inside_a_handle_leaves_no_part_of_it_in_clear(entities):
    text = "@LG_Blount said the vote was close"
    assert _spans(entities, text)[:1] == [("@LG_Blount", "HANDLE")]
    assert not any(s.start < 10 and s.label != "HANDLE" for s in entities.detect(text))


@pytest.mark.parametrize("text,email", [("write to maria@example.com today", "maria@example.com"),
                                        ("MARIA@EXAMPLE.COM", "MARIA@EXAMPLE.COM"),
                                        ("mail jo.doe@mail.example.org", "jo.doe@mail.example.org"),
                                        ("reply to jo.@example.com", "jo.@example.com")])
def test_the_at_sign_of_an_email_starts_no_handle(entities, text, email):
    assert _found(text) == [(email, "EMAIL")]
    assert _spans(entities, text) == [(email, "EMAIL")]


def test_a_handle_keeps_its_characters_over_a_longer_code_read_through_it():
    # "jsmith42-x9" is an ID longer than the handle: an equal rank would give it the handle's characters
    text = "ping @jsmith42-x9 now"
    assert ("jsmith42-x9", "ID") in _found(text)
    spans = merge_detections(recognize(text), text)
    assert [(text[s.start:s.end], s.label) for s in spans] == [("@jsmith42", "HANDLE"), ("-x9", "ID")]


def test_an_email_keeps_its_characters_over_a_handle_before_it():
    text = "@jsmith.doe@gmail.com hi"
    spans = merge_detections([Detection(0, 7, "HANDLE", "regex"), Detection(1, 21, "EMAIL", "regex")], text)
    assert [(text[s.start:s.end], s.label) for s in spans] == [("@jsmith.doe@gmail.com", "EMAIL")]


@pytest.mark.parametrize("url", ["https://medium.com/@jsmith/post", "www.tiktok.com/@SusanKare/video/7"])
def test_a_handle_in_a_url_path_stays_in_the_url(entities, url):
    text = f"see {url} today"
    assert _found(text) == [(url, "URL")]
    assert _spans(entities, text) == [(url, "URL")]


@pytest.mark.parametrize("text", ["meet @10pm at the bar", "see you @7:30", "lunch @10AM", "call @10:30pm",
                                  "doors @10a.m. sharp", "price @ 5pm", "x.@foo", "..@foo", "a/@foo", "a@@foo", "@123 @_"])
def test_times_and_at_signs_inside_words_are_no_handles(text):
    assert "HANDLE" not in {label for _, label in _found(text)}


def test_a_handle_has_at_most_thirty_characters_after_the_at_sign():
    assert _found("@" + "a" * 30, ("HANDLE",)) == [("@" + "a" * 30, "HANDLE")]
    assert _found("@" + "a" * 31, ("HANDLE",)) == []  # longer than any platform allows: no handle


def test_handle_is_a_known_type_on_by_default_and_can_be_switched_off():
    assert "HANDLE" in DEFAULT_TYPES and "HANDLE" in ENTITY_TYPES
    text = "thanks @SusanKare"
    off = get_policy("entities", entity_types=[t for t in DEFAULT_TYPES if t not in ("HANDLE", "TERM")],
                     detectors="regex,gazetteer")
    assert "HANDLE" not in off.types and "HANDLE" not in {s.label for s in off.detect(text)}
    assert "HANDLE" in get_policy("entities", detectors="regex").types
    assert [(text[s.start:s.end], s.label) for s in get_policy("entities", detectors="regex").detect(text)] == [
        ("@SusanKare", "HANDLE")]


def test_a_handle_is_perturbed_under_the_default_entities_policy(entities):
    from dptext.mechanisms.spec import MechanismSpec
    from dptext.pipeline import Sanitizer, Segment

    text = "thanks @Rene_M_Gomez and @bradsmithjr for the lovely dinner yesterday"
    san = Sanitizer(MechanismSpec("rantext", epsilon=1.0), policy=entities)
    for seed in range(5):
        out = san.sanitize([Segment(text, True)], rng=np.random.default_rng(seed))
        sent = out.texts[0]
        assert "thanks " in sent and " for the lovely dinner yesterday" in sent  # the rest goes in clear
        for name in ("Rene_M_Gomez", "bradsmithjr", "Gomez"):
            assert name not in sent, (seed, sent)
        assert [s["label"] for s in out.report["spans"]].count("HANDLE") == 2, out.report["spans"]
