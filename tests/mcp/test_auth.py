"""Who may call: the API's tokens, scopes and visibility, over MCP."""

import httpx
import pytest
from django.utils import timezone

from reviewapp.review.models import ApiClient, Proposal
from reviewapp.review.services.clients import api_client_create
from tests.factories import ReviewerFactory
from tests.mcp.conftest import call, error_text
from tests.webhooks.helpers import api_client, one_lens_panel, run_pipeline

CONTENT = "Refunds are issued within 14 days."


def post_mcp(server, headers):
    return httpx.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        headers={"Accept": "application/json, text/event-stream", **headers},
    )


def test_a_request_without_a_token_is_401_with_a_bearer_challenge(server):
    response = post_mcp(server, {})

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer ")


def test_an_unknown_token_is_401(server):
    assert post_mcp(server, {"Authorization": "Bearer rva_not-a-token"}).status_code == 401


def test_a_revoked_token_is_401(server):
    client, token = api_client("read")
    ApiClient.objects.filter(pk=client.pk).update(revoked_at=timezone.now())

    assert post_mcp(server, {"Authorization": f"Bearer {token}"}).status_code == 401


@pytest.fixture
def ours(server, agent):
    """A decided review submitted by `agent`."""
    panel = one_lens_panel(CONTENT)
    result = call(
        server,
        agent[1],
        "request_review",
        {"panel": panel.name, "content": CONTENT, "external_ref": "ours"},
    )
    proposal = Proposal.objects.get(pk=result.structured_content["id"])
    run_pipeline(proposal)
    return proposal


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("get_review", {}),
        ("wait_for_review", {"timeout_s": 0}),
        ("submit_judgement", {"lens": "any", "verdict": "pass"}),
    ],
)
def test_a_token_of_another_client_finds_none_of_our_reviews(server, ours, tool, arguments):
    _, other = api_client("submit", "read", "judge")

    theirs = call(server, other, tool, {"id": ours.pk, **arguments})
    missing = call(server, other, tool, {"id": ours.pk + 1000, **arguments})

    assert error_text(theirs) == error_text(missing).replace(str(ours.pk + 1000), str(ours.pk))


def test_a_read_all_token_sees_every_clients_reviews(server, ours):
    _, operator = api_client("read:all")

    review = call(server, operator, "get_review", {"id": ours.pk}).structured_content

    assert review["outcome"] == "approved"


SUBMISSION = {"panel": "p", "content": "c", "external_ref": "r"}
JUDGEMENT = {"id": 1, "lens": "l", "verdict": "pass"}


@pytest.mark.parametrize(
    ("scopes", "tool", "arguments", "needed"),
    [
        (("read",), "request_review", SUBMISSION, "submit"),
        (("submit",), "get_review", {"id": 1}, "read"),
        (("submit",), "wait_for_review", {"id": 1, "timeout_s": 0}, "read"),
        (("submit", "read"), "submit_judgement", JUDGEMENT, "judge"),
    ],
)
def test_a_token_without_the_tools_scope_is_refused(server, scopes, tool, arguments, needed):
    _, token = api_client(*scopes)

    result = call(server, token, tool, arguments)

    assert error_text(result) == f"this token lacks the '{needed}' scope, which this tool needs"


def test_a_personal_token_whose_user_may_no_longer_review_is_401(server):
    ann = ReviewerFactory(username="ann-mcp")
    _, token = api_client_create(name="ann/agent", scopes=["review"], user=ann)
    assert post_mcp(server, {"Authorization": f"Bearer {token}"}).status_code == 200

    ann.groups.clear()

    assert post_mcp(server, {"Authorization": f"Bearer {token}"}).status_code == 401


def test_a_personal_token_reads_over_mcp_what_it_reads_over_rest(server, ours):
    """REST grants a personal token `read` (it sees what its reviewer sees): so does MCP."""
    ann = ReviewerFactory(username="ann-reads")
    _, token = api_client_create(name="ann/reader", scopes=["review"], user=ann)

    review = call(server, token, "get_review", {"id": ours.pk})
    waited = call(server, token, "wait_for_review", {"id": ours.pk, "timeout_s": 0})

    assert not review.is_error, error_text(review)
    assert review.structured_content["outcome"] == "approved"
    assert waited.structured_content["final"] is True


def test_a_review_token_reads_the_escalations_it_may_review(server):
    panel = one_lens_panel(CONTENT, requires_sign_off=True)
    submitter = api_client("submit", "read")[1]
    result = call(
        server,
        submitter,
        "request_review",
        {"panel": panel.name, "content": CONTENT, "external_ref": "e"},
    )
    proposal = Proposal.objects.get(pk=result.structured_content["id"])
    run_pipeline(proposal)
    reviewer = api_client("review", "read")[1]

    review = call(server, reviewer, "wait_for_review", {"id": proposal.pk, "timeout_s": 0})

    assert not review.is_error, error_text(review)
    assert review.structured_content["status"] == "escalated"
