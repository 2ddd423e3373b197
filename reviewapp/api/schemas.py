"""Request and response shapes of the REST API."""

from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Path, Query, Schema
from pydantic import AfterValidator, ConfigDict, Field

from reviewapp.core.blank import shows_nothing
from reviewapp.core.json_values import string_problem
from reviewapp.core.judging import FailureKind


def _storable(value: str) -> str:
    # Bodies are checked while parsed; this covers query strings.
    if problem := string_problem(value):
        raise ValueError(problem)
    return value


def _not_blank(value: str) -> str:
    if shows_nothing(value):
        raise ValueError("must not be empty (whitespace and zero-width characters count as empty)")
    return value


# Ids fit a bigint column; anything larger can only be a 404 anyway.
ObjectId = Annotated[int, Path(ge=1, le=2**63 - 1)]
PageSize = Annotated[int, Query(ge=1, le=200)]
QueryText = Annotated[str, Field(max_length=200), AfterValidator(_storable)]
# The pattern documents the rule in OpenAPI; the validator gives the clearer message.
NonBlank = Annotated[str, Field(json_schema_extra={"pattern": r"\S"}), AfterValidator(_not_blank)]
Verdict = Literal["pass", "fail"]
Assessment = Literal["verified", "contested", "refuted"]
ProposalStatus = Literal["queued", "evaluating", "decided", "escalated", "withdrawn"]
EscalationStatus = Literal["open", "claimed", "reconcile", "resolved", "withdrawn"]
OnDeadline = Literal["reject", "approve", "keep_open"]
Outcome = Literal["approved", "rejected"]
Mark = Literal["correct", "incorrect", "irrelevant"]


class Strict(Schema):
    # A misspelt field is an error, not silently ignored.
    model_config = ConfigDict(extra="forbid")


class ErrorOut(Schema):
    detail: str | list[dict[str, Any]]


def errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    """Documented error responses: those any endpoint can give (a bad Content-Length,
    auth, body size, validation, rate limit), plus `statuses`."""
    return {status: ErrorOut for status in sorted({400, 401, 403, 413, 422, 429, *statuses})}


# ─── Proposals ───────────────────────────────────────────────────────────────


class ProposalIn(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "panel": "general-review",
                    "content": "The invoice total is 1,240 EUR including 20% VAT.",
                    "thought_process": "Summed the three line items, then added VAT.",
                    "title": "Invoice 2024-117",
                    "external_ref": "invoice-2024-117",
                    "metadata": {"agent": "billing-bot"},
                }
            ]
        }
    )

    panel: str = Field(min_length=1, max_length=100)
    content: NonBlank
    thought_process: str = ""
    title: str = Field("", max_length=300)
    external_ref: str | None = Field(None, min_length=1, max_length=200)
    metadata: dict[str, Any] = Field(default_factory=dict)


class SubmittedOut(Schema):
    id: int
    status: ProposalStatus
    url: str


class ProgressOut(Schema):
    answered: int
    asked: int


class TallyOut(Schema):
    passed: int
    failed: int
    asked: int
    need: int
    outcome: Literal["reached_pass", "reached_fail", "no_quorum"]


class AnswerBodyAnchorOut(Schema):
    kind: Literal["answer_body"]
    start_utf16: int
    end_utf16: int


class ThoughtWindowAnchorOut(Schema):
    kind: Literal["thought_window"]


Anchor = Annotated[AnswerBodyAnchorOut | ThoughtWindowAnchorOut, Field(discriminator="kind")]


class ClaimOut(Schema):
    claim_id: str
    cite: str
    text: str | None
    assessment: Assessment
    anchor: Anchor | None


class UnresolvedCiteOut(Schema):
    cite: str
    assessment: Assessment | None = Field(
        description="What the lens said of the cite; null only where it was never recorded."
    )
    note: str
    claim_id: str


class JudgementOut(Schema):
    lens: str
    lens_version: int
    verdict: Verdict
    rationale: str
    claims: list[ClaimOut]
    unresolved_cites: list[UnresolvedCiteOut] = Field(
        description="Cites that resolved to nothing and were dropped from the claims, "
        "each with the lens's own assessment."
    )


class EvidenceOut(Schema):
    checker: str
    version: int
    verdict: Literal["pass", "fail", "inconclusive"]
    reason: str
    key_id: str
    signature: str
    payload: str = Field(description="The exact signed RFC 8785 JSON.")


class ClaimMarkOut(Schema):
    claim: int
    lens: str
    mark: Mark


