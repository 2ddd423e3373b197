"""Proposals with known verdicts, judged the way the worker judges them (in-process)."""

import itertools
from datetime import timedelta

from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.escalations import escalation_claim, escalation_decide
from tests.factories import recorded
from tests.review.helpers import evaluate_in_process, judgement, make_panel, submit

__all__ = ["backdate", "decide", "judged", "make_panel"]

GOOD_CITE = "The sky is blue."
BAD_CITE = "Pigs can fly over the moon."
_counter = itertools.count(1)


def judged(panel, verdicts: dict, *, cites: dict | None = None, **submit_kwargs) -> Proposal:
    """Submit a fresh proposal and judge it: `verdicts` maps lens name to "pass"/"fail".

    A lens missing from `verdicts` (or mapped to None) has no recorded response
    and fails. `cites` maps a lens name to the cites it makes (default: one
    that resolves).
    """
    content = f"Proposal {next(_counter)}. {GOOD_CITE} Water is wet."
    for lens in panel.ordered_lenses():
        verdict = verdicts.get(lens.name)
        if verdict is not None:
            lens_cites = (cites or {}).get(lens.name, (GOOD_CITE,))
            recorded(lens, content, judgement(verdict, *lens_cites))
    return evaluate_in_process(submit(panel, content, **submit_kwargs))


def decide(proposal: Proposal, user, outcome: str):
    escalation = Escalation.objects.get(proposal=proposal, status__in=["open", "claimed"])
    escalation_claim(escalation_id=escalation.pk, user=user)
    decision = escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Checked by hand.",
        user=user,
        decided_by_name=user.get_username(),
    )
    proposal.refresh_from_db()
    return decision


def backdate(proposal: Proposal, **delta) -> Proposal:
    """Move a proposal's submission time back (decisions are append-only; proposals are not)."""
    created = proposal.created_at - timedelta(**delta)
    Proposal.objects.filter(pk=proposal.pk).update(created_at=created)
    proposal.refresh_from_db()
    return proposal
