"""Whitespace as the references define it, in one place.

Rust's `char::is_whitespace`, `str::trim` and `split_whitespace` use the Unicode
White_Space property. Python's `str.isspace()`, `str.strip()` and `str.split()` also
treat U+001C..U+001F (the information separators) as whitespace, so a cite, a mandate
or a lens name would trim differently from the reference. Everything that trims or
splits on whitespace for domain purposes uses these instead.
"""

WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + "\u2028\u2029\u202f\u205f\u3000"
)
WHITESPACE_SET = frozenset(WHITESPACE)


def trim(text: str) -> str:
    """`str::trim`: strip Unicode White_Space from both ends."""
    return text.strip(WHITESPACE)


def is_blank(text: str) -> bool:
    return not trim(text)