class ReviewOut(Schema):
    id: int
    reviewer: str
    outcome: Outcome
    payload: str = Field(description="The reviewer's exact signed RFC 8785 JSON.")
    signature: str = Field(description="base64 ed25519 signature over `payload`.")
    key_id: str
    hash: str = Field(description="SHA-256 of `payload`: the decision's signed `reviews` name it.")


class ReviewStatusOut(Schema):
    status: Literal["awaiting_reviews", "reconcile"]
    reviews: int = Field(description="Reviews given so far.")
    reviews_needed: int


class FallbackOut(Schema):
    on_deadline: Literal["reject", "approve"] = Field(
        description="The panel's `on_deadline` that made this decision."
    )
    due_at: datetime = Field(description="The escalation's deadline.")
    review_deadline_seconds: int = Field(description="How long the escalation waited.")


class DecisionOut(Schema):
    id: int
    proposal: int
    outcome: Outcome
    basis: Literal["system", "reviewer", "fallback"] = Field(
        description="`system`: the panel and checkers decided; `reviewer`: a person (or the "
        "reviews) decided; `fallback`: no one decided the escalation by its panel's review "
        "deadline and the panel's `on_deadline` did, signed by the server. A fallback is "
        "never a person's decision."
    )
    decided_by: str
    rationale: str
    payload: str = Field(description="The exact signed RFC 8785 JSON.")
    signature: str = Field(description="base64 ed25519 signature over `payload`.")
    key_id: str
    public_key: str | None = Field(description="base64; null only if the key is unknown.")
    prev_hash: str | None = Field(
        description="Only for decisions signed before the ledger ordered them alone "
        "(`reviewapp.decision/v1` payloads): the previous such decision's `hash`, as signed. "
        "Null for every later decision (`reviewapp.decision/v2`), which is signed alone."
    )
    hash: str
    ledger_index: int | None = Field(
        description="The decision's entry in the ledger: `GET /api/ledger/proof/{ledger_index}` "
        "proves it is included in a checkpoint (within one checkpoint interval). A decision "
        "is signed, and final, at once; it is null until the ledger's sequencer gives it its "
        "index, normally within a fraction of a second."
    )
    claims: list[ClaimMarkOut] = Field(
        description="The reviewer's marks, as signed. Where several reviews were needed: "
        "those of the reconciler, or of the review that completed the agreement (each "
        "review's own are in its signed `payload`)."
    )
    tags: list[str] = Field(description="The reviewer's tags, as signed (chosen as `claims`).")
    wrong_reason: list[str] = Field(
        description="Lenses right for the wrong reason, as signed (chosen as `claims`)."
    )
    reviews: list[ReviewOut] = Field(
        default=[], description="The signed reviews the decision rests on, when it needed several."
    )
    fallback: FallbackOut | None = Field(
        default=None,
        description="For a `fallback` decision, what made it, as signed in `payload` "
        "(its `fallback` key); null otherwise.",
    )


class LensFailureOut(Schema):
    lens: str
    lens_version: int | None = Field(description="null only for a lens deleted before it ran.")
    kind: FailureKind = Field(
        description="What failed: `timeout` (the lens's or the worker's time limit), "
        "`rate_limited` (the provider answered 429 until the time limit), `transport_error` "
        "(network errors or 5xx used up the attempts), `http_error` (a 4xx other than 429, "
        "or an unreadable response), `invalid_answer` (no judgement could be read from the "
        "answer), `misconfigured` (the lens cannot run as configured), `undecidable` (a "
        "constraint could not be evaluated on this text), `deadline` (an external lens did "
        "not answer before the panel's deadline), `deleted` (the lens was deleted after "
        "submission and never ran), `internal_error` (the call raised an error none of these "
        "covers; the message names it)."
    )
    message: str = Field(
        description="Why the lens gave no judgement: its last attempt's error, at most 300 "
        "characters, with anything like a key or an account detail (an organisation, a "
        "project, an e-mail address) replaced by [redacted]."
    )
    attempts: int = Field(description="Calls made to the lens's backend (0: it never answered).")
    at: datetime | None = Field(
        description="When the failure was recorded; null for a lens deleted before it ran."
    )


class InconclusiveCheckerOut(Schema):
    checker: str
    reason: str = Field(description="Why the checker could not say pass or fail.")


class EscalationWhyOut(Schema):
    explanation: str = Field(description="Why the proposal went to a person, in a sentence.")
    lens_failures: list[LensFailureOut] = Field(
        description="Each lens that gave no judgement, and why (the `lens_failed` reason)."
    )
    inconclusive_checkers: list[InconclusiveCheckerOut] = Field(
        description="Each checker that was inconclusive, and why (`checker_inconclusive`)."
    )


