import json

from reviewapp.celery import app as celery_app
from reviewapp.ledger.services import ledger_sequence
from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import Lens, Proposal
from reviewapp.review.services.proposals import lenses_to_run, proposal_submit
from tests.conftest import wait_for
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


def evaluate_in_process(proposal, *, timeout: float = 10.0):
    """What a worker does with a proposal, in this process; the proposal, final.

    Its task runs the CPU lenses inline and the final step. LLM lenses go, as
    in a worker, to the process's LLM loop (the test asks for the ``llm_loop``
    fixture): the task is run as a worker runs it (with its prerun and postrun
    signals), hands them over and returns; the loop judges them against the
    loopback server, and its recorder thread records the answers and runs the
    final step, which this waits for.
    """
    if not any(lens.backend == Lens.Backend.LLM for lens in lenses_to_run(proposal)):
        evaluate_proposal(proposal.pk)
    else:
        celery_app.control.purge()  # the submission's own message: nothing waits in the queue
        evaluate_proposal.apply((proposal.pk,), throw=True)
        wait_for(
            lambda: Proposal.objects.get(pk=proposal.pk).is_final,
            timeout=timeout,
            interval=0.02,
            message=f"proposal {proposal.pk} not final {timeout}s after its LLM lenses went",
        )
    # A worker's commit wakes the ledger's sequencer; the test's transaction never commits.
    ledger_sequence()
    proposal.refresh_from_db()
    return proposal
