"""Proposals with known verdicts, judged the way the worker judges them (in-process)."""

import itertools
from datetime import timedelta

from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.escalations import escalation_claim, escalation_decide
from tests.factories import LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, submit

GOOD_CITE = "The sky is blue."
BAD_CITE = "Pigs can fly over the moon."
_counter = itertools.count(1)


def make_panel(*lens_names: str, need: int | None = None, policy: str = "repair", **kwargs):
    lenses = [LensFactory(name=name) for name in lens_names]
    return PanelFactory(
        lenses=lenses,
        need=need if need is not None else len(lenses),
        grounding_policy=policy,
        **kwargs,
    )


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