class DeadlineFields(Schema):
    due_at: datetime | None = Field(
        default=None,
        description="When the panel's review deadline falls; null if it has none. Then "
        "`on_deadline` happens: `reject` or `approve` (a decision signed by the server with "
        "basis `fallback`, announced as `escalation.expired`) or `keep_open` (reviewers are "
        "reminded; it waits on).",
    )
    on_deadline: OnDeadline | None = Field(default=None, description="null with no deadline.")


class EscalationBriefOut(EscalationWhyOut, DeadlineFields):
    id: int
    status: EscalationStatus
    reasons: list[str]


class ProposalOut(Schema):
    id: int
    status: ProposalStatus
    panel: str
    title: str
    content: str
    thought_process: str
    content_sha256: str
    progress: ProgressOut
    tally: TallyOut | None
    judgements: list[JudgementOut]
    lens_failures: list[LensFailureOut] = Field(
        description="Each lens that gave no judgement and why; a failed lens is not an "
        "abstention, and names the escalation's lens_failed reason."
    )
    evidence: list[EvidenceOut] = Field(
        description="Each checker's signed verdict; `reason` says why it failed or was "
        "inconclusive."
    )
    escalation: EscalationBriefOut | None
    decision: DecisionOut | None


class ProposalSummaryOut(Schema):
    id: int
    status: ProposalStatus
    panel: str
    title: str
    content_sha256: str
    created_at: datetime
    url: str


class ProposalPageOut(Schema):
    items: list[ProposalSummaryOut]
    next_cursor: str | None


class ClaimIn(Strict):
    cite: str
    assessment: Assessment
    claim_id: str | None = Field(None, max_length=64)


class JudgementIn(Strict):
    lens: str = Field(min_length=1, max_length=100)
    verdict: Verdict
    rationale: str = ""
    claims: list[ClaimIn] = Field(default_factory=list, max_length=500)


# ─── Escalations and decisions ───────────────────────────────────────────────


class EscalationOut(EscalationWhyOut, DeadlineFields):
    id: int
    proposal: int
    status: EscalationStatus
    reasons: list[str]
    claimed_by: str | None
    created_at: datetime


class EscalationPageOut(Schema):
    items: list[EscalationOut]
    next_cursor: str | None


class ClaimMarkIn(Strict):
    claim: int
    mark: Mark


ANNOTATION_NAMES_LIMIT = 1000


class DecisionIn(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"outcome": "approved", "rationale": "Checked the cited figures."}]
        }
    )

    outcome: Outcome
    rationale: NonBlank
    claims: list[ClaimMarkIn] = Field(
        default_factory=list,
        description="Marks on the proposal's cited claims (ids from the proposal's judgements).",
    )
    # Each list is looked up in one IN (...): bounded well under a database's parameter limit.
    tags: list[str] = Field(
        default_factory=list,
        max_length=ANNOTATION_NAMES_LIMIT,
        description="Names of admin-defined tags.",
    )
    wrong_reason: list[str] = Field(
        default_factory=list,
        max_length=ANNOTATION_NAMES_LIMIT,
        description="Lenses whose verdict matches the outcome but for the wrong reason.",
    )


class AuditIn(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"outcome": "rejected", "rationale": "The figure is wrong."}]
        }
    )

    outcome: Outcome
    rationale: NonBlank


class AuditOut(Schema):
    id: int
    proposal: int
    decision: int = Field(description="The automatic decision audited; it stands.")
    outcome: Outcome = Field(description="The reviewer's verdict.")
    agrees: bool = Field(description="False: the decision is disputed (`decision.disputed`).")
    decided_by: str
    rationale: str
    payload: str = Field(description="The exact signed RFC 8785 JSON (reviewapp.audit/v1).")
    signature: str = Field(description="base64 ed25519 signature over `payload`.")
    key_id: str
    hash: str


class DecisionPageOut(Schema):
    items: list[DecisionOut]
    next_after: int | None = Field(
        description="Pass as `after` for the next page; null at the end."
    )


class KeyOut(Schema):
    key_id: str
    public_key: str = Field(description="base64 ed25519 public key.")
    created_at: datetime
    retired_at: datetime | None


# ─── Cites ───────────────────────────────────────────────────────────────────


class CiteIn(Strict):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"source": "Total: **1,240 EUR** 💶", "cite": "total: 1,240 eur"}]
        }
    )

    source: str
    cite: str


class CiteOut(Schema):
    resolved: bool
    text: str | None
    start: int | None = Field(description="Code points.")
    end: int | None
    start_utf16: int | None = Field(description="UTF-16 code units, as a DOM Range counts.")
    end_utf16: int | None
    start_byte: int | None = Field(description="UTF-8 bytes.")
    end_byte: int | None
