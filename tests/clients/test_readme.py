"""The client README's agent loop runs as written against a live server."""

import re
from pathlib import Path

import pytest

from tests.clients.pipeline import evaluate_once_submitted, signing_key_exists
from tests.webhooks.helpers import api_client, one_lens_panel

README = Path(__file__).resolve().parents[2] / "clients" / "python" / "README.md"
ANSWER = "Refunds are issued within 14 days."


class Agent:
    """The README's `my_agent`: one ticket, and a record of what the loop did with it."""

    def __init__(self, ticket: str):
        self.ticket = ticket
        self.did = []

    def tickets(self):
        return [self.ticket]

    def answer(self, ticket):
        return ANSWER

    def park(self, ticket, proposal_id):
        self.did.append(("park", ticket))

    def send(self, ticket, draft):
        self.did.append(("send", ticket))

    def revise(self, ticket, why):
        self.did.append(("revise", ticket))


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_every_python_example_in_the_readme_is_valid_python():
    for block in python_blocks():
        compile(block, str(README), "exec")


def run_agent_loop(live_server, ticket: str) -> Agent:
    loop = python_blocks()[0]
    token = api_client("submit", "read")[1]
    loop = loop.replace('"https://review.example.com"', repr(live_server.url))
    loop = loop.replace('"rva_…"', repr(token))
    agent = Agent(ticket)
    signing_key_exists()
    judged = evaluate_once_submitted(ticket)
    exec(compile(loop, str(README), "exec"), {"my_agent": agent})
    judged.join()
    return agent


@pytest.mark.parametrize(
    ("sign_off", "done"), [(False, "send"), (True, "park")], ids=["approved", "escalated"]
)
def test_the_readme_agent_loop_sends_what_is_approved_and_parks_what_is_escalated(
    live_server, transactional_db, sign_off, done
):
    one_lens_panel(ANSWER, name="support", requires_sign_off=sign_off)
    agent = run_agent_loop(live_server, f"ticket-{done}")
    assert agent.did == [(done, f"ticket-{done}")]
