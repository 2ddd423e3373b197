"""Text that shows nothing (reviewapp/core/blank.py)."""

import pytest

from reviewapp.core.blank import shows_nothing


@pytest.mark.parametrize(
    "text",
    ["", " \t\n", "\u200b\u200c\u200d\ufeff", "\u2060\u00a0\u3000", "\u200e\u200f"],
    ids=repr,
)
def test_whitespace_and_zero_width_characters_show_nothing(text):
    assert shows_nothing(text)


@pytest.mark.parametrize("text", ["a", "\u200bx\u200b", "🎉", "\u0301", "."], ids=repr)
def test_any_visible_character_shows_something(text):
    assert not shows_nothing(text)
