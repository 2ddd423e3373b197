"""Client and AsyncClient against a live server with real tokens: typed answers, listings
across pages, escalations decided through the API, webhook management, errors per kind."""

import asyncio
import threading

import pytest
from reviewapp_client import (
    AsyncClient,
    AuthenticationError,
    Claim,
    Client,
    ConflictError,
    Decision,
    Escalation,
    LensFailure,
    NotFoundError,
    PermissionDeniedError,
    ProposalSummary,
    Tally,
    UnprocessableEntityError,
    Webhook,
    verify_decision,
)

from reviewapp.review.models import Proposal as Row
from tests.factories import LensFactory, PanelFactory
from tests.webhooks.helpers import api_client, one_lens_panel, run_pipeline

CONTENT = "Refunds are issued within 14 days."


@pytest.fixture
def token(transactional_db):
    return api_client("submit", "read", "judge")[1]


@pytest.fixture
def reviewer_token(transactional_db):
    return api_client("read:all", "review")[1]  # a reviewer sees every client's proposals


@pytest.fixture
def panel(transactional_db):
    return one_lens_panel(CONTENT)


@pytest.fixture
def sign_off_panel(transactional_db):
    """Every proposal escalates: a human must sign off."""
    return one_lens_panel(CONTENT, requires_sign_off=True)


def evaluate(proposal_id: int) -> None:
    run_pipeline(Row.objects.get(pk=proposal_id))


def test_async_client_submits_waits_and_verifies(live_server, token, panel):
    async def agent():
        async with AsyncClient(live_server.url, token) as review:
            sent = await review.submit(panel=panel.name, content=CONTENT, external_ref="a-1")
            threading.Timer(0.3, evaluate, [sent.id]).start()
            proposal = await review.wait(sent.id, timeout=20, poll=0.1)
            return await review.keys(), proposal  # the test server makes its key on first use

    keys, proposal = asyncio.run(agent())
    assert proposal.status == "decided" and proposal.approved
    assert verify_decision(proposal.decision, keys)["outcome"] == "approved"


def test_a_proposal_comes_back_typed_down_to_its_claims(live_server, token, panel):
    with Client(live_server.url, token) as review:
        sent = review.submit(panel=panel.name, content=CONTENT, external_ref="t-1")
        evaluate(sent.id)
        proposal = review.get(sent.id)
    assert isinstance(proposal.tally, Tally) and proposal.tally.outcome == "reached_pass"
    claim = proposal.judgements[0].claims[0]
    assert isinstance(claim, Claim) and claim.text == CONTENT
    assert (claim.anchor.kind, claim.anchor.start_utf16) == ("answer_body", 0)
    assert proposal.evidence[0].verdict == "pass" and proposal.lens_failures == []


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_listings_follow_every_page(live_server, token, panel, kind):
    with Client(live_server.url, token) as review:
        ids = [
            review.submit(panel=panel.name, content=CONTENT, external_ref=f"p-{n}").id
            for n in range(5)
        ]
    if kind == "sync":
        with Client(live_server.url, token) as review:
            listed = list(review.list_proposals(page_size=2))
            pages = list(review.list_proposals(page_size=2).pages())
    else:

        async def read():
            async with AsyncClient(live_server.url, token) as review:
                listed = [p async for p in review.list_proposals(page_size=2)]
                pages = [p async for p in review.list_proposals(page_size=2).pages()]
                return listed, pages

        listed, pages = asyncio.run(read())
    assert [p.id for p in listed] == ids[::-1]
    assert all(isinstance(p, ProposalSummary) for p in listed)
    assert [len(page.items) for page in pages] == [2, 2, 1]


def test_an_escalated_proposal_waits_for_a_human_who_decides_through_the_api(
    live_server, token, reviewer_token, sign_off_panel
):
    with Client(live_server.url, token) as agent, Client(live_server.url, reviewer_token) as human:
        sent = agent.submit(panel=sign_off_panel.name, content=CONTENT, external_ref="e-1")
        evaluate(sent.id)
        escalated = agent.wait(sent.id, timeout=10)
        assert escalated.escalated and escalated.decision is None
        inbox = list(human.list_escalations(status="open"))
        assert [e.proposal for e in inbox] == [sent.id] and isinstance(inbox[0], Escalation)

        decision = human.decide(escalated.escalation.id, "rejected", "The policy says 30 days.")
        decided = agent.wait(sent.id, until=("decided",), timeout=10)
        keys = agent.keys()
    assert isinstance(decision, Decision) and decision.basis == "reviewer"
    assert decided.decision == decision and not decided.approved
    assert verify_decision(decided.decision, keys)["outcome"] == "rejected"


def test_an_escalation_read_through_the_client_says_why_it_was_raised(live_server, token):
    client = Client(live_server.url, token)
    panel = PanelFactory(lenses=[LensFactory(name="silent")])  # nothing recorded: it fails
    with client as agent:
        sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="why-1")
        evaluate(sent.id)
        escalated = agent.wait(sent.id, timeout=10)
        escalation = agent.get_escalation(escalated.escalation.id)
    [failure] = escalation.lens_failures
    assert isinstance(failure, LensFailure)
    assert (failure.lens, failure.kind, failure.attempts) == ("silent", "misconfigured", 0)
    assert escalated.escalation.lens_failures == escalation.lens_failures
    assert "lens silent (misconfigured)" in escalation.explanation
    assert escalation.inconclusive_checkers == []


