"""The Python client library (clients/python) against a live server."""

import json
import threading
import time

import pytest
from reviewapp_client import (
    ApiError,
    Client,
    Decision,
    Proposal,
    VerificationError,
    WaitTimeout,
    verify_decision,
    verify_webhook,
)
from standardwebhooks import Webhook

from reviewapp.core import webhooks as core_webhooks
from reviewapp.review.models import Lens
from tests.factories import LensFactory, PanelFactory
from tests.webhooks.helpers import api_client, one_lens_panel, run_pipeline

CONTENT = "Refunds are issued within 14 days."


@pytest.fixture
def agent(live_server):
    client, token = api_client("submit", "read", "judge")
    with Client(live_server.url, token) as review:
        review.row = client
        yield review


@pytest.fixture
def panel(transactional_db):
    return one_lens_panel(CONTENT)


def decide(proposal_id: int) -> None:
    from reviewapp.review.models import Proposal as Row

    run_pipeline(Row.objects.get(pk=proposal_id))


def test_submit_is_idempotent_by_external_ref(agent, panel):
    first = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-1")
    again = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-1")
    assert (first.created, again.created) == (True, False)
    assert first.id == again.id


def test_errors_carry_the_apis_detail(agent, panel):
    agent.submit(panel=panel.name, content=CONTENT, external_ref="t-2")
    with pytest.raises(ApiError) as conflict:
        agent.submit(panel=panel.name, content="something else", external_ref="t-2")
    assert conflict.value.status == 409
    assert "was already used for proposal" in conflict.value.detail
    with pytest.raises(ApiError) as missing:
        agent.get(999999)
    assert missing.value.status == 404


def test_get_returns_a_typed_proposal_with_its_decision(agent, panel):
    sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-3")
    decide(sent.id)
    proposal = agent.get(sent.id)
    assert isinstance(proposal, Proposal) and isinstance(proposal.decision, Decision)
    assert proposal.status == "decided" and proposal.approved
    assert proposal.judgements[0].verdict == "pass"


def test_wait_polls_until_the_proposal_is_final(agent, panel):
    sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-4")
    threading.Timer(0.5, decide, [sent.id]).start()
    proposal = agent.wait(sent.id, timeout=20, poll=0.1)
    assert proposal.status == "decided"


def test_wait_returns_as_soon_as_a_webhook_says_so(agent, panel):
    sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-5")
    result = {}

    def waiter():
        started = time.monotonic()
        result["proposal"] = agent.wait(sent.id, timeout=60, poll=30)
        result["took"] = time.monotonic() - started

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.5)
    decide(sent.id)
    agent.notify(
        {"type": "proposal.decided", "data": {"proposal": {"id": sent.id, "status": "decided"}}}
    )
    thread.join(10)
    assert result["proposal"].status == "decided"
    assert result["took"] < 5  # not the 30 s poll interval


def test_wait_times_out_with_the_last_state(agent, panel):
    sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-7")
    with pytest.raises(WaitTimeout) as timeout:
        agent.wait(sent.id, timeout=0.5, poll=0.1)
    assert timeout.value.proposal.status == "queued"


def test_verify_decision_against_the_servers_keys(agent, panel):
    sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-8")
    decide(sent.id)
    decision = agent.get(sent.id).decision
    keys = agent.keys()
    signed = verify_decision(decision, keys)
    assert signed["proposal"]["id"] == sent.id and signed["outcome"] == "approved"


def test_a_tampered_decision_or_an_unknown_key_fails_verification(agent, panel):
    sent = agent.submit(panel=panel.name, content=CONTENT, external_ref="t-9")
    decide(sent.id)
    decision = agent.get(sent.id).decision
    keys = agent.keys()
    forged = {**decision.__dict__, "payload": decision.payload.replace("approved", "rejected")}
    with pytest.raises(VerificationError, match="does not verify"):
        verify_decision(forged, keys)
    with pytest.raises(VerificationError, match="not among your keys"):
        verify_decision(decision, {})


def test_judge_answers_for_a_bound_external_lens(agent, transactional_db):
    outside = LensFactory(name="outside", backend=Lens.Backend.EXTERNAL)
    outside.judge_clients.add(agent.row)
    panel = PanelFactory(lenses=[outside], need=1)
    submitter, token = api_client("submit")
    with Client(agent._http.base_url.__str__(), token) as other:
        sent = other.submit(panel=panel.name, content=CONTENT, external_ref="j-1")
    judgement = agent.judge(sent.id, lens="outside", verdict="pass", rationale="Fine.")
    assert (judgement.lens, judgement.verdict) == ("outside", "pass")
    with pytest.raises(ApiError) as again:
        agent.judge(sent.id, lens="outside", verdict="pass")
    assert again.value.status == 409


def signed_delivery(secret_text: str, body: bytes, timestamp: int | None = None):
    timestamp = int(time.time()) if timestamp is None else timestamp
    headers = {
        "Webhook-Id": "msg_1",
        "Webhook-Timestamp": str(timestamp),
        "Webhook-Signature": core_webhooks.signature(
            secret=core_webhooks.secret_bytes(secret_text),
            msg_id="msg_1",
            timestamp=timestamp,
            body=body,
        ),
    }
    return headers


def test_verify_webhook_accepts_what_the_server_and_the_reference_library_sign():
    secret = core_webhooks.secret_text(b"s" * 32)
    body = json.dumps({"type": "webhook.ping", "data": {}}).encode()
    assert verify_webhook(signed_delivery(secret, body), body, secret)["type"] == "webhook.ping"
    reference = Webhook(secret)
    from datetime import UTC, datetime

    now = datetime.now(tz=UTC)
    headers = {
        "webhook-id": "msg_2",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": "v0,bogus v1,xx " + reference.sign("msg_2", now, body.decode()),
    }
    assert verify_webhook(headers, body, secret)["data"] == {}


def test_verify_webhook_refuses_a_wrong_secret_a_changed_body_and_a_replay():
    secret = core_webhooks.secret_text(b"s" * 32)
    body = b'{"type":"webhook.ping"}'
    headers = signed_delivery(secret, body)
    with pytest.raises(VerificationError, match="no webhook signature"):
        verify_webhook(headers, body, core_webhooks.secret_text(b"t" * 32))
    with pytest.raises(VerificationError, match="no webhook signature"):
        verify_webhook(headers, body + b" ", secret)
    old = signed_delivery(secret, body, timestamp=int(time.time()) - 3600)
    with pytest.raises(VerificationError, match="too old"):
        verify_webhook(old, body, secret)
