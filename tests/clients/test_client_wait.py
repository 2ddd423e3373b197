"""wait(): woken by a webhook passed on with notify(), not only by its polls."""

import asyncio
import threading
import time

from reviewapp_client import AsyncClient, Client

from tests.clients.hostile import Hostile, Reply, proposal_body

EVALUATING, DECIDED = Reply(200, proposal_body("evaluating")), Reply(200, proposal_body("decided"))


def decided_event(proposal_id: int) -> dict:
    return {
        "type": "proposal.decided",
        "data": {"proposal": {"id": proposal_id, "status": "decided"}},
    }


def first_read(server: Hostile) -> bool:
    return len(server.arrivals) >= 1


def test_wait_wakes_when_a_webhook_says_so_rather_than_at_the_next_poll():
    with Hostile(EVALUATING, DECIDED) as server:
        with Client(server.url, "rva_test") as review:

            def webhook_arrives():
                poll_until(lambda: first_read(server))
                review.notify(decided_event(7))

            threading.Thread(target=webhook_arrives).start()
            started = time.monotonic()
            proposal = review.wait(7, timeout=60, poll=30)
    assert proposal.status == "decided" and time.monotonic() - started < 5


def test_async_wait_wakes_when_a_webhook_says_so_rather_than_at_the_next_poll():
    async def agent(server):
        async with AsyncClient(server.url, "rva_test") as review:

            async def webhook_arrives():
                while not first_read(server):
                    await asyncio.sleep(0.01)
                review.notify({"type": "other.event", "data": {}})  # ignored
                review.notify(decided_event(8))  # another proposal: wait naps on
                review.notify(decided_event(7))

            arrival = asyncio.create_task(webhook_arrives())
            started = time.monotonic()
            proposal = await review.wait(7, timeout=60, poll=30)
            await arrival
            return proposal, time.monotonic() - started

    with Hostile(EVALUATING, DECIDED) as server:
        proposal, took = asyncio.run(agent(server))
    assert proposal.status == "decided" and took < 5 and len(server.arrivals) == 2


def poll_until(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)
