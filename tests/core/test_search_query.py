import pytest

from reviewapp.core.search_query import (
    MAX_CHARS,
    MAX_WORDS,
    SearchQueryError,
    Term,
    search_query_parse,
)


def _terms(raw: str) -> list[list[tuple[str, bool]]]:
    return [[(t.text, t.negated) for t in terms] for terms in search_query_parse(raw).alternatives]


def test_words_must_all_appear():
    assert _terms("refund policy") == [[("refund", False), ("policy", False)]]


def test_a_quoted_phrase_is_one_term_of_several_words():
    [[term]] = search_query_parse('"breach   notification"').alternatives
    assert term == Term("breach notification", ("breach", "notification"))


def test_an_unclosed_quote_runs_to_the_end():
    assert _terms('a "b c') == [[("a", False), ("b c", False)]]


def test_a_dash_excludes_the_next_term_even_after_a_space():
    assert _terms('a -b - "c d"') == [[("a", False), ("b", True), ("c d", True)]]


def test_a_run_of_dashes_excludes_when_odd_and_cancels_when_even():
    assert _terms("-" * 41 + "x " + "-" * 40 + "y") == [[("x", True), ("y", False)]]


def test_or_between_terms_separates_alternatives():
    assert _terms("a b or c") == [[("a", False), ("b", False)], [("c", False)]]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("or a", [[("or", False), ("a", False)]]),
        ("a or", [[("a", False), ("or", False)]]),
        ("a or or b", [[("a", False)], [("or", False), ("b", False)]]),
        ('a "or" b', [[("a", False), ("or", False), ("b", False)]]),
    ],
)
def test_or_anywhere_but_between_two_terms_is_the_word(raw, expected):
    assert _terms(raw) == expected


def test_punctuation_alone_is_not_a_term():
    assert _terms('a ! "" -?? b') == [[("a", False), ("b", False)]]


def test_the_canonical_form_quotes_every_term_and_keeps_at_most_one_dash():
    query = search_query_parse('refund ---"a-b  c" or x@y.com')
    assert query.websearch() == '"refund" -"a-b c" or "x@y.com"'


@pytest.mark.parametrize("raw", ["-" * 33, "- " * 200, '"" - ?', "!!!"])
def test_a_search_without_a_word_is_refused(raw):
    with pytest.raises(SearchQueryError, match="no word"):
        search_query_parse(raw)


def test_a_search_too_long_is_refused_saying_the_limit():
    with pytest.raises(SearchQueryError) as refused:
        search_query_parse("a" * 100_000)
    assert f"at most {MAX_CHARS:,} characters (this one has 100,000)" in str(refused.value)


def test_a_search_with_too_many_words_is_refused_saying_the_limit():
    with pytest.raises(SearchQueryError) as refused:
        search_query_parse(" ".join(f"w{i}" for i in range(MAX_WORDS + 1)))
    assert f"at most {MAX_WORDS} (this one has {MAX_WORDS + 1})" in str(refused.value)


def test_a_phrase_counts_each_of_its_words():
    words = " ".join(f"w{i}" for i in range(MAX_WORDS))
    assert search_query_parse(f'"{words}"')
    with pytest.raises(SearchQueryError, match="too many words"):
        search_query_parse(f'"{words} one-more"')
