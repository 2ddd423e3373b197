"""Which human verdicts are evidence for a vote pattern, and whether each agreed.

Two kinds, both unbiased samples of their pattern's proposals:

- a reviewer's decision on a proposal the guarantee held (its only reason
  `below_guarantee`): every such proposal is labelled, against the outcome
  the panel's vote would have given;
- an audit verdict on an automatic decision the guarantee ruled on: audits
  are drawn at random (at a rate that may depend on the pattern, never on the
  verdict), against the decision that stands.

Replays show what the evidence would be; they never reach here.
"""

from reviewapp.review.models import Decision, DecisionAudit, Escalation

from .evidence import Change, label_add


def label_from_decision(*, decision: Decision) -> list[Change]:
    """A reviewer's decision on a held proposal: one label (the caller's transaction)."""
    escalation = decision.escalation
    if decision.basis != Decision.Basis.REVIEWER or escalation is None:
        return []
    if escalation.reasons != [Escalation.Reason.BELOW_GUARANTEE.value]:
        return []  # held for another reason too: not a sample of the pattern alone
    detail = (escalation.detail or {}).get("guarantee")
    if not detail:
        return []
    return label_add(
        panel_id=decision.proposal.panel_id,
        detail=detail,
        agreed=decision.outcome == detail["would_be"],
        audit=False,
    )


def label_from_audit(*, audit: DecisionAudit) -> list[Change]:
    """An audit verdict on an automatic decision the guarantee ruled on: one label."""
    detail = (audit.escalation.detail or {}).get("guarantee")
    if not detail:
        return []  # audited before the guarantee counted this panel's patterns
    return label_add(
        panel_id=audit.decision.proposal.panel_id,
        detail=detail,
        agreed=audit.outcome == audit.decision.outcome,
        audit=True,
    )
