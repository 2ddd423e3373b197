"""Resolve a quoted citation to the exact span of the source it quotes, and
ground a proposal's claims through it.

Port of ``reference/quorum-rs_cite.rs``; ``conformance/cite_vectors.json`` pins
the behaviour. A cite is tried as each of its de-decorated candidate forms in
turn, and for each form as an exact substring and then as a substring after
both sides are normalised (emphasis markers dropped, whitespace collapsed,
case folded). The first hit wins and is reported as the original source text.

Underscores, spaced asterisks, interior punctuation, Unicode width or
confusable variants and elided (``...``) material are deliberately left alone:
each would let a cite resolve to text the author did not write, and rejecting
a real quote is a smaller harm than accepting a fabricated one.

Offsets are code points, so ``source[span.start:span.end] == span.text``.
"""

import re
from array import array
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from itertools import compress
from typing import ClassVar

# The reference's whitespace, not `str.isspace()`'s, which would let cites resolve
# that the reference rejects.
from reviewapp.core.whitespace import WHITESPACE as _WHITESPACE
from reviewapp.core.whitespace import WHITESPACE_SET as _WHITESPACE_SET
from reviewapp.core.whitespace import trim as _trim

_WHITESPACE_RUN = re.compile(f"[{re.escape(_WHITESPACE)}]+")
_INNER_WHITESPACE = re.compile(f"[{re.escape(_WHITESPACE)}]{{2,}}")
_ASTERISK_RUN = re.compile(r"\*+")

_QUOTE_PAIRS = frozenset(
    {
        ('"', '"'),
        ("'", "'"),
        ("\u201c", "\u201d"),
        ("\u2018", "\u2019"),
        ("\xab", "\xbb"),
        ("`", "`"),
    }
)
_LABEL_SEPARATORS = (": ", " \u2014 ", " - ", " \u2013 ")


@dataclass(frozen=True, slots=True)
class CiteSpan:
    """Where in the source a cite came from, in code points.

    Browsers count UTF-16 units and storage layers often count UTF-8 bytes;
    both diverge from code points as soon as the source is not ASCII, so
    convert explicitly with :meth:`utf16_range` / :meth:`byte_range`.
    """

    text: str
    start: int
    end: int

    def utf16_range(self, source: str) -> tuple[int, int]:
        """``(start, end)`` in UTF-16 code units; ``source`` is the string resolved against."""
        # surrogatepass: a lone surrogate is one unit, as a JS string counts it.
        start = len(source[: self.start].encode("utf-16-le", "surrogatepass")) // 2
        width = len(source[self.start : self.end].encode("utf-16-le", "surrogatepass")) // 2
        return start, start + width

    def byte_range(self, source: str) -> tuple[int, int]:
        """``(start, end)`` in UTF-8 bytes; ``source`` is the string resolved against."""
        start = len(source[: self.start].encode("utf-8", "surrogatepass"))
        return start, start + len(source[self.start : self.end].encode("utf-8", "surrogatepass"))


def _span_of(source: str, start: int, end: int) -> CiteSpan:
    # The span covers the words, never the markup: without this, quoting
    # `**No Tribunal**` literally and quoting `no tribunal` would disagree.
    while start < end and source[start] == "*":
        start += 1
    while end > start and source[end - 1] == "*":
        end -= 1
    return CiteSpan(source[start:end], start, end)


def _strip_line_markers(line: str) -> str:
    # Blockquote `>`, bullets, then `1.` / `2)` numbering; each strip takes a
    # whole run, as Rust's `trim_start_matches` does.
    return _trim(
        line.lstrip(_WHITESPACE).lstrip(">").lstrip("-*\u2022").lstrip("0123456789").lstrip(".)")
    )


def _unwrap_quotes(s: str) -> str | None:
    if len(s) >= 2 and (s[0], s[-1]) in _QUOTE_PAIRS:
        return s[1:-1]
    return None


def _candidates(cite: str) -> list[str]:
    """De-decorated forms of ``cite``, most specific first, trimmed and distinct."""
    out: list[str] = []

    def push(s: str) -> None:
        s = _trim(s)
        if s and s not in out:
            out.append(s)

    trimmed = _trim(cite)
    push(trimmed)
    # Split on "\n" only, as Rust's `str::lines()` does: `splitlines()` would
    # also break on U+2028, \x0b, \x1c... The "\r" of a CRLF goes in the per-line trim.
    deblocked = " ".join(_strip_line_markers(line) for line in trimmed.split("\n"))
    push(deblocked)
    for sep in _LABEL_SEPARATORS:
        pos = deblocked.find(sep)
        if pos >= 0:
            push(deblocked[pos + len(sep) :])
    for form in list(out):
        inner = _unwrap_quotes(form)
        if inner is not None:
            push(inner)
    return out


