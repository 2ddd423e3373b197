"""A Hypothesis strategy for every value RFC 8785 can encode."""

from hypothesis import strategies as st

_TEXT = st.text(st.characters(exclude_categories=["Cs"]))

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53 - 1), 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    # Integer-valued doubles of 2**53 and above, which the encoder writes as plain digits
    # (up to the largest double: above it, near 2**1024, float() overflows).
    | st.integers(53, 1023)
    .flatmap(lambda e: st.integers(2**e, 2 ** (e + 1) - 2 ** (e - 52)))
    .map(float)
    | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)
