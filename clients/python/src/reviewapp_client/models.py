"""What the API answers, as typed, frozen dataclasses.

Each `from_api` checks the shape it reads and raises `ShapeError` naming the
field; the client turns that into `APIResponseValidationError`. Fields the API
adds later are ignored (a proposal keeps its whole answer in `raw`), and
strings such as statuses are not checked against today's values, so a newer
server does not break an older client.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

FINAL = ("decided", "escalated", "withdrawn")

T = TypeVar("T")
_Absent = object()
_FRACTION = re.compile(r"\.(\d+)")


class ShapeError(Exception):
    """An answer does not have the documented shape; the message names the field."""


def _check(value: Any, types: tuple[type, ...], at: str) -> Any:
    # bool is an int to isinstance, never to the API.
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return value
    wanted = " or ".join("null" if t is type(None) else t.__name__ for t in types)
    raise ShapeError(f"{at}: expected {wanted}, got {type(value).__name__}")


def obj(value: Any, at: str) -> Mapping[str, Any]:
    return _check(value, (dict,), at)


def req(data: Mapping[str, Any], key: str, *types: type, at: str) -> Any:
    """A field that must be present, of one of `types` (include `type(None)` if nullable)."""
    value = data.get(key, _Absent)
    if value is _Absent:
        raise ShapeError(f"{at}.{key} is missing")
    return _check(value, types, f"{at}.{key}")


def opt(data: Mapping[str, Any], key: str, *types: type, at: str, default: Any = None) -> Any:
    """A field older servers do not send: absent or null gives `default`."""
    value = data.get(key)
    return default if value is None else _check(value, types, f"{at}.{key}")


def items(data: Mapping[str, Any], key: str, parse, *, at: str, required: bool = True) -> list:
    values = req(data, key, list, at=at) if required else opt(data, key, list, at=at, default=[])
    return [parse(obj(v, f"{at}.{key}[{i}]"), f"{at}.{key}[{i}]") for i, v in enumerate(values)]


def when(
    data: Mapping[str, Any], key: str, *, at: str, nullable: bool = False, optional: bool = False
) -> datetime | None:
    """A time; `optional`: one older servers do not send (absent or null: None)."""
    if optional and data.get(key) is None:
        return None
    text = req(data, key, str, *((type(None),) if nullable else ()), at=at)
    if text is None:
        return None
    # Python 3.10's fromisoformat reads neither a "Z" suffix nor fractions of
    # other than 3 or 6 digits.
    text = _FRACTION.sub(lambda m: "." + m[1].ljust(6, "0")[:6], text.replace("Z", "+00:00"))
    try:
        return datetime.fromisoformat(text)
    except ValueError as exc:
        raise ShapeError(f"{at}.{key}: not an ISO 8601 time: {text[:40]!r}") from exc


@dataclass(frozen=True)
class Submitted:
    id: int
    status: str
    url: str
    created: bool  # False: this external_ref was already submitted with this body

    @classmethod
    def from_api(cls, data: Mapping, at: str = "submitted", *, created: bool) -> Submitted:
        return cls(
            id=req(data, "id", int, at=at),
            status=req(data, "status", str, at=at),
            url=req(data, "url", str, at=at),
            created=created,
        )


@dataclass(frozen=True)
class Progress:
    answered: int
    asked: int

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> Progress:
        return cls(req(data, "answered", int, at=at), req(data, "asked", int, at=at))


@dataclass(frozen=True)
class Tally:
    """The lenses' count against the panel's quorum; `outcome` is
    "reached_pass", "reached_fail" or "no_quorum"."""

    passed: int
    failed: int
    asked: int
    need: int
    outcome: str

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> Tally:
        return cls(
            passed=req(data, "passed", int, at=at),
            failed=req(data, "failed", int, at=at),
            asked=req(data, "asked", int, at=at),
            need=req(data, "need", int, at=at),
            outcome=req(data, "outcome", str, at=at),
        )


@dataclass(frozen=True)
class Anchor:
    """Where a claim's cite sits: in the answer body (UTF-16 offsets, as a DOM
    Range counts) or in the agent's thought process ("thought_window")."""

    kind: str
    start_utf16: int | None = None
    end_utf16: int | None = None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> Anchor:
        return cls(
            kind=req(data, "kind", str, at=at),
            start_utf16=opt(data, "start_utf16", int, at=at),
            end_utf16=opt(data, "end_utf16", int, at=at),
        )


