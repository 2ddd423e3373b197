"""Properties of cite resolution over arbitrary Unicode."""

from hypothesis import given, settings
from hypothesis import strategies as st

from reviewapp.core.cite import resolve_cite, resolve_cites

# Pieces that stress offset arithmetic and the ladder: astral chars, ZWJ and
# flag sequences, combining marks, CRLF, emphasis, chars whose lowercase
# differs in length or context, and Rust-vs-Python whitespace disagreements.
TRICKY = [
    "\U0001f469\u200d\U0001f4bb",
    "\U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0001f44d\U0001f3fd",
    "\U00020000",
    "e\u0301",
    "\r\n",
    "\n",
    " ",
    "  ",
    "*",
    "**",
    "_",
    "\u0130",
    "\u03a3",
    "\u00df",
    "\u2028",
    "\x1c",
    "\xa0",
    "> ",
    "- ",
    "1. ",
    '"',
    "\u201c",
    "\u201d",
    ": ",
    "word",
    "Word",
]

# Unicode White_Space, which is what "blank" means to the resolver.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(map(chr, range(0x2000, 0x200B)))
    + ("\u2028\u2029\u202f\u205f\u3000")
)

texts = st.lists(st.one_of(st.characters(), st.sampled_from(TRICKY)), max_size=40).map("".join)

FAST = settings(max_examples=200, deadline=None)


def _recase(text: str, how: int) -> str:
    return [text.lower(), text.upper(), text.swapcase(), text[:1].swapcase() + text[1:]][how]


def _rewrap(text: str, sep: str) -> str:
    return sep.join(text.split())


@st.composite
def drifted_excerpt(draw, source: str) -> str:
    """A substring of `source`, decorated the way evaluators drift from verbatim."""
    start = draw(st.integers(0, len(source)))
    end = draw(st.integers(start, len(source)))
    cite = source[start:end]
    for drift in draw(st.lists(st.sampled_from(["case", "quote", "wrap", "emphasis"]), max_size=3)):
        if drift == "case":
            cite = _recase(cite, draw(st.integers(0, 3)))
        elif drift == "quote":
            opener, closer = draw(st.sampled_from(['""', "''", "\u201c\u201d", "\xab\xbb", "``"]))
            cite = f"{opener}{cite}{closer}"
        elif drift == "wrap":
            cite = _rewrap(cite, draw(st.sampled_from([" ", "\n", "  ", "\r\n", " \n "])))
        else:
            marker = draw(st.sampled_from(["*", "**"]))
            cite = f"{marker}{cite}{marker}"
    return cite


@st.composite
def source_and_cite(draw) -> tuple[str, str]:
    source = draw(texts)
    cite = draw(st.one_of(drifted_excerpt(source), texts))
    return source, cite


@FAST
@given(source_and_cite())
def test_a_resolved_span_slices_the_source_to_its_text(pair):
    source, cite = pair
    span = resolve_cite(source, cite)

    if span is not None:
        assert 0 <= span.start <= span.end <= len(source)
        assert source[span.start : span.end] == span.text


@FAST
@given(source_and_cite())
def test_the_utf16_range_decodes_back_to_the_span_text(pair):
    source, cite = pair
    span = resolve_cite(source, cite)

    if span is not None:
        start, end = span.utf16_range(source)
        # surrogatepass: a lone surrogate is one UTF-16 unit, as a browser counts it.
        units = source.encode("utf-16-le", "surrogatepass")
        assert units[start * 2 : end * 2].decode("utf-16-le", "surrogatepass") == span.text


@FAST
@given(source_and_cite())
def test_the_byte_range_decodes_back_to_the_span_text(pair):
    source, cite = pair
    span = resolve_cite(source, cite)

    if span is not None:
        start, end = span.byte_range(source)
        encoded = source.encode("utf-8", "surrogatepass")
        assert encoded[start:end].decode("utf-8", "surrogatepass") == span.text


@FAST
@given(st.data())
def test_a_non_blank_excerpt_of_the_source_always_resolves(data):
    source = data.draw(texts)
    start = data.draw(st.integers(0, len(source)))
    cite = source[start : data.draw(st.integers(start, len(source)))]

    if cite.strip(WHITE_SPACE):
        assert resolve_cite(source, cite) is not None


@FAST
@given(st.data())
def test_resolve_cites_equals_resolve_cite_per_cite(data):
    source = data.draw(texts)
    cites = data.draw(st.lists(st.one_of(drifted_excerpt(source), texts), max_size=8))

    assert resolve_cites(source, cites) == [resolve_cite(source, cite) for cite in cites]