def test_decisions_are_exported_in_id_order_across_pages(live_server, token, panel):
    with Client(live_server.url, token) as review:
        for n in range(3):
            evaluate(review.submit(panel=panel.name, content=CONTENT, external_ref=f"d-{n}").id)
        decisions = list(review.list_decisions(page_size=2))
        later = list(review.list_decisions(after=decisions[0].id))
        one = review.get_decision(decisions[1].id)
    assert [d.id for d in decisions] == sorted(d.id for d in decisions) and len(decisions) == 3
    assert later == decisions[1:] and one == decisions[1]
    assert decisions[1].prev_hash is None  # signed alone (v2)


def test_async_decide_of_a_decided_escalation_is_a_conflict(
    live_server, token, reviewer_token, sign_off_panel
):
    with Client(live_server.url, token) as agent:
        sent = agent.submit(panel=sign_off_panel.name, content=CONTENT, external_ref="e-2")
        evaluate(sent.id)
        escalation_id = agent.get(sent.id).escalation.id

    async def decide_twice():
        async with AsyncClient(live_server.url, reviewer_token) as human:
            first = await human.decide(escalation_id, "approved", "Checked the policy.")
            with pytest.raises(ConflictError):
                await human.decide(escalation_id, "rejected", "Changed my mind.")
            return first

    assert asyncio.run(decide_twice()).outcome == "approved"


def test_webhooks_are_managed_through_the_client(live_server, token):
    with Client(live_server.url, token) as review:
        created = review.create_webhook(
            "http://127.0.0.1:8999/hook", ["proposal.decided"], description="agent"
        )
        listed = review.list_webhooks()
        fetched = review.get_webhook(created.id)
        delivery = review.test_webhook(created.id)
        review.delete_webhook(created.id)
        with pytest.raises(NotFoundError):
            review.get_webhook(created.id)
    assert isinstance(created, Webhook) and created.secret.startswith("whsec_")
    assert [w.id for w in listed] == [created.id] and listed[0].secret is None
    assert fetched.events == ["proposal.decided"] and fetched.description == "agent"
    assert delivery.startswith("msg_")


def test_the_servers_refusals_come_out_as_their_own_classes(live_server, token, panel):
    with Client(live_server.url, "rva_not_a_token") as stranger:
        with pytest.raises(AuthenticationError):
            stranger.get(1)
    with Client(live_server.url, token) as review:
        with pytest.raises(PermissionDeniedError, match="review"):
            review.decide(1, "approved", "No scope for this.")
        with pytest.raises(UnprocessableEntityError) as invalid:
            review.submit(panel="no-such-panel", content=CONTENT, external_ref="x-1")
        with pytest.raises(NotFoundError):
            review.get(999999)
    assert invalid.value.detail[0]["loc"][-1] == "panel"


def test_the_panels_and_an_escalations_deadline_are_read_through_the_client(live_server, token):
    from datetime import timedelta

    panel = one_lens_panel(
        CONTENT, requires_sign_off=True, review_deadline=timedelta(hours=2), on_deadline="approve"
    )
    with Client(live_server.url, token) as agent:
        [listed] = agent.list_panels()
        sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="due-1")
        run_pipeline(Row.objects.get(pk=sent.id))
        escalated = agent.get(sent.id)

    assert (listed.name, listed.review_deadline_seconds, listed.on_deadline) == (
        panel.name, 7200, "approve",
    )  # fmt: skip
    assert escalated.escalation.on_deadline == "approve"
    assert escalated.escalation.due_at is not None


def test_the_async_client_lists_panels_too(live_server, token):
    PanelFactory(name="house", lenses=[LensFactory()])

    async def listed():
        async with AsyncClient(live_server.url, token) as agent:
            return await agent.list_panels()

    assert [p.name for p in asyncio.run(listed())] == ["house"]


def test_panels_and_a_guarantee_come_back_typed(live_server, token, reviewer_token, panel):
    from reviewapp_client import Guarantee, GuaranteeSummary

    from tests.guarantee.builders import guaranteed

    guaranteed(panel, target=0.9)
    with Client(live_server.url, token) as agent, Client(live_server.url, reviewer_token) as ops:
        [listed] = [p for p in agent.list_panels() if p.name == panel.name]
        assert listed.guarantee == GuaranteeSummary(target=0.9, confidence=0.95)
        assert [lens.name for lens in listed.lenses] == [panel.ordered_lenses()[0].name]
        guarantee = ops.get_guarantee(panel.name)
        assert isinstance(guarantee, Guarantee) and guarantee.enabled
        assert guarantee.promise.startswith("With 95 % confidence, at least 90 %")
        assert {p.outcome for p in guarantee.patterns} == {"approved", "rejected"}
        assert all(p.routed == "human" for p in guarantee.patterns)
        # The figures count every client's proposals: a submitting agent reads none.
        with pytest.raises(NotFoundError, match="read:all"):
            agent.get_guarantee(panel.name)


def test_async_client_reads_a_guarantee(live_server, reviewer_token, panel):
    async def read():
        async with AsyncClient(live_server.url, reviewer_token) as ops:
            return await ops.get_guarantee(panel.name)

    assert asyncio.run(read()).enabled is False
