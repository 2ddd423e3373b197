"""Proposals a reviewer decided, with the lens verdicts they had, written quickly.

The proposal, its judgements and its escalation are rows made directly (the
pipeline is tested elsewhere); the decision goes through escalation_decide,
the real path that records the human labels.
"""

import itertools

from reviewapp.review.models import Escalation, Judgement, Lens, Proposal
from reviewapp.review.services.escalations import escalation_decide
from tests.factories import LensFactory, PanelFactory

_counter = itertools.count(1)


def panel_of(*names: str):
    lenses = [LensFactory(name=name) for name in names]
    return PanelFactory(lenses=lenses, need=len(lenses)), lenses


def adjudicated(
    panel,
    verdicts: dict[Lens, str],
    outcome: str,
    *,
    audit: bool = False,
    tally_outcome: str = "no_quorum",
) -> Proposal:
    """A proposal the lenses judged (`verdicts`: lens → "pass"/"fail"), escalated and decided.

    `audit` makes the escalation an audit of an automatic decision (reason
    "audit"); `tally_outcome` is what the panel reached ("reached_pass" …).
    """
    number = next(_counter)
    proposal = Proposal.objects.create(
        panel=panel,
        panel_version=1,
        panel_snapshot={"name": panel.name, "version": 1, "need": panel.need, "lenses": []},
        content=f"Proposal {number}.",
        content_sha256=f"{number:064x}",
        request_sha256=f"{number:064x}",
        status=Proposal.Status.ESCALATED,
        lenses_asked=len(verdicts),
        lenses_answered=len(verdicts),
        tally={"outcome": tally_outcome},
    )
    Judgement.objects.bulk_create(
        Judgement(
            proposal=proposal,
            lens=lens,
            lens_name=lens.name,
            lens_version=lens.version,
            verdict=verdict,
        )
        for lens, verdict in verdicts.items()
    )
    escalation = Escalation.objects.create(
        proposal=proposal, reasons=["audit"] if audit else ["no_quorum"]
    )
    escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Checked by hand.",
        decided_by_name="reviewer",
    )
    return proposal


def many(panel, lens: Lens, rows: list[tuple[str, str]], **kwargs) -> list[Proposal]:
    """One adjudicated proposal per (verdict, outcome) in `rows`, judged by `lens` alone."""
    return [adjudicated(panel, {lens: verdict}, outcome, **kwargs) for verdict, outcome in rows]


def agreeing(n: int) -> list[tuple[str, str]]:
    """n rows where the lens and the reviewer agree, half passes and half fails."""
    return [("pass", "approved") if i % 2 else ("fail", "rejected") for i in range(n)]


def disagreeing(n: int) -> list[tuple[str, str]]:
    return [("pass", "rejected") if i % 2 else ("fail", "approved") for i in range(n)]
