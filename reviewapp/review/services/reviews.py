"""One reviewer's signed review, and what a decision resting on reviews says about them."""

from django.utils import timezone

from reviewapp.core.signing import sha256_hex

from ..keys import server_signer
from ..models import Escalation, Review

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


def reviews_named(reviews: list[Review]) -> list[dict]:
    """How a decision names the reviews it rests on, inside its signed payload."""
    return [
        {"reviewer": r.reviewer_name, "outcome": r.outcome, "review_sha256": r.hash}
        for r in reviews
    ]


def reviews_visible_to(escalation: Escalation, user, *, may_reconcile: bool) -> bool:
    """Blind review: others' reviews show once `user` has given theirs, the escalation
    is decided, or `user` reconciles."""
    if escalation.status == Escalation.Status.RESOLVED or may_reconcile:
        return True
    return user is not None and escalation.reviews.filter(reviewer=user).exists()