@dataclass(frozen=True)
class Claim:
    """A grounded cite: `text` is the exact span of the proposal it resolved to."""

    claim_id: str
    cite: str
    text: str | None
    assessment: str  # "verified" | "contested" | "refuted"
    anchor: Anchor | None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> Claim:
        anchor = req(data, "anchor", dict, type(None), at=at)
        return cls(
            claim_id=req(data, "claim_id", str, at=at),
            cite=req(data, "cite", str, at=at),
            text=req(data, "text", str, type(None), at=at),
            assessment=req(data, "assessment", str, at=at),
            anchor=Anchor.from_api(anchor, f"{at}.anchor") if anchor is not None else None,
        )


@dataclass(frozen=True)
class UnresolvedCite:
    """A cite that matched nothing in the proposal, dropped from the claims."""

    cite: str
    assessment: str | None
    note: str
    claim_id: str

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> UnresolvedCite:
        return cls(
            cite=req(data, "cite", str, at=at),
            assessment=req(data, "assessment", str, type(None), at=at),
            note=req(data, "note", str, at=at),
            claim_id=req(data, "claim_id", str, at=at),
        )


@dataclass(frozen=True)
class Judgement:
    lens: str
    lens_version: int
    verdict: str  # "pass" | "fail"
    rationale: str
    claims: list[Claim] = field(default_factory=list)
    unresolved_cites: list[UnresolvedCite] = field(default_factory=list)

    @classmethod
    def from_api(cls, data: Mapping, at: str = "judgement") -> Judgement:
        return cls(
            lens=req(data, "lens", str, at=at),
            lens_version=req(data, "lens_version", int, at=at),
            verdict=req(data, "verdict", str, at=at),
            rationale=req(data, "rationale", str, at=at),
            claims=items(data, "claims", Claim.from_api, at=at),
            unresolved_cites=items(
                data, "unresolved_cites", UnresolvedCite.from_api, at=at, required=False
            ),
        )


@dataclass(frozen=True)
class LensFailure:
    """A lens that gave no judgement, and why (sent by servers that report it)."""

    lens: str
    kind: str
    message: str
    at: str | None  # when it failed, as the server wrote it
    lens_version: int | None = None
    attempts: int | None = None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> LensFailure:
        return cls(
            lens=req(data, "lens", str, at=at),
            kind=opt(data, "kind", str, at=at, default=""),
            message=opt(data, "message", str, at=at, default=""),
            at=opt(data, "at", str, at=at) or opt(data, "when", str, at=at),
            lens_version=opt(data, "lens_version", int, at=at),
            attempts=opt(data, "attempts", int, at=at),
        )


@dataclass(frozen=True)
class Evidence:
    """A deterministic checker's signed result; `reason` says why, e.g. why inconclusive."""

    checker: str
    version: int
    verdict: str  # "pass" | "fail" | "inconclusive"
    reason: str
    key_id: str
    signature: str
    payload: str

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> Evidence:
        return cls(
            checker=req(data, "checker", str, at=at),
            version=req(data, "version", int, at=at),
            verdict=req(data, "verdict", str, at=at),
            reason=req(data, "reason", str, at=at),
            key_id=req(data, "key_id", str, at=at),
            signature=req(data, "signature", str, at=at),
            payload=req(data, "payload", str, at=at),
        )


@dataclass(frozen=True)
class InconclusiveChecker:
    """A checker that could say neither pass nor fail, and why."""

    checker: str
    reason: str

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> InconclusiveChecker:
        return cls(checker=req(data, "checker", str, at=at), reason=req(data, "reason", str, at=at))


@dataclass(frozen=True)
class EscalationBrief:
    """The escalation of a proposal: its id is what `decide()` takes; the rest says why."""

    id: int
    status: str  # "open" | "claimed" | "reconcile" | "resolved" | "withdrawn"
    reasons: list[str]
    # Servers before issue 32 do not send these: empty then.
    explanation: str = ""
    lens_failures: list[LensFailure] = field(default_factory=list)
    inconclusive_checkers: list[InconclusiveChecker] = field(default_factory=list)
    # When the panel's review deadline falls, and what happens then: "reject" or
    # "approve" (a decision signed by the server with basis "fallback") or "keep_open".
    # None: no deadline (or a server before issue 46).
    due_at: datetime | None = None
    on_deadline: str | None = None

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> EscalationBrief:
        return cls(
            id=req(data, "id", int, at=at),
            status=req(data, "status", str, at=at),
            reasons=[_check(r, (str,), f"{at}.reasons") for r in req(data, "reasons", list, at=at)],
            due_at=when(data, "due_at", at=at, optional=True),
            on_deadline=opt(data, "on_deadline", str, at=at),
            explanation=opt(data, "explanation", str, at=at, default=""),
            lens_failures=items(data, "lens_failures", LensFailure.from_api, at=at, required=False),
            inconclusive_checkers=items(
                data, "inconclusive_checkers", InconclusiveChecker.from_api, at=at, required=False
            ),
        )


