import json

from reviewapp.review.services.proposals import lenses_to_run, proposal_submit
from reviewapp.review.tasks import finalize_proposal, run_lens


def judgement(verdict: str, *cites: str, rationale: str = "Reasoned.") -> str:
    return json.dumps(
        {
            "verdict": verdict,
            "rationale": rationale,
            "claims": [{"cite": c, "assessment": "verified"} for c in cites],
        }
    )


def submit(panel, content: str, **kwargs):
    proposal, _ = proposal_submit(panel_name=panel.name, content=content, **kwargs)
    return proposal


def evaluate_in_process(proposal):
    """What the worker does, called directly: every lens, then the final step."""
    for lens in lenses_to_run(proposal):
        run_lens(proposal.pk, lens.pk)
    finalize_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal
