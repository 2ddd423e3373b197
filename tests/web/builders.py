"""Escalated proposals built the way the worker builds them, called in-process."""

from dataclasses import dataclass

from reviewapp.core.cite import ClaimInput
from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import ApiClient, CheckerConfig, Lens, Proposal
from reviewapp.review.services.clients import api_client_create
from reviewapp.review.services.judgements import external_judgement_submit
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, make_panel
from tests.review.helpers import submit as proposal_submit_for

__all__ = [
    "AwaitingJudges",
    "awaiting_judges",
    "judgement",
    "make_panel",
    "mandate_checker",
    "run_panel",
    "split_panel_proposal",
]


def mandate_checker(mandate: str, **kwargs) -> CheckerConfig:
    return CheckerFactory(
        kind=CheckerConfig.Kind.CONSTRAINTS, settings={"mandate": mandate}, **kwargs
    )


def run_panel(panel, content: str, responses: dict, **submit) -> Proposal:
    """Submit `content`, run each lens on its recorded response, finalize.

    `responses` maps lens name to a response; a lens with none fails (lens_failed).
    """
    lenses = panel.ordered_lenses()
    for lens in lenses:
        if responses.get(lens.name) is not None:
            recorded(lens, content, responses[lens.name])
    return evaluate_in_process(proposal_submit_for(panel, content, **submit))


def split_panel_proposal(panel=None, content: str = "The sky is blue. Water is wet.", **submit):
    """A proposal one lens passes and one fails: escalated for no quorum."""
    panel = panel or make_panel()
    first, second = panel.ordered_lenses()[:2]
    return run_panel(
        panel,
        content,
        {
            first.name: judgement("pass", "The sky is blue."),
            second.name: judgement("fail", "Water is wet.", rationale="Not relevant."),
        },
        **submit,
    )


@dataclass
class AwaitingJudges:
    """A submitted proposal on a panel of a recorded lens and an external one, need both."""

    proposal: Proposal
    recorded: Lens
    judge: ApiClient  # the client bound to the external lens, "outside"

    def task_runs(self) -> None:
        """The proposal's task: the recorded lens answers; the panel waits for the other."""
        evaluate_proposal(self.proposal.pk)
        self.proposal.refresh_from_db()

    def external_answers(self, verdict: str, cite: str) -> None:
        """The external lens's judgement arrives, as through the API (the last answer)."""
        external_judgement_submit(
            proposal=self.proposal,
            lens_name="outside",
            verdict=verdict,
            rationale="Judged outside.",
            claims=[ClaimInput(cite=cite)],
            client=self.judge,
        )


def awaiting_judges(content: str, verdict: str, cite: str, **submit) -> AwaitingJudges:
    """Submit `content` to a panel of a recorded lens ("accuracy", answering `verdict`
    citing `cite`) and an external lens ("outside"), need both."""
    answering = LensFactory(name="accuracy")
    recorded(answering, content, judgement(verdict, cite))
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    judge, _ = api_client_create(name="outside-judge", scopes=["judge"])
    outside.judge_clients.add(judge)
    panel = PanelFactory(lenses=[answering, outside], need=2)
    proposal = proposal_submit_for(panel, content, **submit)
    return AwaitingJudges(proposal=proposal, recorded=answering, judge=judge)
