"""Escalated proposals built the way the worker builds them, called in-process."""

from reviewapp.review.models import CheckerConfig, Proposal
from tests.factories import CheckerFactory, recorded
from tests.review.helpers import evaluate_in_process, judgement, make_panel
from tests.review.helpers import submit as proposal_submit_for

__all__ = ["judgement", "make_panel", "mandate_checker", "run_panel", "split_panel_proposal"]


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
