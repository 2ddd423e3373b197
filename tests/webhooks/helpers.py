"""Building blocks for the webhook tests: clients, endpoints, proposals taken to an outcome."""

import itertools
import json

from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import ApiClient
from reviewapp.review.services.clients import api_client_create
from reviewapp.review.services.proposals import proposal_submit
from reviewapp.webhooks.models import Endpoint, Event
from reviewapp.webhooks.services import endpoint_create
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded

_names = itertools.count()


def api_client(*scopes: str) -> tuple[ApiClient, str]:
    return api_client_create(
        name=f"agent-{next(_names)}", scopes=list(scopes or ("submit", "read"))
    )


def subscribe(client: ApiClient, url: str, events=tuple(Event.values)) -> tuple[Endpoint, str]:
    return endpoint_create(client=client, url=url, events=list(events))


def answer(verdict: str, cite: str) -> str:
    return json.dumps(
        {
            "verdict": verdict,
            "rationale": "Reasoned.",
            "claims": [{"cite": cite, "assessment": "verified"}],
        }
    )


def one_lens_panel(content: str, verdict: str = "pass", **panel_fields):
    lens = LensFactory()
    recorded(lens, content, answer(verdict, content))
    return PanelFactory(lenses=[lens], checkers=[CheckerFactory()], **panel_fields)


def run_pipeline(proposal) -> None:
    """Every lens, then the final step, in this process: the proposal's task."""
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()


def submitted_and_decided(client: ApiClient | None, content="The answer is 42.", **panel_fields):
    panel = one_lens_panel(content, **panel_fields)
    proposal, _ = proposal_submit(
        panel_name=panel.name, content=content, client=client, external_ref=f"ref-{content}"
    )
    run_pipeline(proposal)
    return proposal
