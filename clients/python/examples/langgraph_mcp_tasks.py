"""A LangGraph agent that pauses for reviewapp's verdict, following it as an MCP task.

The MCP twin of langgraph_approval.py (which uses the REST client). The graph
drafts a reply and submits it with the MCP tool `request_review`. A server that
offers the Tasks extension (`io.modelcontextprotocol/tasks`) answers a session
that declares it with a task, and the graph pauses with `interrupt()`, keeping
only the task's id. The code that runs the graph follows the task (`tasks/get`,
at the interval the server asks); once it completes, it resumes the graph with
the review, and the graph verifies the signed decision, and that it approved
this very draft, before it acts. A task still working after `wait_s` (a person
decides, in minutes or days) is parked: its id is all there is to keep, and
`resume()` looks again later. A session without the extension gets the review
itself instead, and the runner waits with `wait_for_review`.

Explained in docs/human-in-the-loop.md; run against a live server by
tests/clients/test_human_in_the_loop_mcp.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt
from mcp.client.session import ClientSession
from reviewapp_client import VerificationError, verify_decision
from reviewapp_client.mcp_tasks import CreatedTask, task_get, task_wait

FALLBACK = "Thanks for your patience: a colleague will answer you shortly."


class Ticket(TypedDict, total=False):
    ticket_id: str
    question: str
    draft: str
    outcome: str  # "approved" | "rejected"
    reply: str


@dataclass
class Reviewapp:
    """What each run of the graph is given: an open MCP session with reviewapp (one that
    declares `ReviewTasks()` gets tasks). A parked ticket may resume in another process,
    with another session."""

    session: ClientSession


def build_agent(keys: Mapping[str, str], *, panel: str, write: Callable[[str], str]):
    """The graph: draft → ask_for_review (pauses) → act. `keys` are the server's public
    keys, fetched once and pinned; `write` is your model call."""

    async def draft(ticket: Ticket) -> Ticket:
        return {"draft": write(ticket["question"])}

    async def ask_for_review(ticket: Ticket, runtime: Runtime[Reviewapp]) -> Ticket:
        # LangGraph runs this node again from the top when it resumes, so the
        # request runs twice: external_ref makes the second one find the first.
        arguments = {
            "panel": panel,
            "content": ticket["draft"],
            "external_ref": f"ticket-{ticket['ticket_id']}",
        }
        session = runtime.context.session
        answer = await session.call_tool("request_review", arguments, allow_claimed=True)
        if isinstance(answer, CreatedTask):
            review = interrupt({"task_id": answer.task_id})
        else:  # a session without the Tasks extension: the review as it stands
            review = interrupt({"proposal_id": answer.structured_content["id"]})
        # VerificationError if forged, or if it approved another text than this draft.
        signed = verify_decision(review["decision"], keys, content=ticket["draft"])
        if signed["proposal"]["id"] != review["id"]:
            raise VerificationError("the decision is about another proposal")
        return {"outcome": signed["outcome"]}

    async def act(ticket: Ticket) -> Ticket:
        return {"reply": ticket["draft"] if ticket["outcome"] == "approved" else FALLBACK}

    graph = StateGraph(Ticket, context_schema=Reviewapp)
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


async def handle(
    agent, session: ClientSession, ticket: Ticket, *, wait_s: float = 600
) -> dict[str, Any]:
    """Run a ticket to its reply; or park it, paused, while a human decides."""
    config = {"configurable": {"thread_id": ticket["ticket_id"]}}
    state = await agent.ainvoke(ticket, config, context=Reviewapp(session))
    return await _follow(agent, session, config, state, wait_s)


async def resume(agent, session: ClientSession, ticket_id: str) -> dict[str, Any]:
    """Look at a parked ticket again (on a timer, or from your `proposal.decided`
    webhook handler): it goes on if its review is decided, and stays parked if not."""
    config = {"configurable": {"thread_id": ticket_id}}
    state = await agent.aget_state(config)
    if not state.interrupts:
        return state.values
    return await _follow(agent, session, config, {"__interrupt__": state.interrupts}, 0)


async def _follow(agent, session, config, state, wait_s: float) -> dict[str, Any]:
    while "__interrupt__" in state:
        paused = state["__interrupt__"][0].value
        review = await _review_once_decided(session, paused, wait_s)
        if review is None:
            return {"parked": paused}
        state = await agent.ainvoke(Command(resume=review), config, context=Reviewapp(session))
    return state


async def _review_once_decided(session, paused: dict, wait_s: float) -> dict | None:
    """The decided review, or None while it is not decided yet."""
    if "task_id" in paused:
        if wait_s:
            task = await task_wait(session, paused["task_id"], timeout_s=wait_s)
        else:
            task = await task_get(session, paused["task_id"])
        if task.status == "completed":
            return task.result["structuredContent"]
        if task.status == "working":
            return None
        raise RuntimeError(f"the review ended without a decision: {task.status_message}")
    waited = await session.call_tool(
        "wait_for_review", {"id": paused["proposal_id"], "timeout_s": wait_s}
    )
    if waited.is_error:
        raise RuntimeError(waited.content[0].text)
    review = waited.structured_content
    return review if review.get("decision") else None
