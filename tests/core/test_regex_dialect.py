"""Patterns in the reference's dialect: Rust's regex crate 1.13.1, exactly."""

import json
from pathlib import Path

import pytest

from reviewapp.core import regex_dialect

# Verdicts and matches recorded from the crate itself; see data/README.md.
VECTORS = json.loads((Path(__file__).parent / "data" / "regex_vectors.json").read_text())["vectors"]


def span(pattern: str, text: str) -> list[int] | None:
    found = regex_dialect.search(regex_dialect.compile(pattern), text)
    return None if found is None else [found.start(), found.end()]


@pytest.mark.parametrize(
    "vector",
    [v for v in VECTORS if v["accepted"]],
    ids=lambda v: f"{v['category']}:{v['pattern'][:40]!r}",
)
def test_a_pattern_the_crate_accepts_finds_the_crates_match(vector):
    for text, expected in vector["matches"]:
        assert span(vector["pattern"], text) == expected, text


@pytest.mark.parametrize(
    "vector",
    [v for v in VECTORS if not v["accepted"]],
    ids=lambda v: f"{v['category']}:{v['pattern'][:40]!r}",
)
def test_a_pattern_the_crate_refuses_is_refused(vector):
    with pytest.raises(regex_dialect.PatternError):
        regex_dialect.compile(vector["pattern"])


@pytest.mark.parametrize(
    ("pattern", "engine_says"),
    [
        ("a(?=b)", "look-around"),
        (r"(a)\1", "backreferences are not supported"),
        (r"\p{Cs}", "Unicode property value not found"),
        ("[\\W]{1000}", "exceeds size limit"),
        ("é(?<a>x)(?<a>y)", "capture group name used twice"),
    ],
)
def test_a_refusal_says_why(pattern, engine_says):
    with pytest.raises(regex_dialect.PatternError, match=engine_says):
        regex_dialect.compile(pattern)


def test_a_pattern_with_a_lone_surrogate_is_refused():
    with pytest.raises(regex_dialect.PatternError, match="lone surrogate"):
        regex_dialect.compile("a\ud800")


def test_a_pattern_must_be_text():
    with pytest.raises(regex_dialect.PatternError, match="not bytes"):
        regex_dialect.compile(b"a")


def test_text_over_the_size_limit_is_refused_not_searched(monkeypatch):
    monkeypatch.setattr(regex_dialect, "MAX_INPUT_CHARS", 10)
    with pytest.raises(regex_dialect.InputTooLarge):
        regex_dialect.search(regex_dialect.compile("a"), "a" * 11)
