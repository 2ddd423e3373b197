"""Text that shows nothing: whitespace and invisible format characters only.

A body of zero-width spaces, joiners or byte-order marks renders as nothing and
quotes as nothing, so wherever text must not be blank it counts as blank.
"""

import unicodedata


def shows_nothing(text: str) -> bool:
    """True when every character is whitespace or a format character (category Cf),
    e.g. U+200B ZERO WIDTH SPACE, U+200D ZERO WIDTH JOINER, U+FEFF, U+2060 WORD JOINER."""
    # isspace() is wider than Unicode White_Space (it adds U+001C..U+001F); for
    # "shows nothing" that is the safe side.
    return all(ch.isspace() or unicodedata.category(ch) == "Cf" for ch in text)
