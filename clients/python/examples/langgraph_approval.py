"""A LangGraph agent that pauses for reviewapp's verdict before it acts.

The graph drafts a reply, submits it for review and pauses with `interrupt()`.
The code that runs the graph waits for the verdict; once it is signed, it
resumes the graph with `Command(resume=<the signed decision>)`, and the graph
verifies the signature before it acts. An escalated draft waits for a human:
the task is parked (LangGraph's checkpointer keeps it) and resumed when the
`proposal.decided` webhook arrives, with no thread held meanwhile.

Explained in docs/human-in-the-loop.md; run against a live server by
tests/clients/test_human_in_the_loop.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt
from reviewapp_client import Client, VerificationError, WaitTimeout, verify_decision

FALLBACK = "Thanks for your patience: a colleague will answer you shortly."


class Ticket(TypedDict, total=False):
    ticket_id: str
    question: str
    draft: str
    outcome: str  # "approved" | "rejected"
    reply: str


def build_agent(
    review: Client, keys: Mapping[str, str], *, panel: str, write: Callable[[str], str]
):
    """The graph: draft → ask_for_review (pauses) → act. `keys` are the server's
    public keys, fetched once and pinned; `write` is your model call."""

    def draft(ticket: Ticket) -> Ticket:
        return {"draft": write(ticket["question"])}

    def ask_for_review(ticket: Ticket) -> Ticket:
        # LangGraph runs this node again from the top when it resumes, so the
        # submission runs twice: external_ref makes the second one find the first.
        sent = review.submit(
            panel=panel, content=ticket["draft"], external_ref=f"ticket-{ticket['ticket_id']}"
        )
        decision = interrupt({"proposal_id": sent.id, "url": sent.url})
        # VerificationError if forged, or if it approved another text than this draft.
        signed = verify_decision(decision, keys, content=ticket["draft"])
        if signed["proposal"]["id"] != sent.id:
            raise VerificationError("the decision is about another proposal")
        return {"outcome": signed["outcome"]}

    def act(ticket: Ticket) -> Ticket:
        return {"reply": ticket["draft"] if ticket["outcome"] == "approved" else FALLBACK}

    graph = StateGraph(Ticket)
    graph.add_node(draft)
    graph.add_node(ask_for_review)
    graph.add_node(act)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "ask_for_review")
    graph.add_edge("ask_for_review", "act")
    graph.add_edge("act", END)
    # Use a persistent checkpointer (e.g. langgraph-checkpoint-postgres) in
    # production: a parked ticket must outlive the process.
    return graph.compile(checkpointer=InMemorySaver())


def handle(agent, review: Client, ticket: Ticket, *, wait_s: float = 600) -> dict[str, Any]:
    """Run a ticket to its reply; or park it, paused, while a human decides."""
    config = {"configurable": {"thread_id": ticket["ticket_id"]}}
    state = agent.invoke(ticket, config)
    while "__interrupt__" in state:
        proposal_id = state["__interrupt__"][0].value["proposal_id"]
        try:
            proposal = review.wait(proposal_id, timeout=wait_s)
        except WaitTimeout:
            return {"parked": proposal_id}  # not even judged yet: resume() it later
        if proposal.escalated:
            # A human must decide, in minutes or days: park the ticket rather than
            # hold this worker; resume() when the proposal.decided webhook arrives.
            return {"parked": proposal_id, "escalation": proposal.escalation.id}
        state = agent.invoke(Command(resume=asdict(proposal.decision)), config)
    return state


def resume(agent, review: Client, ticket_id: str, proposal_id: int) -> dict[str, Any]:
    """Continue a parked ticket once its proposal is decided (say, from your
    `proposal.decided` webhook handler). The decision is read back from the API."""
    proposal = review.get(proposal_id)
    if proposal.decision is None:
        return {"parked": proposal_id}
    config = {"configurable": {"thread_id": ticket_id}}
    return agent.invoke(Command(resume=asdict(proposal.decision)), config)
