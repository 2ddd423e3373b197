"""Near-miss notes: what differs between a refused cite and the text, never a grounding."""

import pytest

from reviewapp.core.cite import resolve_cite
from reviewapp.core.near_miss import ELISION_NOTE, NearMisses

NFC_NOTE = "matches only after Unicode normalisation (NFC/NFD); not grounded"


def _note(source: str, cite: str) -> str | None:
    # Every case here is one the ladder refuses; the note never changes that.
    assert resolve_cite(source, cite) is None
    return NearMisses(source).note(cite)


@pytest.mark.parametrize(
    "source, cite",
    [
        ("Le Cafe\u0301 compose\u0301 ouvre.", "Café composé"),  # NFD text, NFC quote
        ("Le Café composé ouvre.", "Cafe\u0301 compose\u0301"),  # NFC text, NFD quote
        ("The A\u030a ring is cold.", "\u00c5 ring"),
        ("The \u00c5 ring is cold.", "A\u030a ring"),
    ],
)
def test_a_quote_differing_only_in_unicode_normalisation_says_so(source, cite):
    assert _note(source, cite) == NFC_NOTE


def test_a_quote_differing_only_in_underscores_says_so():
    note = _note("Then call send_refund_now once.", "call send refund now")
    assert note == "matches only with underscores read as spaces; not grounded"


def test_a_quote_with_a_straight_apostrophe_for_a_curly_one_names_both():
    note = _note("The customer\u2019s refund is late.", "the customer's refund")
    assert note == (
        "matches only with quote marks made alike (the text has \u2019, the quote '); not grounded"
    )


def test_a_quote_with_straight_double_quotes_for_curly_ones_names_both():
    note = _note("He said \u201cyes\u201d twice.", 'He said "yes" twice')
    assert note == (
        'matches only with quote marks made alike (the text has \u201c \u201d, the quote "); '
        "not grounded"
    )


def test_a_quote_with_a_hyphen_for_a_non_breaking_one_names_both():
    note = _note("A non\u2011stop flight.", "non-stop flight")
    assert note == (
        "matches only with dashes and hyphens made alike (the text has \u2011, the quote -); "
        "not grounded"
    )


def test_an_invisible_soft_hyphen_in_the_text_is_named():
    note = _note("It is refund\u00adable today.", "refundable today")
    assert note == (
        "matches only with invisible characters removed (soft hyphen U+00AD); not grounded"
    )


def test_full_width_letters_need_compatibility_normalisation():
    note = _note("Code \uff21\uff22\uff23 ships.", "Code ABC ships")
    assert note.startswith("matches only after compatibility normalisation (NFKC")


def test_several_differences_are_all_named_and_no_others():
    note = _note("The cafe\u0301\u2019s \u201cmenu\u201d.", 'café\'s "menu"')
    assert note.startswith(
        "matches only after Unicode normalisation (NFC/NFD) and with quote marks"
    )
    assert "underscores" not in note and "dashes" not in note and "NFKC" not in note


def test_an_elided_quote_whose_parts_are_in_the_text_in_order_says_so():
    assert _note("The sky is blue. Water is wet.", "The sky … is wet") == ELISION_NOTE


def test_an_elided_quote_whose_parts_are_out_of_order_gets_no_note():
    assert _note("The sky is blue. Water is wet.", "Water is wet ... The sky") is None


@pytest.mark.parametrize("cite", ["The sea is green.", "Cafe composed", "non stop"])
def test_a_fabricated_quote_gets_no_note(cite):
    assert _note("Le Cafe\u0301 compose\u0301. A non\u2011stop flight.", cite) is None


def test_a_quote_that_resolves_as_it_stands_gets_no_note():
    assert NearMisses("The customer\u2019s refund.").note("customer\u2019s refund") is None