@dataclass(frozen=True, slots=True)
class _Normalised:
    text: str
    # origin[j] is the source index of the char that produced text[j].
    origin: array


def _normalise(s: str) -> _Normalised:
    """Drop emphasis runs, collapse whitespace runs, lowercase per char.

    Built from regex and slice operations rather than a per-char loop, since a
    proposal can run to megabytes.
    """
    n = len(s)
    emitted = bytearray(b"\x01") * n
    kept: list[str] = []
    pos = 0
    for run in _ASTERISK_RUN.finditer(s):
        a, b = run.span()
        # A run with whitespace or a boundary on both sides is arithmetic
        # (`a * b`), not markup, and stays.
        if (a == 0 or s[a - 1] in _WHITESPACE_SET) and (b == n or s[b] in _WHITESPACE_SET):
            continue
        emitted[a:b] = bytes(b - a)
        kept.append(s[pos:a])
        pos = b
    kept.append(s[pos:])
    collapsed = _WHITESPACE_RUN.sub(" ", "".join(kept)).strip(" ")

    # A whitespace run becomes one space mapped to its first char, and none at
    # either end. A dropped run always borders a visible char, so dropping
    # never merges two runs: the runs in `s` are exactly the ones collapsed.
    for run in _INNER_WHITESPACE.finditer(s):
        a, b = run.span()
        emitted[a + 1 : b] = bytes(b - a - 1)
    if n and s[0] in _WHITESPACE_SET:
        emitted[0] = 0
    tail = len(s.rstrip(_WHITESPACE))
    if tail < n:
        emitted[tail] = 0
    origin = array("q", compress(range(n), emitted))

    # Rust lowercases each char without context; `str.lower()` would turn a
    # word-final capital sigma into "ς" where Rust gives "σ".
    folded = collapsed.replace("\u03a3", "\u03c3").lower()
    if len(folded) != len(collapsed):
        # A char lowered to several (İ -> i + U+0307): each output char maps
        # back to the char that produced it.
        lowered = [ch.lower() for ch in collapsed]
        folded = "".join(lowered)
        origin = array("q", (o for o, low in zip(origin, lowered, strict=True) for _ in low))
    return _Normalised(folded, origin)


class Corpus:
    """A source prepared for resolving many cites: normalised once, on first need."""

    def __init__(self, source: str) -> None:
        self.source = source

    @cached_property
    def _normalised(self) -> _Normalised:
        return _normalise(self.source)

    def resolve(self, cite: str) -> CiteSpan | None:
        for form in _candidates(cite):
            idx = self.source.find(form)
            if idx >= 0:
                return _span_of(self.source, idx, idx + len(form))
            span = self._find_normalised(form)
            if span is not None:
                return span
        return None

    def _find_normalised(self, form: str) -> CiteSpan | None:
        needle = _normalise(form).text
        if not needle:
            return None
        haystack = self._normalised
        idx = haystack.text.find(needle)
        if idx < 0:
            return None
        # The end comes from the last matched char, not the char after the
        # match: that one may lie past dropped markers (a closing `**`).
        last = haystack.origin[idx + len(needle) - 1]
        return _span_of(self.source, haystack.origin[idx], last + 1)


def resolve_cite(source: str, cite: str) -> CiteSpan | None:
    """The span of ``source`` that ``cite`` quotes, or None if it quotes nothing there."""
    return Corpus(source).resolve(cite)


def resolve_cites(source: str, cites: list[str]) -> list[CiteSpan | None]:
    """``resolve_cite`` for each cite, normalising ``source`` at most once."""
    corpus = Corpus(source)
    return [corpus.resolve(cite) for cite in cites]


# ─── Grounding ───────────────────────────────────────────────────────────────

# How many times an evaluator may be asked to re-quote unresolvable cites
# before its evaluation is accepted without them. Counted on its own budget so
# re-quoting can never exhaust the retries transport or parse failures need.
REQUOTE_BUDGET = 2

# Characters (code points) of the thought process the evaluator prompt inlines.
# Prompt building and grounding must share it: a cite may only ground in text
# the evaluator was shown. 4000 (~1k tokens) covers the opening reasoning, where
# the approach is set out, without a long trace crowding the answer body out.
EVAL_THOUGHT_LIMIT = 4000


class GroundingPolicy(StrEnum):
    """What to do with a claim whose cite resolves to nothing."""

    # Drop it; the caller can ask the evaluator to re-quote.
    REJECT = "reject"
    # Keep it as written; for backends that cannot be asked again, where
    # dropping would silently destroy evaluator signal.
    REPAIR = "repair"