@dataclass(frozen=True)
class Escalation:
    """An escalation in the human inbox, and why it was raised."""

    id: int
    proposal: int
    status: str
    reasons: list[str]
    claimed_by: str | None
    created_at: datetime
    explanation: str = ""
    lens_failures: list[LensFailure] = field(default_factory=list)
    inconclusive_checkers: list[InconclusiveChecker] = field(default_factory=list)
    due_at: datetime | None = None  # as EscalationBrief's
    on_deadline: str | None = None

    @classmethod
    def from_api(cls, data: Mapping, at: str = "escalation") -> Escalation:
        brief = EscalationBrief.from_api(data, at)
        return cls(
            id=brief.id,
            proposal=req(data, "proposal", int, at=at),
            status=brief.status,
            reasons=brief.reasons,
            claimed_by=req(data, "claimed_by", str, type(None), at=at),
            created_at=when(data, "created_at", at=at),
            explanation=brief.explanation,
            lens_failures=brief.lens_failures,
            inconclusive_checkers=brief.inconclusive_checkers,
            due_at=brief.due_at,
            on_deadline=brief.on_deadline,
        )


@dataclass(frozen=True)
class ClaimMark:
    """A reviewer's mark on one cited claim: "correct", "incorrect" or "irrelevant"."""

    claim: int
    lens: str
    mark: str

    @classmethod
    def from_api(cls, data: Mapping, at: str = "claim") -> ClaimMark:
        return cls(
            claim=req(data, "claim", int, at=at),
            lens=req(data, "lens", str, at=at),
            mark=req(data, "mark", str, at=at),
        )


@dataclass(frozen=True)
class Review:
    """One reviewer's signed review that a decision rests on (its `hash` is named in the
    decision's signed payload); check them with `verify_decision_reviews`."""

    id: int
    reviewer: str
    outcome: str
    payload: str
    signature: str
    key_id: str
    hash: str

    @classmethod
    def from_api(cls, data: Mapping, at: str = "review") -> Review:
        return cls(
            id=req(data, "id", int, at=at),
            reviewer=req(data, "reviewer", str, at=at),
            outcome=req(data, "outcome", str, at=at),
            payload=req(data, "payload", str, at=at),
            signature=req(data, "signature", str, at=at),
            key_id=req(data, "key_id", str, at=at),
            hash=req(data, "hash", str, at=at),
        )


@dataclass(frozen=True)
class ReviewStatus:
    """A review was taken but decided nothing yet: `status` is "awaiting_reviews"
    (more reviews are needed) or "reconcile" (they disagree; a reconciler decides)."""

    status: str
    reviews: int
    reviews_needed: int

    @classmethod
    def from_api(cls, data: Mapping, at: str = "review status") -> ReviewStatus:
        return cls(
            status=req(data, "status", str, at=at),
            reviews=req(data, "reviews", int, at=at),
            reviews_needed=req(data, "reviews_needed", int, at=at),
        )


@dataclass(frozen=True)
class Fallback:
    """What made a fallback decision, as signed: the panel's `on_deadline`, the deadline,
    and how long the escalation waited."""

    on_deadline: str  # "reject" | "approve"
    due_at: datetime
    review_deadline_seconds: int

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> Fallback:
        return cls(
            on_deadline=req(data, "on_deadline", str, at=at),
            due_at=when(data, "due_at", at=at),
            review_deadline_seconds=req(data, "review_deadline_seconds", int, at=at),
        )


