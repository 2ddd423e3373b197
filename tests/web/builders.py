"""Escalated proposals built the way the worker builds them, called in-process."""

import json

from reviewapp.review.models import CheckerConfig, Proposal
from reviewapp.review.services.proposals import proposal_submit
from reviewapp.review.tasks import finalize_proposal, run_lens
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded


def judgement(verdict: str, *claims, rationale: str = "Reasoned.") -> str:
    """A recorded lens response. A claim is a cite string or a dict with cite/assessment/note."""
    return json.dumps(
        {
            "verdict": verdict,
            "rationale": rationale,
            "claims": [
                {"cite": c, "assessment": "verified"} if isinstance(c, str) else c for c in claims
            ],
        }
    )


def make_panel(*lens_names: str, need: int | None = None, policy: str = "repair", **kwargs):
    """A panel of recorded lenses (default two, need both: a split is no quorum)."""
    lenses = [LensFactory(name=name) for name in lens_names] or [LensFactory(), LensFactory()]
    return PanelFactory(
        lenses=lenses,
        need=need if need is not None else len(lenses),
        grounding_policy=policy,
        **kwargs,
    )


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
    proposal, _ = proposal_submit(panel_name=panel.name, content=content, **submit)
    for lens in lenses:
        run_lens(proposal.pk, lens.pk)
    finalize_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal


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
