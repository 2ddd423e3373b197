"""The LangGraph example that follows its review as an MCP task, run against reviewapp in
a real uvicorn through the official `mcp` SDK's client: the agent pauses on a task, the
verdict (a reviewer's, for an escalation) completes it, and the agent resumes with the
signed decision and verifies it."""

import asyncio
import importlib.util
import sys
from pathlib import Path

import httpx2
import pytest
from langgraph.types import Command
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from reviewapp_client import Client as RestClient
from reviewapp_client import VerificationError
from reviewapp_client.mcp_tasks import ReviewTasks, task_get

from reviewapp.ledger.keys import public_keys_b64, trusted_keys
from reviewapp.review.models import Escalation
from tests.clients.pipeline import evaluate_once_submitted, signing_key_exists
from tests.conftest import marks
from tests.mcp.conftest import LiveServer
from tests.webhooks.helpers import api_client, one_lens_panel

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
EXAMPLE = CLIENT / "examples" / "langgraph_mcp_tasks.py"
ANSWER = "Refunds are issued within 14 days."


def load_example():
    spec = importlib.util.spec_from_file_location("langgraph_mcp_tasks", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass resolves annotations through it
    spec.loader.exec_module(module)
    return module


example = load_example()


@pytest.fixture
@marks("live_server")
def server(transactional_db):
    with LiveServer() as live:
        yield live


@pytest.fixture
def token(server):
    return api_client("submit", "read")[1]


def run_agent(server, token, steps, *, tasks=True):
    """Open one MCP session (declaring the Tasks extension with `tasks`) and run
    `steps(session)`, a coroutine function, in it."""

    async def session_run():
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60)
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with http, Client(transport, extensions=[ReviewTasks()] if tasks else []) as client:
            return await steps(client.session)

    return asyncio.run(session_run())


def agent_for(*, sign_off: bool):
    signing_key_exists()
    panel = one_lens_panel(ANSWER, requires_sign_off=sign_off)
    keys = public_keys_b64(trusted_keys())  # pinned once, as the example says
    return example.build_agent(keys, panel=panel.name, write=lambda question: ANSWER)


def handled(server, token, ticket_id: str, *, sign_off: bool, tasks=True, wait_s=30):
    """What `handle` made of one ticket while the workers judged it."""

    agent = agent_for(sign_off=sign_off)
    judged = evaluate_once_submitted(f"ticket-{ticket_id}")

    async def steps(session):
        state = await example.handle(
            agent, session, {"ticket_id": ticket_id, "question": "Refunds?"}, wait_s=wait_s
        )
        await asyncio.to_thread(judged.join)
        return state

    return agent, run_agent(server, token, steps, tasks=tasks)


def test_an_approved_draft_is_sent_once_its_task_completes(server, token):
    _, state = handled(server, token, "t-1", sign_off=False)
    assert state["outcome"] == "approved" and state["reply"] == ANSWER


def test_a_session_without_the_tasks_extension_waits_with_wait_for_review(server, token):
    _, state = handled(server, token, "t-2", sign_off=False, tasks=False)
    assert state["outcome"] == "approved" and state["reply"] == ANSWER


def test_an_escalated_draft_is_parked_on_its_task_until_a_reviewer_decides(server, token):
    agent, parked = handled(server, token, "t-3", sign_off=True, wait_s=0.5)
    assert set(parked) == {"parked"} and set(parked["parked"]) == {"task_id"}
    assert run_agent(server, token, lambda s: example.resume(agent, s, "t-3")) == parked

    escalation = Escalation.objects.get(proposal__external_ref="ticket-t-3")
    with RestClient(server.url, api_client("read:all", "review")[1]) as reviewer:
        reviewer.decide(escalation.pk, "rejected", "Our policy says 30 days.")
    state = run_agent(server, token, lambda s: example.resume(agent, s, "t-3"))
    assert state["outcome"] == "rejected" and state["reply"] == example.FALLBACK


def test_a_forged_decision_does_not_resume_the_agent(server, token):
    agent, parked = handled(server, token, "t-4", sign_off=True, wait_s=0.5)
    escalation = Escalation.objects.get(proposal__external_ref="ticket-t-4")
    with RestClient(server.url, api_client("read:all", "review")[1]) as reviewer:
        reviewer.decide(escalation.pk, "rejected", "No.")
    task = run_agent(server, token, lambda s: task_get(s, parked["parked"]["task_id"]))
    review = task.result["structuredContent"]
    decision = review["decision"]
    forged = {**decision, "payload": decision["payload"].replace("rejected", "approved")}
    config = {"configurable": {"thread_id": "t-4"}}

    async def resumed(session):
        # Caught inside the session's scope, which would wrap it in an exception group.
        forged_review = Command(resume={**review, "decision": forged})
        try:
            await agent.ainvoke(forged_review, config, context=example.Reviewapp(session))
        except VerificationError as exc:
            return exc

    assert isinstance(run_agent(server, token, resumed), VerificationError)
    assert "reply" not in asyncio.run(agent.aget_state(config)).values