@dataclass(frozen=True)
class Decision:
    """A signed decision. `payload` is the exact signed bytes (RFC 8785 JSON);
    check it with `verify_decision(decision, keys)` against keys you pinned."""

    id: int
    proposal: int
    outcome: str  # "approved" | "rejected"
    basis: str  # "system" | "reviewer" | "fallback" (its panel's deadline decided, no person)
    decided_by: str
    rationale: str
    payload: str
    signature: str
    key_id: str
    hash: str
    # Only decisions signed before the ledger ordered them alone (payload v1) chain on
    # the previous decision's hash; None for every later one.
    prev_hash: str | None = None
    public_key: str | None = None  # informative only: verify with keys you trust
    # Its ledger entry (GET /api/ledger/proof/{ledger_index}); None until the ledger's
    # sequencer gives it one, moments after it was signed.
    ledger_index: int | None = None
    # A reviewer's annotations, as signed (empty for older servers and system decisions).
    claims: list[ClaimMark] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    wrong_reason: list[str] = field(default_factory=list)
    reviews: list[Review] = field(default_factory=list)
    # A fallback decision's signed `fallback` (on_deadline, due_at, review_deadline_seconds);
    # None for any other decision.
    fallback: Fallback | None = None

    @functools.cached_property
    def signed(self) -> dict:
        """The signed payload, parsed ({} if it is not a JSON object). Trust it once
        `verify_decision` has checked it; `outcome` and the other fields restate it."""
        try:
            signed = json.loads(self.payload)
        except ValueError:
            return {}
        return signed if isinstance(signed, dict) else {}

    @property
    def approved(self) -> bool:
        """Whether the signed bytes say approved (never the `outcome` field alone)."""
        return self.signed.get("outcome") == "approved"

    @property
    def is_fallback(self) -> bool:
        """No person decided: the panel's review deadline passed and its fallback did."""
        return self.basis == "fallback"

    @classmethod
    def from_api(cls, data: Mapping, at: str = "decision") -> Decision:
        return cls(
            id=req(data, "id", int, at=at),
            proposal=req(data, "proposal", int, at=at),
            outcome=req(data, "outcome", str, at=at),
            basis=req(data, "basis", str, at=at),
            decided_by=req(data, "decided_by", str, at=at),
            rationale=req(data, "rationale", str, at=at),
            payload=req(data, "payload", str, at=at),
            signature=req(data, "signature", str, at=at),
            key_id=req(data, "key_id", str, at=at),
            hash=req(data, "hash", str, at=at),
            prev_hash=opt(data, "prev_hash", str, at=at),
            public_key=opt(data, "public_key", str, at=at),
            ledger_index=opt(data, "ledger_index", int, at=at),
            claims=items(data, "claims", ClaimMark.from_api, at=at, required=False),
            tags=opt(data, "tags", list, at=at, default=[]),
            wrong_reason=opt(data, "wrong_reason", list, at=at, default=[]),
            reviews=items(data, "reviews", Review.from_api, at=at, required=False),
            fallback=Fallback.from_api(fallback, f"{at}.fallback")
            if (fallback := opt(data, "fallback", dict, at=at)) is not None
            else None,
        )


@dataclass(frozen=True)
class Proposal:
    id: int
    status: str  # "queued" | "evaluating" | "decided" | "escalated" | "withdrawn"
    panel: str
    title: str
    content_sha256: str
    tally: Tally | None
    escalation: EscalationBrief | None
    decision: Decision | None
    judgements: list[Judgement]
    content: str = ""
    thought_process: str = ""
    progress: Progress | None = None
    evidence: list[Evidence] = field(default_factory=list)
    lens_failures: list[LensFailure] = field(default_factory=list)
    raw: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def final(self) -> bool:
        return self.status in FINAL

    @property
    def escalated(self) -> bool:
        """A human must decide: `escalation.id` is what `decide()` takes."""
        return self.status == "escalated"

    @property
    def approved(self) -> bool:
        """Whether this proposal's decision, as signed, approves it: the signed bytes name
        this proposal and its content, and say approved. Verify the decision first."""
        if self.decision is None:
            return False
        signed = self.decision.signed.get("proposal")
        return (
            self.decision.approved
            and isinstance(signed, dict)
            and (signed.get("id"), signed.get("content_sha256")) == (self.id, self.content_sha256)
        )

    @classmethod
    def from_api(cls, data: Mapping, at: str = "proposal") -> Proposal:
        tally = req(data, "tally", dict, type(None), at=at)
        escalation = opt(data, "escalation", dict, at=at)
        decision = opt(data, "decision", dict, at=at)
        progress = opt(data, "progress", dict, at=at)
        return cls(
            id=req(data, "id", int, at=at),
            status=req(data, "status", str, at=at),
            panel=req(data, "panel", str, at=at),
            title=req(data, "title", str, at=at),
            content_sha256=req(data, "content_sha256", str, at=at),
            tally=Tally.from_api(tally, f"{at}.tally") if tally is not None else None,
            escalation=(
                EscalationBrief.from_api(escalation, f"{at}.escalation") if escalation else None
            ),
            decision=Decision.from_api(decision, f"{at}.decision") if decision else None,
            judgements=items(data, "judgements", Judgement.from_api, at=at),
            content=opt(data, "content", str, at=at, default=""),
            thought_process=opt(data, "thought_process", str, at=at, default=""),
            progress=Progress.from_api(progress, f"{at}.progress") if progress else None,
            evidence=items(data, "evidence", Evidence.from_api, at=at, required=False),
            lens_failures=items(data, "lens_failures", LensFailure.from_api, at=at, required=False),
            raw=dict(data),
        )


