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

from reviewapp.core.audits import audit_drawn
from reviewapp.core.blank import shows_nothing
from reviewapp.core.signing import Signer, sha256_hex
from reviewapp.ledger.keys import server_signer, untrusted_key_problem

from .. import events
from ..automatic import Ruling
from ..models import Decision, DecisionAudit, Escalation, Panel, Proposal
from .escalating import escalation_open

AUDIT_PAYLOAD_TYPE = "reviewapp.audit/v1"
# The draw; tests put a seeded random.Random here to make it repeatable.
AUDIT_RANDOM = random.Random()


def audit_open_maybe(
    *, proposal: Proposal, decision: Decision, ruling: Ruling | None = None
) -> Escalation | None:
    """After an automatic decision, open an audit escalation at the panel's audit rate,
    or at the rate the decision's `ruling` gives (the guarantee may spend the same budget
    unevenly across vote patterns).

    The final step calls it once the decision has committed (`finalize._audit_draw`):
    a won draw opens the audit in a transaction of its own, so the audit exists exactly
    when its draw was won; a lost one writes nothing and opens no transaction.
    """
    if ruling is not None and ruling.audit_percent is not None:
        rate = ruling.audit_percent
    else:
        rate = (
            Panel.objects.filter(pk=proposal.panel_id).values_list("audit_rate", flat=True).first()
        )
    if not audit_drawn(rate or 0, AUDIT_RANDOM.random):
        return None
    with transaction.atomic():
        return escalation_open(
            proposal=proposal,
            reasons=[Escalation.Reason.AUDIT.value],
            terms={"reviews_needed": 1},  # one verdict and no deadline: the decision stands
            detail={
                "explanation": f"Audit: the system {decision.outcome} this proposal; "
                "a reviewer checks it (the decision stands).",
                "decision": decision.pk,
                # Which vote pattern's evidence the verdict is (when a guarantee ruled on it).
                **({"guarantee": ruling.detail} if ruling and ruling.detail else {}),
            },
        )


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
        escalation.resolve()
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
        # The outbox row (if it disputes) and the human label commit with the verdict.
        events.audit_verdict_signed.send(sender=DecisionAudit, audit=audit)
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
