import json

import pytest

from reviewapp.core.text import storable, storable_json


@pytest.mark.parametrize(
    "text",
    ["", "plain", "naïve — ünïcödé", "emoji 😀 and RTL שלום", "tabs\tand\nnewlines\r"],
)
def test_well_formed_text_is_unchanged(text):
    assert storable(text) == text


def test_nul_becomes_the_replacement_character():
    assert storable("a\x00b\x00") == "a\ufffdb\ufffd"


def test_a_lone_surrogate_becomes_the_replacement_character():
    text = json.loads('"x\\ud800y\\udfffz"')
    assert storable(text) == "x\ufffdy\ufffdz"
    storable(text).encode("utf-8")


def test_a_surrogate_pair_in_halves_becomes_the_character_it_spells():
    assert storable("\ud83d\ude00") == "😀"


def test_json_has_every_string_made_storable_keys_included():
    value = {"k\x00": ["v\x00", {"n": 1, "s": "\ud800"}], "ok": True, "none": None}
    assert storable_json(value) == {
        "k\ufffd": ["v\ufffd", {"n": 1, "s": "\ufffd"}],
        "ok": True,
        "none": None,
    }