@dataclass(frozen=True)
class ProposalSummary:
    """A proposal as listed: fetch it with `get(id)` for its judgements and decision."""

    id: int
    status: str
    panel: str
    title: str
    content_sha256: str
    created_at: datetime
    url: str

    @classmethod
    def from_api(cls, data: Mapping, at: str = "proposal") -> ProposalSummary:
        return cls(
            id=req(data, "id", int, at=at),
            status=req(data, "status", str, at=at),
            panel=req(data, "panel", str, at=at),
            title=req(data, "title", str, at=at),
            content_sha256=req(data, "content_sha256", str, at=at),
            created_at=when(data, "created_at", at=at),
            url=req(data, "url", str, at=at),
        )


@dataclass(frozen=True)
class PanelLens:
    name: str
    backend: str

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> PanelLens:
        return cls(name=req(data, "name", str, at=at), backend=req(data, "backend", str, at=at))


def _share(data: Mapping[str, Any], key: str, *, at: str, nullable: bool = False) -> float | None:
    """A number from 0 to 1 (JSON may write 1.0 as 1)."""
    value = req(data, key, int, float, *((type(None),) if nullable else ()), at=at)
    return None if value is None else float(value)


@dataclass(frozen=True)
class GuaranteeSummary:
    """What a panel promises: at least `target` of its automatic decisions match what a
    reviewer would decide, with `confidence`."""

    target: float
    confidence: float

    @classmethod
    def from_api(cls, data: Mapping, at: str) -> GuaranteeSummary:
        return cls(_share(data, "target", at=at), _share(data, "confidence", at=at))


@dataclass(frozen=True)
class Panel:
    """A panel a proposal may be submitted to; `guarantee` is None when it gives none."""

    name: str
    description: str
    need: int
    lenses: list[PanelLens]
    checkers: list[str]
    requires_sign_off: bool
    reviews_needed: int
    external_deadline_seconds: int
    # How long an escalation may wait for a person, and what then ("reject", "approve":
    # a fallback decision signed by the server; "keep_open"); None: no deadline.
    review_deadline_seconds: int | None = None
    on_deadline: str | None = None
    guarantee: GuaranteeSummary | None = None

    @classmethod
    def from_api(cls, data: Mapping, at: str = "panel") -> Panel:
        guarantee = opt(data, "guarantee", dict, at=at)
        return cls(
            name=req(data, "name", str, at=at),
            description=req(data, "description", str, at=at),
            need=req(data, "need", int, at=at),
            lenses=items(data, "lenses", PanelLens.from_api, at=at),
            checkers=[
                _check(c, (str,), f"{at}.checkers") for c in req(data, "checkers", list, at=at)
            ],
            requires_sign_off=req(data, "requires_sign_off", bool, at=at),
            reviews_needed=req(data, "reviews_needed", int, at=at),
            external_deadline_seconds=req(data, "external_deadline_seconds", int, at=at),
            review_deadline_seconds=opt(data, "review_deadline_seconds", int, at=at),
            on_deadline=opt(data, "on_deadline", str, at=at),
            guarantee=(
                GuaranteeSummary.from_api(guarantee, f"{at}.guarantee") if guarantee else None
            ),
        )


@dataclass(frozen=True)
class Webhook:
    """A webhook endpoint of this client. `secret` (`whsec_…`) is set only in the
    answer to `create_webhook()`: the server shows it once."""

    id: int
    url: str
    events: list[str]
    description: str
    active: bool
    disabled_reason: str
    created_at: datetime
    secret: str | None = field(default=None, repr=False)

    @classmethod
    def from_api(cls, data: Mapping, at: str = "webhook") -> Webhook:
        return cls(
            id=req(data, "id", int, at=at),
            url=req(data, "url", str, at=at),
            events=[_check(e, (str,), f"{at}.events") for e in req(data, "events", list, at=at)],
            description=req(data, "description", str, at=at),
            active=req(data, "active", bool, at=at),
            disabled_reason=req(data, "disabled_reason", str, at=at),
            created_at=when(data, "created_at", at=at),
            secret=opt(data, "secret", str, at=at),
        )


@dataclass(frozen=True)
class Page(Generic[T]):  # noqa: UP046 (the client runs on Python 3.10)
    """One page of a listing; `next` is what fetches the following one (None at the end)."""

    items: list[T]
    next: str | int | None
