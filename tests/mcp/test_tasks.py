"""The MCP Tasks extension end to end: the official SDK's client, over streamable HTTP,
against reviewapp in a real uvicorn (the client half is reviewapp_client.mcp_tasks)."""

import asyncio
import json
import time
from datetime import timedelta

import httpx2
from django.db import connections
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from reviewapp_client import verify_decision
from reviewapp_client.mcp_tasks import (
    CreatedTask,
    ReviewTasks,
    task_cancel,
    task_get,
    task_wait,
)

from reviewapp.ledger.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import Escalation, Proposal
from reviewapp.review.services.deadlines import escalation_expire
from tests.mcp.conftest import call
from tests.webhooks.helpers import api_client, one_lens_panel, run_pipeline

CONTENT = "The invoice total is 1,250 EUR."


def _session(server, token, extensions=()):
    """An SDK client over streamable HTTP with `token`; declares `extensions`."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
    transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
    return http, Client(transport, extensions=list(extensions))


def _arguments(panel, ref="job-1"):
    return {"panel": panel.name, "content": CONTENT, "external_ref": ref}


async def _request_task(server, token, panel, ref="job-1") -> CreatedTask:
    http, client = _session(server, token, [ReviewTasks()])
    async with http, client:
        return await client.session.call_tool(
            "request_review", _arguments(panel, ref), allow_claimed=True
        )


async def _get(server, token, task_id, declare=True):
    """tasks/get's task, or the MCPError it answered (caught inside the client's scope,
    which would otherwise wrap it in an exception group)."""
    http, client = _session(server, token, [ReviewTasks()] if declare else [])
    async with http, client:
        try:
            return await task_get(client.session, task_id)
        except MCPError as exc:
            return exc


async def _cancel(server, token, task_id):
    http, client = _session(server, token, [ReviewTasks()])
    async with http, client:
        try:
            return await task_cancel(client.session, task_id)
        except MCPError as exc:
            return exc


def test_request_review_returns_a_task_to_a_client_that_declares_the_extension(server, agent):
    panel = one_lens_panel(CONTENT)

    created = asyncio.run(_request_task(server, agent[1], panel))

    assert isinstance(created, CreatedTask) and created.result_type == "task"
    assert created.status == "working" and created.ttl_ms is None
    assert created.poll_interval_ms == 1000
    assert "Being judged" in created.status_message
    proposal = Proposal.objects.get(client=agent[0], external_ref="job-1")
    # Durably created: tasks/get resolves at once.
    assert asyncio.run(_get(server, agent[1], created.task_id)).status == "working"
    assert str(proposal.pk) in created.task_id


def test_a_client_that_does_not_declare_the_extension_gets_the_plain_result(server, agent):
    panel = one_lens_panel(CONTENT)

    result = call(server, agent[1], "request_review", _arguments(panel))

    assert set(result.structured_content) == {"id", "status", "url", "created"}


def test_tasks_get_completes_with_the_signed_decision_once_the_review_is_decided(server, agent):
    panel = one_lens_panel(CONTENT)
    created = asyncio.run(_request_task(server, agent[1], panel))
    run_pipeline(Proposal.objects.get(client=agent[0]))

    task = asyncio.run(_get(server, agent[1], created.task_id))

    assert task.status == "completed" and task.status_message.startswith("Decided: approved")
    review = task.result["structuredContent"]
    assert review["status"] == "decided" and review["final"] is True
    assert json.loads(task.result["content"][0]["text"]) == review
    signed = verify_decision(review["decision"], public_keys_b64(trusted_keys()))
    assert signed["outcome"] == "approved"


def test_the_sdk_client_follows_the_task_to_the_decided_review(server, agent):
    panel = one_lens_panel(CONTENT)

    async def request_and_decide():
        http, client = _session(server, agent[1], [ReviewTasks()])
        async with http, client:
            calling = asyncio.create_task(client.call_tool("request_review", _arguments(panel)))
            await asyncio.to_thread(_decide_once_submitted, agent[0])
            return await calling

    result = asyncio.run(request_and_decide())

    assert not result.is_error
    assert result.structured_content["outcome"] == "approved"
    assert result.structured_content["decision"]["basis"] == "system"


def _decide_once_submitted(client):
    deadline = time.monotonic() + 30
    while not Proposal.objects.filter(client=client).exists():
        assert time.monotonic() < deadline, "the review was never submitted"
        time.sleep(0.05)
    run_pipeline(Proposal.objects.get(client=client))
    connections.close_all()


def test_an_escalated_task_works_on_and_says_when_its_deadline_falls(server, agent):
    panel = one_lens_panel(CONTENT, requires_sign_off=True, review_deadline=timedelta(hours=2))
    created = asyncio.run(_request_task(server, agent[1], panel))
    run_pipeline(Proposal.objects.get(client=agent[0]))

    task = asyncio.run(_get(server, agent[1], created.task_id))

    escalation = Escalation.objects.get()
    assert task.status == "working" and task.poll_interval_ms == 15_000
    assert "Escalated to a human reviewer (sign_off)" in task.status_message
    assert "the panel's fallback rejects it" in task.status_message
    escalation_expire(escalation_id=escalation.pk, now=escalation.due_at)
    fallback = asyncio.run(_get(server, agent[1], created.task_id))
    decision = fallback.result["structuredContent"]["decision"]
    assert fallback.status == "completed"
    assert decision["basis"] == "fallback" and decision["fallback"]["on_deadline"] == "reject"


def test_tasks_cancel_withdraws_a_review_not_yet_decided(server, agent):
    panel = one_lens_panel(CONTENT, requires_sign_off=True)
    created = asyncio.run(_request_task(server, agent[1], panel))
    run_pipeline(Proposal.objects.get(client=agent[0]))  # escalated: waits for a person

    withdrawn, message = asyncio.run(_cancel(server, agent[1], created.task_id))

    assert withdrawn is True and "withdrawn" in message
    task = asyncio.run(_get(server, agent[1], created.task_id))
    assert task.status == "cancelled"
    assert Proposal.objects.get().status == Proposal.Status.WITHDRAWN
    assert Escalation.objects.get().status == Escalation.Status.WITHDRAWN


def test_tasks_cancel_of_a_decided_review_says_it_is_too_late(server, agent):
    panel = one_lens_panel(CONTENT)
    created = asyncio.run(_request_task(server, agent[1], panel))
    run_pipeline(Proposal.objects.get(client=agent[0]))

    withdrawn, message = asyncio.run(_cancel(server, agent[1], created.task_id))

    assert withdrawn is False
    assert "too late to withdraw" in message and "already approved" in message
    assert asyncio.run(_get(server, agent[1], created.task_id)).status == "completed"


def test_another_clients_token_cannot_read_or_cancel_a_task(server, agent):
    panel = one_lens_panel(CONTENT, requires_sign_off=True)
    created = asyncio.run(_request_task(server, agent[1], panel))
    _, other = api_client("submit", "read", "read:all")

    for method in (_get, _cancel):
        refused = asyncio.run(method(server, other, created.task_id))
        assert isinstance(refused, MCPError) and refused.error.code == -32602
        assert "Task not found" in refused.error.message
    assert Proposal.objects.get().status != Proposal.Status.WITHDRAWN


def test_a_made_up_task_id_is_not_found(server, agent):
    refused = asyncio.run(_get(server, agent[1], "1.1:forged"))

    assert isinstance(refused, MCPError) and refused.error.code == -32602


def test_tasks_get_without_declaring_the_extension_is_a_missing_capability(server, agent):
    panel = one_lens_panel(CONTENT)
    created = asyncio.run(_request_task(server, agent[1], panel))

    refused = asyncio.run(_get(server, agent[1], created.task_id, declare=False))

    assert isinstance(refused, MCPError) and refused.error.code == -32021


def test_task_wait_polls_until_the_task_is_terminal(server, agent):
    panel = one_lens_panel(CONTENT, requires_sign_off=True)
    created = asyncio.run(_request_task(server, agent[1], panel))

    async def wait_briefly():
        http, client = _session(server, agent[1], [ReviewTasks()])
        async with http, client:
            return await task_wait(client.session, created.task_id, timeout_s=0.5)

    assert asyncio.run(wait_briefly()).status == "working"
