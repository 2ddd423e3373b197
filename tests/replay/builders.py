"""Proposals people decided, built the way the pipeline and a reviewer build them."""

import asyncio

from django.db import connection

from reviewapp.replay.runner import replay_run_async
from reviewapp.review.evaluation.llm_loop import runtime
from reviewapp.review.models import Escalation, Lens, Proposal
from reviewapp.review.services.escalations import escalation_decide
from tests.factories import LensFactory
from tests.web.builders import judgement, make_panel, run_panel

CITE = "The sky is blue."


def split_panel():
    """Two recorded lenses, need both: one passes and one fails every proposal, so all escalate."""
    return make_panel("accuracy", "tone")


def human_decided(panel, n: int, outcome: str) -> Proposal:
    """Proposal `n` of `panel`, split by its lenses, escalated, then decided by a reviewer."""
    content = f"{CITE} Water is wet. Case {n} ({outcome})."
    proposal = run_panel(
        panel,
        content,
        {
            "accuracy": judgement("pass", CITE),
            "tone": judgement("fail", "Water is wet.", rationale="Off topic."),
        },
    )
    escalation = Escalation.objects.get(proposal=proposal)
    escalation_decide(
        escalation_id=escalation.pk,
        outcome=outcome,
        rationale="Read it through.",
        decided_by_name="rita",
    )
    return proposal


def llm_lens(server, name: str = "llm-fresh", **fields) -> Lens:
    fields = {"base_url": server.base_url, "model": "m", "timeout_seconds": 30, **fields}
    return LensFactory(name=name, backend=Lens.Backend.LLM, **fields)


def run_in_process(replay_id: int, timeout: float = 60.0):
    """What the worker's task hands to its LLM loop, run on this process's loop and awaited."""
    rt = runtime()
    try:
        return asyncio.run_coroutine_threadsafe(replay_run_async(replay_id), rt.loop).result(
            timeout
        )
    finally:
        # The loop's database thread keeps its connection; the test database must be droppable.
        rt.db.submit(lambda: connection.close()).result(timeout)
