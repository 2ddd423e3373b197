"""Proposals a reviewer decided, with the lens verdicts they had, written quickly.

The proposal, its judgements and its escalation are rows made directly (the
pipeline is tested elsewhere); the reviewer's decision or audit verdict goes
through escalation_decide, the real path that records the human labels.
"""

import itertools

from django.test import TestCase

from reviewapp.review.models import Claim, Decision, Escalation, Judgement, Lens, Proposal
from reviewapp.review.services.decisions import decision_append
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
    marks: dict[Lens, list[str]] | None = None,
    committed: bool = True,
) -> Proposal:
    """A proposal the lenses judged (`verdicts`: lens → "pass"/"fail"), escalated and decided.

    `audit` makes it an audit instead: the system decided the proposal (approved
    when `tally_outcome` is "reached_pass", else rejected), an escalation with
    reason "audit" opened, and `outcome` is the reviewer's audit verdict.
    `tally_outcome` is what the panel reached ("reached_pass" …). `marks`
    (lens → marks): one cited claim of that lens per mark, marked so in the
    reviewer's decision. `committed`: what follows the decision's commit runs too
    (the drift check), as in a worker or a request; False leaves it to the caller.
    """
    number = next(_counter)
    proposal = Proposal.objects.create(
        panel=panel,
        panel_version=1,
        panel_snapshot={"name": panel.name, "version": 1, "need": panel.need, "lenses": []},
        content=f"Proposal {number}.",
        content_sha256=f"{number:064x}",
        request_sha256=f"{number:064x}",
        status=Proposal.Status.DECIDED if audit else Proposal.Status.ESCALATED,
        lenses_asked=len(verdicts),
        lenses_answered=len(verdicts),
        tally={"outcome": tally_outcome},
    )
    judgements = Judgement.objects.bulk_create(
        Judgement(
            proposal=proposal,
            lens=lens,
            lens_name=lens.name,
            lens_version=lens.version,
            verdict=verdict,
        )
        for lens, verdict in verdicts.items()
    )
    if audit:
        decision_append(
            proposal=proposal,
            outcome=Decision.Outcome.APPROVED
            if tally_outcome == "reached_pass"
            else Decision.Outcome.REJECTED,
            basis=Decision.Basis.SYSTEM,
            rationale="The panel's tally.",
        )
    escalation = Escalation.objects.create(
        proposal=proposal, reasons=["audit"] if audit else ["no_quorum"]
    )
    by_lens = {j.lens_id: j for j in judgements}
    claim_marks = [
        (_claim(by_lens[lens.pk], position).pk, mark)
        for lens, lens_marks in (marks or {}).items()
        for position, mark in enumerate(lens_marks)
    ]
    # As committed: the drift check follows the decision's commit.
    with TestCase.captureOnCommitCallbacks(execute=committed):
        escalation_decide(
            escalation_id=escalation.pk,
            outcome=outcome,
            rationale="Checked by hand.",
            decided_by_name="reviewer",
            marks=claim_marks,
        )
    return proposal


def _claim(judgement: Judgement, position: int) -> Claim:
    return Claim.objects.create(
        judgement=judgement,
        position=position,
        cite="Proposal",
        text="Proposal",
        assessment=Claim.Assessment.VERIFIED,
        anchor_kind=Claim.AnchorKind.ANSWER_BODY,
        start_utf16=0,
        end_utf16=8,
    )


def many(panel, lens: Lens, rows: list[tuple[str, str]], **kwargs) -> list[Proposal]:
    """One adjudicated proposal per (verdict, outcome) in `rows`, judged by `lens` alone."""
    return [adjudicated(panel, {lens: verdict}, outcome, **kwargs) for verdict, outcome in rows]


def agreeing(n: int) -> list[tuple[str, str]]:
    """n rows where the lens and the reviewer agree, half passes and half fails."""
    return [("pass", "approved") if i % 2 else ("fail", "rejected") for i in range(n)]


def disagreeing(n: int) -> list[tuple[str, str]]:
    return [("pass", "rejected") if i % 2 else ("fail", "approved") for i in range(n)]
