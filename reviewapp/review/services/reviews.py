"""One reviewer's signed review, and what a decision resting on reviews says about them."""

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, F, Q
from django.utils import timezone
from reviewapp_client.verify.ledger import check_signed_object

from reviewapp.core.signing import sha256_hex
from reviewapp.ledger.keys import server_signer, trusted_keys, untrusted_key_problem

from ..models import Decision, Escalation, Review, ReviewClaim

REVIEW_PAYLOAD_TYPE = "reviewapp.review/v1"
_CORE_KEYS = frozenset(
    {"type", "proposal", "escalation", "reviewer", "outcome", "rationale", "reviewed_at"}
)


def review_payload(
    *,
    escalation: Escalation,
    reviewer_name: str,
    outcome: str,
    rationale: str,
    reviewed_at: str,
    annotations: dict,
) -> dict:
    """The dict that gets canonicalised and signed. `annotations` (claim marks, tags) are
    signed beside the verdict under their own keys; they may not restate a core key."""
    clash = sorted(_CORE_KEYS & set(annotations))
    if clash:
        raise ValueError(f"annotations may not use the keys {', '.join(clash)}")
    proposal = escalation.proposal
    return {
        **annotations,
        "type": REVIEW_PAYLOAD_TYPE,
        "proposal": {"id": proposal.pk, "content_sha256": proposal.content_sha256},
        "escalation": {"id": escalation.pk, "reasons": escalation.reasons},
        "reviewer": reviewer_name,
        "outcome": outcome,
        "rationale": rationale,
        "reviewed_at": reviewed_at,
    }


def review_create(
    *,
    escalation: Escalation,
    user,
    reviewer_name: str,
    outcome: str,
    rationale: str,
    annotations: dict | None = None,
) -> Review:
    """Sign and store a review. The caller holds the escalation's row lock; the
    database refuses a second review by the same person (IntegrityError)."""
    annotations = dict(annotations or {})
    payload = review_payload(
        escalation=escalation,
        reviewer_name=reviewer_name,
        outcome=outcome,
        rationale=rationale,
        reviewed_at=timezone.now().isoformat(),
        annotations=annotations,
    )
    signed = server_signer().sign(payload)
    return Review.objects.create(
        escalation=escalation,
        reviewer=user,
        reviewer_name=reviewer_name,
        outcome=outcome,
        rationale=rationale,
        annotations=annotations,
        payload=signed.payload_bytes.decode(),
        signature=signed.signature_b64,
        key_id=signed.key_id,
        hash=sha256_hex(signed.payload_bytes),
    )


class ReviewUnverified(Exception):
    """A stored review no longer verifies as its reviewer signed it: nothing is decided on it."""


@dataclass(frozen=True)
class SignedReview:
    """A review as its reviewer signed it (never the row's columns, which restate it)."""

    reviewer: str
    outcome: str
    rationale: str
    hash: str  # SHA-256 of the signed bytes


def _signed_problem(review: Review, keys: Mapping[str, bytes]) -> tuple[dict | None, str | None]:
    """The review's signed payload, or why it cannot be trusted (key, signature, subject)."""
    if review.key_id not in keys:
        return None, untrusted_key_problem(review.key_id)
    signed, problem = check_signed_object(
        review.payload, review.signature, review.key_id, keys, REVIEW_PAYLOAD_TYPE
    )
    if problem:
        return None, problem
    if (signed.get("escalation") or {}).get("id") != review.escalation_id:
        return None, "it was signed for another escalation"
    return signed, None


def review_signed(review: Review, keys: Mapping[str, bytes] | None = None) -> SignedReview:
    """What `review` signed, checked with the trusted keys; `ReviewUnverified` if it fails."""
    signed, problem = _signed_problem(review, trusted_keys() if keys is None else keys)
    if problem:
        raise ReviewUnverified(
            f"{review.reviewer_name}'s review (review {review.pk} on escalation "
            f"{review.escalation_id}) does not verify: {problem}. No decision is signed on it "
            "until an administrator has checked the reviews (manage.py verify_decisions)."
        )
    return SignedReview(
        reviewer=signed["reviewer"],
        outcome=signed["outcome"],
        rationale=signed["rationale"],
        hash=sha256_hex(review.payload.encode()),
    )


# A review row's columns that restate its signed bytes, and the signed key each restates.
REVIEW_ROW_COLUMNS = (
    ("reviewer_name", "reviewer"),
    ("outcome", "outcome"),
    ("rationale", "rationale"),
)


