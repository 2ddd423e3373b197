"""The LangGraph example of clients/python/docs/human-in-the-loop.md, run against a live
server: the agent pauses for review, the verdict (a reviewer's, for an escalation)
comes through the API, and the agent resumes with the signed decision and verifies it."""

import importlib.util
import re
from dataclasses import asdict
from pathlib import Path

import pytest
from langgraph.types import Command
from reviewapp_client import Client, VerificationError

from tests.clients.pipeline import evaluate_once_submitted, signing_key_exists
from tests.webhooks.helpers import api_client, one_lens_panel

CLIENT = Path(__file__).resolve().parents[2] / "clients" / "python"
EXAMPLE = CLIENT / "examples" / "langgraph_approval.py"
GUIDE = CLIENT / "docs" / "human-in-the-loop.md"
ANSWER = "Refunds are issued within 14 days."


def load_example():
    spec = importlib.util.spec_from_file_location("langgraph_approval", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


example = load_example()


@pytest.fixture
def review(live_server, transactional_db):
    with Client(live_server.url, api_client("submit", "read")[1]) as client:
        yield client


@pytest.fixture
def reviewer(live_server, transactional_db):
    with Client(live_server.url, api_client("read:all", "review")[1]) as client:
        yield client


def handled(review, ticket_id: str, *, sign_off: bool):
    """An agent for a panel that passes the answer (and escalates it, with `sign_off`),
    and what `handle` made of one ticket while the workers judged it."""
    signing_key_exists()
    panel = one_lens_panel(ANSWER, requires_sign_off=sign_off)
    keys = review.keys()  # pinned once, as the example says
    agent = example.build_agent(review, keys, panel=panel.name, write=lambda question: ANSWER)
    judged = evaluate_once_submitted(f"ticket-{ticket_id}")
    state = example.handle(agent, review, {"ticket_id": ticket_id, "question": "Refunds?"})
    judged.join()
    return agent, state


def test_an_approved_draft_is_sent_after_the_agent_resumes_with_the_signed_decision(review):
    _, state = handled(review, "t-1", sign_off=False)
    assert state["outcome"] == "approved" and state["reply"] == ANSWER


def test_an_escalated_draft_is_parked_until_a_reviewer_decides_then_resumed(review, reviewer):
    agent, parked = handled(review, "t-2", sign_off=True)
    assert set(parked) == {"parked", "escalation"}
    assert example.resume(agent, review, "t-2", parked["parked"]) == {"parked": parked["parked"]}

    reviewer.decide(parked["escalation"], "rejected", "Our policy says 30 days.")
    state = example.resume(agent, review, "t-2", parked["parked"])
    assert state["outcome"] == "rejected" and state["reply"] == example.FALLBACK


def test_a_forged_decision_does_not_resume_the_agent(review, reviewer):
    agent, parked = handled(review, "t-3", sign_off=True)
    reviewer.decide(parked["escalation"], "rejected", "No.")
    decision = asdict(review.get(parked["parked"]).decision)
    forged = {**decision, "payload": decision["payload"].replace("rejected", "approved")}
    config = {"configurable": {"thread_id": "t-3"}}
    with pytest.raises(VerificationError):
        agent.invoke(Command(resume=forged), config)
    assert "reply" not in agent.get_state(config).values


def test_the_guides_code_is_the_tested_examples():
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.DOTALL)
    sources = [path.read_text() for path in (EXAMPLE, EXAMPLE.with_name("langgraph_mcp_tasks.py"))]
    assert blocks
    for block in blocks:
        assert any(block in source for source in sources), (
            f"the guide shows code no example runs:\n{block}"
        )
