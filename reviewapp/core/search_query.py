"""What a reviewer typed in a search box, read as PostgreSQL's web-search syntax.

The syntax is `websearch_to_tsquery`'s: words must all appear, `"a phrase"`
must appear as consecutive words, `-word` or `-"a phrase"` must not appear,
and `or` between two terms separates alternatives (`a b or c` is "a and b,
or c"). Punctuation between words is not searched for.

The text is parsed here once, and each database is given only a canonical
form of it (reviewapp.review.search_queries): PostgreSQL never sees a run of `-` it
would nest into a "tsquery stack too small" error, and SQLite gets the same
meaning instead of one substring. A query longer than MAX_CHARS characters,
with more than MAX_WORDS words, or with no word at all is refused with a
message that says so: it would never succeed, so retrying cannot help.
"""

import re
from dataclasses import dataclass

# A search box holds a few words; these bounds keep every query's cost small
# (and below SQLite's 50,000-byte LIKE pattern limit and PostgreSQL's tsquery
# stack) whatever is pasted into it.
MAX_CHARS = 500
MAX_WORDS = 32

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")


class SearchQueryError(ValueError):
    """A search that cannot be run; the message says why, for the person who typed it."""


@dataclass(frozen=True)
class Term:
    """One word or phrase: `text` as typed (no quotes, spaces collapsed), `words` its words."""

    text: str
    words: tuple[str, ...]
    negated: bool = False


@dataclass(frozen=True)
class SearchQuery:
    """Alternatives (`or`), each a list of terms that must all hold."""

    alternatives: tuple[tuple[Term, ...], ...]

    def websearch(self) -> str:
        """The same query in websearch syntax, every term quoted: operators only where meant."""
        return " or ".join(
            " ".join(f'{"-" if term.negated else ""}"{term.text}"' for term in terms)
            for terms in self.alternatives
        )


def _operands(raw: str):
    """(negated, text, quoted) for each operand of `raw`, in order."""
    i, n = 0, len(raw)
    minus = 0
    while i < n:
        char = raw[i]
        if char.isspace():
            i += 1
        elif char == "-":
            # "-" before a term excludes it; "- -x" and "--x" are "x" again.
            minus += 1
            i += 1
        elif char == '"':
            # An unclosed quote runs to the end, as in PostgreSQL.
            end = raw.find('"', i + 1)
            end = n if end < 0 else end
            yield minus % 2 == 1, raw[i + 1 : end], True
            minus, i = 0, end + 1
        else:
            end = i
            while end < n and not raw[end].isspace() and raw[end] != '"':
                end += 1
            yield minus % 2 == 1, raw[i:end], False
            minus, i = 0, end


def search_query_parse(raw: str) -> SearchQuery:
    """Parse `raw`; raises SearchQueryError when it is too long, too large or has no word."""
    if len(raw) > MAX_CHARS:
        raise SearchQueryError(
            f"The search is too long: at most {MAX_CHARS:,} characters (this one has {len(raw):,})."
        )
    alternatives: list[list[Term]] = [[]]
    or_pending = False
    for negated, text, quoted in _operands(raw):
        # `or` is an operator only between two terms; anywhere else it is the word.
        if not quoted and not negated and text.lower() == "or":
            if alternatives[-1] and not or_pending:
                or_pending = True
                continue
        words = tuple(_WORD.findall(text))
        if not words:
            continue  # punctuation alone: PostgreSQL ignores it too
        if or_pending:
            alternatives.append([])
            or_pending = False
        alternatives[-1].append(Term(_SPACE.sub(" ", text.strip()), words, negated))
    if or_pending:
        alternatives[-1].append(Term("or", ("or",)))
    count = sum(len(term.words) for terms in alternatives for term in terms)
    if count == 0:
        raise SearchQueryError("The search has no word to look for: type at least one word.")
    if count > MAX_WORDS:
        raise SearchQueryError(
            f"The search has too many words: at most {MAX_WORDS} (this one has {count:,})."
        )
    return SearchQuery(tuple(tuple(terms) for terms in alternatives if terms))
