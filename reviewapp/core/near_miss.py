"""Why a refused cite looks like the text: a note for the reviewer, never a grounding.

The cite ladder (``cite.py``) refuses some loosenings on purpose: Unicode
normalisation, underscores, quote-mark and dash variants, invisible characters
and elisions could each let a cite resolve to text the author did not write.
A reviewer told "nothing found verbatim" beside a quote that looks identical to
the text needs to know which of those differences it is. ``NearMisses`` retries
a refused cite under those loosenings, on loosened copies of both sides, and
names the fewest it took. What grounds is unchanged: nothing here is consulted
by ``ground_claims``.
"""

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from reviewapp.core.cite import CiteSpan, Corpus
from reviewapp.core.whitespace import trim


def _mapper(pattern: str, to: str) -> Callable[[str], str]:
    compiled = re.compile(pattern)
    return lambda text: compiled.sub(to, text)


_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b\u2032\u02bc"
_DOUBLE_QUOTES = '"\u201c\u201d\u201e\u201f\u2033'
_DASHES = "-\u2010\u2011\u2012\u2013\u2014\u2015\u2212"


@dataclass(frozen=True, slots=True)
class _Loosening:
    name: str
    apply: Callable[[str], str]
    # For a one-for-one character map: the characters it makes alike, so the
    # note can say which of them the text and the quote use.
    alike: str = ""


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def _without_invisibles(text: str) -> str:
    return _INVISIBLE.sub("", text)


_single_alike = _mapper(f"[{_SINGLE_QUOTES[1:]}]", "'")
_double_alike = _mapper(f"[{_DOUBLE_QUOTES[1:]}]", '"')


def _quotes_alike(text: str) -> str:
    return _double_alike(_single_alike(text))


_LOOSENINGS = {
    loosening.name: loosening
    for loosening in (
        # Applied in this order. The two normalisations are alternatives: NFKC
        # is tried first and NFC named instead when it is enough.
        _Loosening("nfc", _nfc),
        _Loosening("nfkc", _nfkc),
        _Loosening("invisible", _without_invisibles),
        _Loosening("underscores", _mapper("_", " ")),
        _Loosening("quotes", _quotes_alike, alike=_SINGLE_QUOTES + _DOUBLE_QUOTES),
        _Loosening("dashes", _mapper(f"[{_DASHES[1:]}]", "-"), alike=_DASHES),
    )
}
_ORDER = tuple(_LOOSENINGS)
_STRONGEST = ("nfkc", "invisible", "underscores", "quotes", "dashes")

_ELLIPSIS = re.compile(r"\[\s*(?:\.\.\.|\u2026)\s*\]|\.\.\.|\u2026")
ELISION_NOTE = "matches only where the ellipsis (…) stands for text left out; not grounded"


def _loosen(text: str, names: tuple[str, ...]) -> str:
    for name in names:
        text = _LOOSENINGS[name].apply(text)
    return text


def _canonical(names) -> tuple[str, ...]:
    return tuple(name for name in _ORDER if name in names)


def _listed(phrases: list[str]) -> str:
    return phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]


def _shown(chars: set[str]) -> str:
    return " ".join(sorted(chars))


def _char_name(ch: str) -> str:
    # Every character _INVISIBLE matches has a name.
    return f"{unicodedata.name(ch).lower()} U+{ord(ch):04X}"


