import itertools
import json

import pytest
from django.test import Client

from reviewapp.review.evaluation.tasks import evaluate_proposal
from reviewapp.review.models import CheckerConfig, Lens, Proposal
from reviewapp.review.services.clients import api_client_create, api_client_for_token
from reviewapp.review.services.proposals import proposal_submit
from tests.factories import CheckerFactory, LensFactory, PanelFactory, recorded

# read:all: the shared token is an operator's, seeing every client's proposals;
# tests of the visibility rule make narrower tokens with `api_with`.
ALL_SCOPES = ("submit", "judge", "read", "read:all", "review")
_names = itertools.count()


class Api:
    """The Django test client speaking JSON with a bearer token."""

    def __init__(self, token: str | None):
        self.client = Client()
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, params=None):
        return self.client.get(path, params or {}, headers=self.headers)

    def post(self, path: str, body, **extra):
        data = body if isinstance(body, str | bytes) else json.dumps(body)
        return self.client.post(
            path, data, content_type="application/json", headers=self.headers, **extra
        )


def make_token(*scopes: str) -> str:
    _, token = api_client_create(name=f"client-{next(_names)}", scopes=list(scopes))
    return token


@pytest.fixture
def token(db) -> str:
    return make_token(*ALL_SCOPES)


@pytest.fixture
def api(token) -> Api:
    return Api(token)


def api_with(*scopes: str) -> Api:
    return Api(make_token(*scopes))


def client_of(token: str):
    return api_client_for_token(token)


def lens_answer(verdict: str, *cites: str) -> str:
    return json.dumps(
        {
            "verdict": verdict,
            "rationale": "Reasoned.",
            "claims": [{"cite": c, "assessment": "verified"} for c in cites],
        }
    )


@pytest.fixture
def panel(db):
    return PanelFactory(lenses=[LensFactory()])


@pytest.fixture
def external_panel(db, token):
    """One recorded lens and one external lens ("outside", answered by `token`); both must agree."""
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(client_of(token))
    return PanelFactory(lenses=[LensFactory(), outside], need=2)


def evaluated(content: str, *, thought_process: str = "", **panel_fields) -> Proposal:
    """A proposal taken through the pipeline in-process: every lens, then the final step.

    One recorded lens passes citing `content`, and a regex checker passes.
    """
    lens = LensFactory()
    recorded(lens, content, lens_answer("pass", content))
    panel = PanelFactory(lenses=[lens], checkers=[CheckerFactory()], **panel_fields)
    proposal, _ = proposal_submit(
        panel_name=panel.name, content=content, thought_process=thought_process
    )
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal


@pytest.fixture
def decided(db) -> Proposal:
    proposal = evaluated("The answer is 42 🎉 and that is final.")
    assert proposal.status == Proposal.Status.DECIDED
    return proposal


@pytest.fixture
def escalated(db) -> Proposal:
    proposal = evaluated("Ship it on Friday.", requires_sign_off=True)
    assert proposal.status == Proposal.Status.ESCALATED
    return proposal


def unexplained_escalation(
    content: str = '{"total": 3}', *, lens: str = "silent", checker: str = "schema"
) -> Proposal:
    """A proposal escalated for a lens that failed and a checker that was inconclusive.

    The recorded `lens` has nothing recorded for `content` (it fails as
    misconfigured); the JSON Schema `checker`'s $ref cannot be resolved offline.
    """
    silent = LensFactory(name=lens)
    inconclusive = CheckerFactory(
        name=checker,
        kind=CheckerConfig.Kind.JSON_SCHEMA,
        settings={"schema": {"$ref": "https://schemas.invalid/total.json"}},
    )
    panel = PanelFactory(lenses=[silent], checkers=[inconclusive])
    proposal, _ = proposal_submit(panel_name=panel.name, content=content)
    evaluate_proposal(proposal.pk)
    proposal.refresh_from_db()
    return proposal
