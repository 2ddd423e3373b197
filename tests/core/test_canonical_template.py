"""CanonicalTemplate: filling the holes gives exactly the canonical JSON of the filled payload."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviewapp.core import canonical_template
from reviewapp.core.canonical_template import CanonicalTemplate
from reviewapp.core.signing import canonical_json
from tests.support.json_values import JSON_VALUES

_KEYS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)


@st.composite
def payloads_with_holes(draw):
    """A payload, the keys left open (some present with another value, some new), their values."""
    payload = draw(st.dictionaries(_KEYS, JSON_VALUES, max_size=8))
    present = draw(st.lists(st.sampled_from(sorted(payload)), unique=True)) if payload else []
    new = draw(st.lists(_KEYS.filter(lambda key: key not in payload), unique=True, max_size=3))
    values = {hole: draw(JSON_VALUES) for hole in [*present, *new]}
    return payload, values


@given(payloads_with_holes())
def test_filling_the_holes_gives_the_canonical_json_of_the_filled_payload(case):
    payload, values = case
    template = CanonicalTemplate.build(payload, values)
    assert template.fill(values) == canonical_json({**payload, **values})


@given(st.dictionaries(_KEYS, JSON_VALUES, max_size=8), st.lists(JSON_VALUES, min_size=2))
def test_one_template_fills_many_times(payload, fills):
    template = CanonicalTemplate.build(payload, ["prev_hash"])
    for value in fills:
        assert template.fill({"prev_hash": value}) == canonical_json(
            {**payload, "prev_hash": value}
        )


def test_a_decision_payload_gets_its_place_in_the_chain_under_the_lock():
    payload = {
        "type": "reviewapp.decision/v1",
        "rationale": 'Caf\u00e9 \u2014 "quoted", back\\slash, tab\t, \U0001f600, \u2028',
        "tally": {"passed": 2, "ratio": 0.1, "big": 1e21, "outcome": "reached_pass"},
        "evidence": [{"checker": "\u00fcber", "verdict": None}],
        "decided_at": "",
        "prev_hash": "0" * 64,
        "\u00e9": [True, False, -0.0],
    }
    template = CanonicalTemplate.build(payload, ("prev_hash", "decided_at"))
    filled = {"prev_hash": "ab" * 32, "decided_at": "2026-12-02T19:40:01.123456+00:00"}
    assert template.fill(filled) == canonical_json({**payload, **filled})


def test_every_hole_and_no_other_must_be_filled():
    template = CanonicalTemplate.build({"a": 1}, ["b", "c"])
    with pytest.raises(ValueError, match="fill exactly the holes"):
        template.fill({"b": 1})
    with pytest.raises(ValueError, match="fill exactly the holes"):
        template.fill({"b": 1, "c": 2, "d": 3})


def test_a_payload_already_holding_a_markers_text_is_refused(monkeypatch):
    monkeypatch.setattr(canonical_template.secrets, "token_hex", lambda n: "fixed")
    with pytest.raises(ValueError, match="not in the encoding exactly once"):
        CanonicalTemplate.build({"note": "reviewapp-hole-fixed"}, ["prev_hash"])