class NearMisses:
    """Near-miss notes for cites the ladder refused against one source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._corpora: dict[tuple[str, ...], Corpus] = {}

    def note(self, cite: str) -> str | None:
        """What differs between ``cite`` and the text, or None if no loosening explains it.

        Meant for a cite ``resolve_cite`` refused; a cite that resolves as it
        stands needs no loosening and gets None.
        """
        needed = self._needed(cite)
        if needed:
            return self._describe(cite, needed)
        if self._elided_parts_match(cite):
            return ELISION_NOTE
        return None

    # --- which loosenings it takes ------------------------------------------

    @cached_property
    def _touched(self) -> frozenset[str]:
        return frozenset(
            name for name in _STRONGEST if _LOOSENINGS[name].apply(self.source) != self.source
        )

    def _corpus(self, names: tuple[str, ...]) -> Corpus:
        corpus = self._corpora.get(names)
        if corpus is None:
            corpus = self._corpora[names] = Corpus(_loosen(self.source, names))
        return corpus

    def _match(self, names: tuple[str, ...], cite: str) -> CiteSpan | None:
        return self._corpus(names).resolve(_loosen(cite, names))

    def _needed(self, cite: str) -> tuple[str, ...]:
        # Each pass over a megabyte costs a normalisation of it, so a loosening
        # that changes neither side is left out before any is tried.
        relevant = [
            name
            for name in _STRONGEST
            if name in self._touched or _LOOSENINGS[name].apply(cite) != cite
        ]
        needed = _canonical(relevant)
        if not needed or self._match(needed, cite) is None:
            return ()
        for name in reversed(_STRONGEST):
            if name not in needed:
                continue
            without = tuple(n for n in needed if n != name)
            if self._match(without, cite) is not None:
                needed = without
            elif name == "nfkc":
                weaker = _canonical({"nfc", *without})
                if self._match(weaker, cite) is not None:
                    needed = weaker
        return needed

    # --- saying what differs ----------------------------------------------------

    def _describe(self, cite: str, needed: tuple[str, ...]) -> str:
        span = self._match(needed, cite)
        assert span is not None
        text = self._original_region(needed, span)
        quote = _loosen(cite, tuple(n for n in needed if n in ("nfc", "nfkc")))
        phrases = []
        for name in needed:
            if name == "nfc":
                phrases.append("after Unicode normalisation (NFC/NFD)")
            elif name == "nfkc":
                phrases.append(
                    "after compatibility normalisation (NFKC: full-width forms, ligatures "
                    "and the like)"
                )
            elif name == "invisible":
                hidden = set(_INVISIBLE.findall(text)) | set(_INVISIBLE.findall(quote))
                phrases.append(
                    "with invisible characters removed ("
                    + ", ".join(_char_name(ch) for ch in sorted(hidden))
                    + ")"
                )
            else:
                phrases.append(self._alike_phrase(name, text, quote))
        return "matches only " + _listed(phrases) + "; not grounded"

    @staticmethod
    def _alike_phrase(name: str, text: str, quote: str) -> str:
        what = {
            "underscores": "with underscores read as spaces",
            "quotes": "with quote marks made alike",
            "dashes": "with dashes and hyphens made alike",
        }[name]
        alike = _LOOSENINGS[name].alike
        in_text = {ch for ch in text if ch in alike}
        in_quote = {ch for ch in quote if ch in alike}
        if in_text != in_quote and in_text and in_quote:
            return f"{what} (the text has {_shown(in_text)}, the quote {_shown(in_quote)})"
        return what

    def _original_region(self, needed: tuple[str, ...], span: CiteSpan) -> str:
        """The matched text before the character maps; they keep every offset,
        and a removal of invisibles is undone through the offsets it kept."""
        normalised = _loosen(self.source, tuple(n for n in needed if n in ("nfc", "nfkc")))
        if "invisible" not in needed:
            return normalised[span.start : span.end]
        removed = [m.start() for m in _INVISIBLE.finditer(normalised)]

        def original(index: int) -> int:
            for position in removed:
                if position > index:
                    break
                index += 1
            return index

        return normalised[original(span.start) : original(span.end - 1) + 1]

    # --- elisions -----------------------------------------------------------------

    def _elided_parts_match(self, cite: str) -> bool:
        if not _ELLIPSIS.search(cite):
            return False
        parts = [part for part in map(trim, _ELLIPSIS.split(cite)) if part]
        if not parts:
            return False
        end = 0
        for part in parts:
            span = self._corpus(()).resolve(part)
            if span is None or span.start < end:
                return False
            end = span.end
        return True
