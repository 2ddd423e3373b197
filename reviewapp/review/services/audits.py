"""Audits of automatic decisions: a share drawn at random goes to the inbox as well.

The machine's signed decision stands. The reviewer's audit verdict is signed
as its own record (``DecisionAudit``) bound to the decision's hash; a verdict
that differs from the machine's disputes the decision (``decision.disputed``).
The verdict is also a human label for calibration, written in its transaction.
"""

import random
from collections.abc import Mapping

from django.db import transaction
from django.utils import timezone
from reviewapp_client.verify.ledger import check_signed_object

from reviewapp.calibration.services import audit_labels_record
from reviewapp.core.audits import audit_drawn
from reviewapp.core.blank import shows_nothing
from reviewapp.core.signing import Signer, sha256_hex
from reviewapp.webhooks.events import webhook_record_disputed

from ..keys import server_signer, untrusted_key_problem
from ..models import Decision, DecisionAudit, Escalation, Panel, Proposal
from ..search import escalation_search_vector
from .assignments import escalation_assign_by_rules

AUDIT_PAYLOAD_TYPE = "reviewapp.audit/v1"
# The draw; tests put a seeded random.Random here to make it repeatable.
AUDIT_RANDOM = random.Random()


def is_audit(escalation: Escalation) -> bool:
    return Escalation.Reason.AUDIT in (escalation.reasons or [])


def audit_open_maybe(*, proposal: Proposal, decision: Decision) -> Escalation | None:
    """After an automatic decision, open an audit escalation at the panel's audit rate.

    Call inside the decision's transaction: the audit exists exactly when its draw was won.
    """
    rate = Panel.objects.filter(pk=proposal.panel_id).values_list("audit_rate", flat=True).first()
    if not audit_drawn(rate or 0, AUDIT_RANDOM.random):
        return None
    escalation = Escalation.objects.create(
        proposal=proposal,
        reasons=[Escalation.Reason.AUDIT.value],
        reviews_needed=1,  # one verdict, whatever the panel's reviews_needed
        search=escalation_search_vector(proposal.pk),
        detail={
            "explanation": f"Audit: the system {decision.outcome} this proposal; "
            "a reviewer checks it (the decision stands).",
            "decision": decision.pk,
        },
    )
    escalation_assign_by_rules(escalation=escalation, panel_id=proposal.panel_id)
    return escalation


def audit_payload(
    *, decision: Decision, escalation: Escalation, outcome: str, rationale: str, decided_by: str
) -> dict:
    """What an audit verdict signs: the decision it audits (by hash) and the reviewer's verdict."""
    return {
        "type": AUDIT_PAYLOAD_TYPE,
        "proposal": {"id": decision.proposal_id},
        "decision": {"id": decision.pk, "hash": decision.hash, "outcome": decision.outcome},
        "escalation": escalation.pk,
        "outcome": outcome,
        "agrees": outcome == decision.outcome,
        "rationale": rationale,
        "decided_by": decided_by,
        "decided_at": timezone.now().isoformat(),
    }


def audit_verdict_sign(
    *,
    escalation: Escalation,
    outcome: str,
    rationale: str,
    user=None,
    decided_by_name: str,
    signer: Signer | None = None,
) -> DecisionAudit:
    """Sign and store a reviewer's audit verdict; the caller holds the escalation's row lock
    and has checked the claim (services.escalations.escalation_decide)."""
    if shows_nothing(rationale):
        raise ValueError("a rationale is required")
    if outcome not in Decision.Outcome.values:
        raise ValueError(f"outcome must be one of {', '.join(Decision.Outcome.values)}")
    decision = Decision.objects.get(proposal_id=escalation.proposal_id)
    signer = signer or server_signer()
    signed = signer.sign(
        audit_payload(
            decision=decision,
            escalation=escalation,
            outcome=outcome,
            rationale=rationale,
            decided_by=decided_by_name,
        )
    )
    with transaction.atomic(savepoint=False):
        escalation.status = Escalation.Status.RESOLVED
        escalation.resolved_at = timezone.now()
        escalation.search = None
        escalation.save(update_fields=["status", "resolved_at", "search"])
        audit = DecisionAudit.objects.create(
            decision=decision,
            escalation=escalation,
            outcome=outcome,
            agrees=outcome == decision.outcome,
            rationale=rationale,
            decided_by=user,
            decided_by_name=decided_by_name,
            payload=signed.payload_bytes.decode(),
            signature=signed.signature_b64,
            key_id=signed.key_id,
            hash=sha256_hex(signed.payload_bytes),
        )
        if not audit.agrees:
            webhook_record_disputed(audit=audit)  # the outbox row commits with the verdict
        # The verdict is the human label each lens on the proposal is measured against.
        audit_labels_record(audit=audit)
    return audit


def audit_problem(audit: DecisionAudit, keys: Mapping[str, bytes]) -> str | None:
    """How a stored audit verdict fails to say what was signed, or to be about its decision."""
    if audit.key_id not in keys:
        return untrusted_key_problem(audit.key_id)
    signed, problem = check_signed_object(
        audit.payload, audit.signature, audit.key_id, keys, AUDIT_PAYLOAD_TYPE
    )
    if problem:
        return problem
    if audit.hash != sha256_hex(audit.payload.encode()):
        return "stored hash does not match its signed bytes"
    decision = signed.get("decision") or {}
    if (decision.get("id"), decision.get("hash")) != (audit.decision_id, audit.decision.hash):
        return "it was signed for another decision"
    restated = {
        "outcome": signed.get("outcome"),
        "agrees": signed.get("agrees"),
        "rationale": signed.get("rationale"),
        "decided_by_name": signed.get("decided_by"),
        "escalation_id": signed.get("escalation"),
    }
    differs = [column for column, value in restated.items() if getattr(audit, column) != value]
    if differs:
        return f"row differs from its signed bytes in {', '.join(differs)}"
    return None