@dataclass(frozen=True, slots=True)
class ClaimInput:
    cite: str
    assessment: str = "verified"
    note: str = ""
    claim_id: str | None = None


@dataclass(frozen=True, slots=True)
class AnswerBodyAnchor:
    """The cite lies in the answer body, at these UTF-16 offsets (what a DOM Range counts)."""

    kind: ClassVar[str] = "answer_body"
    start_utf16: int
    end_utf16: int

    def to_dict(self) -> dict:
        return {"kind": self.kind, "start_utf16": self.start_utf16, "end_utf16": self.end_utf16}


@dataclass(frozen=True, slots=True)
class ThoughtWindowAnchor:
    """The cite lies only in the shown thought window; the answer body has no offsets for it."""

    kind: ClassVar[str] = "thought_window"

    def to_dict(self) -> dict:
        return {"kind": self.kind}


@dataclass(slots=True)
class GroundedClaim:
    cite: str
    text: str | None
    claim_id: str | None
    assessment: str
    note: str
    anchor: AnswerBodyAnchor | ThoughtWindowAnchor | None

    @property
    def resolved(self) -> bool:
        """Whether the cite was matched to a span (a kept back-reference was not)."""
        return self.anchor is not None

    def to_dict(self) -> dict:
        out = {
            "cite": self.cite,
            "text": self.text,
            "claim_id": self.claim_id,
            "assessment": self.assessment,
            "note": self.note,
        }
        # Absent rather than null, so "did not resolve" cannot be read as
        # "resolved at offset 0".
        if self.anchor is not None:
            out["anchor"] = self.anchor.to_dict()
        return out


@dataclass(frozen=True, slots=True)
class UnresolvedCite:
    target_id: str
    cite: str
    # What the lens said about the cite it could not ground: the record keeps
    # its own words, never a default.
    assessment: str = ""
    note: str = ""
    claim_id: str | None = None


@dataclass(slots=True)
class GroundingResult:
    claims: list[GroundedClaim]
    unresolved: list[UnresolvedCite]


_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_U64 = (1 << 64) - 1


def _claim_fingerprint(target_id: str, text: str, round: int) -> str:
    """Stable 6-hex id from what the claim is, so reordering never renumbers it.

    FNV-1a spelled out so the id cannot change under a runtime upgrade, which
    would silently break cross-round tracking. ``round`` must fit in a u32.
    """
    data = b"\x1f".join(
        (
            target_id.encode("utf-8", "surrogatepass"),
            text.encode("utf-8", "surrogatepass"),
            round.to_bytes(4, "little"),
        )
    )
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _U64
    return f"{h & 0xFFFFFF:06x}"


def ground_claims(
    *,
    content: str,
    thought_process: str,
    claims: list[ClaimInput],
    target_id: str,
    round: int = 1,
    policy: GroundingPolicy,
) -> GroundingResult:
    """Ground each claim's cite against one proposal.

    A cite is resolved in ``content`` first (an offset there is what a client
    can highlight), then in the first ``EVAL_THOUGHT_LIMIT`` characters of
    ``thought_process`` — exactly what the evaluator was shown. Misses are
    per claim and always reported; ``policy`` decides whether they are kept.
    A claim that arrives without an id gets a stable fingerprint.
    """
    body = resolve_cites(content, [claim.cite for claim in claims])
    missed = [claim.cite for claim, span in zip(claims, body, strict=True) if span is None]
    in_thoughts = iter(resolve_cites(thought_process[:EVAL_THOUGHT_LIMIT], missed))

    grounded: list[GroundedClaim] = []
    unresolved: list[UnresolvedCite] = []
    for claim, span in zip(claims, body, strict=True):
        if span is not None:
            text, anchor = span.text, AnswerBodyAnchor(*span.utf16_range(content))
        elif (shown := next(in_thoughts)) is not None:
            text, anchor = shown.text, ThoughtWindowAnchor()
        else:
            text = anchor = None
        claim_id = claim.claim_id
        has_id = bool(claim_id and _trim(claim_id))
        if anchor is not None:
            if not has_id:
                claim_id = _claim_fingerprint(target_id, text, round)
        else:
            blank = not _trim(claim.cite)
            # A blank cite is legitimate only as a back-reference to an earlier
            # claim id; blank and id-less it carries no identity, so it is a miss.
            if not (blank and has_id):
                unresolved.append(
                    UnresolvedCite(
                        target_id,
                        "" if blank else claim.cite,
                        claim.assessment,
                        claim.note,
                        claim.claim_id,
                    )
                )
                if policy is GroundingPolicy.REJECT:
                    continue
        grounded.append(
            GroundedClaim(claim.cite, text, claim_id, claim.assessment, claim.note, anchor)
        )
    return GroundingResult(grounded, unresolved)
