"""What a token can see (issue 15 point 2): its own proposals and those it is bound to judge."""

import pytest

from reviewapp.review.models import Decision, Escalation, Lens, Proposal
from reviewapp.review.services.escalations import escalation_decide
from tests.factories import LensFactory, PanelFactory, ReviewerFactory, recorded

from .conftest import Api, client_of, evaluated, lens_answer, make_token

pytestmark = pytest.mark.django_db


def _submitted(api: Api, panel, content: str) -> Proposal:
    response = api.post("/api/proposals", {"panel": panel.name, "content": content})
    assert response.status_code == 202
    return Proposal.objects.get(pk=response.json()["id"])


@pytest.fixture
def world():
    """Two submitting clients; a judge bound to an external lens on one of the panels."""
    worker = LensFactory()
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    judge_token = make_token("judge", "read")
    outside.judge_clients.add(client_of(judge_token))
    external = PanelFactory(lenses=[worker, outside], need=2)
    plain_lens = LensFactory()
    plain = PanelFactory(lenses=[plain_lens], requires_sign_off=True)
    alice, bob = Api(make_token("submit", "read")), Api(make_token("submit", "judge", "read"))
    recorded(plain_lens, "Bob's secret answer.", lens_answer("pass", "secret"))
    return {
        "alice": alice,
        "bob": bob,
        "judge": Api(judge_token),
        "alice_plain": _submitted(alice, plain, "Alice's answer."),
        "alice_external": _submitted(alice, external, "Alice awaits a judge."),
        "bob_plain": _submitted(bob, plain, "Bob's secret answer."),
    }


def _listed(api: Api) -> set[int]:
    return {p["id"] for p in api.get("/api/proposals").json()["items"]}


def test_a_token_lists_only_its_clients_proposals(world):
    assert _listed(world["alice"]) == {world["alice_plain"].pk, world["alice_external"].pk}
    assert _listed(world["bob"]) == {world["bob_plain"].pk}


def test_a_judge_lists_the_proposals_its_lens_awaits(world):
    assert _listed(world["judge"]) == {world["alice_external"].pk}


def test_read_all_lifts_the_rule(world):
    assert len(_listed(Api(make_token("read:all")))) == 3


def test_another_clients_proposal_by_id_is_404_not_403(world):
    response = world["alice"].get(f"/api/proposals/{world['bob_plain'].pk}")

    assert response.status_code == 404
    assert "secret" not in response.content.decode()


def test_a_judge_may_read_the_proposal_it_is_bound_to(world):
    response = world["judge"].get(f"/api/proposals/{world['alice_external'].pk}")

    assert response.status_code == 200
    assert response.json()["content"] == "Alice awaits a judge."


def test_judging_another_clients_proposal_is_404(world):
    response = world["bob"].post(
        f"/api/proposals/{world['alice_external'].pk}/judgements",
        {"lens": "outside", "verdict": "pass", "rationale": "", "claims": []},
    )

    assert response.status_code == 404


@pytest.fixture
def escalated_for_bob(world):
    from reviewapp.review.evaluation.tasks import evaluate_proposal

    proposal = world["bob_plain"]
    evaluate_proposal(proposal.pk)
    return Escalation.objects.get(proposal=proposal)


def test_escalations_of_other_clients_are_not_listed(world, escalated_for_bob):
    alice_sees = world["alice"].get("/api/escalations").json()["items"]
    bob_sees = world["bob"].get("/api/escalations").json()["items"]

    assert alice_sees == []
    assert [e["id"] for e in bob_sees] == [escalated_for_bob.pk]


def test_deciding_another_clients_escalation_is_404_and_writes_nothing(world, escalated_for_bob):
    # Alice's token may judge and read, not review: Bob's escalation is not hers to see.
    judge_token = Api(make_token("submit", "judge", "read"))

    response = judge_token.post(
        f"/api/escalations/{escalated_for_bob.pk}/decision",
        {"outcome": "approved", "rationale": "Looks fine."},
    )

    assert response.status_code in (403, 404)
    assert not Decision.objects.exists()
    assert judge_token.get(f"/api/escalations/{escalated_for_bob.pk}").status_code == 404


def test_a_review_token_made_the_obvious_way_sees_and_decides_what_it_may_review(
    world, escalated_for_bob
):
    """Issue 42: `review,read` listed no escalation (it needed read:all, which no example
    said): a token that may review sees every escalation, and the proposal behind it."""
    reviewer = Api(make_token("review", "read"))

    listed = reviewer.get("/api/escalations?status=open").json()["items"]
    proposal = reviewer.get(f"/api/proposals/{escalated_for_bob.proposal_id}")
    decided = reviewer.post(
        f"/api/escalations/{escalated_for_bob.pk}/decision",
        {"outcome": "approved", "rationale": "Looks fine."},
    )

    assert [e["id"] for e in listed] == [escalated_for_bob.pk]
    assert proposal.status_code == 200
    assert decided.status_code == 201
    # What was never escalated stays its submitter's.
    assert _listed(reviewer) == {escalated_for_bob.proposal_id}


def test_decisions_of_other_clients_are_neither_listed_nor_readable(world, escalated_for_bob):
    decision = escalation_decide(
        escalation_id=escalated_for_bob.pk,
        outcome="approved",
        rationale="Fine.",
        user=ReviewerFactory(),
        decided_by_name="rita",
    )

    assert world["alice"].get("/api/decisions").json()["items"] == []
    assert world["alice"].get(f"/api/decisions/{decision.pk}").status_code == 404
    assert [d["id"] for d in world["bob"].get("/api/decisions").json()["items"]] == [decision.pk]
    assert world["bob"].get(f"/api/decisions/{decision.pk}").status_code == 200


def test_a_browser_reviewer_still_sees_every_proposal(world, client):
    client.force_login(ReviewerFactory())

    items = client.get("/api/proposals").json()["items"]

    assert len(items) == 3


@pytest.mark.parametrize("count", [1, 5])
def test_a_narrow_tokens_list_takes_the_same_queries_however_many_rows(
    db, count, django_assert_num_queries
):
    token = make_token("submit", "read")
    api = Api(token)
    for i in range(count):
        evaluated(f"Someone else's answer {i}.")
    panel = PanelFactory(lenses=[LensFactory()])
    for i in range(count):
        _submitted(api, panel, f"Mine {i}.")
    api.get("/api/proposals")  # the first use of a token records last_used_at

    # The token lookup and the page: the visibility rule is a subquery, not a query.
    with django_assert_num_queries(2):
        response = api.get("/api/proposals")

    assert len(response.json()["items"]) == count
