import json

from reviewapp.review.evaluation.tasks import evaluate_proposal, finalize_proposal, run_lens
from reviewapp.review.models import Lens
from reviewapp.review.services.proposals import lenses_to_run, proposal_submit
from tests.factories import LensFactory, PanelFactory


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


def submit(panel, content: str, **kwargs):
    proposal, _ = proposal_submit(panel_name=panel.name, content=content, **kwargs)
    return proposal


def evaluate_in_process(proposal):
    """What the workers do, called directly: the proposal's task, after its LLM lenses.

    The task runs the CPU lenses inline and the final step, as in the
    pipeline; LLM lenses are judged here with ``run_lens`` (the worker's LLM
    loop would read the database on its own connection, outside the test's
    transaction).
    """
    for lens in lenses_to_run(proposal):
        if lens.backend == Lens.Backend.LLM:
            run_lens(proposal.pk, lens.pk)
    evaluate_proposal(proposal.pk, llm_answers=[])
    finalize_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal
