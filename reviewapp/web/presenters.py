"""Shape stored rows into what the review pages show.

Nothing here queries the database: views fetch the rows (a fixed number of
queries per page), these functions only arrange them (near-miss notes, which
take a second to work out, are kept in the cache). Who holds an escalation and
what a user may do with it is the model's to say (`Escalation.standing`).
"""

import unicodedata
from dataclasses import dataclass, field
from hashlib import sha256

from django.core.cache import cache

from reviewapp.core.cite import EVAL_THOUGHT_LIMIT
from reviewapp.core.near_miss import NearMisses
from reviewapp.guarantee.explain import held_explanation, held_summary
from reviewapp.review.models import Claim, Escalation, Judgement, LensFailure, Proposal

REASON_LABELS = {
    Escalation.Reason.NO_QUORUM: "No quorum",
    Escalation.Reason.INCONCLUSIVE: "Inconclusive",
    Escalation.Reason.LENS_FAILED: "Lens failed",
    Escalation.Reason.SIGN_OFF: "Sign-off",
    Escalation.Reason.REVIEWERS_DISAGREE: "Reviewers disagree",
    Escalation.Reason.AUDIT: "Audit",
    Escalation.Reason.BELOW_GUARANTEE: "Below guarantee",
}
OUTCOME_LABELS = {
    "no_quorum": "no quorum",
    "reached_pass": "reached pass",
    "reached_fail": "reached fail",
}
# Lens colours are assigned by position on the panel; the CSS defines this many.
LENS_SLOTS = 8


_JOINERS = {"\u200d", "\ufe0f", "\ufe0e"}


def excerpt(text: str | None, limit: int = 140) -> str:
    """`text` cut to about `limit` characters, never inside a combining or ZWJ sequence."""
    text = text or ""
    if len(text) <= limit:
        return text
    cut = limit
    # Keep a base character with the marks and joiners that follow it.
    while cut < len(text) and (
        unicodedata.combining(text[cut]) or text[cut] in _JOINERS or text[cut - 1] == "\u200d"
    ):
        cut += 1
    return text[:cut].rstrip() + "…"


def reason_badges(reasons) -> list[dict]:
    return [
        {"code": code, "label": REASON_LABELS.get(code, str(code).replace("_", " "))}
        for code in reasons or []
    ]


def guarantee_line(escalation: Escalation) -> str:
    """For the inbox row of a proposal held by the guarantee: what the machine would have
    done and the figures of its vote pattern ("" for any other escalation)."""
    held = (escalation.detail or {}).get("guarantee")
    if Escalation.Reason.BELOW_GUARANTEE not in (escalation.reasons or []) or not held:
        return ""
    return held_summary(held)