def review_problem(review: Review, keys: Mapping[str, bytes]) -> str | None:
    """How a stored review fails to say what was signed (its signature, hash or a column)."""
    signed, problem = _signed_problem(review, keys)
    if problem:
        return problem
    if review.hash != sha256_hex(review.payload.encode()):
        return "stored hash does not match its signed bytes"
    differs = [c for c, key in REVIEW_ROW_COLUMNS if getattr(review, c) != signed[key]]
    if review.annotations != {k: v for k, v in signed.items() if k not in _CORE_KEYS}:
        differs.append("annotations")
    if differs:
        return f"row differs from its signed bytes in {', '.join(differs)}"
    return None


def reviews_named(reviews: list[SignedReview]) -> list[dict]:
    """How a decision names the reviews it rests on, inside its signed payload."""
    return [
        {"reviewer": r.reviewer, "outcome": r.outcome, "review_sha256": r.hash} for r in reviews
    ]


@dataclass(frozen=True)
class ReviewerProgress:
    username: str
    today: int  # verdicts given since midnight (server time zone)
    week: int  # since Monday
    holding: int  # open escalations they hold now
    assigned: int  # open escalations assigned to them by name (not through a group)
    agreed: int  # of their reviews on decided escalations, those the decision agrees with
    judged: int  # their reviews on decided escalations

    @property
    def agreement(self) -> str:
        return f"{round(100 * self.agreed / self.judged)}%" if self.judged else "–"


def reviewer_progress(*, users) -> list[ReviewerProgress]:
    """Per reviewer: verdicts given today and this week (a review, or a one-review
    decision), escalations held now, and agreement of their reviews with the final
    decisions, and open escalations assigned to them. A few aggregate queries,
    whatever the number of rows."""
    now = timezone.localtime()
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    week = today - timedelta(days=today.weekday())
    ids = [u.pk for u in users]

    def counted(rows, user_field: str, since) -> dict[int, int]:
        return dict(
            rows.filter(**{f"{user_field}__in": ids}, created_at__gte=since)
            .order_by()
            .values_list(user_field)
            .annotate(n=Count("id"))
        )

    # A decision is its signer's verdict unless it was made by their own review
    # (the last of agreeing reviews), which is counted already.
    solo = Decision.objects.filter(basis=Decision.Basis.REVIEWER).exclude(
        escalation__reviews__reviewer=F("decided_by")
    )
    counts = {
        "today": (counted(Review.objects, "reviewer", today), counted(solo, "decided_by", today)),
        "week": (counted(Review.objects, "reviewer", week), counted(solo, "decided_by", week)),
    }
    holding = _holding(ids, now)
    assigned = _assigned(ids)
    judged, agreed = _agreement(ids)
    return [
        ReviewerProgress(
            username=u.get_username(),
            today=sum(c.get(u.pk, 0) for c in counts["today"]),
            week=sum(c.get(u.pk, 0) for c in counts["week"]),
            holding=holding[u.pk],
            assigned=assigned.get(u.pk, 0),
            agreed=agreed[u.pk],
            judged=judged[u.pk],
        )
        for u in users
    ]


def _holding(ids: list[int], now) -> Counter:
    """Escalations each user holds now: one claim, or a place among several reviews."""
    return Counter(
        Escalation.objects.held(now).filter(claimed_by__in=ids).values_list("claimed_by", flat=True)
    ) + Counter(ReviewClaim.objects.live(now).filter(user__in=ids).values_list("user", flat=True))


def _assigned(ids: list[int]) -> dict[int, int]:
    """Undecided escalations assigned to each user by name."""
    return dict(
        Escalation.objects.undecided()
        .filter(assigned_user__in=ids)
        .order_by()
        .values_list("assigned_user")
        .annotate(n=Count("id"))
    )


def _agreement(ids: list[int]) -> tuple[Counter, Counter]:
    """Per user, their reviews on decided escalations, and those the decision agrees with.
    Counted in the database: a reviewer's decided reviews grow without bound."""
    decided = {
        row["reviewer"]: row
        for row in Review.objects.filter(
            reviewer__in=ids, escalation__status=Escalation.Status.RESOLVED
        )
        .order_by()
        .values("reviewer")
        .annotate(
            judged=Count("id"),
            agreed=Count("id", filter=Q(outcome=F("escalation__proposal__decision__outcome"))),
        )
    }
    judged = Counter({user: row["judged"] for user, row in decided.items()})
    agreed = Counter({user: row["agreed"] for user, row in decided.items()})
    return judged, agreed