def _names(names) -> str:
    names = [str(n) for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def escalation_reasons(escalation: Escalation, tally: dict | None) -> list[dict]:
    """Every reason the escalation has, each explained in words (a badge alone says little)."""
    detail = escalation.detail or {}
    tally = tally or {}
    out = []
    for badge in reason_badges(escalation.reasons):
        code = badge["code"]
        if code == Escalation.Reason.NO_QUORUM:
            text = (
                f"{tally.get('passed', 0)} lens{'es' if tally.get('passed', 0) != 1 else ''} "
                f"passed and {tally.get('failed', 0)} failed of {tally.get('asked', 0)} asked; "
                f"{tally.get('need', 0)} had to agree, so the panel decided nothing."
                if tally
                else "The panel's lenses did not agree enough to decide."
            )
        elif code == Escalation.Reason.LENS_FAILED:
            failed = detail.get("failed_lenses") or []
            who = _names(failed) if failed else "A lens"
            text = (
                f"{who} never answered (a lens error, not a fail verdict); "
                "without every judgement the machines may reject but never approve."
            )
        elif code == Escalation.Reason.INCONCLUSIVE:
            checkers = detail.get("inconclusive_checkers") or []
            text = (
                "; ".join(
                    f"checker {c['checker']} could not decide: {c['reason']}" for c in checkers
                )
                if checkers
                else "A checker could not decide."
            ) + "."
        elif code == Escalation.Reason.SIGN_OFF:
            text = "The panel reached pass, and this panel asks a person to sign off every pass."
        elif code == Escalation.Reason.BELOW_GUARANTEE and detail.get("guarantee"):
            text = held_explanation(detail["guarantee"])
        elif code == Escalation.Reason.REVIEWERS_DISAGREE:
            text = (
                f"The {escalation.reviews_needed} reviews disagree: "
                "a member of the reconcilers group decides, seeing every review."
            )
        else:
            text = ""
        out.append({**badge, "text": text})
    return out


def unresolved_why(*, dropped: bool, backend: str, requote_rounds: int) -> str:
    """Why a cite is unresolved, truthfully: who was asked what, which policy kept or dropped it."""
    if not dropped:
        return (
            "kept unanchored by the panel's repair policy (no lens is asked to re-quote under it)"
        )
    if backend == "external":
        return "dropped: an external lens answers once over the API and is never asked to re-quote"
    if requote_rounds:
        asks = f"{requote_rounds} re-quote request{'s' if requote_rounds != 1 else ''}"
        return f"dropped after {asks}: the re-quote budget is spent"
    return "dropped by the panel's reject policy without a re-quote request"


def _digest(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def near_miss_notes(content: str, thought_process: str, cites: list[str]) -> dict[str, str]:
    """For each refused cite, what differs from the text where a loosening the
    ladder refuses on purpose explains it, else "" (see core/near_miss.py).

    Searched where grounding searched: the content, then the thought window.
    Cached for good under the texts' digest: a proposal's text never changes,
    and retrying a megabyte under several loosenings takes a second or two.
    """
    thought = thought_process[:EVAL_THOUGHT_LIMIT]
    texts = _digest(_digest(content) + _digest(thought))
    keys = {cite: f"near-miss:1:{texts}:{_digest(cite)}" for cite in set(cites) if cite}
    known = cache.get_many(list(keys.values()))
    notes = {cite: known[key] for cite, key in keys.items() if key in known}
    in_content, in_thought = NearMisses(content), NearMisses(thought)
    fresh = {}
    for cite, key in keys.items():
        if cite in notes:
            continue
        note = in_content.note(cite)
        if note is None and (note := in_thought.note(cite)) is not None:
            note = f"in the thought process, {note}"
        notes[cite] = fresh[key] = note or ""
    if fresh:
        cache.set_many(fresh, timeout=None)
    return notes


def tally_text(tally: dict | None) -> str:
    """'2 pass · 1 fail of 3, need 3 → no quorum', or '' before the panel is tallied."""
    if not tally:
        return ""
    outcome = OUTCOME_LABELS.get(tally.get("outcome"), str(tally.get("outcome", "")))
    return (
        f"{tally.get('passed', 0)} pass · {tally.get('failed', 0)} fail "
        f"of {tally.get('asked', 0)}, need {tally.get('need', 0)} → {outcome}"
    )


def tally_outcome(tally: dict | None) -> str:
    return (tally or {}).get("outcome", "")


# --- the proposal page --------------------------------------------------------


@dataclass
class LensCard:
    slot: int
    name: str
    version: int | None = None
    verdict: str | None = None
    rationale: str = ""
    failure: str | None = None
    claims: list[dict] = field(default_factory=list)

    @property
    def pending(self) -> bool:
        return self.verdict is None and self.failure is None


@dataclass
class ProposalView:
    lenses: list[LensCard]
    spans: list[dict]
    unresolved: list[dict]
    thought_claims: list[dict]
    highlight_data: dict
    answered: int
    asked: int
    # The claims × lenses grid: one row per cited span (or unanchored cite), a cell per lens.
    grid: list[dict] = field(default_factory=list)


def lenses_disagree(claims: list[dict]) -> bool:
    """One lens calls the span verified and another refuted."""
    verified = {c["lens"] for c in claims if c["assessment"] == Claim.Assessment.VERIFIED}
    refuted = {c["lens"] for c in claims if c["assessment"] == Claim.Assessment.REFUTED}
    return bool(verified and refuted and len(verified | refuted) > 1)


def _grid(cards: list[LensCard], rows: list[tuple[str, str, list[dict]]]) -> list[dict]:
    """Rows of (where, excerpt, claims) as grid rows with one cell (a list of claims) per lens."""
    grid = []
    for where, text, claims in rows:
        by_lens: dict[str, list[dict]] = {}
        for c in claims:
            by_lens.setdefault(c["lens"], []).append(c)
        grid.append(
            {
                "where": where,
                "excerpt": text,
                "conflict": lenses_disagree(claims),
                "cells": [{"lens": card, "claims": by_lens.get(card.name, [])} for card in cards],
            }
        )
    return grid


def proposal_view(
    proposal: Proposal,
    judgements: list[Judgement],
    failures: list[LensFailure],
    marks: dict[int, str] | None = None,
) -> ProposalView:
    """Group a proposal's claims by span and lens for the page and its highlighter.

    `judgements` must have their claims prefetched; `marks` are the reviewer's
    marks by claim id, once the proposal is decided. The lens cards first
    (`_lens_cards`), then each claim in its place (`_place_claims`), the
    spans in text order (`_ordered_spans`), what the highlighter reads
    (`_highlight_data`) and the claims × lenses grid (`_grid`).
    """
    cards = _lens_cards(proposal, judgements, failures)
    placed = _place_claims(proposal, judgements, cards, marks or {})
    ordered = _ordered_spans(placed.spans)
    lens_cards = list(cards.values())
    grid = _grid(
        lens_cards,
        [("answer", span["excerpt"], span["claims"]) for span in ordered]
        + [("thought", c["excerpt"], [c]) for c in placed.thought]
        + [("unanchored", c["excerpt"], [c]) for c in placed.unresolved],
    )
    return ProposalView(
        grid=grid,
        lenses=lens_cards,
        spans=ordered,
        unresolved=placed.unresolved,
        thought_claims=placed.thought,
        highlight_data=_highlight_data(lens_cards, ordered, placed.thought),
        answered=proposal.lenses_answered,
        asked=proposal.lenses_asked,
    )


def _lens_cards(proposal: Proposal, judgements, failures) -> dict[str, LensCard]:
    """A card per lens, in panel order (then any lens only the answers name), each with its
    colour slot, its verdict or its failure."""
    snapshot_lenses = [entry["name"] for entry in (proposal.panel_snapshot or {}).get("lenses", [])]
    slots: dict[str, int] = {}
    for name in (
        snapshot_lenses + [j.lens_name for j in judgements] + [f.lens_name for f in failures]
    ):
        slots.setdefault(name, len(slots))
    cards = {name: LensCard(slot=slot % LENS_SLOTS, name=name) for name, slot in slots.items()}
    for failure in failures:
        card = cards[failure.lens_name]
        card.version = failure.lens_version
        card.failure = failure.error
    for judgement in judgements:
        card = cards[judgement.lens_name]
        card.version = judgement.lens_version
        card.verdict = judgement.verdict
        card.rationale = judgement.rationale
    return cards


@dataclass
class _Placed:
    """Every claim where the page shows it: by its span of the answer, in the thought
    process, or unresolved (with why, and what a near miss differs by)."""

    spans: dict[tuple[int, int], dict] = field(default_factory=dict)
    thought: list[dict] = field(default_factory=list)
    unresolved: list[dict] = field(default_factory=list)


def _claim_item(judgement: Judgement, card: LensCard, claim, marks: dict[int, str]) -> dict:
    return {
        "lens": judgement.lens_name,
        "slot": card.slot,
        "verdict": judgement.verdict,
        "assessment": claim.assessment,
        "note": claim.note,
        "cite": claim.cite,
        "text": claim.text,
        "excerpt": excerpt(claim.text if claim.text is not None else claim.cite, 160),
        "claim_id": claim.claim_id,
        "pk": claim.pk,
        "mark": marks.get(claim.pk, ""),
        "kind": claim.anchor_kind,
        "dropped": claim.dropped,
        "span": None,
    }


def _place_claims(proposal: Proposal, judgements, cards, marks) -> _Placed:
    backends = {
        entry["name"]: entry.get("backend", "")
        for entry in (proposal.panel_snapshot or {}).get("lenses", [])
    }
    placed = _Placed()
    for judgement in judgements:
        card = cards[judgement.lens_name]
        for claim in judgement.claims.all():
            item = _claim_item(judgement, card, claim, marks)
            if claim.anchor_kind == Claim.AnchorKind.ANSWER_BODY and not claim.dropped:
                key = (claim.start_utf16, claim.end_utf16)
                span = placed.spans.get(key)
                if span is None:
                    span = placed.spans[key] = {
                        "start": claim.start_utf16,
                        "end": claim.end_utf16,
                        "text": claim.text or "",
                        "excerpt": excerpt(claim.text, 140),
                        "claims": [],
                    }
                span["claims"].append(item)
                item["span"] = span
            elif claim.anchor_kind == Claim.AnchorKind.THOUGHT_WINDOW and not claim.dropped:
                placed.thought.append(item)
            else:
                item["why"] = unresolved_why(
                    dropped=claim.dropped,
                    backend=backends.get(judgement.lens_name, ""),
                    requote_rounds=judgement.requote_rounds,
                )
                placed.unresolved.append(item)
            card.claims.append(item)
    if placed.unresolved:
        notes = near_miss_notes(
            proposal.content, proposal.thought_process, [c["cite"] for c in placed.unresolved]
        )
        for item in placed.unresolved:
            item["near_miss"] = notes.get(item["cite"], "")
    return placed


def _ordered_spans(spans: dict[tuple[int, int], dict]) -> list[dict]:
    """The cited spans in text order, numbered, each with its lenses and whether they disagree."""
    ordered = sorted(spans.values(), key=lambda s: (s["start"], s["end"]))
    for index, span in enumerate(ordered):
        span["id"] = index
        span["lens_slots"] = sorted({c["slot"] for c in span["claims"]})
        span["lens_count"] = len({c["lens"] for c in span["claims"]})
        span["conflict"] = lenses_disagree(span["claims"])
    return ordered


def _highlight_data(cards: list[LensCard], ordered: list[dict], thought: list[dict]) -> dict:
    """What the page's highlighter reads (as JSON): the lenses, the spans with their claims,
    and the thought-process claims, which carry no offsets: the page finds the resolved
    text in the thought process, which is where grounding found it."""

    def claim(c: dict, **extra) -> dict:
        return {
            "lens": c["lens"],
            "slot": c["slot"],
            "assessment": c["assessment"],
            "note": c["note"],
            **extra,
        }

    return {
        "lenses": [{"slot": card.slot, "name": card.name} for card in cards],
        "spans": [
            {
                "id": span["id"],
                "start": span["start"],
                "end": span["end"],
                "text": span["text"],
                "claims": [claim(c) for c in span["claims"]],
            }
            for span in ordered
        ],
        "thought": [claim(c, text=c["text"] or "") for c in thought],
    }
